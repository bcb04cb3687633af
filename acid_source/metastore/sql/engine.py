"""The SQL store's engines, and the one place that knows about SQLite.

Everything dialect-specific lives in :func:`create_engine`: for SQLite it turns off pysqlite's
own transaction handling, sets WAL journaling, a busy timeout and full fsync on every new
connection, and emits ``BEGIN IMMEDIATE`` for write transactions so each read-modify-write
sequence holds the database's write lock from its first statement. The store's SQL itself is
plain SQLAlchemy Core. (Parsing a store URL is :mod:`..urls`.)
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Engine
from sqlalchemy.pool import StaticPool

from ..urls import is_memory, is_sqlite

#: execution option a :class:`~sqlalchemy.engine.Connection` carries when its transaction
#: will write; SQLite then begins it with ``BEGIN IMMEDIATE``.
WRITE_OPTION = "acidorc_write"

_LOCK_MESSAGES = ("database is locked", "database is busy", "database table is locked")
_RETRYABLE_SQLSTATES = {"40001", "40P01"}  # serialization failure, deadlock (PostgreSQL et al.)
_RETRYABLE_MYSQL_CODES = {1205, 1213}  # lock wait timeout, deadlock
# server databases whose default (read committed) gives every statement its own snapshot
_READ_ISOLATION = {"postgresql": "REPEATABLE READ", "mysql": "REPEATABLE READ", "mariadb": "REPEATABLE READ"}


def read_isolation(url: URL) -> str | None:
    """The isolation level under which every statement of a read transaction sees the same
    state. None where the default already does: a SQLite read transaction is one snapshot."""
    return _READ_ISOLATION.get(url.get_backend_name())


def create_engine(url: URL, *, busy_timeout: float) -> Engine:
    """An engine for ``url``; SQLite connections get WAL, a busy timeout and BEGIN IMMEDIATE."""
    if not is_sqlite(url):
        # No pool_pre_ping (a round trip before every transaction): a pooled connection the
        # server dropped fails its first statement, SQLAlchemy invalidates the pool, and the
        # store runs the whole transaction again on a new connection (is_transient).
        return sa.create_engine(url)

    kwargs: dict = {"connect_args": {"timeout": busy_timeout, "check_same_thread": False}}
    if is_memory(url):
        # one shared connection, or every pooled connection would see its own empty database
        kwargs["poolclass"] = StaticPool
    engine = sa.create_engine(url, **kwargs)
    _install_sqlite_hooks(engine, busy_timeout)
    return engine


def _install_sqlite_hooks(engine: Engine, busy_timeout: float) -> None:
    busy_ms = max(0, int(busy_timeout * 1000))

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # pysqlite would otherwise issue its own deferred BEGIN lazily (and COMMIT before DDL);
        # with isolation_level=None the "begin" hook below decides how transactions start.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = FULL")  # a commit survives a power cut, too
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        # IMMEDIATE takes the write lock now, waiting (busy timeout) for another writer, so a
        # read-modify-write never fails half-way on a lock upgrade. Reads use a deferred BEGIN:
        # in WAL mode they see one consistent snapshot and never block writers.
        immediate = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def is_transient(exc: sa.exc.DBAPIError) -> bool:
    """Lock contention or a deadlock: the whole transaction can simply be run again."""
    if getattr(exc, "connection_invalidated", False):
        return True
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).lower()
    if any(m in text for m in _LOCK_MESSAGES):
        return True
    code = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
    if code in _RETRYABLE_SQLSTATES:
        return True
    args: tuple[object, ...] = getattr(orig, "args", ()) or ()
    return bool(args) and args[0] in _RETRYABLE_MYSQL_CODES
