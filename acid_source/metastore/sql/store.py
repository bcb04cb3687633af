"""The SQL transaction store: tables, transactions, write ids and snapshots, in one SQL database.

It is the single source of truth for which write ids are committed. Every state change is one
database transaction (on SQLite begun with ``BEGIN IMMEDIATE``, so read-modify-write sequences
are serialized across processes), which makes each call atomic: another process sees a commit
entirely or not at all. Calls that fail on lock contention are run again, a bounded number of
times, with exponential backoff.

:class:`Metastore` is the one public class; its jobs live in their own modules (``base``:
connections and retries; ``catalog``: tables; ``transactions``; ``snapshots``: current and past
snapshots, history; ``leases``: reader leases and the cleaner's view; ``sinks``: streaming
sinks' micro-batches, recorded with their commits).
"""

from __future__ import annotations

from ..contract import TransactionStore
from .catalog import CatalogMixin
from .leases import LeasesMixin
from .sinks import SinksMixin
from .snapshots import SnapshotsMixin
from .transactions import TransactionsMixin

__all__ = ["Metastore"]


class Metastore(CatalogMixin, TransactionsMixin, SinksMixin, LeasesMixin, SnapshotsMixin, TransactionStore):
    """Tables, transactions and write ids in a SQL database (SQLite by default).

    ``url`` is any SQLAlchemy URL or an absolute path of a SQLite file; ``None`` means
    :func:`~acid_source.metastore.urls.default_url`. ``clock`` returns UTC epoch seconds and
    stamps every time recorded (start, heartbeat, commit); pass a fake one in tests.
    ``busy_timeout`` is how long SQLite waits for another process's write lock per attempt, and
    ``retry_attempts`` bounds how often a call is run again after lock contention or a deadlock.
    ``create=False`` (see :meth:`existing`) never creates a database or its tables.

    The object holds no live connection until first used and drops it when pickled, so it can
    be shipped to other processes (Spark pickles data sources, readers and writers).
    """

    #: Every commit is recorded: history, time travel and the change feed read it.
    keeps_history = True
