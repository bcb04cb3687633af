"""Writing a table through acid_source's core (no Spark), for tests."""

from __future__ import annotations

import pyarrow as pa

from acid_source.options import WriteOptions
from acid_source.write.task import TaskWriter
from acid_source.writes import begin_write


def unfinished_write(location: str, data: pa.Table):
    """A write whose transaction stays open (its files on disk): (job, txn, task result)."""
    job, txn = begin_write(WriteOptions.parse({"path": location}), data.schema, False, heartbeat="none")
    task = TaskWriter(job.plan, 0)
    for b in data.to_batches():
        task.write(b)
    return job, txn, task.close()
