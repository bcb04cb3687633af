"""What the stores hand out and take besides tables (:mod:`.tableinfo`) and leases
(:mod:`.leases`): a snapshot, the history a table is adopted with, and a row-level commit's
request to check again."""

from __future__ import annotations

from dataclasses import dataclass

from ..layout.writeids import ValidTxnList, ValidWriteIdList

#: A reader's snapshot: the table's write ids (which base/delta directories are visible) and the
#: transaction list (which compaction outputs, ``_vN`` directories, are), read at one instant.
Snapshot = tuple[ValidWriteIdList, ValidTxnList]


@dataclass(frozen=True)
class AdoptedHistory:
    """The history found on storage that ``create_table(..., adopt=True)`` registers: the
    highest write id any directory holds, the transaction ids of the compaction outputs
    (``_vT``), and the data objects holding that highest write id.

    The table starts with that write id as its high-water mark and one committed ``adopt``
    transaction holding it, so every write id on storage reads as committed (as a table the
    store does not know is read), the history shows one entry, ``versionAsOf`` that write id
    is the table as adopted, and new writes get higher ids. Transaction ids jump above every
    ``_vT`` so that those outputs are visible too. Write ids below it have no record of their
    own: they are no versions to travel to."""

    write_id: int
    txn_ids: tuple[int, ...] = ()
    partitions: tuple[str, ...] = ()
    directories: tuple[tuple[str, int], ...] = ()  # (directory shown, its _vT) for messages


@dataclass(frozen=True)
class Recheck:
    """A row-level commit refused, not aborted: DML commits on its data objects arrived after
    the commit sequence number its rows were checked through. Check ``commits`` (as
    ``commits_since`` lists them), then commit again with ``checked_through=through_seq``."""

    through_seq: int
    commits: list[dict]
