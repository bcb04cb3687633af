"""A failed or refused write leaves nothing behind: files of tasks whose results never
reached the driver, and staging directories of task processes that were killed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pyarrow as pa

from acid_source import create_table
from acid_source.options import WriteOptions
from acid_source.write.task import TaskWriter
from acid_source.writes import begin_write

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def test_abort_removes_files_of_tasks_that_never_reported(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, partition_columns=["p"], metastore_url=url)
    job, txn = begin_write(WriteOptions.parse({"path": path, "metastoreUrl": url}), SCHEMA, False, heartbeat="none")
    task = TaskWriter(job.plan, 0)
    task.write(pa.record_batch({"id": pa.array([1, 2], pa.int64()), "p": ["a", "b"]}))
    task.close()  # its files are in the table, but its result is lost (the task "failed" after)
    job.abort(txn, [], reason="a later task failed")
    assert os.listdir(path) == []  # no delta directory, no empty partition directory


def test_staging_directories_of_killed_tasks_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = os.path.join(tempfile.gettempdir(), f"acidorc-task-{int(dead.stdout)}-leftover")
    os.makedirs(stale, exist_ok=True)
    open(os.path.join(stale, "part.orc"), "wb").close()
    mine = os.path.join(tempfile.gettempdir(), f"acidorc-task-{os.getppid()}-alive")  # a live process's
    os.makedirs(mine, exist_ok=True)
    try:
        url = f"sqlite:///{tmp_path}/store.db"
        create_table(str(tmp_path / "t"), SCHEMA, metastore_url=url)
        job, txn = begin_write(WriteOptions.parse({"path": str(tmp_path / "t"), "metastoreUrl": url}), SCHEMA,
                               False, heartbeat="none")
        TaskWriter(job.plan, 0).abort()
        txn.abort("test")
        assert not os.path.exists(stale) and os.path.exists(mine)
    finally:
        os.rmdir(mine)
