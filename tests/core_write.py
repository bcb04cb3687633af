"""Writing a table through acid_source's core (no Spark), for tests."""

from __future__ import annotations

import pyarrow as pa

from acid_source.specs import WriteSpec
from acid_source.writes import stage_write


def unfinished_write(location: str, data: pa.Table):
    """A write whose transaction stays open (its files on disk, no heartbeat):
    (the staged write, its task's result); ``staged.commit([result])`` commits it later."""
    staged = stage_write(WriteSpec(path=location), overwrite=False, data_schema=data.schema, heartbeat="none")
    task = staged.writer(0)
    for b in data.to_batches():
        task.write(b)
    return staged, task.close()
