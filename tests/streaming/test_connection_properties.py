"""Random producer histories against a literal model: two interleaved streaming connections
(commits, aborts, kills, several batches, dynamic partitions, buckets), plain appends,
compactions and the cleaner at random points. Every read returns exactly the rows of the
committed transactions, while batches are open and after everything ended."""

from __future__ import annotations

import itertools
import os
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from properties import examples

from acid_source import create_table
from acid_source.maintenance.aborted import clean_aborted_writes
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


@pytest.fixture(autouse=True, scope="module")
def private_store():
    path = tempfile.mkdtemp(prefix="acidorc-stream-props-")
    url = f"sqlite:///{path}/store.db"
    old = os.environ.get("ACIDORC_METASTORE_URL")
    os.environ["ACIDORC_METASTORE_URL"] = url
    Metastore(url).list_tables()
    yield url
    if old is None:
        del os.environ["ACIDORC_METASTORE_URL"]
    else:
        os.environ["ACIDORC_METASTORE_URL"] = old


operation = st.one_of(
    st.tuples(st.just("begin"), st.integers(0, 1)),
    st.tuples(st.just("write"), st.integers(0, 1), st.integers(1, 4), st.sampled_from(["a", "b"])),
    st.tuples(st.just("commit"), st.integers(0, 1)),
    st.tuples(st.just("abort"), st.integers(0, 1)),
    st.tuples(st.just("kill"), st.integers(0, 1)),
    st.tuples(st.just("close"), st.integers(0, 1)),
    st.tuples(st.just("append"), st.integers(1, 3)),
    st.tuples(st.just("compact"), st.sampled_from(["minor", "major"])),
)


@examples(15, suppress=[HealthCheck.function_scoped_fixture])
@given(layout=st.sampled_from(["plain", "partitioned", "bucketed"]), batch_sizes=st.tuples(
    st.integers(1, 4), st.integers(1, 4)), history=st.lists(operation, max_size=30))
def test_every_read_returns_exactly_the_committed_transactions(layout, batch_sizes, history):
    root = tempfile.mkdtemp(prefix="acidorc-stream-")
    path = os.path.join(root, "t")
    create_table(path, SCHEMA, partitionColumns=["day"] if layout == "partitioned" else (),
                 bucketColumns=["id"] if layout == "bucketed" else (), numBuckets=3 if layout == "bucketed" else 0)
    table = AcidTable.load(path)
    ids = itertools.count(1)
    committed: list[tuple[int, str]] = []
    conns: list = [None, None]
    pending: list[list[tuple[int, str]]] = [[], []]

    def check():
        got = table.toArrow()
        assert sorted(zip(got["id"].to_pylist(), got["day"].to_pylist())) == sorted(committed)

    for op in history:
        kind = op[0]
        if kind in ("begin", "write", "commit", "abort", "kill", "close"):
            n = op[1]
            conn = conns[n]
            if kind == "begin":
                if conn is None:
                    conn = conns[n] = table.streamingConnection(transactionsPerBatch=batch_sizes[n])
                if conn.currentTransactionId is None:
                    conn.beginTransaction()
                    pending[n] = []
            elif conn is None or conn.currentTransactionId is None:
                if kind == "close" and conn is not None:
                    conn.close()
                    conns[n] = None
                continue
            elif kind == "write":
                new = [(next(ids), op[3]) for _ in range(op[2])]
                conn.write(pa.table({"id": pa.array([i for i, _ in new], pa.int64()), "day": [d for _, d in new]}))
                pending[n] += new
            elif kind == "commit":
                conn.commitTransaction()
                committed.extend(pending[n])
            elif kind == "abort":
                conn.abortTransaction()
            elif kind == "kill":  # the producer dies: no abort, no close, no more heartbeats
                conn._stop_heartbeat()
                conns[n] = None
            else:
                conn.close()
                conns[n] = None
        elif kind == "append":
            new = [(next(ids), "a") for _ in range(op[1])]
            table.append(pa.table({"id": pa.array([i for i, _ in new], pa.int64()), "day": [d for _, d in new]}))
            committed.extend(new)
        else:
            table.compact(op[1])  # never takes a directory that holds an open write id
        check()
    for conn in conns:
        if conn is not None:
            conn.close()
    # the killed producers' transactions time out; their rows never show, and the clean-up
    # removes only directories of aborted write ids alone
    store = Metastore(os.environ["ACIDORC_METASTORE_URL"])
    store.abort_expired(0, table_id=store.get_table(path).table_id)
    clean_aborted_writes(path, expireAfterSeconds=0)
    check()
    table.compact("major")
    check()
