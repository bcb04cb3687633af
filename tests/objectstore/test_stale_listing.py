"""A long-lived process never builds on a stale listing of an S3 table (issue 13's reproduction).

fsspec hands out one file-system instance per process, and s3fs keeps every directory listing
until that process itself writes there. A process that had listed a table (Spark's driver, its
reused Python workers, any ``AcidTable`` user) went on seeing it as it was: its reads missed
other processes' commits, and a compaction built ``base_N`` from the stale listing, undoing a
committed DELETE for good. Each test runs the processes for real against a real S3 server
(SeaweedFS); the table's credentials come from the environment, as they would on a cluster.

Two lines of defence are tested: table storage never caches listings (``Storage``), and every
read and compaction proves its listing holds each committed write id of its snapshot
(:mod:`acid_source.completeness`) - with the first one switched off in the long-lived process,
the second still refuses to return or compact a table without a committed write.
"""

from __future__ import annotations

import functools
import os

import pyarrow as pa
import pytest
import stale_workers
import worker_context
from process_workers import Worker

import acid_source.storage
from acid_source import create_table
from acid_source.errors import MissingDataError, SnapshotFilesRemovedError
from acid_source.table import AcidTable

ROWS_P1 = list(range(1, 11))
ROWS_P2 = list(range(11, 21))


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """Credentials and endpoint for every process of the test, from the environment."""
    options = s3_server.storage_options
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", options["key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", options["secret"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", options["client_kwargs"]["endpoint_url"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture
def workers():
    """Processes started on demand, all stopped at the end of the test; each one with the
    test's environment as it is when the process starts."""
    ctx = worker_context.forkserver()
    started: list[Worker] = []

    def start() -> Worker:
        started.append(Worker(ctx, functools.partial(stale_workers.serve_with_environment,
                                                     environment=dict(os.environ))))
        return started[-1]

    yield start
    for w in started:
        w.close()


@pytest.fixture
def table(s3_env, s3_table_url) -> str:
    create_table(s3_table_url, pa.schema([("id", pa.int64()), ("p", pa.int32())]), partitionColumns=["p"])
    t = AcidTable.load(s3_table_url)
    t.append(pa.table({"id": pa.array(ROWS_P1, pa.int64()), "p": pa.array([1] * 10, pa.int32())}))
    t.append(pa.table({"id": pa.array(ROWS_P2, pa.int64()), "p": pa.array([2] * 10, pa.int32())}))
    return s3_table_url


def fresh_ids(workers, location: str) -> list[int]:
    """The table as a process that never saw it before reads it."""
    return workers().call("ids", location=location)


def test_a_compaction_in_a_long_lived_process_keeps_a_delete_committed_elsewhere(table, workers):
    a, b = workers(), workers()
    assert a.call("count", location=table, row_filter="p = 1") == 10  # A has listed partition p=1
    assert b.call("delete", location=table, condition="id <= 3")["numDeletedRows"] == 3
    metrics = a.call("compact", location=table, kind="major", partition_filter="p = 1")
    assert metrics["partitions"] == ["p=1"]
    assert fresh_ids(workers, table) == [i for i in ROWS_P1 + ROWS_P2 if i > 3]


def test_a_long_lived_reader_sees_what_other_processes_committed(table, workers):
    a, b = workers(), workers()
    assert a.call("count", location=table) == 20
    b.call("append", location=table, ids=[21, 22], p=1)
    b.call("append", location=table, ids=[31], p=3)  # a new partition, too
    b.call("delete", location=table, condition="id = 11")
    assert a.call("ids", location=table) == [i for i in ROWS_P1 + ROWS_P2 + [21, 22, 31] if i != 11]


def test_a_stale_listing_is_caught_and_listed_again(table, workers):
    """With the listing cache back (the code before the fix) the long-lived process really does
    list stale; the proof of completeness notices the missing write ids and lists again
    through a new file-system instance."""
    a, b = workers(), workers()
    a.call("revert_listing_fix")
    assert a.call("count", location=table) == 20
    b.call("append", location=table, ids=[21], p=1)
    assert a.call("count", location=table) == 21
    b.call("delete", location=table, condition="id <= 3")
    a.call("compact", location=table, kind="major", partition_filter="p = 1")
    assert fresh_ids(workers, table) == [i for i in ROWS_P1 + ROWS_P2 + [21] if i > 3]


def test_storage_that_lost_a_committed_write_is_refused(table, workers, s3_server):
    """Data missing from storage is corruption, never fewer rows: reads and compaction refuse,
    naming the s3:// path, and leave the table as it was. (SeaweedFS keeps listing a prefix
    whose objects were deleted as an empty directory, one level at a time; a recursive listing
    of the table - what reads of many directories take - drops it as S3 does, and the listing
    proof raises MissingDataError first. tests/test_completeness.py shows that on local disk.
    The history comes from the store alone: opening the table would list it.)"""
    a, b = workers(), workers()
    b.call("append", location=table, ids=[21], p=1)  # write id 3
    fs = s3_server.filesystem()
    [lost] = [d for d in fs.ls(table[len("s3://"):] + "/p=1") if d.rsplit("/", 1)[-1].startswith("delta_0000003")]
    fs.rm(lost, recursive=True)
    with pytest.raises((MissingDataError, SnapshotFilesRemovedError)) as raised:
        a.call("count", location=table)
    assert raised.value.path.startswith(table + "/p=1")
    before = sorted(fs.find(table[len("s3://"):]))
    with pytest.raises((MissingDataError, SnapshotFilesRemovedError)):
        a.call("compact", location=table, kind="major")
    assert sorted(fs.find(table[len("s3://"):])) == before
    assert [h["operation"] for h in AcidTable(table).history()] == ["insert"] * 3


def test_the_listing_fix_is_in_place():
    """Table storage asks fsspec for an instance without a listings cache."""
    assert acid_source.storage.uncached({"key": "k"}) == {"key": "k", "use_listings_cache": False}
