import datetime as dt

import pyarrow as pa
import pytest

from acid_source.errors import InvalidOptionError
from acid_source.filters import partition_matches
from acid_source.partition_filter import parse_partition_filter

FIELDS = [pa.field("day", pa.date32()), pa.field("region", pa.string()), pa.field("n", pa.int32())]


def matches(text, **values):
    return partition_matches([parse_partition_filter(text, FIELDS)], values)


def test_comparisons_on_typed_values():
    assert matches("day >= '2024-01-01'", day=dt.date(2024, 1, 2))
    assert not matches("day >= DATE'2024-01-03'", day=dt.date(2024, 1, 2))
    assert matches("5 > n", n=4) and not matches("5 > n", n=5)
    assert matches("n BETWEEN -1 AND 3", n=-1)


def test_boolean_structure_and_sql_nulls():
    assert matches("region IN ('eu', 'us') AND NOT n = 2", region="eu", n=3)
    assert matches("region = 'x' OR n <> 1", region="eu", n=2)
    assert not matches("region <> 'eu'", region=None)  # null comparison is not true
    assert matches("region IS NULL", region=None) and matches("region IS NOT NULL", region="a")


@pytest.mark.parametrize("text, fragment", [
    ("name = 'x'", "not a partition column"),
    ("day = other_col", "literal"),
    ("upper(region) = 'EU'", "comparison needs a partition column"),
    ("region LIKE 'e%'", "unsupported"),
    ("region = = 'x'", "cannot parse"),
    ("day = 'not a date'", "not a valid"),
])
def test_errors_name_the_option(text, fragment):
    with pytest.raises(InvalidOptionError, match=fragment) as info:
        parse_partition_filter(text, FIELDS)
    assert "partitionFilter" in str(info.value)


# --- issue 6: odd input gives typed errors, in bounded time ---------------------------------

@pytest.mark.parametrize("text, fragment", [
    ("region IN (SELECT 'a')", "subquer"),  # silently matched nothing
    ("region IN (SELECT region FROM t)", "subquer"),
    ("region = upper('x')", "literal"),
    ("day = current_date()", "literal"),
    ("region = 'x' AND name = 1", "not a partition column"),
])
def test_conditions_it_cannot_evaluate_are_refused(text, fragment):
    with pytest.raises(InvalidOptionError, match=fragment):
        parse_partition_filter(text, FIELDS)


def test_unterminated_string_says_where():
    with pytest.raises(InvalidOptionError, match="position 10") as info:
        parse_partition_filter("region = 'eu AND n = 1", FIELDS)
    assert "unterminated" in str(info.value)


def test_parse_errors_say_where_in_plain_text():
    with pytest.raises(InvalidOptionError, match="line 1, column 10") as info:
        parse_partition_filter("region = = 'x'", FIELDS)
    assert "\x1b" not in str(info.value)


def test_long_or_chains_work():
    text = " OR ".join(f"n = {i}" for i in range(1500))
    assert matches(text, n=1499) and not matches(text, n=1500)
    text = " AND ".join(f"n <> {i}" for i in range(1500))
    assert matches(text, n=1500) and not matches(text, n=7)


@pytest.mark.parametrize("text", [
    "(" * 3000 + "n = 1" + ")" * 3000,
    "NOT " * 3000 + "n = 1",
    "n = " + "- " * 3000 + "1",
    "n IN " + "(" * 100 + "1" + ")" * 100,
    " OR ".join(f"n = {i}" for i in range(100_000)),
])
def test_deep_or_huge_input_is_a_typed_error(text):
    with pytest.raises(InvalidOptionError):
        parse_partition_filter(text, FIELDS)


def test_decimal_literal_that_is_not_a_number():
    fields = [pa.field("d", pa.decimal128(10, 2))]
    with pytest.raises(InvalidOptionError, match="not a valid"):
        parse_partition_filter("d = 'abc'", fields)
