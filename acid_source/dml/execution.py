"""Running one UPDATE / DELETE / MERGE: transaction, snapshot, change tasks, commit (driver side).

The order is what makes it safe:

1. the transaction opens first, so every commit after it counts as concurrent for the
   conflict check at commit time;
2. the snapshot is taken next (latest committed state), and the target is read at exactly
   that snapshot;
3. the engine (Spark, or pyarrow for the engine-free API) turns matched rows into change rows
   that tasks write under the transaction's one write id (:mod:`acid_source.dml.events`);
4. one commit makes delete and insert events visible together, or the conflict rules abort it
   and its files are removed. A DML that matched nothing commits nothing and leaves nothing.
"""

from __future__ import annotations

from typing import Any, Callable

from ..commit import record_results, touched_partitions
from ..errors import UnsupportedOperationError
from ..faults import pause_point
from ..maintenance.auto_compact import compact_after_write
from ..resolve import registered_table, resolve_table
from ..scan.resolved import ResolvedTable
from ..table_ref import TableRef
from ..txn import Transaction
from ..write.rows import existing_partition_dirs
from ..write.task import TaskResult
from ..writes import plan_for_table
from .events import COUNT_NAMES, DELETE, INSERT, UPDATE_INSERT, ChangePlan
from .row_conflicts import commit_with_row_conflicts

#: produce(resolved table at the snapshot, plan for the tasks) -> what the tasks wrote
Producer = Callable[[ResolvedTable, ChangePlan], list[TaskResult]]


def run_dml(target: TableRef, operation: str, produce: Producer, *,
            merge_condition: str | None = None, repeated_deletes: bool = False,
            compaction_runner: Callable | None = None) -> dict[str, Any]:
    """Run one DML statement on ``target`` and return its metrics."""
    store, info = registered_table(target.location, target.metastore_url,
                                   f", which must allocate the write id of a {operation.upper()} (tables written by "
                                   "other engines are read-only here)")
    if info.insert_only:
        raise UnsupportedOperationError(operation.upper(), f"{info.location} is an insert-only table; as in Hive, "
                                        "its rows have no ROW__ID and cannot be updated or deleted")
    with Transaction.begin(store, description=f"{operation} {info.location}", heartbeat="thread") as txn:
        txn.lock(info.table_id, operation)  # a store that locks (an HMS): before the snapshot, as Hive does
        resolved = resolve_table(info.location, metastore_url=target.metastore_url,
                                 storage_options=target.storage_options)
        # the snapshot's listing, taken before the allocation: the store refuses a write id
        # whose directories are there already (a store behind the storage)
        write_id = txn.allocate_write_id(info.table_id, resolved.storage, listed=resolved.layout, operation=operation)
        plan = ChangePlan(plan_for_table(info, resolved.storage, write_id, partition_dirs=_partition_dirs(resolved)),
                          merge_condition=merge_condition, repeated_deletes=repeated_deletes)
        results = produce(resolved, plan)
        record_results(txn, info.table_id, results, storage=resolved.storage, write_id=write_id)
        metrics = _metrics(operation, results)
        metrics["txnId"] = txn.txn_id
        if not any(r.files for r in results):
            txn.abort(f"{operation} matched no rows")  # nothing was written: nothing to commit
            return metrics
        touched = touched_partitions(results)
        pause_point("dml.before_commit")  # tests hold a DML here to commit another job first
        if target.conflict_detection == "row":
            commit_with_row_conflicts(txn, operation, info.table_id, resolved, write_id, touched)
        else:
            txn.set_commit(operation, {info.table_id: touched})
    metrics["writeId"] = write_id
    metrics["partitions"] = touched
    metrics.update(compact_after_write(info.location, store, touched, storage_options=target.storage_options,
                                       run_tasks=compaction_runner))
    return metrics


def _partition_dirs(resolved: ResolvedTable) -> tuple:
    """(values, directory relative to the table root) of every existing partition: where the
    new row versions of a value go (:meth:`WritePlan.partition_dir`). Delete events never look
    here: they go to the directory their row was read from (the change row carries it)."""
    if not resolved.partition_columns:
        return ()
    schema = resolved.schema()
    types = [schema.field(c).type for c in resolved.partition_columns]
    root = resolved.storage.root.rstrip("/")
    return existing_partition_dirs([part.path[len(root):].strip("/") for part in resolved.layout.partitions],
                                   list(resolved.partition_columns), types)


def _metrics(operation: str, results: list[TaskResult]) -> dict[str, Any]:
    def total(op: int) -> int:
        return sum(r.counts.get(COUNT_NAMES[op], 0) for r in results)

    deleted, updated, inserted = total(DELETE), total(UPDATE_INSERT), total(INSERT)
    return {
        "operation": operation,
        "writeId": None,
        "txnId": None,
        "numAffectedRows": deleted + updated + inserted,
        "numDeletedRows": deleted,
        "numUpdatedRows": updated,
        "numInsertedRows": inserted,
        "numFilesAdded": sum(len(r.files) for r in results),
        "numBytesAdded": sum(r.bytes for r in results),
        "partitions": [],
    }
