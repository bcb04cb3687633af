"""Hive-style streaming ingest: transaction batches writing into growing bucket files.

The model of Hive's ``HiveStreamingConnection`` (Flume, NiFi and Storm users know it), for
Python producers of Arrow batches. A *transaction batch* takes ``transactionsPerBatch``
consecutive write ids at once; all of them write into **one** ``delta_x_y`` directory per
partition, one growing ``bucket_N`` file per bucket (HIVE_ACID_FORMAT.md 3.4, 4.5). A commit
is, in this order:

1. every bucket file the transaction wrote gets an intermediate ORC footer covering exactly
   the rows written so far, fsynced, and its length appended to ``bucket_N_flush_length``
   (fsynced) - the side file readers honour;
2. the transaction commits in the store, which makes its write id valid.

So a producer killed at any moment leaves every committed transaction readable (its rows are
below a recorded length) and nothing else visible: rows of the open transaction lie beyond the
last length or under a write id that is not valid (it times out and is aborted). An aborted
transaction's rows are left out of every later footer. Closing the batch (after its last
transaction ended) writes the final footers and removes the side files; the next
``beginTransaction`` opens the next batch. Heartbeats keep every open write id of the batch
alive; compaction never takes a directory holding an open write id (its ``N`` stays below the
lowest open write id) and compacts the directory once the batch is closed. The post-commit step
of every write (the automatic compaction of the data objects written) runs once per batch,
when it closes.

Object stores cannot append to a file, so there a batch holds one transaction
(``transactionsPerBatch=1``): its file is written whole and put in place before the commit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from typing import IO, Any, Iterator

import pyarrow as pa

from ..errors import (
    AcidError,
    InvalidArgumentError,
    SchemaError,
    StorageError,
    TransactionStateError,
    UnsupportedOperationError,
)
from ..heartbeat import heartbeat_interval
from ..layout import bucket_codec
from ..layout.ids_on_storage import list_ids_on_storage
from ..layout.names import ACID_VERSION_FILE, FLUSH_LENGTH_SUFFIX, bucket_file_name, delta_dir_name
from ..maintenance.auto_compact import compact_after_write
from ..orc.growing import GrowingEventFile
from ..resolve import registered_table
from ..storage import Storage, option_pairs
from ..txn import Transaction
from ..write.task import RowRouter, check_data_schema, check_unique_columns
from ..writes import existing_partition_dirs_of, plan_for_table, static_partition_of, write_schema

#: Hive's ``HiveStreamingConnection.TxnState`` names, for :attr:`StreamingConnection.state`.
INACTIVE, OPEN, COMMITTED, ABORTED = "INACTIVE", "OPEN", "COMMITTED", "ABORTED"


@dataclass
class _BucketFile:
    """One growing file of the batch: where it is, its writer, and (object stores) the local
    file it is written to before it is put in place."""

    directory: str
    path: str
    writer: GrowingEventFile
    handles: list[IO[bytes]]
    local_path: str | None = None
    dirty: bool = False  # rows since the last footer


@dataclass
class _Batch:
    """The write ids of one transaction batch and the files they share."""

    ids: list[tuple[int, int]]  # (txn id, write id), ascending
    transactions: dict[int, Transaction]
    next: int = 0  # index of the next transaction to begin
    files: dict[tuple[str, int], _BucketFile] = field(default_factory=dict)
    ended: set[int] = field(default_factory=set)  # txn ids committed or aborted
    committed_parts: set[str] = field(default_factory=set)  # data objects committed transactions wrote

    @property
    def min_write_id(self) -> int:
        return self.ids[0][1]

    @property
    def max_write_id(self) -> int:
        return self.ids[-1][1]


class StreamingConnection:
    """A streaming connection to one ACID table (from :meth:`AcidTable.streamingConnection
    <acid_source.table.AcidTable.streamingConnection>`): ``beginTransaction()``,
    ``write(batch)`` any number of times, then ``commitTransaction()`` or
    ``abortTransaction()``; again and again; ``close()`` at the end (or use it as a context
    manager, which aborts an open transaction and closes).

    >>> with AcidTable.load(path).streamingConnection(transactionsPerBatch=10) as conn:  # doctest: +SKIP
    ...     for batch in source:
    ...         conn.beginTransaction()
    ...         conn.write(batch)           # a pyarrow RecordBatch or Table of the table's columns
    ...         conn.commitTransaction()    # visible to every reader from here on

    ``partition`` (``{"day": "2026-11-27"}`` or ``"day=2026-11-27"`` given to
    ``streamingConnection``; ``(column, value)`` pairs here) sends every row to one partition,
    and the batches then lack the partition columns; without it, rows are routed by their
    partition values (dynamic partitioning: one growing file per partition and bucket).
    """

    def __init__(self, location: str, *, metastoreUrl: str | None = None, storageOptions: Any = (),
                 transactionsPerBatch: int = 10, partition: tuple[tuple[str, str | None], ...] | None = None):
        if (isinstance(transactionsPerBatch, bool) or not isinstance(transactionsPerBatch, int)
                or transactionsPerBatch < 1):
            raise InvalidArgumentError("transactionsPerBatch",
                                       f"expected an integer >= 1, got {transactionsPerBatch!r}")
        self._metastore, self._table = registered_table(
            str(location), metastoreUrl, "; streaming ingest writes only tables whose write ids acidorc allocates "
            "(create one with acid_source.create_table)")
        if self._table.insert_only:
            raise UnsupportedOperationError(
                "streaming ingest", f"{self._table.location} is an insert-only table; Hive's streaming ingest "
                "(intermediate footers, _flush_length) is defined for full ACID tables")
        self._storage_options = option_pairs(storageOptions, "storageOptions")
        self._storage = Storage(self._table.location, self._storage_options)
        if transactionsPerBatch > 1 and not self._storage.is_local:
            raise InvalidArgumentError(
                "transactionsPerBatch", f"{self._storage.display()} is on an object store, which cannot append to "
                "a file: a transaction batch there holds one transaction (transactionsPerBatch=1)")
        self.transactionsPerBatch = transactionsPerBatch
        static = static_partition_of(self._table, partition)
        self.schema = write_schema(self._table, static)
        self._static = static
        self._batch: _Batch | None = None
        self._current: tuple[int, int] | None = None  # (txn id, write id) of the open transaction
        self._touched: set[tuple[str, int]] = set()  # files the open transaction wrote
        self._checked: set[pa.Schema] = set()
        self._state = INACTIVE
        self._closed = False
        self._lock = threading.RLock()
        self._heartbeat: _BatchHeartbeat | None = None
        self._tmp: str | None = None
        self.stats = {"transactions": 0, "committed": 0, "aborted": 0, "rows": 0, "batches": 0,
                      "autoCompactions": 0}

    # --- what it is ----------------------------------------------------------------------------
    @property
    def location(self) -> str:
        return self._table.location

    @property
    def state(self) -> str:
        """Hive's names: ``INACTIVE`` (no transaction begun yet), ``OPEN``, ``COMMITTED``,
        ``ABORTED`` (the last transaction's outcome)."""
        return self._state

    @property
    def currentTransactionId(self) -> int | None:
        return None if self._current is None else self._current[0]

    @property
    def currentWriteId(self) -> int | None:
        return None if self._current is None else self._current[1]

    @property
    def remainingTransactions(self) -> int:
        """Transactions of the open batch not begun yet (0 without a batch)."""
        return 0 if self._batch is None else len(self._batch.ids) - self._batch.next

    # --- the transaction cycle ---------------------------------------------------------------
    def beginTransaction(self) -> int:
        """Begin the next transaction of the batch (opening a new batch when this one is used
        up); returns its write id."""
        with self._lock:
            self._require_usable("begin a transaction on")
            if self._current is not None:
                raise TransactionStateError(
                    f"{self.location}: transaction {self._current[0]} is still open; commit or abort it first",
                    txn_id=self._current[0], state="open")
            if self._batch is not None and self._batch.next >= len(self._batch.ids):
                self._close_batch()
            if self._batch is None:
                self._open_batch()
            batch = self._batch
            assert batch is not None
            txn_id, write_id = batch.ids[batch.next]
            batch.next += 1
            try:
                batch.transactions[txn_id].lock(self._table.table_id, "insert")
            except BaseException:
                self._end(txn_id, committed=False, reason="could not lock the table")
                raise
            self._current = (txn_id, write_id)
            self._touched = set()
            self._state = OPEN
            self.stats["transactions"] += 1
            return write_id

    def write(self, data: pa.RecordBatch | pa.Table) -> None:
        """Rows of the open transaction: a pyarrow RecordBatch or Table with the table's columns
        (without the partition columns when the connection has a static partition)."""
        with self._lock:
            current = self._require_transaction("write to")
            if isinstance(data, pa.Table):
                for part in data.to_batches():
                    self.write(part)
                return
            if not isinstance(data, pa.RecordBatch):
                raise InvalidArgumentError("data",
                                           f"expected a pyarrow RecordBatch or Table, got {type(data).__name__}")
            if data.schema not in self._checked:
                check_unique_columns(data.schema)
                check_data_schema(self.location, self.schema, data.schema)
                self._checked.add(data.schema)
            with self._typed_errors("write rows"):
                for part, bucket, rows in self._router.route(data):
                    entry = self._file(part, bucket)
                    entry.writer.write(current[1], rows)
                    entry.dirty = True
                    self._touched.add((part, bucket))
                    self.stats["rows"] += rows.num_rows

    def commitTransaction(self) -> None:
        """Make the open transaction's rows visible: footers and flush lengths first, then the
        commit in the store. On an error the transaction is aborted and its rows stay invisible."""
        with self._lock:
            txn_id, write_id = self._require_transaction("commit")
            batch = self._batch
            assert batch is not None
            try:
                with self._typed_errors("flush its files"):
                    for key in sorted(self._touched):
                        self._flush(batch.files[key])
                touched = sorted({part for part, _ in self._touched})
                batch.transactions[txn_id].commit("insert", {self._table.table_id: touched})
            except BaseException as exc:
                self._abort_current(f"commit failed: {type(exc).__name__}: {exc}")
                raise
            self._end(txn_id, committed=True)
            batch.committed_parts.update(touched)
            self._current = None
            self._state = COMMITTED
            self.stats["committed"] += 1
            if batch.next >= len(batch.ids):
                self._close_batch()

    def abortTransaction(self) -> None:
        """Abort the open transaction: its rows never become visible."""
        with self._lock:
            self._require_transaction("abort")
            self._abort_current("aborted by the producer")
            batch = self._batch
            if batch is not None and batch.next >= len(batch.ids):
                self._close_batch()

    def close(self) -> None:
        """Abort an open transaction and the batch's unused ones, finish every file (final
        footer, side files removed). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._current is not None:
                    self._abort_current("the streaming connection was closed")
                if self._batch is not None:
                    self._close_batch()
            finally:
                self._stop_heartbeat()
                if self._tmp is not None:
                    shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> "StreamingConnection":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"StreamingConnection({self.location!r}, transactionsPerBatch={self.transactionsPerBatch}, "
                f"state={self._state})")

    # --- batches -------------------------------------------------------------------------------
    def _open_batch(self) -> None:
        """Open ``transactionsPerBatch`` transactions with consecutive write ids; the plan and
        the partition directories are taken anew for every batch."""
        ids = self._metastore.open_transaction_batch(
            self._table.table_id, self.transactionsPerBatch, on_storage=list_ids_on_storage(self._storage),
            description=f"streaming ingest into {self.location}")
        # an abort removes what its write id alone wrote (a one-transaction batch's directory);
        # a directory the batch's transactions share stays, holding the aborted rows invisible
        transactions = {txn_id: Transaction.adopt(self._metastore, txn_id,
                                                  description=f"streaming ingest into {self.location}",
                                                  table_id=self._table.table_id, storage=self._storage,
                                                  write_id=write_id)
                        for txn_id, write_id in ids}
        batch = _Batch(ids=list(ids), transactions=transactions)
        try:
            partition_dirs = existing_partition_dirs_of(self._metastore, self._table, self._storage)
        except BaseException:
            for txn in transactions.values():
                txn.abort("could not start the streaming batch")
            raise
        plan = plan_for_table(self._table, self._storage, ids[0][1], static_partition=self._static,
                              partition_dirs=partition_dirs)
        self._plan = plan
        self._router = RowRouter(plan)
        self._batch = batch
        self.stats["batches"] += 1
        self._heartbeat = _BatchHeartbeat(self._metastore, [t for t, _ in ids]).start()

    def _close_batch(self) -> None:
        """Abort the transactions never begun, finish every file, remove the side files."""
        batch = self._batch
        if batch is None:
            return
        for txn_id, _ in batch.ids[batch.next:]:
            self._end(txn_id, committed=False, reason="the streaming batch was closed before it was used")
        batch.next = len(batch.ids)
        self._stop_heartbeat()
        self._batch = None
        with self._typed_errors("finish its files"):
            for entry in batch.files.values():
                self._finish(entry, batch)
        if batch.committed_parts:  # the post-commit step of every write, once per batch
            done = compact_after_write(self.location, self._metastore, batch.committed_parts,
                                       storage_options=self._storage_options)
            compacted = [e for e in done.get("autoCompaction", ()) if e["status"] == "compacted"]
            self.stats["autoCompactions"] += len(compacted)

    def _end(self, txn_id: int, *, committed: bool, reason: str = "") -> None:
        batch = self._batch
        assert batch is not None
        if not committed:
            batch.transactions[txn_id].abort(reason)
        batch.ended.add(txn_id)
        if self._heartbeat is not None:
            self._heartbeat.forget(txn_id)

    def _abort_current(self, reason: str) -> None:
        assert self._current is not None and self._batch is not None
        txn_id, write_id = self._current
        batch = self._batch
        try:
            for key in self._touched:
                batch.files[key].writer.discard(write_id)
        finally:
            self._current = None
            self._state = ABORTED
            self.stats["aborted"] += 1
            self._end(txn_id, committed=False, reason=reason)

    # --- files ---------------------------------------------------------------------------------
    def _file(self, part: str, bucket: int) -> _BucketFile:
        batch = self._batch
        assert batch is not None
        key = (part, bucket)
        entry = batch.files.get(key)
        if entry is not None:
            return entry
        storage = self._storage
        parent = storage.join(storage.root, part) if part else storage.root
        directory = storage.join(parent, delta_dir_name(batch.min_write_id, batch.max_write_id))
        storage.check_inside_root(directory)  # a planted link must not take rows elsewhere
        storage.make_dirs(directory)
        storage.write_if_absent(storage.join(directory, ACID_VERSION_FILE), b"2")
        writer_id = bucket if self._plan.bucketed else 0
        path = storage.join(directory, bucket_file_name(writer_id))
        prop = bucket_codec.encode_v1(writer_id, 0)
        streamed = batch.min_write_id != batch.max_write_id  # Hive: a side file only then
        local_path = None
        if storage.is_local:
            data = open(path, "xb")
            side = open(path + FLUSH_LENGTH_SUFFIX, "xb") if streamed else None
        else:  # one transaction: written locally, put in place before the commit
            if self._tmp is None:
                self._tmp = tempfile.mkdtemp(prefix="acidorc-stream-")
            local_path = os.path.join(self._tmp, f"{len(batch.files)}-{writer_id}.orc")
            data, side = open(local_path, "xb"), None
        handles: list[IO[bytes]] = [h for h in (data, side) if h is not None]
        writer = GrowingEventFile(data, side, self._plan.data_schema, prop, compression=self._plan.compression,
                                  path=storage.display(path))
        entry = batch.files[key] = _BucketFile(directory, path, writer, handles, local_path)
        return entry

    def _flush(self, entry: _BucketFile) -> None:
        entry.writer.flush()
        entry.dirty = False
        if entry.local_path is not None:
            entry.handles[0].flush()
            self._storage.put_file(entry.local_path, entry.path)

    def _finish(self, entry: _BucketFile, batch: _Batch) -> None:
        """The final footer; then the side file goes (readers take the whole file from here)."""
        if entry.local_path is None or entry.dirty:
            entry.writer.close()
        for handle in entry.handles:
            handle.close()
        if entry.local_path is None and batch.min_write_id != batch.max_write_id:
            self._storage.remove(entry.path + FLUSH_LENGTH_SUFFIX)

    # --- helpers -------------------------------------------------------------------------------
    def _require_usable(self, doing: str) -> None:
        if self._closed:
            raise TransactionStateError(f"cannot {doing} the streaming connection to {self.location}: it is closed",
                                        state="closed")

    def _require_transaction(self, doing: str) -> tuple[int, int]:
        self._require_usable(doing)
        if self._current is None:
            raise TransactionStateError(f"cannot {doing} the streaming connection to {self.location}: no transaction "
                                        "is open (call beginTransaction() first)", state=self._state.lower())
        return self._current

    def _stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None

    def _typed_errors(self, doing: str):
        return _typed_errors(self.location, doing, self._current)


@contextlib.contextmanager
def _typed_errors(location: str, doing: str, current: tuple[int, int] | None) -> Iterator[None]:
    """A raw error of pyarrow or the OS leaving the connection is a bug: name the table."""
    try:
        yield
    except AcidError:
        raise
    except OSError as exc:
        where = f"{location}: write id {current[1]}" if current else location
        raise StorageError(location, f"{where} could not {doing}: {exc}") from exc
    except (pa.ArrowException, ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        where = f"{location}: write id {current[1]}" if current else location
        raise SchemaError(f"{where} could not {doing}: {type(exc).__name__}: {exc}") from exc


class _BatchHeartbeat:
    """Keeps every open transaction of a batch alive with one call per interval."""

    def __init__(self, metastore, txn_ids: list[int]):
        self._metastore = metastore
        self._ids = set(txn_ids)
        self._interval = heartbeat_interval(metastore)
        self._stop = threading.Event()
        self._guard = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="acidorc-stream-heartbeat", daemon=True)

    def start(self) -> "_BatchHeartbeat":
        self._thread.start()
        return self

    def forget(self, txn_id: int) -> None:
        with self._guard:
            self._ids.discard(txn_id)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            with self._guard:
                ids = sorted(self._ids)
            if not ids:
                return
            try:
                gone = self._metastore.heartbeat_many(ids)
            except AcidError:
                continue  # the store is briefly unreachable: try again next interval
            with self._guard:
                self._ids -= set(gone)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
