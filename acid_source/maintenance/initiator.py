"""The automatic initiator: one pass over tables (or over the data objects a commit touched)
that compacts every data object over Hive's thresholds (:mod:`.thresholds` decides which, and
of which kind), remembering per process the failures and attempts Hive keeps in its
compaction queue. ``python -m acid_source.maintenance.initiator`` runs one pass;
:mod:`.auto_compact` is the after-commit trigger built on :func:`initiate_table`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, Callable

from ..deprecation import renamed
from ..errors import ConflictError, InvalidOptionError, TableNotRegisteredError
from ..layout.partitions import parse_partition_segment
from ..layout.table_dirs import FULL_ACID, INSERT_ONLY, PartitionDir, TableLayout, discover_layout
from ..metastore import TransactionStore, is_store
from ..metastore.tableinfo import TABLE_NAME, TableInfo
from ..scan.resolved import ResolvedTable
from ..storage import Storage
from .thresholds import (
    CHECK_INTERVAL,
    ENV_MAX_BYTES,
    FAILED,
    NO_AUTO_COMPACTION,
    DataObject,
    aborted_count,
    after_commit_max_bytes,
    assess,
    auto_compaction_disabled,
    data_objects,
    global_settings,
    input_bytes,
    table_settings,
)

logger = logging.getLogger("acidorc.initiator")


# --- per-process memory (Hive keeps it in its compaction queue) ---------------------------------
_lock = threading.Lock()
_failures: dict[tuple[str, int, str], int] = {}  # consecutive failed compactions
_last_attempt: dict[tuple[str, int, str], float] = {}  # time.monotonic() of the last automatic one


def _key(store: TransactionStore, table_id: int, partition: str) -> tuple[str, int, str]:
    return (store.url, table_id, partition)


# --- running it --------------------------------------------------------------------------------
def _entry(info: TableInfo, partition: str | None, status: str, **fields) -> dict:
    return {"table": info.name, "location": info.location, "partition": partition, "status": status, **fields}


def _partial_layout(storage: Storage, info: TableInfo, partitions: Iterable[str]) -> TableLayout:
    """The layout of just the named partitions (an after-commit check lists nothing else)."""
    parts, listings = [], {}
    root = storage.root.rstrip("/")
    for rel in sorted({p.strip("/") for p in partitions}):
        segments = [parse_partition_segment(seg) for seg in rel.split("/")] if rel else []
        if len(segments) != len(info.partition_columns) or any(seg is None for seg in segments):
            logger.debug("%s: %r is not a data object of the table", info.location, rel)
            continue
        path = f"{root}/{rel}" if rel else root
        if not storage.is_dir(path):
            continue  # dropped since the commit
        parts.append(PartitionDir(path, tuple(seg[1] for seg in segments if seg is not None)))
        listings[path] = storage.list_dir(path)
    return TableLayout(storage, list(info.partition_columns), parts, listings)


def initiate_table(store: TransactionStore, info: TableInfo, *, partitions: Iterable[str] | None, dry_run: bool,
                   storage_options: tuple, run_tasks: Any, after_commit: bool,
                   env: Mapping[str, str] | None = None) -> list[dict]:
    """Check a table's data objects (only ``partitions``, relative paths, if given) and compact
    those that need it: one compaction per kind, naming its data objects by their paths.
    ``after_commit``: the after-commit trigger's bounds apply (check interval, in-process size)."""
    if auto_compaction_disabled(info.properties):
        return [_entry(info, None, "disabled", reason=f"table property {NO_AUTO_COMPACTION}=true")]
    try:
        settings = table_settings(info.properties, env)
    except InvalidOptionError as exc:
        return [_entry(info, None, "error", error=str(exc))]
    write_ids, txns = store.snapshot(info.table_id)
    storage = Storage(info.location, storage_options)
    if partitions is None:
        layout = discover_layout(storage)
    else:
        partitions = [p.strip("/") for p in partitions]
        layout = _partial_layout(storage, info, partitions)
    table = ResolvedTable(storage, info.location, layout, write_ids, txns,
                          INSERT_ONLY if info.insert_only else FULL_ACID, info)
    # in-process after-commit compactions are bounded: they run inside the user's write call
    max_bytes = after_commit_max_bytes(env) if after_commit and run_tasks is None else None
    now = time.monotonic()
    results: list[dict] = []
    pending: dict[str, list[tuple[DataObject, dict]]] = {}
    for obj in data_objects(table, partitions):
        key = _key(store, info.table_id, obj.partition)
        if after_commit:
            with _lock:
                last = _last_attempt.get(key)
            if last is not None and now - last < settings.check_interval:
                logger.debug("%s %r: compacted %.0fs ago, less than %s=%gs", info.location, obj.partition,
                             now - last, CHECK_INTERVAL, settings.check_interval)
                continue
        decision = assess(table, obj, aborted_count(obj), settings)
        if decision.kind is None:
            continue
        entry = _entry(info, obj.partition, "dry_run" if dry_run else "pending", kind=decision.kind,
                       reason=decision.reason, deltas=decision.deltas, deltaBytes=decision.delta_bytes,
                       baseBytes=decision.base_bytes, abortedWriteIds=decision.aborted)
        results.append(entry)
        with _lock:
            failures = _failures.get(key, 0)
        if obj.running_compaction is not None:
            entry.update(status="skipped", reason=f"a compaction is running (transaction {obj.running_compaction})")
        elif failures >= settings.failed_compacts_threshold:
            entry.update(status="skipped", reason=f"the last {failures} compactions failed ({FAILED}="
                                                  f"{settings.failed_compacts_threshold}); compact it explicitly")
        elif max_bytes is not None and input_bytes(decision) > max_bytes:
            entry.update(status="skipped", reason=f"{decision.kind} compaction would read {input_bytes(decision)} "
                                                  f"bytes, more than {ENV_MAX_BYTES}={max_bytes} for a compaction "
                                                  "inside a commit; run run_initiator() or AcidTable.compact() "
                                                  f"(it was due: {decision.reason})")
        elif not dry_run:
            pending.setdefault(decision.kind, []).append((obj, entry))
    for kind, batch in pending.items():
        _compact(store, info, kind, batch, storage_options, run_tasks)
    return results


def _compact(store: TransactionStore, info: TableInfo, kind: str, batch: list[tuple[DataObject, dict]],
             storage_options: tuple, run_tasks: Any) -> None:
    from .compactor import compact_table

    keys = [_key(store, info.table_id, obj.partition) for obj, _ in batch]
    with _lock:
        for key in keys:
            _last_attempt[key] = time.monotonic()
    partitions = [obj.partition for obj, _ in batch]
    shown = ", ".join(partitions[:5]) + (f" and {len(partitions) - 5} more" if len(partitions) > 5 else "")
    where = info.location + (f" (partitions {shown})" if info.partition_columns else "")
    logger.info("%s compaction of %s: %s", kind, where, "; ".join(e["reason"] for _, e in batch))
    try:
        metrics = compact_table(info.location, kind, partitions=partitions, metastoreUrl=store.connect_url(),
                                storageOptions=storage_options, runTasks=run_tasks)
    except ConflictError as exc:  # an overwrite won: nothing to do, and not the compaction's fault
        logger.info("%s compaction of %s gave way to a concurrent write: %s", kind, where, exc)
        for _, entry in batch:
            entry.update(status="conflict", error=str(exc))
        return
    except Exception as exc:
        logger.error("%s compaction of %s failed: %s", kind, where, exc, exc_info=True)
        with _lock:
            for key in keys:
                _failures[key] = _failures.get(key, 0) + 1
        for _, entry in batch:
            entry.update(status="failed", error=f"{type(exc).__name__}: {exc}")
        return
    with _lock:
        for key in keys:
            _failures.pop(key, None)
    skipped = metrics.get("skipped") or {}
    for obj, entry in batch:
        if obj.partition in skipped:  # e.g. a base and aborted directories only: the cleaner's job
            entry.update(status="skipped", reason=f"the compactor found nothing to do ({skipped[obj.partition]}); "
                                                  f"it was due: {entry['reason']}", metrics=metrics)
        else:
            entry.update(status="compacted", metrics=metrics)


def open_metastore(metastore_url: str | TransactionStore | None) -> TransactionStore | None:
    """The store a URL names (an open one as is); None when none exists yet."""
    if is_store(metastore_url):  # an open store, of either kind
        return metastore_url
    from ..resolve import open_store

    return open_store(metastore_url)


@renamed(location_or_name="locationOrName", metastore_url="metastoreUrl", dry_run="dryRun",
         storage_options="storageOptions", run_tasks="runTasks")
def run_initiator(locationOrName: str | os.PathLike | None = None, *, metastoreUrl: str | None = None,
                  dryRun: bool = False, storageOptions: Mapping[str, Any] | None = None,
                  runTasks: Callable | None = None) -> list[dict]:
    """One pass of Hive's initiator over one table (a location, or a registered name such as
    ``db.sales``) or every table in the store: compact each data object over a threshold.

    Returns one dict per data object that needs a compaction (``partition``, ``kind``,
    ``reason``, the counts and sizes behind it, and ``status``: ``compacted`` with the
    compactor's ``metrics``, ``dry_run``, ``skipped``, ``conflict`` or ``failed`` with an
    ``error``), plus one per table it left alone (``disabled``: ``no_auto_compaction``;
    ``error``: a bad threshold property). A failure on one table does not stop the others.
    Runs whatever ``ACIDORC_AUTO_COMPACT`` says: that switch is for the after-commit trigger.
    """
    options = tuple(sorted((storageOptions or {}).items()))
    global_settings()  # a bad environment variable is the caller's error, raised now
    store = open_metastore(metastoreUrl)
    if locationOrName is None:
        if store is None:  # no store yet: no tables
            return []
        infos = store.list_tables()
    else:
        key = os.fspath(locationOrName).strip()
        if store is None:
            raise TableNotRegisteredError(location=None if TABLE_NAME.fullmatch(key) else key,
                                          name=key if TABLE_NAME.fullmatch(key) else None)
        infos = [store.get_table(name=key) if TABLE_NAME.fullmatch(key) else store.get_table(key)]
    results: list[dict] = []
    for info in infos:
        try:
            results += initiate_table(store, info, partitions=None, dry_run=dryRun, storage_options=options,
                                      run_tasks=runTasks, after_commit=False)
        except Exception as exc:  # e.g. the table's directory is gone: go on with the others
            logger.error("cannot check %s for compaction: %s", info.location, exc, exc_info=True)
            results.append(_entry(info, None, "error", error=f"{type(exc).__name__}: {exc}"))
    return results


def main(argv: list[str] | None = None) -> int:
    """``python -m acid_source.maintenance.initiator [TABLE] [--dry-run] [--metastore-url URL]``:
    one initiator pass; prints one JSON object per line."""
    parser = argparse.ArgumentParser(prog="python -m acid_source.maintenance.initiator",
                                     description="Compact the data objects of ACID tables that are over "
                                                 "Hive's compaction thresholds.")
    parser.add_argument("table", nargs="?", help="a table location or name (default: every registered table)")
    parser.add_argument("--dry-run", action="store_true", help="only report what would be compacted")
    parser.add_argument("--metastore-url", default=None, help="the transaction store (default: "
                                                               "$ACIDORC_METASTORE_URL or ~/.acidorc)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    results = run_initiator(args.table, metastoreUrl=args.metastore_url, dryRun=args.dry_run)
    for entry in results:
        print(json.dumps(entry, default=str))
    return 1 if any(e["status"] in ("failed", "error") for e in results) else 0


if __name__ == "__main__":
    sys.exit(main())
