"""Row-level write conflicts for UPDATE / DELETE / MERGE (``conflictDetection="row"``), driver side.

Hive's rule (the default, "object") fails a DML whenever its data object (an unpartitioned
table or one partition) was changed by a commit after it started. Every row a DML changes gets a
delete event keyed by its ROW__ID (originalTransaction, bucket, rowId), so we can tell exactly
whether two DMLs changed a common row: intersect their delete events. In row mode a DML fails
only when a commit after its snapshot

* deleted or updated one of the rows it deletes or updates (a common delete event key in a
  common partition), or
* overwrote one of its data objects (``insert_overwrite``: the rows it changed are gone, and
  its new rows would land on top of the overwrite).

Inserts and compactions never make it fail (a compaction keeps ROW__IDs).

The protocol, race-free against DMLs that commit while we check:

1. ask the store for the commits on our data objects since our transaction opened and the
   commit sequence number S they go up to (``commits_since``); commits our snapshot already
   saw (their write id is valid in it) are no concern;
2. read our own delete events (our ``delete_delta_W_W_S`` directories) and those of each
   concurrent DML commit in the shared partitions (every delete delta whose write-id range
   covers its write id, events whose currentTransaction is that write id: a minor compaction
   may have merged its directory already), and intersect the keys (numpy, sorted search);
3. commit with ``checked_through=S`` (:meth:`Transaction.commit`): the store, inside the
   commit's database transaction, aborts on an overwrite after S (or on any overwrite since we
   started that holds a higher write id: its base would hide our deltas) and refuses (without
   aborting; the transaction stays open) when DML commits on our objects arrived after S; then
   only those are checked, and we commit again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..errors import ConflictError, CorruptFileError
from ..faults import pause_point
from ..layout import row_ids
from ..layout.names import ParsedDir, parse_dir_name
from ..layout.row_ids import Key, KeySet
from ..layout.table_dirs import data_files
from ..layout.writeids import ValidTxnList
from ..metastore.constants import DML_OPERATIONS, REPLACES_ROWS
from ..orc.files import EVENT_COLUMNS, OP_DELETE, OrcFile
from ..scan.resolved import ResolvedTable
from ..storage import Storage
from ..txn import Transaction


@dataclass
class _Keys:
    """Delete event keys of one writer in one partition, sorted, with their range."""

    o: np.ndarray
    b: np.ndarray
    r: np.ndarray

    @classmethod
    def of(cls, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> "_Keys":
        if not parts:
            z = np.zeros(0, dtype=np.int64)
            return cls(z, z, z)
        o, b, r = (np.concatenate([p[i] for p in parts]).astype(np.int64, copy=False) for i in range(3))
        order = row_ids.order(o, b, r)
        return cls(o[order], b[order], r[order])

    def __len__(self) -> int:
        return len(self.o)

    @property
    def bounds(self) -> tuple[Key, Key]:
        return (int(self.o[0]), int(self.b[0]), int(self.r[0])), (int(self.o[-1]), int(self.b[-1]), int(self.r[-1]))


class _Conflict(Exception):
    """A conflict found while checking; becomes a :class:`ConflictError` once aborted."""

    def __init__(self, reason: str, commit: dict, row_id: Key | None = None):
        self.reason, self.commit, self.row_id = reason, commit, row_id
        super().__init__(reason)


def commit_with_row_conflicts(txn: Transaction, operation: str, table_id: int, resolved: ResolvedTable,
                              write_id: int, touched: list[str]) -> None:
    """Commit the DML in ``txn`` (write id ``write_id``, files in the partitions ``touched``)
    under the row-level rule. On a conflict the transaction is aborted, its files removed, and
    :class:`ConflictError` raised naming the data object, the winning commit and the row. Runs
    inside the DML's ``with Transaction`` block, which aborts on any other error."""
    checker = _RowChecker(txn, operation, resolved, write_id)
    start_seq = txn.metastore.txn_info(txn.txn_id)["start_seq"]
    through, commits = txn.metastore.commits_since(table_id, touched, start_seq)
    while True:
        try:
            checker.check(commits)
            pause_point("dml.row_conflicts.before_store")  # tests commit another DML here
        except _Conflict as found:
            txn.abort(found.reason)
            raise checker.error(found) from None
        recheck = txn.commit(operation, {table_id: touched}, checked_through=through)
        if recheck is None:
            return
        through, commits = recheck.through_seq, recheck.commits


class _RowChecker:
    """Compares our delete events with those of concurrent commits, partition by partition."""

    def __init__(self, txn: Transaction, operation: str, resolved: ResolvedTable, write_id: int):
        self.txn = txn
        self.operation = operation
        self.resolved = resolved
        self.storage: Storage = resolved.storage
        self.write_id = write_id
        self._ours: dict[str, tuple[_Keys, KeySet]] = {}

    def _label(self, part: str) -> str:
        root = self.resolved.location.rstrip("/")
        return f"{root}/{part}" if part else root

    def _dir(self, part: str) -> str:
        return self.storage.join(self.storage.root, part) if part else self.storage.root

    # --- the check -----------------------------------------------------------------------------
    def check(self, commits: list[dict]) -> None:
        """Raise :class:`_Conflict` for the first commit that conflicts with ours."""
        snapshot = self.resolved.write_ids
        dml: dict[str, list[dict]] = defaultdict(list)
        for c in commits:
            if c["write_id"] is not None and snapshot.is_write_id_valid(c["write_id"]):
                continue  # our snapshot saw it: we read its result
            if c["operation"] in REPLACES_ROWS:
                raise _Conflict(f"write conflict on {self._label(c['partition'])} committed by "
                                f"{_winner(c)}: it replaced the rows this {self.operation} changed", c)
            if c["operation"] in DML_OPERATIONS:
                dml[c["partition"]].append(c)
        if not dml:
            return
        txns = self.txn.metastore.valid_txns()
        for part in sorted(dml):
            keys, ours = self._our_keys(part)
            if not len(keys):
                continue  # we changed no row here (only inserted)
            listing = self._listing(part, txns)
            for c in dml[part]:
                self._compare(part, listing, c, keys, ours)

    def _compare(self, part: str, listing: list[tuple[str, ParsedDir]], commit: dict, keys: _Keys,
                 ours: KeySet) -> None:
        w = commit["write_id"]
        covering = [(path, d) for path, d in listing if d.min_write_id <= w <= d.max_write_id and not d.is_base]
        if not covering:
            raise _Conflict(f"write conflict on {self._label(part)} committed by {_winner(commit)}: its events are "
                            "no longer on storage (compacted and cleaned), so its rows cannot be compared", commit)
        bounds = keys.bounds
        for path, d in covering:
            if not d.is_delete:
                continue
            for o, b, r in _delete_events(self.storage, path, w, bounds):
                hit = ours.contains(o, b, r)
                if hit.any():
                    i = int(np.flatnonzero(hit)[0])
                    row = (int(o[i]), int(b[i]), int(r[i]))
                    raise _Conflict(
                        f"write conflict on {self._label(part)} committed by {_winner(commit)}: the row "
                        f"(writeId {row[0]}, bucketId {row[1]}, rowId {row[2]}) was deleted or updated by both",
                        commit, row)

    def error(self, found: _Conflict) -> ConflictError:
        c = found.commit
        return ConflictError(
            f"Aborting [txnid:{self.txn.txn_id}] due to a {found.reason}; the {self.operation} must be retried "
            "on a fresh snapshot", txn_id=self.txn.txn_id, committed_txn_id=c["txn_id"],
            committed_write_id=c["write_id"], location=self.resolved.location, partition=c["partition"],
            row_id=found.row_id)

    # --- reading -------------------------------------------------------------------------------
    def _listing(self, part: str, txns: ValidTxnList) -> list[tuple[str, ParsedDir]]:
        """The ACID directories of a partition now, without compaction outputs whose
        transaction is not committed (the directories they replace are still there)."""
        directory = self._dir(part)
        if not self.storage.exists(directory):
            return []
        found = []
        for e in self.storage.list_dir(directory):
            parsed = parse_dir_name(e.name) if e.is_dir else None
            if parsed is not None and (not parsed.visibility_txn_id or txns.is_txn_valid(parsed.visibility_txn_id)):
                found.append((e.path, parsed))
        return found

    def _our_keys(self, part: str) -> tuple[_Keys, KeySet]:
        if part not in self._ours:
            w = self.write_id
            parts = []
            for path, d in self._listing(part, ValidTxnList()):
                if d.is_delete and d.min_write_id == w and d.max_write_id == w and not d.visibility_txn_id:
                    parts += list(_delete_events(self.storage, path, w))
            keys = _Keys.of(parts)
            self._ours[part] = keys, KeySet(keys.o, keys.b, keys.r)
        return self._ours[part]


def _winner(commit: dict) -> str:
    w = commit["write_id"]
    return f"[txnid:{commit['txn_id']}] ({commit['operation']}" + (f", write id {w})" if w is not None else ")")


def _delete_events(storage: Storage, directory: str, write_id: int,
                   bounds: tuple[Key, Key] | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Keys of the delete events of ``write_id`` in a delete delta, stripe by stripe (stripes
    whose key range, by the file's ``hive.acid.key.index``, misses ``bounds`` are skipped)."""
    for entry in data_files(storage, directory):
        f = OrcFile(storage, entry.path, None)
        if f.num_rows == 0:
            continue
        if not f.is_acid:
            raise CorruptFileError(storage.display(entry.path), "a delete_delta file must hold ACID events")
        index = f.key_index if bounds is not None else None
        for i in range(f.num_stripes):
            if index is not None and bounds is not None and not (
                    index[i] >= bounds[0] and (i == 0 or index[i - 1] < bounds[1])):
                continue  # stripe i holds the keys in (index[i-1], index[i]]
            batch = f.read_stripe(i, columns=EVENT_COLUMNS)
            if batch.num_rows == 0:
                continue
            cols = {name: batch.column(name).to_numpy(zero_copy_only=False) for name in EVENT_COLUMNS}
            keep = (cols["operation"] == OP_DELETE) & (cols["currentTransaction"] == write_id)
            if keep.any():
                yield (cols["originalTransaction"][keep].astype(np.int64, copy=False),
                       cols["bucket"][keep].astype(np.int64, copy=False),
                       cols["rowId"][keep].astype(np.int64, copy=False))
