"""Spark-side types: the one spelling of "SQL string or Column" the Spark API takes (as
delta-spark's ``delta/_typing.py``), Spark schemas as the Arrow schemas the core works with, and
Spark types sorted into the kinds of the one store rule (:func:`acid_source.dml.assignments.storable`)."""

from __future__ import annotations

from typing import Mapping, Union

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    NumericType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
    VarcharType,
)

from ..errors import SchemaError

# A condition or value: Spark SQL text ("amount * 1.1") or a Column (F.col("amount") * 1.1).
ExpressionOrColumn = Union[str, Column]
# Column name -> its new value (UPDATE SET, MERGE's update and insert clauses).
ColumnMapping = Mapping[str, ExpressionOrColumn]


def arrow_schema_of(schema: StructType) -> pa.Schema:
    """The Arrow schema of a Spark ``StructType``, as a DataFrame of it reaches the writer
    (timestamps as ``timestamp[us, tz=UTC]``, ``timestamp_ntz`` without a zone)."""
    if not isinstance(schema, StructType):
        raise SchemaError(f"expected a Spark StructType, got {type(schema).__name__}")
    try:
        return to_arrow_schema(schema, timezone="UTC")
    except Exception as exc:  # pyspark's own error types: UNSUPPORTED_DATA_TYPE_FOR_ARROW_CONVERSION, ...
        raise SchemaError(f"cannot convert the Spark schema {schema.simpleString()} to Arrow: {exc}") from None


def value_kind(dtype: DataType) -> str:
    """The kind of a Spark type in the store rule: number, boolean, string (char and varchar
    too), time (dates and timestamps), binary, or nested (everything else)."""
    if isinstance(dtype, NumericType):
        return "number"
    if isinstance(dtype, BooleanType):
        return "boolean"
    if isinstance(dtype, (StringType, CharType, VarcharType)):
        return "string"
    if isinstance(dtype, (DateType, TimestampType, TimestampNTZType)):
        return "time"
    if isinstance(dtype, BinaryType):
        return "binary"
    return "nested"


def same_shape(source: DataType, target: DataType) -> bool:
    """Whether a nested value can be stored as it is: the same type, nullability aside, where a
    NULL-typed part (``array()``, ``map()``) fits any type."""
    if isinstance(source, NullType):
        return True
    if isinstance(source, ArrayType) and isinstance(target, ArrayType):
        return same_shape(source.elementType, target.elementType)
    if isinstance(source, MapType) and isinstance(target, MapType):
        return same_shape(source.keyType, target.keyType) and same_shape(source.valueType, target.valueType)
    if isinstance(source, StructType) and isinstance(target, StructType):
        return (len(source.fields) == len(target.fields)
                and all(a.name == b.name and same_shape(a.dataType, b.dataType)
                        for a, b in zip(source.fields, target.fields)))
    return source == target


#: digits of the largest value of each integral type (what a decimal needs before its point)
_INTEGER_DIGITS: dict[type, int] = {ByteType: 3, ShortType: 5, IntegerType: 10, LongType: 19}


def never_fails(source: DataType, target: DataType) -> bool:
    """Whether Spark's cast from ``source`` to ``target`` succeeds for every value (a widening,
    or anything to a string), so that storing it needs no check row by row."""
    if isinstance(target, StringType):
        return True
    if isinstance(source, BooleanType) and isinstance(target, NumericType):
        return True
    if isinstance(source, NumericType) and isinstance(target, BooleanType):
        return True
    if isinstance(source, (DateType, TimestampType, TimestampNTZType)):
        return isinstance(target, (DateType, TimestampType, TimestampNTZType))
    if isinstance(target, (FloatType, DoubleType)):  # rounds, never fails
        return isinstance(source, NumericType)
    source_digits = _INTEGER_DIGITS.get(type(source))
    if source_digits is not None and type(target) in _INTEGER_DIGITS:
        return _INTEGER_DIGITS[type(target)] >= source_digits
    if isinstance(target, DecimalType):
        if source_digits is not None:
            return target.precision - target.scale >= source_digits
        if isinstance(source, DecimalType):
            return target.scale >= source.scale and target.precision - target.scale >= source.precision - source.scale
    return False
