"""Which conditions a reader may pre-filter with for Spark: only those whose pyarrow result is
exactly Spark SQL's (a dropped row Spark would keep is a silently wrong DELETE)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from acid_source.expressions.exactness import is_spark_exact

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string()), ("d", pa.date32()),
                    ("ts", pa.timestamp("us")), ("m", pa.decimal128(10, 2)), ("st", pa.struct([("a", pa.int32())]))])


@pytest.mark.parametrize("text", [
    "id < 5", "s = 'a' AND id IN (1, 2)", "id BETWEEN 1 AND 2 OR s IS NULL", "NOT (id = -1)",
    "d = '2024-01-01'", "m >= 10", "id <=> 3", "s IS NOT NULL",
    "x > 1", "x = 'NaN'", "x IN (0, -1e0)",  # NaN ordered and -0.0 = 0.0 as in Spark
])
def test_exact(text):
    assert is_spark_exact(text, SCHEMA)


@pytest.mark.parametrize("text", [
    "ts < '2024-01-01'",     # wall-clock literal vs the session time zone
    "id % 3 = 0",            # arithmetic may overflow differently
    "lower(s) = 'a'",        # Unicode case mapping
    "t.id = 1",              # a qualified name the reader cannot resolve
    "st.a = 1",              # a struct field
    "id < 1.5",              # a decimal literal against an integer
    "nope = 1",              # not a column
    "id = = 1",              # does not parse
])
def test_not_exact(text):
    assert not is_spark_exact(text, SCHEMA)


def test_reader_prefilter_keeps_nan_rows_spark_keeps():
    """Spark orders NaN above every number (NaN > 5 is true there, false in IEEE): the reader's
    filter keeps a NaN row for x > 5, as Spark would."""
    from acid_source.expressions import parse_condition
    from acid_source.expressions.exactness import reader_prefilter

    text = reader_prefilter("x > 5 AND id < 10", SCHEMA)
    assert text is not None
    batch = pa.record_batch({"id": [1, 2, 3, 20], "x": [float("nan"), 6.0, 1.0, float("nan")]})
    kept = batch.filter(parse_condition(text, batch.schema).expression)
    assert kept.column("id").to_pylist() == [1, 2]  # 1: NaN > 5 in Spark; 20: id < 10 fails
    assert reader_prefilter("id < 5", SCHEMA) == "id < 5"
    assert reader_prefilter("lower(s) = 'a'", SCHEMA) is None
