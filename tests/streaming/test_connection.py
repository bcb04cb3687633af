"""Hive-style streaming ingest (AcidTable.streamingConnection): transaction batches in growing
bucket files, checked by reading the table (acidorc's reader honours ``_flush_length``) and
the files themselves."""

from __future__ import annotations

import os
import struct

import pyarrow as pa
import pyarrow.orc as paorc
import pytest

from acid_source import create_table
from acid_source.errors import (
    InvalidArgumentError,
    SchemaError,
    TransactionStateError,
    UnsupportedOperationError,
)
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())])


@pytest.fixture(autouse=True)
def private_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{tmp_path}/store.db")
    Metastore(f"sqlite:///{tmp_path}/store.db").list_tables()


def rows(ids, day="a"):
    return pa.record_batch({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids],
                            "day": [day] * len(ids)}, schema=SCHEMA)


def read_ids(path) -> list[int]:
    return sorted(AcidTable.load(str(path)).toArrow().column("id").to_pylist())


def side_lengths(path) -> list[int]:
    data = open(path, "rb").read()
    return [struct.unpack(">q", data[i:i + 8])[0] for i in range(0, len(data) - len(data) % 8, 8)]


@pytest.fixture
def table(tmp_path):
    create_table(str(tmp_path / "t"), SCHEMA)
    return tmp_path / "t"


def test_a_batch_shares_one_delta_and_each_commit_is_visible_at_once(table):
    conn = AcidTable.load(str(table)).streamingConnection(transactionsPerBatch=3)
    assert conn.beginTransaction() == 1
    conn.write(rows([1, 2]))
    assert read_ids(table) == []  # open: invisible
    conn.commitTransaction()
    assert read_ids(table) == [1, 2]
    delta = table / "delta_0000001_0000003"
    assert sorted(os.listdir(delta)) == ["_orc_acid_version", "bucket_00000", "bucket_00000_flush_length"]
    assert conn.beginTransaction() == 2
    conn.write(rows([3]))
    conn.abortTransaction()
    assert read_ids(table) == [1, 2]
    assert conn.beginTransaction() == 3
    conn.write(pa.Table.from_batches([rows([4, 5])]))
    conn.commitTransaction()  # the batch is used up: closed
    assert read_ids(table) == [1, 2, 4, 5]
    assert sorted(os.listdir(delta)) == ["_orc_acid_version", "bucket_00000"]  # side file removed at close
    events = paorc.read_table(str(delta / "bucket_00000"))
    kept = [(o, c, r) for o, c, r in zip(events["originalTransaction"].to_pylist(),
                                         events["currentTransaction"].to_pylist(), events["rowId"].to_pylist())]
    assert kept == [(1, 1, 0), (1, 1, 1), (3, 3, 0), (3, 3, 1)]  # aborted rows left out of the footer
    assert conn.beginTransaction() == 4  # the next batch
    conn.write(rows([6]))
    conn.commitTransaction()
    conn.close()
    assert read_ids(table) == [1, 2, 4, 5, 6]
    assert (table / "delta_0000004_0000006").is_dir()
    history = AcidTable.load(str(table)).history()
    assert [(h["version"], h["operation"]) for h in history] == [(4, "insert"), (3, "insert"), (1, "insert")]


def test_the_side_file_records_every_commit_and_each_cut_reads_exactly_the_committed_rows(table, tmp_path):
    conn = AcidTable.load(str(table)).streamingConnection(transactionsPerBatch=5)
    committed: list[list[int]] = []
    for n, ids in enumerate([[1, 2], [3], [4, 5, 6], [7]]):
        conn.beginTransaction()
        conn.write(rows(ids))
        if n == 1:
            conn.abortTransaction()
            continue
        conn.commitTransaction()
        committed.append(ids)
    bucket = table / "delta_0000001_0000005" / "bucket_00000"
    lengths = side_lengths(str(bucket) + "_flush_length")
    assert lengths[0] == 0 and len(lengths) == 4  # Hive writes 0 first, then one length per commit
    data = bucket.read_bytes()
    for n, length in enumerate(lengths[1:]):
        cut = tmp_path / f"cut{n}"
        cut.write_bytes(data[:length])
        got = paorc.read_table(str(cut))["row"].combine_chunks().field("id").to_pylist()
        assert got == [i for ids in committed[:n + 1] for i in ids]
    conn.close()


def test_dynamic_partitions_route_rows_and_a_static_partition_takes_batches_without_the_column(tmp_path):
    create_table(str(tmp_path / "p"), SCHEMA, partitionColumns=["day"])
    with AcidTable.load(str(tmp_path / "p")).streamingConnection(transactionsPerBatch=2) as conn:
        conn.beginTransaction()
        conn.write(pa.concat_batches([rows([1, 2], "a"), rows([3], "b")]))
        conn.commitTransaction()
        conn.beginTransaction()
        conn.write(rows([4], "b"))
        conn.commitTransaction()
    got = AcidTable.load(str(tmp_path / "p")).toArrow()
    assert sorted(zip(got["id"].to_pylist(), got["day"].to_pylist())) == [(1, "a"), (2, "a"), (3, "b"), (4, "b")]
    assert sorted(os.listdir(tmp_path / "p" / "day=b" / "delta_0000001_0000002")) == ["_orc_acid_version",
                                                                                      "bucket_00000"]
    static = AcidTable.load(str(tmp_path / "p")).streamingConnection(transactionsPerBatch=1, partition={"day": "c"})
    assert static.schema.names == ["id", "name"]
    static.beginTransaction()
    static.write(pa.record_batch({"id": pa.array([9], pa.int64()), "name": ["z"]}))
    static.commitTransaction()
    static.close()
    got = AcidTable.load(str(tmp_path / "p")).scan(rowFilter="day = 'c'").toArrow()
    assert got["id"].to_pylist() == [9]
    assert sorted(os.listdir(tmp_path / "p" / "day=c" / "delta_0000003_0000003")) == ["_orc_acid_version",
                                                                                      "bucket_00000"]


def test_bucketed_tables_get_one_growing_file_per_bucket_with_hives_bucket_ids(tmp_path):
    create_table(str(tmp_path / "b"), SCHEMA, bucketColumns=["id"], numBuckets=4)
    with AcidTable.load(str(tmp_path / "b")).streamingConnection(transactionsPerBatch=3) as conn:
        for chunk in ([1, 2, 3], [4, 5, 6, 7, 8]):
            conn.beginTransaction()
            conn.write(rows(chunk))
            conn.commitTransaction()
        # the same rows through a plain append: the same buckets
        AcidTable.load(str(tmp_path / "b")).append(pa.Table.from_batches([rows([1, 2, 3, 4, 5, 6, 7, 8])]))
    table = AcidTable.load(str(tmp_path / "b")).scan(includeRowId=True).toArrow()
    by_write: dict[int, dict[int, int]] = {}
    for rid, i in zip(table["ROW__ID"].to_pylist(), table["id"].to_pylist()):
        by_write.setdefault(rid["writeId"] == 4, {})[i] = rid["bucketId"] >> 16 & 0xFFF
    assert by_write[True] == by_write[False] and len(by_write[False]) == 8


def test_closing_with_an_open_transaction_aborts_it_and_every_unused_one(table):
    conn = AcidTable.load(str(table)).streamingConnection(transactionsPerBatch=4)
    conn.beginTransaction()
    conn.write(rows([1]))
    conn.commitTransaction()
    conn.beginTransaction()
    conn.write(rows([2]))
    conn.close()
    assert read_ids(table) == [1]
    store = Metastore(os.environ["ACIDORC_METASTORE_URL"])
    info = store.get_table(str(table))
    assert store.write_ids_of(info.table_id, "aborted") == [2, 3, 4]
    assert store.write_ids_of(info.table_id, "committed") == [1]
    assert not (table / "delta_0000001_0000004" / "bucket_00000_flush_length").exists()
    with pytest.raises(TransactionStateError, match="closed"):
        conn.beginTransaction()
    conn.close()  # again: nothing


def test_misuse_and_bad_input_are_typed_errors_that_leave_the_table_as_it_was(table, tmp_path):
    t = AcidTable.load(str(table))
    with pytest.raises(InvalidArgumentError, match="transactionsPerBatch"):
        t.streamingConnection(transactionsPerBatch=0)
    conn = t.streamingConnection(transactionsPerBatch=2)
    with pytest.raises(TransactionStateError, match="beginTransaction"):
        conn.write(rows([1]))
    with pytest.raises(TransactionStateError):
        conn.commitTransaction()
    conn.beginTransaction()
    with pytest.raises(TransactionStateError, match="still open"):
        conn.beginTransaction()
    with pytest.raises(SchemaError, match="colour"):
        conn.write(pa.record_batch({"id": pa.array([1], pa.int64()), "colour": ["red"]}))
    with pytest.raises(InvalidArgumentError, match="data"):
        conn.write([1, 2])
    conn.write(rows([1]))
    conn.commitTransaction()
    conn.close()
    assert read_ids(table) == [1]
    create_table(str(tmp_path / "mm"), SCHEMA, insertOnly=True)
    with pytest.raises(UnsupportedOperationError, match="insert-only"):
        AcidTable.load(str(tmp_path / "mm")).streamingConnection()


def test_a_one_transaction_batch_writes_a_plain_delta_without_a_side_file(table):
    with AcidTable.load(str(table)).streamingConnection(transactionsPerBatch=1) as conn:
        for ids in ([1], [2, 3]):
            conn.beginTransaction()
            conn.write(rows(ids))
            conn.commitTransaction()
        conn.beginTransaction()
        conn.write(rows([4]))
        conn.abortTransaction()
    assert read_ids(table) == [1, 2, 3]
    assert sorted(p for p in os.listdir(table) if p.startswith("delta")) == ["delta_0000001_0000001",
                                                                             "delta_0000002_0000002"]
    assert sorted(os.listdir(table / "delta_0000001_0000001")) == ["_orc_acid_version", "bucket_00000"]


def test_compaction_waits_for_an_open_batch_and_takes_it_once_closed(table):
    t = AcidTable.load(str(table))
    t.append(pa.Table.from_batches([rows([1])]))  # write id 1
    conn = t.streamingConnection(transactionsPerBatch=3)  # write ids 2..4
    conn.beginTransaction()
    conn.write(rows([2]))
    conn.commitTransaction()
    t.append(pa.Table.from_batches([rows([3])]))  # write id 5, above the open batch
    before = sorted(os.listdir(table))
    metrics = t.compact("major")  # N stays below the lowest open write id (3): the batch's delta spans it
    assert metrics["skipped"] == {"": "delta_0000002_0000004 spans write ids above 2, the lowest open write id "
                                      "minus one"}
    assert sorted(os.listdir(table)) == before
    assert read_ids(table) == [1, 2, 3]
    conn.beginTransaction()
    conn.write(rows([4]))
    conn.commitTransaction()
    conn.close()
    t.compact("major")
    t.vacuum(retentionSeconds=0)
    assert [d for d in os.listdir(table) if d.startswith(("base", "delta"))] == [
        next(d for d in os.listdir(table) if d.startswith("base_0000005_v"))]
    assert read_ids(table) == [1, 2, 3, 4]


def test_closing_a_batch_runs_the_automatic_compaction_of_what_it_wrote(table, monkeypatch):
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "true")
    monkeypatch.setenv("ACIDORC_COMPACTOR_DELTA_NUM_THRESHOLD", "1")  # more than one delta
    monkeypatch.setenv("ACIDORC_COMPACTOR_CHECK_INTERVAL", "0")
    conn = AcidTable.load(str(table)).streamingConnection(transactionsPerBatch=2)
    for ids in ([1], [2], [3], [4]):
        conn.beginTransaction()
        conn.write(rows(ids))
        conn.commitTransaction()  # every second one closes a batch: its post-commit step runs
        if ids == [2]:
            assert conn.stats["autoCompactions"] == 0  # one delta: below the threshold
    assert conn.stats["autoCompactions"] == 1
    assert [d for d in os.listdir(table) if d.startswith("base_")], "the two batches' deltas were compacted"
    conn.close()
    assert read_ids(table) == [1, 2, 3, 4]
