"""``AcidScan``: one snapshot of a table, filtered and projected, read engine-free - as batches,
a pyarrow Table, or an Arrow stream other engines (DuckDB, Polars) consume as it is."""

from __future__ import annotations

import atexit
import importlib
import logging
import multiprocessing.util
import os
import queue
import threading
import weakref
from typing import Any, Iterable, Iterator

import pyarrow as pa

from .errors import InvalidArgumentError, SchemaError, UnsupportedOperationError
from .resolve import open_store
from .scan.planner import TableScan
from .scan.reader import read_split
from .scan.resolved import ResolvedTable, SnapshotSpec
from .scan.splits import ROW_ID_COLUMN
from .values import DEFAULT_MAX_SPLIT_BYTES, default_read_lease_seconds, parse_size, parse_timestamp, parse_version

log = logging.getLogger(__name__)


def scan_arguments(versionAsOf: Any, timestampAsOf: Any, includeRowId: Any,
                   maxSplitBytes: Any) -> tuple[SnapshotSpec, int]:
    """``AcidTable.scan``'s snapshot and split size arguments, checked: the snapshot to resolve
    and the split size in bytes."""
    if not isinstance(includeRowId, bool):
        raise InvalidArgumentError("includeRowId", f"expected True or False, got {includeRowId!r}")
    split_bytes = DEFAULT_MAX_SPLIT_BYTES
    if maxSplitBytes is not None:
        if isinstance(maxSplitBytes, bool) or not isinstance(maxSplitBytes, (int, str)):
            raise InvalidArgumentError("maxSplitBytes", f"expected a number of bytes, got {maxSplitBytes!r}")
        split_bytes = parse_size("maxSplitBytes", str(maxSplitBytes))
    if versionAsOf is not None and timestampAsOf is not None:
        raise InvalidArgumentError("timestampAsOf", "give versionAsOf or timestampAsOf, not both")
    if isinstance(versionAsOf, bool):
        raise InvalidArgumentError("versionAsOf", f"expected a write id, got {versionAsOf!r}")
    return SnapshotSpec(
        version_as_of=None if versionAsOf is None else parse_version("versionAsOf", versionAsOf),
        timestamp_as_of=None if timestampAsOf is None else parse_timestamp("timestampAsOf", timestampAsOf),
    ), split_bytes


class AcidScan:
    """One snapshot of a table, optionally filtered and projected. Iterating it reads the
    files; memory stays bounded by a stripe (``toBatches``). From the moment it takes its
    snapshot until it is closed (:meth:`close`, or the end of a ``with`` block) or garbage
    collected, it holds a read lease in the transaction store (registered tables), renewed
    while batches are read: the cleaner keeps the files of its snapshot, however long the scan
    waits before it is read.

    >>> with t.scan(rowFilter="id > 10") as scan:                       # doctest: +SKIP
    ...     first, second = scan.toArrow(), scan.count()  # one snapshot, read twice
    """

    def __init__(self, table: ResolvedTable, rowFilter: str | None, columns: Iterable[str] | None, *,
                 metastoreUrl: str | None = None, includeRowId: bool = False,
                 maxSplitBytes: int = DEFAULT_MAX_SPLIT_BYTES, leaseSeconds: float | None = None):
        self._table = table
        self._metastore_url = metastoreUrl
        self._max_split_bytes = maxSplitBytes
        self._lease_ttl = _lease_seconds(leaseSeconds)
        full = table.schema(includeRowId)
        self._condition = None
        if rowFilter is not None:
            from .expressions import parse_condition

            self._condition = parse_condition(rowFilter, full, argument="rowFilter")
        if columns is None:
            self._columns = list(full.names)
        else:
            if isinstance(columns, str):
                raise InvalidArgumentError("columns", "expected a list of column names, not one string")
            by_lower = {n.lower(): n for n in full.names}
            missing = [c for c in columns if str(c).lower() not in by_lower]
            if missing:
                raise SchemaError(f"{table.location}: no column(s) {missing} (columns: {full.names})")
            self._columns = [by_lower[str(c).lower()] for c in columns]
        needed = set(self._columns) | (set(self._condition.columns) if self._condition else set())
        needed |= set(table.partition_columns)
        self._read_schema = pa.schema([f for f in full if f.name in needed])
        self.schema = pa.schema([full.field(c) for c in self._columns])
        self._lease = self._acquire(self._lease_ttl)
        # released by close(), or once the scan is collected (the finalizer holds the lease, not the scan)
        self._finalizer = weakref.finalize(self, _release_later, self._lease)
        self._finalizer.atexit = False  # at exit, _release_at_exit closes the scans still open
        if self._lease is not None:
            _releaser()
            _OPEN.add(self)

    def close(self) -> None:
        """Release the scan's read lease (the cleaner may then remove files of its snapshot;
        reading the scan again takes a new lease, for the same snapshot, if they are still there)."""
        self._finalizer.detach()
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release()

    def __enter__(self) -> "AcidScan":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def version(self) -> int | None:
        return self._table.version

    def toBatches(self, *, leaseSeconds: float | None = None) -> Iterator[pa.RecordBatch]:
        """The rows, batch by batch, under the scan's read lease (renewed while batches are
        taken). ``leaseSeconds`` (a number of seconds; 0: none) gives this iteration a lease of
        its own besides, from its first batch until it is exhausted or closed, for a reader
        that must outlive the scan's; a scan that was closed takes one so for each iteration
        (the scan's default: ``$ACIDORC_READ_LEASE_SECONDS`` or 3600)."""
        own = None
        if leaseSeconds is not None:
            own = self._acquire(_lease_seconds(leaseSeconds))
        elif self._lease is None:
            own = self._acquire(self._lease_ttl)
        leases = [lease for lease in (self._lease, own) if lease is not None]
        try:
            # lists the directories (leased); the reader applies the filter, partitions it
            # rules out are not read at all
            scan = TableScan(self._table, row_filter=self._condition,
                             include_row_id=ROW_ID_COLUMN in self._read_schema.names,
                             max_split_bytes=self._max_split_bytes)
            ctx, splits = scan.plan(self._read_schema)
            for split in splits:
                for batch in read_split(split, ctx):
                    for lease in leases:
                        lease.keep_alive()
                    yield batch.select(self._columns)
        finally:
            if own is not None:
                own.release()

    def _acquire(self, ttl: float):
        """A read lease on the scan's snapshot (acquired now), or None: a table the store does
        not know (no cleaner runs on it), or a ttl of 0."""
        if ttl == 0 or not self._table.registered:
            return None
        from .metastore.leases import ReadLease, default_holder

        store = open_store(self._metastore_url)
        assert store is not None  # the table is registered, so the store exists
        holder = default_holder(f"AcidScan of {self._table.location}")
        return ReadLease(store, self._table.info.table_id, (self._table.write_ids, self._table.txns), ttl,
                         holder).acquire()

    def toArrow(self) -> pa.Table:
        return pa.Table.from_batches(list(self.toBatches()), schema=self.schema)

    def count(self) -> int:
        return sum(b.num_rows for b in self.toBatches())

    # --- handing the rows to other engines -----------------------------------------------------
    def toBatchReader(self, *, leaseSeconds: float | None = None) -> pa.RecordBatchReader:
        """The rows as a ``pyarrow.RecordBatchReader``, read as it is consumed (the lease of
        :meth:`toBatches` is held meanwhile)."""
        return pa.RecordBatchReader.from_batches(self.schema, self.toBatches(leaseSeconds=leaseSeconds))

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream interface: engines that read Arrow streams take a scan as
        it is, batch by batch, without copies - ``duckdb.sql("select ... from scan")``,
        ``polars.DataFrame(scan)``, ``pyarrow.RecordBatchReader.from_stream(scan)``. Each use
        reads the snapshot again; the read lease is held while the stream is consumed."""
        return self.toBatchReader().__arrow_c_stream__(requested_schema)

    def toPandas(self) -> Any:
        """The rows as a pandas DataFrame."""
        return self.toArrow().to_pandas()

    def toPolars(self) -> Any:
        """The rows as a polars DataFrame (``pip install acidorc[polars]``)."""
        polars = _optional("polars", "polars")
        return polars.from_arrow(self.toArrow())

    def toDuckDB(self, connection: Any = None) -> Any:
        """The rows as a DuckDB relation, on ``connection`` or DuckDB's default one
        (``pip install acidorc[duckdb]``); query it with SQL or relational methods."""
        duckdb = _optional("duckdb", "duckdb")
        return (connection if connection is not None else duckdb).from_arrow(self.toArrow())


def _lease_seconds(seconds: Any) -> float:
    """A ``leaseSeconds`` argument, checked; None is the default."""
    if seconds is None:
        return default_read_lease_seconds()
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < float("inf"):
        raise InvalidArgumentError("leaseSeconds", f"expected a number of seconds >= 0, got {seconds!r}")
    return float(seconds)


# Leases of scans collected without close(), released by a thread of their own: a finalizer
# runs wherever the garbage collector does - perhaps inside a store transaction of this very
# thread, which a release made there would wait for forever (SQLite's write lock).
_UNRELEASED: queue.SimpleQueue = queue.SimpleQueue()
_RELEASER_LOCK = threading.Lock()
_RELEASER: dict[int, threading.Thread] = {}  # pid -> its releasing thread


def _release_later(lease) -> None:
    """A scan's finalizer: hand its lease to the releasing thread (``SimpleQueue.put`` is safe
    in a finalizer). At interpreter exit it may never run: the lease then expires by itself."""
    if lease is not None:
        _UNRELEASED.put(lease)


def _releaser() -> None:
    """Start this process's releasing thread, once (a forked child starts its own)."""
    with _RELEASER_LOCK:
        thread = _RELEASER.get(os.getpid())
        if thread is None or not thread.is_alive():
            thread = threading.Thread(target=_release_queued, name="acidorc-lease-releaser", daemon=True)
            _RELEASER[os.getpid()] = thread
            thread.start()
            # a multiprocessing child ends with os._exit, skipping atexit, but runs the exit
            # finalizers registered in it (a child clears those it inherited)
            multiprocessing.util.Finalize(None, _release_at_exit, exitpriority=10)


_STOP = object()


def _release_queued() -> None:
    while True:
        lease = _UNRELEASED.get()
        if lease is _STOP:
            return
        _release_one(lease)


def _release_one(lease) -> None:
    try:
        lease.release()
    except Exception:  # noqa: BLE001 - a lease not released expires by itself; the releasing goes on
        log.warning("a scan's read lease was not released; it expires by itself", exc_info=True)


_OPEN: weakref.WeakSet = weakref.WeakSet()  # scans holding a lease, for _release_at_exit


@atexit.register
def _release_at_exit() -> None:  # also at the end of a multiprocessing child (see _releaser)
    """At interpreter exit: close the scans still open and release what the releasing thread
    has not, so that a process that reads and ends leaves no lease behind."""
    for scan in list(_OPEN):
        try:
            scan.close()
        except Exception:  # noqa: BLE001 - a lease not released expires by itself
            log.warning("a scan's read lease was not released; it expires by itself", exc_info=True)
    thread = _RELEASER.get(os.getpid())
    if thread is not None and thread.is_alive():  # let it finish what it took, then stop
        _UNRELEASED.put(_STOP)
        thread.join(timeout=30)
    while True:
        try:
            lease = _UNRELEASED.get_nowait()
        except queue.Empty:
            return
        if lease is not _STOP:
            _release_one(lease)



def _optional(module: str, extra: str) -> Any:
    """An engine acidorc hands rows to, imported when asked for: a typed error naming the extra
    that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UnsupportedOperationError(
            f"reading into {module}", f"{module} is not installed: pip install 'acidorc[{extra}]'") from None
