"""Reader leases: a read records its snapshot here while it runs, so that the cleaner keeps
every directory that snapshot reads.

A lease names a table and one snapshot (the ValidWriteIdList and ValidTxnList strings the
reader selected its directories with: the cleaner runs ``get_acid_state`` with them to know
which directories the reader uses). It is live while its last renewal is at most ``ttl_seconds``
old on the store's clock; a reader that died stops counting when its lease expires. Expired
leases are ignored by every query and purged by the calls that write.

:meth:`LeasesMixin.cleaner_view` gives the cleaner, in one database transaction, everything it
decides with: the latest snapshot, the live leases, and a *floor* snapshot that protects the
readers that hold no lease yet (see there).
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy import delete, exists, func, insert, or_, select, update

from ..errors import InvalidArgumentError, MetastoreError
from ..layout.writeids import ValidTxnList, ValidWriteIdList
from .base import as_id, as_seconds
from .constants import ABORTED, COMMITTED, OPEN
from .schema import read_leases, txn_write_ids, txns
from .snapshots import Snapshot, SnapshotsMixin

log = logging.getLogger(__name__)

_HOLDER_MAX = 512


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


def _lease(row) -> Lease:
    return Lease(lease_id=row.lease_id, table_id=row.table_id, write_ids=ValidWriteIdList.parse(row.write_ids),
                 txns=ValidTxnList.parse(row.txns), holder=row.holder, acquired_at=row.acquired_at,
                 renewed_at=row.renewed_at, ttl_seconds=row.ttl_seconds)


def _ttl(value) -> float:
    ttl = as_seconds(value, "ttl_seconds")
    if ttl <= 0:
        raise InvalidArgumentError("ttl_seconds", f"a lease lives a positive number of seconds, got {value!r}")
    return ttl


def _lease_id(value) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError("lease_id", f"expected a lease id string, got {value!r}")
    return value


class LeasesMixin(SnapshotsMixin):
    """Acquire, renew, release and list reader leases; the cleaner's view of a table."""

    # --- the lease table in stores created before leases existed ------------------------------
    def _run_leases(self, fn, *, write: bool, what: str):
        engine = self._get_engine()
        if getattr(self, "_leases_ready", None) is not engine:
            self._create_lease_table(engine)
            self._leases_ready = engine
        return self._run_on(engine, fn, write=write, what=what)

    def _create_lease_table(self, engine) -> None:
        def present(conn) -> bool:
            return sa.inspect(conn).has_table(read_leases.name)

        if self._run_on(engine, present, write=False, what="look for the lease table"):
            return
        try:
            self._run_on(engine, lambda conn: read_leases.create(conn, checkfirst=True), write=True,
                         what="create the lease table")
        except MetastoreError:
            # another process created it between our look and our CREATE (server databases)
            if not self._run_on(engine, present, write=False, what="look for the lease table"):
                raise

    # --- readers ------------------------------------------------------------------------------
    def acquire_lease(self, table_id: int, write_ids: ValidWriteIdList | str, txns: ValidTxnList | str,
                      ttl_seconds: float, holder: str = "") -> Lease:
        """A new lease on ``table_id`` for the snapshot (``write_ids``, ``txns``), live for
        ``ttl_seconds`` after now and after each renewal. Also purges expired leases."""
        table_id = self._table_id(table_id)
        wids = write_ids if isinstance(write_ids, ValidWriteIdList) else ValidWriteIdList.parse(write_ids)
        tlist = txns if isinstance(txns, ValidTxnList) else ValidTxnList.parse(txns)
        ttl = _ttl(ttl_seconds)
        holder = (str(holder) or default_holder())[:_HOLDER_MAX]
        lease_id = uuid.uuid4().hex

        def op(conn):
            self._table_row(conn, table_id)
            now = self.clock()
            conn.execute(delete(read_leases).where(read_leases.c.expires_at < now))
            if conn.execute(select(read_leases.c.lease_id).where(read_leases.c.lease_id == lease_id)).first() is None:
                conn.execute(insert(read_leases).values(
                    lease_id=lease_id, table_id=table_id, write_ids=str(wids), txns=str(tlist), holder=holder,
                    acquired_at=now, renewed_at=now, ttl_seconds=ttl, expires_at=now + ttl))
            return conn.execute(select(read_leases).where(read_leases.c.lease_id == lease_id)).one()

        return _lease(self._run_leases(op, write=True, what=f"acquire a read lease on table {table_id}"))

    def renew_lease(self, lease_id: str) -> Lease | None:
        """Extend a live lease by its ttl from now; None when it is unknown or already expired
        (an expired lease is not revived: the cleaner may have removed its files since, so the
        reader must find out whether they are still there)."""
        lease_id = _lease_id(lease_id)

        def op(conn):
            now = self.clock()
            row = conn.execute(select(read_leases).where(read_leases.c.lease_id == lease_id)).first()
            if row is None or row.expires_at < now:
                return None
            conn.execute(update(read_leases).where(read_leases.c.lease_id == lease_id)
                         .values(renewed_at=now, expires_at=now + row.ttl_seconds))
            return conn.execute(select(read_leases).where(read_leases.c.lease_id == lease_id)).one()

        row = self._run_leases(op, write=True, what=f"renew read lease {lease_id}")
        return None if row is None else _lease(row)

    def release_lease(self, lease_id: str) -> None:
        """End a lease (the read is over). Releasing an unknown or expired lease does nothing."""
        lease_id = _lease_id(lease_id)
        self._run_leases(lambda conn: conn.execute(delete(read_leases).where(read_leases.c.lease_id == lease_id)),
                         write=True, what=f"release read lease {lease_id}")

    def live_leases(self, table_id: int) -> list[Lease]:
        """The table's leases renewed within their ttl, oldest first (expired ones are ignored)."""
        table_id = self._table_id(table_id)

        def op(conn):
            self._table_row(conn, table_id)
            return conn.execute(select(read_leases).where(
                read_leases.c.table_id == table_id, read_leases.c.expires_at >= self.clock())
                .order_by(read_leases.c.acquired_at, read_leases.c.lease_id)).all()

        return [_lease(r) for r in self._run_leases(op, write=False, what=f"list the read leases of table {table_id}")]

    def purge_expired_leases(self) -> int:
        """Delete every expired lease; returns how many."""
        return self._run_leases(
            lambda conn: conn.execute(delete(read_leases).where(read_leases.c.expires_at < self.clock())).rowcount,
            write=True, what="purge expired read leases")

    # --- the cleaner ----------------------------------------------------------------------------
    def cleaner_view(self, table_id: int, *, retention_seconds: float, txn_timeout_seconds: float) -> CleanerView:
        """Everything :func:`~acid_source.maintenance.cleaner.vacuum` decides with (see
        :class:`CleanerView`), in one database transaction; purges expired leases.

        Open transactions count for the floor when they may be reading the table - they hold
        a write id on it, or none on any table yet (a compaction; a write before its first
        write id) - and heartbeated within ``txn_timeout_seconds`` (a dead driver's does not
        hold cleaning back for ever)."""
        table_id = self._table_id(table_id)
        retention = as_seconds(retention_seconds, "retention_seconds")
        txn_timeout = as_seconds(txn_timeout_seconds, "txn_timeout_seconds")

        def op(conn):
            table = self._table_row(conn, table_id)
            now = self.clock()
            conn.execute(delete(read_leases).where(read_leases.c.expires_at < now))
            latest = (self._write_ids_now(conn, table_id, None), self._txns_now(conn, None))
            leases = tuple(_lease(r) for r in conn.execute(select(read_leases).where(
                read_leases.c.table_id == table_id, read_leases.c.expires_at >= now)
                .order_by(read_leases.c.acquired_at, read_leases.c.lease_id)))
            seq = self._floor_seq(conn, table_id, now, retention, txn_timeout)
            floor = latest if seq is None or seq >= self._current(conn, "commit_seq") else \
                self._snapshot_at_seq(conn, table, seq)
            cutoff = now - retention
            aborted_wids = frozenset(conn.execute(
                select(txn_write_ids.c.write_id).join(txns, txns.c.txn_id == txn_write_ids.c.txn_id)
                .where(txn_write_ids.c.table_id == table_id, txns.c.state == ABORTED,
                       txns.c.ended_at <= cutoff)).scalars())
            aborted_txns = frozenset(conn.execute(
                select(txns.c.txn_id).where(txns.c.state == ABORTED, txns.c.ended_at <= cutoff)).scalars())
            return CleanerView(now, latest, floor, leases, aborted_wids, aborted_txns)

        return self._run_leases(op, write=True, what=f"read the cleaner's view of table {table_id}")

    @staticmethod
    def _floor_seq(conn, table_id: int, now: float, retention: float, txn_timeout: float) -> int | None:
        """The commit sequence number of the floor snapshot (None: nothing older than latest)."""
        seqs = []
        if retention > 0:  # the state right after the last commit at least `retention` old
            seqs.append(conn.execute(select(func.max(txns.c.commit_seq)).where(
                txns.c.state == COMMITTED, txns.c.ended_at <= now - retention)).scalar() or 0)
        on_table = exists().where(txn_write_ids.c.txn_id == txns.c.txn_id, txn_write_ids.c.table_id == table_id)
        on_any = exists().where(txn_write_ids.c.txn_id == txns.c.txn_id)
        oldest_open = conn.execute(select(func.min(txns.c.start_seq)).where(
            txns.c.state == OPEN, txns.c.last_heartbeat >= now - txn_timeout, or_(on_table, ~on_any))).scalar()
        if oldest_open is not None:
            seqs.append(oldest_open)
        return min(seqs) if seqs else None

    def _snapshot_at_seq(self, conn, table, seq: int) -> Snapshot:
        """The table's snapshot right after commit number ``seq`` (0: before any commit)."""
        committed = conn.execute(select(func.max(txn_write_ids.c.write_id))
                                 .join(txns, txns.c.txn_id == txn_write_ids.c.txn_id)
                                 .where(txn_write_ids.c.table_id == table.table_id, txns.c.state == COMMITTED,
                                        txns.c.commit_seq <= seq)).scalar()
        if committed is None:
            write_ids = ValidWriteIdList(high_watermark=0, table_name=table.name)
        else:
            write_ids = self._write_ids_at(conn, table, seq)
        started = conn.execute(select(func.max(txns.c.txn_id)).where(txns.c.start_seq < seq)).scalar()
        txn_list = ValidTxnList(high_watermark=0) if started is None else self._txns_at(conn, seq)
        return write_ids, txn_list

    @staticmethod
    def _table_id(value) -> int:
        return as_id(value, "table_id")


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
        self._ttl = _ttl(ttl_seconds)
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


__all__ = ["CleanerView", "Lease", "LeasesMixin", "ReadLease", "default_holder"]
