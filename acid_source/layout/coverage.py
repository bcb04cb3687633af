"""Which write ids a set of directories holds: the test that proves a listing complete.

The transaction store records, for every committed write id, the data objects (partitions) it
wrote. A directory listing that is complete for a snapshot holds, in each of those data
objects, a directory the snapshot can see whose write-id range contains that write id: the
write's own delta or delete delta, a compacted delta spanning it, or a base at or above it.
A write id no such directory contains means the listing is stale or storage lost data; either
way a reader must not go on as if the write never happened. Names only: no file is opened.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate

from ..storage import FileEntry
from .acid_state import AcidDir
from .names import ParsedDir, is_hidden, parse_dir_name
from .writeids import RangeResponse, ValidTxnList, ValidWriteIdList


@dataclass(frozen=True)
class Holder:
    """A directory and the write ids it holds: ``lo..hi`` (a base holds everything up to its
    write id, so ``lo`` is 1)."""

    name: str
    lo: int
    hi: int


def holder_of(parsed: ParsedDir) -> Holder:
    if parsed.is_base:
        return Holder(parsed.name, 1, parsed.write_id)
    return Holder(parsed.name, parsed.min_write_id, parsed.max_write_id)


def usable_dirs(entries: Iterable[FileEntry], write_ids: ValidWriteIdList, txns: ValidTxnList) -> list[AcidDir]:
    """The ACID directories of one partition listing that a reader of the snapshot may use (the
    completeness proof and the change feed both ask).

    Compaction outputs of a transaction the snapshot does not see committed are excluded, and so
    are a base written by an overwrite that is not committed in it (a base with a ``_vT``
    suffix, the compactor's, is usable once ``T`` is; one without, whose write id is aborted or
    open, is not) and a delta whose write ids are all aborted."""
    usable = []
    for entry in entries:
        if not entry.is_dir or is_hidden(entry.name):
            continue
        parsed = parse_dir_name(entry.name)
        if parsed is None or not txns.is_txn_valid(parsed.visibility_txn_id):
            continue
        if parsed.is_base:
            if not parsed.visibility_txn_id and not write_ids.is_write_id_valid(parsed.write_id):
                continue
        elif write_ids.is_write_id_range_aborted(parsed.min_write_id, parsed.max_write_id) is RangeResponse.ALL:
            continue
        usable.append(AcidDir(entry.path, parsed))
    return usable


def visible_holders(entries: Iterable[FileEntry], write_ids: ValidWriteIdList, txns: ValidTxnList) -> list[Holder]:
    """The write-id ranges the usable directories of one partition listing hold."""
    return [holder_of(d.parsed) for d in usable_dirs(entries, write_ids, txns)]


def base_floor(holders: Iterable[Holder]) -> int:
    """The highest write id below which every write id is held by one directory (a base)."""
    return max((h.hi for h in holders if h.lo == 1), default=0)


def unheld(write_ids: Iterable[int], holders: Iterable[Holder]) -> list[int]:
    """The write ids, sorted, that no holder's range contains. A write id ``w`` is held when
    the furthest-reaching range starting at or below ``w`` reaches it."""
    ranges = sorted((h.lo, h.hi) for h in holders)
    starts = [lo for lo, _ in ranges]
    reach = list(accumulate((hi for _, hi in ranges), max))
    missing = []
    for w in sorted(set(write_ids)):
        i = bisect_right(starts, w)
        if i == 0 or reach[i - 1] < w:
            missing.append(w)
    return missing
