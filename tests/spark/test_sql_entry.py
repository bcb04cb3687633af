"""acid_source.sql: Spark SQL UPDATE / DELETE / MERGE on acidorc tables, everything else to
spark.sql.

Each DML runs on a table through SQL and on an identical twin through the AcidTable builder;
both must end with the same rows, and those rows must equal what plain Python computes from the
starting data (so neither path can be wrong the same way unnoticed).
"""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException, ParseException

from acid_source import create_table
from acid_source.errors import InvalidArgumentError, UnsupportedOperationError
from acid_source.spark.sql import sql
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int32()), ("p", pa.string())])
START = [(0, "v0", 0, "a"), (1, "v1", 1, "a"), (2, "v2", None, "a"), (3, "v3", 3, "a"),
         (4, "v4", 4, "b"), (5, "v5", None, "b"), (6, "v6", 6, "b")]
METRICS = {"operation", "writeId", "txnId", "numDeletedRows", "numUpdatedRows", "numInsertedRows",
           "numAffectedRows", "numFilesAdded", "numBytesAdded", "partitions"}


def new_table(tmp_path, name: str | None = None) -> str:
    path = str(tmp_path / uuid.uuid4().hex)
    create_table(path, SCHEMA, partitionColumns=["p"], name=name)
    AcidTable.load(path).append(pa.table({c: [r[i] for r in START] for i, c in enumerate(SCHEMA.names)},
                                         schema=SCHEMA))
    return path


def rows_at(path) -> list[tuple]:
    return sorted((r["id"], r["v"], r["n"], r["p"]) for r in AcidTable.load(path).toArrow().to_pylist())


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


# --- pass-through ------------------------------------------------------------------------------
def test_other_statements_go_to_spark_sql_unchanged(spark, tmp_path):
    assert [tuple(r) for r in sql(spark, "SELECT 1 AS x, 'a' AS y").collect()] == [(1, "a")]
    path = new_table(tmp_path)
    view = unique("v")
    result = sql(spark, f"CREATE TEMPORARY VIEW {view} USING acidorc OPTIONS (path '{path}')")
    assert result.collect() == []
    assert sorted(tuple(r) for r in sql(spark, f"SELECT * FROM {view}").collect()) == START
    # DML on a table that is not acidorc's: Spark's own answer, not ours
    other = unique("pq")
    sql(spark, f"CREATE TABLE {other} (id INT) USING parquet")
    try:
        with pytest.raises(AnalysisException, match="does not support DELETE"):
            sql(spark, f"DELETE FROM {other} WHERE id = 1")
        with pytest.raises(ParseException):  # a parse error there is Spark's too
            sql(spark, f"DELETE FROM {other} WHERE (")
    finally:
        spark.sql(f"DROP TABLE {other}")


# --- UPDATE / DELETE / MERGE through SQL and through the builder ---------------------------------
def test_update_by_registered_name_equals_the_builder(spark, tmp_path):
    name = f"default.{unique('t')}"
    by_sql, by_builder = new_table(tmp_path, name), new_table(tmp_path)
    m = sql(spark, f"UPDATE {name} SET n = coalesce(n, -1) * 10, p = 'c' WHERE {name.split('.')[1]}.id IN (2, 4)")
    assert METRICS <= set(m) and m["operation"] == "update" and m["numUpdatedRows"] == 2
    AcidTable.forPath(spark, by_builder).alias("t").update("t.id IN (2, 4)",
                                                             {"n": "coalesce(n, -1) * 10", "p": "'c'"})
    expected = sorted((i, v, (-10 if n is None else n * 10), "c") if i in (2, 4) else (i, v, n, p)
                      for i, v, n, p in START)
    assert rows_at(by_sql) == rows_at(by_builder) == expected
    # unqualified: found in Spark's current database, as Spark resolves names
    m = sql(spark, f"UPDATE {name.split('.')[1]} AS x SET x.v = upper(x.v) WHERE x.p = 'c'")
    assert m["numUpdatedRows"] == 2
    assert [r[1] for r in rows_at(by_sql) if r[3] == "c"] == ["V2", "V4"]


def test_delete_by_path_equals_the_builder(spark, tmp_path):
    by_sql, by_builder = new_table(tmp_path), new_table(tmp_path)
    m = sql(spark, f"DELETE FROM acidorc.`{by_sql}` WHERE n IS NULL OR id > 5")
    assert m["operation"] == "delete" and m["numDeletedRows"] == 3
    AcidTable.forPath(spark, by_builder).delete("n IS NULL OR id > 5")
    expected = [r for r in START if r[2] is not None and r[0] <= 5]
    assert rows_at(by_sql) == rows_at(by_builder) == expected


MERGE_SOURCE = [(1, "s1", 10, "a"), (2, "s2", 20, "b"), (7, "s7", 70, "b"), (8, "s8", 80, "a")]


def expected_merge() -> list[tuple]:
    """The MERGE below, computed by hand: matched id 1 updated, id 2 deleted (n is NULL), by
    source: id 3 and 4 (n > 2, unmatched) set n = 0, id 5 (n NULL) deleted, 0 and 6 kept;
    inserted: 7 and 8 with n from the source."""
    source = {r[0]: r for r in MERGE_SOURCE}
    out = []
    for i, v, n, p in START:
        if i in source:
            if n is None:
                continue
            out.append((i, source[i][1], n + source[i][2], p))
        elif n is None:
            continue
        elif n > 2 and i != 6:
            out.append((i, v, 0, p))
        else:
            out.append((i, v, n, p))
    out += [(7, "s7", 70, "b"), (8, "s8", 80, "a")]
    return sorted(out)


MERGE_SQL = """
MERGE INTO {target} USING {source} ON t.id = s.id
WHEN MATCHED AND t.n IS NULL THEN DELETE
WHEN MATCHED THEN UPDATE SET v = s.v, t.n = t.n + s.n
WHEN NOT MATCHED THEN INSERT *
WHEN NOT MATCHED BY SOURCE AND t.n > 2 AND t.id <> 6 THEN UPDATE SET n = 0
WHEN NOT MATCHED BY SOURCE AND t.n IS NULL THEN DELETE
"""


def run_builder_merge(spark, path, source_df):
    return (AcidTable.forPath(spark, path).alias("t").merge(source_df.alias("s"), "t.id = s.id")
            .whenMatchedDelete("t.n IS NULL")
            .whenMatchedUpdate(set={"v": "s.v", "n": "t.n + s.n"})
            .whenNotMatchedInsertAll()
            .whenNotMatchedBySourceUpdate("t.n > 2 AND t.id <> 6", {"n": "0"})
            .whenNotMatchedBySourceDelete("t.n IS NULL")
            .execute())


def test_merge_into_a_dataframe_temp_view_equals_the_builder(spark, tmp_path):
    by_sql, by_builder = new_table(tmp_path), new_table(tmp_path)
    target, source = unique("tgt"), unique("src")
    spark.read.format("acidorc").load(by_sql).createOrReplaceTempView(target)
    source_df = spark.createDataFrame(MERGE_SOURCE, "id bigint, v string, n int, p string")
    source_df.createOrReplaceTempView(source)
    m = sql(spark, MERGE_SQL.format(target=f"{target} AS t", source=f"{source} AS s"))
    assert m["operation"] == "merge"
    assert (m["numUpdatedRows"], m["numDeletedRows"], m["numInsertedRows"]) == (3, 2, 2)
    run_builder_merge(spark, by_builder, source_df)
    assert rows_at(by_sql) == rows_at(by_builder) == expected_merge()


def test_merge_with_a_subquery_source_into_a_sql_temp_view(spark, tmp_path):
    path = new_table(tmp_path)
    view = unique("tv")
    spark.sql(f"CREATE TEMPORARY VIEW {view} USING acidorc OPTIONS (path '{path}')")
    values = ", ".join(f"({i}, '{v}', {n}, '{p}')" for i, v, n, p in MERGE_SOURCE)
    source = f"(SELECT * FROM VALUES {values} AS x(id, v, n, p) WHERE x.id > 0) AS s"
    sql(spark, MERGE_SQL.format(target=f"{view} t", source=source))
    assert rows_at(path) == expected_merge()


def test_merge_source_by_path_and_by_registered_name(spark, tmp_path):
    """Spark can read neither acidorc.`path` nor the store's names in SQL; the source still
    works, and the temporary views that make it work are gone afterwards."""
    target = new_table(tmp_path)
    staging_name = f"default.{unique('staging')}"
    staging = str(tmp_path / "staging")
    create_table(staging, SCHEMA, partitionColumns=["p"], name=staging_name)
    AcidTable.load(staging).append(pa.table({c: [r[i] for r in MERGE_SOURCE] for i, c in enumerate(SCHEMA.names)},
                                            schema=SCHEMA))
    sql(spark, MERGE_SQL.format(target=f"acidorc.`{target}` AS t", source=f"acidorc.`{staging}` AS s"))
    assert rows_at(target) == expected_merge()
    again = new_table(tmp_path)
    sql(spark, MERGE_SQL.format(target=f"acidorc.`{again}` t",
                                source=f"(SELECT * FROM {staging_name} WHERE id > 0) s"))
    assert rows_at(again) == expected_merge()
    assert not [t.name for t in spark.catalog.listTables() if t.name.startswith("__acidorc_sql_source_")]


# --- refusals ------------------------------------------------------------------------------------
def test_views_that_are_more_than_a_plain_read_are_refused(spark, tmp_path):
    path = new_table(tmp_path)
    filtered, pinned = unique("filtered"), unique("pinned")
    spark.read.format("acidorc").load(path).where("p = 'a'").createOrReplaceTempView(filtered)
    spark.read.format("acidorc").option("versionAsOf", 1).load(path).createOrReplaceTempView(pinned)
    with pytest.raises(UnsupportedOperationError, match=r"DELETE needs the table itself") as info:
        sql(spark, f"DELETE FROM {filtered} WHERE id = 1")
    assert filtered in str(info.value) and "Filter" in str(info.value)
    with pytest.raises(UnsupportedOperationError, match="versionAsOf"):
        sql(spark, f"UPDATE {pinned} SET n = 0")
    with pytest.raises(UnsupportedOperationError, match="latest snapshot"):
        sql(spark, f"UPDATE acidorc.`{path}` VERSION AS OF 1 SET n = 0")
    assert rows_at(path) == START


def test_parse_errors_on_an_acidorc_target_are_ours_and_plain_text(spark, tmp_path):
    path = new_table(tmp_path)
    statement = f"UPDATE acidorc.`{path}`\nSET n = n +* 1"
    with pytest.raises(InvalidArgumentError) as info:
        sql(spark, statement)
    message = str(info.value)
    assert "\x1b" not in message and "line 2, column 14" in message
    assert message.endswith("\n  SET n = n +* 1\n               ^")
    with pytest.raises(InvalidArgumentError, match="WHEN MATCHED clauses can only UPDATE or DELETE"):
        sql(spark, f"MERGE INTO acidorc.`{path}` t USING (SELECT 1 AS id) s ON t.id = s.id "
                   "WHEN MATCHED THEN INSERT *")
    assert rows_at(path) == START
