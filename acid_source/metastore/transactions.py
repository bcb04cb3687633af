"""Transactions: open, write ids, heartbeat, commit (with the conflict rules), abort, expiry.

Every call here is safe to run again after a COMMIT whose answer was lost (``_run`` re-runs a
call after a lost connection or a lock error): a re-run recognises the work its earlier
attempt finished and reports that instead of failing, so callers never mistake a committed
transaction for a failed one and delete its files.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping

from sqlalchemy import insert, select, update

from ..errors import ConflictError, InvalidArgumentError
from .base import ABORTED, COMMITTED, OPEN, StoreBase, as_id, as_seconds, chunks
from .schema import tables, txn_components, txn_write_ids, txns

#: What a commit did; the conflict rules depend on it (DESIGN.md, "Concurrency rules").
OPERATIONS = ("insert", "insert_overwrite", "update", "delete", "merge", "compaction")
#: Operations that fail when a data object they touched changed after they started.
CONFLICT_CHECKED = frozenset({"update", "delete", "merge", "compaction"})

_CONFLICT_REASON = "write conflict on "


def _object_label(location: str, partition: str) -> str:
    return f"{location}/{partition}" if partition else location


def _touched_objects(touched: Mapping[int, Iterable[str]] | None) -> dict[int, list[str]]:
    if touched is None:
        return {}
    if not isinstance(touched, Mapping):
        raise InvalidArgumentError("touched", f"expected a dict table_id -> partition paths, got {touched!r}")
    result: dict[int, list[str]] = {}
    for table_id, parts in touched.items():
        tid = as_id(table_id, "touched")
        if isinstance(parts, (str, bytes)) or not isinstance(parts, Iterable):
            raise InvalidArgumentError("touched", f"table {tid}: expected a list of partition paths "
                                       f"('' for an unpartitioned table), got {parts!r}")
        seen: dict[str, None] = {}
        for p in parts:
            if not isinstance(p, str):
                raise InvalidArgumentError("touched", f"table {tid}: partition paths are strings, got {p!r}")
            seen[p.strip("/")] = None
        result.setdefault(tid, [])
        result[tid] = list(dict.fromkeys(result[tid] + list(seen)))
    return result


class TransactionsMixin(StoreBase):
    """The life of a transaction: open -> (write ids, heartbeats) -> committed or aborted."""

    def open_transaction(self, *, user: str = "", description: str = "") -> int:
        """A new open transaction; ids increase monotonically and are never reused."""
        values = {"state": OPEN, "user_name": str(user)[:255], "description": str(description),
                      "host": socket.gethostname()[:255], "pid": os.getpid(), "started_at": self.clock()}
        opened: list[int] = []  # the id an earlier attempt of this call inserted

        def op(conn):
            if opened:
                row = conn.execute(select(txns).where(txns.c.txn_id == opened[0])).first()
                if row is not None and all(getattr(row, k) == v for k, v in values.items()):
                    return opened[0]  # our COMMIT went through but its answer was lost
            txn_id = self._next(conn, "txn_id")
            opened[:] = [txn_id]
            conn.execute(insert(txns).values(txn_id=txn_id, last_heartbeat=values["started_at"],
                                             start_seq=self._current(conn, "commit_seq"), **values))
            return txn_id

        return self._run(op, write=True, what="open a transaction")

    def allocate_write_id(self, txn_id: int, table_id: int) -> int:
        """The write id of ``txn_id`` on the table: the next one (1, 2, 3, ...) on the first
        call, the same one on later calls. Counts as a heartbeat."""
        txn_id = as_id(txn_id, "txn_id")
        table_id = as_id(table_id, "table_id")

        def op(conn):
            row = self._txn_row(conn, txn_id)
            self._require_open(row, f"allocate a write id on table {table_id} for")
            existing = conn.execute(select(txn_write_ids.c.write_id).where(
                txn_write_ids.c.txn_id == txn_id, txn_write_ids.c.table_id == table_id)).scalar()
            if existing is None:
                self._table_row(conn, table_id, lock=True)
                conn.execute(update(tables).where(tables.c.table_id == table_id)
                             .values(write_id_hwm=tables.c.write_id_hwm + 1))
                existing = conn.execute(select(tables.c.write_id_hwm)
                                        .where(tables.c.table_id == table_id)).scalar_one()
                conn.execute(insert(txn_write_ids).values(txn_id=txn_id, table_id=table_id, write_id=existing))
            conn.execute(update(txns).where(txns.c.txn_id == txn_id).values(last_heartbeat=self.clock()))
            return existing

        return self._run(op, write=True, what=f"allocate a write id for transaction {txn_id}")

    def heartbeat(self, txn_id: int) -> None:
        """Mark the transaction alive; :class:`TransactionStateError` unless it is open."""
        txn_id = as_id(txn_id, "txn_id")

        def op(conn):
            self._require_open(self._txn_row(conn, txn_id), "heartbeat")
            conn.execute(update(txns).where(txns.c.txn_id == txn_id).values(last_heartbeat=self.clock()))

        self._run(op, write=True, what=f"heartbeat transaction {txn_id}")

    def commit(self, txn_id: int, *, touched: Mapping[int, Iterable[str]] | None = None,
               operation: str = "insert") -> None:
        """Commit: every write id of the transaction becomes valid, atomically.

        ``touched`` maps table id -> data objects written ("" for an unpartitioned table, else a
        partition path such as ``ds=2024-01-01``). For ``update``, ``delete``, ``merge`` and
        ``compaction``, a data object changed by a commit after this transaction started is a
        write conflict: the transaction is aborted and :class:`ConflictError` raised. Inserts
        and overwrites never fail for that reason.

        When the database reports an error after the COMMIT took effect (a lost connection, a
        lock error), the call is run again and finds the transaction committed with this
        operation and these data objects: that counts as success (likewise a conflict abort is
        reported as :class:`ConflictError` again). Committing an already committed transaction
        in a new call raises :class:`TransactionStateError`. If the call fails anyway (the
        database is unreachable), :meth:`txn_state` tells later whether the commit happened.
        """
        txn_id = as_id(txn_id, "txn_id")
        op_name = str(operation).strip().lower()
        if op_name not in OPERATIONS:
            raise InvalidArgumentError("operation", f"expected one of {', '.join(OPERATIONS)}, got {operation!r}")
        objects = _touched_objects(touched)
        attempts = 0

        def op(conn):
            nonlocal attempts
            attempts += 1
            if attempts > 1:
                row = self._txn_row(conn, txn_id, lock=False)
                if row.state != OPEN:  # final: an earlier attempt may have finished the work
                    return self._earlier_outcome(conn, row, op_name, objects)
            # first statement: on server databases this row lock serializes commits, so the
            # conflict check below sees every commit that precedes ours
            seq = self._next(conn, "commit_seq")
            row = self._txn_row(conn, txn_id)
            self._require_open(row, "commit")
            locations = {tid: self._table_row(conn, tid).location for tid in objects}
            now = self.clock()
            if op_name in CONFLICT_CHECKED:
                conflict = self._conflict(conn, row, op_name, objects, locations)
                if conflict is not None:
                    reason, error = conflict
                    self._set_aborted(conn, [txn_id], now, reason)
                    return error
            conn.execute(update(txns).where(txns.c.txn_id == txn_id).values(
                state=COMMITTED, commit_seq=seq, ended_at=now, operation=op_name))
            rows = [{"txn_id": txn_id, "table_id": tid, "partition_path": p} for tid, ps in objects.items() for p in ps]
            for chunk in chunks(rows):
                conn.execute(insert(txn_components), chunk)
            return None

        conflict = self._run(op, write=True, what=f"commit transaction {txn_id}")
        if conflict is not None:
            raise conflict  # only now: the abort is durable

    def _earlier_outcome(self, conn, row, op_name: str, objects: dict[int, list[str]]):
        """On a re-run of :meth:`commit`: None if the transaction is committed exactly as asked,
        the :class:`ConflictError` if it was aborted for a conflict, else the state error."""
        if row.state == COMMITTED and row.operation == op_name:
            recorded = {tuple(r) for r in conn.execute(
                select(txn_components.c.table_id, txn_components.c.partition_path)
                .where(txn_components.c.txn_id == row.txn_id))}
            if recorded == {(tid, p) for tid, ps in objects.items() for p in ps}:
                return None
        if (row.state == ABORTED and op_name in CONFLICT_CHECKED
                and (row.abort_reason or "").startswith(_CONFLICT_REASON)):
            locations = {r.table_id: r.location for r in conn.execute(
                select(tables.c.table_id, tables.c.location).where(tables.c.table_id.in_(list(objects))))}
            if set(locations) == set(objects):
                conflict = self._conflict(conn, row, op_name, objects, locations)
                if conflict is not None:
                    return conflict[1]
        self._require_open(row, "commit")  # raises: it is committed or aborted

    def _conflict(self, conn, row, op_name: str, objects: dict[int, list[str]],
                  locations: dict[int, str]) -> tuple[str, ConflictError] | None:
        """The abort reason and error when a commit after ``row`` started changed ``objects``."""
        conflict = self._find_conflict(conn, row.start_seq, objects)
        if conflict is None:
            return None
        other, tid, part = conflict
        reason = f"{_CONFLICT_REASON}{_object_label(locations[tid], part)} committed by [txnid:{other}]"
        return reason, ConflictError(
            f"Aborting [txnid:{row.txn_id}] due to a {reason}; the {op_name} must be retried on a fresh "
            "snapshot", txn_id=row.txn_id, committed_txn_id=other, location=locations[tid], partition=part)

    @staticmethod
    def _find_conflict(conn, start_seq: int, objects: dict[int, list[str]]):
        """The first commit after ``start_seq`` that changed one of ``objects``."""
        best = None
        for tid, parts in objects.items():
            for chunk in chunks(parts):
                found = conn.execute(
                    select(txns.c.txn_id, txns.c.commit_seq, txn_components.c.partition_path)
                    .join(txn_components, txn_components.c.txn_id == txns.c.txn_id)
                    .where(txns.c.state == COMMITTED, txns.c.commit_seq > start_seq,
                           txn_components.c.table_id == tid, txn_components.c.partition_path.in_(chunk))
                    .order_by(txns.c.commit_seq, txn_components.c.partition_path).limit(1)).first()
                if found is not None and (best is None or found.commit_seq < best[0]):
                    best = (found.commit_seq, found.txn_id, tid, found.partition_path)
        return None if best is None else best[1:]

    def abort(self, txn_id: int, reason: str = "") -> None:
        """Abort: its write ids become aborted (invisible for good). Aborting an aborted
        transaction does nothing; a committed one raises :class:`TransactionStateError`."""
        txn_id = as_id(txn_id, "txn_id")

        def op(conn):
            row = self._txn_row(conn, txn_id)
            if row.state == ABORTED:
                return
            self._require_open(row, "abort")
            self._set_aborted(conn, [txn_id], self.clock(), str(reason))

        self._run(op, write=True, what=f"abort transaction {txn_id}")

    def txn_state(self, txn_id: int) -> str:
        """``"open"``, ``"committed"`` or ``"aborted"``.

        The way to settle a commit whose outcome is unknown (``commit`` raised
        :class:`MetastoreError`): ``"committed"`` means its files are visible and must stay,
        ``"open"`` that the commit did not happen (commit again or abort), ``"aborted"`` that
        they will never be visible."""
        txn_id = as_id(txn_id, "txn_id")
        return self._run(lambda conn: self._txn_row(conn, txn_id, lock=False).state, write=False,
                         what=f"read transaction {txn_id}")

    def txn_info(self, txn_id: int) -> dict:
        """Everything recorded about one transaction (state, times, write ids, touched objects)."""
        txn_id = as_id(txn_id, "txn_id")

        def op(conn):
            row = self._txn_row(conn, txn_id, lock=False)
            wids = conn.execute(select(txn_write_ids.c.table_id, txn_write_ids.c.write_id)
                                .where(txn_write_ids.c.txn_id == txn_id)).all()
            comps = conn.execute(select(txn_components.c.table_id, txn_components.c.partition_path)
                                 .where(txn_components.c.txn_id == txn_id)).all()
            info = dict(row._mapping)
            info["write_ids"] = {t: w for t, w in wids}
            touched: dict[int, list[str]] = {}
            for t, p in comps:
                touched.setdefault(t, []).append(p)
            info["touched"] = {t: sorted(ps) for t, ps in touched.items()}
            return info

        return self._run(op, write=False, what=f"read transaction {txn_id}")

    def abort_expired(self, timeout_seconds: float, *, table_id: int | None = None) -> list[int]:
        """Abort open transactions whose last heartbeat is older than ``timeout_seconds`` (their
        driver died); returns their ids. With ``table_id``, only those holding a write id on
        that table (a clean-up of one table leaves other tables' writers alone)."""
        timeout_seconds = as_seconds(timeout_seconds, "timeout_seconds")
        table_id = None if table_id is None else as_id(table_id, "table_id")

        def op(conn):
            now = self.clock()
            stmt = select(txns.c.txn_id).where(txns.c.state == OPEN, txns.c.last_heartbeat < now - timeout_seconds)
            if table_id is not None:
                self._table_row(conn, table_id)
                stmt = stmt.where(txns.c.txn_id.in_(
                    select(txn_write_ids.c.txn_id).where(txn_write_ids.c.table_id == table_id)))
            expired = conn.execute(stmt.order_by(txns.c.txn_id).with_for_update()).scalars().all()
            self._set_aborted(conn, list(expired), now,
                              f"no heartbeat for more than {timeout_seconds:g}s: the driver is presumed dead")
            return list(expired)

        return self._run(op, write=True, what="abort expired transactions")
