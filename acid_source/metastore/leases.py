"""Reader leases, as every store keeps them: a read records its snapshot while it runs, so that
the cleaner keeps every directory that snapshot reads.

A lease names a table and one snapshot (the ValidWriteIdList and ValidTxnList the reader
selected its directories with: the cleaner runs ``get_acid_state`` with them to know which
directories the reader uses). It is live while its last renewal is at most ``ttl_seconds`` old
on the store's clock; a reader that died stops counting when its lease expires.
:class:`ReadLease` is the reader's side, over any store; :class:`CleanerView` is what a store's
``cleaner_view`` gives the cleaner.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass

from ..errors import MetastoreError
from ..layout.writeids import ValidTxnList, ValidWriteIdList
from .arguments import lease_ttl
from .records import Snapshot

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Lease:
    """One reader's lease on a table's snapshot (times are the store's clock)."""

    lease_id: str
    table_id: int
    write_ids: ValidWriteIdList
    txns: ValidTxnList
    holder: str
    acquired_at: float
    renewed_at: float
    ttl_seconds: float

    @property
    def expires_at(self) -> float:
        return self.renewed_at + self.ttl_seconds

    @property
    def snapshot(self) -> Snapshot:
        return self.write_ids, self.txns


@dataclass(frozen=True)
class CleanerView:
    """What the cleaner of one table decides with, read in one database transaction.

    ``latest``: the snapshot a new reader gets now. ``floor``: the oldest snapshot a reader
    without a lease may still be using - the table as it was ``retention_seconds`` ago, or when
    the oldest open transaction that may be reading it began, whichever is older (``latest``
    when neither is older). Directory selection is monotonic (a directory obsolete under a
    snapshot is obsolete under every later one), so a directory obsolete under ``floor`` is
    needed by no snapshot taken since. ``leases``: the live leases on the table.
    ``aborted_write_ids`` / ``aborted_txn_ids``: aborted at least ``retention_seconds`` ago
    (a just-aborted writer may still be removing its own files)."""

    now: float
    latest: Snapshot
    floor: Snapshot
    leases: tuple[Lease, ...]
    aborted_write_ids: frozenset[int]
    aborted_txn_ids: frozenset[int]


def default_holder(what: str = "") -> str:
    """Who holds a lease, for people reading the lease table: what, process and host."""
    who = f"pid {os.getpid()} on {socket.gethostname()}"
    return f"{what} ({who})" if what else who


class ReadLease:
    """The lease one read holds: acquired for its snapshot, renewed while it is consumed
    (:meth:`keep_alive`, cheap to call per batch: it reaches the store only when a third of
    the ttl has passed), released at the end. A store that cannot be reached while renewing or
    releasing does not fail the read: the lease just expires, and files the cleaner removed
    since then make the read fail with a typed error, never return wrong rows."""

    def __init__(self, store, table_id: int, snapshot: Snapshot, ttl_seconds: float, holder: str,
                 monotonic=time.monotonic):
        self._store = store
        self._table_id = table_id
        self._snapshot = snapshot
        self._ttl = lease_ttl(ttl_seconds)
        self._holder = holder
        self._monotonic = monotonic
        self.lease: Lease | None = None
        self._renewed = 0.0

    def acquire(self) -> "ReadLease":
        """Take the lease. A store that cannot record it (unreachable, read-only) does not fail
        the read: it goes on without one, protected only by the cleaner's retention, and a
        file removed under it gives SnapshotFilesRemovedError, never fewer rows."""
        write_ids, txn_list = self._snapshot
        try:
            self.lease = self._store.acquire_lease(self._table_id, write_ids, txn_list, self._ttl, self._holder)
        except MetastoreError as exc:
            log.warning("reading table %s without a read lease (the store did not record it: %s)",
                        self._table_id, exc)
            self.lease = None
        self._renewed = self._monotonic()
        return self

    def keep_alive(self) -> None:
        if self.lease is None or self._monotonic() - self._renewed < self._ttl / 3:
            return
        try:
            renewed = self._store.renew_lease(self.lease.lease_id)
            if renewed is None:  # expired while the consumer paused: take a new one, same snapshot
                self.acquire()
            else:
                self.lease = renewed
                self._renewed = self._monotonic()
        except MetastoreError as exc:
            log.warning("cannot renew read lease %s on table %s: %s", self.lease.lease_id, self._table_id, exc)

    def release(self) -> None:
        if self.lease is None:
            return
        lease, self.lease = self.lease, None
        try:
            self._store.release_lease(lease.lease_id)
        except MetastoreError as exc:
            log.warning("cannot release read lease %s (it expires by itself): %s", lease.lease_id, exc)


__all__ = ["CleanerView", "Lease", "ReadLease", "default_holder"]
