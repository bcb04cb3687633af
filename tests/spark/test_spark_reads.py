"""Through Spark: time travel options, a DataFrame that does not see later commits (Spark
reuses a Python source's planned partitions), subset schemas, NOT NULL columns."""

from __future__ import annotations

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.table import AcidTable

pytestmark = pytest.mark.spark


def test_version_and_timestamp_as_of(spark, tmp_path):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64())]))
    t = AcidTable.load(path)
    for i in range(3):
        t.append(pa.table({"id": pa.array([i], pa.int64())}))
    def read():  # a DataFrameReader keeps its options: a fresh one per read
        return spark.read.format("acidorc")

    assert sorted(r.id for r in read().option("versionAsOf", 2).load(path).collect()) == [0, 1]
    when = t.history()[-1]["timestamp"].isoformat()  # write id 1
    assert [r.id for r in read().option("timestampAsOf", when).load(path).collect()] == [0]
    with pytest.raises(Exception, match="versionAsOf"):
        read().option("versionAsOf", 1).option("validWriteIds", "x:1:1::").load(path).collect()


def test_a_dataframe_keeps_its_planned_snapshot(spark, tmp_path):
    # Documented behaviour (README, "Snapshots and DataFrames"): Spark 4.x reuses the
    # partitions a Python data source planned, so a DataFrame built once does not see later
    # commits; building the read again (or AcidTable.scan) does.
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64())]))
    t = AcidTable.load(path)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    df = spark.read.format("acidorc").load(path)
    assert df.count() == 1
    t.append(pa.table({"id": pa.array([2], pa.int64())}))
    assert df.count() == 1
    assert spark.read.format("acidorc").load(path).count() == 2


def test_a_null_into_a_column_spark_called_not_null_keeps_the_table_readable(spark, tmp_path):
    # spark.range ids are NOT NULL; the table stores every column nullable (as Hive does)
    path = str(tmp_path / "t")
    spark.range(3).write.format("acidorc").mode("append").save(path)
    spark.sql("SELECT CAST(NULL AS BIGINT) AS id").write.format("acidorc").mode("append").save(path)
    got = sorted((r.id for r in spark.read.format("acidorc").load(path).collect()), key=lambda v: (v is None, v))
    assert got == [0, 1, 2, None]


def test_a_subset_schema_prunes_and_a_misspelled_column_is_an_error(spark, tmp_path):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())]))
    AcidTable.load(path).append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"], "amount": [2.5]}))
    got = spark.read.format("acidorc").schema("id bigint, amount double").load(path).collect()
    assert [tuple(r) for r in got] == [(1, 2.5)]
    with pytest.raises(Exception, match="nmae"):
        spark.read.format("acidorc").schema("id bigint, nmae string").load(path).collect()


def test_a_partition_column_named_first_reads_last_through_spark(spark, tmp_path):
    path = str(tmp_path / "t")
    create_table(path, "grp STRING, id BIGINT, v BIGINT", partitionColumns=["grp"])
    AcidTable.load(path).append(pa.table({"grp": ["g0", "g1"], "id": [1, 2], "v": [5, 6]}))
    df = spark.read.format("acidorc").load(path)
    assert df.columns == ["id", "v", "grp"]
    assert sorted(tuple(r) for r in df.collect()) == [(1, 5, "g0"), (2, 6, "g1")]
