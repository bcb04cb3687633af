"""One transaction against the transaction store: open, write ids, heartbeat, commit, abort.

Every write (append, overwrite, the Spark write, UPDATE / DELETE / MERGE, compaction) runs
inside one :class:`Transaction`, as ``with Transaction.begin(...) as txn:`` - the one commit
path (:mod:`acid_source.commit`). Files a transaction writes are invisible until its commit; so the only
ways to lose data are to delete files of a committed transaction or to show files of an
uncommitted one. The rules here prevent both:

* a commit whose outcome is unknown (the connection broke after COMMIT was sent) is resolved
  by asking the store, never by assuming failure;
* files are removed only after the store says the transaction is aborted.

Executors never see a Transaction (tasks get a plan of storage paths and ids), and a
Transaction does not pickle: Spark's driver-side commit process rebuilds it from a
:class:`TransactionRef`, which carries no password.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping

from . import settings
from .errors import AcidError, ConflictError, MetastoreError, TransactionStateError
from .faults import crash_point
from .heartbeat import HeartbeatThread, heartbeat_interval, spawn_heartbeat_process
from .storage import Storage

# The store (SQLAlchemy) is imported only where it is used: a TransactionRef travels through
# Spark's workers.
if TYPE_CHECKING:
    from .layout.table_dirs import TableLayout
    from .metastore import TransactionStore
    from .metastore.records import Recheck

OPEN, COMMITTED, ABORTED = "open", "committed", "aborted"


def _credentials_dir() -> Path:
    return Path(os.path.expanduser("~")) / ".acidorc" / "credentials"


def _credentials_file(redacted_url: str, txn_id: int) -> Path:
    """One file per transaction: removed when it ends, whatever other transactions do."""
    return _credentials_dir() / f"{hashlib.sha256(redacted_url.encode()).hexdigest()}-{txn_id}"


@dataclass(frozen=True)
class TransactionRef:
    """Enough for another driver-side process (Spark's commit worker) to finish a transaction.

    ``url`` has any password masked; the password is found again on the driver's machine
    (``$ACIDORC_METASTORE_URL`` or a private credentials file), never shipped with tasks.
    """

    txn_id: int
    url: str
    has_secret: bool = False

    def metastore(self) -> "TransactionStore":
        from .metastore import connect

        if not self.has_secret:
            return connect(self.url)
        env = settings.METASTORE_URL.get()
        if env and connect(env).url == self.url:
            return connect(env)
        path = _credentials_file(self.url, self.txn_id)
        try:
            return connect(json.loads(path.read_text())["url"])
        except (OSError, ValueError, KeyError):
            raise MetastoreError(
                f"cannot finish transaction {self.txn_id}: the password of {self.url} is not available "
                f"in this process (set ${settings.METASTORE_URL.name} on the driver)", url=self.url) from None


@dataclass
class Transaction:
    """An open transaction. Use it as a context manager - every write of acidorc does
    (:mod:`acid_source.commit`): it commits on a clean exit (with the operation and touched
    data objects recorded on it by :meth:`set_commit`; a block that committed or aborted
    explicitly is left as it is) and aborts on an exception, removing what was written.

    >>> with Transaction.begin(metastore, description="append t") as txn:  # doctest: +SKIP
    ...     write_id = txn.allocate_write_id(table, storage)
    ...     ...  # write files of write_id
    ...     txn.set_commit("insert", {table.table_id: [""]})
    """

    metastore: "TransactionStore"
    txn_id: int
    _heartbeat: HeartbeatThread | None = field(default=None, repr=False)
    _written: dict[int, tuple[Storage, int | None, set[str]]] = field(default_factory=dict, repr=False)
    _pending: tuple[str, dict, tuple[str, int] | None] | None = field(default=None, repr=False)
    state: str = OPEN
    description: str = ""

    # --- opening ---------------------------------------------------------------------------
    @classmethod
    def begin(cls, metastore: "TransactionStore", *, description: str = "", heartbeat: str = "thread") -> "Transaction":
        """Open a transaction. ``heartbeat``: ``"thread"`` (this process keeps it alive),
        ``"process"`` (a detached process watching the Spark driver does; for transactions opened
        in a short-lived Spark worker) or ``"none"``."""
        txn_id = metastore.open_transaction(description=description)
        txn = cls(metastore, txn_id, description=description)
        if heartbeat == "thread":
            txn._heartbeat = HeartbeatThread(metastore, txn_id).start()
        elif heartbeat == "process":
            spawn_heartbeat_process(metastore.connect_url(), txn_id, interval=heartbeat_interval(metastore))
        return txn

    @classmethod
    def adopt(cls, metastore: "TransactionStore", txn_id: int, *, description: str = "", table_id: int | None = None,
              storage: Storage | None = None, write_id: int | None = None) -> "Transaction":
        """An open transaction of this process that something else opened - one of a batch
        (``TransactionStore.open_transaction_batch``) - as a Transaction, to end it through the one
        commit path. No heartbeat of its own: the batch beats for all its transactions
        (``heartbeat_many``). With ``table_id``, ``storage`` and ``write_id`` (all three), its
        write id on that table is known: :meth:`allocate_write_id` returns it without asking
        the store, and an abort removes the directories of that write id alone. A ``delta_x_y``
        directory the batch's transactions share must not be given to :meth:`record_written`:
        an abort would remove the other transactions' rows with it (an aborted transaction's
        rows stay in the shared files, invisible)."""
        from .errors import InvalidArgumentError
        from .metastore.arguments import as_id

        txn = cls(metastore, as_id(txn_id, "txn_id"), description=description)
        if table_id is not None or storage is not None or write_id is not None:
            if table_id is None or storage is None or write_id is None:
                raise InvalidArgumentError("write_id", "adopt a transaction's write id with table_id, storage and "
                                           "write_id together")
            txn._written[as_id(table_id, "table_id")] = (storage, as_id(write_id, "write_id"), set())
        return txn

    @classmethod
    def resume(cls, ref: TransactionRef) -> "Transaction":
        """The transaction behind ``ref``, in another process (no heartbeat of its own)."""
        return cls(ref.metastore(), ref.txn_id)

    def ref(self) -> TransactionRef:
        """A picklable reference for the driver-side commit process (no password inside)."""
        has_secret = self.metastore.has_password
        if has_secret:
            path = _credentials_file(self.metastore.url, self.txn_id)
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump({"url": self.metastore.connect_url()}, f)
        return TransactionRef(self.txn_id, self.metastore.url, has_secret)

    # --- write ids -------------------------------------------------------------------------
    def allocate_write_id(self, table_id: int, storage: Storage, *, listed: "TableLayout | None" = None,
                          operation: str | None = None) -> int:
        """The transaction's write id on a table (the same one on every call); ``storage`` is
        where its files go, so an abort can remove them.

        A write never writes into a directory that already exists: the table's ACID
        directories, in ``listed`` (a listing the caller took before this call) or listed here,
        must all be of write ids the store handed out. Otherwise the store is behind the
        storage and :class:`~acid_source.errors.StoreBehindStorageError` is raised before any
        write id is allocated or recorded, so an abort removes nothing of the directories
        found."""
        from .layout.ids_on_storage import ids_on_storage, list_ids_on_storage

        self._require_open("allocate a write id in")
        known = self._written.get(table_id)
        if known is not None and known[1] is not None:
            return known[1]  # allocated (and checked) already
        on_storage = list_ids_on_storage(storage) if listed is None else ids_on_storage(listed)
        write_id = self.metastore.allocate_write_id(self.txn_id, table_id, on_storage=on_storage, operation=operation)
        self._written.setdefault(table_id, (storage, write_id, set()))
        return write_id

    def lock(self, table_id: int, operation: str) -> None:
        """The lock ``operation`` needs on the table, for stores that lock (a Hive Metastore:
        Hive's lock types, waited for); nothing for acidorc's own store. Take it before the
        snapshot the operation reads."""
        self._require_open("lock a table in")
        self.metastore.lock(self.txn_id, table_id, operation)

    def record_written(self, table_id: int, directories: Iterable[str], *, storage: Storage | None = None,
                       write_id: int | None = None, no_write_id: bool = False) -> None:
        """Directories this transaction created (removed again if it aborts). A transaction
        resumed in another process learns its table's storage and write id here; a compaction,
        which writes without a write id of its own (its ``_vT`` names carry its txn id), says
        ``no_write_id=True``."""
        if table_id not in self._written:
            if storage is None or (write_id is None and not no_write_id):
                raise TransactionStateError(f"transaction {self.txn_id} has no write id on table {table_id}",
                                            txn_id=self.txn_id, state=self.state)
            self._written[table_id] = (storage, write_id, set())
        self._written[table_id][2].update(directories)

    def committed_data_objects(self, table_id: int) -> set[str]:
        """The data objects (``""`` or partition paths) committed transactions wrote in the table,
        as the store recorded them: what an overwrite must replace, whatever a listing shows."""
        return self.metastore.committed_writes(table_id)[0]

    # --- ending ----------------------------------------------------------------------------
    def set_commit(self, operation: str, touched: Mapping[int, Iterable[str]], *,
                   sink: tuple[str, int] | None = None) -> None:
        """What a context-managed transaction commits on a clean exit (``sink``: see
        :meth:`commit`)."""
        self._pending = (operation, {k: list(v) for k, v in touched.items()}, sink)

    def commit(self, operation: str, touched: Mapping[int, Iterable[str]], *,
               checked_through: int | None = None, sink: tuple[str, int] | None = None) -> "Recheck | None":
        """Commit; on :class:`ConflictError` the store has aborted it and its files are removed.

        When the answer to COMMIT is lost, the store is asked what happened: committed counts
        as success; files are removed only once the store says the transaction is aborted.

        ``checked_through`` (an UPDATE / DELETE / MERGE under the row-level rule) is passed to
        the store: when it refuses the commit, its :class:`Recheck` is returned and the
        transaction stays open (check those commits, then commit again). Otherwise None.

        ``sink=(sink_id, batch_id)`` (a streaming sink's micro-batch) is recorded with the
        commit; a batch committed already makes the store abort this transaction instead:
        :class:`~acid_source.errors.BatchAlreadyCommittedError` (a :class:`ConflictError`), its
        files removed.
        """
        self._require_open("commit")
        crash_point("commit.before_store")
        try:
            extra = {} if sink is None else {"sink": sink}
            recheck = self.metastore.commit(self.txn_id, touched=touched, operation=operation,
                                            checked_through=checked_through, **extra)
            if recheck is not None:
                return recheck  # nothing changed in the store: still open
            crash_point("commit.after_store")
        except ConflictError:
            self._finish(ABORTED)
            raise
        except AcidError as exc:
            outcome = self._outcome()
            if outcome == COMMITTED:
                self._finish(COMMITTED)
                return None
            if outcome == OPEN:
                self.abort(f"commit failed: {exc}")
            elif outcome == ABORTED:
                self._finish(ABORTED)
            raise
        self._finish(COMMITTED)
        return None

    def abort(self, reason: str = "") -> None:
        """Abort and remove what the transaction wrote. If the store cannot be reached, the
        files stay (a later clean-up removes them once the transaction expires)."""
        if self.state != OPEN:
            return
        try:
            self.metastore.abort(self.txn_id, reason)
        except TransactionStateError as exc:
            if exc.state == COMMITTED:  # committed by a call whose answer was lost
                self._finish(COMMITTED)
                raise
        crash_point("abort.after_store")
        self._finish(self._outcome() or ABORTED)

    def _outcome(self) -> str | None:
        """The store's word on this transaction; None when it cannot be reached."""
        try:
            return self.metastore.txn_state(self.txn_id)
        except AcidError:
            return None

    def _finish(self, state: str) -> None:
        self.state = state
        if self.metastore.has_password:  # the password's copy for the commit process
            _credentials_file(self.metastore.url, self.txn_id).unlink(missing_ok=True)
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        if state == ABORTED and self._outcome() == ABORTED:  # the store's word, not ours
            self._remove_files()

    def _remove_files(self) -> None:
        """Every directory of the aborted write ids, including ones a failed task created
        without reporting them."""
        from .write.cleanup import remove_empty_parents, remove_write_id_dirs

        for storage, write_id, directories in self._written.values():
            for directory in sorted(directories):
                storage.remove(directory, recursive=True)
                crash_point("abort.during_removal")
                remove_empty_parents(storage, directory)
            if write_id is not None:
                remove_write_id_dirs(storage, write_id)

    def _require_open(self, doing: str) -> None:
        if self.state != OPEN:
            raise TransactionStateError(f"cannot {doing} transaction {self.txn_id}: it is {self.state}",
                                        txn_id=self.txn_id, state=self.state)

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.state != OPEN:
            return
        if exc_type is not None:
            self.abort(f"{self.description or 'the transaction'} failed: {exc_type.__name__}: {exc}")
            return
        if self._pending is None:
            self.abort("the transaction block ended without anything to commit")
            return
        operation, touched, sink = self._pending
        self.commit(operation, touched, sink=sink)

    def __reduce__(self):
        raise TypeError("a Transaction stays in the process that opened it; pass Transaction.ref() instead")

