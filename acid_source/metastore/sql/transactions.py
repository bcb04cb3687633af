"""The SQL store's transactions: open, write ids, heartbeat, commit (with the conflict rules),
abort, expiry.

Every call here is safe to run again after a COMMIT whose answer was lost (``_run`` re-runs a
call after a lost connection or a lock error): a re-run recognises the work its earlier
attempt finished and reports that instead of failing, so callers never mistake a committed
transaction for a failed one and delete its files.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import and_, exists, insert, or_, select, update

from ...errors import BatchAlreadyCommittedError, ConflictError, InvalidArgumentError, StoreBehindStorageError
from ..arguments import as_id, as_seconds, batch_size, sink_key
from ..constants import (
    ABORTED,
    COMMITTED,
    CONFLICT_CHECKED,
    DML_OPERATIONS,
    INVALIDATES_COMPACTION,
    NEVER_FAIL_DML,
    NO_WRITE_ID_ORDER,
    OPEN,
    OPERATIONS,
    REPLACES_ROWS,
)
from ..records import Recheck
from .base import chunks
from .schema import tables, txn_components, txn_write_ids, txns
from .sinks import SINK_REASON, SinksMixin

if TYPE_CHECKING:
    from ...layout.ids_on_storage import IdsOnStorage

_CONFLICT_REASON = "write conflict on "


@dataclass(frozen=True)
class _CommitRequest:
    """One call of :meth:`TransactionsMixin.commit`, its arguments checked."""

    txn_id: int
    operation: str
    objects: dict[int, list[str]]  # table id -> data objects touched
    checked_through: int | None  # the row-level rule's commit sequence number
    mark: tuple[str, int] | None  # (sink id, batch id) of a streaming sink's micro-batch


class _Refused(Exception):
    """Raised inside a commit's database transaction to roll it back; never escapes."""

    def __init__(self, recheck: Recheck):
        self.recheck = recheck
        super().__init__("refused")


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


def _bump_write_ids(conn, table_id: int, n: int) -> int:
    """Hand out ``n`` more write ids of the table; returns the highest (the new high-water mark)."""
    bump = update(tables).where(tables.c.table_id == table_id).values(write_id_hwm=tables.c.write_id_hwm + n)
    if conn.dialect.update_returning:
        return conn.execute(bump.returning(tables.c.write_id_hwm)).scalar_one()
    conn.execute(bump)
    return conn.execute(select(tables.c.write_id_hwm).where(tables.c.table_id == table_id)).scalar_one()


def _commit_kind(operation: str, checked_through: int | None) -> tuple[str, int | None]:
    """The operation a commit names, and the row-level rule's sequence number if it asks for it."""
    op_name = str(operation).strip().lower()
    if op_name not in OPERATIONS:
        raise InvalidArgumentError("operation", f"expected one of {', '.join(OPERATIONS)}, got {operation!r}")
    if checked_through is None:
        return op_name, None
    if op_name not in DML_OPERATIONS:
        raise InvalidArgumentError("checked_through", f"the row-level rule applies to "
                                   f"{', '.join(sorted(DML_OPERATIONS))}, not to {op_name}")
    return op_name, as_id(checked_through, "checked_through")


class TransactionsMixin(SinksMixin):
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

    def allocate_write_id(self, txn_id: int, table_id: int, *, on_storage: "IdsOnStorage | None" = None,
                          operation: str | None = None) -> int:
        """The write id of ``txn_id`` on the table: the next one (1, 2, 3, ...) on the first
        call, the same one on later calls. Counts as a heartbeat.

        ``on_storage``: the table's ACID directories, listed before this call. If one holds a
        write id above the table's high-water mark (or a ``_vT`` above the highest transaction
        id), this store never handed it out: the first call raises
        :class:`StoreBehindStorageError` and allocates nothing (no aborted write id is left for
        the clean-up of aborted writes to remove the directories of). ``operation`` (what the
        transaction will commit) matters to stores that lock, such as a Hive Metastore; this
        one decides conflicts at commit."""
        txn_id = as_id(txn_id, "txn_id")
        table_id = as_id(table_id, "table_id")

        def op(conn):
            row = self._txn_row(conn, txn_id)
            self._require_open(row, f"allocate a write id on table {table_id} for")
            existing = conn.execute(select(txn_write_ids.c.write_id).where(
                txn_write_ids.c.txn_id == txn_id, txn_write_ids.c.table_id == table_id)).scalar()
            if existing is None:
                table = self._table_row(conn, table_id, lock=True)
                if on_storage is not None:
                    self._refuse_if_behind(conn, table, on_storage)
                existing = _bump_write_ids(conn, table_id, 1)
                conn.execute(insert(txn_write_ids).values(txn_id=txn_id, table_id=table_id, write_id=existing))
            conn.execute(update(txns).where(txns.c.txn_id == txn_id).values(last_heartbeat=self.clock()))
            return existing

        return self._run(op, write=True, what=f"allocate a write id for transaction {txn_id}")

    def open_transaction_batch(self, table_id: int, count: int, *, on_storage: "IdsOnStorage | None" = None,
                               user: str = "", description: str = "") -> list[tuple[int, int]]:
        """``count`` new open transactions with consecutive write ids on the table (high-water
        mark + 1 .. + ``count``), opened and allocated in one database transaction: Hive's
        streaming ``TransactionBatch``, whose transactions share one ``delta_x_y`` directory.
        Returns ``[(txn_id, write_id), ...]`` ascending (transaction ids consecutive too). Each
        transaction then commits or aborts on its own (:meth:`commit`, :meth:`abort`);
        :meth:`heartbeat_many` keeps them all alive. ``on_storage`` is checked as by
        :meth:`allocate_write_id`: a store behind its storage allocates nothing."""
        table_id = as_id(table_id, "table_id")
        count = batch_size(count)
        values = {"state": OPEN, "user_name": str(user)[:255], "description": str(description),
                  "host": socket.gethostname()[:255], "pid": os.getpid(), "started_at": self.clock()}
        opened: list[tuple[int, int]] = []  # what an earlier attempt of this call inserted

        def op(conn):
            if opened:
                rows = conn.execute(select(txns).where(txns.c.txn_id.between(opened[0][0], opened[-1][0]))).all()
                if len(rows) == count and all(getattr(r, k) == v for r in rows for k, v in values.items()
                                              if k != "state"):
                    return list(opened)  # our COMMIT went through but its answer was lost
            # the table's row first (as allocate_write_id locks it), then the txn id counter
            table = self._table_row(conn, table_id, lock=True)
            if on_storage is not None:
                self._refuse_if_behind(conn, table, on_storage)
            last_txn = self._next(conn, "txn_id", count)
            last_write = _bump_write_ids(conn, table_id, count)
            pairs = [(last_txn - count + i, last_write - count + i) for i in range(1, count + 1)]
            opened[:] = pairs
            start_seq = self._current(conn, "commit_seq")
            txn_rows = [dict(values, txn_id=t, last_heartbeat=values["started_at"], start_seq=start_seq)
                        for t, _ in pairs]
            for chunk in chunks(txn_rows):
                conn.execute(insert(txns), chunk)
            for chunk in chunks([{"txn_id": t, "table_id": table_id, "write_id": w} for t, w in pairs]):
                conn.execute(insert(txn_write_ids), chunk)
            return pairs

        return self._run(op, write=True, what=f"open a batch of {count} transactions on table {table_id}")

    def heartbeat_many(self, txn_ids: Iterable[int]) -> set[int]:
        """Mark all of ``txn_ids`` alive in one database transaction; returns those that are no
        longer open (committed, aborted - a clean-up found them expired -, or unknown) instead
        of raising: a transaction batch beats for all its transactions and stops beating the
        ended ones."""
        ids = sorted({as_id(t, "txn_ids") for t in txn_ids})

        def op(conn):
            now = self.clock()
            alive: set[int] = set()
            for chunk in chunks(ids):
                conn.execute(update(txns).where(txns.c.txn_id.in_(chunk), txns.c.state == OPEN)
                             .values(last_heartbeat=now))
                alive.update(conn.execute(select(txns.c.txn_id).where(txns.c.txn_id.in_(chunk),
                                                                      txns.c.state == OPEN)).scalars())
            return set(ids) - alive

        if not ids:
            return set()
        return self._run(op, write=True, what=f"heartbeat {len(ids)} transactions")

    def txn_timeout_seconds(self) -> float | None:
        """None: this store times out no transaction by itself (:meth:`abort_expired` does, when
        a clean-up asks), so the heartbeat keeps its own interval."""
        return None

    def lock(self, txn_id: int, table_id: int, operation: str) -> None:
        """Nothing: this store takes no locks and decides conflicts at commit (DESIGN.md,
        "Concurrency rules"). A Hive Metastore takes Hive's locks here."""

    def refuse_if_behind(self, table_id: int, on_storage: "IdsOnStorage") -> None:
        """:class:`StoreBehindStorageError` if ``on_storage`` (a listing taken before this
        call) holds a directory this store never handed out: what a write without a write id
        of its own (a compaction) checks before it writes anything. The high-water marks are
        read after the listing, so a concurrent writer's directories never count."""
        table_id = as_id(table_id, "table_id")
        self._run(lambda conn: self._refuse_if_behind(conn, self._table_row(conn, table_id), on_storage),
                  write=False, what=f"check the ids of table {table_id} against its storage")

    def _refuse_if_behind(self, conn, table, on_storage: "IdsOnStorage") -> None:
        txn_hwm = self._current(conn, "txn_id")
        if on_storage.write_id <= table.write_id_hwm and on_storage.txn_id <= txn_hwm:
            return
        raise StoreBehindStorageError(
            on_storage.behind_message(self.url, table.write_id_hwm, txn_hwm), location=table.location,
            write_id=table.write_id_hwm + 1, directories=tuple(on_storage.above(table.write_id_hwm, txn_hwm)),
            url=self.url)

    def heartbeat(self, txn_id: int) -> None:
        """Mark the transaction alive; :class:`TransactionStateError` unless it is open."""
        txn_id = as_id(txn_id, "txn_id")

        def op(conn):
            self._require_open(self._txn_row(conn, txn_id), "heartbeat")
            conn.execute(update(txns).where(txns.c.txn_id == txn_id).values(last_heartbeat=self.clock()))

        self._run(op, write=True, what=f"heartbeat transaction {txn_id}")

    def commit(self, txn_id: int, *, touched: Mapping[int, Iterable[str]] | None = None,
               operation: str = "insert", checked_through: int | None = None,
               sink: tuple[str, int] | None = None) -> Recheck | None:
        """Commit: every write id of the transaction becomes valid, atomically.

        ``touched`` maps table id -> data objects written ("" for an unpartitioned table, else a
        partition path such as ``ds=2024-01-01``). For ``update``, ``delete``, ``merge`` and
        ``compaction``, a data object changed by a commit after this transaction started is a
        write conflict: the transaction is aborted and :class:`ConflictError` raised (naming the
        data object and the winner's transaction and write id). Inserts and overwrites never
        fail for that reason, and a compaction never fails an update, delete or merge (it keeps
        row ids, so their delete events still apply). For the same reason a compaction itself
        fails only when an ``insert_overwrite`` or another compaction committed on one of its
        data objects after it started.

        Every operation but a compaction also fails (aborted, :class:`ConflictError`) when a
        commit after it started holds a higher write id on one of its data objects and the two
        would come out wrong because readers order directories by write id, not by commit
        order: an ``insert_overwrite`` would not replace that commit's rows (they sit above its
        base), and anything under a committed ``insert_overwrite``'s higher base would be hidden
        for ever. Hive prevents both with an exclusive lock taken before write ids are
        allocated; without a lock manager the later committer fails, and a retry (with a new,
        higher write id) succeeds.

        ``checked_through`` (update, delete, merge only) asks for the row-level rule instead:
        the caller has compared its delete events with those of every commit on its data
        objects up to that commit sequence number (:meth:`commits_since`) and found no common
        row. Here, atomically, an overwrite of one of its data objects after that point aborts
        it with :class:`ConflictError`; update, delete or merge commits after that point make
        the call return a :class:`Recheck` without committing or aborting anything (check
        those, then call again). Otherwise it commits and returns None.

        When the database reports an error after the COMMIT took effect (a lost connection, a
        lock error), the call is run again and finds the transaction committed with this
        operation and these data objects: that counts as success (likewise a conflict abort is
        reported as :class:`ConflictError` again). Committing an already committed transaction
        in a new call raises :class:`TransactionStateError`. If the call fails anyway (the
        database is unreachable), :meth:`txn_state` tells later whether the commit happened.

        ``sink=(sink_id, batch_id)``: a streaming sink's micro-batch, recorded in this commit's
        database transaction (:meth:`sink_batch`). If that batch is recorded already, nothing is
        committed: the transaction is aborted in the same database transaction and
        :class:`BatchAlreadyCommittedError` (a :class:`ConflictError`) names the transaction
        that committed it. The transaction writes one table (the mark names it).
        """
        txn_id = as_id(txn_id, "txn_id")
        op_name, checked_through = _commit_kind(operation, checked_through)
        request = _CommitRequest(txn_id, op_name, _touched_objects(touched), checked_through,
                                 None if sink is None else sink_key(sink))
        attempts = [0]

        def op(conn):
            attempts[0] += 1
            return self._commit_once(conn, request, again=attempts[0] > 1)

        what = f"commit transaction {txn_id}"
        try:
            if request.mark is None:
                conflict = self._run(op, write=True, what=what)
            else:
                conflict = self._run_sinks(op, write=True, what=what)
        except _Refused as refused:
            return refused.recheck
        if conflict is not None:
            raise conflict  # only now: the abort is durable
        return None

    def _commit_once(self, conn, req: _CommitRequest, *, again: bool) -> ConflictError | None:
        """One attempt of :meth:`commit` in its database transaction: the error to raise once
        the transaction (an abort) is durable, or None when it committed. ``again``: a re-run
        after an attempt whose outcome was lost."""
        if again:
            row = self._txn_row(conn, req.txn_id, lock=False)
            if row.state != OPEN:  # final: an earlier attempt may have finished the work
                return self._earlier_outcome(conn, row, req.operation, req.objects, req.checked_through, req.mark)
        row = self._txn_row(conn, req.txn_id)  # locked: nobody else ends it meanwhile
        self._require_open(row, "commit")
        locations = {tid: self._table_row(conn, tid).location for tid in req.objects}
        # On server databases this row lock serializes commits store-wide, so the conflict
        # check below sees every commit that precedes ours. It is held until our COMMIT, so
        # what needs no ordering (the two reads above) comes before it; always after our
        # own transaction's row lock, never before (one lock order: no deadlock).
        seq = self._next(conn, "commit_seq")
        now = self.clock()
        sink_table = None
        if req.mark is not None:  # after the commit lock: a racing commit of the batch is seen
            sink_table = self._sink_table(conn, req.txn_id, req.objects)
            refused = self._batch_committed(conn, req.txn_id, req.mark)
            if refused is not None:
                self._set_aborted(conn, [req.txn_id], now, f"{SINK_REASON}{refused}")
                return refused
        conflict = self._conflict(conn, row, req.operation, req.objects, locations, req.checked_through)
        if conflict is not None:
            reason, error = conflict
            self._set_aborted(conn, [req.txn_id], now, reason)
            return error
        if req.checked_through is not None:  # a DML under the row-level rule
            after = max(row.start_seq, req.checked_through)
            newer = self._commits_touching(conn, req.objects, after, DML_OPERATIONS)
            if newer:  # rolls this database transaction back: nothing changes
                raise _Refused(Recheck(seq - 1, newer))
        self._record_commit(conn, req, seq, now, sink_table)
        return None

    def _record_commit(self, conn, req: _CommitRequest, seq: int, now: float, sink_table: int | None) -> None:
        """Mark the transaction committed as number ``seq``, with what it touched (and its batch)."""
        conn.execute(update(txns).where(txns.c.txn_id == req.txn_id).values(
            state=COMMITTED, commit_seq=seq, ended_at=now, operation=req.operation))
        rows = [{"txn_id": req.txn_id, "table_id": tid, "partition_path": p}
                for tid, ps in req.objects.items() for p in ps]
        for chunk in chunks(rows):
            conn.execute(insert(txn_components), chunk)
        if req.mark is not None:
            assert sink_table is not None  # found with the mark, before the conflict checks
            self._record_sink_batch(conn, *req.mark, req.txn_id, sink_table, now)

    def _batch_committed(self, conn, txn_id: int, mark: tuple[str, int]) -> BatchAlreadyCommittedError | None:
        """The error for a commit of ``mark`` (sink, batch) that another transaction committed."""
        winner = self._sink_winner(conn, *mark)
        if winner is None or winner == txn_id:
            return None
        return BatchAlreadyCommittedError(*mark, committed_txn_id=winner, txn_id=txn_id)

    @staticmethod
    def _sink_table(conn, txn_id: int, objects: dict[int, list[str]]) -> int:
        """The one table a sink's commit writes: the one it touched, else its write id's."""
        tids = set(objects) or set(conn.execute(select(txn_write_ids.c.table_id)
                                                .where(txn_write_ids.c.txn_id == txn_id)).scalars())
        if len(tids) != 1:
            raise InvalidArgumentError("sink", f"a streaming sink's commit writes one table; transaction {txn_id} "
                                       f"writes {len(tids) or 'no'} tables ({sorted(tids)})")
        return tids.pop()

    def commits_since(self, table_id: int, partitions: Iterable[str], after_seq: int, *,
                      operations: Iterable[str] | None = None) -> tuple[int, list[dict]]:
        """``(S, commits)``: S is the commit sequence number now, and ``commits`` the committed
        transactions numbered above ``after_seq`` that touched one of ``partitions`` of the
        table ("" for an unpartitioned table), oldest first, optionally only ``operations``:
        one dict per (transaction, partition) with ``txn_id``, ``commit_seq``, ``operation``,
        ``write_id`` (on this table; None for a commit without one, e.g. a compaction) and
        ``partition``. What row-level conflict detection compares its rows with."""
        table_id = as_id(table_id, "table_id")
        after_seq = as_id(after_seq, "after_seq")
        objects = _touched_objects({table_id: partitions})
        ops = None if operations is None else frozenset(str(o).strip().lower() for o in operations)
        if ops is not None and not ops <= set(OPERATIONS):
            raise InvalidArgumentError("operations", f"expected some of {', '.join(OPERATIONS)}, "
                                       f"got {sorted(ops - set(OPERATIONS))}")

        def op(conn):
            self._table_row(conn, table_id)
            return self._current(conn, "commit_seq"), self._commits_touching(conn, objects, after_seq, ops)

        return self._run(op, write=False, what=f"list the commits on table {table_id}")

    @staticmethod
    def _commits_touching(conn, objects: dict[int, list[str]], after_seq: int,
                          operations: frozenset | None) -> list[dict]:
        found = []
        for tid, parts in objects.items():
            for chunk in chunks(parts):
                stmt = (select(txns.c.txn_id, txns.c.commit_seq, txns.c.operation, txn_write_ids.c.write_id,
                               txn_components.c.partition_path)
                        .join(txn_components, txn_components.c.txn_id == txns.c.txn_id)
                        .outerjoin(txn_write_ids, and_(txn_write_ids.c.txn_id == txns.c.txn_id,
                                                       txn_write_ids.c.table_id == tid))
                        .where(txns.c.state == COMMITTED, txns.c.commit_seq > after_seq,
                               txn_components.c.table_id == tid, txn_components.c.partition_path.in_(chunk)))
                if operations is not None:
                    stmt = stmt.where(txns.c.operation.in_(sorted(operations)))
                found += [{"txn_id": r.txn_id, "commit_seq": r.commit_seq, "operation": r.operation,
                           "write_id": r.write_id, "table_id": tid, "partition": r.partition_path}
                          for r in conn.execute(stmt)]
        found.sort(key=lambda c: (c["commit_seq"], c["table_id"], c["partition"]))
        return found

    def _earlier_outcome(self, conn, row, op_name: str, objects: dict[int, list[str]],
                         checked_through: int | None = None, mark: tuple[str, int] | None = None):
        """On a re-run of :meth:`commit`: None if the transaction is committed exactly as asked,
        the :class:`ConflictError` if it was aborted for a conflict (or the
        :class:`BatchAlreadyCommittedError` for its micro-batch), else the state error."""
        if row.state == COMMITTED and row.operation == op_name:
            recorded = {tuple(r) for r in conn.execute(
                select(txn_components.c.table_id, txn_components.c.partition_path)
                .where(txn_components.c.txn_id == row.txn_id))}
            if recorded == {(tid, p) for tid, ps in objects.items() for p in ps} and \
                    (mark is None or self._sink_winner(conn, *mark) == row.txn_id):
                return None
        if row.state == ABORTED and mark is not None and (row.abort_reason or "").startswith(SINK_REASON):
            refused = self._batch_committed(conn, row.txn_id, mark)
            if refused is not None:
                return refused
        if row.state == ABORTED and (row.abort_reason or "").startswith(_CONFLICT_REASON):
            locations = {r.table_id: r.location for r in conn.execute(
                select(tables.c.table_id, tables.c.location).where(tables.c.table_id.in_(list(objects))))}
            if set(locations) == set(objects):
                conflict = self._conflict(conn, row, op_name, objects, locations, checked_through)
                if conflict is not None:
                    return conflict[1]
        self._require_open(row, "commit")  # raises: it is committed or aborted

    def _conflict(self, conn, row, op_name: str, objects: dict[int, list[str]], locations: dict[int, str],
                  checked_through: int | None = None) -> tuple[str, ConflictError] | None:
        """The abort reason and error when a commit after ``row`` started conflicts with this
        one on ``objects``: by the object rule (update, delete, merge, compaction; with
        ``checked_through``, only an overwrite after that point; for a compaction, only an
        overwrite or another compaction) or by the write-id order rule
        (every operation but a compaction). The earliest such commit is named, so a re-run
        after a lost answer (later commits come after it) names the same one."""
        found = []  # (commit_seq, rule, txn id, operation, table id, partition)
        if op_name in CONFLICT_CHECKED:
            if checked_through is not None:
                hit = self._find_conflict(conn, max(row.start_seq, checked_through), objects, only=REPLACES_ROWS)
            elif op_name == "compaction":
                hit = self._find_conflict(conn, row.start_seq, objects, only=INVALIDATES_COMPACTION)
            else:
                hit = self._find_conflict(conn, row.start_seq, objects,
                                          ignore=NEVER_FAIL_DML if op_name in DML_OPERATIONS else frozenset())
            if hit is not None:
                found.append((hit[0], 0, *hit[1:]))
        ours: dict[int, int] = {}
        if op_name not in NO_WRITE_ID_ORDER:
            ours = {r.table_id: r.write_id for r in conn.execute(
                select(txn_write_ids.c.table_id, txn_write_ids.c.write_id).where(txn_write_ids.c.txn_id == row.txn_id))}
            hit = self._find_conflict(conn, row.start_seq, objects, above=ours,
                                      ignore=NO_WRITE_ID_ORDER if op_name in REPLACES_ROWS else frozenset(),
                                      only=None if op_name in REPLACES_ROWS else REPLACES_ROWS)
            if hit is not None:
                found.append((hit[0], 1, *hit[1:]))
        if not found:
            return None
        _, rule, other, other_op, tid, part = min(found)
        write_id = conn.execute(select(txn_write_ids.c.write_id).where(
            txn_write_ids.c.txn_id == other, txn_write_ids.c.table_id == tid)).scalar()
        winner = f"[txnid:{other}]" + (f" ({other_op}, write id {write_id})" if write_id is not None
                                       else f" ({other_op})")
        reason = f"{_CONFLICT_REASON}{_object_label(locations[tid], part)} committed by {winner}"
        if rule == 0:
            remedy = f"the {op_name} must be retried on a fresh snapshot"
        else:
            effect = (f"this {op_name} would be hidden by its base for ever" if other_op in REPLACES_ROWS
                      else f"this {op_name} would not overwrite its rows")
            reason += (f": it committed first with the higher write id {write_id} (this transaction has "
                       f"{ours[tid]}), and a base directory of a higher write id hides lower ones, so {effect}")
            remedy = f"retry the {op_name}: a new attempt gets a higher write id and succeeds"
        return reason, ConflictError(
            f"Aborting [txnid:{row.txn_id}] due to a {reason}; {remedy}", txn_id=row.txn_id,
            committed_txn_id=other, committed_write_id=write_id, location=locations[tid], partition=part)

    @staticmethod
    def _find_conflict(conn, start_seq: int, objects: dict[int, list[str]], *, ignore: frozenset = frozenset(),
                       only: frozenset | None = None, above: Mapping[int, int] | None = None):
        """The first commit after ``start_seq`` that changed one of ``objects`` (commits of
        operations in ``ignore`` do not count; with ``only``, only those operations count; with
        ``above``, only commits holding a write id above ``above[table id]`` on that table, and
        none on a table missing from it): (commit seq, txn id, operation, table id, partition)
        or None."""
        best = None
        for tid, parts in objects.items():
            if above is not None and tid not in above:
                continue
            for chunk in chunks(parts):
                stmt = (select(txns.c.txn_id, txns.c.commit_seq, txns.c.operation, txn_components.c.partition_path)
                        .join(txn_components, txn_components.c.txn_id == txns.c.txn_id)
                        .where(txns.c.state == COMMITTED, txns.c.commit_seq > start_seq,
                               txn_components.c.table_id == tid, txn_components.c.partition_path.in_(chunk)))
                if above is not None:
                    stmt = stmt.join(txn_write_ids, and_(txn_write_ids.c.txn_id == txns.c.txn_id,
                                                         txn_write_ids.c.table_id == tid,
                                                         txn_write_ids.c.write_id > above[tid]))
                if ignore:
                    stmt = stmt.where(or_(txns.c.operation.is_(None), txns.c.operation.notin_(sorted(ignore))))
                if only is not None:
                    stmt = stmt.where(txns.c.operation.in_(sorted(only)))
                found = conn.execute(stmt.order_by(txns.c.commit_seq, txn_components.c.partition_path)
                                     .limit(1)).first()
                if found is not None and (best is None or found.commit_seq < best[0]):
                    best = (found.commit_seq, found.txn_id, found.operation, tid, found.partition_path)
        return best

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
        that table, and those holding none on any table - a compaction writes under its txn id
        alone, so a dead compactor's ``_vT`` outputs would otherwise stay forever (a clean-up of
        one table still leaves other tables' writers alone)."""
        timeout_seconds = as_seconds(timeout_seconds, "timeout_seconds")
        table_id = None if table_id is None else as_id(table_id, "table_id")

        def op(conn):
            now = self.clock()
            stmt = select(txns.c.txn_id).where(txns.c.state == OPEN, txns.c.last_heartbeat < now - timeout_seconds)
            if table_id is not None:
                self._table_row(conn, table_id)
                on_table = exists().where(txn_write_ids.c.txn_id == txns.c.txn_id,
                                          txn_write_ids.c.table_id == table_id)
                on_any = exists().where(txn_write_ids.c.txn_id == txns.c.txn_id)
                stmt = stmt.where(or_(on_table, ~on_any))
            expired = conn.execute(stmt.order_by(txns.c.txn_id).with_for_update()).scalars().all()
            self._set_aborted(conn, list(expired), now,
                              f"no heartbeat for more than {timeout_seconds:g}s: the driver is presumed dead")
            return list(expired)

        return self._run(op, write=True, what="abort expired transactions")
