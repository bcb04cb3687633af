"""Hive partition directory names: ``col=value`` segments with Hive's path escaping."""

from __future__ import annotations

import math

from ..errors import SchemaError
from ..java_numbers import java_float_string as java_float_string  # the partition value of a double

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
# A path segment is one file name: 255 bytes on local file systems and HDFS (its default
# dfs.namenode.fs-limits.max-component-length).
MAX_SEGMENT_BYTES = 255

# FileUtils.charToEscape: control chars, DEL and these specials.
_ESCAPED = set(chr(c) for c in range(0x00, 0x20)) | {"\x7f"} | set("\"#%'*/:=?\\{[]^")


def escape_path_name(value: str) -> str:
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in value)


def unescape_path_name(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and _is_hex(text[i + 1:i + 3]):
            out.append(chr(int(text[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def partition_segment(column: str, value: str | None) -> str:
    """One ``col=value`` path segment; null or empty values go to the default partition.

    Escaping keeps ``/``, NUL and control characters out, and the ``=`` keeps a segment from
    being ``.`` or ``..``; what is left to refuse is a name no directory can have or no reader
    would see: a hidden or empty column name, text that is not Unicode, a segment longer than
    a file name may be, and a value that would read back as NULL.
    """
    name = escape_path_name(column.lower())
    if not name or name.startswith((".", "_")):
        raise SchemaError(f"partition column name {column!r} cannot name a directory that readers see "
                          "(empty, or starting with '.' or '_', which mark hidden files)")
    if not _is_unicode(name):
        raise SchemaError(f"partition column name {column!r} is not valid Unicode text")
    if value == DEFAULT_PARTITION_NAME:
        raise SchemaError(f"partition column {column!r}: the value {DEFAULT_PARTITION_NAME!r} is Hive's name for "
                          "the NULL partition; written as text it would read back as NULL")
    text = DEFAULT_PARTITION_NAME if value is None or value == "" else escape_path_name(value)
    segment = f"{name}={text}"
    if not _is_unicode(text):
        raise SchemaError(f"partition column {column!r}: the value {(value or text)[:40]!r} is not valid Unicode text")
    size = len(segment.encode("utf-8"))
    if size > MAX_SEGMENT_BYTES:
        raise SchemaError(f"partition column {column!r}: the value starting {(value or text)[:40]!r} makes a "
                          f"directory name of {size} bytes (escaped, UTF-8), more than the {MAX_SEGMENT_BYTES} "
                          "a file name may have")
    return segment


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:  # lone surrogates
        return False


def parse_partition_segment(segment: str) -> tuple[str, str | None] | None:
    """``col=value`` -> (col, value or None for the default partition); None if not a segment."""
    if "=" not in segment or segment.startswith("=") or segment.startswith((".", "_")):
        return None
    name, raw = segment.split("=", 1)
    value = None if raw == DEFAULT_PARTITION_NAME else unescape_path_name(raw)
    return unescape_path_name(name), value


class Float32Value(float):
    """A value of a ``float`` (32-bit) column, held exactly as a Python float: it names its
    partition with ``Float.toString`` (``1.1``), where the same number as a double would be
    ``1.100000023841858``. Compares and hashes as the float it is."""

    __slots__ = ()


class NaNValue(float):
    """NaN as a partition value, equal to every NaN as in Spark SQL (``NaN = NaN`` is true; its
    grouping puts every NaN in one group): the rows of every NaN are one partition, and a
    partition directory holding NaN (``NaN``, or ``nan`` as older acidorc versions named it)
    is found again by this value. Use the one instance, :data:`NAN`."""

    __slots__ = ()

    def __new__(cls) -> "NaNValue":
        return super().__new__(cls, "nan")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and math.isnan(other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash("NaN")

    def __repr__(self) -> str:
        return "NaN"

    def __reduce__(self) -> str:
        return "NAN"  # pickled by reference: the one instance


NAN = NaNValue()


