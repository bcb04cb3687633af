"""Vectorized visibility: which events of a bucket a snapshot sees.

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
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .layout.writeids import ValidWriteIdList

# Above this many (originalTransaction, bucket) runs in a probe, sort the probe first.
_MAX_DIRECT_RUNS = 64


def valid_write_id_mask(write_ids: ValidWriteIdList, current: np.ndarray) -> np.ndarray:
    """``write_ids.is_write_id_valid`` over an int64 array."""
    mask = current <= write_ids.high_watermark
    exceptions = write_ids.open_ids + write_ids.aborted_ids
    if exceptions:
        mask &= ~np.isin(current, np.asarray(exceptions, dtype=np.int64))
    return mask


def _runs(o: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Start offsets of runs of equal (o, b), plus the end."""
    if len(o) == 0:
        return np.zeros(1, dtype=np.int64)
    change = np.flatnonzero((o[1:] != o[:-1]) | (b[1:] != b[:-1])) + 1
    return np.concatenate(([0], change, [len(o)]))


class KeySet:
    """A set of ROW__IDs (originalTransaction, bucket, rowId), sorted for binary search."""

    def __init__(self, o: np.ndarray, b: np.ndarray, r: np.ndarray):
        o = np.asarray(o, dtype=np.int64)
        b = np.asarray(b, dtype=np.int32)
        r = np.asarray(r, dtype=np.int64)
        order = np.lexsort((r, b, o))
        o, b, r = o[order], b[order], r[order]
        if len(o) > 1:  # de-duplicate (the same row may be deleted by several events)
            keep = np.concatenate(([True], (o[1:] != o[:-1]) | (b[1:] != b[:-1]) | (r[1:] != r[:-1])))
            o, b, r = o[keep], b[keep], r[keep]
        self._rows = r
        self._segments: dict[tuple[int, int], tuple[int, int]] = {}
        bounds = _runs(o, b)
        for start, end in zip(bounds[:-1], bounds[1:]):
            if end > start:
                self._segments[(int(o[start]), int(b[start]))] = (int(start), int(end))

    def __len__(self) -> int:
        return len(self._rows)

    @classmethod
    def empty(cls) -> "KeySet":
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z.astype(np.int32), z)

    @classmethod
    def concat(cls, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> "KeySet":
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([p[i] for p in parts]) for i in range(3)))

    def contains(self, o: np.ndarray, b: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Boolean mask: which probe keys are in the set."""
        n = len(o)
        hit = np.zeros(n, dtype=bool)
        if n == 0 or not self._segments:
            return hit
        bounds = _runs(o, b)
        if len(bounds) - 1 <= _MAX_DIRECT_RUNS:
            self._mark(o, b, r, bounds, hit)
            return hit
        # many short runs (an unsorted probe): sort by (o, b) so each pair is one run
        order = np.lexsort((b, o))
        so, sb, sr = o[order], b[order], r[order]
        sorted_hit = np.zeros(n, dtype=bool)
        self._mark(so, sb, sr, _runs(so, sb), sorted_hit)
        hit[order] = sorted_hit
        return hit

    def _mark(self, o, b, r, bounds, hit) -> None:
        for start, end in zip(bounds[:-1], bounds[1:]):
            seg = self._segments.get((int(o[start]), int(b[start])))
            if seg is None:
                continue
            rows = self._rows[seg[0]:seg[1]]
            probe = r[start:end]
            first, last = int(probe[0]), int(probe[-1])
            if last - first == len(probe) - 1 and np.all(np.diff(probe) == 1):
                # the usual case: consecutive row ids; mark the deleted ones directly
                lo = np.searchsorted(rows, first, side="left")
                hi = np.searchsorted(rows, last, side="right")
                hit[start + (rows[lo:hi] - first)] = True
                continue
            idx = np.searchsorted(rows, probe)
            idx[idx >= len(rows)] = len(rows) - 1
            hit[start:end] = rows[idx] == probe


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
    order = np.lexsort((-seq, -stmt, -is_delete, -c, r, b, o))
    o, b, r = o[order], b[order], r[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (o[1:] != o[:-1]) | (b[1:] != b[:-1]) | (r[1:] != r[:-1])
    return events.take(pa.array(order[first]))


def key_arrays(batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(originalTransaction, bucket, rowId) of an ACID batch or table as numpy arrays."""
    def col(name):
        c = batch.column(name)
        if isinstance(c, pa.ChunkedArray):
            c = c.combine_chunks()
        return c.to_numpy(zero_copy_only=False)

    return col("originalTransaction"), col("bucket"), col("rowId")
