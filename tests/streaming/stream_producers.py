"""Process bodies for the streaming-ingest kill tests (run in forkserver children)."""

from __future__ import annotations

import os

import pyarrow as pa


def ids_of(write_id: int) -> list[int]:
    """The rows a producer writes in the transaction of ``write_id``: derived from it, so a test
    knows every committed transaction's rows from the store's committed write ids alone."""
    return list(range(write_id * 1000, write_id * 1000 + write_id % 7 + 1))


def produce_forever(path: str, metastore_url: str, batch_size: int, ready) -> None:
    """Begin, write, commit (every fifth transaction aborted) until killed; ``ready`` is set
    after the first commit."""
    os.environ["ACIDORC_METASTORE_URL"] = metastore_url
    from acid_source.table import AcidTable

    conn = AcidTable.load(path).streamingConnection(transactionsPerBatch=batch_size)
    n = 0
    while True:
        write_id = conn.beginTransaction()
        ids = ids_of(write_id)
        half = len(ids) // 2
        conn.write(pa.table({"id": pa.array(ids[:half], pa.int64())}))
        conn.write(pa.table({"id": pa.array(ids[half:], pa.int64())}))
        if n % 5 == 4:
            conn.abortTransaction()
        else:
            conn.commitTransaction()
        n += 1
        if n == 1:
            ready.set()
