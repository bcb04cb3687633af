"""Reading one split on an executor: stream insert files stripe by stripe, hide what the
snapshot must not see, and yield Arrow batches in the output schema.

Memory is bounded by one stripe plus the delete events of the split's key ranges (and, for
ACID v1 data only, the delta events of the bucket).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CorruptFileError
from ..filters import stripe_may_match
from ..layout import bucket_codec
from ..layout.writeids import RangeResponse, ValidWriteIdList
from ..merge import KeySet, choose_winners, key_arrays, valid_write_id_mask
from ..orc.files import OP_DELETE, OrcFile
from .discovery import INSERT_ONLY
from .planner import needs_collapse
from .splits import ROW_ID_COLUMN, BucketSplit, FileSlice, ReadContext

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
MIN_KEY, MAX_KEY = (LONG_MIN, LONG_MIN, LONG_MIN), (LONG_MAX, LONG_MAX, LONG_MAX)
MAX_BATCH_ROWS = 1 << 17
_DELETE_COLUMNS = ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction"]


@dataclass
class ScanMetrics:
    insert_stripes_read: int = 0
    insert_stripes_skipped: int = 0  # by column statistics
    delete_stripes_read: int = 0
    delete_stripes_skipped: int = 0  # by hive.acid.key.index
    delete_events_loaded: int = 0
    rows_hidden: int = 0  # deleted, superseded or of an invalid write id
    rows_returned: int = 0

    def add(self, other: "ScanMetrics") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class SplitReader:
    def __init__(self, split: BucketSplit, ctx: ReadContext):
        self.split = split
        self.ctx = ctx
        self.storage = ctx.storage
        self.write_ids = ValidWriteIdList.parse(split.write_ids)
        self.metrics = ScanMetrics()
        self._data_fields = ctx.data_fields
        self._files: dict[str, OrcFile] = {}

    def _open(self, s: FileSlice) -> OrcFile:
        f = self._files.get(s.path)
        if f is None:
            f = self._files[s.path] = OrcFile(self.storage, s.path, s.length)
        return f

    # --- entry point ---------------------------------------------------------------------------
    def batches(self) -> Iterator[pa.RecordBatch]:
        if self.ctx.table_kind == INSERT_ONLY:
            source = self._insert_only()
        elif not self.split.sliced and any(
            s.dir_kind == "delta" and needs_collapse(self._open(s)) for s in self.split.inserts
        ):
            source = self._collapse()
        else:
            source = self._split_update()
        for batch in source:
            for offset in range(0, batch.num_rows, MAX_BATCH_ROWS):
                part = batch.slice(offset, MAX_BATCH_ROWS)
                self.metrics.rows_returned += part.num_rows
                yield part

    # --- insert-only tables ----------------------------------------------------------------
    def _insert_only(self):
        for s in self.split.inserts:
            f = self._open(s)
            for i in self._stripes(f, s):
                batch = f.read_stripe(i)
                if batch.num_rows:
                    yield self._output(self._columns_of(batch, f), batch.num_rows, None)

    # --- full ACID, split-update -------------------------------------------------------------
    def _split_update(self):
        deletes = self._load_deletes(self._key_intervals())
        for s in self.split.inserts:
            f = self._open(s)
            if f.num_rows == 0:
                continue
            if f.is_acid:
                yield from self._acid_rows(f, s, deletes, check_valid=not self._all_valid(s))
            else:
                yield from self._original_rows(f, s, deletes)

    def _all_valid(self, s: FileSlice) -> bool:
        """Can every event of this file be seen without checking? A base below every open
        write id holds only committed events (one at the lowest open write id, which Hive's
        base rule accepts, may not); so does a delta whose whole write-id range is valid."""
        if s.dir_kind == "base":
            return self.write_ids.is_valid_base(s.max_write_id)
        return s.dir_kind == "delta" and self.write_ids.is_write_id_range_valid(
            s.min_write_id, s.max_write_id) is RangeResponse.ALL

    def _acid_rows(self, f: OrcFile, s: FileSlice, hidden: KeySet, check_valid: bool = True):
        for i in self._stripes(f, s):
            batch = f.read_stripe(i)
            n = batch.num_rows
            if n == 0:
                continue
            mask = None
            if check_valid:
                current = batch.column("currentTransaction").to_numpy(zero_copy_only=False)
                mask = valid_write_id_mask(self.write_ids, current)
            need_keys = len(hidden) > 0 or self.ctx.include_row_id
            keys = key_arrays(batch) if need_keys else None
            if len(hidden):
                gone = hidden.contains(*keys)
                mask = ~gone if mask is None else mask & ~gone
            yield from self._emit(batch, f, keys, mask)

    def _original_rows(self, f: OrcFile, s: FileSlice, hidden: KeySet):
        """Pre-ACID rows, or raw files loaded into an ACID directory, with Hive's synthetic ROW__IDs."""
        write_id = s.min_write_id if s.dir_kind != "original" else 0
        if write_id and not self.write_ids.is_write_id_valid(write_id):
            return
        need_keys = len(hidden) > 0 or self.ctx.include_row_id
        offset = self._original_offset(s) if need_keys else 0
        bucket = bucket_codec.encode_v1(s.bucket_id, max(0, s.statement_id))
        for i in self._stripes(f, s):
            batch = f.read_stripe(i)
            n = batch.num_rows
            if n == 0:
                continue
            keys = mask = None
            if need_keys:
                first = f.stripes[i].first_row
                keys = (np.full(n, write_id, dtype=np.int64), np.full(n, bucket, dtype=np.int32),
                        np.arange(offset + first, offset + first + n, dtype=np.int64))
                if len(hidden):
                    gone = hidden.contains(*keys)
                    if write_id == 0:
                        # Hive 1/2 keyed pre-ACID rows by the plain bucket number (BucketCodec V0),
                        # Hive 3 by the V1 value: both name the same row.
                        gone |= hidden.contains(keys[0], np.full(n, s.bucket_id, dtype=np.int32), keys[2])
                    mask = ~gone
            yield from self._emit(batch, f, keys, mask)

    def _original_offset(self, s: FileSlice) -> int:
        return sum(OrcFile(self.storage, p).num_rows for p in s.earlier_originals)

    # --- full ACID, ACID v1 collapse ---------------------------------------------------------
    def _collapse(self):
        """Hive 1/2 data: the newest valid event per ROW__ID wins, UPDATEs included."""
        loaded = []
        sequence = 0
        delta_inserts = [s for s in self.split.inserts if s.dir_kind == "delta" and self._open(s).is_acid]
        for s in delta_inserts + list(self.split.deletes):
            f = self._open(s)
            for i in range(f.num_stripes) if s.stripes is None else range(s.stripes[0], s.stripes[1] + 1):
                if s.dir_kind == "delete_delta":
                    batch = f.read_stripe(i, columns=_DELETE_COLUMNS)
                    self.metrics.delete_stripes_read += 1
                else:
                    batch = f.read_stripe(i)
                    self.metrics.insert_stripes_read += 1
                n = batch.num_rows
                if n == 0:
                    continue
                self._check_bucket(batch, s)
                current = batch.column("currentTransaction").to_numpy(zero_copy_only=False)
                valid = valid_write_id_mask(self.write_ids, current)
                self.metrics.rows_hidden += int(n - valid.sum())
                cols = {
                    "originalTransaction": batch.column("originalTransaction"),
                    "bucket": batch.column("bucket"),
                    "rowId": batch.column("rowId"),
                    "currentTransaction": batch.column("currentTransaction"),
                    "operation": batch.column("operation"),
                    "statement": pa.array(np.full(n, s.statement_id, dtype=np.int64)),
                    "sequence": pa.array(np.arange(sequence, sequence + n, dtype=np.int64)),
                }
                sequence += n
                data = self._columns_of(batch, f) if s.dir_kind != "delete_delta" else self._null_columns(n)
                for field, arr in zip(self._data_fields, data):
                    cols[f"d:{field.name}"] = arr
                loaded.append(pa.table(cols).filter(pa.array(valid)))
        winners = choose_winners(pa.concat_tables(loaded)) if loaded else None
        superseded = KeySet(*key_arrays(winners)) if winners is not None else KeySet.empty()
        for s in self.split.inserts:
            if s in delta_inserts:
                continue
            f = self._open(s)
            if f.is_acid:
                yield from self._acid_rows(f, s, superseded)
            else:
                yield from self._original_rows(f, s, superseded)
        if winners is not None and winners.num_rows:
            live = winners.filter(pc.not_equal(winners.column("operation"), OP_DELETE))
            if live.num_rows:
                data = [live.column(f"d:{field.name}").combine_chunks() for field in self._data_fields]
                keys = key_arrays(live) if self.ctx.include_row_id else None
                yield self._output(data, live.num_rows, keys)

    # --- delete events -----------------------------------------------------------------------
    def _key_intervals(self) -> list[tuple[tuple, tuple]]:
        """Inclusive ROW__ID ranges of this split's insert rows (for delete-stripe skipping)."""
        intervals = []
        for s in self.split.inserts:
            lo, hi = MIN_KEY, MAX_KEY
            if s.dir_kind == "delta":
                lo, hi = (s.min_write_id, LONG_MIN, LONG_MIN), (s.max_write_id, LONG_MAX, LONG_MAX)
            elif s.dir_kind == "original":
                lo, hi = (0, LONG_MIN, LONG_MIN), (0, LONG_MAX, LONG_MAX)
            f = self._open(s)
            index = f.key_index if f.is_acid else None
            if index:
                first, last = s.stripes if s.stripes else (0, len(index) - 1)
                if first > 0:
                    w, b, r = index[first - 1]
                    lo = max(lo, (w, b, r + 1))
                hi = min(hi, index[last])
            intervals.append((lo, hi))
        return intervals

    def _load_deletes(self, intervals) -> KeySet:
        parts = []
        bounded = any(lo != MIN_KEY or hi != MAX_KEY for lo, hi in intervals)
        for s in self.split.deletes:
            f = self._open(s)
            if f.num_rows == 0:
                continue
            if not f.is_acid:
                raise CorruptFileError(s.path, "a delete_delta file must hold ACID events")
            index = f.key_index
            for i in range(f.num_stripes):
                if index is not None and not _stripe_overlaps(index, i, intervals):
                    self.metrics.delete_stripes_skipped += 1
                    continue
                self.metrics.delete_stripes_read += 1
                batch = f.read_stripe(i, columns=_DELETE_COLUMNS)
                if batch.num_rows == 0:
                    continue
                self._check_bucket(batch, s)
                o, b, r = key_arrays(batch)
                current = batch.column("currentTransaction").to_numpy(zero_copy_only=False)
                keep = valid_write_id_mask(self.write_ids, current)
                keep &= batch.column("operation").to_numpy(zero_copy_only=False) == OP_DELETE
                if bounded:
                    inside = np.zeros(len(o), dtype=bool)
                    for lo, hi in intervals:
                        inside |= _key_ge(o, b, r, lo) & _key_le(o, b, r, hi)
                    keep &= inside
                parts.append((o[keep], b[keep], r[keep]))
        deletes = KeySet.concat(parts)
        self.metrics.delete_events_loaded += len(deletes)
        return deletes

    def _check_bucket(self, batch: pa.RecordBatch, s: FileSlice) -> None:
        writers = bucket_codec.decode_writer_ids(batch.column("bucket").to_numpy(zero_copy_only=False))
        if len(writers) and (writers != s.bucket_id).any():
            bad = int(writers[writers != s.bucket_id][0])
            raise CorruptFileError(
                s.path, f"holds events of bucket {bad} but its name says bucket {s.bucket_id} "
                "(Hive: 'Corrupted records with different bucket ids')"
            )

    # --- stripes and output --------------------------------------------------------------------
    def _stripes(self, f: OrcFile, s: FileSlice) -> Iterator[int]:
        first, last = s.stripes if s.stripes else (0, f.num_stripes - 1)
        checks = []
        if self.ctx.predicates:
            prefix = ("row",) if f.is_acid else ()
            for pred in self.ctx.predicates:
                col = f.column_id(prefix + (pred.top_column,))
                if col is not None:
                    checks.append((pred, col))
        for i in range(first, last + 1):
            if checks and not all(stripe_may_match(p, f.stripe_statistics(i, col)) for p, col in checks):
                self.metrics.insert_stripes_skipped += 1
                continue
            self.metrics.insert_stripes_read += 1
            yield i

    def _emit(self, batch: pa.RecordBatch, f: OrcFile, keys, mask) -> Iterator[pa.RecordBatch]:
        n = batch.num_rows
        data = self._columns_of(batch, f)  # flatten first: filtering the nested event batch costs 10x
        if mask is not None:
            kept = int(np.count_nonzero(mask))
            self.metrics.rows_hidden += n - kept
            if kept == 0:
                return
            if kept < n:
                selection = pa.array(mask)
                data = [col.filter(selection) for col in data]
                if self.ctx.include_row_id:
                    keys = tuple(k[mask] for k in keys)
                n = kept
        yield self._output(data, n, keys)

    def _columns_of(self, batch: pa.RecordBatch, f: OrcFile) -> list[pa.Array]:
        """The output data columns from a file batch, matched by name (positionally for files
        whose columns are named ``_colN``); columns the file lacks become nulls."""
        if f.is_acid:
            row = batch.column(5)
            names = [row.type.field(i).name for i in range(row.type.num_fields)]
            arrays = row.flatten()
        else:
            names = batch.schema.names
            arrays = list(batch.columns)
        by_name = {name.lower(): arr for name, arr in zip(names, arrays)}
        positional = bool(names) and all(n.startswith("_col") for n in names)
        out = []
        for i, field in enumerate(self._data_fields):
            arr = by_name.get(field.name.lower())
            if arr is None and positional and i < len(arrays):
                arr = arrays[i]
            if arr is None:
                out.append(pa.nulls(batch.num_rows, field.type))
                continue
            if arr.type != field.type:
                try:
                    arr = arr.cast(field.type, safe=False)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise CorruptFileError(f.path, f"column {field.name!r} of type {arr.type} "
                                                   f"cannot be read as {field.type}: {exc}") from None
            out.append(arr)
        return out

    def _null_columns(self, n: int) -> list[pa.Array]:
        return [pa.nulls(n, field.type) for field in self._data_fields]

    def _output(self, data: list[pa.Array], n: int, keys) -> pa.RecordBatch:
        arrays = list(data)
        schema = self.ctx.output_schema
        for name, value in zip(self.ctx.partition_columns, self.split.partition_values):
            type_ = schema.field(name).type
            arrays.append(_constant(value, type_, n))
        if self.ctx.include_row_id:
            o, b, r = keys
            arrays.append(pa.StructArray.from_arrays(
                [pa.array(o, pa.int64()), pa.array(b, pa.int32()), pa.array(r, pa.int64())],
                fields=list(schema.field(ROW_ID_COLUMN).type),
            ))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _constant(value, type_: pa.DataType, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, type_)
    return pa.array([value], type_).take(pa.array(np.zeros(n, dtype=np.int32)))


def _key_ge(o, b, r, key) -> np.ndarray:
    w, bb, rr = key
    b = b.astype(np.int64)
    return (o > w) | ((o == w) & ((b > bb) | ((b == bb) & (r >= rr))))


def _key_le(o, b, r, key) -> np.ndarray:
    w, bb, rr = key
    b = b.astype(np.int64)
    return (o < w) | ((o == w) & ((b < bb) | ((b == bb) & (r <= rr))))


def _stripe_overlaps(index: list[tuple], i: int, intervals) -> bool:
    """Stripe ``i`` of a delete file holds keys in (index[i-1], index[i]]."""
    last = index[i]
    prev = index[i - 1] if i > 0 else None
    return any(last >= lo and (prev is None or prev < hi) for lo, hi in intervals)


def read_split(split: BucketSplit, ctx: ReadContext, metrics: ScanMetrics | None = None) -> Iterator[pa.RecordBatch]:
    reader = SplitReader(split, ctx)
    try:
        yield from reader.batches()
    finally:
        if metrics is not None:
            metrics.add(reader.metrics)
