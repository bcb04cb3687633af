"""Without Spark: Spark 4's ANSI-mode failures (division by zero, integer overflow, a cast out
of range) on the engine-free DELETE, UPDATE and rowFilter scan are typed errors naming the
argument, and nothing is written; the rows Spark never evaluates (a guarded division) do not
fail. The strings Spark reads as doubles, and the doubles as Spark writes them.

The answers written here are Spark 4.3's (``spark.sql.ansi.enabled`` true, its default); the
same cases run against a live Spark in tests/spark/test_ansi_semantics.py.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from acid_source import create_table
from acid_source.errors import InvalidArgumentError
from acid_source.expressions import parse_value_expression
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int32()), ("a", pa.int32()), ("z", pa.int32()), ("b", pa.int64()),
                    ("d", pa.float64())])
ROWS = pa.table({"id": [0, 1, 2], "a": [7, -7, None], "z": [0, 3, 0], "b": [(1 << 63) - 1, 5, None],
                 "d": [math.nan, 1.5, None]}, schema=SCHEMA)


def _new_table(path) -> AcidTable:
    create_table(str(path), SCHEMA)
    t = AcidTable.load(str(path))
    t.append(ROWS)
    return t


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """One table for the tests that must leave it unchanged."""
    return _new_table(tmp_path_factory.mktemp("ansi") / "t")


def _ids(table) -> list[int]:
    return sorted(table.toArrow().column("id").to_pylist())


@pytest.mark.parametrize("condition, error_class", [
    ("a / z > 1", "DIVIDE_BY_ZERO"), ("a div z = 1", "DIVIDE_BY_ZERO"), ("a % z = 1", "REMAINDER_BY_ZERO"),
    ("d / 0 > 1", "DIVIDE_BY_ZERO"), ("b + 1 > 0", "ARITHMETIC_OVERFLOW"), ("b * 2 > 0", "ARITHMETIC_OVERFLOW"),
    ("a * 1000000000 > 0", "ARITHMETIC_OVERFLOW"), ("CAST(d AS INT) = 1", "CAST_OVERFLOW"),
    ("CAST(b AS INT) = 1", "CAST_OVERFLOW"), ("id = 5 OR 1 / 0 = 1", "DIVIDE_BY_ZERO"),
    ("-CAST(-2147483648 AS INT) > a", "ARITHMETIC_OVERFLOW"),
])
def test_a_failing_condition_is_a_typed_error_and_deletes_nothing(table, condition, error_class):
    with pytest.raises(InvalidArgumentError, match=error_class) as info:
        table.delete(condition)
    assert info.value.argument == "condition"
    assert _ids(table) == [0, 1, 2]
    with pytest.raises(InvalidArgumentError, match=error_class) as info:
        table.scan(rowFilter=condition).toArrow()
    assert info.value.argument == "rowFilter"


def test_a_failing_value_is_a_typed_error_naming_its_column(table):
    with pytest.raises(InvalidArgumentError, match="DIVIDE_BY_ZERO") as info:
        table.update("id >= 0", {"d": "d + 1", "a": "a div z"})
    assert info.value.argument == "set[a]"
    with pytest.raises(InvalidArgumentError, match="CAST_INVALID_INPUT|cannot cast") as info:
        table.update("id >= 0", {"a": "CAST('NaN' AS INT)"})
    assert info.value.argument == "set[a]"
    assert table.toArrow().sort_by("id").column("a").to_pylist() == [7, -7, None]


def test_divisions_spark_never_evaluates_do_not_fail(tmp_path):
    table = _new_table(tmp_path / "t")
    table.delete("z <> 0 AND a / z < 0")  # -7 / 3
    assert _ids(table) == [0, 2]
    table.update("CASE WHEN z = 0 THEN true ELSE a % z = 0 END", {"a": "IF(z = 0, 0, a div z)"})
    assert table.toArrow().sort_by("id").column("a").to_pylist() == [0, 0]
    assert table.scan(rowFilter="NULL / z IS NULL AND coalesce(z, 1 / 0) = 0").toArrow().num_rows == 2


@pytest.mark.parametrize("text, spark", [
    ("CAST('+inf' AS DOUBLE)", math.inf), ("CAST('1.1d' AS DOUBLE)", 1.1), ("CAST('1.1f' AS DOUBLE)", 1.1),
    ("CAST('0x1p3' AS DOUBLE)", 8.0), ("CAST('0X1P-2d' AS DOUBLE)", 0.25), ("CAST(' 1.5 ' AS DOUBLE)", 1.5),
    ("CAST('1e400' AS DOUBLE)", math.inf), ("CAST('INF' AS DOUBLE)", math.inf), ("CAST('1.' AS DOUBLE)", 1.0),
    ("CAST(1e20 AS STRING)", "1.0E20"), ("CAST(12345678.9D AS STRING)", "1.23456789E7"),
    ("CAST(1e-5 AS STRING)", "1.0E-5"), ("CAST(0.001D AS STRING)", "0.001"), ("CAST(100.0D AS STRING)", "100.0"),
    ("CAST(-0.0D AS STRING)", "-0.0"), ("CAST(1e7 AS STRING)", "1.0E7"), ("CAST(1234567.0D AS STRING)", "1234567.0"),
    ("CAST(CAST(0.1 AS FLOAT) AS STRING)", "0.1"), ("CAST(CAST(1e10 AS FLOAT) AS STRING)", "1.0E10"),
])
def test_doubles_read_and_written_as_spark(text, spark):
    one = pa.table({"x": pa.array([0], pa.int8())})
    assert ds.dataset(one).to_table(columns={"v": parse_value_expression(text, one.schema).expression}).column(
        "v").to_pylist() == [spark]


@pytest.mark.parametrize("text", ["CAST('+nan' AS DOUBLE)", "CAST('0x10' AS DOUBLE)", "CAST('1_000' AS DOUBLE)",
                                  "CAST('1.5e' AS DOUBLE)"])
def test_strings_spark_refuses_as_doubles(text):
    with pytest.raises(InvalidArgumentError, match="cannot cast"):
        parse_value_expression(text, SCHEMA, argument="x")


# Spark 4.3's answers (ANSI mode) to CAST(<string column> AS INT / BIGINT / DECIMAL(5,1))
STRING_CASTS = [
    ("1.5", None, None, "1.5"), (" 12 ", "12", "12", "12.0"), ("+3", "3", "3", "3.0"), ("1e3", None, None, "1000.0"),
    ("", None, None, None), ("12.", None, None, "12.0"), (".5", None, None, "0.5"), ("-", None, None, None),
    ("0x1", None, None, None), ("1_000", None, None, None), ("\t7\n", "7", "7", "7.0"), ("-0", "0", "0", "0.0"),
    ("2147483648", None, "2147483648", "out of range"), ("+.5", None, None, "0.5"), ("5.a", None, None, None),
    ("--1", None, None, None),
]


@pytest.mark.parametrize("text, as_int, as_bigint, as_decimal", STRING_CASTS)
def test_strings_cast_to_numbers_as_spark_reads_them(text, as_int, as_bigint, as_decimal):
    schema = pa.schema([("s", pa.string())])
    rows = pa.table({"s": [text]}, schema=schema)
    for target, expected in (("INT", as_int), ("BIGINT", as_bigint), ("DECIMAL(5,1)", as_decimal)):
        value = parse_value_expression(f"CAST(s AS {target})", schema)
        if expected is None or expected == "out of range":
            error = "NUMERIC_VALUE_OUT_OF_RANGE" if expected else "CAST_INVALID_INPUT"
            with pytest.raises(pa.ArrowInvalid, match=error):
                ds.dataset(rows).to_table(columns={"v": value.expression})
        else:
            assert str(ds.dataset(rows).to_table(columns={"v": value.expression})["v"][0].as_py()) == expected


def test_a_string_cast_fails_only_on_the_rows_spark_evaluates(tmp_path):
    schema = pa.schema([("s", pa.string())])
    rows = pa.table({"s": ["123", "abc", None]}, schema=schema)
    for target in ("INT", "BIGINT", "DECIMAL(5,1)"):
        value = parse_value_expression(f"CASE WHEN s = '123' THEN CAST(s AS {target}) END", schema)
        got = ds.dataset(rows).to_table(columns={"v": value.expression})["v"].to_pylist()
        assert [None if v is None else int(v) for v in got] == [123, None, None]
