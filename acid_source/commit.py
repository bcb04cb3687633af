"""The one commit path of every write (driver side): append, overwrite, the Spark write, UPDATE /
DELETE / MERGE and compaction all end here.

A write runs in ``with Transaction.begin(...) as txn:`` (an exception aborts it and removes what
its tasks wrote); its tasks report :class:`~acid_source.write.task.TaskResult` s, which
:func:`record_results` hands to the transaction before anything can fail, so an abort finds every
directory; the commit itself is the transaction's (:meth:`Transaction.commit`, or the row-level
conflict loop of a DML); then :func:`after_commit` runs the one post-commit step: an automatic
compaction of what a data write touched, or the vacuum after a compaction. The post-commit step
never fails the write: the data is committed by then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

from .write.task import TaskResult

if TYPE_CHECKING:
    from .metastore import Metastore
    from .storage import Storage
    from .txn import Transaction

#: the operation a compaction commits (every other operation is a data write)
COMPACTION = "compaction"


def record_results(txn: "Transaction", table_id: int, results: Iterable[TaskResult], *, storage: "Storage",
                   write_id: int | None) -> None:
    """Tell ``txn`` every directory the tasks created (an abort removes them); ``write_id``
    None for a compaction (its outputs are named by its transaction id)."""
    txn.record_written(table_id, [d for r in results for d in r.directories], storage=storage,
                       write_id=write_id, no_write_id=write_id is None)


def touched_partitions(results: Iterable[TaskResult]) -> list[str]:
    """The data objects (``""`` or partition paths) the tasks wrote files into."""
    return sorted({f.partition for r in results for f in r.files})


def write_metrics(operation: str, write_id: int, txn_id: int, results: list[TaskResult]) -> dict[str, Any]:
    """The metrics of an append or overwrite (``AcidTable.append`` returns them)."""
    return {
        "operation": operation,
        "writeId": write_id,
        "txnId": txn_id,
        "numOutputRows": sum(r.rows for r in results),
        "numFiles": sum(len(r.files) for r in results),
        "partitions": touched_partitions(results),
    }


def after_commit(operation: str, location: str, store: "Metastore", partitions: Iterable[str], *,
                 storage_options: Any = (), metastore_url: str | None = None,
                 run_tasks: Callable | None = None) -> dict[str, Any]:
    """The one post-commit step, for every kind of write; returns the metrics it adds.

    After a data write: the automatic compaction of the data objects it touched
    (``autoCompaction``, only when one ran; ``run_tasks`` runs its tasks, e.g. as a Spark job).
    After a compaction: the vacuum of what earlier compactions made obsolete (``vacuum``).
    """
    if operation == COMPACTION:
        from .maintenance.cleaner import vacuum_after_compaction

        return {"vacuum": vacuum_after_compaction(location, metastore_url=metastore_url,
                                                  storage_options=storage_options, metastore=store)}
    from .maintenance.auto_compact import maybe_compact_after_commit

    compactions = maybe_compact_after_commit(location, store, sorted(partitions), storage_options=storage_options,
                                             run_tasks=run_tasks)
    return {"autoCompaction": compactions} if compactions else {}
