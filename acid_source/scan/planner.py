"""Planning a scan on the driver: snapshot, directory selection per partition, and one split
per (partition directory, bucket), with very large buckets cut into stripe ranges."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from ..errors import InvalidArgumentError, SchemaError
from ..filters import Predicate, partition_matches
from ..layout.table_dirs import INSERT_ONLY, acid_state_for, convert_partition_value
from ..orc.files import OrcFile
from .resolved import ResolvedTable
from .slicing import dir_slices, original_slices
from .splits import BucketSplit, FileSlice, ReadContext
from .visibility import needs_collapse

if TYPE_CHECKING:
    from ..expressions import Condition

DEFAULT_MAX_SPLIT_BYTES = 256 * 1024 * 1024


@dataclass
class TableScan:
    """A scan of one resolved table (snapshot and listing taken once, by the caller).

    Conditions arrive bound (parsed and compiled once, by the caller, against the read's
    columns): ``row_filter`` filters every row, and its conjuncts on partition columns rule out
    whole partitions; ``partition_filter`` only selects partitions."""

    table: ResolvedTable
    include_row_id: bool = False
    max_split_bytes: int = DEFAULT_MAX_SPLIT_BYTES
    partition_filter: Condition | None = None
    row_filter: Condition | None = None

    def __post_init__(self):
        if self.include_row_id and self.table.kind == INSERT_ONLY:
            raise InvalidArgumentError("includeRowId",
                                       f"{self.table.location} is an insert-only table: its rows have no ROW__ID")

    # --- schema -------------------------------------------------------------------------------
    def partition_fields(self, output_schema: pa.Schema) -> list[pa.Field]:
        fields = []
        for name in self.table.layout.partition_columns:
            idx = output_schema.get_field_index(name)
            if idx < 0:
                idx = next((j for j, f in enumerate(output_schema) if f.name.lower() == name.lower()), -1)
            if idx < 0:
                raise SchemaError(f"{self.table.location}: the schema lacks partition column {name!r}")
            fields.append(output_schema.field(idx))
        return fields

    def infer_schema(self) -> pa.Schema:
        """The store's schema of a registered table, otherwise the data columns of the newest
        data file and the partition columns; then ROW__ID if asked."""
        return self.table.schema(self.include_row_id)

    def check_schema(self, output_schema: pa.Schema) -> None:
        """A user-given schema may name fewer columns (that prunes the read) but, for a table
        whose schema the store knows, no unknown ones: a misspelled column would silently read
        as nulls. (Other engines' tables have no schema but their files'.)"""
        if not self.table.registered:
            return
        known = {f.name.lower() for f in self.table.schema(include_row_id=True)}
        unknown = [f.name for f in output_schema if f.name.lower() not in known]
        if unknown:
            raise SchemaError(f"{self.table.location}: the table has no column(s) {', '.join(map(repr, unknown))} "
                              f"(columns: {', '.join(self.table.schema().names)})")

    # --- planning -----------------------------------------------------------------------------
    def plan(self, output_schema: pa.Schema,
             predicates: Sequence[Predicate] = ()) -> tuple[ReadContext, list[BucketSplit]]:
        self.check_schema(output_schema)
        part_fields = self.partition_fields(output_schema)
        part_names = [f.name.lower() for f in part_fields]
        part_preds = [p for p in predicates if p.columns <= set(part_names)]
        chosen = self.partition_filter.expression if self.partition_filter is not None else None
        data_preds = tuple(p for p in predicates if p.top_column is not None and p.top_column not in part_names)
        ctx = ReadContext(
            storage=self.table.storage,
            table_kind=self.table.kind,
            output_schema=output_schema,
            partition_columns=tuple(f.name for f in part_fields),
            include_row_id=self.include_row_id,
            predicates=data_preds,
            row_filter=self.row_filter.expression if self.row_filter is not None else None,
            write_ids=self.table.write_ids,
        )
        prune = None
        if self.row_filter is not None and part_fields:
            on_partitions = self.row_filter.on_columns([f.name for f in part_fields])
            prune = on_partitions.expression if on_partitions is not None else None
        chosen_parts = []
        for part in self.table.layout.partitions:
            values = tuple(convert_partition_value(raw, f.type) for raw, f in zip(part.raw_values, part_fields))
            if part_preds and not partition_matches(part_preds, dict(zip(part_names, _as_read(values, part_fields)))):
                continue
            if chosen is not None and not partition_may_match(chosen, part_fields, values, "partitionFilter"):
                continue
            if prune is not None and not partition_may_match(prune, part_fields, values):
                continue
            state = acid_state_for(self.table.layout, part, self.table.write_ids, self.table.txns)
            chosen_parts.append((part, values, state, ([state.base] if state.base else []) + state.deltas))
        # every chosen directory listed at once: one round trip each on object storage
        listings = self.table.layout.list_dirs([d.path for *_, dirs in chosen_parts for d in dirs])
        splits: list[BucketSplit] = []
        snapshot = str(self.table.write_ids)
        for part, values, state, dirs in chosen_parts:
            buckets: dict[int, dict[str, list[FileSlice]]] = defaultdict(lambda: {"inserts": [], "deletes": []})
            for slice_ in original_slices(self.table.storage, state.originals, table_kind=self.table.kind):
                buckets[slice_.bucket_id]["inserts"].append(slice_)
            for acid_dir in dirs:
                role = "deletes" if acid_dir.parsed.is_delete else "inserts"
                for slice_ in dir_slices(self.table.storage, acid_dir, listings[acid_dir.path],
                                         table_kind=self.table.kind):
                    buckets[slice_.bucket_id][role].append(slice_)
            for bucket_id in sorted(buckets):
                files = buckets[bucket_id]
                if not files["inserts"]:
                    continue  # a delete-only bucket: its deletes target rows no longer visible
                splits.extend(self._bucket_splits(part.path, values, bucket_id, files, snapshot))
        return ctx, splits

    def _bucket_splits(self, part_path, values, bucket_id, files, snapshot) -> list[BucketSplit]:
        inserts, deletes = files["inserts"], tuple(files["deletes"])
        limit = self.max_split_bytes

        def split(ins, sliced=False):
            return BucketSplit(part_path, values, bucket_id, tuple(ins), deletes, snapshot, sliced)

        sizes = {s.path: s.size for s in inserts}
        if sum(sizes.values()) <= limit:
            return [split(inserts)]
        opened = {s.path: OrcFile(self.table.storage, s.path, s.length) for s in inserts}
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


def _as_read(values: tuple, part_fields: list[pa.Field]) -> tuple:
    """Partition values as the reader fills the columns: a float column's value rounded to
    float, as Spark's pushed-down float literals are (float('1.1') is not 1.1 as a float)."""
    return tuple(pa.scalar(v, f.type).as_py() if v is not None and pa.types.is_float32(f.type) else v
                 for v, f in zip(values, part_fields))


def partition_may_match(condition, part_fields: list[pa.Field], values: tuple, argument: str | None = None) -> bool:
    """Can a row of the partition with these values pass ``condition`` (partition columns only)?
    Evaluated on the values exactly as the reader fills the columns. An evaluation error keeps
    the partition when rows are filtered again (rowFilter: its rows would meet the same error
    in the read, which reports it); for a condition that only selects partitions (``argument``,
    partitionFilter) nothing would report it, so it is an :class:`InvalidArgumentError` here."""
    row = pa.table({f.name: pa.array([v], f.type) for f, v in zip(part_fields, values)})
    try:
        return row.filter(condition).num_rows == 1
    except (pa.ArrowException, ArithmeticError, TypeError, ValueError) as exc:
        if argument is None:
            return True
        shown = ", ".join(f"{f.name}={v!r}" for f, v in zip(part_fields, values))
        raise InvalidArgumentError(argument, f"cannot evaluate it on the partition {shown}: {exc}") from None
