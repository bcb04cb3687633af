"""Decimals on the engine-free path against a live Spark: the result type (``typeof``) and the
digits of decimal arithmetic (division included: exact, rounded half up to Spark's result
type; integer literals as decimals of just their digits), and an UPDATE's stored values
(half up to the column's scale; out of range an error), written once by the engine-free
``AcidTable.update`` and once by Spark's own UPDATE through acidorc, then compared.

The engine-free half with Spark's answers written down: tests/expressions/test_decimal_arithmetic.py.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from spark_answers import rows_view, selected

from acid_source import AcidTable, create_table
from acid_source.errors import AcidError
from acid_source.expressions import parse_value_expression

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int32()), ("d", pa.decimal128(20, 10)), ("c", pa.decimal128(12, 6)),
                    ("w", pa.decimal128(38, 18)), ("i", pa.int32()), ("b", pa.int64()), ("x", pa.float64())])
ROWS = pa.table({
    "id": [0, 1, 2, 3],
    "d": [Decimal("12345678.1234567891"), Decimal("-1.0000000005"), None, Decimal("0.0000000001")],
    "c": [Decimal("123456.123457"), Decimal("-0.000001"), None, Decimal("999999.999999")],
    "w": [Decimal("12345678901234567890.123456789012345678"), Decimal("-0.000000000000000001"), None,
          Decimal("1")],
    "i": [3, -7, None, 1], "b": [10**12, -1, None, 7], "x": [1.5, -2.7, None, 0.25],
}, schema=SCHEMA)

DECIMALS = [
    "d / 3", "d / -3", "d / 3S", "d / 300L", "d / 3Y", "d / (1 + 2)", "d / CAST(3 AS INT)", "d / i", "d / b",
    "c / d", "d / c", "c / 0.7", "d / 0.0003", "i / c", "w / 7", "w / c", "c / w", "w / 0.5", "1 / c",
    "d * 3", "d * -3", "d + 3L", "d - 300", "d % 3", "c * 1.5", "c * c", "w * 2", "w + c", "c % 0.7",
    "CASE WHEN c <> 0 THEN d / c END", "CAST(d AS DECIMAL(10,2))", "CAST(c AS DECIMAL(8,1))", "CAST(i AS DECIMAL(3,1))",
]
STORED = [  # (column, SET value): what an UPDATE writes
    ("d", "d / 3"), ("c", "c * 1.5"), ("c", "c / 7"), ("c", "i / 3"), ("i", "x"), ("i", "i * 1.5"),
    ("d", "c / 3"), ("w", "w / 3"), ("c", "d"), ("b", "d * 1000"),
]


@pytest.fixture(scope="module")
def spark_view(spark):
    yield from rows_view(spark, ROWS, "decimal_rows")


def _text(value) -> str | None:
    """The value (the scale is the type's, compared apart: pyspark hands some small decimals
    over with another exponent, 3.30E-13 for 3.3E-13 of a decimal(24,14))."""
    if isinstance(value, Decimal):
        return str(value.normalize())
    return None if value is None else str(value)


def test_decimal_types_and_digits_are_sparks(spark, spark_view):
    columns = ", ".join(f"typeof({v}) AS t{k}, ({v}) AS c{k}" for k, v in enumerate(DECIMALS))
    got = selected(spark, spark_view, columns)
    wrong = []
    for k, text in enumerate(DECIMALS):
        parsed = parse_value_expression(text, SCHEMA, argument="x")
        ours = [_text(v) for v in ds.dataset(ROWS).to_table(columns={"v": parsed.expression}).column("v").to_pylist()]
        spark_type = got[0][f"t{k}"]
        spark_values = [_text(r[f"c{k}"]) for r in got]
        our_type = f"decimal({parsed.type.precision},{parsed.type.scale})" if pa.types.is_decimal(parsed.type) \
            else str(parsed.type)
        if (our_type, ours) != (spark_type, spark_values):
            wrong.append((text, our_type, ours, spark_type, spark_values))
    assert not wrong, f"{len(wrong)} of {len(DECIMALS)} differ from Spark (ours, Spark): {wrong}"


def test_an_update_stores_what_sparks_update_stores(spark, tmp_path):
    wrong = []
    for k, (column, value) in enumerate(STORED):
        tables = []
        for engine in ("arrow", "spark"):
            path = str(tmp_path / f"{engine}{k}")
            create_table(path, SCHEMA)
            AcidTable.load(path).append(ROWS)
            tables.append(path)
        outcomes = []
        for path, run in ((tables[0], lambda p: AcidTable.load(p).update("id >= 0", {column: value})),
                          (tables[1], lambda p: AcidTable.forPath(spark, p).update("id >= 0", {column: value}))):
            try:
                run(path)
                outcome = [_text(v) for v in AcidTable.load(path).toArrow().sort_by("id").column(column).to_pylist()]
            except AcidError as exc:  # the same typed error, word for word
                outcome = [type(exc).__name__, str(exc)]
            outcomes.append(outcome)
        if outcomes[0] != outcomes[1]:
            wrong.append((column, value, *outcomes))
    assert not wrong, f"engine-free and Spark UPDATEs differ (column, value, engine-free, Spark): {wrong}"
