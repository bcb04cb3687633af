"""UPDATE / DELETE / MERGE through Spark fail with the typed errors of the engine-free path
(issue 18), and a failed statement leaves the table exactly as it was: same rows, same files,
no new version in the history.

* a value that cannot be stored in its column is a SchemaError naming the column and the value,
  whether Spark's analysis (a DATE into an int), its constant folding or a task (an ANSI cast)
  finds it;
* SQL text obeys the one bound of ``acid_source.expressions.parsing`` (200 levels), and a
  Column nested too deeply for Spark's analysis is a typed error, never a StackOverflowError;
* a non-deterministic condition or value is refused, naming the argument and the function, in
  the engine-free path's words (a value is also the key routing its change row to a write task,
  which a re-run map task would compute differently).

One table for the module: every statement here fails, so it never changes."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from acid_source import create_table
from acid_source.errors import AcidError, InvalidArgumentError, SchemaError
from acid_source.spark.dml_inputs import to_column
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int32()), ("k", pa.int32()), ("amt", pa.decimal128(10, 2)), ("s", pa.string()),
                    ("day", pa.date32())])
DATA = pa.table({"id": pa.array([1, 2], pa.int32()), "k": pa.array([10, 20], pa.int32()),
                 "amt": pa.array([1, 2], pa.decimal128(10, 2)), "s": ["a", "b"],
                 "day": pa.array([0, 1], pa.date32())}, schema=SCHEMA)


def snapshot(path: str) -> tuple:
    """What must not change: every file under the table, its rows, its history."""
    files = sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)
    table = AcidTable.load(path)
    rows = sorted(table.toArrow().to_pylist(), key=lambda r: r["id"])
    return files, rows, [h["version"] for h in table.history()]


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("typed") / "t")
    create_table(path, SCHEMA)
    AcidTable.load(path).append(DATA)
    return path, snapshot(path)


def fails(table, spark, statement, error, *words):
    """Run ``statement(AcidTable.forPath(...))``: it raises ``error`` (never a Py4J or pyspark
    error), whose message holds ``words``, and the table is unchanged."""
    path, before = table
    with pytest.raises(AcidError) as info:
        statement(AcidTable.forPath(spark, path))
    assert type(info.value) is error, repr(info.value)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert snapshot(path) == before
    return info.value


def source(spark):
    return spark.createDataFrame([(1, "x", 7), (3, "y", 8)], "id int, txt string, n int").alias("s")


# --- values that cannot be stored in their column ---------------------------------------------
@pytest.mark.parametrize("column, value, shown", [
    ("id", "'abc'", "'abc'"),                          # CAST_INVALID_INPUT, folded on the driver
    ("amt", "123456789012.5", "123456789012.5"),       # NUMERIC_VALUE_OUT_OF_RANGE
    ("k", "3000000000", "3000000000"),                 # CAST_OVERFLOW
    ("k", "DATE'2020-01-01'", "DATE'2020-01-01'"),     # never storable: found by analysis
    ("day", "5", "5"),
    ("k", lambda: F.col("s"), "'a'"),                  # a Column, failing in a task on row id = 1
])
def test_update_value_that_does_not_fit_names_column_and_value(spark, table, column, value, shown):
    value = value() if callable(value) else value
    error = fails(table, spark, lambda t: t.update("id = 1", {column: value}), SchemaError,
                  f"set[{column}]", f"column {column!r}", shown)
    assert error.column == column


def test_a_value_failing_on_its_own_names_its_argument(spark, table):
    """Not a store error: the value's own ANSI cast fails, a bad argument as on the engine-free path."""
    fails(table, spark, lambda t: t.update("id = 1", {"k": "CAST('abc' AS INT)"}), InvalidArgumentError,
          "'set[k]'", "'abc'", "CAST_INVALID_INPUT")


def test_merge_values_that_do_not_fit_name_clause_column_and_value(spark, table):
    for clauses, argument, shown in [
        (lambda m: m.whenNotMatchedInsert(values={"id": "s.id", "k": "3000000000"}), "clause 1 (values)[k]",
         "3000000000"),
        (lambda m: m.whenMatchedDelete("s.n = 0").whenMatchedUpdate(set={"day": "s.n"}), "clause 2 (set)[day]",
         "s.n"),
    ]:
        error = fails(table, spark, lambda t: clauses(t.alias("t").merge(source(spark), "t.id = s.id")).execute(),
                      SchemaError, argument, shown)
        assert error.column == argument.rsplit("[", 1)[1].rstrip("]")


def test_insert_all_of_a_source_column_of_a_type_the_column_cannot_hold(spark, table):
    rows = spark.createDataFrame([(5, 1, 1.0, "q", 7)], "id int, k int, amt double, s string, day int").alias("s")
    error = fails(table, spark, lambda t: t.alias("t").merge(rows, "t.id = s.id").whenNotMatchedInsertAll().execute(),
                  SchemaError, "clause 1 (values)[day]", "of type int", "column 'day' of type date")
    assert error.column == "day"


# --- the one bound on nesting --------------------------------------------------------------------
def test_text_nested_deeper_than_the_bound_is_refused_before_spark_parses_it(spark, table):
    deep = "(" * 3000 + "id = 5" + ")" * 3000
    fails(table, spark, lambda t: t.delete(deep), InvalidArgumentError, "'condition'", "200 levels")
    fails(table, spark, lambda t: t.update("id = 1", {"k": "(" * 201 + "1" + ")" * 201}), InvalidArgumentError,
          "'set[k]'", "200 levels")
    fails(table, spark, lambda t: t.alias("t").merge(source(spark), deep), InvalidArgumentError, "'condition'",
          "200 levels")
    long = " OR ".join(["id = 5"] * 11_000)
    fails(table, spark, lambda t: t.delete(long), InvalidArgumentError, "'condition'", "at most 100000")
    assert to_column("(" * 200 + "id = 5" + ")" * 200, "condition") is not None  # the bound itself: Spark parses it


def test_a_column_too_deep_for_sparks_analysis_is_a_typed_error(spark, table):
    deep = F.col("id")
    for _ in range(500):
        deep = deep + 1
    # the one bound (200 levels), whatever the JVM's stack would take (a warm JVM analyzes 500)
    fails(table, spark, lambda t: t.delete(deep > 5), InvalidArgumentError, "'condition'",
          "nested more than 200 levels deep")
    fails(table, spark, lambda t: t.update("id = 1", {"k": deep}), InvalidArgumentError, "'set[k]'",
          "nested more than 200 levels deep")
    shallow = F.col("id")
    for _ in range(150):
        shallow = shallow + 1
    assert to_column(shallow > 5, "condition") is not None


# --- non-deterministic conditions ----------------------------------------------------------------
def test_non_deterministic_conditions_are_refused_naming_the_function(spark, table):
    fails(table, spark, lambda t: t.delete("rand() < 0.5"), InvalidArgumentError, "'condition'",
          "non-deterministic function rand() is not allowed")
    fails(table, spark, lambda t: t.update(F.randn() > 0, {"k": "1"}), InvalidArgumentError, "'condition'",
          "non-deterministic function randn() is not allowed")
    fails(table, spark, lambda t: t.alias("t").merge(source(spark), "t.id = s.id AND rand() < 2")
          .whenMatchedDelete().execute(), InvalidArgumentError, "'condition'",
          "non-deterministic function rand() is not allowed")
    fails(table, spark, lambda t: t.alias("t").merge(source(spark), "t.id = s.id")
          .whenMatchedUpdate(set={"k": "1"}).whenNotMatchedInsert("uuid() > 'a'", {"id": "s.id"}).execute(),
          InvalidArgumentError, "'clause 2 condition'", "non-deterministic function uuid() is not allowed")
    fails(table, spark, lambda t: t.delete("shuffle(array(1, 2))[0] = id"), InvalidArgumentError, "'condition'",
          "non-deterministic function shuffle() is not allowed")


def test_non_deterministic_values_are_refused_naming_the_function(spark, table):
    fails(table, spark, lambda t: t.update("id = 1", {"s": "uuid()"}), InvalidArgumentError, "'set[s]'",
          "non-deterministic function uuid() is not allowed")
    fails(table, spark, lambda t: t.alias("t").merge(source(spark), "t.id = s.id")
          .whenNotMatchedInsert(values={"id": "s.id", "k": F.spark_partition_id()}).execute(), InvalidArgumentError,
          "'clause 1 (values)[k]'", "non-deterministic function spark_partition_id() is not allowed")
