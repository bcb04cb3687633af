"""Where a table is and how a handle reaches it: the location, the transaction store's URL, the
storage options and the conflict rule of its UPDATE / DELETE / MERGE. Every verb of
:class:`~acid_source.table.AcidTable`, and of the Spark-bound table that wraps it, passes one
:class:`TableRef` on; it does no I/O and pickles."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .errors import InvalidArgumentError, TableNotRegisteredError

#: the conflict rules of a DML: Hive's per data object (the default), or per row
CONFLICT_MODES = ("object", "row")


def conflict_mode(value: str | None) -> str:
    """The conflict detection of a DML: ``"object"`` (Hive's rule, the default: it fails when
    its data object changed after it started) or ``"row"`` (it fails only when a commit after
    its snapshot deleted or updated one of the same rows, or overwrote its data object;
    :mod:`acid_source.dml.row_conflicts`)."""
    if value is None:
        return "object"
    mode = str(value).strip().lower()
    if mode not in CONFLICT_MODES:
        raise InvalidArgumentError("conflictDetection", f"expected one of {CONFLICT_MODES}, got {value!r}")
    return mode


@dataclass(frozen=True)
class TableRef:
    """A table as its handle names it (``storage_options``: sorted ``(key, value)`` pairs)."""

    location: str
    metastore_url: str | None = None
    storage_options: tuple = ()
    conflict_detection: str = "object"


def location_of(value: Any, argument: str, *, metastore_url: str | None, by_name: bool | None) -> str:
    """The location a handle opens: ``value`` itself, or - for a registered name (``db.table``;
    ``by_name`` None decides by the spelling) - the location the store records for it."""
    from .metastore.tableinfo import TABLE_NAME

    if isinstance(value, os.PathLike) and not by_name:
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(argument, f"expected a table location or name, got {value!r}")
    text = value.strip()
    if not (by_name or (by_name is None and TABLE_NAME.fullmatch(text))):
        return text
    if not TABLE_NAME.fullmatch(text):
        raise InvalidArgumentError(argument, f"{text!r} is not a table name (db.table or table)")
    from .resolve import open_store

    store = open_store(metastore_url)
    if store is None:
        raise TableNotRegisteredError(name=text)
    return store.get_table(name=text).location
