"""Creating and dropping tables from Python (no SparkSession needed)."""

from __future__ import annotations

import os

import pyarrow as pa

from .ddl import parse_ddl_schema
from .errors import InvalidArgumentError, StorageError
from .metastore import Metastore
from .metastore.tableinfo import TableInfo
from .storage import Storage


def table_schema(schema) -> pa.Schema:
    """A table schema given as a pyarrow schema, a Spark DDL string or a Spark ``StructType``.

    Only a ``StructType`` needs pyspark, and only then is it imported: the core works without it.
    """
    if isinstance(schema, pa.Schema):
        return schema
    if isinstance(schema, str):
        return parse_ddl_schema(schema)
    if type(schema).__module__.startswith("pyspark"):
        from .spark.types import arrow_schema_of

        return arrow_schema_of(schema)
    raise InvalidArgumentError("schema", "expected a pyarrow.Schema, a DDL string such as 'id bigint, name string' "
                                         f"or a Spark StructType, got {type(schema).__name__}")


def _location(location) -> str:
    if isinstance(location, os.PathLike):
        location = os.fspath(location)
    if not isinstance(location, str) or not location.strip():
        raise InvalidArgumentError("location", f"expected a non-empty path or URL, got {location!r}")
    return location


def create_table(location: str | os.PathLike, schema, *, name: str | None = None, partition_columns=(),
                 bucket_columns=(), num_buckets: int = 0, insert_only: bool = False,
                 compression: str = "zlib", if_not_exists: bool = False,
                 metastore_url: str | None = None) -> TableInfo:
    """Create an empty ACID table at ``location`` and register it in the metastore.

    ``schema``: a pyarrow schema, a Spark DDL string such as ``"id bigint, name string, ds
    date"`` or a Spark ``StructType``; partition columns are among its columns.
    Full ACID by default; ``insert_only=True`` for an insert-only table. ``compression``:
    zlib (default), snappy, zstd, lz4 or uncompressed (``none``).

    >>> create_table("/warehouse/sales", "id bigint, amount decimal(10,2), ds date",
    ...              partition_columns=["ds"], bucket_columns=["id"], num_buckets=4)  # doctest: +SKIP
    """
    location = _location(location)
    arrow_schema = table_schema(schema)
    for argument, value in (("insert_only", insert_only), ("if_not_exists", if_not_exists)):
        if not isinstance(value, bool):
            raise InvalidArgumentError(argument, f"expected True or False, got {value!r}")
    with Metastore(metastore_url) as metastore:
        table = metastore.create_table(
            location, arrow_schema, name=name, partition_columns=partition_columns,
            bucket_columns=bucket_columns, num_buckets=num_buckets, insert_only=insert_only,
            compression=compression, if_not_exists=if_not_exists)
    storage = Storage(table.location)
    storage.make_dirs(storage.root)
    return table


def _looks_like_location(text: str) -> bool:
    return "/" in text or "\\" in text or text.startswith((".", "~"))


def drop_table(location_or_name: str | os.PathLike, *, purge: bool = False, if_exists: bool = False,
               metastore_url: str | None = None) -> TableInfo | None:
    """Unregister a table from the metastore; with ``purge=True`` also delete its directory.

    ``location_or_name``: a path or URL (anything with a ``/``, or a ``PathLike``) or a table
    name such as ``"db.sales"`` (write a relative directory as ``"./sales"``). Refused while a
    transaction writing to the table is open. The metadata goes first, so readers never see
    a registered table whose files are half deleted. Returns the dropped table, or None when
    there was none and ``if_exists`` is set.

    >>> drop_table("/warehouse/sales", purge=True)  # doctest: +SKIP
    """
    key = _location(location_or_name)
    for argument, value in (("purge", purge), ("if_exists", if_exists)):
        if not isinstance(value, bool):
            raise InvalidArgumentError(argument, f"expected True or False, got {value!r}")
    by_location = isinstance(location_or_name, os.PathLike) or _looks_like_location(key)
    with Metastore(metastore_url) as metastore:
        if by_location:
            table = metastore.drop_table(key, if_exists=if_exists)
        else:
            table = metastore.drop_table(name=key, if_exists=if_exists)
    if table is not None and purge:
        storage = Storage(table.location)
        try:
            storage.remove(storage.root, recursive=True)
        except OSError as exc:
            raise StorageError(table.location, f"the table was unregistered, but deleting its files failed: {exc}"
                               ) from exc
    return table
