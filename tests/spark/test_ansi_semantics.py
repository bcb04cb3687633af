"""Arithmetic and casts in Spark 4's ANSI mode (its default), on the engine-free path: values
compared with Spark's own answers, and the failures Spark raises (division by zero, overflow,
invalid casts) raised as typed errors naming the argument, with nothing written.

Every expected value comes from Spark: one SELECT over a temp view of the same rows computes
the whole value corpus; each failing expression is run alone and must fail in Spark (its
error class is checked) and in acidorc (an InvalidArgumentError naming the argument). Guards
(CASE, IF, AND, OR, COALESCE) keep a division by zero Spark never reaches from failing.
"""

from __future__ import annotations

import decimal
import math

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from spark_answers import rows_view, same_value, selected

from acid_source import create_table
from acid_source.errors import InvalidArgumentError
from acid_source.expressions import parse_value_expression
from acid_source.table import AcidTable

pytestmark = pytest.mark.spark

INT_MIN, INT_MAX, LONG_MIN, LONG_MAX = -(1 << 31), (1 << 31) - 1, -(1 << 63), (1 << 63) - 1
SCHEMA = pa.schema([("id", pa.int32()), ("a", pa.int32()), ("z", pa.int32()), ("b", pa.int64()), ("t", pa.int8()),
                    ("d", pa.float64()), ("m", pa.decimal128(10, 2)), ("s", pa.string())])
ROWS = pa.table({
    "id": [0, 1, 2, 3, 4],
    "a": [7, -7, None, 10, INT_MIN],
    "z": [0, 3, 0, -3, 2],
    "b": [LONG_MAX, LONG_MIN, None, 5, -1],
    "t": [127, -128, None, 5, 1],
    "d": [math.nan, -0.0, None, 1e20, 1e-5],
    "m": [decimal.Decimal("1.10"), decimal.Decimal("-7.50"), None, decimal.Decimal("0.00"), decimal.Decimal("3.00")],
    "s": ["+inf", "1.1d", None, "-1.5E2D", " 1.5f "],
}, schema=SCHEMA)

VALUES = [
    # guards: Spark never evaluates the division (or the overflowing operation) of these rows
    "CASE WHEN z <> 0 THEN a / z END", "IF(z <> 0, a div z, NULL)", "z <> 0 AND a % z = 1", "z = 0 OR a / z > 1",
    "COALESCE(z, a / z)", "CASE WHEN z = 0 THEN -1 WHEN a / z > 1 THEN 1 ELSE 0 END", "CAST(NULL AS INT) / z",
    "a / CAST(NULL AS INT)", "CASE WHEN a BETWEEN -100 AND 100 THEN a * 100000000 ELSE 0 END",
    "IF(b > 0 AND b < 1000, b * b, 0)", "CASE WHEN t BETWEEN -50 AND 50 THEN t + t ELSE t END",
    "IF(d < 1e10, CAST(d AS INT), -1)",
    # arithmetic that stays in range
    "a % 3", "a div 2", "a / 2", "b % -1", "a % -1", "a div -1", "d % 2", "d / 4", "m % 0.7", "m * 3", "t + 0",
    "b div 3", "-z + 1", "z * -1 + 0", "z * z",
    # decimals beyond 38 digits: Spark's precision 38 with the scale it keeps
    "CAST(1.5 AS DECIMAL(38,1)) * CAST(2.25 AS DECIMAL(20,2))", "CAST(m AS DECIMAL(38,2)) + CAST(1 AS DECIMAL(38,37))",
    "CAST(m AS DECIMAL(38,10)) * CAST(3.333 AS DECIMAL(20,5))", "CAST(m AS DECIMAL(38,0)) - CAST(b AS DECIMAL(38,0))",
    "CAST(9999999999999999999 AS DECIMAL(19,0)) * CAST(9999999999999999999 AS DECIMAL(20,0))",
    # strings read as doubles: Java's grammar plus Spark's inf / nan words
    "CAST(s AS DOUBLE)", "CAST('+inf' AS DOUBLE)", "CAST('1.1d' AS DOUBLE)", "CAST('1.1f' AS DOUBLE)",
    "CAST('0x1p3' AS DOUBLE)", "CAST('0x1.8p1' AS DOUBLE)", "CAST('0X1P-2d' AS DOUBLE)", "CAST('+NaN' AS DOUBLE)",
    "CAST('1e400' AS DOUBLE)", "CAST('-Infinity' AS DOUBLE)", "CAST(' 1.5 ' AS DOUBLE)", "CAST('INF' AS DOUBLE)",
    "CAST('1.' AS DOUBLE)", "CAST('1.1d' AS FLOAT)", "CAST('+inf' AS FLOAT)", "d = '1.1d'", "d < '0x1p3'",
    # doubles written as Java writes them
    "CAST(1e20 AS STRING)", "CAST(12345678.9D AS STRING)", "CAST(1e-5 AS STRING)", "CAST(0.001D AS STRING)",
    "CAST(-0.0D AS STRING)", "CAST(100.0D AS STRING)", "CAST(1e7 AS STRING)", "CAST(9999999.0D AS STRING)",
    "CAST(1234567.0D AS STRING)", "CAST(CAST(0.1 AS FLOAT) AS STRING)", "CAST(CAST(1e10 AS FLOAT) AS STRING)",
    "CAST(1e-300 AS STRING)", "CAST(CAST('NaN' AS DOUBLE) AS STRING)", "concat('x', CAST(1.5e300 AS STRING))",
    "CAST(-123.25D AS STRING)",
]

ERRORS = [  # (expression, Spark's error class); every one fails on some row
    ("a / z", "DIVIDE_BY_ZERO"), ("a div z", "DIVIDE_BY_ZERO"), ("a % z", "REMAINDER_BY_ZERO"),
    ("mod(a, z)", "REMAINDER_BY_ZERO"), ("d / 0", "DIVIDE_BY_ZERO"), ("d % 0", "REMAINDER_BY_ZERO"),
    ("m / 0", "DIVIDE_BY_ZERO"), ("1 / 0", "DIVIDE_BY_ZERO"), ("z <> 1 AND a / z > 1", "DIVIDE_BY_ZERO"),
    ("a + 2147483647", "ARITHMETIC_OVERFLOW"), ("b + 1", "ARITHMETIC_OVERFLOW"), ("b - 1", "ARITHMETIC_OVERFLOW"),
    ("b * 2", "ARITHMETIC_OVERFLOW"), ("a * 2", "ARITHMETIC_OVERFLOW"), ("-b", "ARITHMETIC_OVERFLOW"),
    ("-a", "ARITHMETIC_OVERFLOW"), ("-CAST(-2147483648 AS INT) + a", "ARITHMETIC_OVERFLOW"),
    ("abs(a)", "ARITHMETIC_OVERFLOW"), ("t * t", "BINARY_ARITHMETIC_OVERFLOW"),
    ("t + t", "BINARY_ARITHMETIC_OVERFLOW"), ("b div -1", "ARITHMETIC_OVERFLOW"), ("CAST(d AS INT)", "CAST_OVERFLOW"),
    ("CAST(b AS INT)", "CAST_OVERFLOW"), ("CAST(s AS INT)", "CAST_INVALID_INPUT"),
    ("CAST(99999999999999999999999999999999999999 AS DECIMAL(38,0)) + a", "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"),
    ("CAST(b AS DECIMAL(20,0)) * CAST(1e20 AS DECIMAL(38,0))", "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"),
]
_ARITHMETIC = ("DIVIDE_BY_ZERO", "REMAINDER_BY_ZERO", "ARITHMETIC_OVERFLOW", "CAST_OVERFLOW",
               "NUMERIC_VALUE_OUT_OF_RANGE")


@pytest.fixture(scope="module")
def spark_view(spark):
    yield from rows_view(spark, ROWS, "ansi_rows")


def test_values_are_spark_values(spark, spark_view):
    columns = ", ".join(f"({v}) AS c{k}" for k, v in enumerate(VALUES))
    got = selected(spark, spark_view, columns)
    wrong = []
    for k, text in enumerate(VALUES):
        value = parse_value_expression(text, SCHEMA, argument="x")
        ours = ds.dataset(ROWS).to_table(columns={"v": value.expression}).column("v").to_pylist()
        spark_values = [r[f"c{k}"] for r in got]
        if not all(same_value(o, s) for o, s in zip(ours, spark_values)):
            wrong.append((text, ours, spark_values))
    assert not wrong, f"{len(wrong)} of {len(VALUES)} differ from Spark (ours, Spark): {wrong}"


def test_failures_are_spark_failures_and_typed(spark, spark_view, tmp_path):
    path = str(tmp_path / "t")
    create_table(path, SCHEMA)
    table = AcidTable.load(path)
    table.append(ROWS)
    before = table.toArrow().sort_by("id")
    updated = set()  # an UPDATE (a write task each) per error class
    for text, error_class in ERRORS:
        with pytest.raises(Exception) as spark_error:
            spark.sql(f"SELECT {text} AS v FROM {spark_view}").collect()
        assert getattr(spark_error.value, "getCondition", lambda: None)() == error_class, (text, spark_error.value)
        calls = [(lambda: table.delete(f"({text}) IS NOT NULL"), "condition"),
                 (lambda: table.scan(rowFilter=f"({text}) IS NULL").toArrow(), "rowFilter")]
        if error_class not in updated:
            updated.add(error_class)
            calls.append((lambda: table.update("id >= 0", {"s": text}), "set[s]"))
        for call, argument in calls:
            with pytest.raises(InvalidArgumentError) as ours:
                call()
            assert ours.value.argument == argument, (text, ours.value)
            if error_class.split(".")[0].endswith(_ARITHMETIC):
                assert error_class.split(".")[0].removeprefix("BINARY_") in str(ours.value), (text, ours.value)
    assert repr(table.toArrow().sort_by("id").to_pylist()) == repr(before.to_pylist())  # nothing was written
