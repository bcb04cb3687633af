"""The transaction store's contract: what every store does, whatever keeps its records.

:class:`TransactionStore` is what the rest of acidorc may ask of a store, made of one protocol
per concern (:class:`StoreConnection`, :class:`Catalog`, :class:`Transactions`,
:class:`Snapshots`, :class:`Leases`, :class:`Sinks`). Two stores implement it and declare so by
subclassing it, which makes mypy check each of their signatures against the one here:
:class:`~acid_source.metastore.sql.Metastore` (SQL: SQLite, PostgreSQL, ...) is the reference,
and :class:`~acid_source.metastore.hive.HiveMetastore` answers with the Hive Metastore, raising
:class:`~acid_source.errors.UnsupportedOperationError` for what the HMS cannot keep (commit
history, the row-level rule, a sink's micro-batch marks), as :attr:`keeps_history` tells.

Every verb takes ids as integers and raises :class:`~acid_source.errors.InvalidArgumentError`
naming the argument for bad input, :class:`~acid_source.errors.TableNotRegisteredError` for a
table id the store does not know, and :class:`~acid_source.errors.MetastoreError` (or a
subclass) when the store cannot be reached or refuses. ``tests/metastore/test_store_contract.py``
runs the behaviour every store shares on SQLite, PostgreSQL and a Hive 4.1 metastore.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pyarrow as pa

from ..layout.writeids import ValidTxnList, ValidWriteIdList
from .leases import CleanerView, Lease
from .records import AdoptedHistory, Recheck, Snapshot
from .tableinfo import TableInfo

if TYPE_CHECKING:
    from ..layout.ids_on_storage import IdsOnStorage

_Self = TypeVar("_Self")


class StoreConnection(Protocol):
    """Where the store is and how it is held: no live connection until first use, none after
    pickling (Spark ships stores to its workers), reconnected on demand after :meth:`close`."""

    #: Returns the time (UTC epoch seconds) the store stamps on what it records.
    clock: Callable[[], float]
    #: Whether the store records the commit history (history, time travel, the change feed).
    keeps_history: bool

    @property
    def url(self) -> str:
        """The store's URL with any password hidden: for messages and logs."""
        ...

    @property
    def has_password(self) -> bool:
        """Whether :meth:`connect_url` holds a password that :attr:`url` hides."""
        ...

    def connect_url(self) -> str:
        """The full URL, password included: only for another process of the same user."""
        ...

    def close(self) -> None:
        """Drop live connections; the object stays usable and reconnects on demand."""
        ...

    def __enter__(self: _Self) -> _Self:
        """The store itself, closed by ``__exit__``."""
        ...

    def __exit__(self, *exc: Any) -> None:
        """:meth:`close`."""
        ...

    def txn_timeout_seconds(self) -> float | None:
        """How soon the store aborts a silent transaction by itself (None: never), so heartbeats come sooner."""
        ...


class Catalog(Protocol):
    """Tables: registered, found, listed and dropped (metadata only: no file is touched)."""

    def create_table(self, location: str | os.PathLike, schema: pa.Schema, *, name: str | None = None,
                     partition_columns: Iterable[str] = (), bucket_columns: Iterable[str] = (),
                     num_buckets: int = 0, insert_only: bool = False, compression: str = "zlib",
                     bucketing_version: int = 2, properties: Mapping[str, str] | None = None,
                     if_not_exists: bool = False, adopted: AdoptedHistory | None = None) -> TableInfo:
        """The new table; TableExistsError when its location or name is taken (the existing one with if_not_exists)."""
        ...

    def new_table_place(self, path: str, name: str | None) -> tuple[str, str | None]:
        """Where a write that creates a table puts it, and its name (the store may choose either)."""
        ...

    def get_table(self, location: str | os.PathLike | None = None, *, name: str | None = None,
                  table_id: int | None = None) -> TableInfo:
        """The table matching everything given; TableNotRegisteredError when there is none."""
        ...

    def find_table(self, location: str | os.PathLike) -> TableInfo | None:
        """The table registered at ``location``, or None."""
        ...

    def list_tables(self) -> list[TableInfo]:
        """Every table of the store acidorc can read and write."""
        ...

    def drop_table(self, location: str | os.PathLike | None = None, *, name: str | None = None,
                   table_id: int | None = None, if_exists: bool = False) -> TableInfo | None:
        """Forget the table and return it (None: absent and ``if_exists``); its files stay."""
        ...


class Transactions(Protocol):
    """A transaction's life: open, write ids, heartbeats, commit (with the conflict rules) or abort."""

    def open_transaction(self, *, user: str = "", description: str = "") -> int:
        """A new open transaction's id; ids increase and are never reused."""
        ...

    def open_transaction_batch(self, table_id: int, count: int, *, on_storage: IdsOnStorage | None = None,
                               user: str = "", description: str = "") -> list[tuple[int, int]]:
        """``count`` open transactions with consecutive write ids on the table, ``[(txn_id, write_id)]`` ascending."""
        ...

    def allocate_write_id(self, txn_id: int, table_id: int, *, on_storage: IdsOnStorage | None = None,
                          operation: str | None = None) -> int:
        """The transaction's write id on the table (the same on later calls); StoreBehindStorageError before any."""
        ...

    def heartbeat(self, txn_id: int) -> None:
        """Mark the transaction alive; TransactionStateError unless it is open."""
        ...

    def heartbeat_many(self, txn_ids: Iterable[int]) -> set[int]:
        """Mark all of ``txn_ids`` alive; returns those no longer open instead of raising."""
        ...

    def lock(self, txn_id: int, table_id: int, operation: str) -> None:
        """Take the lock ``operation`` needs on the table, if the store locks (LockTimeoutError)."""
        ...

    def refuse_if_behind(self, table_id: int, on_storage: IdsOnStorage) -> None:
        """StoreBehindStorageError if a listing holds an id the store never handed out."""
        ...

    def commit(self, txn_id: int, *, touched: Mapping[int, Iterable[str]] | None = None,
               operation: str = "insert", checked_through: int | None = None,
               sink: tuple[str, int] | None = None) -> Recheck | None:
        """Make its write ids valid at once; ConflictError (it is aborted) on a conflict, Recheck under the row rule."""
        ...

    def abort(self, txn_id: int, reason: str = "") -> None:
        """Abort: its write ids stay invalid for good; again does nothing, a committed one raises."""
        ...

    def abort_expired(self, timeout_seconds: float, *, table_id: int | None = None) -> list[int]:
        """Abort the open transactions silent for longer than ``timeout_seconds``; returns their ids."""
        ...

    def txn_state(self, txn_id: int) -> str:
        """``"open"``, ``"committed"`` or ``"aborted"``: how a commit of unknown outcome is settled."""
        ...

    def txn_info(self, txn_id: int) -> dict:
        """What the store recorded about the transaction, at least ``txn_id`` and ``state``."""
        ...

    def commits_since(self, table_id: int, partitions: Iterable[str], after_seq: int, *,
                      operations: Iterable[str] | None = None) -> tuple[int, list[dict]]:
        """The commit sequence number now and the commits after ``after_seq`` on ``partitions`` (the row rule)."""
        ...


class Snapshots(Protocol):
    """What a reader may see, now or as of a past commit, and the table's commit records."""

    def snapshot(self, table_id: int, *, for_txn: int | None = None) -> Snapshot:
        """The table's write ids and the transaction list, read at one instant (as ``for_txn`` sees them)."""
        ...

    def valid_write_ids(self, table_id: int, *, for_txn: int | None = None) -> ValidWriteIdList:
        """The table's write ids now: open and aborted ones are exceptions (``for_txn``'s own is valid)."""
        ...

    def valid_txns(self, *, for_txn: int | None = None) -> ValidTxnList:
        """The transaction list now: which compaction outputs (``_vN``) are visible."""
        ...

    def snapshot_as_of(self, table_id: int, write_id: int) -> Snapshot:
        """The snapshot right after the commit of ``write_id``; VersionNotFoundError if it is not committed."""
        ...

    def write_id_as_of_time(self, table_id: int, timestamp: float) -> int:
        """The write id of the table's last commit at or before ``timestamp``; VersionNotFoundError before the first."""
        ...

    def latest_version(self, table_id: int, write_ids: ValidWriteIdList) -> int:
        """The table's newest version (write id) in the snapshot ``write_ids`` was read with; 0 before any."""
        ...

    def write_ids_of(self, table_id: int, state: str) -> list[int]:
        """The table's write ids whose transaction is in ``state`` (one of TXN_STATES), ascending."""
        ...

    def committed_writes(self, table_id: int, *, above: int = 0,
                         partitions: Iterable[str] | None = None) -> tuple[set[str], dict[str, list[int]]]:
        """The data objects committed transactions touched, and per object the write ids above ``above`` there."""
        ...

    def history(self, table_id: int, limit: int | None = None) -> list[dict]:
        """The committed transactions that wrote the table, newest first."""
        ...


class Leases(Protocol):
    """Reader leases on snapshots, and the cleaner's view of what no reader needs any more."""

    def acquire_lease(self, table_id: int, write_ids: ValidWriteIdList | str, txns: ValidTxnList | str,
                      ttl_seconds: float, holder: str = "") -> Lease:
        """A new lease on the snapshot, live for ``ttl_seconds`` after now and after each renewal."""
        ...

    def renew_lease(self, lease_id: str) -> Lease | None:
        """The lease extended by its ttl from now; None once it is unknown or expired (never revived)."""
        ...

    def release_lease(self, lease_id: str) -> None:
        """End the lease; an unknown or expired one does nothing."""
        ...

    def live_leases(self, table_id: int) -> list[Lease]:
        """The table's leases the store records as live, oldest first."""
        ...

    def purge_expired_leases(self) -> int:
        """Delete the expired leases; returns how many."""
        ...

    def cleaner_view(self, table_id: int, *, retention_seconds: float, txn_timeout_seconds: float) -> CleanerView:
        """Everything the cleaner decides with, read at one instant: latest and floor snapshots, leases, aborted ids."""
        ...


class Sinks(Protocol):
    """Streaming sinks' micro-batches, recorded by ``commit(..., sink=...)`` for exactly-once writes."""

    def sink_batch(self, sink_id: str, batch_id: int) -> int | None:
        """The transaction that committed the sink's batch ``batch_id``, or None."""
        ...

    def last_sink_batch(self, sink_id: str) -> int | None:
        """The sink's highest committed batch id, or None."""
        ...


class TransactionStore(StoreConnection, Catalog, Transactions, Snapshots, Leases, Sinks, Protocol):
    """A transaction store: tables, transactions and write ids, snapshots, leases and sinks'
    batches. Annotate with it wherever any store will do."""


__all__ = ["Catalog", "Leases", "Sinks", "Snapshots", "StoreConnection", "TransactionStore", "Transactions"]
