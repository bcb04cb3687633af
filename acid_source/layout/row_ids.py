"""ROW__ID order and key sets: the one place that knows how ACID events sort and compare.

A ROW__ID is (originalTransaction, bucket, rowId); events of a file ascend by it
(HIVE_ACID_FORMAT.md 4.3), a delete file holds each at most once, and readers, writers, DML
and compaction all sort, de-duplicate, check the order of, or look up keys. Arrays are numpy
(``o``: int64 original write ids, ``b``: int32 encoded bucket properties, ``r``: int64 row
ids); keys in results and messages are plain Python int tuples. Pure numpy: executor-safe.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: (originalTransaction, bucket, rowId)
Key = tuple[int, int, int]

#: below this many (o, b) runs a probe is looked up as it comes; above, it is sorted first
_MAX_DIRECT_RUNS = 64


def order(o: np.ndarray, b: np.ndarray, r: np.ndarray, then: Sequence[np.ndarray] = ()) -> np.ndarray:
    """The indices that sort events by ROW__ID ascending, then by each array of ``then`` in
    turn, ascending (negate one for descending, as Hive's currentTransaction is). Stable."""
    return np.lexsort(tuple(reversed(then)) + (r, b, o))


def same_as_previous(o: np.ndarray, b: np.ndarray, r: np.ndarray) -> np.ndarray:
    """For events in ROW__ID order: ``n - 1`` booleans, True where an event carries the same
    ROW__ID as the one before it."""
    return (o[1:] == o[:-1]) & (b[1:] == b[:-1]) & (r[1:] == r[:-1])


def first_of_each(o: np.ndarray, b: np.ndarray, r: np.ndarray) -> np.ndarray:
    """For events in ROW__ID order: ``n`` booleans, True for the first event of each ROW__ID."""
    return np.concatenate(([True], ~same_as_previous(o, b, r)))[:len(o)]


def first_duplicate(o: np.ndarray, b: np.ndarray, r: np.ndarray) -> Key | None:
    """For keys in ROW__ID order: the first key given twice, or None."""
    same = same_as_previous(o, b, r)
    if not same.any():
        return None
    i = int(np.flatnonzero(same)[0])
    return int(o[i]), int(b[i]), int(r[i])


def descent(o: np.ndarray, b: np.ndarray, r: np.ndarray, *, strict: bool,
            last: Key | None = None) -> tuple[Key, Key] | None:
    """The first pair (earlier, later) of neighbouring keys out of ROW__ID order, in the
    sequence ``last`` (the previous batch's last key, if any) followed by the keys; None when
    they ascend (``strict``: each key greater than the one before; else also equal)."""
    o, b, r = (np.asarray(a, dtype=np.int64) for a in (o, b, r))
    if last is not None:
        o, b, r = (np.concatenate(([k], a)) for k, a in zip(last, (o, b, r)))
    if len(o) < 2:
        return None
    up = (o[1:] > o[:-1]) | ((o[1:] == o[:-1]) & ((b[1:] > b[:-1]) | ((b[1:] == b[:-1]) & (r[1:] > r[:-1]))))
    if not strict:
        up |= same_as_previous(o, b, r)
    if up.all():
        return None
    i = int(np.flatnonzero(~up)[0])
    return (int(o[i]), int(b[i]), int(r[i])), (int(o[i + 1]), int(b[i + 1]), int(r[i + 1]))


def runs(o: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Start offsets of runs of equal (originalTransaction, bucket), plus the end."""
    if len(o) == 0:
        return np.zeros(1, dtype=np.int64)
    change = np.flatnonzero((o[1:] != o[:-1]) | (b[1:] != b[:-1])) + 1
    return np.concatenate(([0], change, [len(o)]))


class KeySet:
    """A set of ROW__IDs, sorted and de-duplicated for binary search (the same row may be
    deleted by several events)."""

    def __init__(self, o: np.ndarray, b: np.ndarray, r: np.ndarray):
        o = np.asarray(o, dtype=np.int64)
        b = np.asarray(b, dtype=np.int32)
        r = np.asarray(r, dtype=np.int64)
        sort = order(o, b, r)
        o, b, r = o[sort], b[sort], r[sort]
        if len(o) > 1:
            keep = first_of_each(o, b, r)
            o, b, r = o[keep], b[keep], r[keep]
        self._rows = r
        self._segments: dict[tuple[int, int], tuple[int, int]] = {}
        bounds = runs(o, b)
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
        bounds = runs(o, b)
        if len(bounds) - 1 <= _MAX_DIRECT_RUNS:
            self._mark(o, b, r, bounds, hit)
            return hit
        # many short runs (an unsorted probe): sort by (o, b) so each pair is one run
        sort = np.lexsort((b, o))
        so, sb, sr = o[sort], b[sort], r[sort]
        sorted_hit = np.zeros(n, dtype=bool)
        self._mark(so, sb, sr, runs(so, sb), sorted_hit)
        hit[sort] = sorted_hit
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
