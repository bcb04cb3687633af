"""Planning a scan on the driver: snapshot, directory selection per partition, and one split
per (partition directory, bucket), with very large buckets cut into stripe ranges."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass

import pyarrow as pa

from ..errors import CorruptFileError, InvalidOptionError, NotAnAcidTableError, SchemaError
from ..filters import Predicate, partition_matches
from ..layout.acid_state import AcidDir
from ..layout.names import FLUSH_LENGTH_SUFFIX, is_flush_length_file, is_hidden, parse_bucket_file
from ..layout.writeids import ValidTxnList, ValidWriteIdList
from ..metastore import Metastore
from ..metastore.engine import sqlite_store_missing
from ..metastore.tableinfo import TableInfo
from ..options import ReadOptions
from ..orc.files import OrcFile, read_flush_length
from ..storage import FileEntry, Storage
from .discovery import (
    FULL_ACID,
    INSERT_ONLY,
    TableLayout,
    acid_state_for,
    convert_partition_value,
    detect_table_kind,
    discover_layout,
    has_acid_layout,
    infer_data_schema,
    infer_partition_type,
)
from .splits import ROW_ID_COLUMN, ROW_ID_TYPE, BucketSplit, FileSlice, ReadContext


def needs_collapse(orc: OrcFile) -> bool:
    """Does an insert-delta file hold ACID v1 events (UPDATEs, or DELETEs inside ``delta_``)?

    Hive writers record ``inserts,updates,deletes`` in every file; a file without that record
    cannot be proven insert-only, so it is merged the slow, always-correct way."""
    if not orc.is_acid:
        return False
    stats = orc.acid_stats
    return stats is None or stats[1] > 0 or stats[2] > 0


@dataclass
class TableScan:
    """A scan of one table under one snapshot."""

    options: ReadOptions
    storage: Storage
    layout: TableLayout
    write_ids: ValidWriteIdList
    txns: ValidTxnList
    table_kind: str
    table: TableInfo | None = None  # the metastore's record, when the table is registered

    @classmethod
    def open(cls, options: ReadOptions) -> "TableScan":
        storage = Storage(options.path, options.storage_options)
        layout = discover_layout(storage)
        write_ids, txns, table = options.write_ids, options.txns, None
        if (write_ids is None or txns is None) and not sqlite_store_missing(options.metastore_url):
            # The metastore is the source of truth for what is committed; tables it does not
            # know are read as they are on disk.
            metastore = Metastore(options.metastore_url)
            table = metastore.find_table(options.path)
            if table is not None:
                write_ids = write_ids or metastore.valid_write_ids(table.table_id)
                txns = txns or metastore.valid_txns()
        write_ids = write_ids or ValidWriteIdList.all_valid()
        txns = txns or ValidTxnList()
        if table is not None and options.table_type == "auto":
            kind = INSERT_ONLY if table.insert_only else FULL_ACID
        elif options.table_type == "auto":
            if not has_acid_layout(layout):
                if any(any(not is_hidden(e.name) for e in entries) for entries in layout.listings.values()):
                    raise NotAnAcidTableError(
                        options.path,
                        "no base_, delta_ or delete_delta_ directories; if it is a table converted to "
                        "ACID that holds only pre-ACID files, pass option tableType=full",
                    )
                kind = FULL_ACID  # an empty table
            else:
                kind = detect_table_kind(layout, write_ids, txns)
        else:
            kind = FULL_ACID if options.table_type == "full" else INSERT_ONLY
        if options.include_row_id and kind == INSERT_ONLY:
            raise InvalidOptionError("includeRowId", f"{options.path} is an insert-only table: its rows have no ROW__ID")
        return cls(options, storage, layout, write_ids, txns, kind, table)

    # --- schema -------------------------------------------------------------------------------
    def partition_fields(self, output_schema: pa.Schema | None = None) -> list[pa.Field]:
        fields = []
        for i, name in enumerate(self.layout.partition_columns):
            if output_schema is not None:
                idx = output_schema.get_field_index(name)
                if idx < 0:
                    idx = next((j for j, f in enumerate(output_schema) if f.name.lower() == name.lower()), -1)
                if idx < 0:
                    raise SchemaError(f"{self.options.path}: the schema lacks partition column {name!r}")
                fields.append(output_schema.field(idx))
                continue
            values = [p.raw_values[i] for p in self.layout.partitions]
            fields.append(pa.field(name, infer_partition_type(values)))
        return fields

    def infer_schema(self) -> pa.Schema:
        """The metastore's schema of a registered table, otherwise the data columns of the
        newest data file and the partition columns; then ROW__ID if asked."""
        if self.table is not None:
            fields = list(self.table.schema)
            if self.options.include_row_id:
                fields.append(pa.field(ROW_ID_COLUMN, ROW_ID_TYPE))
            return pa.schema(fields)
        data = infer_data_schema(self.layout, self.write_ids, self.txns)
        part_names = {c.lower() for c in self.layout.partition_columns}
        fields = [f for f in data if f.name.lower() not in part_names]
        fields += self.partition_fields()
        if self.options.include_row_id:
            fields.append(pa.field(ROW_ID_COLUMN, ROW_ID_TYPE))
        return pa.schema(fields)

    # --- planning -----------------------------------------------------------------------------
    def plan(self, output_schema: pa.Schema, predicates: list[Predicate] = ()) -> tuple[ReadContext, list[BucketSplit]]:
        part_fields = self.partition_fields(output_schema)
        part_names = [f.name.lower() for f in part_fields]
        part_preds = [p for p in predicates if p.columns <= set(part_names)]
        if self.options.partition_filter:
            from ..partition_filter import parse_partition_filter

            part_preds.append(parse_partition_filter(self.options.partition_filter, part_fields))
        data_preds = tuple(p for p in predicates if p.top_column is not None and p.top_column not in part_names)
        ctx = ReadContext(
            storage=self.storage,
            table_kind=self.table_kind,
            output_schema=output_schema,
            partition_columns=tuple(f.name for f in part_fields),
            include_row_id=self.options.include_row_id,
            predicates=data_preds,
        )
        splits: list[BucketSplit] = []
        snapshot = str(self.write_ids)
        for part in self.layout.partitions:
            values = tuple(convert_partition_value(raw, f.type) for raw, f in zip(part.raw_values, part_fields))
            if part_preds and not partition_matches(part_preds, dict(zip(part_names, values))):
                continue
            state = acid_state_for(self.layout, part, self.write_ids, self.txns)
            buckets: dict[int, dict[str, list[FileSlice]]] = defaultdict(lambda: {"inserts": [], "deletes": []})
            for slice_ in self._original_slices(state.originals, part.path):
                buckets[slice_.bucket_id]["inserts"].append(slice_)
            dirs = ([state.base] if state.base else []) + state.deltas
            for acid_dir in dirs:
                role = "deletes" if acid_dir.parsed.is_delete else "inserts"
                for slice_ in self._dir_slices(acid_dir):
                    buckets[slice_.bucket_id][role].append(slice_)
            for bucket_id in sorted(buckets):
                files = buckets[bucket_id]
                if not files["inserts"]:
                    continue  # a delete-only bucket: its deletes target rows no longer visible
                splits.extend(self._bucket_splits(part.path, values, bucket_id, files, snapshot))
        return ctx, splits

    def _original_slices(self, originals: list[FileEntry], partition_path: str) -> list[FileSlice]:
        slices = []
        earlier: dict[int, list[str]] = defaultdict(list)
        for entry in originals:
            bucket = parse_bucket_file(entry.name).bucket_id
            if bucket < 0 and self.table_kind == FULL_ACID:
                raise CorruptFileError(
                    entry.path, "a pre-ACID file of a full-ACID table must be named like 000000_0 (its bucket id)"
                )
            slices.append(FileSlice(entry.path, bucket, "original", 0, 0, -1,
                                    earlier_originals=tuple(earlier[bucket]), size=entry.size))
            earlier[bucket].append(entry.path)
        return slices

    def _dir_slices(self, acid_dir: AcidDir) -> list[FileSlice]:
        p = acid_dir.parsed
        entries = self.storage.list_dir(acid_dir.path)
        names = {e.name for e in entries}
        streaming = p.kind == "delta" and p.min_write_id != p.max_write_id and p.visibility_txn_id == 0
        slices = []
        earlier: dict[int, list[str]] = defaultdict(list)
        for entry in entries:
            if entry.is_dir or is_hidden(entry.name) or is_flush_length_file(entry.name):
                continue
            bucket = parse_bucket_file(entry.name).bucket_id
            if bucket < 0 and self.table_kind == FULL_ACID:
                raise CorruptFileError(entry.path, "data file name carries no bucket id (expected bucket_N)")
            length = None
            if streaming and entry.name + FLUSH_LENGTH_SUFFIX in names:
                length = read_flush_length(self.storage, entry.path + FLUSH_LENGTH_SUFFIX)
                if length <= 0:
                    continue  # nothing committed yet
            elif entry.size == 0:
                continue
            slices.append(FileSlice(entry.path, bucket, p.kind, p.min_write_id, p.max_write_id, p.statement_id,
                                    length=length, earlier_originals=tuple(earlier[bucket]),
                                    size=length if length is not None else entry.size))
            earlier[bucket].append(entry.path)
        return slices

    def _bucket_splits(self, part_path, values, bucket_id, files, snapshot) -> list[BucketSplit]:
        inserts, deletes = files["inserts"], tuple(files["deletes"])
        limit = self.options.max_split_bytes

        def split(ins, sliced=False):
            return BucketSplit(part_path, values, bucket_id, tuple(ins), deletes, snapshot, sliced)

        sizes = {s.path: s.size for s in inserts}
        if sum(sizes.values()) <= limit:
            return [split(inserts)]
        opened = {s.path: OrcFile(self.storage, s.path, s.length) for s in inserts}
        if any(s.dir_kind == "delta" and needs_collapse(opened[s.path]) for s in inserts):
            return [split(inserts)]  # ACID v1 merge needs every delta event of the bucket
        result: list[BucketSplit] = []
        small: list[FileSlice] = []
        small_size = 0
        for s in inserts:
            if sizes[s.path] <= limit:
                if small and small_size + sizes[s.path] > limit:
                    result.append(split(small, True))
                    small, small_size = [], 0
                small.append(s)
                small_size += sizes[s.path]
                continue
            start, acc = 0, 0
            stripes = opened[s.path].stripes
            for info in stripes:
                if acc and acc + info.length > limit:
                    result.append(split([_with_stripes(s, start, info.index - 1)], True))
                    start, acc = info.index, 0
                acc += info.length
            if stripes:
                result.append(split([_with_stripes(s, start, stripes[-1].index)], True))
        if small:
            result.append(split(small, True))
        return result


def _with_stripes(s: FileSlice, first: int, last: int) -> FileSlice:
    return dataclasses.replace(s, stripes=(first, last))
