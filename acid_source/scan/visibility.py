"""Which events of a split a snapshot sees: the layer between the ORC files of a bucket and
everything that consumes its rows (the scan's output shaping, and later DML and compaction).

Hive's merge rule (OrcRawRecordMerger): sort events by (originalTransaction, bucket, rowId)
ascending and currentTransaction descending; the first event whose currentTransaction is
valid wins; if it is a delete, the row is gone. Rather than merge-sorting row by row we use
two equivalent vectorized forms:

* split-update (ACID v2): insert events never supersede each other, so a row is visible iff
  its insert event is valid and no valid delete event carries its ROW__ID - an anti-join
  against a sorted :class:`KeySet` of delete keys.
* ACID v1 (Hive 1/2 data with UPDATE events or deletes inside ``delta_`` dirs): the delta
  events of the bucket are loaded, the winner per ROW__ID is chosen by Hive's sort order
  (:func:`choose_winners`), and base rows with any winning delta event are superseded.

:class:`SplitVisibility` applies these rules to one :class:`BucketSplit` and yields
:class:`VisibleRows`: the file's own columns, the ROW__IDs, and which rows survive - no
projection to an output schema. Runs on executors: imports nothing driver-side.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError
from ..filters import Predicate, stripe_may_match
from ..layout import bucket_codec, row_ids
from ..layout.row_ids import KeySet
from ..layout.writeids import LONG_MAX, LONG_MIN, RangeResponse, ValidWriteIdList
from ..orc.files import EVENT_COLUMNS, OP_DELETE, ROW, OrcFile
from ..storage import Storage
from .splits import BucketSplit, FileSlice

MIN_KEY, MAX_KEY = (LONG_MIN, LONG_MIN, LONG_MIN), (LONG_MAX, LONG_MAX, LONG_MAX)

Keys = tuple  # (originalTransaction, bucket, rowId) as three numpy arrays


@dataclass
class ScanMetrics:
    insert_stripes_read: int = 0
    insert_stripes_skipped: int = 0  # by column statistics
    delete_stripes_read: int = 0
    delete_stripes_skipped: int = 0  # by hive.acid.key.index
    delete_events_loaded: int = 0
    rows_hidden: int = 0  # rows of insert files that are deleted, superseded or of an invalid write id
    rows_returned: int = 0

    def add(self, other: "ScanMetrics") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def valid_write_id_mask(write_ids: ValidWriteIdList, current: np.ndarray) -> np.ndarray:
    """``write_ids.is_write_id_valid`` over an int64 array (binary search over the snapshot's
    id ranges; never expands them)."""
    return write_ids.valid_mask(current)


def choose_winners(events: pa.Table) -> pa.Table:
    """ACID v1 collapse: the event that wins for each ROW__ID.

    ``events`` has columns originalTransaction, bucket, rowId, currentTransaction, operation,
    statement, sequence (load order) and payload columns; only valid events may be passed.
    Order per Hive's ReaderKey: currentTransaction descending, then delete events first,
    then the higher statement id, then the later event.
    """
    if events.num_rows == 0:
        return events
    o = events.column("originalTransaction").to_numpy()
    b = events.column("bucket").to_numpy()
    r = events.column("rowId").to_numpy()
    c = events.column("currentTransaction").to_numpy()
    is_delete = (events.column("operation").to_numpy() == 2).astype(np.int8)
    stmt = events.column("statement").to_numpy()
    seq = events.column("sequence").to_numpy()
    sort = row_ids.order(o, b, r, then=(-c, -is_delete, -stmt, -seq))
    first = row_ids.first_of_each(o[sort], b[sort], r[sort])
    return events.take(pa.array(sort[first]))


def key_arrays(batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(originalTransaction, bucket, rowId) of an ACID batch or table as numpy arrays (batches
    from :meth:`OrcFile.read_stripe` carry the canonical event column names)."""
    return _numpy(batch, "originalTransaction"), _numpy(batch, "bucket"), _numpy(batch, "rowId")


def _numpy(batch, name: str) -> np.ndarray:
    column = batch.column(name)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.to_numpy(zero_copy_only=False)


def check_event_buckets(path: str, buckets: np.ndarray, bucket_id: int) -> None:
    """Every event of a ``bucket_N`` file must carry writer id N in its bucket property.
    ``path`` as errors name it (``Storage.display``)."""
    writers = bucket_codec.decode_writer_ids(buckets)
    if len(writers) and (writers != bucket_id).any():
        bad = int(writers[writers != bucket_id][0])
        raise CorruptFileError(path, f"holds events of bucket {bad} but its name says bucket {bucket_id} "
                                     "(Hive: 'Corrupted records with different bucket ids')")


def needs_collapse(orc: OrcFile) -> bool:
    """Does an insert-delta file hold ACID v1 events (UPDATEs, or DELETEs inside ``delta_``)?

    Hive writers record ``inserts,updates,deletes`` in every file; a file without that record
    cannot be proven insert-only, so it is merged the slow, always-correct way."""
    if not orc.is_acid:
        return False
    stats = orc.acid_stats
    return stats is None or stats[1] > 0 or stats[2] > 0


def all_events_valid(write_ids: ValidWriteIdList, dir_kind: str, min_write_id: int, max_write_id: int) -> bool:
    """Can every event of a file in this directory be seen without checking? A base below
    every open write id holds only committed events (one at the lowest open write id, which
    Hive's base rule accepts, may not); so does a delta whose whole write-id range is valid."""
    if dir_kind == "base":
        return write_ids.is_valid_base(max_write_id)
    return dir_kind == "delta" and write_ids.is_write_id_range_valid(min_write_id, max_write_id) is RangeResponse.ALL


@dataclass(frozen=True, eq=False)
class VisibleRows:
    """The rows of one stripe of one data file, and which of them the snapshot sees.

    ``columns`` hold every row of the stripe and ``mask`` says which survive, so that a caller
    can cut the columns down to what it needs before filtering (filtering the nested event
    batch costs ten times more than filtering a few flat columns); :meth:`to_batch` does both
    for callers that want the surviving rows as they are in the file."""

    source: FileSlice  # the file the rows come from (and its stripe range)
    names: tuple[str, ...]  # the file's data columns: fields of the ACID ``row`` struct, or a plain file's columns
    columns: tuple[pa.Array, ...]  # those columns, every row of the stripe
    length: int  # rows in the stripe
    keys: Keys | None  # ROW__IDs of every row, when asked for or needed to decide
    mask: np.ndarray | None  # True for the rows that survive; None: all survive

    @cached_property
    def num_rows(self) -> int:
        """Rows that survive."""
        return self.length if self.mask is None else int(np.count_nonzero(self.mask))

    def select(self, arrays: Sequence[pa.Array]) -> list[pa.Array]:
        """``arrays`` (one value per row of the stripe, e.g. projected columns) cut to the
        surviving rows."""
        if self.mask is None:
            return list(arrays)
        selection = pa.array(self.mask)
        return [a.filter(selection) for a in arrays]

    def surviving_keys(self) -> Keys | None:
        """The ROW__IDs of the surviving rows (None when they were not read)."""
        if self.keys is None or self.mask is None:
            return self.keys
        return tuple(k[self.mask] for k in self.keys)

    def to_batch(self) -> pa.RecordBatch:
        """The surviving rows with the file's own column names and types."""
        return pa.RecordBatch.from_arrays(self.select(self.columns), names=list(self.names))


class SplitVisibility:
    """Decides which rows of one split its snapshot sees, file by file and stripe by stripe:
    rows of invalid write ids, deleted rows (split-update) and superseded versions (ACID v1)
    are hidden.

    ``with_keys`` asks for the ROW__IDs of the rows; ``write_ids``, the split's snapshot already
    parsed (a scan parses it once, on the driver); ``predicates`` on data columns let it skip
    insert stripes whose column statistics rule every row out (rows of the stripes read are not
    filtered by them). ``current_path`` names the file being read, for error messages.
    """

    def __init__(self, split: BucketSplit, storage: Storage, *, insert_only: bool = False,
                 with_keys: bool = False, predicates: Sequence[Predicate] = (),
                 metrics: ScanMetrics | None = None, write_ids: ValidWriteIdList | None = None,
                 columns: Sequence[str] | None = None):
        self.split = split
        self.storage = storage
        self.insert_only = insert_only
        self.with_keys = with_keys
        self.predicates = tuple(predicates)
        self.metrics = metrics if metrics is not None else ScanMetrics()
        # parsed once per scan on the driver when the caller has it (ReadContext.write_ids)
        self.write_ids = write_ids if write_ids is not None else ValidWriteIdList.parse(split.write_ids)
        self.current_path: str | None = None
        self._files: dict[str, OrcFile] = {}
        self._wanted = None if columns is None else {c.lower() for c in columns}
        self._fields: dict[str, list[str] | None] = {}

    def _open(self, s: FileSlice) -> OrcFile:
        self.current_path = s.path
        f = self._files.get(s.path)
        if f is None:
            f = self._files[s.path] = OrcFile(self.storage, s.path, s.length)
        return f

    def _read(self, f: OrcFile, s: FileSlice, i: int) -> pa.RecordBatch:
        """Stripe ``i`` of an insert file, decoding only the data columns asked for."""
        if s.path not in self._fields:
            self._fields[s.path] = self._chosen_fields(f)
        return f.read_stripe(i, fields=self._fields[s.path])

    def _chosen_fields(self, f: OrcFile) -> list[str] | None:
        """The file's own names of the data columns asked for (None: decode all of them).
        Files whose columns are ``_colN`` are matched by position, so they decode all."""
        if self._wanted is None:
            return None
        row = f.row_type
        names = [row.field(i).name for i in range(row.num_fields)] if row is not None else list(f.schema.names)
        if not names or all(n.startswith("_col") for n in names) or any("." in n for n in names):
            return None
        chosen = [n for n in names if n.lower() in self._wanted]
        return chosen or names[:1]  # the rows must still be counted: decode the first column

    # --- entry point ---------------------------------------------------------------------------
    def rows(self) -> Iterator[VisibleRows]:
        """The surviving rows of the split, one stripe of one file at a time."""
        if self.insert_only:
            return self._insert_only()
        if not self.split.sliced and any(
            s.dir_kind == "delta" and needs_collapse(self._open(s)) for s in self.split.inserts
        ):
            return self._collapse()
        return self._split_update()

    def _visible(self, s: FileSlice, batch: pa.RecordBatch, keys, mask) -> VisibleRows | None:
        """A stripe's rows with its survivors (None when none survive)."""
        n = batch.num_rows
        if mask is not None:
            kept = int(np.count_nonzero(mask))
            self.metrics.rows_hidden += n - kept
            if kept == 0:
                return None
            if kept == n:
                mask = None
        if self._files[s.path].is_acid:
            row = batch.column(ROW)
            names = tuple(row.type.field(i).name for i in range(row.type.num_fields))
            columns = tuple(row.flatten())
        else:
            names, columns = tuple(batch.schema.names), tuple(batch.columns)
        return VisibleRows(s, names, columns, n, keys, mask)

    # --- insert-only tables ----------------------------------------------------------------
    def _insert_only(self):
        for s in self.split.inserts:
            f = self._open(s)
            for i in self._stripes(f, s):
                batch = self._read(f, s, i)
                if batch.num_rows:
                    yield self._visible(s, batch, None, None)

    # --- full ACID, split-update -------------------------------------------------------------
    def _split_update(self):
        deletes = self._load_deletes(self._key_intervals())
        for s in self.split.inserts:
            f = self._open(s)
            if f.num_rows == 0:
                continue
            if f.is_acid:
                yield from self._acid_rows(f, s, deletes, check_valid=not all_events_valid(
                    self.write_ids, s.dir_kind, s.min_write_id, s.max_write_id))
            else:
                yield from self._original_rows(f, s, deletes)

    def _acid_rows(self, f: OrcFile, s: FileSlice, hidden: KeySet, check_valid: bool = True):
        for i in self._stripes(f, s):
            batch = self._read(f, s, i)
            if batch.num_rows == 0:
                continue
            mask = None
            if check_valid:
                mask = valid_write_id_mask(self.write_ids, _numpy(batch, "currentTransaction"))
            keys = key_arrays(batch) if len(hidden) > 0 or self.with_keys else None
            if keys is not None and len(hidden):
                gone = hidden.contains(*keys)
                mask = ~gone if mask is None else mask & ~gone
            visible = self._visible(s, batch, keys, mask)
            if visible is not None:
                yield visible

    def _original_rows(self, f: OrcFile, s: FileSlice, hidden: KeySet):
        """Pre-ACID rows, or raw files loaded into an ACID directory, with Hive's synthetic ROW__IDs."""
        write_id = s.min_write_id if s.dir_kind != "original" else 0
        if write_id and not self.write_ids.is_write_id_valid(write_id):
            return
        need_keys = len(hidden) > 0 or self.with_keys
        offset = self._original_offset(s) if need_keys else 0
        bucket = bucket_codec.encode_v1(s.bucket_id, max(0, s.statement_id))
        for i in self._stripes(f, s):
            batch = self._read(f, s, i)
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
            visible = self._visible(s, batch, keys, mask)
            if visible is not None:
                yield visible

    def _original_offset(self, s: FileSlice) -> int:
        total = 0
        for path in s.earlier_originals:
            self.current_path = path
            total += OrcFile(self.storage, path).num_rows
        self.current_path = s.path
        return total

    # --- full ACID, ACID v1 collapse ---------------------------------------------------------
    def _collapse(self):
        """Hive 1/2 data: the newest valid event per ROW__ID wins, UPDATEs included. Every event
        of the bucket's deltas is loaded; the winners decide which delta rows survive and which
        base rows are superseded."""
        delta_inserts = [s for s in self.split.inserts if s.dir_kind == "delta" and self._open(s).is_acid]
        loaded = []  # (slice, batch, position of its first event) of each insert-delta stripe
        events = []  # the valid events' keys and order columns
        position = 0
        for s in delta_inserts + list(self.split.deletes):
            f = self._open(s)
            is_delete_file = s.dir_kind == "delete_delta"
            if is_delete_file and f.num_rows and not f.is_acid:
                raise CorruptFileError(self.storage.display(s.path), "a delete_delta file must hold ACID events")
            for i in range(f.num_stripes) if s.stripes is None else range(s.stripes[0], s.stripes[1] + 1):
                if is_delete_file:
                    batch = f.read_stripe(i, columns=EVENT_COLUMNS)
                    self.metrics.delete_stripes_read += 1
                else:
                    batch = self._read(f, s, i)
                    self.metrics.insert_stripes_read += 1
                n = batch.num_rows
                if n == 0:
                    continue
                check_event_buckets(self.storage.display(s.path), _numpy(batch, "bucket"), s.bucket_id)
                operation = _numpy(batch, "operation")
                current = _numpy(batch, "currentTransaction")
                valid = valid_write_id_mask(self.write_ids, current)
                if is_delete_file:
                    valid &= operation == OP_DELETE
                else:
                    loaded.append((s, batch, position))
                o, b, r = key_arrays(batch)
                events.append(pa.table({
                    "originalTransaction": pa.array(o.astype(np.int64, copy=False)),
                    "bucket": pa.array(b.astype(np.int32, copy=False)),
                    "rowId": pa.array(r.astype(np.int64, copy=False)),
                    "currentTransaction": pa.array(current.astype(np.int64, copy=False)),
                    "operation": pa.array(operation.astype(np.int32, copy=False)),
                    "statement": pa.array(np.full(n, s.statement_id, dtype=np.int64)),
                    "sequence": pa.array(np.arange(position, position + n, dtype=np.int64)),
                }).filter(pa.array(valid)))
                position += n
        winners = choose_winners(pa.concat_tables(events)) if events else None
        alive = np.zeros(position, dtype=bool)
        superseded = KeySet.empty()
        if winners is not None and winners.num_rows:
            superseded = KeySet(*key_arrays(winners))
            live = winners.column("operation").to_numpy() != OP_DELETE
            alive[winners.column("sequence").to_numpy()[live]] = True
        for s in self.split.inserts:
            if s in delta_inserts:
                continue
            f = self._open(s)
            if f.is_acid:
                yield from self._acid_rows(f, s, superseded)
            else:
                yield from self._original_rows(f, s, superseded)
        for s, batch, start in loaded:
            self.current_path = s.path
            keys = key_arrays(batch) if self.with_keys else None
            visible = self._visible(s, batch, keys, alive[start:start + batch.num_rows])
            if visible is not None:
                yield visible

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
        intervals = _coalesced(intervals)
        parts = []
        bounded = any(lo != MIN_KEY or hi != MAX_KEY for lo, hi in intervals)
        for s in self.split.deletes:
            f = self._open(s)
            if f.num_rows == 0:
                continue
            if not f.is_acid:
                raise CorruptFileError(self.storage.display(s.path), "a delete_delta file must hold ACID events")
            index = f.key_index
            for i in range(f.num_stripes):
                if index is not None and not _stripe_overlaps(index, i, intervals):
                    self.metrics.delete_stripes_skipped += 1
                    continue
                self.metrics.delete_stripes_read += 1
                batch = f.read_stripe(i, columns=EVENT_COLUMNS)
                if batch.num_rows == 0:
                    continue
                check_event_buckets(self.storage.display(s.path), _numpy(batch, "bucket"), s.bucket_id)
                o, b, r = key_arrays(batch)
                keep = valid_write_id_mask(self.write_ids, _numpy(batch, "currentTransaction"))
                keep &= _numpy(batch, "operation") == OP_DELETE
                if bounded:
                    inside = np.zeros(len(o), dtype=bool)
                    for lo, hi in intervals:
                        inside |= _key_ge(o, b, r, lo) & _key_le(o, b, r, hi)
                    keep &= inside
                parts.append((o[keep], b[keep], r[keep]))
        deletes = KeySet.concat(parts)
        self.metrics.delete_events_loaded += len(deletes)
        return deletes


    # --- stripes -------------------------------------------------------------------------------
    def _stripes(self, f: OrcFile, s: FileSlice) -> Iterator[int]:
        first, last = s.stripes if s.stripes else (0, f.num_stripes - 1)
        checks = []
        for pred in self.predicates:
            col = f.data_column_id(pred.top_column) if pred.top_column is not None else None
            if col is not None:
                checks.append((pred, col))
        for i in range(first, last + 1):
            if checks and not all(stripe_may_match(p, f.stripe_statistics(i, col)) for p, col in checks):
                self.metrics.insert_stripes_skipped += 1
                continue
            self.metrics.insert_stripes_read += 1
            yield i


def _coalesced(intervals: list[tuple[tuple, tuple]]) -> list[tuple[tuple, tuple]]:
    """The split's key intervals as their bounding interval. One interval per insert file made
    every delete stripe test every file (quadratic in the number of deltas); the bound is a
    superset of the split's keys, which only decides which delete events are loaded (an extra
    one matches no row). A split covering a whole bucket leaves no key in the gaps anyway."""
    if not intervals:
        return []
    return [(min(lo for lo, _ in intervals), max(hi for _, hi in intervals))]


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
