"""Which Arrow column types an acidorc table can hold.

The table schema is fixed when the table is created, and every write casts its rows to it;
a type the ORC writer cannot encode (or that encodes into something that reads back as a
different type) would only fail inside a write task — for a negative-scale decimal, by
aborting the process. So the schema is checked up front.
"""

from __future__ import annotations

import pyarrow as pa

_PLAIN = (
    pa.types.is_boolean, pa.types.is_int8, pa.types.is_int16, pa.types.is_int32, pa.types.is_int64,
    pa.types.is_float32, pa.types.is_float64, pa.types.is_string, pa.types.is_large_string,
    pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary, pa.types.is_date32,
    pa.types.is_timestamp,
)

MAX_DECIMAL_PRECISION = 38  # Hive's and ORC's


def unsupported_type(arrow_type: pa.DataType, column: str) -> tuple[str, str] | None:
    """``(column path, reason)`` of the first part of ``arrow_type`` an ORC table cannot
    store (``"s.a"`` for field ``a`` of struct column ``s``), or None when all of it can."""
    t = arrow_type
    if any(is_type(t) for is_type in _PLAIN):
        return None
    if pa.types.is_decimal(t):
        if not pa.types.is_decimal128(t):
            return column, f"{t}: store decimals as decimal128 (precision <= {MAX_DECIMAL_PRECISION})"
        if not 0 <= t.scale <= t.precision <= MAX_DECIMAL_PRECISION:
            return column, f"{t}: Hive decimals need 0 <= scale <= precision <= {MAX_DECIMAL_PRECISION}"
        return None
    if pa.types.is_struct(t):
        for f in t:
            found = unsupported_type(f.type, f"{column}.{f.name}")
            if found:
                return found
        return None
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return unsupported_type(t.value_type, f"{column}[]")
    if pa.types.is_map(t):
        return (unsupported_type(t.key_type, f"{column}.key")
                or unsupported_type(t.item_type, f"{column}.value"))
    return column, _why_not(t)


def _why_not(t: pa.DataType) -> str:
    if pa.types.is_null(t):
        return "type null (Spark's void) has no ORC type: cast the column to a concrete type"
    if pa.types.is_unsigned_integer(t):
        return f"{t}: ORC has no unsigned integers, use a signed type wide enough for the values"
    if pa.types.is_union(t):
        return f"{t}: ORC uniontype columns are not supported by acidorc"
    if pa.types.is_date64(t):
        return f"{t}: ORC stores it as a timestamp; use date32 for dates"
    if pa.types.is_dictionary(t):
        return f"{t}: give the table its value type ({t.value_type})"
    return f"{t} has no Hive/ORC equivalent"
