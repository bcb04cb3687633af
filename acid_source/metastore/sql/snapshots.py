"""The SQL store's snapshots: which write ids and transactions a reader may see, now or as of a past commit,
and the table's commit history.

A snapshot is a pair (:class:`ValidWriteIdList` of the table, :class:`ValidTxnList`): the
first decides which base/delta directories are visible, the second which compaction outputs
(``_vN`` directories). Both are read in one database transaction so they describe one instant.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timezone

from sqlalchemy import and_, func, or_, select

from ...errors import InvalidArgumentError, VersionNotFoundError
from ...layout.writeids import LONG_MAX, ValidTxnList, ValidWriteIdList
from ..arguments import as_id
from ..constants import ABORTED, COMMITTED, OPEN, TXN_STATES
from ..records import Snapshot
from .base import StoreBase, chunks
from .schema import txn_components, txn_write_ids, txns


def _utc(epoch: float) -> str:
    try:
        return datetime.fromtimestamp(epoch, timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):  # beyond datetime's years 1..9999
        return f"{epoch!r} (epoch seconds)"


class SnapshotsMixin(StoreBase):
    """Read-only views of the transaction records."""

    # --- now -----------------------------------------------------------------------------
    def snapshot(self, table_id: int, *, for_txn: int | None = None) -> Snapshot:
        """``(valid_write_ids(table_id), valid_txns())`` read in one database transaction, so
        both describe the same instant. A query takes it once, before listing any files."""
        table_id = as_id(table_id, "table_id")
        for_txn = None if for_txn is None else as_id(for_txn, "for_txn")

        def op(conn):
            return self._write_ids_now(conn, table_id, for_txn), self._txns_now(conn, for_txn)

        return self._run(op, write=False, what=f"read a snapshot of table {table_id}")

    def valid_write_ids(self, table_id: int, *, for_txn: int | None = None) -> ValidWriteIdList:
        """The table's snapshot now: hwm = highest write id allocated, exceptions = write ids of
        open (except ``for_txn``'s own, valid for that txn) and aborted transactions."""
        table_id = as_id(table_id, "table_id")
        for_txn = None if for_txn is None else as_id(for_txn, "for_txn")
        return self._run(lambda conn: self._write_ids_now(conn, table_id, for_txn), write=False,
                         what=f"read the write ids of table {table_id}")

    def valid_txns(self, *, for_txn: int | None = None) -> ValidTxnList:
        """Hive's ValidReadTxnList now: hwm = highest txn id, exceptions = open (except
        ``for_txn``) and aborted transactions. Decides which ``_vN`` directories are visible."""
        for_txn = None if for_txn is None else as_id(for_txn, "for_txn")
        return self._run(lambda conn: self._txns_now(conn, for_txn), write=False, what="read the transaction list")

    def _write_ids_now(self, conn, table_id: int, for_txn: int | None) -> ValidWriteIdList:
        table = self._table_row(conn, table_id)
        if for_txn is not None:
            self._txn_row(conn, for_txn, lock=False)
        rows = conn.execute(
            select(txn_write_ids.c.write_id, txns.c.state, txns.c.txn_id)
            .join(txns, txns.c.txn_id == txn_write_ids.c.txn_id)
            .where(txn_write_ids.c.table_id == table_id, txns.c.state != COMMITTED)).all()
        open_ids = [w for w, state, t in rows if state == OPEN and t != for_txn]
        aborted = [w for w, state, _ in rows if state == ABORTED]
        return ValidWriteIdList(high_watermark=table.write_id_hwm, min_open=min(open_ids, default=LONG_MAX),
                                open_ids=open_ids, aborted_ids=aborted, table_name=table.name)

    def _txns_now(self, conn, for_txn: int | None) -> ValidTxnList:
        if for_txn is not None:
            self._txn_row(conn, for_txn, lock=False)
        hwm = self._current(conn, "txn_id")
        rows = conn.execute(select(txns.c.txn_id, txns.c.state).where(txns.c.state != COMMITTED)).all()
        open_ids = [t for t, state in rows if state == OPEN and t != for_txn]
        aborted = [t for t, state in rows if state == ABORTED]
        return ValidTxnList(high_watermark=hwm, min_open=min(open_ids, default=LONG_MAX),
                            open_ids=open_ids, aborted_ids=aborted)

    # --- time travel ---------------------------------------------------------------------
    def snapshot_as_of(self, table_id: int, write_id: int) -> Snapshot:
        """The snapshot right after the commit of the transaction holding ``write_id`` (commit
        sequence S): what a reader saw at that instant, so that directory selection gives the
        table exactly as it was then.

        Write ids: valid iff their transaction committed with a sequence <= S; hwm = the
        highest such write id, so every later write id is invisible; write ids up to the hwm
        not committed by S are exceptions, aborted if their transaction is aborted now (a
        crashed writer's files never show), else open (``min_open`` the lowest of those).
        Transactions: hwm = the highest transaction opened before S, exceptions = those not
        committed by S (aborted now -> aborted, else open), so compactions committed later are
        not visible.

        ``write_id`` 0 is the table before its first commit: no write id and no transaction
        valid (only pre-ACID original files, if any, remain visible). A write id that is not
        committed (open, aborted or never allocated) raises :class:`VersionNotFoundError`.
        """
        table_id = as_id(table_id, "table_id")
        write_id = as_id(write_id, "write_id")
        if write_id < 0:
            raise InvalidArgumentError("write_id", f"must be >= 0, got {write_id}")

        def op(conn):
            table = self._table_row(conn, table_id)
            if write_id == 0:
                return ValidWriteIdList(high_watermark=0, table_name=table.name), ValidTxnList(high_watermark=0)
            found = conn.execute(
                select(txns.c.txn_id, txns.c.state, txns.c.commit_seq)
                .join(txn_write_ids, txn_write_ids.c.txn_id == txns.c.txn_id)
                .where(txn_write_ids.c.table_id == table_id, txn_write_ids.c.write_id == write_id)).first()
            if found is None or found.state != COMMITTED:
                why = "was never allocated" if found is None else f"belongs to {found.state} transaction {found.txn_id}"
                raise VersionNotFoundError(
                    f"table {table.location} has no version {write_id}: the write id {why}",
                    table_id=table_id, write_id=write_id)
            return self._write_ids_at(conn, table, found.commit_seq), self._txns_at(conn, found.commit_seq)

        return self._run(op, write=False, what=f"read a past snapshot of table {table_id}")

    @staticmethod
    def _write_ids_at(conn, table, seq: int) -> ValidWriteIdList:
        of_table = txn_write_ids.c.table_id == table.table_id
        joined = txn_write_ids.join(txns, txns.c.txn_id == txn_write_ids.c.txn_id)
        hwm = conn.execute(select(func.max(txn_write_ids.c.write_id)).select_from(joined).where(
            of_table, txns.c.state == COMMITTED, txns.c.commit_seq <= seq)).scalar_one()
        rows = conn.execute(select(txn_write_ids.c.write_id, txns.c.state).select_from(joined).where(
            of_table, txn_write_ids.c.write_id <= hwm,
            or_(txns.c.state != COMMITTED, txns.c.commit_seq > seq))).all()
        open_ids = [w for w, state in rows if state != ABORTED]
        aborted = [w for w, state in rows if state == ABORTED]
        return ValidWriteIdList(high_watermark=hwm, min_open=min(open_ids, default=LONG_MAX),
                                open_ids=open_ids, aborted_ids=aborted, table_name=table.name)

    @staticmethod
    def _txns_at(conn, seq: int) -> ValidTxnList:
        hwm = conn.execute(select(func.max(txns.c.txn_id)).where(txns.c.start_seq < seq)).scalar_one()
        rows = conn.execute(select(txns.c.txn_id, txns.c.state).where(
            txns.c.txn_id <= hwm, or_(txns.c.state != COMMITTED, txns.c.commit_seq > seq))).all()
        open_ids = [t for t, state in rows if state != ABORTED]
        aborted = [t for t, state in rows if state == ABORTED]
        return ValidTxnList(high_watermark=hwm, min_open=min(open_ids, default=LONG_MAX),
                            open_ids=open_ids, aborted_ids=aborted)

    def write_id_as_of_time(self, table_id: int, timestamp: float) -> int:
        """The write id of the table's last commit (by commit order) whose commit time
        (``ended_at``, UTC epoch seconds) is <= ``timestamp``; the version to pass to
        :meth:`snapshot_as_of`. Commits without a write id (compactions) are no version.
        Before the first commit: :class:`VersionNotFoundError` naming the earliest commit time."""
        table_id = as_id(table_id, "table_id")
        if (isinstance(timestamp, bool) or not isinstance(timestamp, (int, float))
                or not math.isfinite(timestamp)):
            raise InvalidArgumentError("timestamp", f"expected UTC epoch seconds, got {timestamp!r}")

        def op(conn):
            table = self._table_row(conn, table_id)
            committed = (select(txn_write_ids.c.write_id)
                         .join(txns, txns.c.txn_id == txn_write_ids.c.txn_id)
                         .where(txn_write_ids.c.table_id == table_id, txns.c.state == COMMITTED))
            found = conn.execute(committed.where(txns.c.ended_at <= timestamp)
                                 .order_by(txns.c.commit_seq.desc()).limit(1)).scalar()
            if found is not None:
                return found
            earliest = conn.execute(committed.with_only_columns(func.min(txns.c.ended_at))).scalar()
            if earliest is None:
                raise VersionNotFoundError(f"table {table.location} has no committed version yet",
                                           table_id=table_id, timestamp=timestamp)
            raise VersionNotFoundError(
                f"table {table.location} has no version as of {_utc(timestamp)}: its earliest commit "
                f"was at {_utc(earliest)} ({earliest!r})",
                table_id=table_id, timestamp=timestamp, earliest_commit_time=earliest)

        return self._run(op, write=False, what=f"find the version of table {table_id} at a time")

    def latest_version(self, table_id: int, write_ids: ValidWriteIdList) -> int:
        """The write id of the table's last commit that holds one (0: none yet), from the
        history: compactions are history entries without a write id, they change files, not the
        table's version. (``write_ids`` is the snapshot read; this store needs no more.)"""
        for limit in (4, None):
            entries = self.history(table_id, limit=limit)
            for entry in entries:
                if entry["write_id"] is not None:
                    return entry["write_id"]
            if limit is not None and len(entries) < limit:
                break
        return 0

    # --- records -------------------------------------------------------------------------
    def write_ids_of(self, table_id: int, state: str) -> list[int]:
        """The table's write ids whose transaction is in ``state`` (e.g. aborted, for clean-up)."""
        table_id = as_id(table_id, "table_id")
        if state not in TXN_STATES:
            raise InvalidArgumentError("state", f"expected one of {', '.join(TXN_STATES)}, got {state!r}")

        def op(conn):
            self._table_row(conn, table_id)
            return list(conn.execute(
                select(txn_write_ids.c.write_id).join(txns, txns.c.txn_id == txn_write_ids.c.txn_id)
                .where(txn_write_ids.c.table_id == table_id, txns.c.state == state)
                .order_by(txn_write_ids.c.write_id)).scalars())

        return self._run(op, write=False, what=f"read the write ids of table {table_id}")

    def committed_writes(self, table_id: int, *, above: int = 0,
                         partitions: Iterable[str] | None = None) -> tuple[set[str], dict[str, list[int]]]:
        """What committed transactions put on storage, to prove a listing complete: every data
        object (``""`` or a partition path) any committed transaction of the table touched, and,
        per data object, the write ids above ``above`` of the committed transactions that wrote
        it (optionally only for ``partitions``). Compactions touch data objects but hold no
        write id: they count among the data objects only."""
        table_id = as_id(table_id, "table_id")
        above = as_id(above, "above") if above else 0
        wanted = None if partitions is None else sorted(set(partitions))

        def op(conn):
            self._table_row(conn, table_id)
            objects = set(conn.execute(select(txn_components.c.partition_path).where(
                txn_components.c.table_id == table_id).distinct()).scalars())
            joined = (txn_write_ids.join(txns, txns.c.txn_id == txn_write_ids.c.txn_id)
                      .join(txn_components, and_(txn_components.c.txn_id == txn_write_ids.c.txn_id,
                                                 txn_components.c.table_id == txn_write_ids.c.table_id)))
            stmt = (select(txn_write_ids.c.write_id, txn_components.c.partition_path).select_from(joined)
                    .where(txn_write_ids.c.table_id == table_id, txns.c.state == COMMITTED,
                           txn_write_ids.c.write_id > above))
            writes: dict[str, list[int]] = {}
            for chunk in ([None] if wanted is None else chunks(wanted)):
                query = stmt if chunk is None else stmt.where(txn_components.c.partition_path.in_(chunk))
                for w, p in conn.execute(query):
                    writes.setdefault(p, []).append(w)
            return objects, writes

        return self._run(op, write=False, what=f"read the committed writes of table {table_id}")

    def history(self, table_id: int, limit: int | None = None) -> list[dict]:
        """Committed transactions that wrote the table, newest first: ``txn_id``, ``write_id``
        (None for a commit without one, e.g. a compaction), ``operation``, ``touched`` (data
        objects), ``commit_time``, ``commit_seq``, ``user``, ``description``."""
        table_id = as_id(table_id, "table_id")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgumentError("limit", f"must be None or an integer >= 0, got {limit!r}")

        def op(conn):
            self._table_row(conn, table_id)
            wrote = or_(
                txns.c.txn_id.in_(select(txn_write_ids.c.txn_id).where(txn_write_ids.c.table_id == table_id)),
                txns.c.txn_id.in_(select(txn_components.c.txn_id).where(txn_components.c.table_id == table_id)),
            )
            stmt = (select(txns).where(txns.c.state == COMMITTED, wrote)
                    .order_by(txns.c.commit_seq.desc()))
            if limit is not None:
                stmt = stmt.limit(limit)
            rows = conn.execute(stmt).all()
            ids = [r.txn_id for r in rows]
            wids: dict[int, int] = {}
            touched: dict[int, list[str]] = {}
            for chunk in chunks(ids):
                wids.update(conn.execute(select(txn_write_ids.c.txn_id, txn_write_ids.c.write_id).where(
                    txn_write_ids.c.table_id == table_id, txn_write_ids.c.txn_id.in_(chunk))).all())
                for t, p in conn.execute(select(txn_components.c.txn_id, txn_components.c.partition_path).where(
                        txn_components.c.table_id == table_id, txn_components.c.txn_id.in_(chunk))):
                    touched.setdefault(t, []).append(p)
            return [{"txn_id": r.txn_id, "write_id": wids.get(r.txn_id), "operation": r.operation,
                         "touched": sorted(touched.get(r.txn_id, [])), "commit_time": r.ended_at,
                         "commit_seq": r.commit_seq, "user": r.user_name, "description": r.description}
                    for r in rows]

        return self._run(op, write=False, what=f"read the history of table {table_id}")
