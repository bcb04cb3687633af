"""Compaction tasks as a Spark job: one Spark task per (data object, writer id), each running
:func:`~acid_source.maintenance.compaction_tasks.run_task` on an executor; the driver's
compactor (:mod:`acid_source.maintenance.compactor`) plans, records the outputs and commits.

The plans travel pickled, one per Spark task, through :func:`.tasks.run_each`; each task
answers with its result, or with the typed error it raised, which the driver raises again as
it was (a :class:`~acid_source.errors.CorruptFileError` names the file, not a Java stack trace).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .tasks import run_each

if TYPE_CHECKING:
    from ..maintenance.compaction_tasks import CompactionTask


def spark_task_runner(spark: Any) -> Callable[[list["CompactionTask"]], list[Any]]:
    """A ``run_tasks`` for :func:`~acid_source.maintenance.compactor.compact_table` that runs
    the tasks on ``spark``'s executors."""

    def run(tasks: list["CompactionTask"]) -> list[Any]:
        return run_compaction_tasks(spark, tasks)

    return run


def run_compaction_tasks(spark: Any, tasks: list["CompactionTask"]) -> list[Any]:
    """Run ``tasks`` as one Spark job; the results in task order. The first typed error a task
    raised (in task order) is raised here."""
    from ..maintenance.compaction_tasks import run_task

    return run_each(spark, tasks, run_task, describe=lambda i: f"compaction task {tasks[i].description}")
