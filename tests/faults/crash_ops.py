"""The operations the crash-point suite runs in a child process, one per kind of step.

A child runs ``main([<operation>, <location>, <store url>, <tag>, <info file>])`` with
``$ACIDORC_CRASH_AT`` naming a step (the suite forks it from the forkserver of
``tests/worker_context.py``, acidorc already imported: :func:`run_in_child`; by hand,
``python crash_ops.py <operation> <location> <store url> <tag> <info file>``); it records
which transaction it opened in the info file (before any crash point can fire), then runs the
operation, which must die at the step.

Rows carry a ``tag`` naming their transaction, so a reader can tell a partial transaction.
"""

from __future__ import annotations

import json
import os
import sys

import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("part", pa.string())])
PARTS = ("a", "b", "c")
TASKS = 2
ROWS_PER_TASK = 12  # spread over every partition, so each task writes one file per partition


def task_batch(tag: str, task_id: int) -> pa.RecordBatch:
    ids = [task_id * 1000 + i for i in range(ROWS_PER_TASK)]
    return pa.RecordBatch.from_pydict({
        "id": pa.array(ids, pa.int64()),
        "tag": [tag] * ROWS_PER_TASK,
        "part": [PARTS[i % len(PARTS)] for i in range(ROWS_PER_TASK)],
    }, schema=SCHEMA)


def expected_rows(tag: str) -> list[tuple]:
    """The rows one append of ``tag`` writes, as sorted (id, tag, part) tuples."""
    return sorted((r["id"], r["tag"], r["part"])
                  for t in range(TASKS) for r in task_batch(tag, t).to_pylist())


class TaskFailed(RuntimeError):
    """What the second task raises in a failing append (the job must then abort)."""


def append(location: str, url: str, tag: str, *, fail_second_task: bool = False,
           info_file: str | None = None) -> dict:
    """One append as a Spark job would run it, without Spark: the driver opens the transaction,
    ``TASKS`` tasks write every partition, the driver commits (or aborts if a task failed)."""
    from acid_source.table import AcidTable

    # an exception leaving the block aborts the write: every task's files are removed
    with AcidTable(location, metastoreUrl=url).newWrite(mode="append") as staged:
        info = {"txn_id": staged.txnId, "write_id": staged.writeId, "tag": tag}
        if info_file is not None:
            _write_durably(info_file, json.dumps(info))
        results = []
        for task_id in range(TASKS):
            task = staged.writer(task_id)
            task.write(task_batch(tag, task_id))
            if fail_second_task and task_id == 1:
                raise TaskFailed(f"task {task_id} of {tag} failed on purpose")
            results.append(task.close())
        staged.commit(results)
    return info


def clean(location: str, url: str) -> None:
    from acid_source import clean_aborted_writes

    clean_aborted_writes(location, metastoreUrl=url, expireAfterSeconds=0)


def _write_durably(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def run_in_child(argv: list[str], env: dict[str, str], log_file: str) -> None:
    """A forked child's entry point: the test's environment for this child (the forkserver's is
    older), standard output and error into ``log_file``, then :func:`main`."""
    import tempfile

    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # $TMPDIR is the child's own: where its tasks stage their files
    log = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    main(argv)


def main(argv: list[str]) -> None:
    operation, location, url, tag, info_file = argv
    if operation == "append":
        append(location, url, tag, info_file=info_file)
    elif operation == "failing_append":
        append(location, url, tag, fail_second_task=True, info_file=info_file)
    elif operation == "clean":
        clean(location, url)
    else:
        raise SystemExit(f"unknown operation {operation!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
