"""Starting a write on the driver: find or create the table, check the data and options
against it, open the transaction and allocate the write id, giving a
:class:`~acid_source.staged.StagedWrite`. Used by ``df.write`` and by
:class:`~acid_source.table.AcidTable` (``newWrite``, ``append``, ``overwrite``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from .errors import InvalidArgumentError, NotAnAcidTableError, SchemaError, TableNotRegisteredError
from .layout.names import is_hidden, parse_dir_name
from .layout.partitions import parse_partition_segment
from .layout.table_dirs import convert_partition_value, discover_layout, infer_partition_type
from .metastore import TransactionStore, connect
from .metastore.tableinfo import TableInfo
from .metastore.urls import check_shareable
from .orc.codecs import canonical_codec
from .scan.resolved import nullable
from .specs import WriteSpec
from .staged import StagedWrite
from .storage import Storage
from .table_ref import TableRef
from .tables import history_on_storage, register_on_storage
from .txn import Transaction
from .values import parse_partition_spec
from .write.job import WriteJob
from .write.rows import existing_partition_dirs, partition_key, partition_path, static_partition_values
from .write.task import WritePlan, check_data_schema, check_unique_columns


def stage_write(spec: WriteSpec, *, overwrite: bool, data_schema: pa.Schema | None = None,
                heartbeat: str = "thread") -> StagedWrite:
    """Everything before the tasks run: find or create the table, check the data's schema
    (``data_schema``; None: each task checks its batches), open the transaction, allocate the
    write id. Nothing is written to the table here except, for a new table, its registration
    and root directory; any error leaves the table as it was. ``heartbeat`` as
    :meth:`Transaction.begin` (``"process"`` when the transaction outlives this process)."""
    if spec.metastore_url is not None:
        check_shareable(spec.metastore_url)
    if data_schema is not None:
        check_unique_columns(data_schema)
    metastore = connect(spec.metastore_url)
    storage = Storage(spec.path, spec.storage_options)
    table = metastore.find_table(spec.path)
    if table is None:
        if data_schema is None:
            raise TableNotRegisteredError(
                f"{spec.path} is not registered in the transaction store; a staged write without the data's "
                "schema cannot create it (create it with acid_source.create_table)", location=spec.path)
        location, name = metastore.new_table_place(spec.path, spec.table_name)
        storage = Storage(location, spec.storage_options)
        table = _create_table(metastore, storage, spec, data_schema, location, name)
    else:
        _check_create_options(table, spec)
        storage = Storage(table.location, spec.storage_options)
    static = static_partition_of(table, spec.partition)
    expected = write_schema(table, static)
    if data_schema is not None:
        try:
            check_data_schema(table.location, expected, data_schema)
        except SchemaError as exc:
            if not storage.exists(storage.root):
                raise SchemaError(f"{exc}. The table's directory is gone but the transaction store "
                                  f"({metastore.url}) still has it registered: acid_source.drop_table("
                                  f"{table.location!r}) forgets it, and the next write creates it anew") from None
            raise
    txn = Transaction.begin(metastore, description=f"{'overwrite' if overwrite else 'append'} {table.location}",
                            heartbeat=heartbeat)
    try:
        write_id = txn.allocate_write_id(table.table_id, storage,
                                         operation="insert_overwrite" if overwrite else "insert")
        partition_dirs = _existing_partition_dirs(txn, table, storage)
    except BaseException as exc:
        txn.abort(f"could not start the write: {exc}")
        raise
    plan = plan_for_table(table, storage, write_id, overwrite=overwrite, static_partition=static,
                          partition_dirs=partition_dirs)
    return StagedWrite(WriteJob(plan, table.table_id, spec.dynamic_overwrite), txn, location=table.location,
                       schema=expected, storage_options=spec.storage_options, check_batches=data_schema is None)


def static_partition_of(table: TableInfo, partition) -> tuple[tuple[str, object], ...]:
    """The ``partition`` option (pairs or a spec) as ``((column, key), ...)``, keyed as the
    rows of each column would be (a float column's value is a 32-bit float); ``()`` for None."""
    if partition is None:
        return ()
    if not table.partition_columns:
        raise InvalidArgumentError("partition", f"{table.location} is not partitioned")
    given = static_partition_values(partition, list(table.partition_columns))
    static = tuple((c, partition_key(convert_partition_value(given[c], table.schema.field(c).type),
                                     table.schema.field(c).type))
                   for c in table.partition_columns)
    partition_path(list(table.partition_columns), tuple(v for _, v in static))  # checks the values
    return static


def write_schema(table: TableInfo, static: tuple) -> pa.Schema:
    """The columns a writer's batches have: the table's, without the partition columns when
    the write goes to one static partition."""
    table_data = nullable(pa.schema([table.schema.field(n) for n in table.data_columns]))
    partition_fields = [] if static else [table.schema.field(c) for c in table.partition_columns]
    return pa.schema(list(table_data) + partition_fields)


def plan_for_table(table: TableInfo, storage: Storage, write_id: int, *, overwrite: bool = False,
                   static_partition: tuple = (), partition_dirs: tuple = ()) -> WritePlan:
    """The task plan for writing ``write_id`` into a registered table."""
    return WritePlan(
        storage=storage,
        data_schema=nullable(pa.schema([table.schema.field(n) for n in table.data_columns])),
        partition_columns=table.partition_columns,
        static_partition=static_partition,
        bucket_columns=table.bucket_columns,
        num_buckets=table.num_buckets,
        bucketing_version=table.bucketing_version,
        insert_only=table.insert_only,
        compression=canonical_codec(table.compression),  # stores of older versions may say "none"
        write_id=write_id,
        overwrite=overwrite,
        partition_dirs=partition_dirs,
    )


def _existing_partition_dirs(txn: Transaction, table: TableInfo, storage: Storage) -> tuple:
    return existing_partition_dirs_of(txn.metastore, table, storage)


def existing_partition_dirs_of(metastore: TransactionStore, table: TableInfo, storage: Storage) -> tuple:
    """The partition directories of the table: those committed writes recorded in the store,
    and those a listing of the partition directories' names finds (an adopted or Hive-written
    table's store holds only some). Rows of a value that has a directory go there, whatever
    its spelling (Hive's ``p=01``; ``d=1.50`` of an older acidorc, which now names it
    ``d=1.5``), and an overwrite of a value replaces every directory of it. Only directory
    levels above the partitions are listed (one listing for one partition column), never their
    contents: a write does not read the table."""
    if not table.partition_columns:
        return ()
    paths = {p for p in metastore.committed_writes(table.table_id)[0] if p}
    with storage.failures("listing the partition directories"):
        if storage.exists(storage.root):
            paths.update(_partition_names(storage, storage.root, "", len(table.partition_columns)))
    types = [table.schema.field(c).type for c in table.partition_columns]
    return existing_partition_dirs(sorted(paths), list(table.partition_columns), types)


def _partition_names(storage: Storage, path: str, relative: str, levels: int) -> list[str]:
    found = []
    for entry in storage.list_dir(path):
        if (entry.is_dir and not is_hidden(entry.name) and parse_partition_segment(entry.name) is not None
                and parse_dir_name(entry.name) is None):
            name = f"{relative}/{entry.name}" if relative else entry.name
            found += [name] if levels == 1 else _partition_names(storage, entry.path, name, levels - 1)
    return found


def _check_create_options(table: TableInfo, options: WriteSpec) -> None:
    """Options that only shape a new table must agree with the existing one (never ignored)."""
    def same_columns(given, actual) -> bool:
        return [c.lower() for c in given] == [c.lower() for c in actual]

    checks = {
        "partitionColumns": (same_columns(options.partition_columns, table.partition_columns),
                             ",".join(table.partition_columns) or "(none)"),
        "bucketColumns": (same_columns(options.bucket_columns, table.bucket_columns),
                          ",".join(table.bucket_columns) or "(none)"),
        "numBuckets": (options.num_buckets == table.num_buckets, str(table.num_buckets)),
        "tableType": (options.insert_only == table.insert_only, "insert_only" if table.insert_only else "full"),
        "compression": (_codec(options.compression) == _codec(table.compression), table.compression),
        "tableName": ((options.table_name or "").lower() == (table.name or ""), table.name or "(none)"),
    }
    for option in sorted(options.given):
        ok, actual = checks[option]
        if not ok:
            raise InvalidArgumentError(option, f"the table at {table.location} already exists with {option} {actual}; "
                                               "this option only applies when a write creates the table (drop the "
                                               "option, or drop the table first with acid_source.drop_table)")


def _codec(name: str) -> str:
    name = (name or "").lower()
    return "uncompressed" if name == "none" else name


def _create_table(metastore: TransactionStore, storage: Storage, options: WriteSpec, data_schema: pa.Schema,
                  location: str, name: str | None) -> TableInfo:
    if storage.exists(storage.root):
        if not storage.is_dir(storage.root):
            raise NotAnAcidTableError(options.path, "it is a file, not a directory")
        layout = discover_layout(storage)
        has_files = any(not is_hidden(e.name) for entries in layout.listings.values() for e in entries)
        if has_files:
            # an ACID table the store does not know: writing would reuse its write ids
            history_on_storage(storage, metastore.url, layout=layout)
            raise NotAnAcidTableError(options.path, "the directory holds files that are not an ACID table")
    names = {n.lower(): n for n in data_schema.names}
    partition_columns = list(options.partition_columns)
    fields = list(data_schema)
    if options.partition is not None:
        if partition_columns:
            raise SchemaError("give the partition columns either in 'partition' or in 'partitionColumns', not both")
        for column, value in options.partition:
            partition_columns.append(column)
            fields.append(pa.field(column, infer_partition_type([value])))
    else:
        missing = [c for c in partition_columns if c.lower() not in names]
        if missing:
            raise SchemaError(f"partition column(s) {', '.join(missing)} are not in the data "
                              f"(columns: {', '.join(data_schema.names)})")
        partition_columns = [names[c.lower()] for c in partition_columns]
        # partition columns go last, as in Hive
        fields = [f for f in fields if f.name not in partition_columns] + [
            data_schema.field(c) for c in partition_columns]
    bucket_columns = [names.get(c.lower(), c) for c in options.bucket_columns]
    # As create_table: the table root (a local directory, an object store's marker) goes first,
    # so the table exists on storage once registered, even if this first write is empty or
    # aborts and leaves no directory of its own behind.
    return register_on_storage(storage, metastore, location, lambda: metastore.create_table(
        location, nullable(pa.schema(fields)), name=name,
        partition_columns=tuple(partition_columns), bucket_columns=tuple(bucket_columns),
        num_buckets=options.num_buckets, insert_only=options.insert_only, compression=options.compression,
        if_not_exists=True), root_existed=False)


# --- the arguments of AcidTable's writes ---------------------------------------------------------
def stage_for(ref: TableRef, mode: Any, partition: Any, data_schema: pa.Schema | None) -> StagedWrite:
    """``newWrite`` / ``append`` / ``overwrite`` of a handle on ``ref``: the arguments checked, then
    the write staged (``data_schema``: the data's schema when known now)."""
    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError("mode", f"expected 'append' or 'overwrite', got {mode!r}")
    static = None if partition is None else static_partition(partition)
    # the store alone says whether acidorc writes the table: no listing of storage (a write
    # does not read the table, and an overwrite replaces data objects storage lost)
    from .resolve import registered_table

    _, info = registered_table(ref.location, ref.metastore_url,
                               "; acidorc writes only tables whose write ids it allocates (create one with "
                               "acid_source.create_table)")
    spec = WriteSpec(path=info.location, metastore_url=ref.metastore_url, partition=static,
                     storage_options=ref.storage_options)
    return stage_write(spec, overwrite=mode == "overwrite", data_schema=data_schema, heartbeat="thread")


def arrow_batches(data: Any) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The data of a write as its schema and batches: a pyarrow Table, RecordBatch,
    RecordBatchReader, an iterable of RecordBatches of one schema, or any Arrow stream
    (``__arrow_c_stream__``: polars, DuckDB, an AcidScan) or array (``__arrow_c_array__``)."""
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, iter(reader)
    if hasattr(data, "__arrow_c_array__"):
        batch = pa.record_batch(data)
        return batch.schema, iter([batch])
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping)):
        return _batches_of(iter(data))
    raise InvalidArgumentError("data", f"expected a pyarrow Table, RecordBatch, RecordBatchReader, batches or an "
                                       f"Arrow stream (__arrow_c_stream__), got {type(data).__name__}")


def _batches_of(it: Iterator[Any]) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    first = next(it, None)
    if first is None:
        raise InvalidArgumentError("data", "no record batches given (the schema cannot be known)")
    if not isinstance(first, pa.RecordBatch):
        raise InvalidArgumentError("data", f"expected pyarrow RecordBatches, got {type(first).__name__}")

    def chain() -> Iterator[pa.RecordBatch]:
        yield first
        for b in it:
            if not isinstance(b, pa.RecordBatch) or b.schema != first.schema:
                raise InvalidArgumentError("data", "every record batch must have the first batch's schema")
            yield b

    return first.schema, chain()


def static_partition(partition: Any) -> tuple[tuple[str, str | None], ...]:
    """A ``partition`` argument as typed (column, value text) pairs: a dict's values keep
    exactly their text (None: the NULL partition); a string is a Hive partition spec."""
    if isinstance(partition, str):
        return parse_partition_spec(partition)
    if isinstance(partition, Mapping):
        from .layout.partitions import DEFAULT_PARTITION_NAME
        from .write.rows import format_partition_value

        pairs: list[tuple[str, str | None]] = []
        for column, value in partition.items():
            if value is None:
                pairs.append((str(column), None))
                continue
            if str(value) == DEFAULT_PARTITION_NAME:
                raise SchemaError(f"partition value {DEFAULT_PARTITION_NAME!r} of {column!r} would read back as "
                                  "NULL; pass None for the NULL partition", column=str(column))
            pairs.append((str(column), format_partition_value(value) or ""))
        return tuple(pairs)
    raise InvalidArgumentError("partition", f"expected 'col=value/...' or a dict, got {type(partition).__name__}")
