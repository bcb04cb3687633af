"""One way to run acidorc's work in Spark tasks and get typed answers back.

A task answers with one row per unit of work: its index, and either its pickled result or the
pickled :class:`~acid_source.errors.AcidError` it raised. The driver raises the first typed
error (in index order) as it was raised - a :class:`~acid_source.errors.CorruptFileError`
names its file, a :class:`~acid_source.errors.MergeCardinalityError` its row - instead of a
Java stack trace whose text would have to be searched. Anything else a task raises is a bug
or Spark's own failure and stays Spark's error.

Used by compaction (:mod:`.compaction`: one Spark task per planned task) and by UPDATE /
DELETE / MERGE (:mod:`.dml`: one answer per partition of the change rows). What runs in the
tasks imports nothing driver-side.

Errors Spark itself raises around a job (an ANSI cast that failed in the JVM before any Python
ran, a JVM stack overflow) are read here by their facts, never by their text:
:func:`error_condition`, :func:`sql_state`, :func:`stack_overflow`; the caller, who knows which
argument each expression came from, turns them into typed errors.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import pyarrow as pa

from ..errors import AcidError

T = TypeVar("T")
R = TypeVar("R")

RESULT_SCHEMA = "idx int, result binary, error binary"


def answer(idx: int, work: Callable[[], Any]) -> pa.RecordBatch:
    """Run ``work`` in a task: a one-row batch of :data:`RESULT_SCHEMA` holding its pickled
    result, or the pickled typed error it raised."""
    result = error = None
    try:
        result = pickle.dumps(work())
    except AcidError as exc:  # typed: the driver raises it as it is
        error = pickle.dumps(exc)
    return pa.RecordBatch.from_arrays(
        [pa.array([idx], pa.int32()), pa.array([result], pa.binary()), pa.array([error], pa.binary())],
        names=["idx", "result", "error"])


def results_of(rows: Iterable[Any], expected: int | None = None,
               describe: Callable[[int], str] = str) -> list[Any]:
    """The unpickled results of collected :data:`RESULT_SCHEMA` rows, in index order. Raises
    the typed error of the lowest index that failed; with ``expected``, a result missing for
    any index in ``range(expected)`` is an error too (Spark lost an output without failing
    the job: nothing may be committed from it)."""
    by_index: dict[int, Any] = {}
    errors: list[tuple[int, AcidError]] = []
    for row in rows:
        if row["error"] is not None:
            errors.append((row["idx"], pickle.loads(row["error"])))
        else:
            by_index[row["idx"]] = pickle.loads(row["result"])
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
    if expected is not None:
        missing = [i for i in range(expected) if i not in by_index]
        if missing:
            raise AcidError(f"the Spark job returned no result for task(s) {', '.join(describe(i) for i in missing)}")
    return [by_index[i] for i in sorted(by_index)]


def run_each(spark: Any, items: Sequence[T], work: Callable[[T], R],
             describe: Callable[[int], str] = str) -> list[R]:
    """Run ``work(item)`` for every item as one Spark job, one Spark task per item; the
    results in item order. ``work`` and the items are pickled to the executors."""
    if not items:
        return []
    payload = [(i, pickle.dumps(item)) for i, item in enumerate(items)]
    frame = one_row_per_partition(spark, payload)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for idx, blob in zip(batch.column("idx").to_pylist(), batch.column("task").to_pylist()):
                yield answer(idx, lambda: work(pickle.loads(blob)))

    return results_of(frame.mapInArrow(task, RESULT_SCHEMA).collect(), len(items), describe)


def run_per_partition(frame: Any, work: Callable[[int, Iterator[pa.RecordBatch]], R]) -> list[R]:
    """Run ``work(partition id, batches of the partition)`` in every task of ``frame`` (one
    answer per partition); the results in partition order."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        idx = context.partitionId() if context else 0
        yield answer(idx, lambda: work(idx, batches))

    return results_of(frame.mapInArrow(task, RESULT_SCHEMA).collect())


def error_condition(exc: BaseException) -> str | None:
    """Spark's error condition of a pyspark exception (``CAST_OVERFLOW``, ...), or None."""
    for method in ("getCondition", "getErrorClass"):
        get = getattr(exc, method, None)
        if get is not None:
            try:
                value = get()
            except Exception:  # a captured exception whose JVM side cannot answer
                continue
            if value:
                return str(value)
    return None


def sql_state(exc: BaseException) -> str | None:
    """The SQLSTATE of a pyspark exception (class ``22``: a data exception), or None."""
    get = getattr(exc, "getSqlState", None)
    try:
        return str(get()) if get is not None and get() else None
    except Exception:  # a captured exception whose JVM side cannot answer
        return None


def stack_overflow(exc: BaseException) -> bool:
    """Whether a Py4J error was caused by a ``java.lang.StackOverflowError`` in the JVM: Spark
    recurses over expression trees, and one nested deeply enough overflows the thread's stack."""
    java = getattr(exc, "java_exception", None)
    for _ in range(20):  # a cause chain is short; never loop on a cyclic one
        if java is None:
            return False
        try:
            if java.getClass().getName() == "java.lang.StackOverflowError":
                return True
            java = java.getCause()
        except Exception:  # the JVM side is gone: not something we can tell
            return False
    return False


def one_row_per_partition(spark: Any, payload: list[tuple[int, bytes]]) -> Any:
    """A DataFrame ``idx int, task binary`` of the payload, one row per partition."""
    schema = "idx int, task binary"
    context = getattr(spark, "sparkContext", None)
    if context is not None:  # classic Spark: exactly one item per partition, so one per Spark task
        return spark.createDataFrame(context.parallelize(payload, len(payload)), schema)
    return spark.createDataFrame(payload, schema).repartition(len(payload))  # Spark Connect
