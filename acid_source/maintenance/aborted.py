"""Clean-up of failed writes: abort the table's transactions whose driver stopped
heartbeating, then remove the directories of the table's aborted write ids.

Readers never see those files (the store says the write ids are aborted), so this is about
space, and safe at any time: it only removes directories of write ids the store has aborted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..faults import crash_point
from ..layout.ids_on_storage import list_ids_on_storage
from ..metastore import connect
from ..storage import Storage
from ..write.cleanup import remove_empty_parents, write_id_dirs

DEFAULT_EXPIRY_SECONDS = 600.0


@dataclass
class CleanupReport:
    expired_transactions: list[int] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def clean_aborted_writes(location: str, *, metastore_url: str | None = None,
                         expire_after_seconds: float = DEFAULT_EXPIRY_SECONDS,
                         dry_run: bool = False, storage_options: dict | None = None) -> CleanupReport:
    """Abort the table's transactions silent for ``expire_after_seconds``, then remove every
    delta, delete delta or base directory of the table whose write ids are all aborted.

    Transactions of other tables are left alone; silent ones holding no write id at all (a
    dead compactor's, whose ``_vT`` outputs ``vacuum`` then removes) are aborted too.
    ``dry_run`` reports without changing
    anything (it does not abort either).
    """
    metastore = connect(metastore_url, existing=True)
    table = metastore.get_table(location)
    storage = Storage(table.location, tuple(sorted((storage_options or {}).items())))
    # A store restored from an older copy calls the write ids that were open then aborted
    # (once they expire), though they may have committed since: remove nothing it never saw.
    metastore.refuse_if_behind(table.table_id, list_ids_on_storage(storage))
    report = CleanupReport()
    if not dry_run:
        report.expired_transactions = metastore.abort_expired(expire_after_seconds, table_id=table.table_id)
        crash_point("cleanup.after_expire")
    aborted = metastore.write_ids_of(table.table_id, "aborted")
    report.removed = write_id_dirs(storage, aborted)
    if not dry_run:
        for path in report.removed:
            storage.remove(path, recursive=True)
            crash_point("cleanup.during_removal")
            remove_empty_parents(storage, path)
    return report
