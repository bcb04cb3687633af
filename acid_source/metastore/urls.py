"""Which store a URL names, and whether other processes can reach it: the built-in default,
``$ACIDORC_METASTORE_URL``, what Spark's workers are handed, and the checks every read and
write runs on a store URL. A ``thrift://`` URL names a Hive Metastore (:mod:`.hive`); anything
else is a SQLAlchemy URL or a SQLite file's path for the SQL store (:mod:`.sql`), parsed here.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

from .. import settings
from ..errors import MetastoreError

ENV_URL = settings.METASTORE_URL.name
#: The scheme of a Hive Metastore's URL (``thrift://host:9083``)
THRIFT_SCHEME = "thrift"


def is_thrift_url(url: object) -> bool:
    """Whether a store URL names a Hive Metastore."""
    return isinstance(url, str) and url.strip().lower().startswith(f"{THRIFT_SCHEME}://")


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
        if url is None and not is_thrift_url(named) and parse_url(named).password is not None:
            return None
        return os.fspath(named) if isinstance(named, os.PathLike) else named
    if sqlite_store_missing(None) or parse_url(None).password is not None:
        return None
    return default_url()


def sqlite_store_missing(url: str | os.PathLike | None) -> bool:
    """True when ``url`` names a SQLite file that does not exist yet: such a store knows no
    tables, and a reader need not create it just to find that out."""
    text = settings.METASTORE_URL.get() if url is None else url
    if is_thrift_url(text):
        return False
    if url is None and not text:
        return not (Path(os.path.expanduser("~")) / ".acidorc" / "metastore.db").exists()
    path = sqlite_file(parse_url(text))
    return path is not None and not Path(path).exists()


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
    if is_thrift_url(url):
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
