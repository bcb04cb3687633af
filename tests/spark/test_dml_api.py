"""The Spark-facing AcidTable: forPath / forName / isAcidTable / toDF / alias / history /
detail, and DELETE / UPDATE run as Spark jobs (MERGE has tests/spark/test_merge.py)."""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pyarrow.orc as po
import pytest
from pyspark.sql import functions as F

from acid_source import create_table
from acid_source.errors import InvalidArgumentError, SchemaError, TableNotRegisteredError, UnsupportedOperationError
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int32()), ("p", pa.string())])
DATA = pa.table({"id": pa.array(range(8), pa.int64()), "v": [f"v{i}" for i in range(8)],
                 "n": pa.array([0, 1, None, 3, 4, None, 6, 7], pa.int32()),
                 "p": ["a", "a", "a", "a", "b", "b", "b", None]})


def listing(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def rows_at(path) -> list[tuple]:
    return sorted((r["id"], r["v"], r["n"], r["p"]) for r in AcidTable.load(path).toArrow().to_pylist())


@pytest.fixture
def path(tmp_path):
    p = str(tmp_path / "t")
    create_table(p, SCHEMA, partitionColumns=["p"])
    AcidTable.load(p).append(DATA)
    return p


def test_delete_with_a_sql_string_and_with_a_column(spark, path):
    t = AcidTable.forPath(spark, path)
    m = t.delete("n >= 6")
    assert m["numDeletedRows"] == 2 and m["operation"] == "delete" and m["partitions"] == [
        "p=__HIVE_DEFAULT_PARTITION__", "p=b"]
    assert m["numFilesAdded"] == 2 and m["numBytesAdded"] > 0
    m = t.delete(F.col("v") == "v0")
    assert m["numDeletedRows"] == 1
    assert [r[0] for r in rows_at(path)] == [1, 2, 3, 4, 5]


def test_update_moves_rows_between_partitions_and_counts_them(spark, path):
    t = AcidTable.forPath(spark, path).alias("t")
    m = t.update("t.id IN (1, 4)", {"t.n": "t.n * 10 + t.id", "v": F.upper(F.col("v")), "`p`": "'c'"})
    assert m["numUpdatedRows"] == 2 and m["numDeletedRows"] == 0 and m["numInsertedRows"] == 0
    assert m["partitions"] == ["p=a", "p=b", "p=c"]
    assert rows_at(path) == [(0, "v0", 0, "a"), (1, "V1", 11, "c"), (2, "v2", None, "a"), (3, "v3", 3, "a"),
                             (4, "V4", 44, "c"), (5, "v5", None, "b"), (6, "v6", 6, "b"), (7, "v7", 7, None)]
    wid = m["writeId"]
    names = listing(path)
    assert any(n.startswith(f"p=c/delta_{wid:07d}_{wid:07d}_") for n in names)
    assert any(n.startswith(f"p=a/delete_delta_{wid:07d}_{wid:07d}_") for n in names)
    assert not any(n.startswith("p=c/delete_delta") for n in names)


def test_updating_the_bucket_column_moves_the_row_to_its_bucket(spark, tmp_path):
    path = str(tmp_path / "bucketed")
    create_table(path, pa.schema([("id", pa.int64()), ("v", pa.string())]), bucketColumns=["id"], numBuckets=4)
    AcidTable.load(path).append(pa.table({"id": pa.array(range(20), pa.int64()), "v": ["x"] * 20}))
    # where an append puts each id: the bucket Hive's hash gives it (checked by the interop tests)
    bucket_of = {}
    probe = str(tmp_path / "probe")
    create_table(probe, pa.schema([("id", pa.int64()), ("v", pa.string())]), bucketColumns=["id"], numBuckets=4)
    AcidTable.load(probe).append(pa.table({"id": pa.array([101, 102, 103], pa.int64()), "v": ["y"] * 3}))
    for d, _, files in os.walk(probe):
        for f in files:
            if f.startswith("bucket_"):
                for row in po.read_table(os.path.join(d, f)).column("row").to_pylist():
                    bucket_of[row["id"]] = int(f.split("_")[1])
    t = AcidTable.forPath(spark, path)
    m = t.update("id IN (1, 2, 3)", {"id": "id + 100"})
    assert m["numUpdatedRows"] == 3
    wid = m["writeId"]
    moved = {}
    for d, _, files in os.walk(path):
        if os.path.basename(d).startswith(f"delta_{wid:07d}"):
            for f in files:
                if f.startswith("bucket_"):
                    for row in po.read_table(os.path.join(d, f)).column("row").to_pylist():
                        moved[row["id"]] = int(f.split("_")[1])
    assert moved == bucket_of
    ids = sorted(AcidTable.load(path).toArrow().column("id").to_pylist())
    assert ids == [0] + list(range(4, 20)) + [101, 102, 103]


def test_no_match_commits_nothing(spark, path):
    t = AcidTable.forPath(spark, path)
    files, version = listing(path), AcidTable.load(path).version
    m = t.update("id > 100", {"v": "'x'"})
    assert m["writeId"] is None and m["numAffectedRows"] == 0 and m["numFilesAdded"] == 0
    assert listing(path) == files and AcidTable.load(path).version == version


def test_a_target_with_nothing_to_read_is_an_empty_frame(spark, path, tmp_path):
    """The target is planned on the driver from the statement's snapshot: partitions the
    condition rules out are not planned, and with no split left the target is an empty frame
    of the table's columns (so is an empty table's)."""
    t = AcidTable.forPath(spark, path)
    files, version = listing(path), AcidTable.load(path).version
    assert t.delete("p = 'zz'")["numDeletedRows"] == 0
    m = t.update("p = 'zz' and id > 0", {"v": "'x'"})
    assert m["writeId"] is None and m["numAffectedRows"] == 0
    assert listing(path) == files and AcidTable.load(path).version == version
    empty = str(tmp_path / "empty")
    create_table(empty, SCHEMA, partitionColumns=["p"])
    e = AcidTable.forPath(spark, empty)
    assert e.delete("id = 1")["numDeletedRows"] == 0
    assert e.update(None, {"v": "'x'"})["numUpdatedRows"] == 0
    assert e.toDF().count() == 0


def test_dml_on_every_column_type(spark, tmp_path):
    """The target read straight from its planned splits carries every type to Spark and back
    (zoned and wall-clock timestamps, decimals, nested types, binary); a map column, which
    Spark cannot hash, does not stop the change rows from being spread over tasks."""
    import datetime as dt
    import decimal

    p = str(tmp_path / "t")
    create_table(p, "id bigint, ts timestamp, tn timestamp_ntz, d decimal(12,3), day date, tags array<string>, "
                    "m map<string,int>, s struct<a:int,b:string>, f float, b binary, p string",
                 partitionColumns=["p"])
    rows = [{"id": i, "ts": dt.datetime(2024, 1, 1, i, tzinfo=dt.timezone.utc), "tn": dt.datetime(2024, 2, 1, i),
             "d": decimal.Decimal(f"{i}.125"), "day": dt.date(2024, 3, i + 1), "tags": [f"t{i}", None],
             "m": [("k", i)], "s": {"a": i, "b": f"b{i}"}, "f": i / 4, "b": bytes([i]), "p": "x" if i % 2 else None}
            for i in range(6)]
    AcidTable.load(p).append(pa.Table.from_pylist(rows, schema=AcidTable.load(p).schema))
    before = {r["id"]: r for r in AcidTable.load(p).toArrow().to_pylist()}
    t = AcidTable.forPath(spark, p)
    assert t.delete("ts < TIMESTAMP '2024-01-01 01:00:00' OR d = 5.125")["numDeletedRows"] == 2
    assert t.update("tn = TIMESTAMP_NTZ '2024-02-01 02:00:00'", {"d": "d + 1", "tags": "array('z')"})[
        "numUpdatedRows"] == 1
    after = {r["id"]: r for r in AcidTable.load(p).toArrow().to_pylist()}
    assert sorted(after) == [1, 2, 3, 4]
    assert after[2] == {**before[2], "d": decimal.Decimal("3.125"), "tags": ["z"]}
    assert all(after[i] == before[i] for i in (1, 3, 4))


def test_to_df_is_fresh_on_every_call(spark, path):
    t = AcidTable.forPath(spark, path)
    before = t.toDF()
    assert before.count() == 8
    t.delete("id < 3")
    assert t.toDF().count() == 5
    assert sorted(r.id for r in t.alias("x").toDF().where("x.id < 5").collect()) == [3, 4]


def test_history_and_detail_are_dataframes(spark, path):
    t = AcidTable.forPath(spark, path)
    t.delete("id = 1")
    t.update("id = 2", {"v": "'w'"})
    history = t.history()
    assert [r.operation for r in history.collect()] == ["update", "delete", "insert"]
    assert [r.operation for r in t.history(1).collect()] == ["update"]
    detail = t.detail().collect()[0]
    assert detail.format == "acidorc" and detail.partitionColumns == ["p"] and detail.version == 3
    assert detail.numFiles > 0 and detail.sizeInBytes > 0


def test_for_name_and_is_acid_table(spark, tmp_path):
    name = f"db.t_{uuid.uuid4().hex[:8]}"
    p = str(tmp_path / "named")
    create_table(p, SCHEMA, partitionColumns=["p"], name=name)
    AcidTable.load(p).append(DATA)
    t = AcidTable.forName(spark, name)
    assert t.delete("id = 0")["numDeletedRows"] == 1
    assert AcidTable.isAcidTable(spark, name) and AcidTable.isAcidTable(spark, p)
    os.makedirs(tmp_path / "plain")
    (tmp_path / "plain" / "x.txt").write_text("hello")
    assert not AcidTable.isAcidTable(spark, str(tmp_path / "plain"))
    assert not AcidTable.isAcidTable(spark, str(tmp_path / "missing"))
    with pytest.raises(TableNotRegisteredError):
        AcidTable.forName(spark, "db.no_such_table_anywhere")
    with pytest.raises(InvalidArgumentError, match="sparkSession"):
        AcidTable.forPath(object(), p)


def test_errors_name_the_problem_and_leave_the_table_alone(spark, path):
    t = AcidTable.forPath(spark, path)
    files = listing(path)
    with pytest.raises(SchemaError, match="nope"):
        t.update("id = 1", {"nope": "1"})
    with pytest.raises(SchemaError, match="condition"):
        t.delete("nope = 1")
    with pytest.raises(InvalidArgumentError, match="condition"):
        t.delete("id = = 1")
    with pytest.raises(InvalidArgumentError, match="condition"):
        t.delete(42)
    with pytest.raises(SchemaError):
        t.update("id = 1", {"n": "array(1, 2)"})
    with pytest.raises(InvalidArgumentError, match="set"):
        t.update("id = 1", set={})
    with pytest.raises(SchemaError, match="target columns only"):
        t.alias("t").update("id = 1", {"s.v": "'x'"})
    with pytest.raises(InvalidArgumentError, match="conflictDetection"):
        AcidTable.forPath(spark, path, conflictDetection="table")
    assert listing(path) == files
    assert [r.operation for r in t.history().collect()] == ["insert"]


def test_insert_only_tables_refuse_dml(spark, tmp_path):
    p = str(tmp_path / "io")
    create_table(p, pa.schema([("id", pa.int64())]), insertOnly=True)
    AcidTable.load(p).append(pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(UnsupportedOperationError, match="insert-only"):
        AcidTable.forPath(spark, p).delete("id = 1")


def test_rows_of_one_writer_in_several_statements_share_one_delete_file(spark, tmp_path):
    """Hive writes one write id in several statement directories (delta_W_W_0000, _0001), whose
    rows carry the same writer id but different statement ids. Their delete events belong in
    one delete_delta file: split over two tasks, one task's file would replace the other's."""
    from hivegen import HiveTable

    from acid_source.metastore import Metastore
    from acid_source.storage import Storage
    from acid_source.txn import Transaction

    path = str(tmp_path / "stmts")
    info = create_table(path, pa.schema([("id", pa.int64())]))
    store = Metastore(None)
    txn = Transaction.begin(store, heartbeat="none")
    write_id = txn.allocate_write_id(info.table_id, Storage(path))
    hive = HiveTable(tmp_path / "stmts", [("id", "bigint")])
    for stmt in range(4):
        hive.insert(write_id, {0: [(stmt * 10 + i,) for i in range(5)]}, stmt=stmt)
    txn.commit("insert", {info.table_id: [""]})
    assert AcidTable.load(path).toArrow().num_rows == 20
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # no coalescing: every shuffle partition is a task
    spark.conf.set("spark.sql.shuffle.partitions", "16")
    try:
        m = AcidTable.forPath(spark, path).delete("id % 10 < 3")
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
        spark.conf.set("spark.sql.shuffle.partitions", partitions)
    assert m["numDeletedRows"] == 12 and m["numFilesAdded"] == 1
    assert sorted(AcidTable.load(path).toArrow().column("id").to_pylist()) == [
        s * 10 + i for s in range(4) for i in (3, 4)]


def test_conditions_keep_spark_semantics_when_the_reader_prefilters(spark, tmp_path):
    """The reader drops rows a condition does not match before Spark sees them; Spark orders
    NaN above every number, Arrow does not: a NaN row must still be deleted by x > 5."""
    p = str(tmp_path / "nan")
    create_table(p, pa.schema([("id", pa.int64()), ("x", pa.float64())]))
    AcidTable.load(p).append(pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()),
                                       "x": [float("nan"), 6.0, 1.0, None]}))
    m = AcidTable.forPath(spark, p).delete("x > 5")
    assert m["numDeletedRows"] == 2
    assert sorted(AcidTable.load(p).toArrow().column("id").to_pylist()) == [3, 4]
