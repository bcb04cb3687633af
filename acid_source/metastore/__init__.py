"""The transaction store: which tables exist, which transactions are open, committed or
aborted, and which write ids they own. The single source of truth for what readers may see.

SQLite (a file under ``~/.acidorc``) by default; any SQLAlchemy URL otherwise; a Hive Metastore
for a ``thrift://`` URL (:mod:`.hive`). :func:`connect` picks the one a URL names.
"""

import os

from .constants import CONFLICT_CHECKED, OPERATIONS, TXN_STATES
from .engine import ENV_URL, check_shareable, default_url, named_url
from .hive.connection import is_thrift_url
from .store import Metastore
from .tableinfo import TableInfo, normalize_location


def is_store(value: object) -> bool:
    """Whether ``value`` is an open transaction store (acidorc's or a Hive Metastore)."""
    from .hive import HiveMetastore

    return isinstance(value, (Metastore, HiveMetastore))


def connect(url: "str | os.PathLike | None" = None, *, existing: bool = False, **kwargs):
    """The transaction store ``url`` names (else ``$ACIDORC_METASTORE_URL``, else the built-in
    SQLite file): a :class:`~acid_source.metastore.hive.HiveMetastore` for ``thrift://...``,
    a :class:`Metastore` otherwise. ``existing``: for readers, never create a store."""
    named = named_url(url)
    if is_thrift_url(named):
        from .hive import HiveMetastore

        return HiveMetastore(str(named), create=not existing, **kwargs)
    return Metastore.existing(url, **kwargs) if existing else Metastore(url, **kwargs)


__all__ = [
    "CONFLICT_CHECKED",
    "ENV_URL",
    "OPERATIONS",
    "TXN_STATES",
    "Metastore",
    "TableInfo",
    "check_shareable",
    "connect",
    "is_store",
    "default_url",
    "normalize_location",
]
