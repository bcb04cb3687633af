"""Without Spark: decimal division, integer literals beside decimals and the storing of a SET
value in a decimal or integer column, as Spark 4 computes them. Spark divides decimals
exactly and rounds half up to its result type (DecimalPrecision's rules, an integer literal
being a decimal of just its digits), and its UPDATE stores a value as the column's type
(half up to the column's scale; out of range an error).

The answers written here are Spark 4.3's; the same cases run against a live Spark in
tests/spark/test_ansi_semantics.py.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from acid_source import create_table
from acid_source.errors import SchemaError
from acid_source.expressions import parse_value_expression
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int32()), ("d", pa.decimal128(20, 10)), ("c", pa.decimal128(12, 6)),
                    ("i", pa.int32()), ("x", pa.float64())])
ROWS = pa.table({"id": [0, 1, 2], "d": [Decimal("12345678.1234567891"), Decimal("-1.0000000005"), None],
                 "c": [Decimal("123456.123457"), Decimal("999999.999999"), None], "i": [3, -7, None],
                 "x": [1.5, -2.7, None]}, schema=SCHEMA)


def values(text: str, store_in: str | None = None) -> tuple[pa.DataType, list[str | None]]:
    parsed = parse_value_expression(text, SCHEMA, store_in=None if store_in is None else SCHEMA.field(store_in))
    column = ds.dataset(ROWS).to_table(columns={"v": parsed.expression}).column("v")
    return parsed.type, [None if v is None else str(v) for v in column.to_pylist()]


@pytest.mark.parametrize("text, precision, scale, expected", [
    ("d / 3", 22, 12, ["4115226.041152263033", "-0.333333333500"]),
    ("d / -3", 22, 12, ["-4115226.041152263033", "0.333333333500"]),
    ("d / 3S", 22, 12, ["4115226.041152263033", "-0.333333333500"]),
    ("d / 300L", 24, 14, ["41152.26041152263033", "-0.00333333333500"]),
    ("d / 3Y", 24, 14, ["4115226.04115226303333", "-0.33333333350000"]),        # tinyint: decimal(3,0)
    ("d / (1 + 2)", 31, 21, ["4115226.041152263033333333333", "-0.333333333500000000000"]),  # int: (10,0)
    ("d / CAST(3 AS INT)", 31, 21, ["4115226.041152263033333333333", "-0.333333333500000000000"]),
    ("d / 0.0003", 29, 15, ["41152260411.522630333333333", "-3333.333335000000000"]),
    ("c / 0.7", 15, 8, ["176365.89065286", "1428571.42857000"]),
    ("d * 3", 22, 10, ["37037034.3703703673", "-3.0000000015"]),
    ("d + 3L", 21, 10, ["12345681.1234567891", "1.9999999995"]),
    ("d % 3", 11, 10, ["0.1234567891", "-1.0000000005"]),
])
def test_decimal_results_have_sparks_type_and_digits(text, precision, scale, expected):
    data_type, got = values(text)
    assert data_type == pa.decimal128(precision, scale)
    assert got == [*expected, None]


def test_a_quotient_too_large_for_its_type_fails_only_where_spark_evaluates_it():
    with pytest.raises(pa.ArrowInvalid, match="NUMERIC_VALUE_OUT_OF_RANGE"):
        values("CAST(d AS DECIMAL(38,0)) * 100000000000000000000000000000 / 0.3")
    _, got = values("CASE WHEN d < 0 THEN CAST(d AS DECIMAL(38,0)) * 100000000000000000000000000000 / 0.3 END")
    assert got == [None, "-333333333333333333333333333333.333333", None]


@pytest.mark.parametrize("column, text, expected", [
    ("c", "c * 1.5", ["185184.185186", None, None]),           # 185184.1851855: half up to the scale
    ("c", "c / 3", ["41152.041152", "333333.333333", None]),
    ("c", "i / 3", ["1.000000", "-2.333333", None]),           # a double, rounded to the column
    ("i", "x", ["1", "-2", None]),                             # truncated, as CAST
    ("i", "i * 1.5", ["4", "-10", None]),
    ("d", "d / 3", ["4115226.0411522630", "-0.3333333335", None]),
])
def test_a_set_value_is_stored_as_spark_stores_it(column, text, expected):
    if expected[1] is None:  # the second row does not fit: only the others are compared
        text = f"CASE WHEN id = 1 THEN NULL ELSE {text} END"
    data_type, got = values(text, store_in=column)
    assert data_type == SCHEMA.field(column).type
    assert got == expected


def test_the_update_writes_sparks_value_and_an_overflow_writes_nothing(tmp_path):
    path = str(tmp_path / "t")
    create_table(path, SCHEMA)
    table = AcidTable.load(path)
    table.append(ROWS)
    with pytest.raises(SchemaError) as caught:
        table.update("id >= 0", {"c": "c * 1.5"})  # 999999.999999 * 1.5 does not fit decimal(12,6)
    assert str(caught.value) == ("set[c]: the value 1499999.9999985 does not fit column 'c' of type decimal(12,6) "
                                 "(computed by c * 1.5, of type decimal(15,7))")  # as the Spark path says it
    assert caught.value.column == "c"
    table.update("id >= 0", {"d": "d / 3", "c": "CASE WHEN id = 1 THEN c ELSE c * 1.5 END"})
    rows = table.toArrow().sort_by("id")
    assert [str(v) if v is not None else None for v in rows.column("d").to_pylist()] == [
        "4115226.0411522630", "-0.3333333335", None]
    assert [str(v) if v is not None else None for v in rows.column("c").to_pylist()] == [
        "185184.185186", "999999.999999", None]
