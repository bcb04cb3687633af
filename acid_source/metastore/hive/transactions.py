"""The Hive Metastore's transactions: ``open_txns``, ``allocate_table_write_ids``,
``heartbeat``, ``commit_txn``, ``abort_txn``, with the locks Hive's ``DbTxnManager`` takes (taken
when a write id is allocated) and Hive's write set (a DML records the partitions it changed with
``add_dynamic_partitions``, so the HMS fails the later of two conflicting committers, whichever
engine they are). Partitions are registered with ``add_partitions`` before the commit that
creates them, as Hive's MoveTask does."""

from __future__ import annotations

import copy
import getpass
import socket
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import (
    ConflictError,
    LockTimeoutError,
    MetastoreError,
    MetastoreUnreachableError,
    StoreBehindStorageError,
    TransactionStateError,
    UnsupportedOperationError,
)
from ...layout.partitions import parse_partition_segment
from ..arguments import batch_size
from ..constants import ABORTED, COMMITTED, COMPACTION, DELETE, INSERT, INSERT_OVERWRITE, MERGE, OPEN, UPDATE
from ..tableinfo import TableInfo
from .base import InternalCallError
from .convert import hms_location, split_name, valid_txns
from .sinks import SinksMixin
from .snapshots import SnapshotsMixin

if TYPE_CHECKING:
    from ...layout.ids_on_storage import IdsOnStorage

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

# Hive's lock types (LockType in the thrift IDL; EXCL_WRITE is Hive 4's) and data operations
SHARED_READ, SHARED_WRITE, EXCLUSIVE, EXCL_WRITE = 1, 2, 3, 4
LEVEL_TABLE = 2
OP_INSERT, OP_UPDATE, OP_DELETE = 2, 3, 4
ACQUIRED, WAITING = 1, 2

#: The lock Hive 4's DbTxnManager takes for each write of acidorc (compaction takes none), with
#: its defaults (hive.txn.xlock.write, hive.txn.xlock.iow): UPDATE / DELETE / MERGE exclude each
#: other but not inserts. Hive 4 runs its write-set check only for clients that turn these
#: exclusive write locks off, so they are what keeps two updaters of one table apart.
LOCKS = {INSERT: (SHARED_READ, OP_INSERT), INSERT_OVERWRITE: (EXCLUSIVE, OP_INSERT),
         UPDATE: (EXCL_WRITE, OP_UPDATE), DELETE: (EXCL_WRITE, OP_DELETE), MERGE: (EXCL_WRITE, OP_UPDATE)}
#: Operations whose partitions enter Hive's write set (TXN_COMPONENTS of type update / delete).
WRITE_SET = {UPDATE: OP_UPDATE, DELETE: OP_DELETE, MERGE: OP_UPDATE}
_NAMES: dict[int, str] = {}
_LOCATIONS: dict[str, dict[str, str]] = {}

_TIMEOUTS: dict[str, float | None] = {}
_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _seconds(text: str) -> float | None:
    """Hive's time settings (``300s``, ``6000ms``, ``5m``; a bare number is seconds)."""
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number):] or "s"
    try:
        value = float(number) * _UNITS[unit]
    except (KeyError, ValueError):
        return None
    return value if value > 0 else None


_LOCK_NAMES = {SHARED_READ: "shared-read", SHARED_WRITE: "shared-write", EXCLUSIVE: "exclusive",
               EXCL_WRITE: "exclusive-write"}



class TransactionsMixin(SnapshotsMixin, SinksMixin):
    """A transaction's life in the HMS: open -> (locks, write ids, heartbeats) -> committed or aborted."""

    def open_transaction(self, *, user: str = "", description: str = "") -> int:
        """A new open transaction of the HMS (its user: ``user``, else this process's)."""
        tt = self._ttypes()
        request = tt.OpenTxnRequest(num_txns=1, user=str(user) or getpass.getuser(), hostname=socket.gethostname(),
                                    agentInfo=f"acidorc {description}".strip()[:255])
        return int(self._call("open_txns", request).txn_ids[0])

    def allocate_write_id(self, txn_id: int, table_id: int, *, on_storage: "IdsOnStorage | None" = None,
                          operation: str | None = None) -> int:
        """The transaction's write id on the table (the same one on later calls). First the
        lock Hive's DbTxnManager takes for ``operation`` (none for a compaction), waited for
        up to ``lock_timeout``, then the storage check, then the allocation."""
        tt = self._ttypes()
        name = self._name_of(table_id)
        db, table = split_name(name)
        if operation in LOCKS:
            self.lock(txn_id, table_id, operation)
        if on_storage is not None:
            self.refuse_if_behind(table_id, on_storage)
        request = tt.AllocateTableWriteIdsRequest(dbName=db, tableName=table, txnIds=[int(txn_id)])
        try:
            response = self._call("allocate_table_write_ids", request)
        except (tt.NoSuchTxnException, tt.TxnAbortedException) as exc:
            raise self._not_open(txn_id, "allocate a write id", exc) from None
        write_id = int(response.txnToWriteIds[0].writeId)
        self._write_ids[(int(txn_id), int(table_id))] = write_id
        return write_id

    def open_transaction_batch(self, table_id: int, count: int, *, on_storage: "IdsOnStorage | None" = None,
                               user: str = "", description: str = "") -> list[tuple[int, int]]:
        """``count`` transactions (one ``open_txns``) with consecutive write ids on the table (one
        ``allocate_table_write_ids`` for all of them: Hive hands them out in transaction order,
        as for its own streaming ``TransactionBatch``); ``[(txn_id, write_id), ...]`` ascending.
        Takes no lock: take Hive's with :meth:`lock` as each transaction begins, as Hive's
        streaming connection does."""
        tt = self._ttypes()
        count = batch_size(count)
        db, table = split_name(self._name_of(table_id))
        if on_storage is not None:
            self.refuse_if_behind(table_id, on_storage)
        request = tt.OpenTxnRequest(num_txns=count, user=str(user) or getpass.getuser(),
                                    hostname=socket.gethostname(), agentInfo=f"acidorc {description}".strip()[:255])
        txn_ids = sorted(int(t) for t in self._open_txns(request))
        allocate = tt.AllocateTableWriteIdsRequest(dbName=db, tableName=table, txnIds=txn_ids)
        try:
            response = self._call("allocate_table_write_ids", allocate)
        except (tt.NoSuchTxnException, tt.TxnAbortedException) as exc:
            self._abort_all(txn_ids, "allocating their write ids failed")
            raise self._not_open(txn_ids[0], "allocate the write ids of a batch starting at", exc) from None
        except BaseException:
            self._abort_all(txn_ids, "allocating their write ids failed")
            raise
        given = {int(t.txnId): int(t.writeId) for t in response.txnToWriteIds}
        pairs = [(t, given.get(t, 0)) for t in txn_ids]
        first = pairs[0][1]
        if len(given) != count or [w for _, w in pairs] != list(range(first, first + count)):
            self._abort_all(txn_ids, "the metastore did not hand out consecutive write ids")
            raise MetastoreError(f"the Hive Metastore at {self.url} allocated write ids {pairs} on {db}.{table} for "
                                 f"the transaction batch {txn_ids}, not consecutive ones in transaction order; "
                                 "the batch was aborted", url=self.url)
        for t, w in pairs:
            self._write_ids[(t, int(table_id))] = w
        return pairs

    def _open_txns(self, request: Any, attempts: int = 4) -> list[int]:
        """``open_txns``, asked again when the metastore failed it internally: Hive 4 gives up
        an ``openTxns`` whose database commit took longer than ``metastore.txn.opentxn.timeout``
        (it deletes the transactions it inserted: ids must appear in commit order) or whose
        database timed out on a lock (rolled back); either way nothing was opened. Measured
        with three processes opening batches at once on the test metastore's Derby (one call
        in three failed)."""
        pause = 0.05
        for attempt in range(1, attempts + 1):
            try:
                return list(self._call("open_txns", request, internal_error=attempt == attempts).txn_ids)
            except InternalCallError:
                time.sleep(pause)  # backoff before asking again, not a synchronization
                pause *= 2
        raise AssertionError("unreachable")

    def _abort_all(self, txn_ids: list[int], reason: str) -> None:
        for t in txn_ids:
            try:
                self.abort(t, reason)
            except MetastoreError:
                pass  # the metastore times them out

    def heartbeat_many(self, txn_ids: Iterable[int]) -> set[int]:
        """Heartbeat all of ``txn_ids`` with one ``heartbeat_txn_range`` per run of consecutive
        ids (a batch is one run; ids between them that are not ours are never beaten); returns
        those the metastore reports aborted or unknown (committed, cleaned, never opened)."""
        tt = self._ttypes()
        ids = sorted({int(t) for t in txn_ids})
        gone: set[int] = set()
        runs: list[list[int]] = []
        for t in ids:
            if runs and runs[-1][1] == t - 1:
                runs[-1][1] = t
            else:
                runs.append([t, t])
        for low, high in runs:
            response = self._call("heartbeat_txn_range", tt.HeartbeatTxnRangeRequest(min=low, max=high))
            gone.update(int(t) for t in (response.aborted or ()))
            gone.update(int(t) for t in (response.nosuch or ()))
        return gone

    def lock(self, txn_id: int, table_id: int, operation: str) -> None:
        """Take the lock Hive's DbTxnManager takes for ``operation`` on the table (once per
        transaction and table), waiting up to ``lock_timeout``; the lock ends with the
        transaction. A DML takes it before its snapshot, as Hive does: a writer that waited
        for another then reads what that one committed."""
        if operation not in LOCKS or (int(txn_id), int(table_id)) in self._locked:
            return
        self._lock(txn_id, self._name_of(table_id), operation)
        self._locked.add((int(txn_id), int(table_id)))

    def _lock(self, txn_id: int, name: str, operation: str) -> None:
        tt = self._ttypes()
        db, table = split_name(name)
        lock_type, data_op = LOCKS[operation]
        component = tt.LockComponent(type=lock_type, level=LEVEL_TABLE, dbname=db, tablename=table,
                                     operationType=data_op, isTransactional=True,
                                     isDynamicPartitionWrite=operation in WRITE_SET)
        request = tt.LockRequest(component=[component], txnid=int(txn_id), user=getpass.getuser(),
                                 hostname=socket.gethostname(), agentInfo="acidorc")
        try:
            response = self._call("lock", request)
            deadline = time.monotonic() + self.lock_timeout
            pause = 0.05
            while response.state == WAITING:
                if time.monotonic() >= deadline:
                    blocker = getattr(response, "errorMessage", None)
                    self.abort(txn_id, "lock timeout")
                    raise LockTimeoutError(
                        f"{operation} on {name}: the Hive Metastore at {self.url} did not grant the "
                        f"{_LOCK_NAMES[lock_type]} lock within {self.lock_timeout:g}s (another transaction holds a "
                        "conflicting lock); transaction aborted, nothing written",
                        table=name, url=self.url, blocker=blocker)
                time.sleep(pause)  # the HMS offers no wait-for-grant call: poll, as Hive's DbLockManager does
                pause = min(pause * 2, 1.0)
                response = self._call("check_lock", tt.CheckLockRequest(lockid=response.lockid, txnid=int(txn_id)))
        except (tt.NoSuchTxnException, tt.TxnAbortedException) as exc:
            raise self._not_open(txn_id, f"lock {name}", exc) from None
        if response.state != ACQUIRED:
            raise MetastoreError(f"{operation} on {name}: the Hive Metastore at {self.url} answered the lock "
                                 f"request with state {response.state}", url=self.url)

    def refuse_if_behind(self, table_id: int, on_storage: "IdsOnStorage") -> None:
        """:class:`StoreBehindStorageError` if the listing ``on_storage`` (taken before this
        call) holds a write id above the table's high-water mark in the HMS, or a ``_vT`` above
        its highest transaction."""
        write_ids, txns = self.snapshot(table_id)
        if on_storage.write_id <= write_ids.high_watermark and on_storage.txn_id <= txns.high_watermark:
            return
        info = self.get_table(name=self._name_of(table_id))
        raise StoreBehindStorageError(
            on_storage.behind_message(self.url, write_ids.high_watermark, txns.high_watermark),
            location=info.location, write_id=write_ids.high_watermark + 1,
            directories=tuple(on_storage.above(write_ids.high_watermark, txns.high_watermark)), url=self.url)

    def txn_timeout_seconds(self) -> float | None:
        """The metastore's ``hive.txn.timeout`` (None when it does not say): the heartbeat
        interval stays below half of it. Asked once per process and metastore."""
        key = self.url.split("?")[0]
        if key not in _TIMEOUTS:
            try:
                text = str(self._call("get_config_value", "metastore.txn.timeout", "")).strip().lower()
            except MetastoreError:  # a server that refuses config reads: keep the default interval
                text = ""
            _TIMEOUTS[key] = _seconds(text)
        return _TIMEOUTS[key]

    def heartbeat(self, txn_id: int) -> None:
        """Mark the transaction alive; :class:`TransactionStateError` once the HMS aborted it."""
        tt = self._ttypes()
        try:
            self._call("heartbeat", tt.HeartbeatRequest(txnid=int(txn_id)))
        except (tt.NoSuchTxnException, tt.TxnAbortedException, tt.NoSuchLockException) as exc:
            raise self._not_open(txn_id, "heartbeat", exc) from None

    def commit(self, txn_id: int, *, touched: Mapping[int, Iterable[str]] | None = None,
               operation: str = "insert", checked_through: int | None = None,
               sink: tuple[str, int] | None = None) -> None:
        """Register the partitions the transaction created, enter a DML's partitions into
        Hive's write set, and commit. A write conflict (the HMS found a committed UPDATE or
        DELETE of the same partition since this transaction began) aborts it:
        :class:`ConflictError`."""
        tt = self._ttypes()
        if sink is not None:
            raise self._no_sink_marks()
        if checked_through is not None:
            raise UnsupportedOperationError(
                "conflictDetection=row", f"with the Hive Metastore at {self.url}, Hive's locks decide "
                "conflicts; use conflictDetection=object")
        op = str(operation).strip().lower()
        what = f"commit the {op} on {', '.join(self._name_of(t) for t in touched)} of" if touched else "commit"
        for table_id, partitions in (touched or {}).items():
            name = self._name_of(table_id)
            parts = sorted({p.strip("/") for p in partitions})
            hms = self._hms_table(name)
            info = self._info(hms)
            if info.partition_columns and op != COMPACTION:
                self._add_partitions(info, hms, [p for p in parts if p])
            if op in WRITE_SET and info.partition_columns:  # unpartitioned: the lock component is the entry
                db, table = split_name(name)
                write_id = self._write_ids.get((int(txn_id), int(table_id))) \
                    or self.allocate_write_id(txn_id, table_id)  # the one it has: Hive returns it again
                request = tt.AddDynamicPartitions(txnid=int(txn_id), writeid=write_id, dbname=db, tablename=table,
                                                  partitionnames=[p for p in parts if p],
                                                  operationType=WRITE_SET[op])
                try:
                    self._call("add_dynamic_partitions", request)
                except (tt.NoSuchTxnException, tt.TxnAbortedException) as exc:
                    raise self._not_open(txn_id, "record the partitions of", exc) from None
        try:
            self._call("commit_txn", tt.CommitTxnRequest(txnid=int(txn_id)))
        except tt.TxnAbortedException as exc:
            if "conflict" in (exc.message or "").lower():
                raise ConflictError(f"{op} lost a write conflict in the Hive Metastore at {self.url}: "
                                    f"{exc.message}", txn_id=int(txn_id)) from None
            raise self._not_open(txn_id, what, exc) from None
        except tt.NoSuchTxnException as exc:
            raise self._not_open(txn_id, what, exc) from None
        return None

    def _add_partitions(self, info: TableInfo, hms: Any, partitions: list[str]) -> None:
        tt = self._ttypes()
        if not partitions:
            return
        db, table = split_name(info.name or "")
        new = []
        for path in partitions:
            values = []
            for segment in path.split("/"):
                parsed = parse_partition_segment(segment)
                values.append(HIVE_DEFAULT_PARTITION if parsed is None or parsed[1] is None else parsed[1])
            sd = copy.deepcopy(hms.sd)
            sd.location = hms_location(f"{info.location}/{path}")
            new.append(tt.Partition(values=values, dbName=db, tableName=table, createTime=int(self.clock()),
                                    lastAccessTime=0, sd=sd, parameters={}))
        request = tt.AddPartitionsRequest(dbName=db, tblName=table, parts=new, ifNotExists=True, needResult=False)
        try:
            self._call("add_partitions_req", request)
        except (tt.InvalidObjectException, tt.AlreadyExistsException) as exc:
            raise MetastoreError(f"the Hive Metastore at {self.url} refused partitions {partitions} of "
                                 f"{info.name}: {exc.message}", url=self.url) from None

    def abort(self, txn_id: int, reason: str = "") -> None:
        """Abort; aborting an aborted (or timed-out) transaction does nothing."""
        tt = self._ttypes()
        try:
            self._call("abort_txn", tt.AbortTxnRequest(txnid=int(txn_id)))
        except (tt.NoSuchTxnException, tt.TxnAbortedException):
            if self.txn_state(txn_id) == COMMITTED:
                raise TransactionStateError(f"cannot abort transaction {txn_id}: it is committed",
                                            txn_id=int(txn_id), state=COMMITTED) from None

    def txn_state(self, txn_id: int) -> str:
        """``"open"``, ``"committed"`` or ``"aborted"`` as the HMS knows it: open or aborted in
        ``get_open_txns`` (Hive's ValidTxnList), else committed when at or below the high-water
        mark. (Hive forgets an aborted transaction once its files are cleaned; it then reads as
        committed here, which is harmless: nothing of it is left to show.) Not from
        ``get_open_txns_info``: Hive 4 lists each gap of its transaction sequence (an id whose
        insert rolled back under concurrent ``open_txns``) as an open transaction without a user,
        which its thrift code then refuses to send: the call fails, dropping the connection, for
        as long as the gap is recent."""
        txns = valid_txns(self._call("get_open_txns"))
        txn_id = int(txn_id)
        if txns.is_txn_aborted(txn_id):
            return ABORTED
        if txn_id <= txns.high_watermark:
            return COMMITTED if txns.is_txn_valid(txn_id) else OPEN
        raise TransactionStateError(f"the Hive Metastore at {self.url} never opened transaction {txn_id}",
                                    txn_id=txn_id)

    def txn_info(self, txn_id: int) -> dict:
        """What the HMS says of the transaction: its state, and for an open or aborted one its
        user, host, description (agent info) and times when ``get_open_txns_info`` can be had
        (Hive 4 cannot send it while its transaction sequence has a recent gap: see
        :meth:`txn_state`)."""
        state = self.txn_state(txn_id)
        info: dict = {"txn_id": int(txn_id), "state": state}
        if state == COMMITTED:
            return info
        try:
            response = self._call("get_open_txns_info")
        except MetastoreUnreachableError:  # the HMS answered get_open_txns just now
            return info
        for listed in response.open_txns or ():
            if int(listed.id) == int(txn_id):
                info.update(user_name=listed.user, host=listed.hostname, description=listed.agentInfo,
                            last_heartbeat=(listed.lastHeartbeatTime or 0) / 1000.0,
                            started_at=(listed.startedTime or 0) / 1000.0)
        return info

    def abort_expired(self, timeout_seconds: float, *, table_id: int | None = None) -> list[int]:
        """Nothing (no id): the HMS aborts silent transactions itself (its AcidHouseKeeperService,
        after ``hive.txn.timeout``)."""
        return []

    def commits_since(self, table_id: int, partitions: Iterable[str], after_seq: int, *,
                      operations: Iterable[str] | None = None) -> tuple[int, list[dict]]:
        """Refused: the HMS does not list commits by partition (Hive's partition-level rule applies)."""
        raise UnsupportedOperationError(
            "conflictDetection=row", f"the Hive Metastore at {self.url} does not list commits by partition; "
            "Hive's partition-level rule applies")

