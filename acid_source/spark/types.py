"""Spark-side types: the one spelling of "SQL string or Column" the Spark API takes (as
delta-spark's ``delta/_typing.py``), and Spark schemas as the Arrow schemas the core works with."""

from __future__ import annotations

from typing import Mapping, Union

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

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
