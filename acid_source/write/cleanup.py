"""Removing directories of write ids that will never become visible (storage only: the
caller has made sure, with the transaction store, that those write ids are aborted)."""

from __future__ import annotations

import os
from typing import Iterable

from ..faults import crash_point
from ..layout.names import parse_dir_name
from ..layout.table_dirs import discover_layout
from ..storage import Storage


def write_id_dirs(storage: Storage, write_ids: Iterable[int]) -> list[str]:
    """Every base, delta and delete-delta directory written by one of ``write_ids`` alone
    (compaction outputs spanning several write ids are not write-id residue)."""
    wanted = set(write_ids)
    if not wanted or not storage.exists(storage.root):
        return []
    found = []
    layout = discover_layout(storage)
    for part in layout.partitions:
        for entry in layout.listings[part.path]:
            parsed = parse_dir_name(entry.name) if entry.is_dir else None
            if parsed is None or parsed.visibility_txn_id:
                continue
            if all(w in wanted for w in range(parsed.min_write_id, parsed.max_write_id + 1)):
                found.append(entry.path)
    return sorted(found)


def remove_write_id_dirs(storage: Storage, write_id: int) -> list[str]:
    """Remove what an aborted write id left in the table; returns the removed directories."""
    removed = write_id_dirs(storage, [write_id])
    for path in removed:
        storage.remove(path, recursive=True)
        crash_point("abort.during_removal")
    for path in removed:
        remove_empty_parents(storage, path)
    return removed


def remove_empty_parents(storage: Storage, path: str) -> None:
    """Partition directories a failed write created and left empty (local storage; object
    stores have no empty directories). Only empty ones go: a concurrent writer's are kept."""
    if not storage.is_local:
        return
    root = storage.root.rstrip("/")
    parent = os.path.dirname(path.rstrip("/"))
    while parent.startswith(root + "/"):
        try:
            os.rmdir(parent)
        except OSError:
            return  # not empty (or gone): stop climbing
        parent = os.path.dirname(parent)
