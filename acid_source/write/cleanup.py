"""Removing what failed writes left behind: directories whose write ids were aborted, after
aborting transactions whose driver stopped heartbeating.

Readers never see these files (the metastore says the write ids are aborted), so clean-up is
about space, and safe to run at any time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..layout.names import parse_dir_name
from ..metastore import Metastore
from ..scan.discovery import discover_layout
from ..storage import Storage

DEFAULT_EXPIRY_SECONDS = 600.0


@dataclass
class CleanupReport:
    expired_transactions: list[int] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def clean_aborted_writes(location: str, *, metastore_url: str | None = None,
                         expire_after_seconds: float = DEFAULT_EXPIRY_SECONDS,
                         dry_run: bool = False, storage_options: dict | None = None) -> CleanupReport:
    """Abort transactions silent for ``expire_after_seconds``, then remove every delta, delete
    delta or base directory of the table whose write ids are all aborted."""
    metastore = Metastore(metastore_url)
    table = metastore.get_table(location)
    report = CleanupReport()
    report.expired_transactions = metastore.abort_expired(expire_after_seconds)
    aborted = set(metastore.write_ids_of(table.table_id, "aborted"))
    if not aborted:
        return report
    storage = Storage(location, tuple(sorted((storage_options or {}).items())))
    if not storage.exists(storage.root):
        return report
    for part in discover_layout(storage).partitions:
        for entry in storage.list_dir(part.path):
            parsed = parse_dir_name(entry.name) if entry.is_dir else None
            if parsed is None:
                continue
            ids = range(parsed.min_write_id, parsed.max_write_id + 1)
            if all(w in aborted for w in ids):
                report.removed.append(entry.path)
                if not dry_run:
                    storage.remove(entry.path, recursive=True)
    return report
