"""Creating tables from Python."""

from __future__ import annotations

import pyarrow as pa

from .errors import SchemaError
from .metastore import Metastore
from .metastore.tableinfo import TableInfo
from .storage import Storage


def _arrow_schema(schema) -> pa.Schema:
    if isinstance(schema, pa.Schema):
        return schema
    from pyspark.sql import SparkSession
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    if isinstance(schema, StructType):
        struct = schema
    elif isinstance(schema, str):
        spark = SparkSession.getActiveSession()
        if spark is None:
            raise SchemaError("a DDL schema string is parsed by Spark: start a SparkSession first, "
                              "or pass a pyarrow.Schema or StructType")
        struct = spark.createDataFrame([], schema).schema
    else:
        raise SchemaError(f"expected a pyarrow.Schema, a StructType or a DDL string, got {type(schema).__name__}")
    return to_arrow_schema(struct, timezone="UTC")


def create_table(location: str, schema, *, name: str | None = None, partition_columns=(),
                 bucket_columns=(), num_buckets: int = 0, insert_only: bool = False,
                 compression: str = "zlib", if_not_exists: bool = False,
                 metastore_url: str | None = None) -> TableInfo:
    """Create an empty ACID table at ``location`` and register it in the metastore.

    ``schema``: a pyarrow schema, a Spark ``StructType`` or a DDL string such as
    ``"id bigint, name string, ds date"``; partition columns are among its columns.
    Full ACID by default; ``insert_only=True`` for an insert-only table.

    >>> create_table("/warehouse/sales", "id bigint, amount decimal(10,2), ds date",
    ...              partition_columns=["ds"], bucket_columns=["id"], num_buckets=4)  # doctest: +SKIP
    """
    table = Metastore(metastore_url).create_table(
        location, _arrow_schema(schema), name=name, partition_columns=tuple(partition_columns),
        bucket_columns=tuple(bucket_columns), num_buckets=num_buckets, insert_only=insert_only,
        compression=compression, if_not_exists=if_not_exists)
    Storage(location).make_dirs(Storage(location).root)
    return table
