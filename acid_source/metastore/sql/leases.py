"""The SQL store's reader leases (:mod:`..leases` says what a lease is) and the cleaner's view.

Expired leases are ignored by every query and purged by the calls that write.
:meth:`LeasesMixin.cleaner_view` gives the cleaner, in one database transaction, everything it
decides with: the latest snapshot, the live leases, and a *floor* snapshot that protects the
readers that hold no lease yet (see there).
"""

from __future__ import annotations

import uuid

from sqlalchemy import delete, exists, func, insert, or_, select, update

from ...layout.writeids import ValidTxnList, ValidWriteIdList
from ..arguments import as_id, as_seconds, lease_id_arg, lease_ttl
from ..constants import ABORTED, COMMITTED, OPEN
from ..leases import CleanerView, Lease, default_holder
from ..records import Snapshot
from .schema import read_leases, txn_write_ids, txns
from .snapshots import SnapshotsMixin

_HOLDER_MAX = 512


def _lease(row) -> Lease:
    return Lease(lease_id=row.lease_id, table_id=row.table_id, write_ids=ValidWriteIdList.parse(row.write_ids),
                 txns=ValidTxnList.parse(row.txns), holder=row.holder, acquired_at=row.acquired_at,
                 renewed_at=row.renewed_at, ttl_seconds=row.ttl_seconds)


class LeasesMixin(SnapshotsMixin):
    """Acquire, renew, release and list reader leases; the cleaner's view of a table."""

    # --- the lease table in stores created before leases existed ------------------------------
    def _run_leases(self, fn, *, write: bool, what: str):
        return self._run_with(read_leases, "lease", fn, write=write, what=what)

    # --- readers ------------------------------------------------------------------------------
    def acquire_lease(self, table_id: int, write_ids: ValidWriteIdList | str, txns: ValidTxnList | str,
                      ttl_seconds: float, holder: str = "") -> Lease:
        """A new lease on ``table_id`` for the snapshot (``write_ids``, ``txns``), live for
        ``ttl_seconds`` after now and after each renewal. Also purges expired leases."""
        table_id = self._table_id(table_id)
        wids = write_ids if isinstance(write_ids, ValidWriteIdList) else ValidWriteIdList.parse(write_ids)
        tlist = txns if isinstance(txns, ValidTxnList) else ValidTxnList.parse(txns)
        ttl = lease_ttl(ttl_seconds)
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
        lease_id = lease_id_arg(lease_id)

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
        lease_id = lease_id_arg(lease_id)
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
