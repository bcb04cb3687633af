"""A Hive Metastore as acidorc's transaction store: the verbs of the contract
(:class:`~acid_source.metastore.contract.TransactionStore`), answered by the HMS over thrift, so
Hive, Trino, Impala and acidorc share one set of transactions, write ids and locks. The class
is composed of one mixin per concern (``catalog``, ``transactions``, ``snapshots``, ``leases``,
``sinks`` over ``base``), as :class:`~acid_source.metastore.sql.Metastore` is.

What maps one to one onto Hive: tables (``db.table``, the location from ``sd.location``, the
layout from the table's storage descriptor and properties); transactions (``open_txns``,
``allocate_table_write_ids``, ``heartbeat``, ``commit_txn``, ``abort_txn``); snapshots
(``get_open_txns`` + ``get_valid_write_ids``, as Hive's driver builds them); locks (taken when a
write id is allocated, of the type Hive's ``DbTxnManager`` takes for the operation); the
write-set check (a DML records the partitions it changed with ``add_dynamic_partitions``, so the
HMS fails the later of two conflicting committers, whichever engine they are); and partitions
(registered with ``add_partitions`` before the commit that creates them, as Hive's MoveTask does).

What the HMS does not keep, and so this store does not offer: the commit history (time travel,
``history()``), the row-level conflict rule (Hive's partition-level rule applies), and the
proof that a listing holds every committed write id (``committed_writes``). A read lease is a
transaction the reader holds open, which is how Hive's own readers keep the cleaner away.
"""

from __future__ import annotations

from typing import Any

from ..contract import TransactionStore
from .leases import LeasesMixin


class HiveMetastore(LeasesMixin, TransactionStore):
    """Tables, transactions and write ids in a Hive Metastore (``thrift://host:9083``; several
    URIs separated by commas for a highly available deployment).

    ``lock_timeout`` (also ``?lockTimeout=`` in the URL): how long a write waits for a Hive
    lock before :class:`~acid_source.errors.LockTimeoutError`. ``transport``: how bytes reach the server
    (see :mod:`.connection`; the place for SASL). The object holds no live connection until
    first used and drops it when pickled.

    >>> store = HiveMetastore("thrift://metastore:9083")            # doctest: +SKIP
    >>> store.get_table(name="sales.orders").location                 # doctest: +SKIP
    'hdfs://nn/warehouse/sales.db/orders'
    """

    #: The HMS keeps no commit history (time travel, history()).
    keeps_history = False

    @classmethod
    def existing(cls, url: str, **kwargs: Any) -> "HiveMetastore":
        """A store for readers: the HMS is reached on first use (MetastoreUnreachableError)."""
        return cls(url, create=False, **kwargs)


__all__ = ["HiveMetastore"]
