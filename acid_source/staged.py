"""A staged write: an append or overwrite whose tasks run anywhere and whose commit runs once.

This is the write every engine runs: ``AcidTable.append`` / ``overwrite`` (one task, in this
process), the Spark data source (tasks on executors, the commit in Spark's driver-side commit
process) and anything that produces Arrow batches - a streaming producer, another engine.
Tasks get a picklable plan and never talk to the transaction store; the commit goes through
the one commit path (:mod:`acid_source.commit`).

The object pickles (for Spark's tasks and its commit process) as a plan plus the fields of a
:class:`~acid_source.txn.TransactionRef` (which carries no password), as plain values: a task
that unpickles it imports this module, ``write/`` and pyarrow, nothing driver-side; the store
and the transaction are imported where the commit or abort runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

import pyarrow as pa

from .write.job import WriteJob
from .write.task import TaskResult, TaskWriter

if TYPE_CHECKING:
    from .txn import Transaction, TransactionRef


class StagedWrite:
    """An append or overwrite staged in an open transaction (from ``AcidTable.newWrite``):
    ``writer(taskId)`` gives the task-side writer of each task, ``commit(results)`` makes what
    they wrote visible in one commit, ``abort()`` removes it. As a context manager it aborts
    on an exception, and when the block ends without a commit.

    >>> with table.newWrite(mode="append") as staged:                  # doctest: +SKIP
    ...     w = staged.writer(0)
    ...     for batch in batches:
    ...         w.write(batch)
    ...     metrics = staged.commit([w.close()])

    ``schema`` is what the tasks take: the table's columns, without the partition columns when
    the write goes to one static partition.
    """

    def __init__(self, job: WriteJob, txn: "Transaction | TransactionRef | tuple", *, location: str, schema: pa.Schema,
                 storage_options: tuple = (), check_batches: bool = False):
        self.job = job
        self.location = location
        self.schema = schema
        self._txn = txn
        self._storage_options = storage_options
        self._check_batches = check_batches
        self._writers: list[TaskWriter] = []  # this process's task writers (aborted with the write)
        self._done = False
        self._on_commit: Callable[[dict[str, Any]], None] | None = None

    # --- what it is ------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return "overwrite" if self.job.plan.overwrite else "append"

    @property
    def writeId(self) -> int:
        return self.job.plan.write_id

    @property
    def txnId(self) -> int:
        return self._txn[0] if isinstance(self._txn, tuple) else self._txn.txn_id

    @property
    def transaction(self) -> "Transaction":
        """The transaction the write runs in (found again from its reference in another
        process)."""
        return self._transaction()

    def on_commit(self, callback: Callable[[dict[str, Any]], None]) -> None:
        """Call ``callback(metrics)`` in this process once :meth:`commit` has committed (the
        handle that staged the write learns its new version). Not shipped to other processes."""
        self._on_commit = callback

    # --- the task side -----------------------------------------------------------------------
    def writer(self, taskId: int) -> TaskWriter:
        """The writer of task ``taskId`` (0, 1, ...; unique per task): ``write(batch)`` Arrow
        record batches of :attr:`schema`, then ``close()`` -> its result for :meth:`commit`, or
        ``abort()``. Runs anywhere the table's storage is reachable (a Spark task unpickles this
        object for it)."""
        if isinstance(taskId, bool) or not isinstance(taskId, int) or taskId < 0:
            from .errors import InvalidArgumentError

            raise InvalidArgumentError("taskId", f"expected an integer >= 0, got {taskId!r}")
        writer = TaskWriter(self.job.plan, taskId, expected=self.schema if self._check_batches else None)
        self._writers.append(writer)
        return writer

    # --- the driver side ---------------------------------------------------------------------
    def commit(self, results: Iterable[TaskResult], *, sink: tuple[str, int] | None = None) -> dict[str, Any]:
        """Commit what the tasks wrote (every task's ``close()`` result) in one transaction and
        run the post-commit step; returns the write's metrics (``operation``, ``writeId``,
        ``txnId``, ``numOutputRows``, ``numFiles``, ``partitions``, ``autoCompaction`` when one
        ran). On an error the write is aborted and leaves nothing.

        ``sink=(sink_id, batch_id)``: a streaming sink's micro-batch, recorded in the store with
        the commit, atomically. A batch committed already (a replay) commits nothing: the write
        is aborted, its files removed, and
        :class:`~acid_source.errors.BatchAlreadyCommittedError` names who committed it."""
        from .commit import write_metrics
        from .maintenance.auto_compact import compact_after_write

        results = list(results)
        self._require_open("commit")
        self._done = True
        txn = self._transaction()
        with txn:
            self.job.commit(txn, results, sink=sink)
        metrics = write_metrics(self.job.operation, self.writeId, txn.txn_id, results)
        if self._on_commit is not None:
            self._on_commit(metrics)
        metrics.update(compact_after_write(self.location, txn.metastore, metrics["partitions"],
                                           storage_options=self._storage_options))
        return metrics

    def abort(self, results: Iterable[TaskResult] = (), reason: str = "the write was aborted") -> None:
        """Abort: what every task wrote is removed (``results`` may name directories of tasks
        that ran elsewhere; those of the write id are found anyway)."""
        if self._done:
            return
        self._done = True
        for writer in self._writers:
            writer.abort()
        self.job.abort(self._transaction(), [*results, *(w.result for w in self._writers)], reason=reason)

    def __enter__(self) -> "StagedWrite":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._done:
            return
        self.abort(reason=f"{type(exc).__name__}: {exc}" if exc_type is not None
                   else "the staged write's block ended without a commit")

    # --- another process ---------------------------------------------------------------------
    def detached(self) -> "StagedWrite":
        """This write for another process (Spark's tasks and commit process): the transaction
        as a :class:`~acid_source.txn.TransactionRef` (no password inside; on this machine the
        commit process finds it again). Call it in the process that opened the transaction."""
        twin = StagedWrite(self.job, self._txn, location=self.location, schema=self.schema,
                           storage_options=self._storage_options, check_batches=self._check_batches)
        twin.__dict__.update(self.__getstate__())
        return twin

    def __getstate__(self) -> dict:
        """A plan and the fields of a TransactionRef (no password, no live client, no class of
        the driver's modules): Spark ships this to its tasks and to its driver-side commit
        process."""
        state = dict(self.__dict__)
        txn = state["_txn"]
        if not isinstance(txn, tuple):
            ref = txn.ref() if hasattr(txn, "ref") else txn
            state["_txn"] = (ref.txn_id, ref.url, ref.has_secret)
        state["_writers"] = []
        state["_on_commit"] = None
        return state

    def _transaction(self) -> "Transaction":
        from .txn import Transaction, TransactionRef

        if isinstance(self._txn, tuple):
            self._txn = TransactionRef(*self._txn)
        if isinstance(self._txn, TransactionRef):
            self._txn = Transaction.resume(self._txn)
        return self._txn

    def _require_open(self, doing: str) -> None:
        if self._done:
            from .errors import TransactionStateError

            raise TransactionStateError(f"cannot {doing} the staged write of transaction {self.txnId}: it has "
                                        "been committed or aborted already", txn_id=self.txnId, state="ended")

    def __repr__(self) -> str:
        return f"StagedWrite({self.location!r}, mode={self.mode!r}, writeId={self.writeId})"
