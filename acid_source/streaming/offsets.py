"""Streaming source offsets: snapshots of a table's write ids, not "the highest write id".

Write ids are handed out when transactions begin but commit in any order, so a source that
remembers only the highest committed write id skips a lower one that commits later. An offset
here is what a snapshot says about the write ids a stream has consumed:

* ``writeId``: every write id up to this one has been looked at;
* ``pending``: those among them that were still open then - they are delivered when they
  commit (an aborted one never is).

So the write ids a micro-batch delivers are exactly the committed ones among ``pending`` and
above ``writeId``, and a replayed batch (the same two offsets after a restart) delivers the
same ones: committed and aborted are final states. The store's aborted write ids need not be
in the offset, which stays small (the open ones only).

``initial`` marks the start of a query that first reads the table as it is (Delta's default):
its first micro-batch is a read of the whole snapshot its end offset describes, the changes
follow from there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from ..errors import InvalidOptionError
from ..layout.writeids import ValidWriteIdList

_VERSION = 1


@dataclass(frozen=True)
class StreamOffset:
    """A position in a table's commits (see the module docstring)."""

    write_id: int
    pending: tuple[int, ...] = ()
    initial: bool = False

    def to_dict(self) -> dict:
        out: dict = {"v": _VERSION, "writeId": self.write_id, "pending": list(self.pending)}
        if self.initial:
            out["initial"] = True
        return out

    @classmethod
    def from_dict(cls, value: dict) -> "StreamOffset":
        """An offset Spark kept in its checkpoint; a typed error for anything else."""
        try:
            if isinstance(value, str):
                value = json.loads(value)
            if value.get("v") != _VERSION:
                raise ValueError(f"offset version {value.get('v')!r}")
            write_id = value["writeId"]
            pending = tuple(value.get("pending", ()))
            if not isinstance(write_id, int) or not all(isinstance(w, int) and 0 < w <= write_id for w in pending):
                raise ValueError("write ids")
            return cls(write_id, tuple(sorted(set(pending))), bool(value.get("initial", False)))
        except (ValueError, KeyError, AttributeError, TypeError) as exc:
            raise InvalidOptionError(
                "checkpointLocation", f"the checkpoint holds an offset acidorc did not write ({value!r}: {exc}); "
                "start the query with a new checkpoint") from None

    def in_scope(self, write_id: int) -> bool:
        """Whether ``write_id`` is still to be delivered after this offset (if it commits)."""
        return write_id > self.write_id or write_id in self.pending


def _open_ids(snapshot: ValidWriteIdList, upto: int) -> list[int]:
    return [w for lo, hi in snapshot.open_ranges for w in range(lo, min(hi, upto) + 1)]


def _is_open(snapshot: ValidWriteIdList, write_id: int) -> bool:
    return (write_id <= snapshot.high_watermark and not snapshot.is_write_id_valid(write_id)
            and not snapshot.is_write_id_aborted(write_id))


def offset_of(snapshot: ValidWriteIdList, *, initial: bool = False) -> StreamOffset:
    """The offset right at ``snapshot``: everything committed in it delivered."""
    hwm = snapshot.high_watermark
    return StreamOffset(hwm, tuple(_open_ids(snapshot, hwm)), initial)


def committed_after(start: StreamOffset, snapshot: ValidWriteIdList) -> list[int]:
    """The write ids ``snapshot`` shows committed that ``start`` has not delivered, ascending."""
    found = [w for w in start.pending if snapshot.is_write_id_valid(w)]
    above = np.arange(start.write_id + 1, snapshot.high_watermark + 1, dtype=np.int64)
    found += above[snapshot.valid_mask(above)].tolist()
    return sorted(found)


def advance(start: StreamOffset, snapshot: ValidWriteIdList, *, max_write_ids: int | None = None,
            max_rows: int | None = None,
            rows_of: Callable[[Sequence[int]], Iterable[int]] | None = None) -> StreamOffset:
    """The end offset of the next micro-batch from ``start`` under ``snapshot``: all write ids
    committed since, or the lowest of them up to a limit (``max_write_ids``; ``max_rows`` with
    ``rows_of(ids)`` counting each one's rows - at least one write id per batch, as Spark's
    own sources take at least one file). ``start`` itself when nothing new committed."""
    candidates = committed_after(start, snapshot)
    if not candidates:
        return start
    take = len(candidates)
    if max_write_ids is not None:
        take = min(take, max(1, max_write_ids))
    if max_rows is not None and rows_of is not None:
        total, n = 0, 0
        for n, rows in enumerate(rows_of(candidates[:take]), start=1):
            total += rows
            if total >= max_rows:
                break
        take = max(1, min(take, n))
    # never below start: a pending write id taken by a limited batch must not bring back the
    # ones above it that were delivered already
    end = max(start.write_id, snapshot.high_watermark if take == len(candidates) else candidates[take - 1])
    taken = set(candidates[:take])
    scope = set(start.pending) | set(range(start.write_id + 1, end + 1))
    # still to deliver: the open ones, and committed ones a limit left for a later batch
    pending = tuple(sorted(w for w in scope if w <= end and w not in taken
                           and (_is_open(snapshot, w) or snapshot.is_write_id_valid(w))))
    return StreamOffset(end, pending)


def delivered_between(start: StreamOffset, end: StreamOffset,
                      is_committed: Callable[[list[int]], set[int]]) -> list[int]:
    """The write ids a micro-batch from ``start`` to ``end`` delivers: those ``start`` had not
    delivered, up to ``end.write_id``, not pending at ``end`` - and committed
    (``is_committed(ids)`` asks the store; committed and aborted are final, so a replay after
    a restart gets the same answer)."""
    scope = [w for w in start.pending if w <= end.write_id]
    scope += list(range(start.write_id + 1, end.write_id + 1))
    scope = sorted(set(w for w in scope if w not in set(end.pending)))
    if not scope:
        return []
    committed = is_committed(scope)
    return [w for w in scope if w in committed]
