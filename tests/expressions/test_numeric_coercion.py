"""An integer or decimal compared with a float or double is compared as doubles, as Spark 4
does (ANSI type coercion): a bigint beyond 2**53 or a long decimal rounds on the way, so a
whole-number double literal is not the integer it looks like. Expected rows are what Spark 4.3
returned for the same rows and conditions (``spark.sql("SELECT b FROM t WHERE ...")``); before
the fix the compiler turned the literal into an integer and kept fewer rows than Spark deletes."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from acid_source.expressions import parse_condition

SCHEMA = pa.schema([("b", pa.int64()), ("i", pa.int32()), ("d", pa.decimal128(38, 18))])
ROWS = pa.table({
    "b": pa.array([9007199254740992, 9007199254740993, 9007199254740994], pa.int64()),
    "i": pa.array([16777216, 16777217, 16777218], pa.int32()),
    "d": pa.array([decimal.Decimal("1.5"), decimal.Decimal("1.500000000000000001"), decimal.Decimal(2)],
                  pa.decimal128(38, 18)),
}, schema=SCHEMA)
B0, B1, B2 = 9007199254740992, 9007199254740993, 9007199254740994

# condition -> the rows' b that Spark 4.3 keeps
SPARK = {
    "b = 9007199254740993E0": [B0, B1],
    "b = 9007199254740993D": [B0, B1],
    "b <= 9007199254740992D": [B0, B1],
    "b IN (9007199254740993D)": [B0, B1],
    "b BETWEEN 9007199254740993D AND 9007199254740993D": [B0, B1],
    "b <=> 9007199254740993D": [B0, B1],
    "b = 9007199254740993F": [B0, B1],
    "i = 16777217F": [B0],
    "i = 16777217D": [B1],
    "i > 16777216F": [B1, B2],
    "d = 1.5D": [B0, B1],
    "d = 1.5": [B0],
    "d > 1.5D": [B2],
    "d IN (1.5D, 2.0D)": [B0, B1, B2],
    "b = 9007199254740993": [B1],
}


@pytest.mark.parametrize("condition", list(SPARK))
def test_integers_and_decimals_meet_doubles_as_spark_compares_them(condition):
    compiled = parse_condition(condition, SCHEMA)
    assert ROWS.filter(compiled.expression)["b"].to_pylist() == SPARK[condition]
