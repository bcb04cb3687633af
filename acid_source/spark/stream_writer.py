"""The Structured Streaming sink: ``df.writeStream.format("acidorc")`` commits one transaction
per micro-batch, exactly once.

How Spark (4.x) drives a Python streaming writer, and why the pieces sit where they do:

* ``DataSource.streamWriter`` runs on the driver once per micro-batch, in a planning worker;
  Spark then pickles that writer once for the batch's tasks. The transaction is opened there,
  lazily, when the writer is pickled (:meth:`AcidOrcStreamWriter.__getstate__`), as the batch
  writer opens it when Spark asks for it: a staged write with a detached heartbeat process.
* Commit and abort run in another driver-side process on a *fresh* writer that Spark builds with
  ``streamWriter`` again and never pickles, so it opens nothing; it finds the transaction through
  the staged write each task's commit message carries (no password inside).
* Exactly once: the sink's identity is Spark's query id (``sql.streaming.queryId``, stored in the
  checkpoint: the same across restarts of the query, new when the checkpoint is deleted), which
  the tasks put into their commit messages. ``(sink, batchId)`` is recorded in the store in the
  same database transaction as the commit. After a crash between the store's commit and Spark's
  commit log, Spark replays the batch with the same offsets and writes new files: the store
  already has the batch, so the replay's transaction is aborted (its files removed) and commits
  nothing twice. A racing replay that loses in the store (BatchAlreadyCommittedError) is
  aborted by the store the same way.

The query id and not the checkpoint location: a query restarted from a deleted checkpoint starts
its batch ids at 0 again and must not find them "already committed", and the checkpoint may come
from ``spark.sql.streaming.checkpointLocation`` rather than an option.
"""

from __future__ import annotations

import logging
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ..staged import StagedWrite
from ..write.task import TaskResult
from .options import with_option_errors, write_spec

#: options Spark's streaming writer takes itself; they never reach :class:`WriteSpec`
STREAMING_OPTIONS = ("checkpointLocation",)
#: the task-local properties Spark sets for a micro-batch's tasks
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"

_log = logging.getLogger("acidorc.stream")

#: This planning process's last transaction per (table path, checkpoint location): Spark plans
#: a query's next micro-batch only once the previous one ended, so if that transaction is
#: still open then, its batch failed without a task reporting it (Spark's abort got no commit
#: message to find it by) and nothing will ever commit it: it is aborted rather than kept open
#: by its heartbeat until the driver exits. Spark reuses its planning worker; with a new one,
#: such a transaction expires only once the driver has gone.
_PLANNED: dict[tuple[str, str], StagedWrite] = {}


def _abort_abandoned(staged: StagedWrite | None) -> None:
    if staged is None:
        return
    from ..errors import AcidError

    try:
        txn = staged.transaction
        if txn.metastore.txn_state(txn.txn_id) == "open":
            staged.abort(reason="its micro-batch ended without a commit (the query planned its next batch)")
            _log.info("aborted transaction %d of a micro-batch that ended without a commit", txn.txn_id)
    except AcidError as exc:  # committed meanwhile, or the store is unreachable: leave it to expire
        _log.warning("could not end the transaction of an earlier micro-batch: %s", exc)


@with_option_errors
def make_stream_writer(options, schema: StructType, overwrite: bool) -> "AcidOrcStreamWriter":
    """The writer of one micro-batch (Spark calls ``streamWriter`` for each). Checks the options
    now, so that a bad one fails the query before any transaction is opened."""
    if overwrite:
        from ..errors import UnsupportedOperationError

        raise UnsupportedOperationError(
            "streaming write in complete or update output mode",
            "the acidorc sink only appends: use outputMode('append') (each micro-batch commits one "
            "transaction of inserts)")
    skip = {o.lower() for o in STREAMING_OPTIONS}
    write_options = {k: v for k, v in dict(options).items() if str(k).lower() not in skip}
    if not str(write_options.get("path") or "").strip():
        from ..errors import InvalidOptionError

        # Spark's toTable(name) creates a catalog entry for a Python data source but hands the
        # writer only the options given to this query, never a table's location (Spark 4.x)
        raise InvalidOptionError("path", "the acidorc sink writes to a table location: .start(path), or "
                                 ".option('path', ...) (toTable(name) gives a Python data source no location)")
    write_spec(write_options)  # errors name the option
    checkpoint = next((str(v) for k, v in dict(options).items() if str(k).lower() == "checkpointlocation"), None)
    return AcidOrcStreamWriter(write_options, schema, checkpoint)


def sink_id_for_query(query_id: str) -> str:
    """The sink identity recorded in the store with each committed micro-batch."""
    return f"spark-query-{query_id}"


class AcidStreamCommitMessage(WriterCommitMessage):
    """One task's files, and how the commit process finds the batch's transaction and sink."""

    def __init__(self, result: TaskResult, staged: StagedWrite, sink_id: str, batch_id: int | None):
        self.result = result
        self.staged = staged
        self.sink_id = sink_id
        self.batch_id = batch_id


class AcidOrcStreamWriter(DataSourceStreamArrowWriter):
    """One micro-batch: tasks write Arrow batches into the staged write of the batch's
    transaction, the driver commits it once per ``(sink, batchId)``."""

    def __init__(self, options: dict, schema: StructType, checkpoint: str | None = None):
        self._options = options
        self._schema = schema
        self._checkpoint = checkpoint
        self._staged: StagedWrite | None = None

    # --- the planning process ----------------------------------------------------------------
    def __getstate__(self) -> dict:
        """Pickled for the batch's tasks: open the transaction now (once per writer). The
        commit process's writer is never pickled and so never opens one."""
        if self._staged is None:
            self._staged = self._open()
        return dict(self.__dict__)

    @with_option_errors
    def _open(self) -> StagedWrite:
        from pyspark.sql.pandas.types import to_arrow_schema

        from ..writes import stage_write

        key = (str(self._options["path"]), self._checkpoint) if self._checkpoint else None
        if key is not None:
            _abort_abandoned(_PLANNED.pop(key, None))
        staged = stage_write(write_spec(self._options), overwrite=False,
                             data_schema=to_arrow_schema(self._schema, timezone="UTC"), heartbeat="process")
        try:
            detached = staged.detached()
        except BaseException as exc:
            staged.abort(reason=f"could not hand the transaction to Spark: {exc}")
            raise
        if key is not None:
            _PLANNED[key] = staged
        return detached

    # --- the tasks ---------------------------------------------------------------------------
    def write(self, iterator: Iterator[pa.RecordBatch]) -> AcidStreamCommitMessage:
        from pyspark import TaskContext

        from ..errors import InvalidArgumentError

        if self._staged is None:
            raise InvalidArgumentError("streamWriter", "the writer reached a task without its transaction "
                                       "(it must be pickled by Spark's planning step)")
        context = TaskContext.get()
        query_id = context.getLocalProperty(QUERY_ID_PROPERTY) if context else None
        if context is None or not query_id:
            raise InvalidArgumentError(QUERY_ID_PROPERTY, "the acidorc stream writer runs in the tasks of a "
                                       "streaming query only (the task has no query id)")
        batch = context.getLocalProperty(BATCH_ID_PROPERTY)
        task = self._staged.writer(context.partitionId())
        try:
            for b in iterator:
                task.write(b)
            result = task.close()
        except BaseException:
            task.abort()
            raise
        return AcidStreamCommitMessage(result, self._staged, sink_id_for_query(query_id),
                                       int(batch) if batch is not None else None)

    # --- the commit process ------------------------------------------------------------------
    def commit(self, messages: list[AcidStreamCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        """Commit the micro-batch unless the store has ``(sink, batchId)`` already (a replay):
        then abort this attempt's transaction, which removes its files."""
        commit_batch([m for m in messages if m is not None], batchId)

    def abort(self, messages: list[AcidStreamCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        given = [m for m in messages if m is not None]
        if not given:
            _log.warning("micro-batch %d failed and no task reported its transaction: it is aborted when the "
                         "query plans its next micro-batch (or expires once the driver has gone)", batchId)
            return
        given[0].staged.abort([m.result for m in given], reason=f"micro-batch {batchId} failed")


def commit_batch(messages: list[AcidStreamCommitMessage], batch_id: int) -> dict | None:
    """Commit one micro-batch's messages as ``(sink, batch_id)``; the write's metrics, or None
    when nothing was committed (an empty batch, or one the store has already)."""
    from ..errors import BatchAlreadyCommittedError

    if not messages:
        return None  # no task ran: no transaction reached a task (see abort)
    staged = messages[0].staged
    results = [m.result for m in messages]
    sink_id = messages[0].sink_id
    if sum(r.rows for r in results) == 0:
        staged.abort(results, reason=f"micro-batch {batch_id} of {sink_id} has no rows")
        return None
    try:
        committed_by = staged.transaction.metastore.sink_batch(sink_id, batch_id)
    except BaseException as exc:  # e.g. a store that keeps no sink batches (a Hive Metastore)
        staged.abort(results, reason=f"micro-batch {batch_id} of {sink_id}: {exc}")
        raise
    if committed_by is not None:
        staged.abort(results, reason=f"micro-batch {batch_id} of {sink_id} was committed already by "
                     f"transaction {committed_by} (a replay after a restart)")
        _log.info("micro-batch %d of %s replayed: committed already by transaction %d; this attempt's "
                  "files are removed", batch_id, sink_id, committed_by)
        return None
    try:
        return staged.commit(results, sink=(sink_id, batch_id))
    except BatchAlreadyCommittedError:
        return None  # a racing replay committed it first; the store aborted ours, its files are gone
