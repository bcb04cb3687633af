"""The database plumbing every part of the SQL store shares: the engine (one per process),
running a function in one database transaction with retries, the schema check, tables added
after the schema's version, and small row helpers.

The store's jobs (catalog, transactions, snapshots, leases, sinks) are mixins over
:class:`StoreBase`; each runs its SQL through :meth:`_run` and may use the helpers here. A new
job is a new module with one mixin class (plus its tables in ``schema.py``), added to the bases
of :class:`~acid_source.metastore.sql.store.Metastore`.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy import insert, select, update

from ...errors import (
    AcidError,
    InvalidArgumentError,
    MetastoreError,
    MetastoreNotFoundError,
    TableNotRegisteredError,
    TransactionStateError,
)
from ..arguments import as_seconds
from ..constants import ABORTED, OPEN
from ..urls import display_url, is_memory, is_sqlite, parse_url, sqlite_file
from . import engine as _engine
from .schema import SCHEMA_VERSION, SEQUENCES, meta, metadata, sequences, tables, txns

_Store = TypeVar("_Store", bound="StoreBase")

_BACKOFF_START = 0.02
_BACKOFF_MAX = 1.0
_IN_CHUNK = 500  # bound the number of bind parameters per statement

# Engines shared by every store object of this process on one database (StoreBase._sharing_key):
# each AcidTable, read and write makes its own Metastore, and a new engine means new connections
# (on a server: TCP, authentication, the dialect's first-connect queries) and every statement
# compiled again. (Each object still checks the schema once.)
_SHARED: dict[tuple, sa.Engine] = {}
_SHARED_PID: list[int] = [os.getpid()]
_SHARED_LOCK = threading.Lock()


def _shared_engine(key: tuple, make: Callable[[], sa.Engine]) -> sa.Engine:
    """The process's engine for ``key`` (URL with password, busy timeout; a SQLite file's
    identity), made by ``make`` on first use. A forked child drops its parent's engines
    without closing their connections, which belong to the parent."""
    with _SHARED_LOCK:
        if _SHARED_PID[0] != os.getpid():
            for inherited in _SHARED.values():
                inherited.dispose(close=False)
            _SHARED.clear()
            _SHARED_PID[0] = os.getpid()
        engine = _SHARED.get(key)
        if engine is None:
            engine = _SHARED[key] = make()
        return engine


def chunks(items: list, size: int = _IN_CHUNK) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


class StoreBase:
    """Connection handling and transaction running; see :class:`Metastore` for the arguments.

    The object holds no live connection until first used and drops it when pickled, so it can
    be shipped to other processes (Spark pickles data sources, readers and writers).
    """

    def __init__(self, url: str | os.PathLike | None = None, *, clock: Callable[[], float] = time.time,
                 busy_timeout: float = 30.0, retry_attempts: int = 8, create: bool = True):
        self._url = parse_url(url)
        if not callable(clock):
            raise InvalidArgumentError("clock", f"must be a callable returning epoch seconds, got {clock!r}")
        busy_timeout = as_seconds(busy_timeout, "busy_timeout")
        if isinstance(retry_attempts, bool) or not isinstance(retry_attempts, int) or retry_attempts < 1:
            raise InvalidArgumentError("retry_attempts", f"must be an integer >= 1, got {retry_attempts!r}")
        self.clock = clock
        self.busy_timeout = busy_timeout
        self.retry_attempts = retry_attempts
        self.create = bool(create)
        self._reset()

    # --- lifecycle --------------------------------------------------------------------------
    def _reset(self) -> None:
        self._engine: sa.Engine | None = None
        self._engine_pid: int | None = None
        self._lock = threading.Lock()
        self._tables_ready: dict[str, sa.Engine] = {}  # table name -> the engine it was made sure of on

    def __getstate__(self) -> dict:
        return {
            "url": self._url.render_as_string(hide_password=False),
            "clock": self.clock,
            "busy_timeout": self.busy_timeout,
            "retry_attempts": self.retry_attempts,
            "create": self.create,
        }

    def __setstate__(self, state: dict) -> None:
        self._url = parse_url(state["url"])
        self.clock = state["clock"]
        self.busy_timeout = state["busy_timeout"]
        self.retry_attempts = state["retry_attempts"]
        self.create = state.get("create", True)
        self._reset()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return display_url(self._url)

    @property
    def has_password(self) -> bool:
        """Whether the URL holds a password (which :attr:`url` hides)."""
        return self._url.password is not None

    def connect_url(self) -> str:
        """The full database URL, password included: only for handing this store to another
        process of the same user (a heartbeat or commit process, over a pipe or a private file),
        never for logs, errors or anything shipped to tasks."""
        return self._url.render_as_string(hide_password=False)

    def close(self) -> None:
        """Close pooled connections (the object stays usable and reconnects on demand; on a
        server database they are the process's pool for this URL, which reconnects too)."""
        with self._lock:
            if self._engine is not None and self._engine_pid == os.getpid():
                self._engine.dispose()
            self._engine = None
            self._engine_pid = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @classmethod
    def existing(cls: type[_Store], url: str | os.PathLike | None = None, **kwargs) -> _Store:
        """A store that must exist already, for readers: a missing SQLite file, an in-memory
        database or a database without acidorc's tables raises
        :class:`~acid_source.errors.MetastoreNotFoundError` (a SQLite file is checked now,
        other databases on first use) instead of creating an empty store."""
        store = cls(url, create=False, **kwargs)
        store._require_existing_file()
        return store

    def _require_existing_file(self) -> None:
        """For a store opened with ``create=False``: refuse an in-memory or missing SQLite file
        before SQLite would create an empty one."""
        if not is_sqlite(self._url):
            return
        if is_memory(self._url):
            raise MetastoreNotFoundError(
                f"metastore {self.url} is an in-memory database: it is empty and private to one "
                "process, so there is no existing store to open", url=self.url)
        path = sqlite_file(self._url)
        if path is not None and not Path(path).exists():
            raise MetastoreNotFoundError(
                f"metastore {self.url} does not exist (no file {path}); it is created by the first "
                "write or create_table with that URL. A reader never falls back to 'no store': without "
                "one, every write id on disk would count as committed, a dead writer's rows included "
                "(that is how tables no store knows, written by Hive, Trino or Impala, are read)",
                url=self.url)

    def _get_engine(self) -> sa.Engine:
        pid = os.getpid()
        engine = self._engine
        if engine is not None and self._engine_pid == pid:
            return engine
        with self._lock:
            if self._engine is not None and self._engine_pid != pid:
                # inherited through fork: the parent's pooled connections are not ours to use
                self._engine.dispose(close=False)
                self._engine = None
            if self._engine is None:
                if not self.create:
                    self._require_existing_file()
                key = self._sharing_key()
                shared = key is not None
                engine = _shared_engine(key, self._new_engine) if key is not None else self._new_engine()
                try:  # every store object checks the schema: another process may have changed it
                    if not self._run_on(engine, self._schema_is_current, write=False,
                                        what="read the metastore schema"):
                        if not self.create:
                            raise MetastoreNotFoundError(
                                f"{self.url} holds no acidorc metastore (its tables are missing)", url=self.url)
                        self._create_schema_once(engine)
                except BaseException:
                    if not shared:
                        engine.dispose()
                    raise
                self._engine, self._engine_pid = engine, pid
            return self._engine

    def _sharing_key(self) -> tuple | None:
        """The key under which this process shares one engine (its pool and its cache of
        compiled statements) among the store objects of one database: each AcidTable, read and
        write makes its own store object. A SQLite file is shared as the file it is now (device
        and inode): a store file removed and created again is another database, never written
        through connections to the old one (an open connection keeps the old inode taken). None
        (an engine of its own): an in-memory database, or a file not created yet."""
        url = self._url.render_as_string(hide_password=False)
        if not is_sqlite(self._url):
            return (url, self.busy_timeout)
        path = sqlite_file(self._url)
        if path is None:
            return None
        try:
            stat = os.stat(path)
        except OSError:
            return None
        return (url, self.busy_timeout, stat.st_dev, stat.st_ino)

    def _create_schema_once(self, engine: sa.Engine) -> None:
        """Create the store's tables. On a server database another process may create them at
        the same moment ("relation ... already exists": DDL takes no lock SQLite's BEGIN
        IMMEDIATE would); its whole schema commits at once, so finding it current now is
        success."""
        try:
            self._run_on(engine, self._create_schema, write=True, what="create the metastore schema")
        except MetastoreError:
            if not self._run_on(engine, self._schema_is_current, write=False, what="read the metastore schema"):
                raise

    def _new_engine(self) -> sa.Engine:
        try:
            return _engine.create_engine(self._url, busy_timeout=self.busy_timeout)
        except (sa.exc.SQLAlchemyError, ImportError) as exc:
            raise MetastoreError(f"cannot open metastore {self.url}: {exc}", url=self.url) from None

    # --- running database transactions -----------------------------------------------------
    def _run_with(self, table: sa.Table, label: str, fn, *, write: bool, what: str):
        """``fn(conn)`` as :meth:`_run`, with ``table`` made sure of first (once per engine): a
        store created before that table existed gets it on first use (no schema version
        change: nothing else depends on it). ``label`` names it in errors."""
        engine = self._get_engine()
        if self._tables_ready.get(table.name) is not engine:
            self._create_table_once(engine, table, label)
            self._tables_ready[table.name] = engine
        return self._run_on(engine, fn, write=write, what=what)

    def _create_table_once(self, engine: sa.Engine, table: sa.Table, label: str) -> None:
        def present(conn) -> bool:
            return sa.inspect(conn).has_table(table.name)

        if self._run_on(engine, present, write=False, what=f"look for the {label} table"):
            return
        try:
            self._run_on(engine, lambda conn: table.create(conn, checkfirst=True), write=True,
                         what=f"create the {label} table")
        except MetastoreError:
            # another process created it between our look and our CREATE (server databases)
            if not self._run_on(engine, present, write=False, what=f"look for the {label} table"):
                raise

    def _run(self, fn, *, write: bool, what: str):
        """``fn(conn)`` inside one database transaction (see :meth:`_run_on`)."""
        return self._run_on(self._get_engine(), fn, write=write, what=what)

    def _run_on(self, engine: sa.Engine, fn, *, write: bool, what: str):
        """``fn(conn)`` inside one database transaction, run again on lock contention.

        Every statement of a read (``write=False``) sees one consistent state of the database.
        ``fn`` may run more than once, also after a COMMIT whose success was not reported (a
        lost connection, a lock error raised after the commit): a write must recognise its own
        finished work on a re-run.
        """
        delay = _BACKOFF_START
        for attempt in range(1, self.retry_attempts + 1):
            try:
                with engine.connect() as conn:
                    if write:
                        conn.execution_options(**{_engine.WRITE_OPTION: True})
                    else:
                        level = _engine.read_isolation(engine.url)
                        if level is not None:
                            conn.execution_options(isolation_level=level)
                    with conn.begin():
                        return fn(conn)
            except AcidError:
                raise
            except sa.exc.DBAPIError as exc:
                # a unique-key race (two processes registering one table) also resolves on a re-run
                transient = _engine.is_transient(exc) or isinstance(exc, sa.exc.IntegrityError)
                if not transient or attempt == self.retry_attempts:
                    tried = f" after {attempt} attempts" if transient else ""
                    raise MetastoreError(f"cannot {what} in metastore {self.url}{tried}: {exc.orig}",
                                         url=self.url) from exc
            except sa.exc.SQLAlchemyError as exc:
                raise MetastoreError(f"cannot {what} in metastore {self.url}: {exc}", url=self.url) from exc
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, _BACKOFF_MAX)
        raise AssertionError("unreachable")

    def _schema_is_current(self, conn) -> bool:
        if not sa.inspect(conn).has_table(meta.name):
            return False
        version = conn.execute(select(meta.c.value).where(meta.c.name == "schema_version")).scalar()
        return self._check_version(version)

    def _check_version(self, version) -> bool:
        if version is None:
            return False
        if int(version) > SCHEMA_VERSION:
            raise MetastoreError(
                f"metastore {self.url} has schema version {version}, newer than this acidorc "
                f"understands ({SCHEMA_VERSION}); upgrade acidorc", url=self.url)
        if int(version) < SCHEMA_VERSION:  # no older versions exist yet; migrations go here
            raise MetastoreError(f"metastore {self.url} has schema version {version} and no migration "
                                 f"to {SCHEMA_VERSION} is known", url=self.url)
        return True

    def _create_schema(self, conn) -> bool:
        metadata.create_all(conn)  # CREATE TABLE only for missing tables
        version = conn.execute(select(meta.c.value).where(meta.c.name == "schema_version")).scalar()
        if version is None:
            conn.execute(insert(meta).values(name="schema_version", value=str(SCHEMA_VERSION)))
        else:
            self._check_version(version)
        present = set(conn.execute(select(sequences.c.name)).scalars())
        for name in SEQUENCES:
            if name not in present:
                conn.execute(insert(sequences).values(name=name, value=0))
        return True

    # --- row helpers (all run inside a database transaction) ---------------------------------
    @staticmethod
    def _next(conn, name: str, by: int = 1) -> int:
        """Increment a counter (by ``by``: the last of ``by`` consecutive ids); on server
        databases the UPDATE also locks it until commit."""
        stmt = update(sequences).where(sequences.c.name == name).values(value=sequences.c.value + by)
        if conn.dialect.update_returning:  # one round trip inside the lock instead of two
            return conn.execute(stmt.returning(sequences.c.value)).scalar_one()
        conn.execute(stmt)
        return conn.execute(select(sequences.c.value).where(sequences.c.name == name)).scalar_one()

    @staticmethod
    def _current(conn, name: str) -> int:
        return conn.execute(select(sequences.c.value).where(sequences.c.name == name)).scalar_one()

    @staticmethod
    def _txn_row(conn, txn_id: int, *, lock: bool = True):
        stmt = select(txns).where(txns.c.txn_id == txn_id)
        row = conn.execute(stmt.with_for_update() if lock else stmt).first()
        if row is None:
            raise TransactionStateError(f"transaction {txn_id} does not exist", txn_id=txn_id)
        return row

    @staticmethod
    def _require_open(row, doing: str) -> None:
        if row.state != OPEN:
            why = f" ({row.abort_reason})" if row.state == ABORTED and row.abort_reason else ""
            raise TransactionStateError(f"cannot {doing} transaction {row.txn_id}: it is {row.state}{why}",
                                        txn_id=row.txn_id, state=row.state)

    @staticmethod
    def _table_row(conn, table_id: int, *, lock: bool = False):
        stmt = select(tables).where(tables.c.table_id == table_id)
        row = conn.execute(stmt.with_for_update() if lock else stmt).first()
        if row is None:
            raise TableNotRegisteredError(table_id=table_id)
        return row

    @staticmethod
    def _set_aborted(conn, txn_ids: list[int], now: float, reason: str) -> None:
        for chunk in chunks(txn_ids):
            conn.execute(update(txns).where(txns.c.txn_id.in_(chunk), txns.c.state == OPEN)
                         .values(state=ABORTED, ended_at=now, abort_reason=reason or None))
