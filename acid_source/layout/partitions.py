"""Hive partition directory names: ``col=value`` segments with Hive's path escaping."""

from __future__ import annotations

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"

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
    """One ``col=value`` path segment; null or empty values go to the default partition."""
    text = DEFAULT_PARTITION_NAME if value is None or value == "" else escape_path_name(value)
    return f"{escape_path_name(column.lower())}={text}"


def parse_partition_segment(segment: str) -> tuple[str, str | None] | None:
    """``col=value`` -> (col, value or None for the default partition); None if not a segment."""
    if "=" not in segment or segment.startswith("=") or segment.startswith((".", "_")):
        return None
    name, raw = segment.split("=", 1)
    value = None if raw == DEFAULT_PARTITION_NAME else unescape_path_name(raw)
    return unescape_path_name(name), value
