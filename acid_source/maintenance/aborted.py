"""Clean-up of failed writes: abort the table's transactions whose driver stopped
heartbeating, then remove the directories of the table's aborted write ids.

Readers never see those files (the store says the write ids are aborted), so this is about
space, and safe at any time: it only removes directories of write ids the store has aborted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..deprecation import renamed, warn
from ..faults import crash_point
from ..layout.ids_on_storage import list_ids_on_storage
from ..metastore import connect
from ..storage import Storage
from ..write.cleanup import remove_empty_parents, write_id_dirs

DEFAULT_EXPIRY_SECONDS = 600.0


@dataclass
class CleanupReport:
    """What :func:`clean_aborted_writes` did: the transactions it aborted (``expiredTransactions``)
    and the directories it removed (``removed``; in a dry run, those it would remove)."""

    expiredTransactions: list[int] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def expired_transactions(self) -> list[int]:
        warn("CleanupReport.expired_transactions", "expiredTransactions")
        return self.expiredTransactions


@renamed(metastore_url="metastoreUrl", expire_after_seconds="expireAfterSeconds", dry_run="dryRun",
         storage_options="storageOptions")
def clean_aborted_writes(location: str, *, metastoreUrl: str | None = None,
                         expireAfterSeconds: float = DEFAULT_EXPIRY_SECONDS,
                         dryRun: bool = False, storageOptions: Mapping[str, Any] | None = None) -> CleanupReport:
    """Abort the table's transactions silent for ``expireAfterSeconds``, then remove every
    delta, delete delta or base directory of the table whose write ids are all aborted.

    Transactions of other tables are left alone; silent ones holding no write id at all (a
    dead compactor's, whose ``_vT`` outputs ``vacuum`` then removes) are aborted too.
    ``dryRun`` reports without changing anything (it does not abort either).
    """
    metastore = connect(metastoreUrl, existing=True)
    table = metastore.get_table(location)
    storage = Storage(table.location, tuple(sorted((storageOptions or {}).items())))
    # A store restored from an older copy calls the write ids that were open then aborted
    # (once they expire), though they may have committed since: remove nothing it never saw.
    metastore.refuse_if_behind(table.table_id, list_ids_on_storage(storage))
    report = CleanupReport()
    if not dryRun:
        report.expiredTransactions = metastore.abort_expired(expireAfterSeconds, table_id=table.table_id)
        crash_point("cleanup.after_expire")
    aborted = metastore.write_ids_of(table.table_id, "aborted")
    report.removed = write_id_dirs(storage, aborted)
    if not dryRun:
        for path in report.removed:
            storage.remove(path, recursive=True)
            crash_point("cleanup.during_removal")
            remove_empty_parents(storage, path)
    return report
