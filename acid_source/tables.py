"""Creating and dropping tables from Python (no SparkSession needed)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa

from .ddl import parse_ddl_schema, parse_json_schema
from .deprecation import renamed
from .errors import AcidError, InvalidArgumentError, SchemaError, StoreBehindStorageError, TableNotFoundError
from .layout.ids_on_storage import ids_on_storage
from .layout.names import parse_dir_name
from .layout.table_dirs import INSERT_ONLY, TableLayout, discover_layout, has_acid_layout
from .layout.writeids import ValidTxnList, ValidWriteIdList
from .metastore import TransactionStore, connect
from .metastore.records import AdoptedHistory
from .metastore.tableinfo import TableInfo, normalize_location
from .scan.discovery import detect_table_kind
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


@renamed(partition_columns="partitionColumns", bucket_columns="bucketColumns", num_buckets="numBuckets",
         insert_only="insertOnly", if_not_exists="ifNotExists", metastore_url="metastoreUrl",
         storage_options="storageOptions")
def create_table(location: str | os.PathLike, schema: Any, *, name: str | None = None,
                 partitionColumns: Iterable[str] = (), bucketColumns: Iterable[str] = (), numBuckets: int = 0,
                 insertOnly: bool = False, compression: str = "zlib", ifNotExists: bool = False, adopt: bool = False,
                 metastoreUrl: str | None = None, storageOptions: Mapping[str, Any] | None = None) -> TableInfo:
    """Create an empty ACID table at ``location`` and register it in the transaction store;
    returns the store's record of it (:meth:`AcidTable.create <acid_source.table.AcidTable.create>`
    takes the same arguments and returns the table).

    ``schema``: a pyarrow schema, a Spark DDL string such as ``"id bigint, name string, ds
    date"`` or a Spark ``StructType``; partition columns are among its columns.
    Full ACID by default; ``insertOnly=True`` for an insert-only table. ``compression``:
    zlib (default), snappy, zstd, lz4 or uncompressed (``none``). ``storageOptions``: fsspec
    options for the location (e.g. ``{"key": ..., "secret": ..., "client_kwargs":
    {"endpoint_url": ...}}`` for S3).

    A location that already holds ACID directories (base, delta, delete delta: a table dropped
    without purge, or one whose store was lost or restored from an older copy) is refused with
    :class:`~acid_source.errors.StoreBehindStorageError`: new write ids would collide with the
    old directories and bring back rows deleted long ago. ``adopt=True`` registers that
    history instead (:class:`~acid_source.metastore.catalog.AdoptedHistory`): every write id on
    storage reads as committed, the history starts with one ``adopt`` entry whose version is the
    highest write id on storage, and new writes get write ids above it. The layout on storage
    (partition columns, full or insert-only) must match the arguments.

    Storage is written first: the root directory on a local disk, the table marker
    ``_acidorc_table`` elsewhere (it is what makes an empty table exist on an object store).
    Only then is the table registered, so a location that cannot be written (no credentials,
    no such bucket) is a :class:`~acid_source.errors.StorageError` naming it, and the store
    is left unchanged.

    >>> create_table("/warehouse/sales", "id bigint, amount decimal(10,2), ds date",
    ...              partitionColumns=["ds"], bucketColumns=["id"], numBuckets=4)  # doctest: +SKIP
    """
    location = normalize_location(_location(location))
    arrow_schema = table_schema(schema)
    for argument, value in (("insertOnly", insertOnly), ("ifNotExists", ifNotExists), ("adopt", adopt)):
        if not isinstance(value, bool):
            raise InvalidArgumentError(argument, f"expected True or False, got {value!r}")
    storage = Storage(location, option_pairs(storageOptions))
    with connect(metastoreUrl) as metastore:
        existing = metastore.find_table(location)
        adopted = None

        def register() -> TableInfo:
            return metastore.create_table(
                location, arrow_schema, name=name, partition_columns=partitionColumns,
                bucket_columns=bucketColumns, num_buckets=numBuckets, insert_only=insertOnly,
                compression=compression, if_not_exists=ifNotExists, adopted=adopted)

        if existing is not None and not ifNotExists:
            return register()  # the store refuses it: storage is left alone
        with storage.failures("looking at the table location"):
            root_existed = storage.exists(storage.root)
        if existing is None and root_existed:
            adopted = history_on_storage(storage, metastore.url, adopt=adopt,
                                         partition_columns=partitionColumns, insert_only=insertOnly)
        return register_on_storage(storage, metastore, location, register, root_existed=root_existed)


def register_on_storage(storage: Storage, metastore: TransactionStore, location: str,
                        register: Callable[[], TableInfo], *, root_existed: bool) -> TableInfo:
    """Make the table root exist on storage (:meth:`Storage.write_marker`), then ``register()``
    the table. A registration that fails takes back what this call wrote - unless the table is
    registered after all: two creators of one new table may both have written its marker, and
    the one that lost must not remove the winner's. A registration that succeeds makes sure
    the marker is there (a losing creator that saw no registration yet may have removed it)."""
    wrote = storage.write_marker()
    try:
        info = register()
    except BaseException:
        if wrote and not _registered(metastore, location):
            with storage.failures("removing the table marker again"):
                if not storage.is_local:
                    storage.remove(storage.marker_path)
                if not root_existed:
                    remove_if_empty(storage)
        raise
    storage.write_marker()
    return info


def _registered(metastore: TransactionStore, location: str) -> bool:
    """Whether the store has a table at ``location``; True when it cannot say (a marker left
    behind is harmless, a registered table's marker removed is not)."""
    try:
        return metastore.find_table(location) is not None
    except AcidError:
        return True


def history_on_storage(storage: Storage, url: str, *, adopt: bool = False, partition_columns=(),
                       insert_only: bool = False, layout: TableLayout | None = None) -> AdoptedHistory | None:
    """The ACID history at a location about to be registered (``layout``: its listing, if
    taken already): None when there is none; :class:`StoreBehindStorageError` unless ``adopt``
    (new write ids would reuse its directories); else what :meth:`TransactionStore.create_table`
    registers with the table, once the layout on storage matches ``partition_columns`` and
    ``insert_only``."""
    if layout is None:
        with storage.failures("listing the table location"):
            if not storage.is_dir(storage.root):
                return None
        try:
            layout = discover_layout(storage)
        except TableNotFoundError:  # an object store's folder object of an emptied prefix
            return None
    if not has_acid_layout(layout):
        return None
    on_storage = ids_on_storage(layout)
    if not adopt:
        shown = on_storage.above(0, 0)
        raise StoreBehindStorageError(
            f"{storage.display()} already holds an ACID table's directories (write ids up to {on_storage.write_id}, "
            f"e.g. {', '.join(shown[:3])}) that the transaction store {url} has no record of: a table created "
            "there would hand out those write ids again and bring back rows that were deleted. Pass adopt=True to "
            "register that history (its rows stay readable, new writes go above it), choose a new location, or "
            "remove the old files first",
            location=storage.display(), write_id=1, directories=tuple(shown), url=url)
    _check_adopted_layout(layout, partition_columns, insert_only)
    top = on_storage.write_id
    holding = set()
    for part in layout.partitions:
        for entry in layout.listings[part.path]:
            parsed = parse_dir_name(entry.name) if entry.is_dir else None
            if parsed is not None and parsed.max_write_id == top:
                holding.add(part.path[len(storage.root.rstrip("/")):].strip("/"))
    return AdoptedHistory(top, tuple(sorted({d.visibility_txn_id for d in on_storage.dirs} - {0})),
                          tuple(sorted(holding)),
                          tuple((d.path, d.visibility_txn_id) for d in on_storage.dirs if d.visibility_txn_id))


def _check_adopted_layout(layout: TableLayout, partition_columns, insert_only: bool) -> None:
    """An adopted table's arguments must describe what is on storage: its partition directories
    and its kind (full ACID files, or plain ORC files of an insert-only table)."""
    where = layout.storage.display()
    given = [str(c).lower() for c in partition_columns]
    found = [c.lower() for c in layout.partition_columns]
    if given != found:
        raise SchemaError(f"cannot adopt {where}: its partition directories are by "
                          f"({', '.join(layout.partition_columns) or 'none'}), the table is given partition columns "
                          f"({', '.join(map(str, partition_columns)) or 'none'})", path=where)
    kind = detect_table_kind(layout, ValidWriteIdList.all_valid(), ValidTxnList())
    if (kind == INSERT_ONLY) != insert_only:
        found_kind = "an insert-only" if kind == INSERT_ONLY else "a full ACID"
        raise SchemaError(f"cannot adopt {where}: its files are those of {found_kind} table, the table is given "
                          f"insertOnly={insert_only}", path=where)


def remove_if_empty(storage: Storage) -> None:
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


@renamed(location_or_name="locationOrName", if_exists="ifExists", metastore_url="metastoreUrl",
         storage_options="storageOptions")
def drop_table(locationOrName: str | os.PathLike, *, purge: bool = False, ifExists: bool = False,
               metastoreUrl: str | None = None, storageOptions: Mapping[str, Any] | None = None) -> TableInfo | None:
    """Unregister a table from the metastore; with ``purge=True`` also delete everything under
    its location (every object under the prefix, on object stores).

    ``locationOrName``: a path or URL (anything with a ``/``, or a ``PathLike``) or a table
    name such as ``"db.sales"`` (write a relative directory as ``"./sales"``). Refused while a
    transaction writing to the table is open. With ``purge``, storage is checked first (a
    location that cannot be listed is a StorageError and the table stays registered); then
    the metadata goes, so readers never see a registered table whose files are half deleted.
    Returns the dropped table, or None when there was none and ``ifExists`` is set.

    >>> drop_table("/warehouse/sales", purge=True)  # doctest: +SKIP
    """
    key = _location(locationOrName)
    for argument, value in (("purge", purge), ("ifExists", ifExists)):
        if not isinstance(value, bool):
            raise InvalidArgumentError(argument, f"expected True or False, got {value!r}")
    options = option_pairs(storageOptions)
    by_location = isinstance(locationOrName, os.PathLike) or _looks_like_location(key)
    with connect(metastoreUrl) as metastore:
        if purge:  # can storage be reached at all? Before anything changes in the store
            found = metastore.find_table(key) if by_location else _find_by_name(metastore, key, ifExists)
            if found is not None:
                storage = Storage(found.location, options)
                with storage.failures("checking the table's files before dropping it"):
                    storage.exists(storage.root)
        if by_location:
            table = metastore.drop_table(key, if_exists=ifExists)
        else:
            table = metastore.drop_table(name=key, if_exists=ifExists)
    if table is not None and purge:
        storage = Storage(table.location, options)
        with storage.failures("the table was unregistered, but deleting its files"):
            _purge(storage)
    return table


def _find_by_name(metastore: TransactionStore, name: str, if_exists: bool) -> TableInfo | None:
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
