"""Spark schemas as the Arrow schemas the core works with."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ..errors import SchemaError


def arrow_schema_of(schema: StructType) -> pa.Schema:
    """The Arrow schema of a Spark ``StructType``, as a DataFrame of it reaches the writer
    (timestamps as ``timestamp[us, tz=UTC]``, ``timestamp_ntz`` without a zone)."""
    if not isinstance(schema, StructType):
        raise SchemaError(f"expected a Spark StructType, got {type(schema).__name__}")
    try:
        return to_arrow_schema(schema, timezone="UTC")
    except Exception as exc:  # pyspark's own error types: UNSUPPORTED_DATA_TYPE_FOR_ARROW_CONVERSION, ...
        raise SchemaError(f"cannot convert the Spark schema {schema.simpleString()} to Arrow: {exc}") from None
