"""df.write.format("acidorc") through a real SparkSession."""

import datetime as dt
from decimal import Decimal

import pytest

pytestmark = pytest.mark.spark

TYPES = ("b boolean, ti tinyint, si smallint, i int, bi bigint, f float, d double, s string, "
         "bin binary, dec decimal(12,3), da date, ts timestamp_ntz, tz timestamp, "
         "st struct<x:int,y:array<string>>, l array<bigint>, m map<string,int>")
ROW = (True, -3, 300, 70000, 2**40, 1.5, 2.25, "str", bytearray(b"\x00\xff"), Decimal("123.456"),
       dt.date(2024, 2, 29), dt.datetime(2024, 1, 2, 3, 4, 5, 123456), dt.datetime(2023, 6, 7, 8, 9, 10),
       (7, ["a", None]), [1, 2], {"k": 9})


def test_round_trip_every_type(spark, tmp_path):
    path = str(tmp_path / "types")
    df = spark.createDataFrame([ROW, (None,) * len(ROW)], TYPES)
    df.write.format("acidorc").mode("append").save(path)
    back = spark.read.format("acidorc").load(path)
    assert back.schema == df.schema
    assert sorted(back.collect(), key=str) == sorted(df.collect(), key=str)


def test_append_overwrite_and_partitions(spark, tmp_path):
    path = str(tmp_path / "sales")
    df = spark.createDataFrame([(1, "a", dt.date(2024, 1, 1)), (2, "b", dt.date(2024, 1, 2))],
                               "id bigint, name string, day date")
    df.write.format("acidorc").option("partitionColumns", "day").mode("append").save(path)
    df.write.format("acidorc").mode("append").save(path)
    read = spark.read.format("acidorc").load(path)
    assert read.count() == 4 and read.columns == ["id", "name", "day"]
    (spark.createDataFrame([(3, "c", dt.date(2024, 1, 2))], "id bigint, name string, day date")
     .write.format("acidorc").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path))
    assert sorted((r.id, r.day.day) for r in spark.read.format("acidorc").load(path).collect()) == [
        (1, 1), (1, 1), (3, 2)]
    (spark.createDataFrame([(4, "d")], "id bigint, name string")
     .write.format("acidorc").option("partition", "day=2024-01-05").mode("append").save(path))
    assert spark.read.format("acidorc").load(path).filter("day = DATE'2024-01-05'").count() == 1
    spark.createDataFrame([(5, "e", dt.date(2024, 1, 9))], "id bigint, name string, day date") \
        .write.format("acidorc").mode("overwrite").save(path)
    assert [r.id for r in spark.read.format("acidorc").load(path).collect()] == [5]


def test_insert_only_table(spark, tmp_path):
    path = str(tmp_path / "mm")
    spark.range(5).write.format("acidorc").option("tableType", "insert_only").mode("append").save(path)
    spark.range(5, 7).write.format("acidorc").mode("append").save(path)
    assert sorted(r.id for r in spark.read.format("acidorc").load(path).collect()) == list(range(7))


def test_write_errors_are_typed_and_change_nothing(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("acidorc").mode("append").save(path)
    with pytest.raises(Exception, match="SchemaError.*'id' is string in the data but int64"):
        spark.createDataFrame([("x",)], "id string").write.format("acidorc").mode("append").save(path)
    with pytest.raises(Exception, match="unknown option"):
        spark.range(1).write.format("acidorc").option("bogus", "1").mode("append").save(path)
    assert spark.read.format("acidorc").load(path).count() == 3


def test_failed_job_aborts_and_leaves_no_rows(spark, tmp_path):
    from pyspark.sql.functions import udf

    path = str(tmp_path / "t")
    spark.range(3).write.format("acidorc").mode("append").save(path)

    @udf("bigint")
    def explode_on_two(x):
        if x == 2:
            raise ValueError("boom")
        return x

    with pytest.raises(Exception, match="boom"):
        spark.range(4).repartition(2).select(explode_on_two("id").alias("id")) \
            .write.format("acidorc").mode("append").save(path)
    assert sorted(r.id for r in spark.read.format("acidorc").load(path).collect()) == [0, 1, 2]
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["delta_0000001_0000001_0000"]


def test_bucketed_table_through_spark(spark, tmp_path):
    import pyarrow as pa

    from acid_source.layout.bucketing import bucket_ids

    path = str(tmp_path / "bucketed")
    df = spark.range(0, 100, numPartitions=3).selectExpr("id", "cast(id % 7 as string) as tag")
    df.write.format("acidorc").option("bucketColumns", "id").option("numBuckets", "8").mode("append").save(path)
    back = spark.read.format("acidorc").option("includeRowId", "true").load(path).collect()
    assert sorted(r.id for r in back) == list(range(100))
    expected = bucket_ids([pa.array(range(100), pa.int64())], 8)
    assert all((r.ROW__ID.bucketId >> 16) & 0xFFF == expected[r.id] for r in back)
    assert sorted(p.name for p in (tmp_path / "bucketed").iterdir()) == [
        "delta_0000001_0000001_0000", "delta_0000001_0000001_0001", "delta_0000001_0000001_0002"]
