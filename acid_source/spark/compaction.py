"""Compaction tasks as a Spark job: one Spark task per (data object, writer id), each running
:func:`~acid_source.maintenance.compaction_tasks.run_task` on an executor; the driver's
compactor (:mod:`acid_source.maintenance.compactor`) plans, records the outputs and commits.

The plans travel as pickled bytes in a DataFrame (one row, and one partition, per task) through
``mapInArrow``; each task answers with its pickled result, or with the typed error it raised,
which the driver raises again as it was (a :class:`~acid_source.errors.CorruptFileError` names
the file, not a Java stack trace).
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa

from ..errors import AcidError

if TYPE_CHECKING:
    from ..maintenance.compaction_tasks import CompactionTask, CompactionTaskResult

_RESULT_SCHEMA = "idx int, result binary, error binary"


def spark_task_runner(spark: Any) -> Callable[[list["CompactionTask"]], list["CompactionTaskResult"]]:
    """A ``run_tasks`` for :func:`~acid_source.maintenance.compactor.compact_table` that runs
    the tasks on ``spark``'s executors."""

    def run(tasks: list["CompactionTask"]) -> list["CompactionTaskResult"]:
        return run_compaction_tasks(spark, tasks)

    return run


def run_compaction_tasks(spark: Any, tasks: list["CompactionTask"]) -> list["CompactionTaskResult"]:
    """Run ``tasks`` as one Spark job; the results in task order. The first typed error a task
    raised (in task order) is raised here."""
    if not tasks:
        return []
    payload = [(i, pickle.dumps(t)) for i, t in enumerate(tasks)]
    frame = _one_row_per_partition(spark, payload)
    rows = frame.mapInArrow(_run_tasks_of_partition, _RESULT_SCHEMA).collect()
    by_index: dict[int, Any] = {}
    errors: list[tuple[int, AcidError]] = []
    for row in rows:
        if row["error"] is not None:
            errors.append((row["idx"], pickle.loads(row["error"])))
        else:
            by_index[row["idx"]] = pickle.loads(row["result"])
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
    missing = [i for i in range(len(tasks)) if i not in by_index]
    if missing:  # Spark lost a partition's output without failing the job: never commit that
        raise AcidError(f"the Spark job returned no result for compaction task(s) "
                        f"{', '.join(tasks[i].description for i in missing)}")
    return [by_index[i] for i in range(len(tasks))]


def _one_row_per_partition(spark: Any, payload: list[tuple[int, bytes]]):
    schema = "idx int, task binary"
    context = getattr(spark, "sparkContext", None)
    if context is not None:  # classic Spark: exactly one plan per partition, so one per Spark task
        return spark.createDataFrame(context.parallelize(payload, len(payload)), schema)
    return spark.createDataFrame(payload, schema).repartition(len(payload))  # Spark Connect


def _run_tasks_of_partition(batches):
    """The Spark task: run each plan of the partition (normally one)."""
    from ..maintenance.compaction_tasks import run_task

    for batch in batches:
        for idx, blob in zip(batch.column("idx").to_pylist(), batch.column("task").to_pylist()):
            result = error = None
            try:
                result = pickle.dumps(run_task(pickle.loads(blob)))
            except AcidError as exc:  # typed: the driver raises it as it is
                error = pickle.dumps(exc)
            yield pa.RecordBatch.from_arrays(
                [pa.array([idx], pa.int32()), pa.array([result], pa.binary()), pa.array([error], pa.binary())],
                names=["idx", "result", "error"])
