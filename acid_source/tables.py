"""Creating and dropping tables from Python (no SparkSession needed)."""

from __future__ import annotations

import os

import pyarrow as pa

from .ddl import parse_ddl_schema, parse_json_schema
from .errors import InvalidArgumentError, SchemaError
from .metastore import Metastore
from .metastore.tableinfo import TableInfo, normalize_location
from .storage import Storage, option_pairs


def table_schema(schema) -> pa.Schema:
    """A table schema given as a pyarrow schema, a Spark DDL string or a Spark ``StructType``.

    A ``StructType`` is read through its JSON form (``schema.json()``), so the core never
    imports pyspark, nor anything of :mod:`acid_source.spark`.
    """
    if isinstance(schema, pa.Schema):
        return schema
    if isinstance(schema, str):
        return parse_ddl_schema(schema)
    if type(schema).__module__.startswith("pyspark"):
        if type(schema).__name__ != "StructType":
            raise SchemaError(f"expected a Spark StructType, got {type(schema).__name__}")
        return parse_json_schema(schema.json())
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
                 metastore_url: str | None = None, storage_options=None) -> TableInfo:
    """Create an empty ACID table at ``location`` and register it in the metastore.

    ``schema``: a pyarrow schema, a Spark DDL string such as ``"id bigint, name string, ds
    date"`` or a Spark ``StructType``; partition columns are among its columns.
    Full ACID by default; ``insert_only=True`` for an insert-only table. ``compression``:
    zlib (default), snappy, zstd, lz4 or uncompressed (``none``). ``storage_options``: fsspec
    options for the location (e.g. ``{"key": ..., "secret": ..., "client_kwargs":
    {"endpoint_url": ...}}`` for S3).

    Storage is written first: the root directory on a local disk, the table marker
    ``_acidorc_table`` elsewhere (it is what makes an empty table exist on an object store).
    Only then is the table registered, so a location that cannot be written (no credentials,
    no such bucket) is a :class:`~acid_source.errors.StorageError` naming it, and the store
    is left unchanged.

    >>> create_table("/warehouse/sales", "id bigint, amount decimal(10,2), ds date",
    ...              partition_columns=["ds"], bucket_columns=["id"], num_buckets=4)  # doctest: +SKIP
    """
    location = normalize_location(_location(location))
    arrow_schema = table_schema(schema)
    for argument, value in (("insert_only", insert_only), ("if_not_exists", if_not_exists)):
        if not isinstance(value, bool):
            raise InvalidArgumentError(argument, f"expected True or False, got {value!r}")
    storage = Storage(location, option_pairs(storage_options))
    with Metastore(metastore_url) as metastore:
        existing = metastore.find_table(location)
        wrote_marker, root_existed = False, True
        if existing is None or if_not_exists:  # else the store refuses it: leave storage alone
            with storage.failures("looking at the table location"):
                root_existed = storage.exists(storage.root)
            wrote_marker = storage.write_marker()
        try:
            return metastore.create_table(
                location, arrow_schema, name=name, partition_columns=partition_columns,
                bucket_columns=bucket_columns, num_buckets=num_buckets, insert_only=insert_only,
                compression=compression, if_not_exists=if_not_exists)
        except BaseException:
            if wrote_marker:  # not registered after all: take back what this call wrote
                with storage.failures("removing the table marker again"):
                    if not storage.is_local:
                        storage.remove(storage.marker_path)
                    if not root_existed:
                        _remove_if_empty(storage)
            raise


def _remove_if_empty(storage: Storage) -> None:
    """Remove the table root again if nothing is in it (a directory this call created; on an
    object store, the folder object some servers keep after their last object went)."""
    fs = storage.fs
    if fs.exists(storage.root) and not storage.objects_under(storage.root):
        if storage.is_local:
            fs.rmdir(storage.root)
        else:
            storage.remove_folders(storage.root)


def _looks_like_location(text: str) -> bool:
    return "/" in text or "\\" in text or text.startswith((".", "~"))


def drop_table(location_or_name: str | os.PathLike, *, purge: bool = False, if_exists: bool = False,
               metastore_url: str | None = None, storage_options=None) -> TableInfo | None:
    """Unregister a table from the metastore; with ``purge=True`` also delete everything under
    its location (every object under the prefix, on object stores).

    ``location_or_name``: a path or URL (anything with a ``/``, or a ``PathLike``) or a table
    name such as ``"db.sales"`` (write a relative directory as ``"./sales"``). Refused while a
    transaction writing to the table is open. With ``purge``, storage is checked first (a
    location that cannot be listed is a StorageError and the table stays registered); then
    the metadata goes, so readers never see a registered table whose files are half deleted.
    Returns the dropped table, or None when there was none and ``if_exists`` is set.

    >>> drop_table("/warehouse/sales", purge=True)  # doctest: +SKIP
    """
    key = _location(location_or_name)
    for argument, value in (("purge", purge), ("if_exists", if_exists)):
        if not isinstance(value, bool):
            raise InvalidArgumentError(argument, f"expected True or False, got {value!r}")
    options = option_pairs(storage_options)
    by_location = isinstance(location_or_name, os.PathLike) or _looks_like_location(key)
    with Metastore(metastore_url) as metastore:
        if purge:  # can storage be reached at all? Before anything changes in the store
            found = metastore.find_table(key) if by_location else _find_by_name(metastore, key, if_exists)
            if found is not None:
                storage = Storage(found.location, options)
                with storage.failures("checking the table's files before dropping it"):
                    storage.exists(storage.root)
        if by_location:
            table = metastore.drop_table(key, if_exists=if_exists)
        else:
            table = metastore.drop_table(name=key, if_exists=if_exists)
    if table is not None and purge:
        storage = Storage(table.location, options)
        with storage.failures("the table was unregistered, but deleting its files"):
            _purge(storage)
    return table


def _find_by_name(metastore: Metastore, name: str, if_exists: bool) -> TableInfo | None:
    from .errors import TableNotRegisteredError

    try:
        return metastore.get_table(name=name)
    except TableNotRegisteredError:
        if if_exists:
            return None
        raise


def _purge(storage: Storage) -> None:
    """Delete every file under the table root. On an object store that is every object under
    the prefix (there may be no directory object at all), found by a recursive listing; the
    marker goes last, so a purge cut short leaves a location that still says what it was."""
    root = storage.root
    if storage.is_local:
        storage.remove(root, recursive=True)
        return
    fs = storage.fs
    objects = [p for p in storage.objects_under(root) if p != storage.marker_path]
    if objects:
        fs.rm(objects)
    if fs.exists(storage.marker_path):
        fs.rm_file(storage.marker_path)
    leftovers = storage.objects_under(root)
    if leftovers:
        raise OSError(f"{len(leftovers)} objects are still there, e.g. {storage.display(leftovers[0])}")
    storage.remove_folders(root)  # folder objects some servers keep for emptied prefixes
