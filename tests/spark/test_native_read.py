"""``acid_source.read``: files that need no merge go to Spark's own ORC reader, the rest to
acidorc's merge, and the rows are those of ``spark.read.format("acidorc")`` - on random
histories against the literal reference reader, on every column type the native route takes,
and with the layouts that must stay on the merge (deletes, pre-ACID files, ACID v1 events,
open streaming files, timestamps)."""

from __future__ import annotations

import datetime as dt
import importlib
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hivegen import INSERT, Event, HiveTable, bucket_property, delta_name
from hypothesis import event, given, note
from properties import examples

import acid_source
from acid_source import AcidTable, create_table
from acid_source.maintenance.cleaner import vacuum
from acid_source.metastore import Metastore

pytestmark = pytest.mark.spark

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scan"))
props = importlib.import_module("test_reader_properties")  # the history generator and the reference
B0 = bucket_property(0)


def plan_text(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def routes(df) -> set[str]:
    """Which routes a DataFrame of acid_source.read takes."""
    text = plan_text(df)
    return {name for name, marker in (("native", "FileScan orc"), ("merge", "acidorc_merge_read")) if marker in text}


def rows(df) -> list:
    return sorted(map(repr, df.toArrow().to_pylist()))


def python_source(spark, path, **options):
    return spark.read.format("acidorc").options(**{k: str(v) for k, v in options.items()}).load(str(path))


# --- random histories against the reference ---------------------------------------------------
def spark_read(spark, root: Path, write_ids: str | None, txns: str | None, row_id: bool) -> list:
    options = {"tableType": "full", "includeRowId": str(row_id).lower()}
    if write_ids is not None:
        options["validWriteIds"] = write_ids
    if txns is not None:
        options["validTxns"] = txns
    ddl = "a int, b string" + (", ROW__ID struct<writeId:bigint,bucketId:int,rowId:bigint>" if row_id else "")
    df = acid_source.read(spark, str(root), schema=ddl, **options)
    for route in routes(df):
        event(f"route: {route}")
    out = []
    for r in df.toArrow().to_pylist():
        rid = r.get("ROW__ID")
        out.append(((r["a"], r["b"]), (rid["writeId"], rid["bucketId"], rid["rowId"]) if rid else None))
    return out


def check_through_spark(spark, root: Path, snap) -> None:
    try:
        expected = props.reference_read(root, snap.write_ids, snap.txns)
    except props.NotEnoughHistory:
        with pytest.raises(Exception, match="NotEnoughHistoryError|not enough history"):
            spark_read(spark, root, snap.write_ids, snap.txns, True)
        return
    got = spark_read(spark, root, snap.write_ids, snap.txns, True)
    assert props.canon(got) == props.canon(expected), f"acid_source.read disagrees with the reference for {snap}"
    plain = spark_read(spark, root, snap.write_ids, snap.txns, False)
    assert props.canon(r for r, _ in plain) == props.canon(r for r, _ in expected)


def check_history_through_spark(spark, case) -> None:
    history, snaps = case
    with tempfile.TemporaryDirectory() as tmp:
        root = props.materialize(history, Path(tmp) / "t")
        for snap in snaps:
            note(repr(snap))
            check_through_spark(spark, root, snap)


@examples(6)
@given(case=props.histories_and_snapshots())
def test_random_histories_read_through_both_routes_as_the_reference_says(spark, case):
    check_history_through_spark(spark, case)


@examples(4)
@given(case=props.v1_tables_and_snapshots())
def test_acid_v1_tables_read_through_both_routes_as_the_reference_says(spark, case):
    check_history_through_spark(spark, case)


# --- which route, and the same rows -----------------------------------------------------------
TYPES = pa.schema([("ti", pa.int8()), ("si", pa.int16()), ("i", pa.int32()), ("bi", pa.int64()),
                   ("f", pa.float32()), ("d", pa.float64()), ("bo", pa.bool_()), ("s", pa.string()),
                   ("bin", pa.binary()), ("dec", pa.decimal128(12, 3)), ("da", pa.date32()),
                   ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])), ("l", pa.list_(pa.int64())),
                   ("m", pa.map_(pa.string(), pa.int32())),
                   ("region", pa.string()), ("day", pa.date32()), ("n", pa.int32())])


def typed_rows(k: int) -> pa.Table:
    values = {
        "ti": [1, None, -128], "si": [2, None, 32767], "i": [3 + k, None, -1], "bi": [4, None, 2**62],
        "f": [1.5, None, float("nan")], "d": [2.25, None, -0.0], "bo": [True, None, False],
        "s": ["str", None, "ünï"], "bin": [b"\x00\x01", None, b""],
        "dec": [Decimal("123.456"), None, Decimal("-1.000")],
        "da": [dt.date(2024, 2, 29), None, dt.date(1970, 1, 1)],
        "st": [{"x": 7, "y": "n"}, None, {"x": None, "y": None}],
        "l": [[1, 2], None, []], "m": [[("k", 9)], None, []],
        "region": ["eu/west", None, "a b=c%"], "day": [dt.date(2024, 1, k + 1)] * 3, "n": [k] * 3,
    }
    return pa.table(values, schema=TYPES)


@pytest.fixture(scope="module")
def typed_table(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("native") / "typed")
    create_table(root, TYPES, partitionColumns=["region", "day"])
    table = AcidTable.load(root)
    for k in range(2):
        table.append(typed_rows(k))
    return root


def test_every_type_the_native_route_takes_reads_as_the_python_source_does(spark, typed_table):
    native = acid_source.read(spark, typed_table, includeRowId=True)
    assert routes(native) == {"native"}
    assert rows(native) == rows(python_source(spark, typed_table, includeRowId="true"))
    assert native.count() == 6
    # pruned to a column, filtered, and the rowFilter option: the same rows again
    assert rows(native.select("s", "region").where("i > 3")) == rows(
        python_source(spark, typed_table).select("s", "region").where("i > 3"))
    filtered = acid_source.read(spark, typed_table, rowFilter="region IS NULL OR n = 2")
    assert rows(filtered) == rows(python_source(spark, typed_table, rowFilter="region IS NULL OR n = 2"))
    chosen = acid_source.read(spark, typed_table, partitionFilter="region = 'eu/west'")
    assert sorted(r.n for r in chosen.select("n").collect()) == [0, 1]


def test_native_reads_in_many_threads_leave_the_listing_threshold_as_the_user_set_it(spark, typed_table):
    """The native route raises spark.sql.sources.parallelPartitionDiscovery.threshold around its
    ``load`` (past it Spark lists the files in a job of its own): reads in several threads at
    once each get their rows, and the session keeps the value its user set."""
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = spark.conf.get(key)
    spark.conf.set(key, "0")  # every partition's load raises it
    try:
        expected = rows(python_source(spark, typed_table))

        def read(_):
            return [rows(acid_source.read(spark, typed_table)) for _ in range(3)]

        with ThreadPoolExecutor(4) as pool:
            results = [r for batch in pool.map(read, range(4)) for r in batch]
        assert all(r == expected for r in results)
        assert spark.conf.get(key) == "0"
    finally:
        spark.conf.set(key, before)


def test_many_partitions_share_one_scan_and_take_their_values_from_a_join(spark, typed_table, monkeypatch):
    """Past UNION_PARTITIONS partitions, one file scan reads them all and a broadcast join of each
    row's file gives its partition values: escaped and default partition names included."""
    from acid_source.spark import native_read

    monkeypatch.setattr(native_read, "UNION_PARTITIONS", 1)
    joined = acid_source.read(spark, typed_table, includeRowId=True)
    text = plan_text(joined)
    assert text.count("FileScan orc") == 1 and "BroadcastHashJoin" in text
    assert rows(joined) == rows(python_source(spark, typed_table, includeRowId="true"))
    assert rows(joined.select("region", "day").where("n = 1")) == rows(
        python_source(spark, typed_table).select("region", "day").where("n = 1"))


def test_deletes_keep_their_buckets_on_the_merge_and_a_major_compaction_makes_all_native(spark, tmp_path):
    root = str(tmp_path / "t")
    create_table(root, pa.schema([("id", pa.int64()), ("p", pa.int64())]), partitionColumns=["p"])
    table = AcidTable.load(root)
    table.append(pa.table({"id": list(range(10)), "p": [i % 2 for i in range(10)]}))
    table.append(pa.table({"id": list(range(10, 20)), "p": [i % 2 for i in range(10)]}))
    table.delete("id = 3")  # partition p=1 only
    df = acid_source.read(spark, root)
    assert routes(df) == {"native", "merge"}
    assert sorted(r.id for r in df.collect()) == sorted(set(range(20)) - {3})
    assert "p=1" not in plan_text(df).split("MapInArrow")[0].split("FileScan orc")[1]  # p=1 is merged
    table.compact("major")
    df = acid_source.read(spark, root)
    assert routes(df) == {"native"} and sorted(r.id for r in df.collect()) == sorted(set(range(20)) - {3})


def test_native_read_false_and_the_change_feed_read_through_the_python_source(spark, typed_table):
    for options in ({"nativeRead": False}, {"nativeRead": "false"}):
        df = acid_source.read(spark, typed_table, **options)
        assert "BatchScan acidorc" in plan_text(df) and routes(df) == set()
    with pytest.raises(Exception, match="nativeRead"):
        acid_source.read(spark, typed_table, nativeRead="maybe")


def test_timestamps_originals_v1_events_and_open_streaming_files_stay_on_the_merge(spark, tmp_path):
    ts = tmp_path / "ts"
    HiveTable(ts, [("id", "int"), ("t", "timestamp")]).insert(1, {0: [(1, dt.datetime(2024, 1, 2, 3, 4, 5, 6))]})
    df = acid_source.read(spark, str(ts))
    assert routes(df) == {"merge"}
    assert df.collect()[0].t == dt.datetime(2024, 1, 2, 3, 4, 5, 6)

    orig = tmp_path / "orig"
    t = HiveTable(orig, [("id", "int")])
    t.original("000000_0", [(1,), (2,)])
    t.insert(1, {1: [(3,)]})
    df = acid_source.read(spark, str(orig), includeRowId=True)
    assert routes(df) == {"native", "merge"}  # bucket 0 holds the pre-ACID file, bucket 1 a delta
    assert rows(df) == rows(python_source(spark, orig, includeRowId="true"))

    stream = tmp_path / "stream"
    t = HiveTable(stream, [("id", "int")])
    events = [Event(INSERT, 1, B0, 0, 1, (1,)), Event(INSERT, 2, B0, 0, 2, (2,))]
    t.write_events(t.dir(delta_name(1, 2, stmt=None)) / "bucket_00000", events, flush_at=[1])
    df = acid_source.read(spark, str(stream))
    assert routes(df) == {"merge"} and [r.id for r in df.collect()] == [1]


def test_to_df_and_the_sql_entry_points_merge_source_take_the_native_route(spark, tmp_path):
    root = str(tmp_path / "t")
    create_table(root, pa.schema([("id", pa.int64()), ("v", pa.string())]))
    AcidTable.load(root).append(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    target = AcidTable.forPath(spark, root)
    assert routes(target.toDF()) == {"native"}
    assert sorted(r.id for r in target.toDF().collect()) == [1, 2]
    source = str(tmp_path / "s")
    create_table(source, pa.schema([("id", pa.int64()), ("v", pa.string())]))
    AcidTable.load(source).append(pa.table({"id": [2, 3], "v": ["B", "C"]}))
    acid_source.sql(spark, f"MERGE INTO acidorc.`{root}` t USING acidorc.`{source}` s ON t.id = s.id "
                           "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert sorted((r.id, r.v) for r in target.toDF().collect()) == [(1, "a"), (2, "B"), (3, "C")]


def test_a_native_read_takes_a_lease_and_never_returns_fewer_rows_after_its_files_are_gone(spark, tmp_path):
    url = os.environ["ACIDORC_METASTORE_URL"]
    root = str(tmp_path / "t")
    create_table(root, pa.schema([("id", pa.int64())]))
    table = AcidTable.load(root)
    table.append(pa.table({"id": [1, 2]}))
    table.append(pa.table({"id": [3]}))
    store = Metastore(url)
    tid = store.get_table(root).table_id
    df = acid_source.read(spark, root, readLeaseSeconds=60)
    (lease,) = store.live_leases(tid)
    assert lease.ttl_seconds == 60 and lease.write_ids.high_watermark == 2
    table.compact("major")
    assert vacuum(root, metastoreUrl=url, retentionSeconds=0)["removedPaths"] == []  # kept for the lease
    assert sorted(r.id for r in df.collect()) == [1, 2, 3]
    an_hour_later = Metastore(url, clock=lambda: time.time() + 3600)
    assert vacuum(root, metastore=an_hour_later, retentionSeconds=0)["removedPaths"]
    with pytest.raises(Exception, match="FILE_NOT_EXIST|does not exist|FileNotFound"):
        df.collect()
