"""Partition directories of float / double (and decimal, timestamp) columns are named as Hive
names them (issue 18 follow-up): the Java string of the value (``Double.toString`` /
``Float.toString``: ``NaN``, ``Infinity``, ``1.0E20``, float 1.1 -> ``1.1``), with -0.0 and
0.0 in one partition ``0.0`` (Spark normalises grouping keys so); and a table with such
partitions reads, deletes, updates, compacts and time-travels. Expected names are literals
here, never computed by acidorc's code."""

from __future__ import annotations

import datetime as dt
import math
import os
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.table import AcidTable
from acid_source.write.rows import format_partition_value, group_rows, partition_path

VALUES = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.1, 1e20, 1e-5, 100.0, float("nan")]
#: what Hive's FileSinkOperator names them (DoubleWritable / FloatWritable.toString), -0.0 merged into 0.0
EXPECTED_DIRS = ["p=-Infinity", "p=0.0", "p=1.0E-5", "p=1.0E20", "p=1.1", "p=100.0", "p=Infinity", "p=NaN"]


def partition_dirs(path):
    return sorted(n for n in os.listdir(path) if n.startswith("p="))


def same(a, b) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def rows_of(table):
    return sorted((r["id"], r["p"]) for r in table.toArrow().to_pylist())


@pytest.mark.parametrize("hive_type, arrow_type", [("double", pa.float64()), ("float", pa.float32())])
def test_float_partitions_are_named_as_hive_names_them_and_every_operation_works(tmp_path, hive_type, arrow_type):
    path = str(tmp_path / "t")
    create_table(path, f"id int, p {hive_type}", partitionColumns=["p"])
    t = AcidTable.load(path)
    metrics = t.append(pa.table({"id": pa.array(range(len(VALUES)), pa.int32()), "p": pa.array(VALUES, arrow_type)}))
    assert partition_dirs(path) == EXPECTED_DIRS
    assert metrics["partitions"] == EXPECTED_DIRS  # what the store records as touched: the directories
    version = t.version
    stored = [float(np.array(v, arrow_type.to_pandas_dtype())) for v in VALUES]  # the column's own values
    stored[3] = 0.0  # -0.0 reads back from p=0.0
    got = rows_of(t)
    assert [i for i, _ in got] == list(range(len(VALUES)))
    assert all(same(p, e) and math.copysign(1, p) == math.copysign(1, e) for (_, p), e in zip(got, stored)), got

    assert t.delete("isnan(p)")["numDeletedRows"] == 2  # the NaN partition's rows, engine-free
    assert t.update("p = 100", {"id": "id + 100"})["numUpdatedRows"] == 1
    assert t.update("id = 1", {"p": "CAST('-0.0' AS DOUBLE)"})["numUpdatedRows"] == 1  # moves into p=0.0
    expected_after = sorted([(i, p) for i, p in zip(range(len(VALUES)), stored) if not math.isnan(p)
                             and i not in (1, 8)] + [(108, 100.0), (1, 0.0)])
    assert rows_of(t) == expected_after
    assert partition_dirs(path) == EXPECTED_DIRS  # no second directory for any value
    t.compact("major")
    assert rows_of(AcidTable.load(path)) == expected_after
    assert partition_dirs(path) == EXPECTED_DIRS
    old = sorted((r["id"], r["p"]) for r in t.scan(versionAsOf=version).toArrow().to_pylist())
    assert [i for i, _ in old] == list(range(len(VALUES)))
    assert math.isnan(old[0][1]) and math.isnan(old[-1][1])
    assert rows_of(AcidTable.load(path)) == expected_after


@pytest.mark.parametrize("value, arrow_type, expected", [
    # Double.toString / Float.toString: plain in [1e-3, 1e7), else d.dddE[-]n; always a digit after the point
    (1234567.0, pa.float64(), "p=1234567.0"),
    (12345678.0, pa.float64(), "p=1.2345678E7"),
    (0.001, pa.float64(), "p=0.001"),
    (0.0001, pa.float64(), "p=1.0E-4"),
    (-2.5e-7, pa.float64(), "p=-2.5E-7"),
    (0.1 + 0.2, pa.float64(), "p=0.30000000000000004"),
    (5e-324, pa.float64(), "p=4.9E-324"),
    (1.7976931348623157e308, pa.float64(), "p=1.7976931348623157E308"),
    (1.1, pa.float32(), "p=1.1"),
    (3.4028234663852886e38, pa.float32(), "p=3.4028235E38"),
    (1.401298464324817e-45, pa.float32(), "p=1.4E-45"),
    (16777216.0, pa.float32(), "p=1.6777216E7"),
    (0.1, pa.float32(), "p=0.1"),
    # HiveDecimalWritable.toString: trailing zeros dropped, never an exponent (Spark keeps the scale)
    (Decimal("1.50"), pa.decimal128(10, 2), "p=1.5"),
    (Decimal("100.00"), pa.decimal128(10, 2), "p=100"),
    (Decimal("-0.00"), pa.decimal128(10, 2), "p=0"),
    (Decimal("12345678901234567890123456789012345.678"), pa.decimal128(38, 3),
     "p=12345678901234567890123456789012345.678"),
    # Hive's Timestamp.toString: no fraction when whole seconds, else without trailing zeros
    (dt.datetime(2020, 1, 2, 3, 4, 5), pa.timestamp("us"), "p=2020-01-02 03%3A04%3A05"),
    (dt.datetime(2020, 1, 2, 3, 4, 5, 500000), pa.timestamp("us"), "p=2020-01-02 03%3A04%3A05.5"),
    (dt.datetime(2020, 1, 2, 3, 4, 5, 123456), pa.timestamp("us"), "p=2020-01-02 03%3A04%3A05.123456"),
    (dt.date(99, 1, 5), pa.date32(), "p=0099-01-05"),
    (True, pa.bool_(), "p=true"),
    (-7, pa.int64(), "p=-7"),
])
def test_partition_names_of_each_type(value, arrow_type, expected):
    batch = pa.RecordBatch.from_arrays([pa.array([value], arrow_type)], names=["p"])
    [(values, _)] = list(group_rows(batch, [batch.column(0)]))
    assert partition_path(["p"], values) == expected


def test_nan_rows_are_one_group_and_zeros_one_group():
    keys = pa.array([float("nan"), 0.0, -0.0, float("nan"), 1.0, None, -0.0], pa.float64())
    batch = pa.RecordBatch.from_arrays([pa.array(range(len(keys)))], names=["i"])
    groups = [(partition_path(["p"], values), sorted(rows.column(0).to_pylist()))
              for values, rows in group_rows(batch, [keys])]
    assert sorted(groups) == [("p=0.0", [1, 2, 6]), ("p=1.0", [4]), ("p=NaN", [0, 3]),
                              ("p=__HIVE_DEFAULT_PARTITION__", [5])]


def test_static_values_are_formatted_by_value():
    assert format_partition_value(float("nan")) == "NaN"
    assert format_partition_value(-0.0) == "0.0"
    assert format_partition_value(float("-inf")) == "-Infinity"


def test_partitions_another_engine_spelled_otherwise_are_found_by_value(tmp_path):
    """Hive names -0.0 ``p=-0.0``; acidorc before this fix named NaN ``p=nan``: a DML's delete
    events go to the directory the rows are in, and its new rows join them there."""
    path = str(tmp_path / "t")
    create_table(path, "id int, p double", partitionColumns=["p"])
    t = AcidTable.load(path)
    t.append(pa.table({"id": pa.array([1, 2, 3, 4], pa.int32()), "p": [float("nan"), 1.0, -0.0, float("nan")]}))
    os.rename(os.path.join(path, "p=NaN"), os.path.join(path, "p=nan"))  # as another writer spelled them
    os.rename(os.path.join(path, "p=0.0"), os.path.join(path, "p=-0.0"))
    assert len(rows_of(t)) == 4
    assert t.delete("id in (1, 3)")["numDeletedRows"] == 2
    assert t.update("id = 2", {"p": "CAST('NaN' AS DOUBLE)"})["numUpdatedRows"] == 1
    assert partition_dirs(path) == ["p=-0.0", "p=1.0", "p=nan"]
    got = rows_of(t)
    assert [i for i, _ in got] == [2, 4] and all(math.isnan(p) for _, p in got)
    t.compact("major")
    assert [i for i, _ in rows_of(AcidTable.load(path))] == [2, 4]


@pytest.mark.spark
def test_spark_names_the_values_as_hive_does_but_minus_zero(spark, tmp_path):
    """Spark's CAST to string and its own partitioned write (a plain ORC directory) spell
    float and double values as Hive does, so as acidorc does; only -0.0 differs: Spark's
    write makes it a partition of its own (its grouping would not), acidorc puts it in 0.0."""
    from pyspark.sql.types import DoubleType, FloatType, IntegerType, StructField, StructType

    rows = [(i, v, v) for i, v in enumerate([float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.1, 1e20,
                                              1e-5, 100.0])]
    schema = StructType([StructField("id", IntegerType()), StructField("d", DoubleType()),
                         StructField("f", FloatType())])
    df = spark.createDataFrame(rows, schema)
    cast = {r["id"]: (r["d"], r["f"]) for r in df.selectExpr("id", "CAST(d AS STRING) AS d",
                                                              "CAST(f AS STRING) AS f").collect()}
    assert cast == {0: ("NaN", "NaN"), 1: ("Infinity", "Infinity"), 2: ("-Infinity", "-Infinity"),
                    3: ("-0.0", "-0.0"), 4: ("0.0", "0.0"), 5: ("1.1", "1.1"), 6: ("1.0E20", "1.0E20"),
                    7: ("1.0E-5", "1.0E-5"), 8: ("100.0", "100.0")}
    df.select("id", "d").coalesce(1).write.partitionBy("d").orc(str(tmp_path / "d"))  # one job: the double column
    names = sorted(n for n in os.listdir(tmp_path / "d") if n.startswith("d="))
    assert names == sorted([n.replace("p=", "d=") for n in EXPECTED_DIRS] + ["d=-0.0"])


def test_timestamp_and_decimal_partitions_are_named_as_hive_names_them_and_read_back(tmp_path):
    path = str(tmp_path / "t")
    create_table(path, "id int, ts timestamp, d decimal(10,2)", partitionColumns=["ts", "d"])
    t = AcidTable.load(path)
    utc = dt.timezone.utc
    stamps = [dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=utc), dt.datetime(2020, 1, 2, 3, 4, 5, 250000, tzinfo=utc)]
    data = pa.table({"id": pa.array([1, 2], pa.int32()), "ts": pa.array(stamps, pa.timestamp("us", "UTC")),
                     "d": pa.array([Decimal("1.50"), Decimal("100.00")], pa.decimal128(10, 2))})
    assert t.append(data)["partitions"] == ["ts=2020-01-02 03%3A04%3A05.25/d=100", "ts=2020-01-02 03%3A04%3A05/d=1.5"]
    got = sorted(tuple(r.values()) for r in t.toArrow().to_pylist())
    assert got == [(1, stamps[0], Decimal("1.50")), (2, stamps[1], Decimal("100.00"))]
    assert t.delete("d = 1.5")["numDeletedRows"] == 1
    assert [r["id"] for r in t.toArrow().to_pylist()] == [2]
