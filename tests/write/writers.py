"""Helpers for write tests: run a whole write through the core's staged write (what the Spark
adapter does: stage it on the driver, one task writer per task, commit) - also in separate
processes."""

from __future__ import annotations

import os
import signal

import pyarrow as pa

from acid_source.spark.options import option_errors, write_spec
from acid_source.specs import WriteSpec
from acid_source.writes import stage_write


def rows(ids, day=None, name="x"):
    d = {"id": pa.array(ids, pa.int64()), "name": [name] * len(ids)}
    if day is not None:
        d["day"] = [day] * len(ids)
    return pa.RecordBatch.from_pydict(d)


def write(path, batches_per_task, overwrite=False, metastore_url=None, **options):
    opts = {"path": str(path), **{k: str(v) for k, v in options.items()}}
    if metastore_url:
        opts["metastoreUrl"] = metastore_url
    schema = batches_per_task[0][0].schema
    with option_errors(), stage_write(write_spec(opts), overwrite=overwrite, data_schema=schema) as staged:
        results = []
        for task_id, batches in enumerate(batches_per_task):
            task = staged.writer(task_id)
            for b in batches:
                task.write(b)
            results.append(task.close())
        staged.commit(results)
    return staged


def append_many(path, metastore_url, worker, rounds):
    """Process body: ``rounds`` appends of 10 rows tagged with the worker number."""
    os.environ["ACIDORC_METASTORE_URL"] = metastore_url
    for r in range(rounds):
        ids = [worker * 1000 + r * 10 + i for i in range(10)]
        batch = pa.RecordBatch.from_pydict({"id": pa.array(ids, pa.int64()), "worker": [worker] * 10})
        write(path, [[batch]])


def write_then_hang(path, metastore_url, ready, _unused=None):
    """Process body: write files of a new write id, say so, then wait to be killed."""
    os.environ["ACIDORC_METASTORE_URL"] = metastore_url
    batch = pa.RecordBatch.from_pydict({"id": pa.array(range(100), pa.int64()), "name": ["killed"] * 100})
    staged = stage_write(WriteSpec(path=str(path)), overwrite=False, data_schema=batch.schema, heartbeat="none")
    task = staged.writer(0)
    task.write(batch)
    task.close()
    ready.set()
    signal.pause()  # the parent SIGKILLs us before any commit
