"""The change feed through Spark: ``spark.read.format("acidorc").option("readChangeFeed", "true")``
returns the rows ``AcidTable.changes`` returns (appends, an UPDATE moving rows across
partitions and buckets, a DELETE, a MERGE, minor compaction), by versions and by timestamps;
bad options are typed errors naming the option, and leave the table as it was."""

from __future__ import annotations

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.table import AcidTable

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("v", pa.string()), ("p", pa.string())])


def rows(ids, p):
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array([i % 3 for i in ids], pa.int32()),
                     "v": [f"v{i}" for i in ids], "p": [p] * len(ids)})


@pytest.fixture(scope="module")
def history(spark, tmp_path_factory):
    """A partitioned, bucketed table with one of each kind of commit (versions 1..5), minor
    compacted after the UPDATE."""
    path = str(tmp_path_factory.mktemp("cf") / "t")
    create_table(path, SCHEMA, partitionColumns=["p"], bucketColumns=["k"], numBuckets=2)
    t = AcidTable.load(path)
    t.append(rows([1, 2, 3], "a"))                                        # 1
    t.append(rows([4, 5], "b"))                                           # 2
    t.update("id in (1, 4)", {"p": "'b'", "k": "k + 1", "v": "'moved'"})  # 3: across partitions and buckets
    t.compact("minor")
    t.delete("id = 2")                                                    # 4
    source = spark.createDataFrame([(3, "m3"), (6, "m6"), (5, None)], "id bigint, v string")
    (AcidTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedDelete("s.v IS NULL").whenMatchedUpdate(set={"v": "s.v"})
     .whenNotMatchedInsert(values={"id": "s.id", "k": "0", "v": "s.v", "p": "'a'"}).execute())  # 5
    return path


def feed(spark, path, **options):
    reader = spark.read.format("acidorc").option("readChangeFeed", "true")
    for name, value in options.items():
        reader = reader.option(name, str(value))
    return reader.load(path)


def as_tuples(table_or_rows) -> list[tuple]:
    if isinstance(table_or_rows, pa.Table):
        t = table_or_rows
        cols = [t.column(c).to_pylist() for c in ("_commit_version", "_change_type", "id", "k", "v", "p")]
        return sorted(zip(*cols))
    return sorted((r._commit_version, r._change_type, r.id, r.k, r.v, r.p) for r in table_or_rows)


def test_spark_reads_the_change_feed_of_every_kind_of_commit(spark, history):
    df = feed(spark, history, startingVersion=1)
    assert df.columns == ["id", "k", "v", "p", "_change_type", "_commit_version", "_commit_timestamp"]
    assert dict(df.dtypes)["_commit_timestamp"] == "timestamp" and dict(df.dtypes)["_commit_version"] == "bigint"
    got = as_tuples(df.collect())
    assert got == as_tuples(AcidTable.load(history).changes(startingVersion=1).toArrow())
    assert got == sorted([
        (1, "insert", 1, 1, "v1", "a"), (1, "insert", 2, 2, "v2", "a"), (1, "insert", 3, 0, "v3", "a"),
        (2, "insert", 4, 1, "v4", "b"), (2, "insert", 5, 2, "v5", "b"),
        (3, "delete", 1, 1, "v1", "a"), (3, "insert", 1, 2, "moved", "b"),
        (3, "delete", 4, 1, "v4", "b"), (3, "insert", 4, 2, "moved", "b"),
        (4, "delete", 2, 2, "v2", "a"),
        (5, "delete", 3, 0, "v3", "a"), (5, "insert", 3, 0, "m3", "a"),
        (5, "delete", 5, 2, "v5", "b"), (5, "insert", 6, 0, "m6", "a"),
    ])
    assert as_tuples(feed(spark, history, startingVersion=3, endingVersion=4).collect()) == [
        c for c in got if 3 <= c[0] <= 4]
    assert df.rdd.getNumPartitions() > 1  # one partition per partition directory and bucket


def test_timestamp_options_select_by_commit_time(spark, history):
    when = {h["version"]: h["timestamp"] for h in AcidTable.load(history).history()}
    df = feed(spark, history, startingTimestamp=when[2].isoformat(), endingTimestamp=when[3].isoformat())
    rows_ = df.collect()
    assert {r._commit_version for r in rows_} == {2, 3}
    assert {r._commit_version: r._commit_timestamp.astimezone(when[2].tzinfo) for r in rows_} == {
        2: when[2], 3: when[3]}


@pytest.mark.parametrize("options, option", [
    ({}, "startingVersion"),
    ({"endingVersion": 2}, "startingVersion"),
    ({"startingVersion": 3, "endingVersion": 2}, "endingVersion"),
    ({"startingVersion": "one"}, "startingVersion"),
    ({"startingVersion": "1.5"}, "startingVersion"),
    ({"startingVersion": 1, "startingTimestamp": "2026-01-01"}, "startingTimestamp"),
    ({"startingVersion": 1, "versionAsOf": 2}, "versionAsOf"),
    ({"startingVersion": 1, "includeRowId": "true"}, "includeRowId"),
    ({"startingTimestamp": "not a time"}, "startingTimestamp"),
])
def test_bad_options_are_typed_errors_and_leave_the_table_as_it_was(spark, history, options, option):
    before = AcidTable.load(history).history()
    with pytest.raises(Exception, match=rf"InvalidOptionError: option '{option}'"):
        feed(spark, history, **options).collect()
    assert AcidTable.load(history).history() == before


def test_range_options_without_read_change_feed_and_a_version_past_the_latest(spark, history):
    with pytest.raises(Exception, match=r"InvalidOptionError: option 'startingVersion': only applies to the change"):
        spark.read.format("acidorc").option("startingVersion", "1").load(history).collect()
    with pytest.raises(Exception, match=r"VersionNotFoundError: .* starts after the latest version 5"):
        feed(spark, history, startingVersion=9).collect()


def test_removed_history_is_a_typed_error_through_spark(spark, tmp_path):
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, partitionColumns=["p"])
    t = AcidTable.load(path)
    t.append(rows([1, 2], "a"))
    t.delete("id = 1")
    t.compact("major")
    t.vacuum(retentionSeconds=0)
    t.append(rows([3], "a"))
    with pytest.raises(Exception, match=r"HistoryUnavailableError: .*write id 1 in p=a"):
        feed(spark, path, startingVersion=1).collect()
    assert as_tuples(feed(spark, path, startingVersion=3).collect()) == [(3, "insert", 3, 0, "v3", "a")]


def test_a_change_feed_task_unpickles_and_reads_without_driver_side_modules(history):
    """What Spark ships to a task - the reader and one partition - read in a fresh interpreter
    that loads no store, resolver, planner or SQL parser."""
    from test_task_imports import DRIVER_SIDE, run_in_fresh_interpreter

    from acid_source.spark.change_feed import AcidChangeFeedReader
    from acid_source.spark.options import read_spec

    options = read_spec({"path": history, "readChangeFeed": "true", "startingVersion": "1"})
    reader = AcidChangeFeedReader(options)
    partitions = reader.partitions()
    assert len(partitions) > 1
    total = sum(run_in_fresh_interpreter("read", (reader, p), modules=DRIVER_SIDE) for p in partitions)
    assert total == AcidTable.load(history).changes(startingVersion=1).count()
