"""Spark SQL's type rules, restated for Arrow types.

Which type two values are compared in, what an arithmetic operator returns, and which Arrow
type a SQL type name means. Each function returns None (or raises ValueError) for a
combination Spark would not coerce implicitly; callers turn that into a user-facing error.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

MAX_DECIMAL_PRECISION = 38

# Spark's DecimalType.forType: how many decimal digits an integral type needs.
_INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}
_SIGNED = (pa.int8(), pa.int16(), pa.int32(), pa.int64())


is_integral = pa.types.is_integer


is_floating = pa.types.is_floating


is_decimal = pa.types.is_decimal


def is_numeric(t: pa.DataType) -> bool:
    return is_integral(t) or is_floating(t) or is_decimal(t)


def is_string(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t)
            or getattr(pa.types, "is_string_view", lambda _: False)(t))


def is_binary(t: pa.DataType) -> bool:
    return (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or getattr(pa.types, "is_binary_view", lambda _: False)(t))


is_date = pa.types.is_date


is_timestamp = pa.types.is_timestamp


is_null = pa.types.is_null


is_boolean = pa.types.is_boolean


def describe(t: pa.DataType) -> str:
    """The Spark SQL name of an Arrow type, for messages."""
    names = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
             pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean", pa.null(): "void",
             pa.date32(): "date", pa.date64(): "date"}
    if t in names:
        return names[t]
    if is_string(t):
        return "string"
    if is_binary(t):
        return "binary"
    if is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if is_timestamp(t):
        return "timestamp" if t.tz is None else f"timestamp (time zone {t.tz})"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{describe(f.type)}" for f in t) + ">"
    return str(t)


def integer_range(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    if pa.types.is_signed_integer(t):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def as_decimal(t: pa.DataType) -> pa.DataType:
    """The decimal type that holds every value of an integral or decimal type."""
    if is_decimal(t):
        return t
    return pa.decimal128(_INTEGER_DIGITS[t.bit_width], 0)


def literal_decimal(value: int) -> pa.DataType:
    """The decimal type Spark gives an integer literal that meets a decimal in arithmetic
    (``DecimalType.fromLiteral``, spark.sql.legacy.literal.pickMinimumPrecision on by default):
    just its digits, so ``d / 3`` divides by a decimal(1,0), not a decimal(10,0)."""
    return pa.decimal128(len(str(abs(int(value)))), 0)


def decimal_type(precision: int, scale: int) -> pa.DataType | None:
    if precision > MAX_DECIMAL_PRECISION:
        return None
    return pa.decimal128(max(precision, 1), scale)


def _wider_integer(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    lo = min(integer_range(a)[0], integer_range(b)[0])
    hi = max(integer_range(a)[1], integer_range(b)[1])
    for t in _SIGNED:
        t_lo, t_hi = integer_range(t)
        if t_lo <= lo and hi <= t_hi:
            return t
    return pa.decimal128(20, 0)  # uint64 with a signed type


def _wider_decimal(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """Spark 4's wider decimal type of two (``DecimalType.boundedPreferIntegralDigits``): both
    integer parts and both scales; beyond 38 digits the scale gives way, the integer digits
    stay (decimal(38,30) with decimal(38,0) is a decimal(38,0))."""
    a, b = as_decimal(a), as_decimal(b)
    scale = max(a.scale, b.scale)
    precision = max(a.precision - a.scale, b.precision - b.scale) + scale
    if precision <= MAX_DECIMAL_PRECISION:
        return pa.decimal128(precision, scale)
    return pa.decimal128(MAX_DECIMAL_PRECISION, max(0, scale - (precision - MAX_DECIMAL_PRECISION)))


def common_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type Spark compares (or merges, for COALESCE / CASE) ``a`` and ``b`` in."""
    if a == b:
        return a
    if is_null(a):
        return b
    if is_null(b):
        return a
    if is_integral(a) and is_integral(b):
        return _wider_integer(a, b)
    if is_numeric(a) and is_numeric(b):
        if is_floating(a) or is_floating(b):
            if is_decimal(a) or is_decimal(b) or pa.float64() in (a, b):
                return pa.float64()
            return pa.float32()
        return _wider_decimal(a, b)
    if is_string(a) and is_string(b):
        return pa.large_string() if pa.large_string() in (a, b) else pa.string()
    if is_binary(a) and is_binary(b):
        return pa.large_binary() if pa.large_binary() in (a, b) else pa.binary()
    if is_date(a) and is_date(b):
        return pa.date32()
    if is_date(a) and is_timestamp(b):
        return b
    if is_timestamp(a) and is_date(b):
        return a
    if is_timestamp(a) and is_timestamp(b):
        units = ["s", "ms", "us", "ns"]
        unit = max(a.unit, b.unit, key=units.index)
        if a.tz == b.tz:
            tz = a.tz
        elif a.tz and b.tz:
            tz = "UTC"
        else:  # a wall-clock time against an instant: the wall-clock time is taken as UTC
            tz = a.tz or b.tz
        return pa.timestamp(unit, tz)
    return None


def _adjusted_decimal(precision: int, scale: int) -> pa.DataType:
    """Spark's DecimalType.adjustPrecisionScale of a result type (scales are never negative here)."""
    if precision <= MAX_DECIMAL_PRECISION:
        return pa.decimal128(max(precision, 1), scale)
    integer_digits = precision - scale
    return pa.decimal128(MAX_DECIMAL_PRECISION, max(MAX_DECIMAL_PRECISION - integer_digits, min(scale, 6)))


ARITHMETIC = ("add", "subtract", "multiply", "divide", "remainder", "int_divide")


def arithmetic_types(op: str, a: pa.DataType, b: pa.DataType):
    """``(left operand type, right operand type, result type)`` of a numeric operator, or None.

    Like Spark: ``/`` returns double (decimal where an operand is a decimal and neither a
    float), ``div`` bigint, and decimal results get Spark's precision and scale; beyond 38
    digits Spark's adjustment (spark.sql.decimalOperations.allowPrecisionLoss, on by default):
    precision 38, the scale cut down to keep the integer digits but not below 6.
    """
    if not (is_numeric(a) and is_numeric(b)):
        return None
    if op == "divide":
        if not (is_decimal(a) or is_decimal(b)) or is_floating(a) or is_floating(b):
            return pa.float64(), pa.float64(), pa.float64()
        da, db = as_decimal(a), as_decimal(b)
        scale = max(6, da.scale + db.precision + 1)  # Spark's Divide.resultDecimalType
        return da, db, _adjusted_decimal(da.precision - da.scale + db.scale + scale, scale)
    if op == "int_divide":
        if not (is_integral(a) and is_integral(b)):
            return None
        return pa.int64(), pa.int64(), pa.int64()
    common = common_type(a, b)
    if is_floating(a) or is_floating(b) or (is_integral(a) and is_integral(b) and not is_decimal(common)):
        return common, common, common
    da, db = as_decimal(a), as_decimal(b)  # Spark's result type from both operands' own types
    p1, s1, p2, s2 = da.precision, da.scale, db.precision, db.scale
    if op in ("add", "subtract"):
        scale = max(s1, s2)
        result = _adjusted_decimal(max(p1 - s1, p2 - s2) + scale + 1, scale)
    elif op == "multiply":
        result = _adjusted_decimal(p1 + p2 + 1, s1 + s2)
    else:  # remainder
        scale = max(s1, s2)
        result = decimal_type(min(p1 - s1, p2 - s2) + scale, scale)
    if result is None:
        return pa.float64(), pa.float64(), pa.float64()
    return da, db, result


_SQL_TYPES = {
    "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
    "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(),
    "TEXT": pa.string(), "VARCHAR": pa.string(), "CHAR": pa.string(), "NVARCHAR": pa.string(),
    "NCHAR": pa.string(), "DATE": pa.date32(), "BINARY": pa.binary(), "VARBINARY": pa.binary(),
    # Spark keeps timestamps in microseconds; a literal without an offset is wall-clock time
    "TIMESTAMP": pa.timestamp("us"), "TIMESTAMPNTZ": pa.timestamp("us"),
    "TIMESTAMPLTZ": pa.timestamp("us"), "TIMESTAMPTZ": pa.timestamp("us"), "DATETIME": pa.timestamp("us"),
}


def arrow_type_of(data_type: exp.DataType) -> pa.DataType:
    """The Arrow type of a SQL type in CAST or a typed literal; ValueError if unsupported."""
    name = data_type.this.name if hasattr(data_type.this, "name") else str(data_type.this)
    if name == "DECIMAL":
        params = [p.this for p in data_type.expressions]
        if len(params) > 2 or not all(isinstance(p, exp.Literal) and p.name.isdigit() for p in params):
            raise ValueError(f"unsupported type {data_type.sql(dialect='spark')}")
        if not params:
            return pa.decimal128(10, 0)  # Spark's DECIMAL without arguments
        numbers = [int(p.name) for p in params]
        precision, scale = numbers[0], numbers[1] if len(numbers) == 2 else 0
        if not (1 <= precision <= MAX_DECIMAL_PRECISION and 0 <= scale <= precision):
            raise ValueError(f"decimal({precision},{scale}) is not a valid type (precision 1 to 38, "
                             "scale 0 to the precision)")
        return pa.decimal128(precision, scale)
    if name in _SQL_TYPES:
        return _SQL_TYPES[name]
    raise ValueError(f"unsupported type {data_type.sql(dialect='spark')} (supported: tinyint, smallint, int, "
                     "bigint, float, double, decimal(p,s), boolean, string, binary, date, timestamp)")
