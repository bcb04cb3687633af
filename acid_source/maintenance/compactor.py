"""Running one compaction of a table (driver side): transaction, plan, tasks, commit.

The order is what keeps every reader correct:

1. the transaction opens first; its id T names the outputs (``_vT``), and every reader whose
   transaction list does not see T committed ignores them - readers already running, and
   readers of any version committed before T (time travel);
2. the snapshot is taken next, then storage is listed and the listing proven to hold every
   committed write id (:mod:`acid_source.completeness`), and the plan bounds the work below the
   lowest open write id (:mod:`.compaction_plan`); its inputs must hold every committed write
   id its outputs will claim to hold, or the compaction aborts;
3. the output directories are recorded on the transaction before anything is written, so an
   abort (a failed task, a conflict at commit) removes them all;
4. tasks write the outputs - in this process, or as a Spark job (``run_tasks``);
5. one commit (operation ``compaction``, the compacted data objects) makes them visible. The
   inputs stay on storage, now obsolete, until the cleaner removes them.

A compaction has no write id of its own (as in Hive): it adds no version to the table's
history. The store fails its commit only when an overwrite (or another compaction) committed on
one of its data objects after it started; inserts, updates, deletes and merges committed
meanwhile do not matter, because their rows and delete events keep the ROW__IDs they had.
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Mapping

from ..commit import COMPACTION, record_results
from ..completeness import check_inputs, listed_snapshot, missing_data_error
from ..deprecation import renamed
from ..errors import StoreBehindStorageError
from ..layout.ids_on_storage import ids_on_storage
from ..layout.table_dirs import FULL_ACID, INSERT_ONLY, TableLayout
from ..resolve import registered_table
from ..scan.resolved import ResolvedTable
from ..storage import Storage
from ..txn import Transaction
from ..write.task import TaskResult
from .cleaner import vacuum_after_compaction
from .compaction_plan import CompactionPlan, compaction_kind, plan_compaction
from .compaction_tasks import CompactionTask, prepare_output_dir
from .compaction_tasks import run_tasks as run_in_process

#: run_tasks(tasks) -> one result per task, in any order (e.g. a Spark job)
TaskRunner = Callable[[list[CompactionTask]], list[TaskResult]]


@renamed(partition_filter="partitionFilter", metastore_url="metastoreUrl", storage_options="storageOptions",
         run_tasks="runTasks")
def compact_table(location: str, kind: str, *, partitionFilter: str | None = None,
                  partitions: Collection[str] | None = None, metastoreUrl: str | None = None,
                  storageOptions: Any = (), runTasks: TaskRunner | None = None) -> dict[str, Any]:
    """Compact the table at ``location`` (``kind`` ``"minor"`` or ``"major"``), optionally only
    the partitions matching ``partitionFilter`` (a SQL condition on partition columns) and / or
    only the data objects ``partitions`` (relative partition paths, ``""`` for an unpartitioned
    table: typed values, as the initiator knows them), in one transaction; returns its metrics.
    A table the transaction store does not know is refused (:class:`TableNotRegisteredError`):
    its write ids are not ours to reason about."""
    kind = compaction_kind(kind)
    options = tuple(sorted(storageOptions.items())) if isinstance(storageOptions, Mapping) else tuple(storageOptions)
    store, info = registered_table(location, metastoreUrl, "; acidorc compacts only tables whose write ids it "
                                   "allocates (Hive's own compactor compacts Hive's tables)")
    with Transaction.begin(store, description=f"{kind} compaction {info.location}", heartbeat="thread") as txn:
        storage = Storage(info.location, options)
        # the snapshot after the open (T is open in it), then the listing, proven complete
        (write_ids, txns), layout, gaps = listed_snapshot(store, info, storage, lambda: store.snapshot(info.table_id))
        if gaps:
            raise missing_data_error(layout, gaps, f"compact {info.location}")
        # a store behind the storage never compacts: its outputs could take existing names
        store.refuse_if_behind(info.table_id, ids_on_storage(layout))
        table = ResolvedTable(storage, info.location, layout, write_ids, txns,
                              INSERT_ONLY if info.insert_only else FULL_ACID, info)
        plan = plan_compaction(table, kind, txn.txn_id, partition_filter=partitionFilter, partitions=partitions)
        if not plan.objects:
            txn.abort("nothing to compact")
            return _metrics(plan, [])
        check_inputs(store, info, layout, plan.objects, plan.write_ids, plan.kind)
        _refuse_existing_outputs(store, layout, plan)  # before they are recorded: an abort removes those
        txn.record_written(info.table_id, plan.output_dirs, storage=storage, no_write_id=True)
        for directory in plan.output_dirs:
            prepare_output_dir(storage, directory, plan.table_kind)
        results = list((runTasks or run_in_process)(plan.tasks))
        record_results(txn, info.table_id, results, storage=storage, write_id=None)
        if plan.table_kind == INSERT_ONLY:
            _fill_empty_outputs(plan, results)
        txn.set_commit(COMPACTION, {info.table_id: [o.partition for o in plan.objects]})
    metrics = _metrics(plan, results)
    # what earlier compactions made obsolete (never fails the compaction: it has committed)
    metrics["vacuum"] = vacuum_after_compaction(info.location, metastore_url=metastoreUrl, storage_options=options,
                                                metastore=store)
    return metrics


def _refuse_existing_outputs(store, layout: TableLayout, plan: CompactionPlan) -> None:
    """A compaction never writes into a directory that exists: its ``_vT`` names carry its own
    transaction id, so one already listed was left by a history the store has lost (transaction
    ids handed out again after the store was restored from an older copy)."""
    listed = {e.path for entries in layout.listings.values() for e in entries}
    taken = sorted(layout.storage.display(d) for d in plan.output_dirs if d in listed)
    if taken:
        raise StoreBehindStorageError(
            f"the transaction store {store.url} is behind the storage of {layout.storage.display()}: compaction "
            f"transaction {plan.txn_id} would write {', '.join(taken)}, which already exist(s); transaction ids "
            "are being handed out again (was the store restored from an older copy?). Nothing was written. To "
            f"recover, register the history on storage: acid_source.drop_table({layout.storage.display()!r}) (the "
            "files stay), then acid_source.create_table(..., adopt=True); or write to a new location",
            location=layout.storage.display(), directories=tuple(taken), url=store.url)


def _fill_empty_outputs(plan: CompactionPlan, results: list[TaskResult]) -> None:
    """An insert-only output without rows gets one empty file: the directory must exist (on
    object stores too) for the compaction to take effect, and insert-only directories carry
    no ``_orc_acid_version``."""
    import os
    import tempfile

    from ..orc.writer import InsertFileWriter

    written = {f.path.rsplit("/", 1)[0] for r in results for f in r.files}
    for obj in plan.objects:
        for directory in obj.outputs:
            if directory in written or not obj.tasks:
                continue
            task = obj.tasks[0]
            with tempfile.TemporaryDirectory(prefix="acidorc-compact-") as tmp:
                local = os.path.join(tmp, "000000_0")
                InsertFileWriter(local, task.data_schema, 0, 0, compression=task.compression, plain=True).close()
                task.storage.put_file(local, task.storage.join(directory, "000000_0"))


def _metrics(plan: CompactionPlan, results: list[TaskResult]) -> dict[str, Any]:
    return {
        "operation": "compaction",
        "kind": plan.kind,
        "txnId": plan.txn_id,
        "writeIdHighWatermark": plan.write_ids.high_watermark,
        "numDataObjectsCompacted": len(plan.objects),
        "partitions": [o.partition for o in plan.objects],
        "skipped": dict(plan.skipped),
        "numInputDirs": sum(len(o.input_dirs) for o in plan.objects),
        "numInputFiles": _total(results, "inputFiles"),
        "numInputRows": _total(results, "inputRows"),
        "numOutputDirs": len(plan.output_dirs),
        "outputDirs": [f"{o.partition}/{d.rsplit('/', 1)[-1]}".lstrip("/") for o in plan.objects for d in o.outputs],
        "numOutputFiles": sum(len(r.files) for r in results),
        "numOutputRows": sum(r.rows for r in results),
        "numOutputBytes": sum(r.bytes for r in results),
        "numRowsDroppedDeleted": _total(results, "rowsDroppedDeleted"),
        "numRowsDroppedAborted": _total(results, "rowsDroppedAborted"),
    }


def _total(results: list[TaskResult], count: str) -> int:
    return sum(r.counts.get(count, 0) for r in results)
