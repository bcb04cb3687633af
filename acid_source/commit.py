"""The one commit path of every write (driver side): append, overwrite, the Spark write, UPDATE /
DELETE / MERGE and compaction all end here.

A write runs in ``with Transaction.begin(...) as txn:`` (an exception aborts it and removes what
its tasks wrote); its tasks report :class:`~acid_source.write.task.TaskResult` s, which
:func:`record_results` hands to the transaction before anything can fail, so an abort finds every
directory; the commit itself is the transaction's (:meth:`Transaction.commit`, or the row-level
conflict loop of a DML). What runs after a commit belongs to its verb and lives in
``maintenance/``: a data write asks for an automatic compaction of what it touched
(:func:`acid_source.maintenance.auto_compact.compact_after_write`), a compaction vacuums what it
made obsolete; neither fails the write, whose data is committed by then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from .write.task import TaskResult

if TYPE_CHECKING:
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
