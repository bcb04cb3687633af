"""The ORC compression codecs a table may use: one list, checked in one place.

A table's codec is chosen when it is created (``compression`` option or argument) and every
later write uses it, so a codec the writer cannot produce must be refused at creation, not in
the middle of a write job. The names are pyarrow's (its ORC writer is what writes the files);
Hive records the same choice as the table property ``orc.compress`` with its own spelling.
"""

from __future__ import annotations

from ..errors import InvalidArgumentError

#: what pyarrow's ORC writer can write, in pyarrow's spelling; the first is the default
CODECS = ("zlib", "snappy", "zstd", "lz4", "uncompressed")
DEFAULT_CODEC = CODECS[0]

#: Hive's ``orc.compress`` value of each codec
HIVE_NAMES = {"zlib": "ZLIB", "snappy": "SNAPPY", "zstd": "ZSTD", "lz4": "LZ4", "uncompressed": "NONE"}

#: other spellings accepted for a codec (Hive's ``NONE``)
ALIASES = {"none": "uncompressed"}

#: codecs ORC knows but acidorc cannot write, and why
UNWRITABLE = {"lzo": "pyarrow's ORC writer cannot write LZO files"}


def canonical_codec(value, *, name: str = "compression", error: type = InvalidArgumentError) -> str:
    """The codec ``value`` names, in pyarrow's spelling (case-insensitive; Hive's names accepted).

    Anything else raises ``error(name, message)``, an
    :class:`~acid_source.errors.InvalidArgumentError` unless told otherwise (the Spark edge
    reports it as the option of that name).
    """
    text = str(value).strip().lower()
    codec = ALIASES.get(text, text)
    if codec in CODECS:
        return codec
    choices = ", ".join(CODECS)
    if codec in UNWRITABLE:
        raise error(name, f"{value!r} is not supported: {UNWRITABLE[codec]}; choose one of {choices}")
    raise error(name, f"expected one of {choices} (or none = uncompressed), got {value!r}")


def hive_codec_name(codec: str) -> str:
    """Hive's ``orc.compress`` table property for a codec (``uncompressed`` is ``NONE``)."""
    return HIVE_NAMES[canonical_codec(codec)]
