"""The after-commit trigger: right after a data write commits, check the data objects it
touched against Hive's thresholds and compact those over one (:func:`compact_after_write`, the
post-commit step of every data write: append, overwrite, the Spark and streaming writes, UPDATE /
DELETE / MERGE). It is the initiator's pass (:func:`.initiator.initiate_table`) restricted to
those data objects, with the bounds a compaction inside the user's write call needs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Callable

from ..metastore import TransactionStore
from .initiator import initiate_table, open_metastore
from .thresholds import after_commit_enabled, auto_compaction_disabled

logger = logging.getLogger("acidorc.initiator")


def compact_after_write(location: str, store: TransactionStore, partitions: Iterable[str], *,
                        storage_options: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
                        run_tasks: Callable | None = None) -> dict[str, Any]:
    """The post-commit step of a data write: the metrics it adds to the write's
    (``autoCompaction``, only when a compaction was considered). Never raises."""
    compactions = maybe_compact_after_commit(location, store, sorted(partitions), storage_options=storage_options,
                                             run_tasks=run_tasks)
    return {"autoCompaction": compactions} if compactions else {}


def maybe_compact_after_commit(location: str, metastore_url: str | TransactionStore | None,
                               touched_partitions: Iterable[str], *,
                               storage_options: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
                               run_tasks: Callable | None = None) -> list[dict]:
    """The after-commit trigger: check the data objects a commit just touched (relative
    partition paths, "" for an unpartitioned table) and compact those over a threshold, in
    this call. Never raises (the user's write has committed): errors are logged on
    ``acidorc.initiator`` and give an empty list; a concurrent compaction or overwrite winning
    is fine. Does nothing when ``ACIDORC_AUTO_COMPACT`` is false or the table has
    ``no_auto_compaction=true``; a data object compacted by this process less than
    ``hive.compactor.check.interval`` ago is not checked again. Without ``run_tasks`` (a
    Spark runner) the compaction runs in this process, so one that would read more than
    ``ACIDORC_AUTO_COMPACT_MAX_BYTES`` (256 MiB) is skipped (reported, logged) and left to an
    explicit :func:`.initiator.run_initiator` or ``AcidTable.compact``."""
    try:
        if not after_commit_enabled():
            return []
        touched = [touched_partitions] if isinstance(touched_partitions, str) else list(touched_partitions)
        if not touched:
            return []
        options = tuple(sorted(dict(storage_options).items()))
        store = open_metastore(metastore_url)
        info = store.find_table(location) if store is not None else None
        if store is None or info is None or auto_compaction_disabled(info.properties):
            return []
        results = initiate_table(store, info, partitions=touched, dry_run=False, storage_options=options,
                                 run_tasks=run_tasks, after_commit=True)
        for entry in results:
            if entry["status"] == "error":
                logger.warning("automatic compaction of %s skipped: %s", location, entry.get("error"))
            elif entry["status"] == "skipped":
                logger.info("automatic compaction of %s %r skipped: %s", location, entry["partition"],
                            entry["reason"])
        return results
    except Exception as exc:
        logger.warning("automatic compaction check after a commit on %s failed: %s", location, exc, exc_info=True)
        return []


