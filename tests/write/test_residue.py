"""A failed or refused write leaves nothing behind: files of tasks whose results never
reached the driver, and staging directories of task processes that were killed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pyarrow as pa

from acid_source import create_table
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def test_abort_removes_files_of_tasks_that_never_reported(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, partitionColumns=["p"], metastoreUrl=url)
    staged = AcidTable.load(path, metastoreUrl=url).newWrite(mode="append")
    task = staged.detached().writer(0)  # a task elsewhere (as Spark's): the staged write does not see it
    task.write(pa.record_batch({"id": pa.array([1, 2], pa.int64()), "p": ["a", "b"]}))
    task.close()  # its files are in the table, but its result is lost (the task "failed" after)
    staged.abort([], reason="a later task failed")
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
        create_table(str(tmp_path / "t"), SCHEMA, metastoreUrl=url)
        staged = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url).newWrite(mode="append")
        staged.writer(0).abort()
        staged.abort(reason="test")
        assert not os.path.exists(stale) and os.path.exists(mine)
    finally:
        os.rmdir(mine)
