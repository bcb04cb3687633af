"""partitionFilter (the read option, the argument of compaction): a condition whose conjuncts
read partition columns only, compiled by the expressions compiler (as rowFilter is) and evaluated
on each partition's values by the planner's partition check. The core names it as an argument;
a Spark read reports it as the option (tests/spark/test_options.py)."""

import datetime as dt

import pyarrow as pa
import pytest

from acid_source.errors import InvalidArgumentError
from acid_source.expressions import parse_partition_filter
from acid_source.expressions.parsing import MAX_NESTING
from acid_source.scan.planner import partition_may_match

FIELDS = [pa.field("day", pa.date32()), pa.field("region", pa.string()), pa.field("n", pa.int32())]
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string()), *FIELDS])
PARTITIONS = [f.name for f in FIELDS]


def parse(text, schema=SCHEMA, partitions=PARTITIONS):
    return parse_partition_filter(text, schema, partitions)


def matches(text, **values):
    condition = parse(text).expression
    return partition_may_match(condition, FIELDS, tuple(values.get(f.name) for f in FIELDS), "partitionFilter")


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


def test_the_rowfilter_grammar_applies_to_partition_columns():
    """One grammar (issue 14): what rowFilter accepts on partition columns, partitionFilter does."""
    assert matches("upper(region) = 'EU'", region="eu") and not matches("upper(region) = 'EU'", region="us")
    assert matches("region LIKE 'e%'", region="eu") and not matches("region LIKE 'e%'", region="us")
    assert matches("region = lower('EU')", region="eu")
    assert matches("CAST(n AS STRING) = '7'", n=7) and not matches("CAST(n AS STRING) = '7'", n=8)
    assert matches("n + 1 = 3", n=2)


@pytest.mark.parametrize("text, fragment", [
    ("name = 'x'", "'name' is not a partition column (partition columns: day, region, n)"),
    ("day = other_col", "unknown column 'other_col'"),
    ("region = = 'x'", "cannot parse"),
    ("day = 'not a date'", "'not a date' is not a date"),
    ("n + 1", "a condition must be true or false"),
])
def test_errors_name_the_argument(text, fragment):
    with pytest.raises(InvalidArgumentError) as info:
        parse(text)
    assert fragment in str(info.value) and info.value.argument == "partitionFilter"


def test_an_unpartitioned_table_has_no_partition_columns():
    with pytest.raises(InvalidArgumentError, match="none: the table is not partitioned"):
        parse("name = 'x'", partitions=[])


# --- issue 6: odd input gives typed errors, in bounded time ---------------------------------

@pytest.mark.parametrize("text, fragment", [
    ("region IN (SELECT 'a')", "subquer"),  # silently matched nothing
    ("region IN (SELECT region FROM t)", "subquer"),
    ("day = current_date()", "not supported"),
    ("region = 'x' AND name = 'a'", "not a partition column"),
])
def test_conditions_it_cannot_evaluate_are_refused(text, fragment):
    with pytest.raises(InvalidArgumentError, match=fragment):
        parse(text)


def test_unterminated_string_says_where():
    with pytest.raises(InvalidArgumentError, match="line 1, column 10") as info:
        parse("region = 'eu AND n = 1")
    assert "unterminated" in str(info.value)


def test_parse_errors_say_where_in_plain_text():
    with pytest.raises(InvalidArgumentError, match="line 1, column 10") as info:
        parse("region = = 'x'")
    assert "\x1b" not in str(info.value)


def test_long_or_chains_work():
    text = " OR ".join(f"n = {i}" for i in range(1500))
    assert matches(text, n=1499) and not matches(text, n=1500)
    text = " AND ".join(f"n <> {i}" for i in range(1500))
    assert matches(text, n=1500) and not matches(text, n=7)


def test_long_chains_of_unary_minus_work():
    assert matches("n = " + "- " * 3000 + "1", n=1) and not matches("n = " + "- " * 3001 + "1", n=1)


@pytest.mark.parametrize("text, fragment", [
    ("(" * 3000 + "n = 1" + ")" * 3000, f"nested more than {MAX_NESTING} levels deep (at line 1, column 201)"),
    ("NOT " * 3000 + "n = 1", "nested too deeply"),
    ("n IN " + "(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1), f"nested more than {MAX_NESTING}"),
    (" OR ".join(f"n = {i}" for i in range(100_000)), "at most 100000 are accepted"),
])
def test_deep_or_huge_input_is_a_typed_error(text, fragment):
    with pytest.raises(InvalidArgumentError) as info:
        parse(text)
    assert fragment in str(info.value)


def test_decimal_literal_that_is_not_a_number():
    schema = pa.schema([pa.field("d", pa.decimal128(10, 2))])
    with pytest.raises(InvalidArgumentError, match="'abc' is not a number"):
        parse("d = 'abc'", schema, ["d"])


def test_a_condition_that_fails_on_a_partition_value_is_an_error_not_a_match():
    """Nothing filters the rows again after partitionFilter: an evaluation error cannot keep
    the partition silently."""
    schema = pa.schema([pa.field("s", pa.string())])
    condition = parse_partition_filter("CAST(s AS INT) = 1", schema, ["s"]).expression
    assert partition_may_match(condition, list(schema), ("1",), "partitionFilter")
    with pytest.raises(InvalidArgumentError, match="partitionFilter.*s='x'"):
        partition_may_match(condition, list(schema), ("x",), "partitionFilter")
