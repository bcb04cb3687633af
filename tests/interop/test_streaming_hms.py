"""Streaming ingest into a table of a real Hive 4.1 metastore: the batch's write ids come from
the HMS (one open_txns + allocate_table_write_ids), its heartbeats keep them alive past a short
hive.txn.timeout, new partitions are registered when a transaction commits, and Hive 4 reading
through the HMS (its own client's snapshot) sees exactly the committed transactions while the
batch is open."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from servers.hive_metastore import wait_for

from acid_source import create_table
from acid_source.metastore import connect
from acid_source.table import AcidTable

pytestmark = [pytest.mark.interop, pytest.mark.hms]

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])
B0 = 536870912


def test_a_batch_outlives_a_short_timeout_and_hive_reads_its_committed_transactions(
        hive_metastore_short_timeout, hive4, tmp_path):
    server = hive_metastore_short_timeout
    db = server.database("acidorc_stream")
    table = f"s_{uuid.uuid4().hex[:8]}"
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, name=f"{db}.{table}", partitionColumns=["day"], metastoreUrl=server.uri)
    conn = AcidTable.load(f"{db}.{table}", metastoreUrl=server.uri).streamingConnection(transactionsPerBatch=4)
    first = conn.beginTransaction()
    conn.write(pa.table({"id": pa.array([1, 2], pa.int64()), "day": ["d1", "d2"]}))
    conn.commitTransaction()
    second = conn.beginTransaction()
    conn.write(pa.table({"id": pa.array([3], pa.int64()), "day": ["d1"]}))
    store = connect(server.uri)
    txn = conn.currentTransactionId
    started = store.txn_info(txn)["started_at"]
    # the metastore aborts a silent transaction after 6 s: the batch's beats keep it (and the
    # two not begun yet) open for longer than a timeout and a half
    wait_for(lambda: store.txn_info(txn)["last_heartbeat"] - started > 1.5 * server.txn_timeout_seconds,
             timeout=server.txn_timeout_seconds * 5, what="heartbeats of the streaming batch")
    got = hive4.read_via_hms(server.uri, db, table)
    assert sorted(got.rows) == [((first, B0, 0), 1, "d1"), ((first, B0, 0), 2, "d2")]
    conn.commitTransaction()
    conn.close()
    got = hive4.read_via_hms(server.uri, db, table)
    assert sorted(got.rows) == [((first, B0, 0), 1, "d1"), ((first, B0, 0), 2, "d2"), ((second, B0, 0), 3, "d1")]
    assert sorted(AcidTable.load(f"{db}.{table}", metastoreUrl=server.uri).toArrow()["id"].to_pylist()) == [1, 2, 3]
