"""The transaction store: which tables exist, which transactions are open, committed or
aborted, and which write ids they own. The single source of truth for what readers may see.

:class:`TransactionStore` (``contract``) is what every store does. Two implement it: acidorc's
own in a SQL database (:mod:`.sql`: SQLite, a file under ``~/.acidorc``, by default; any
SQLAlchemy URL otherwise) and a Hive Metastore for a ``thrift://`` URL (:mod:`.hive`).
:func:`connect` picks the one a URL names (``urls``). Beside them: ``constants`` (operations and
transaction states), ``arguments`` (the checks every store runs), ``tableinfo``, ``records``
and ``leases`` (what the stores hand out and take).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .constants import CONFLICT_CHECKED, OPERATIONS, TXN_STATES
from .contract import TransactionStore
from .sql import Metastore
from .tableinfo import TableInfo, normalize_location
from .urls import ENV_URL, check_shareable, default_url, is_thrift_url, named_url

if TYPE_CHECKING:
    from typing_extensions import TypeIs


def is_store(value: object) -> TypeIs[TransactionStore]:
    """Whether ``value`` is an open transaction store: an object of a class that declares the
    contract (both stores subclass :class:`TransactionStore`; a look up the class's bases,
    where a structural check would test every member's presence on each call)."""
    return TransactionStore in type(value).__mro__


def connect(url: str | os.PathLike | None = None, *, existing: bool = False, **kwargs) -> TransactionStore:
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
    "TransactionStore",
    "check_shareable",
    "connect",
    "is_store",
    "default_url",
    "normalize_location",
]
