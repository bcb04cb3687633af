"""One write on the driver: resolve or create the table, open a transaction, and make the
tasks' files visible atomically by committing the write id - or abort and remove them."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import pyarrow as pa

from ..errors import InvalidOptionError, NotAnAcidTableError, SchemaError
from ..layout.names import ACID_VERSION_FILE, base_dir_name, bucket_file_name, is_hidden
from ..layout.partitions import parse_partition_segment
from ..metastore import Metastore
from ..metastore.tableinfo import TableInfo
from ..options import WriteOptions
from ..orc.writer import InsertFileWriter
from ..scan.discovery import convert_partition_value, discover_layout, has_acid_layout, infer_partition_type
from ..storage import Storage
from .rows import parse_static_partition, partition_path
from .task import TaskResult, WritePlan

# Arrow type changes a write may make silently when the data's type differs from the table's.
_WIDENINGS = {
    (pa.int8(), pa.int16()), (pa.int8(), pa.int32()), (pa.int8(), pa.int64()),
    (pa.int16(), pa.int32()), (pa.int16(), pa.int64()), (pa.int32(), pa.int64()),
    (pa.float32(), pa.float64()),
}


def _compatible(data_type: pa.DataType, table_type: pa.DataType) -> bool:
    return data_type == table_type or (data_type, table_type) in _WIDENINGS or pa.types.is_null(data_type)


@dataclass
class WriteJob:
    metastore: Metastore
    table: TableInfo
    txn_id: int
    plan: WritePlan
    dynamic_overwrite: bool

    @classmethod
    def begin(cls, options: WriteOptions, data_schema: pa.Schema, overwrite: bool) -> "WriteJob":
        metastore = Metastore(options.metastore_url)
        storage = Storage(options.path, options.storage_options)
        table = metastore.find_table(options.path)
        if table is None:
            table = _create_table(metastore, storage, options, data_schema)
        static = ()
        if options.static_partition is not None:
            if not table.partition_columns:
                raise InvalidOptionError("partition", f"{table.location} is not partitioned")
            spec = parse_static_partition(options.static_partition, list(table.partition_columns))
            static = tuple((c, convert_partition_value(spec[c], table.schema.field(c).type)) for c in table.partition_columns)
        table_data = pa.schema([table.schema.field(n) for n in table.data_columns])
        _check_schema(table, table_data, data_schema, static_partition=bool(static))
        txn_id = metastore.open_transaction(description=f"{'overwrite' if overwrite else 'append'} {table.location}")
        try:
            write_id = metastore.allocate_write_id(txn_id, table.table_id)
        except BaseException:
            metastore.abort(txn_id, "could not allocate a write id")
            raise
        plan = WritePlan(
            storage=storage,
            data_schema=table_data,
            partition_columns=table.partition_columns,
            static_partition=static,
            bucket_columns=table.bucket_columns,
            num_buckets=table.num_buckets,
            bucketing_version=table.bucketing_version,
            insert_only=table.insert_only,
            compression=table.compression,
            write_id=write_id,
            overwrite=overwrite,
        )
        return cls(metastore, table, txn_id, plan, options.dynamic_overwrite)

    # --- driver: commit / abort --------------------------------------------------------------
    def commit(self, results: list[TaskResult]) -> None:
        touched = {f.partition for r in results for f in r.files}
        written = [d for r in results for d in r.directories]
        try:
            if self.plan.overwrite:
                for part in self._partitions_to_empty(touched):
                    written.append(self._empty_base(part))
                    touched.add(part)
            self.metastore.commit(
                self.txn_id,
                touched={self.table.table_id: sorted(touched)},
                operation="insert_overwrite" if self.plan.overwrite else "insert",
            )
        except BaseException:
            self._discard(results, written, reason="commit failed")
            raise

    def abort(self, results: list[TaskResult], reason: str = "the Spark job failed") -> None:
        self._discard(results, [d for r in results for d in r.directories], reason)

    def _discard(self, results, directories, reason: str) -> None:
        if self.metastore.txn_state(self.txn_id) == "open":
            self.metastore.abort(self.txn_id, reason)
        storage = self.plan.storage
        for directory in sorted(set(directories)):
            storage.remove(directory, recursive=True)

    # --- overwrite ---------------------------------------------------------------------------
    def _partitions_to_empty(self, touched: set[str]) -> list[str]:
        """Partitions an overwrite must replace although no task wrote rows into them."""
        plan = self.plan
        if not plan.partition_columns:
            return [] if "" in touched else [""]
        if plan.static_partition:
            part = partition_path(list(plan.partition_columns), tuple(v for _, v in plan.static_partition))
            return [] if part in touched else [part]
        if self.dynamic_overwrite:
            return []
        existing = []
        if plan.storage.exists(plan.storage.root):
            for p in discover_layout(plan.storage).partitions:
                rel = p.path[len(plan.storage.root):].strip("/")
                if rel and rel not in touched:
                    existing.append(rel)
        return existing

    def _empty_base(self, part: str) -> str:
        """An empty base_W (Hive keeps an empty base file so that an overwrite takes effect)."""
        storage = self.plan.storage
        directory = storage.join(storage.join(storage.root, part) if part else storage.root,
                                 base_dir_name(self.plan.write_id))
        storage.make_dirs(directory)
        name = "000000_0" if self.plan.insert_only else bucket_file_name(0)
        with tempfile.TemporaryDirectory(prefix="acidorc-") as tmp:
            local = os.path.join(tmp, name)
            InsertFileWriter(local, self.plan.data_schema, self.plan.write_id, 1 << 29,
                             compression=self.plan.compression, plain=self.plan.insert_only).close()
            storage.put_file(local, storage.join(directory, name))
        if not self.plan.insert_only:
            storage.write_if_absent(storage.join(directory, ACID_VERSION_FILE), b"2")
        return directory


def _create_table(metastore: Metastore, storage: Storage, options: WriteOptions, data_schema: pa.Schema) -> TableInfo:
    if storage.exists(storage.root):
        if not storage.is_dir(storage.root):
            raise NotAnAcidTableError(options.path, "it is a file, not a directory")
        layout = discover_layout(storage)
        has_files = any(not is_hidden(e.name) for entries in layout.listings.values() for e in entries)
        if has_files:
            if has_acid_layout(layout):
                raise NotAnAcidTableError(
                    options.path, "it holds an ACID table that is not registered in the acidorc metastore "
                    f"({metastore.url}); writing would reuse its write ids")
            raise NotAnAcidTableError(options.path, "the directory holds files that are not an ACID table")
    names = {n.lower(): n for n in data_schema.names}
    partition_columns = list(options.partition_columns)
    fields = list(data_schema)
    if options.static_partition is not None:
        if partition_columns:
            raise SchemaError("give the partition columns either in 'partition' or in 'partitionColumns', not both")
        for segment in options.static_partition.replace(",", "/").split("/"):
            parsed = parse_partition_segment(segment.strip()) if segment.strip() else None
            if parsed is not None:
                partition_columns.append(parsed[0])
                fields.append(pa.field(parsed[0], infer_partition_type([parsed[1]])))
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
    return metastore.create_table(
        options.path, pa.schema(fields), name=options.table_name, partition_columns=tuple(partition_columns),
        bucket_columns=tuple(bucket_columns), num_buckets=options.num_buckets, insert_only=options.insert_only,
        compression=options.compression, if_not_exists=True)


def _check_schema(table: TableInfo, table_data: pa.Schema, data_schema: pa.Schema, static_partition: bool) -> None:
    """The data must have exactly the table's columns (partition columns too, unless given
    statically), by name, with the same or a safely widened type."""
    expected = list(table_data) + ([] if static_partition else [table.schema.field(c) for c in table.partition_columns])
    given = {f.name.lower(): f for f in data_schema}
    problems = []
    for f in expected:
        d = given.pop(f.name.lower(), None)
        if d is None:
            problems.append(f"missing column {f.name!r}")
        elif not _compatible(d.type, f.type):
            problems.append(f"column {f.name!r} is {d.type} in the data but {f.type} in the table")
    problems += [f"unknown column {name!r}" for name in given]
    if problems:
        raise SchemaError(f"cannot write to {table.location}: " + "; ".join(problems))
