"""Reading one change split on an executor: the insert events of the wanted write ids, and
their delete events with the deleted rows' values (looked up by ROW__ID among insert events).

A ROW__ID (originalTransaction, bucket, rowId) names exactly one insert event, ever: split
update never rewrites a row in place, so the values a delete removed are those of the insert
event with its key, wherever that event lives now (its own delta, a minor compaction's delta,
a base that still holds the row, or a pre-ACID file with synthetic row ids). Lookups go
through the files' ``hive.acid.key.index`` (the last key of each stripe) so only the stripes
that can hold a deleted key are read.

Memory: one stripe, plus the delete events of the split's wanted write ids (four integers
each). Runs on executors: imports nothing driver-side; what it needs arrives in the picklable
:class:`ChangeSplit` and :class:`ChangeContext`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyorc.errors

from ..errors import AcidError, CorruptFileError, HistoryUnavailableError, UnsupportedOperationError
from ..layout import bucket_codec, row_ids
from ..orc.files import EVENT_COLUMNS, OP_DELETE, OP_INSERT, ROW, OrcFile
from ..scan.reader import MAX_BATCH_ROWS, match_columns
from ..scan.splits import FileSlice
from ..storage import Storage

CHANGE_TYPE_COLUMN = "_change_type"
COMMIT_VERSION_COLUMN = "_commit_version"
COMMIT_TIMESTAMP_COLUMN = "_commit_timestamp"
INSERT, DELETE = "insert", "delete"
CHANGE_FIELDS = (pa.field(CHANGE_TYPE_COLUMN, pa.string()), pa.field(COMMIT_VERSION_COLUMN, pa.int64()),
                 pa.field(COMMIT_TIMESTAMP_COLUMN, pa.timestamp("us", tz="UTC")))

_LIBRARY_ERRORS = (ArithmeticError, AttributeError, LookupError, TypeError, ValueError, OSError, RuntimeError,
                   pa.ArrowException, pyorc.errors.ORCError)


def change_schema(table_schema: pa.Schema) -> pa.Schema:
    """The table's columns (partition columns last), then ``_change_type``, ``_commit_version``
    and ``_commit_timestamp`` (Delta Lake's change data feed columns)."""
    return pa.schema(list(table_schema) + list(CHANGE_FIELDS))


@dataclass(frozen=True)
class ChangeContext:
    """What every split of one change feed shares."""

    storage: Storage
    location: str  # the table, as errors name it
    output_schema: pa.Schema  # change_schema(table schema)
    partition_columns: tuple[str, ...]
    write_ids: tuple[int, ...]  # the committed write ids read, ascending
    commit_micros: tuple[int, ...]  # their commit times (UTC epoch microseconds), same order
    asked: str  # what the caller asked for, for errors ("startingVersion=3, endingVersion=7")

    @property
    def data_fields(self) -> list[pa.Field]:
        skip = {c.lower() for c in self.partition_columns} | {f.name for f in CHANGE_FIELDS}
        return [f for f in self.output_schema if f.name.lower() not in skip and f.name not in skip]


@dataclass(frozen=True)
class ChangeSplit:
    """One bucket of one partition directory: the files holding its wanted insert and delete
    events, and the insert files where deleted rows' values may be found (deltas first, then
    bases newest first, then pre-ACID files)."""

    partition_path: str
    partition_values: tuple
    bucket_id: int
    inserts: tuple[FileSlice, ...]
    deletes: tuple[FileSlice, ...]
    lookups: tuple[FileSlice, ...]

    @property
    def description(self) -> str:
        part = self.partition_path.rsplit("/", 1)[-1] if self.partition_values else ""
        return f"{part} bucket {self.bucket_id} changes".strip()


def read_change_split(split: ChangeSplit, ctx: ChangeContext) -> Iterator[pa.RecordBatch]:
    """The change rows of one split: inserts, then deletes; batches of the context's output
    schema, at most MAX_BATCH_ROWS rows each."""
    reader = _SplitChanges(split, ctx)
    try:
        for batch in reader.batches():
            for offset in range(0, batch.num_rows, MAX_BATCH_ROWS):
                yield batch.slice(offset, MAX_BATCH_ROWS)
    except AcidError:
        raise
    except _LIBRARY_ERRORS as exc:
        path = reader.current_path or split.partition_path
        raise CorruptFileError(ctx.storage.display(path), f"{type(exc).__name__}: {exc}") from exc


class _SplitChanges:
    def __init__(self, split: ChangeSplit, ctx: ChangeContext):
        self.split, self.ctx = split, ctx
        self.wanted = np.asarray(ctx.write_ids, dtype=np.int64)
        self.micros = np.asarray(ctx.commit_micros, dtype=np.int64)
        self.current_path: str | None = None
        self._data_fields = ctx.data_fields

    def _open(self, s: FileSlice) -> OrcFile:
        self.current_path = s.path
        return OrcFile(self.ctx.storage, s.path, s.length)

    def batches(self) -> Iterator[pa.RecordBatch]:
        for s in self.split.inserts:
            yield from self._inserts(s)
        if self.split.deletes:
            yield from self._deletes()

    # --- inserts -----------------------------------------------------------------------------
    def _inserts(self, s: FileSlice) -> Iterator[pa.RecordBatch]:
        f = self._open(s)
        if f.num_rows == 0:
            return
        if not f.is_acid:  # a raw file loaded into a delta: every row is its write id's insert
            if s.min_write_id != s.max_write_id or s.min_write_id not in self.ctx.write_ids:
                return
            for i in _stripes(f, s):
                batch = f.read_stripe(i)
                if batch.num_rows:
                    versions = np.full(batch.num_rows, s.min_write_id, dtype=np.int64)
                    yield self._shape(s, batch.schema.names, batch.columns, batch.num_rows, None, versions, INSERT)
            return
        for i in _stripes(f, s):
            batch = f.read_stripe(i)
            if batch.num_rows == 0:
                continue
            current = _numpy(batch, "currentTransaction")
            operation = _numpy(batch, "operation")
            wanted = np.isin(current, self.wanted)
            if (wanted & (operation != OP_INSERT)).any():
                raise UnsupportedOperationError(
                    "readChangeFeed", f"{self.ctx.storage.display(s.path)} holds ACID v1 update or delete events "
                                      "in an insert delta (Hive 1/2 data); the change feed reads split-update "
                                      "(ACID v2) tables only")
            if not wanted.any():
                continue
            row = batch.column(ROW)
            names = [row.type.field(k).name for k in range(row.type.num_fields)]
            yield self._shape(s, names, row.flatten(), batch.num_rows, wanted, current[wanted], INSERT)

    # --- deletes -----------------------------------------------------------------------------
    def _deletes(self) -> Iterator[pa.RecordBatch]:
        deleted = self._delete_events()
        if len(deleted) == 0:
            return
        for s in self.split.lookups:
            if deleted.all_found():
                break
            yield from self._lookup(s, deleted)
        if not deleted.all_found():
            (o, b, r), w = deleted.first_missing()
            raise HistoryUnavailableError(
                self.ctx.location, w, self.ctx.asked, partition=self.split.partition_path,
                directory=f"no insert event holds the ROW__ID ({o}, {b}, {r}) it deleted")

    def _delete_events(self) -> "_Deleted":
        """The ROW__IDs the wanted write ids deleted in this split, and which write id did."""
        parts, owners = [], []
        for s in self.split.deletes:
            f = self._open(s)
            if f.num_rows == 0:
                continue
            if not f.is_acid:
                raise CorruptFileError(self.ctx.storage.display(s.path), "a delete_delta file must hold ACID events")
            for i in _stripes(f, s):
                batch = f.read_stripe(i, columns=EVENT_COLUMNS)
                if batch.num_rows == 0:
                    continue
                current = _numpy(batch, "currentTransaction")
                keep = np.isin(current, self.wanted) & (_numpy(batch, "operation") == OP_DELETE)
                if not keep.any():
                    continue
                parts.append(tuple(_numpy(batch, c)[keep] for c in ("originalTransaction", "bucket", "rowId")))
                owners.append(current[keep])
        return _Deleted(parts, owners)

    def _lookup(self, s: FileSlice, deleted: "_Deleted") -> Iterator[pa.RecordBatch]:
        """The rows of ``s`` whose ROW__ID is a deleted key not found yet, as delete rows."""
        if not deleted.may_hold(*_write_id_range(s)):
            return  # no pending key has an originalTransaction this file can hold
        f = self._open(s)
        if f.num_rows == 0:
            return
        if not f.is_acid:
            yield from self._lookup_raw(s, f, deleted)
            return
        index = f.key_index
        for i in _stripes(f, s):
            if index is not None and not deleted.pending_between(index[i - 1] if i > 0 else None, index[i]):
                continue  # the stripe holds the keys in (index[i-1], index[i]]: none pending
            keys = f.read_stripe(i, columns=EVENT_COLUMNS)
            if keys.num_rows == 0:
                continue
            hit, where = deleted.match(_numpy(keys, "originalTransaction"), _numpy(keys, "bucket"),
                                       _numpy(keys, "rowId"))
            hit &= _numpy(keys, "operation") != OP_DELETE
            if not hit.any():
                continue
            row = f.read_stripe(i, columns=["row"]).column(0)
            names = [row.type.field(k).name for k in range(row.type.num_fields)]
            yield self._shape(s, names, row.flatten(), keys.num_rows, hit, deleted.take(where[hit]), DELETE)
            if deleted.all_found():
                return

    def _lookup_raw(self, s: FileSlice, f: OrcFile, deleted: "_Deleted") -> Iterator[pa.RecordBatch]:
        """A pre-ACID file (or a raw file loaded into a delta): Hive's synthetic ROW__IDs, as the
        reader gives them - write id 0 (or the delta's), the bucket property of the file's bucket,
        row ids counting on from the same bucket's earlier original files."""
        write_id = 0 if s.dir_kind == "original" else s.min_write_id
        offset = 0
        for path in s.earlier_originals:
            self.current_path = path
            offset += OrcFile(self.ctx.storage, path).num_rows
        self.current_path = s.path
        buckets = [bucket_codec.encode_v1(s.bucket_id, max(0, s.statement_id))]
        if write_id == 0:
            buckets.append(s.bucket_id)  # Hive 1/2 keyed pre-ACID rows by the plain bucket number
        for i in _stripes(f, s):
            batch = f.read_stripe(i)
            n = batch.num_rows
            if n == 0:
                continue
            first = f.stripes[i].first_row + offset
            rows = np.arange(first, first + n, dtype=np.int64)
            hit = np.zeros(n, dtype=bool)
            where = np.zeros(n, dtype=np.int64)
            for bucket in buckets:
                h, w = deleted.match(np.full(n, write_id, dtype=np.int64), np.full(n, bucket, dtype=np.int64), rows)
                h &= ~hit
                where[h] = w[h]
                hit |= h
            if hit.any():
                yield self._shape(s, batch.schema.names, batch.columns, n, hit, deleted.take(where[hit]), DELETE)

    # --- output ------------------------------------------------------------------------------
    def _shape(self, s: FileSlice, names, columns, length: int, mask: np.ndarray | None,
               versions: np.ndarray, change: str) -> pa.RecordBatch:
        arrays = match_columns(names, columns, self._data_fields, length, self.ctx.storage.display(s.path))
        if mask is not None and not mask.all():
            selection = pa.array(mask)
            arrays = [a.filter(selection) for a in arrays]
        n = len(versions)
        schema = self.ctx.output_schema
        for name, value in zip(self.ctx.partition_columns, self.split.partition_values):
            arrays.append(_repeat(value, schema.field(name).type, n))
        micros = self.micros[np.searchsorted(self.wanted, versions)]
        arrays.append(_repeat(change, pa.string(), n))
        arrays.append(pa.array(versions, pa.int64()))
        arrays.append(pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC")))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _repeat(value, type_: pa.DataType, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, type_)
    return pa.array([value], type_).take(pa.array(np.zeros(n, dtype=np.int32)))


def _stripes(f: OrcFile, s: FileSlice) -> range:
    first, last = s.stripes if s.stripes else (0, f.num_stripes - 1)
    return range(first, last + 1)


def _numpy(batch: pa.RecordBatch, name: str) -> np.ndarray:
    return batch.column(name).to_numpy(zero_copy_only=False)


class _Deleted:
    """The delete events of a split: their ROW__IDs, sorted, the write id that deleted each, and
    which were found among insert events so far. Probes come in file order (ROW__ID order),
    so each (originalTransaction, bucket) run is one binary search over row ids."""

    def __init__(self, keys: list[tuple[np.ndarray, np.ndarray, np.ndarray]], owners: list[np.ndarray]):
        if keys:
            o, b, r = (np.concatenate([k[i] for k in keys]).astype(np.int64) for i in range(3))
            w = np.concatenate(owners).astype(np.int64)
        else:
            o = b = r = w = np.zeros(0, dtype=np.int64)
        order = row_ids.order(o, b, r)
        self.o, self.b, self.r, self.w = o[order], b[order], r[order], w[order]
        self.found = np.zeros(len(o), dtype=bool)
        self._segments: dict[tuple[int, int], tuple[int, int]] = {}
        bounds = row_ids.runs(self.o, self.b)
        for start, end in zip(bounds[:-1], bounds[1:]):
            if end > start:
                self._segments[(int(self.o[start]), int(self.b[start]))] = (int(start), int(end))

    def __len__(self) -> int:
        return len(self.o)

    def all_found(self) -> bool:
        return bool(self.found.all())

    def first_missing(self) -> tuple[tuple[int, int, int], int]:
        i = int(np.flatnonzero(~self.found)[0])
        return (int(self.o[i]), int(self.b[i]), int(self.r[i])), int(self.w[i])

    def take(self, where: np.ndarray) -> np.ndarray:
        """The deleting write ids of the matched events ``where`` (marking them found)."""
        self.found[where] = True
        return self.w[where]

    def may_hold(self, lo: int, hi: int) -> bool:
        """Is an event not found yet deleting a row of originalTransaction lo..hi?"""
        start, end = np.searchsorted(self.o, lo, side="left"), np.searchsorted(self.o, hi, side="right")
        return bool(start < end and not self.found[start:end].all())

    def pending_between(self, after: tuple | None, last: tuple) -> bool:
        """Is an event not found yet deleting a key in (after, last]?"""
        start = 0 if after is None else self._position(after, "right")
        end = self._position(last, "right")
        return bool(start < end and not self.found[start:end].all())

    def _position(self, key: tuple, side: str) -> int:
        o, b, r = (int(k) for k in key)
        lo = int(np.searchsorted(self.o, o, side="left"))
        hi = int(np.searchsorted(self.o, o, side="right"))
        lo, hi = lo + int(np.searchsorted(self.b[lo:hi], b, side="left")), \
            lo + int(np.searchsorted(self.b[lo:hi], b, side="right"))
        return lo + int(np.searchsorted(self.r[lo:hi], r, side="right" if side == "right" else "left"))

    def match(self, o: np.ndarray, b: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each probe key: whether it is an event not found yet, and that event's index."""
        n = len(o)
        hit = np.zeros(n, dtype=bool)
        where = np.zeros(n, dtype=np.int64)
        if n == 0 or not self._segments:
            return hit, where
        bounds = row_ids.runs(o, b)
        if len(bounds) - 1 > 64:  # an unsorted probe: sort it so each (o, b) pair is one run
            sort = np.lexsort((b, o))
            h, w = self.match(o[sort], b[sort], r[sort])
            hit[sort], where[sort] = h, w
            return hit, where
        for start, end in zip(bounds[:-1], bounds[1:]):
            segment = self._segments.get((int(o[start]), int(b[start])))
            if segment is None:
                continue
            rows = self.r[segment[0]:segment[1]]
            at = np.searchsorted(rows, r[start:end])
            inside = at < len(rows)
            at = np.where(inside, at, 0)
            h = inside & (rows[at] == r[start:end])
            at = at + segment[0]
            h &= ~self.found[at]
            hit[start:end], where[start:end] = h, at
        return hit, where


def _write_id_range(s: FileSlice) -> tuple[int, int]:
    """The originalTransaction values a file's insert events can carry: a delta's own write
    ids, anything up to a base's write id, 0 for a pre-ACID file."""
    if s.dir_kind == "original":
        return 0, 0
    if s.dir_kind == "base":
        return 0, s.max_write_id
    return s.min_write_id, s.max_write_id
