"""Database URLs, engine creation and the one place that knows about SQLite.

Callers only see SQLAlchemy URLs. Everything dialect-specific lives in :func:`create_engine`:
for SQLite it turns off pysqlite's own transaction handling, sets WAL journaling, a busy
timeout and full fsync on every new connection, and emits ``BEGIN IMMEDIATE`` for write
transactions so each read-modify-write sequence holds the database's write lock from its first
statement. The store's SQL itself is plain SQLAlchemy Core.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import StaticPool

from .. import settings
from ..errors import MetastoreError

ENV_URL = settings.METASTORE_URL.name

#: execution option a :class:`~sqlalchemy.engine.Connection` carries when its transaction
#: will write; SQLite then begins it with ``BEGIN IMMEDIATE``.
WRITE_OPTION = "acidorc_write"

_LOCK_MESSAGES = ("database is locked", "database is busy", "database table is locked")
_RETRYABLE_SQLSTATES = {"40001", "40P01"}  # serialization failure, deadlock (PostgreSQL et al.)
_RETRYABLE_MYSQL_CODES = {1205, 1213}  # lock wait timeout, deadlock
# server databases whose default (read committed) gives every statement its own snapshot
_READ_ISOLATION = {"postgresql": "REPEATABLE READ", "mysql": "REPEATABLE READ", "mariadb": "REPEATABLE READ"}


def default_url() -> str:
    """``$ACIDORC_METASTORE_URL``, else a SQLite file ``~/.acidorc/metastore.db`` (the directory
    is created)."""
    env = settings.METASTORE_URL.get()
    if env:
        return env
    home = Path(os.path.expanduser("~")) / ".acidorc"
    home.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{home / 'metastore.db'}"


def named_url(url: str | os.PathLike | None) -> str | os.PathLike | None:
    """The store a caller named: ``url``, else ``$ACIDORC_METASTORE_URL``; None when nothing
    names one and the built-in default (``~/.acidorc/metastore.db``) is meant. A named store is
    explicit however it was named: a reader requires it to exist. Only the built-in default may
    be missing, which means a store that knows no tables yet."""
    if url is not None:
        return url
    return settings.METASTORE_URL.get() or None


def url_for_workers(url: str | None) -> str | None:
    """The store URL to hand Spark's Python workers with a read: the one named (argument or
    environment; workers may have started before it was chosen), else the built-in default if
    it exists; None when it holds a password (options show up in Spark's plans; workers then
    use their own environment) or when the built-in default does not exist (workers then find
    "no store" too). A named store is handed on even when it is missing, so workers refuse it."""
    named = named_url(url)
    if named is not None:
        if url is None and not _is_thrift(named) and parse_url(named).password is not None:
            return None
        return os.fspath(named) if isinstance(named, os.PathLike) else named
    if sqlite_store_missing(None) or parse_url(None).password is not None:
        return None
    return default_url()


def sqlite_store_missing(url: str | os.PathLike | None) -> bool:
    """True when ``url`` names a SQLite file that does not exist yet: such a store knows no
    tables, and a reader need not create it just to find that out."""
    text = settings.METASTORE_URL.get() if url is None else url
    if _is_thrift(text):
        return False
    if url is None and not text:
        return not (Path(os.path.expanduser("~")) / ".acidorc" / "metastore.db").exists()
    path = sqlite_file(parse_url(text))
    return path is not None and not Path(path).exists()


def _is_thrift(url: object) -> bool:
    from .hive.connection import is_thrift_url

    return is_thrift_url(url)


def parse_url(url: str | os.PathLike | None) -> URL:
    """A SQLAlchemy URL; ``None`` means :func:`default_url`. Anything without ``://`` is a path
    of a SQLite file, which must be absolute (``~`` allowed) and free of ``:`` so that a typo
    (``'::::'``, ``'sqlite:'``) is an error instead of a new store in the working directory."""
    if url is None:
        url = default_url()
    text = os.fspath(url).strip() if isinstance(url, os.PathLike) else str(url).strip()
    if not text:
        raise MetastoreError("the metastore URL is empty")
    if "://" not in text:
        path = os.path.expanduser(text)
        if ":" in text or not os.path.isabs(path):
            raise MetastoreError(
                f"metastore URL {text!r} is neither a URL (dialect://...) nor an absolute path of a "
                "SQLite file (a path must start with '/' or '~' and contain no ':')", url=text)
        text = f"sqlite:///{os.path.abspath(path)}"
    try:
        return make_url(text)
    except (sa.exc.ArgumentError, ValueError) as exc:  # ValueError: e.g. a malformed port
        raise MetastoreError(f"cannot parse metastore URL {text!r}: {exc}", url=text) from None


def check_shareable(url: str | os.PathLike | None) -> None:
    """Raise :class:`MetastoreError` unless other processes can open the store at ``url``.

    An in-memory SQLite database lives and dies with one process: a table written through it
    would look unregistered to every other reader, which would then treat all of its files,
    uncommitted ones included, as committed. URLs given as read or write options must pass."""
    if _is_thrift(url):
        return  # a Hive Metastore serves every process
    parsed = parse_url(url)
    if is_sqlite(parsed) and is_memory(parsed):
        shown = display_url(parsed)
        raise MetastoreError(
            f"metastore URL {shown!r} is an in-memory database, private to one process; other "
            "readers would not see its commits. Use a SQLite file or a database server", url=shown)


def display_url(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def is_sqlite(url: URL) -> bool:
    return url.get_backend_name() == "sqlite"


def is_memory(url: URL) -> bool:
    """An in-memory SQLite database (``sqlite://``, ``:memory:``, ``mode=memory``)."""
    db = url.database or ""
    return (db in ("", ":memory:") or db.startswith("file::memory:") or "mode=memory" in db
            or url.query.get("mode") == "memory")


def sqlite_file(url: URL) -> str | None:
    """The file a SQLite URL names (``file:`` URIs included), None for in-memory and server
    databases."""
    if not is_sqlite(url) or is_memory(url):
        return None
    db = url.database or ""
    if db.startswith("file:"):
        db = unquote(urlsplit(db).path)
    return db or None


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
