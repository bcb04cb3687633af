"""Writes through the core (no Spark): layouts, overwrite semantics, errors, atomicity,
concurrency across real processes, and a writer killed mid-write."""

import os
import signal

import pyarrow as pa
import pytest
import worker_context
from core_read import data, read_rows
from hivegen import HiveTable
from writers import append_many, rows, write, write_then_hang

from acid_source import clean_aborted_writes, create_table
from acid_source.errors import InvalidOptionError, NotAnAcidTableError, SchemaError, StoreBehindStorageError
from acid_source.metastore import Metastore


def test_append_then_overwrite_unpartitioned(tmp_path):
    t = tmp_path / "t"
    write(t, [[rows([1, 2])], [rows([3])]])
    write(t, [[rows([4])]])
    assert data(read_rows(t), "id") == [(1,), (2,), (3,), (4,)]
    write(t, [[rows([9])]], overwrite=True)
    assert data(read_rows(t), "id") == [(9,)]
    write(t, [[rows([])]], overwrite=True)  # an overwrite with no rows empties the table
    assert read_rows(t) == []
    names = sorted(p.name for p in t.iterdir())
    assert names == ["base_0000003", "base_0000004", "delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
    assert (t / "base_0000004" / "_orc_acid_version").read_bytes() == b"2"


def test_row_ids_and_writer_ids_follow_hive(tmp_path):
    t = tmp_path / "t"
    write(t, [[rows([1, 2])], [rows([3])]])
    got = sorted((r["id"], tuple(r["ROW__ID"].values())) for r in read_rows(t, includeRowId="true"))
    assert got == [(1, (1, 536870912, 0)), (2, (1, 536870912, 1)), (3, (1, 536936448, 0))]


def test_partitioned_static_dynamic_and_full_overwrite(tmp_path):
    t = tmp_path / "t"
    write(t, [[rows([1, 2], "a"), rows([3], "b")]], partitionColumns="day")
    write(t, [[rows([4])]], partition="day=c")
    assert data(read_rows(t), "id", "day") == [(1, "a"), (2, "a"), (3, "b"), (4, "c")]
    write(t, [[rows([5], "b")]], overwrite=True, partitionOverwriteMode="dynamic")
    assert data(read_rows(t), "id", "day") == [(1, "a"), (2, "a"), (4, "c"), (5, "b")]
    write(t, [[rows([6])]], overwrite=True, partition="day=a")
    assert data(read_rows(t), "id", "day") == [(4, "c"), (5, "b"), (6, "a")]
    write(t, [[rows([7], "d")]], overwrite=True)  # static: the whole table is replaced
    assert data(read_rows(t), "id", "day") == [(7, "d")]


def test_insert_only_table(tmp_path):
    t = tmp_path / "t"
    write(t, [[rows([1])], [rows([2])]], tableType="insert_only")
    write(t, [[rows([3])]])
    assert data(read_rows(t), "id") == [(1,), (2,), (3,)]
    assert sorted(os.listdir(t / "delta_0000001_0000001_0000")) == ["000000_0", "000001_0"]
    with pytest.raises(InvalidOptionError, match="insert-only"):
        read_rows(t, includeRowId="true")


def test_create_table_then_write_and_read_empty(tmp_path):
    t = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())])
    create_table(str(t), schema, partitionColumns=["day"])
    assert read_rows(t) == []  # the schema comes from the metastore
    write(t, [[rows([1], "x")]])
    assert data(read_rows(t), "id", "day") == [(1, "x")]


def test_schema_mismatch_is_rejected_and_leaves_the_table_alone(tmp_path):
    t = tmp_path / "t"
    write(t, [[rows([1])]])
    before = sorted(p.name for p in t.iterdir())
    bad = pa.RecordBatch.from_pydict({"id": pa.array(["1"]), "name": ["x"]})
    with pytest.raises(SchemaError, match="'id' is string in the data but int64 in the table"):
        write(t, [[bad]])
    with pytest.raises(SchemaError, match="unknown column 'extra'"):
        write(t, [[pa.RecordBatch.from_pydict({"id": pa.array([1], pa.int64()), "name": ["x"], "extra": [1]})]])
    widened = pa.RecordBatch.from_pydict({"id": pa.array([2], pa.int32()), "name": ["y"]})
    write(t, [[widened]])  # int -> bigint is a safe widening
    assert sorted(p.name for p in t.iterdir()) == before + ["delta_0000002_0000002_0000"]


def test_partition_values_cannot_leave_the_table(tmp_path):
    t = tmp_path / "t"
    write(t, [[rows([1], "a")]], partitionColumns="day")
    for spec in ["day=..", "day=../../etc", "other=1"]:
        with pytest.raises(InvalidOptionError, match="partition"):
            write(t, [[rows([2])]], partition=spec)
    write(t, [[rows([3], "x/../y")]])  # a value with slashes is escaped into one directory name
    assert (t / "day=x%2F..%2Fy").is_dir()
    assert data(read_rows(t), "id", "day") == [(1, "a"), (3, "x/../y")]


def test_writing_into_a_non_acid_directory_fails(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "data.csv").write_text("1,2\n")
    with pytest.raises(NotAnAcidTableError, match="not an ACID table"):
        write(plain, [[rows([1])]])
    hive = tmp_path / "hive"
    HiveTable(hive, [("id", "bigint"), ("name", "string")]).insert(1, {0: [(1, "a")]})
    with pytest.raises(StoreBehindStorageError, match="no record of.*adopt=True"):  # its write ids are taken
        write(hive, [[rows([1])]])
    assert sorted(os.listdir(plain)) == ["data.csv"]


def test_abort_leaves_nothing_visible_and_removes_files(tmp_path):
    from acid_source.table import AcidTable

    t = tmp_path / "t"
    write(t, [[rows([1])]])
    staged = AcidTable.load(str(t)).newWrite(mode="append")
    txn = staged.transaction
    task = staged.writer(0)
    task.write(rows([2, 3]))
    result = task.close()
    assert data(read_rows(t), "id") == [(1,)]  # written but not committed: invisible
    staged.abort([result])
    assert data(read_rows(t), "id") == [(1,)]
    assert sorted(os.listdir(t)) == ["delta_0000001_0000001_0000"]
    assert Metastore().txn_state(txn.txn_id) == "aborted"


def test_concurrent_appends_from_separate_processes(tmp_path):
    t = tmp_path / "t"
    url = os.environ["ACIDORC_METASTORE_URL"]
    ctx = worker_context.forkserver()
    procs = [ctx.Process(target=append_many, args=(str(t), url, w, 5)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    got = read_rows(t, includeRowId="true")
    assert sorted(r["id"] for r in got) == sorted(w * 1000 + r * 10 + i for w in range(4) for r in range(5)
                                                  for i in range(10))
    write_ids = {r["ROW__ID"]["writeId"] for r in got}
    assert write_ids == set(range(1, 21))  # 20 commits, 20 distinct write ids
    assert len({tuple(r["ROW__ID"].values()) for r in got}) == 200


def test_killed_writer_leaves_no_visible_rows_and_clean_up_removes_its_files(tmp_path):
    t = tmp_path / "t"
    write(t, [[rows([1])]])
    url = os.environ["ACIDORC_METASTORE_URL"]
    ctx = worker_context.forkserver()
    ready = ctx.Event()
    p = ctx.Process(target=write_then_hang, args=(str(t), url, ready))
    p.start()
    assert ready.wait(60)
    os.kill(p.pid, signal.SIGKILL)
    p.join(30)
    assert (t / "delta_0000002_0000002_0000" / "bucket_00000").exists()  # the orphan is on disk
    assert data(read_rows(t), "id") == [(1,)]  # ... and invisible: write id 2 is still open
    report = clean_aborted_writes(str(t), expireAfterSeconds=3600)
    assert report.removed == [] and report.expiredTransactions == []  # not yet expired: kept
    report = clean_aborted_writes(str(t), expireAfterSeconds=0)
    assert len(report.expiredTransactions) == 1
    assert [os.path.basename(p) for p in report.removed] == ["delta_0000002_0000002_0000"]
    assert sorted(os.listdir(t)) == ["delta_0000001_0000001_0000"]
    write(t, [[rows([3])]])  # the table goes on: write id 3
    assert data(read_rows(t), "id") == [(1,), (3,)]


def test_bucketed_table_routes_rows_by_hive_hash(tmp_path):
    from acid_source.layout.bucketing import bucket_ids
    from acid_source.orc.files import OrcFile
    from acid_source.storage import Storage

    t = tmp_path / "t"
    ids = list(range(200))
    half = [rows(ids[:100])], [rows(ids[100:])]
    write(t, list(half), bucketColumns="id", numBuckets=4)
    expected = {i: int(b) for i, b in zip(ids, bucket_ids([pa.array(ids, pa.int64())], 4))}
    got = read_rows(t, includeRowId="true")
    assert sorted(r["id"] for r in got) == ids
    for r in got:  # the writer id in ROW__ID is the Hive bucket of the row
        assert (r["ROW__ID"]["bucketId"] >> 16) & 0xFFF == expected[r["id"]]
    # each task wrote its own statement directory; files are named by bucket
    for task in (0, 1):
        d = t / f"delta_0000001_0000001_{task:04d}"
        for f in d.glob("bucket_*"):
            bucket = int(f.name.split("_")[1])
            batch = OrcFile(Storage(str(t)), str(f)).read_stripe(0)
            assert {expected[i] for i in batch.column(5).field("id").to_pylist()} == {bucket}


def test_an_empty_first_write_that_creates_the_table_leaves_it_readable(tmp_path):
    t = tmp_path / "t"
    write(t, [[rows([1]).slice(0, 0)]])  # Spark's limit(0), or a first micro-batch without rows
    assert t.is_dir()
    assert read_rows(t) == []
    write(t, [[rows([1])]])
    assert [r["id"] for r in read_rows(t)] == [1]
