"""Hive partition directory names: ``col=value`` segments with Hive's path escaping."""

from __future__ import annotations

import math

import numpy as np

from ..errors import SchemaError

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


def java_float_string(value: float, *, single: bool = False) -> str:
    """``Double.toString(value)`` (``Float.toString`` with ``single``): what Hive writes as the
    partition value of a double (float) column (``DoubleWritable.toString``), and what Spark's
    CAST to string gives.

    ``NaN``, ``Infinity``, ``-Infinity``, ``-0.0``; plain between 1e-3 and 1e7 (``100.0``,
    ``0.001``), else Java's scientific form (``1.0E-5``, ``1.2345678E7``), always a digit
    after the point. The digits are those of the JDKs Hive and Spark run on (8 to 17, before
    JDK 19's new algorithm): the shortest that read back as the same value (at least two:
    4.9E-324, not 5.0E-324), except for a whole number below 2**63, which those JDKs print
    exactly, with only the digits below the value's precision rounded away (``sun.misc.
    FloatingDecimal``'s integer case: 2**60 + 2**10 as a double is ``1.15292150460684698E18``,
    and 102705288.0 as a float ``1.02705288E8``, where JDK 19 prints ``1.152921504606847E18``
    and ``1.0270529E8``). Checked against Java 17 on thousands of random doubles and floats
    (tests/interop); the old JDKs' general case still prints a non-shortest digit for a rare
    float (-6.5706536E25, shortest -6.5706537E25). Either spelling reads back as the same
    value, and partitions match by value.
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if magnitude.is_integer() and magnitude < 2.0 ** 63:
        digits, exp = _whole_number_digits(int(magnitude), 24 if single else 53)
    else:
        number = np.float32(magnitude) if single else np.float64(magnitude)
        mantissa, exponent = np.format_float_scientific(number, unique=True, trim="-").split("e")
        digits = mantissa.replace(".", "")
        if len(digits) == 1:  # the closest two digits (the digit and a 0, unless that is further off)
            mantissa, exponent = np.format_float_scientific(number, unique=False, precision=1).split("e")
            digits = mantissa.replace(".", "").rstrip("0") or "0"
        exp = int(exponent)
    if -3 <= exp < 7:
        if exp >= 0:
            whole, fraction = digits[:exp + 1].ljust(exp + 1, "0"), digits[exp + 1:]
        else:
            whole, fraction = "0", "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _whole_number_digits(n: int, precision_bits: int) -> tuple[str, int]:
    """FloatingDecimal's digits of a whole number ``n`` (1 <= n < 2**63) held with
    ``precision_bits`` bits: its decimal digits, the last ``floor(p * log10(2))`` of them
    rounded away (half up) where ``p`` counts the bits below the value's precision, less one;
    (digits without trailing zeros, decimal exponent)."""
    p2 = n.bit_length() - 1 - precision_bits - 1
    insignificant = int(p2 * math.log10(2)) if p2 > 1 else 0
    if insignificant:
        n, residue = divmod(n, 10 ** insignificant)
        n += residue >= 10 ** insignificant // 2
    text = str(n)
    return text.rstrip("0"), len(text) - 1 + insignificant
