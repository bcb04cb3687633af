"""One compaction task on an executor: the inputs of one (data object, writer id) in, the
compacted ``bucket_N`` file(s) out (HIVE_ACID_FORMAT.md 8.1). Executor side: imports nothing
driver-side (no store, no planner, no SQL parser); the driver's plan
(:mod:`.compaction_plan`) hands each task everything as a picklable :class:`CompactionTask`.

* **major**, full ACID: the rows the compactor's snapshot sees (read by the scan's own
  visibility rules, stripe by stripe), written as insert events under the ROW__IDs they have -
  originals' synthetic ones made permanent - into ``base_N_vT/bucket_N``. The inputs of one
  writer id, in getAcidState order, are already in ROW__ID order (base, then deltas by write id
  and statement); the writer verifies it and the task fails loudly if not. ACID v1 data (UPDATE
  events) is the exception: its winners are sorted in memory, as the ACID v1 merge already
  holds them there.
* **minor**, full ACID: every event of the deltas whose write id the snapshot sees, unchanged;
  deletes into ``delete_delta_MIN_MAX_vT/bucket_N``, the rest into ``delta_MIN_MAX_vT/bucket_N``,
  k-way merged into Hive's merge order (ROW__ID, then currentTransaction descending) with one
  stripe per input file in memory.
* insert-only tables: the rows of the inputs, concatenated into plain ORC ``NNNNNN_0`` files.
"""

from __future__ import annotations

import heapq
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyorc.errors

from ..errors import AcidError, CorruptFileError, InvalidArgumentError, StorageError
from ..layout import row_ids
from ..layout.names import ACID_VERSION_FILE, bucket_file_name
from ..layout.table_dirs import FULL_ACID, INSERT_ONLY
from ..layout.writeids import RangeResponse, ValidWriteIdList
from ..orc.files import EVENT_COLUMNS, OP_DELETE, OrcFile
from ..orc.writer import InsertFileWriter, KeyedEventWriter
from ..scan.reader import SplitReader, match_columns
from ..scan.splits import ROW_ID_COLUMN, ROW_ID_TYPE, BucketSplit, FileSlice, ReadContext
from ..scan.visibility import SplitVisibility, check_event_buckets, needs_collapse
from ..storage import Storage
from ..write.task import TaskResult

MINOR, MAJOR = "minor", "major"
KINDS = (MINOR, MAJOR)

# What the libraries underneath raise on a file that holds something unexpected.
_LIBRARY_ERRORS = (ArithmeticError, AttributeError, LookupError, TypeError, ValueError, RuntimeError,
                   pa.ArrowException, pyorc.errors.ORCError)


@dataclass(frozen=True)
class CompactionTask:
    """One (data object, writer id) of a compaction: its inputs, the snapshot that decides
    which events survive, and where the output goes. Picklable, no live clients."""

    kind: str  # "minor" | "major"
    table_kind: str  # "full" | "insert_only"
    storage: Storage
    partition: str  # "" (unpartitioned) or the partition path relative to the table root
    partition_path: str  # the data object's directory
    bucket_id: int  # the writer id: N of every input bucket_N and of the output
    inserts: tuple[FileSlice, ...]  # major: originals, base, insert deltas; minor: insert deltas
    deletes: tuple[FileSlice, ...]  # delete deltas
    write_ids: str  # the compactor's ValidWriteIdList, as Hive serializes it
    output_dir: str  # base_N_vT (major) or delta_MIN_MAX_vT (minor)
    delete_output_dir: str | None  # delete_delta_MIN_MAX_vT (minor, full ACID)
    data_schema: pa.Schema  # the table's non-partition columns
    compression: str = "zlib"
    stripe_size: int = 8 * 1024 * 1024

    @property
    def description(self) -> str:
        where = self.partition or self.storage.display()
        return f"{self.kind} compaction of {where}, bucket {self.bucket_id}"


def prepare_output_dir(storage: Storage, directory: str, table_kind: str) -> None:
    """Create an output directory; full-ACID ones get ``_orc_acid_version`` even when they stay
    empty, as Hive's compactor does (and so that the directory exists on object stores)."""
    storage.check_inside_root(directory)
    storage.make_dirs(directory)
    if table_kind == FULL_ACID:
        storage.write_if_absent(storage.join(directory, ACID_VERSION_FILE), b"2")


def run_tasks(tasks: list[CompactionTask]) -> list[TaskResult]:
    """The in-process runner: the tasks one after another."""
    return [run_task(t) for t in tasks]


def run_task(task: CompactionTask) -> TaskResult:
    """Write the output of one task; its local staging is gone afterwards whatever happens
    (directories on the table's storage are the transaction's to remove on abort)."""
    staging = tempfile.mkdtemp(prefix=f"acidorc-compact-{os.getpid()}-")
    current: list[str] = []  # the input being read, for error messages
    try:
        if task.table_kind == INSERT_ONLY:
            return _insert_only(task, staging)
        if task.kind == MAJOR:
            return _major(task, staging, current)
        return _minor(task, staging, current)
    except AcidError:
        raise
    except OSError as exc:
        raise StorageError(task.storage.display(task.partition_path), f"{task.description} failed: {exc}") from exc
    except _LIBRARY_ERRORS as exc:
        path = current[-1] if current else task.partition_path
        raise CorruptFileError(task.storage.display(path),
                               f"{task.description}: {type(exc).__name__}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# --- major, full ACID ----------------------------------------------------------------------------
def _major(task: CompactionTask, staging: str, current: list[str]) -> TaskResult:
    result = _result(task)
    schema = pa.schema(list(task.data_schema) + [pa.field(ROW_ID_COLUMN, ROW_ID_TYPE)])
    ctx = ReadContext(storage=task.storage, table_kind=FULL_ACID, output_schema=schema, partition_columns=(),
                      include_row_id=True)
    split = BucketSplit(task.partition_path, (), task.bucket_id, task.inserts, task.deletes, task.write_ids)
    reader = SplitReader(split, ctx)
    write_ids = ValidWriteIdList.parse(task.write_ids)
    result.add("rowsDroppedAborted", sum(_invalid_events(task.storage, s, write_ids, current) for s in task.inserts))
    batches: Iterator[pa.RecordBatch] = reader.batches()
    if any(s.dir_kind == "delta" and needs_collapse(OrcFile(task.storage, s.path, s.length)) for s in task.inserts):
        batches = iter(_sorted_by_row_id(list(batches)))  # ACID v1: the merge holds every delta event anyway
    names = [f.name for f in task.data_schema]
    out = _Output(task, staging, task.output_dir, unique_keys=True)
    try:
        for batch in batches:
            out.writer().write_rows(batch.column(ROW_ID_COLUMN), batch.select(names))
    except InvalidArgumentError as exc:
        where = reader.visibility.current_path or task.partition_path
        raise CorruptFileError(task.storage.display(where),
                               f"{task.description}: the inputs are not in ROW__ID order, as Hive requires of "
                               f"every ACID file: {exc}") from None
    out.finish(result)
    result.counts["rowsDroppedDeleted"] = reader.metrics.rows_hidden - result.counts["rowsDroppedAborted"]
    return result


def _sorted_by_row_id(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    if not batches:
        return []
    table = pa.Table.from_batches(batches).combine_chunks()
    rid = table.column(ROW_ID_COLUMN).chunk(0) if table.num_rows else None
    if rid is None:
        return []
    o, b, r = (np.asarray(rid.field(i).to_numpy(zero_copy_only=False)) for i in range(3))
    return table.take(pa.array(row_ids.order(o, b, r))).to_batches()


def _invalid_events(storage: Storage, s: FileSlice, write_ids: ValidWriteIdList, current: list[str]) -> int:
    """Events of an input file whose write id the compactor's snapshot does not see (only files
    whose directory name admits such events are read for it)."""
    if s.dir_kind == "base" and write_ids.is_valid_base(s.max_write_id):
        return 0
    if s.dir_kind in ("delta", "delete_delta") and write_ids.is_write_id_range_valid(
            s.min_write_id, s.max_write_id) is RangeResponse.ALL:
        return 0
    if s.dir_kind == "original":
        return 0
    current.append(s.path)
    f = OrcFile(storage, s.path, s.length)
    if not f.is_acid:  # a raw file loaded into a base or delta: all of its write id, or none
        return 0 if write_ids.is_write_id_valid(s.min_write_id) else f.num_rows
    invalid = 0
    for i in range(f.num_stripes):
        c = f.read_stripe(i, columns=["currentTransaction"]).column(0).to_numpy(zero_copy_only=False)
        invalid += int(np.count_nonzero(~write_ids.valid_mask(c)))
    return invalid


# --- minor, full ACID ----------------------------------------------------------------------------
def _minor(task: CompactionTask, staging: str, current: list[str]) -> TaskResult:
    result = _result(task)
    write_ids = ValidWriteIdList.parse(task.write_ids)
    row_type = pa.struct(list(task.data_schema))
    streams = [_events(task, s, write_ids, row_type, result, current) for s in task.inserts + task.deletes]
    inserts = _Output(task, staging, task.output_dir, unique_keys=False)
    deletes = _Output(task, staging, task.delete_output_dir, unique_keys=False) if task.delete_output_dir else None
    try:
        for batch in merge_by_row_id(streams):
            op = batch.column("operation").to_numpy(zero_copy_only=False)
            is_delete = op == OP_DELETE
            if deletes is not None and is_delete.any():
                deletes.writer().write_events(batch.filter(pa.array(is_delete)))
            if not is_delete.all():
                inserts.writer().write_events(batch.filter(pa.array(~is_delete)) if is_delete.any() else batch)
    except InvalidArgumentError as exc:
        raise CorruptFileError(task.storage.display(task.partition_path), f"{task.description}: {exc}") from None
    inserts.finish(result)
    if deletes is not None:
        deletes.finish(result)
    return result


def _events(task: CompactionTask, s: FileSlice, write_ids: ValidWriteIdList, row_type: pa.StructType,
            result: TaskResult, current: list[str]) -> Iterator[pa.RecordBatch]:
    """The events of one input file the snapshot sees, stripe by stripe, with the ``row``
    struct in the table's columns and types; each file must be in ROW__ID order."""
    current.append(s.path)
    f = OrcFile(task.storage, s.path, s.length)
    if f.num_rows == 0:
        return
    is_delete_file = s.dir_kind == "delete_delta"
    if not f.is_acid:
        if is_delete_file:
            raise CorruptFileError(task.storage.display(s.path), "a delete_delta file must hold ACID events")
        yield from _raw_file_events(task, s, row_type, result)
        return
    last: tuple[int, int, int] | None = None
    for i in range(f.num_stripes):
        current.append(s.path)
        batch = f.read_stripe(i, columns=EVENT_COLUMNS if is_delete_file else None)
        n = batch.num_rows
        if n == 0:
            continue
        o, b, r = (np.asarray(batch.column(c).to_numpy(zero_copy_only=False))
                   for c in ("originalTransaction", "bucket", "rowId"))
        check_event_buckets(task.storage.display(s.path), b, task.bucket_id)
        last = _check_sorted(task.storage.display(s.path), o, b, r, last)
        op = batch.column("operation").to_numpy(zero_copy_only=False)
        keep = write_ids.valid_mask(batch.column("currentTransaction").to_numpy(zero_copy_only=False))
        result.add("rowsDroppedAborted", n - np.count_nonzero(keep))
        if is_delete_file:
            keep &= op == OP_DELETE  # readers ignore anything else in a delete delta
            row = pa.nulls(n, row_type)
        else:
            row = _shape_row(batch.column("row"), row_type, task.storage.display(s.path))
        events = pa.RecordBatch.from_arrays(
            [batch.column(c) for c in EVENT_COLUMNS] + [row], names=list(EVENT_COLUMNS) + ["row"])
        if not keep.all():
            events = events.filter(pa.array(keep))
        if events.num_rows:
            yield events


def _raw_file_events(task: CompactionTask, s: FileSlice, row_type: pa.StructType,
                     result: TaskResult) -> Iterator[pa.RecordBatch]:
    """A plain file loaded into a delta directory (LOAD DATA): insert events under the
    synthetic ROW__IDs Hive gives its rows (HIVE_ACID_FORMAT.md 3.5), made permanent."""
    split = BucketSplit(task.partition_path, (), task.bucket_id, (s,), (), task.write_ids)
    visibility = SplitVisibility(split, task.storage, with_keys=True)
    for visible in visibility.rows():
        keys = visible.surviving_keys()
        assert keys is not None  # asked for with_keys
        o, b, r = keys
        n = len(o)
        children = match_columns(visible.names, visible.select(visible.columns), list(row_type), n,
                                 task.storage.display(s.path))
        yield pa.RecordBatch.from_arrays(
            [pa.array(np.zeros(n, dtype=np.int32)), pa.array(o, pa.int64()), pa.array(b, pa.int32()),
             pa.array(r, pa.int64()), pa.array(o, pa.int64()),
             pa.StructArray.from_arrays(children, fields=list(row_type))],
            names=list(EVENT_COLUMNS) + ["row"])
    result.add("rowsDroppedAborted", visibility.metrics.rows_hidden)


def _shape_row(row: pa.Array, row_type: pa.StructType, path: str) -> pa.Array:
    """An input file's ``row`` struct as the table's row type: fields matched by name
    (positionally for ``_colN`` files), converted as the reader converts them, missing ones
    null; null rows (delete events) stay null."""
    if row.type == row_type:
        return row
    names = [row.type.field(i).name for i in range(row.type.num_fields)]
    children = match_columns(names, row.flatten(), list(row_type), len(row), path)
    mask = row.is_null() if row.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(row_type), mask=mask)


def _check_sorted(shown_path: str, o, b, r, last):
    """Events of a file ascend by ROW__ID (HIVE_ACID_FORMAT.md 4.3); returns the last key.
    ``shown_path`` names the file in errors."""
    bad = row_ids.descent(o, b, r, strict=False, last=last)
    if bad is not None:
        raise CorruptFileError(shown_path, f"events are not in ROW__ID order: {bad[1]} follows {bad[0]}")
    return last if len(o) == 0 else (int(o[-1]), int(b[-1]), int(r[-1]))


def merge_by_row_id(streams: list[Iterator[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
    """K-way merge of event streams, each in ROW__ID order, into Hive's merge order: ROW__ID
    ascending, then currentTransaction descending; each stream keeps its own order. Vectorized: each
    round emits, from every stream's current batch, the events up to the smallest of the
    batches' last keys - which empties at least one batch - sorted together. Keys here include
    currentTransaction: a stream's next batch may repeat its last ROW__ID with a lower
    currentTransaction (an ACID v1 delta's insert and update of one row), which must come out
    before another stream's even lower one.

    Two heaps keep a round's cost proportional to the streams that take part in it, not to all
    of them: a minor compaction of hundreds of small deltas would otherwise be quadratic."""
    heads: list[_Head | None] = [_Head.first(it) for it in streams]
    by_last: list[tuple[_Key, int, int]] = []   # (last key, stream, load count)
    by_first: list[tuple[_Key, int]] = []       # (first key, stream)
    loads = [0] * len(heads)
    for i, head in enumerate(heads):
        if head is not None:
            heapq.heappush(by_last, (head.last, i, 0))
            heapq.heappush(by_first, (head.first_key, i))
    while by_last:
        bound, i, load = by_last[0]
        if heads[i] is None or loads[i] != load:
            heapq.heappop(by_last)   # a batch already emptied: its entry is stale
            continue
        due = []
        while by_first and by_first[0][0] <= bound:
            due.append(heapq.heappop(by_first)[1])
        taken = []
        for i in sorted(due):   # stream order, which the stable sort below keeps for equal keys
            head = heads[i]
            assert head is not None
            count = int(np.count_nonzero(head.up_to(bound)))
            taken.append(head.batch.slice(0, count))
            if count == head.batch.num_rows:
                head = heads[i] = _Head.first(streams[i])
                loads[i] += 1
                if head is not None:
                    heapq.heappush(by_last, (head.last, i, loads[i]))
            else:
                head = heads[i] = head.drop(count)
            if head is not None:
                heapq.heappush(by_first, (head.first_key, i))
        merged = taken[0] if len(taken) == 1 else pa.Table.from_batches(taken).combine_chunks().to_batches()[0]
        o, b, r, c = (np.asarray(merged.column(name).to_numpy(zero_copy_only=False)).astype(np.int64)
                      for name in ("originalTransaction", "bucket", "rowId", "currentTransaction"))
        order = row_ids.order(o, b, r, then=(-c,))
        if (np.diff(order) != 1).any():
            merged = merged.take(pa.array(order))
        yield merged


_Key = tuple[int, int, int, int]   # (originalTransaction, bucket, rowId, -currentTransaction)


@dataclass
class _Head:
    """The unmerged rest of a stream's current batch, with its keys."""

    batch: pa.RecordBatch
    o: np.ndarray
    b: np.ndarray
    r: np.ndarray
    c: np.ndarray
    last: _Key

    @property
    def first_key(self) -> _Key:
        return int(self.o[0]), int(self.b[0]), int(self.r[0]), -int(self.c[0])

    def up_to(self, key: _Key) -> np.ndarray:
        """Which events sort at or before ``key`` in the merge order."""
        o, b, r, c = key
        return (self.o < o) | ((self.o == o) & ((self.b < b) | ((self.b == b) & (
            (self.r < r) | ((self.r == r) & (-self.c <= c))))))

    @classmethod
    def first(cls, it: Iterator[pa.RecordBatch]) -> "_Head | None":
        for batch in it:
            if batch.num_rows:
                o, b, r, c = (np.asarray(batch.column(name).to_numpy(zero_copy_only=False)).astype(np.int64)
                              for name in ("originalTransaction", "bucket", "rowId", "currentTransaction"))
                return cls(batch, o, b, r, c, (int(o[-1]), int(b[-1]), int(r[-1]), -int(c[-1])))
        return None

    def drop(self, count: int) -> "_Head":
        if count == 0:
            return self
        return _Head(self.batch.slice(count), self.o[count:], self.b[count:], self.r[count:],
                     self.c[count:], self.last)


# --- insert-only tables --------------------------------------------------------------------------
def _insert_only(task: CompactionTask, staging: str) -> TaskResult:
    result = _result(task)
    ctx = ReadContext(storage=task.storage, table_kind=INSERT_ONLY, output_schema=task.data_schema,
                      partition_columns=(), include_row_id=False)
    split = BucketSplit(task.partition_path, (), task.bucket_id, task.inserts, (), task.write_ids)
    name = f"{max(0, task.bucket_id):06d}_0"
    local = os.path.join(staging, f"{uuid.uuid4().hex}.orc")
    writer = InsertFileWriter(local, task.data_schema, 0, 0, compression=task.compression,
                              stripe_size=task.stripe_size, plain=True)
    for batch in SplitReader(split, ctx).batches():
        writer.write(batch)
    info = writer.close()
    if info.rows:
        final = task.storage.join(task.output_dir, name)
        task.storage.make_dirs(task.output_dir)
        task.storage.put_file(local, final)
        result.files.append(info.placed(final, task.partition))
    return result


# --- shared --------------------------------------------------------------------------------------
def _result(task: CompactionTask) -> TaskResult:
    """A task's result, with the counts a compaction reports: ``inputFiles``, ``inputRows``
    (events or plain rows read), ``rowsDroppedDeleted`` (rows a major compaction dropped as
    deleted or superseded) and ``rowsDroppedAborted`` (events of write ids the compactor's
    snapshot does not see)."""
    slices = task.inserts + task.deletes
    rows = sum(OrcFile(task.storage, s.path, s.length).num_rows for s in slices)
    return TaskResult(task.bucket_id, counts={"inputFiles": len(slices), "inputRows": rows, "rowsDroppedDeleted": 0,
                                              "rowsDroppedAborted": 0})


class _Output:
    """One output file, staged locally and created on the first event (a task whose events
    are all dropped writes no file, as Hive's compactor)."""

    def __init__(self, task: CompactionTask, staging: str, directory: str | None, *, unique_keys: bool):
        assert directory is not None
        self.task = task
        self.directory = directory
        self.local = os.path.join(staging, f"{uuid.uuid4().hex}.orc")
        self.unique_keys = unique_keys
        self._writer: KeyedEventWriter | None = None
        self._done = False

    def writer(self) -> KeyedEventWriter:
        if self._writer is None:
            self._writer = KeyedEventWriter(self.local, self.task.data_schema, self.task.bucket_id,
                                            compression=self.task.compression, stripe_size=self.task.stripe_size,
                                            unique_keys=self.unique_keys)
        return self._writer

    def finish(self, result: TaskResult) -> None:
        if self._writer is None or self._done:
            return
        self._done = True
        info = self._writer.close()
        storage = self.task.storage
        final = storage.join(self.directory, bucket_file_name(self.task.bucket_id))
        prepare_output_dir(storage, self.directory, FULL_ACID)
        storage.put_file(self.local, final)
        result.files.append(info.placed(final, self.task.partition))
