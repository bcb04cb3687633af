"""spark.read.format("acidorc") end to end, through a real SparkSession."""

import datetime as dt
from decimal import Decimal

import pytest
from hivegen import INSERT, Event, HiveTable, bucket_property, delta_name

pytestmark = pytest.mark.spark

B0 = bucket_property(0)
COLS = [("id", "int"), ("name", "string")]


@pytest.fixture
def partitioned(tmp_path):
    t = HiveTable(tmp_path / "p", COLS)
    for day, ids in (("2024-01-01", [1, 2, 3]), ("2024-01-02", [4, 5, 6])):
        t.insert(1, {b: [(i, f"n{i}")] for b, i in enumerate(ids)}, partition=f"day={day}")
    t.delete(2, [(1, B0, 0)], partition="day=2024-01-02")  # deletes id 4
    return t.root


def test_read_with_load_and_with_path_option(spark, tmp_path):
    t = HiveTable(tmp_path / "t", COLS)
    t.base(1, {0: [Event(INSERT, 1, B0, i, 1, (i, f"v{i}")) for i in range(3)]})
    t.delete(2, [(1, B0, 1)])
    t.insert(2, {0: [(1, "v1-new")]})
    path = str(t.root)
    by_load = spark.read.format("acidorc").load(path)
    by_option = spark.read.format("acidorc").option("path", path).load()
    expected = [(0, "v0"), (1, "v1-new"), (2, "v2")]
    assert sorted(map(tuple, by_load.collect())) == expected
    assert sorted(map(tuple, by_option.collect())) == expected
    assert by_load.columns == ["id", "name"]


def test_one_input_partition_per_partition_dir_and_bucket(spark, partitioned):
    df = spark.read.format("acidorc").load(str(partitioned))
    assert df.rdd.getNumPartitions() == 6
    rows = sorted((r.id, r.day) for r in df.collect())
    assert rows == [(1, dt.date(2024, 1, 1)), (2, dt.date(2024, 1, 1)), (3, dt.date(2024, 1, 1)),
                    (5, dt.date(2024, 1, 2)), (6, dt.date(2024, 1, 2))]


def _poison(partitioned):
    """Make one partition unreadable: if pruning did not skip it, reading it fails."""
    poison = partitioned / "day=2024-01-02" / delta_name(3, 3, 0) / "bucket_00000"
    poison.parent.mkdir()
    poison.write_bytes(b"not orc")


# an explicit schema, so that schema inference does not open the poisoned newest file
SCHEMA = "id int, name string, day date"


def test_partition_filter_option_prunes_directories(spark, partitioned):
    _poison(partitioned)
    pruned = (spark.read.format("acidorc").schema(SCHEMA)
              .option("partitionFilter", "day < DATE'2024-01-02' OR day IS NULL").load(str(partitioned)))
    assert sorted(r.id for r in pruned.collect()) == [1, 2, 3]
    assert sorted(r.id for r in pruned.filter("id > 1").collect()) == [2, 3]
    with pytest.raises(Exception, match="not a readable ORC file"):
        spark.read.format("acidorc").schema(SCHEMA).load(str(partitioned)).collect()


def test_pushed_partition_filters_prune_when_pushdown_is_on(spark, partitioned):
    _poison(partitioned)
    reader = spark.read.format("acidorc").schema(SCHEMA).option("filterPushdown", "true")
    pruned = reader.load(str(partitioned)).filter("day = DATE'2024-01-01' AND id > 1")
    assert sorted(r.id for r in pruned.collect()) == [2, 3]


def test_reused_dataframe_is_not_pruned_by_an_earlier_query(spark, partitioned):
    """Spark 4.2/4.3 reuse a filtered scan's plan for a later unfiltered scan of the same
    DataFrame; by default acidorc plans nothing filter-dependent there."""
    df = spark.read.format("acidorc").load(str(partitioned))
    assert df.filter("day = DATE'2024-01-01'").count() == 3
    assert df.filter("id = 5").count() == 1
    assert df.count() == 5


def test_pushdown_safety_by_spark_version():
    from acid_source.spark.datasource import pushdown_is_safe

    assert not pushdown_is_safe("4.3.0") and not pushdown_is_safe("4.2.1")
    assert pushdown_is_safe("5.0.0")


def test_data_filters_are_still_applied_by_spark(spark, partitioned):
    df = spark.read.format("acidorc").load(str(partitioned))
    assert sorted(r.id for r in df.filter("id >= 3 AND name <> 'n6'").collect()) == [3, 5]


def test_sql_temporary_view_and_row_id(spark, partitioned):
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW acid_p USING acidorc "
              f"OPTIONS (path '{partitioned}', includeRowId 'true')")
    rows = spark.sql("SELECT id, ROW__ID.writeId AS w, ROW__ID.bucketId AS b, ROW__ID.rowId AS r "
                     "FROM acid_p WHERE day = DATE'2024-01-02' ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(5, 1, bucket_property(1), 0), (6, 1, bucket_property(2), 0)]


def test_snapshot_option(spark, partitioned):
    old = spark.read.format("acidorc").option("validWriteIds", "default.p:1:9223372036854775807::")
    assert old.load(str(partitioned)).count() == 6


def test_types_through_spark(spark, tmp_path):
    cols = [("b", "boolean"), ("ti", "tinyint"), ("dec", "decimal(10,2)"), ("da", "date"), ("ts", "timestamp"),
            ("c", "char(2)"), ("bin", "binary"), ("st", "struct<x:int,y:array<string>>"),
            ("m", "map<int,double>")]
    t = HiveTable(tmp_path / "types", cols)
    t.insert(1, {0: [(True, -5, Decimal("12.34"), dt.date(1999, 12, 31), dt.datetime(2020, 5, 6, 7, 8, 9, 10),
                      "x", b"\xff", (1, ["a", None]), {3: 0.5}), (None,) * len(cols)]})
    df = spark.read.format("acidorc").load(str(t.root))
    assert dict(df.dtypes) == {"b": "boolean", "ti": "tinyint", "dec": "decimal(10,2)", "da": "date",
                               "ts": "timestamp_ntz", "c": "string", "bin": "binary",
                               "st": "struct<x:int,y:array<string>>", "m": "map<int,double>"}
    full = [r for r in df.collect() if r.b is not None][0]
    assert full.ti == -5 and full.dec == Decimal("12.34") and full.da == dt.date(1999, 12, 31)
    assert full.ts == dt.datetime(2020, 5, 6, 7, 8, 9, 10) and full.c == "x " and full.bin == bytearray(b"\xff")
    assert full.st.x == 1 and full.st.y == ["a", None] and full.m == {3: 0.5}
    assert df.filter("b IS NULL").count() == 1


def test_user_schema_reads_an_empty_table(spark, tmp_path):
    (tmp_path / "empty").mkdir()
    df = spark.read.format("acidorc").schema("id int, name string").load(str(tmp_path / "empty"))
    assert df.collect() == []


def test_user_schema_selects_and_adds_columns(spark, tmp_path):
    t = HiveTable(tmp_path / "t", COLS)
    t.insert(1, {0: [(1, "a")]})
    df = spark.read.format("acidorc").schema("name string, id bigint, missing double").load(str(t.root))
    assert [tuple(r) for r in df.collect()] == [("a", 1, None)]


def test_errors_reach_the_user_with_their_message(spark, tmp_path):
    with pytest.raises(Exception, match="table path does not exist"):
        spark.read.format("acidorc").load(str(tmp_path / "nope")).collect()
    t = HiveTable(tmp_path / "t", COLS)
    t.insert(1, {0: [(1, "a")]})
    with pytest.raises(Exception, match="option 'validWriteIds'"):
        spark.read.format("acidorc").option("validWriteIds", "x:y").load(str(t.root)).collect()
    with pytest.raises(Exception, match="unknown option"):
        spark.read.format("acidorc").option("bogus", "1").load(str(t.root)).collect()


def test_timestamps_beyond_the_nanosecond_range(spark, tmp_path):
    utc = dt.timezone.utc
    # (.5 s: pyorc's writer goes through a float, which rounds .999999 near year 9999 up to 10000)
    extremes = [dt.datetime(1, 1, 2, tzinfo=utc), dt.datetime(9999, 12, 31, 23, 59, 59, 500000, tzinfo=utc)]
    t = HiveTable(tmp_path / "ts", [("id", "int"), ("ts", "timestamp")])
    t.insert(1, {0: [(i, v) for i, v in enumerate(extremes)]})
    rows = spark.read.format("acidorc").load(str(t.root)).orderBy("id").collect()
    assert [r.ts for r in rows] == [v.replace(tzinfo=None) for v in extremes]


def test_row_filter_option_drops_rows_in_the_reader(spark, partitioned):
    df = spark.read.format("acidorc").option("rowFilter", "id >= 3 AND name <> 'n6'").load(str(partitioned))
    assert sorted(r.id for r in df.collect()) == [3, 5]
    # NULL is not true: a row whose condition is NULL is dropped
    nulls = spark.read.format("acidorc").option("rowFilter", "name = NULL OR id = 1").load(str(partitioned))
    assert [r.id for r in nulls.collect()] == [1]
    with pytest.raises(Exception, match="rowFilter"):
        spark.read.format("acidorc").option("rowFilter", "nope = 1").load(str(partitioned)).collect()
    with pytest.raises(Exception, match="rowFilter"):
        spark.read.format("acidorc").option("rowFilter", "  ").load(str(partitioned)).collect()
    # a filter that fails on the data (a CAST of a malformed string) is the filter's error, in a task
    with pytest.raises(Exception, match=r"InvalidOptionError: option 'rowFilter': cannot be evaluated on the rows"):
        spark.read.format("acidorc").option("rowFilter", "CAST(name AS INT) = 1").load(str(partitioned)).collect()
