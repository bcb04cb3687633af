"""Without Spark: NaN in pushed-down filters and ORC statistics, and non-deterministic
functions refused in every condition and value of the engine-free path.

The comparisons themselves are checked against Spark in tests/spark/test_nan_semantics.py;
the truth values written here are Spark 4.3's answers for the same cases (NaN above every
other value and equal to itself, -0.0 = 0.0).
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from core_read import read_rows

from acid_source import create_table
from acid_source.errors import InvalidArgumentError, InvalidOptionError
from acid_source.expressions import parse_condition, parse_value_expression
from acid_source.filters import Predicate, evaluate, partition_matches, stripe_may_match
from acid_source.table import AcidTable

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize("op, value, partition, spark", [
    ("gt", 100.0, NAN, True), ("ge", 100.0, NAN, True), ("lt", 100.0, NAN, False), ("le", INF, NAN, False),
    ("gt", NAN, INF, False), ("lt", NAN, INF, True), ("le", NAN, NAN, True), ("gt", NAN, NAN, False),
    ("eq", NAN, NAN, True), ("eq", 0.0, -0.0, True), ("lt", 0.0, -0.0, False), ("eq_null_safe", NAN, NAN, True),
    ("eq_null_safe", NAN, 1.0, False), ("eq_null_safe", NAN, None, False), ("gt", 100.0, None, None),
])
def test_pushed_filters_order_nan_as_spark(op, value, partition, spark):
    """Spark does not filter the rows of a partition its pushed filter kept: pruning must
    give Spark's answer, NaN included."""
    assert evaluate(Predicate(op, ("p",), value), {"p": partition}) is spark
    assert partition_matches([Predicate(op, ("p",), value)], {"p": partition}) is (spark is True)


def test_pushed_in_lists_with_nan_and_zero():
    assert evaluate(Predicate("in", ("p",), (1.0, NAN)), {"p": NAN}) is True
    assert evaluate(Predicate("in", ("p",), (-0.0,)), {"p": 0.0}) is True
    assert evaluate(Predicate("in", ("p",), (1.0, None)), {"p": NAN}) is None
    assert evaluate(Predicate("not", ("p",), Predicate("in", ("p",), (NAN,))), {"p": NAN}) is False


@pytest.mark.parametrize("stats", [
    {"has_null": False, "number_of_values": 3, "minimum": 1.0, "maximum": 50.0},  # a writer that ignores NaN
    {"has_null": False, "number_of_values": 3, "minimum": NAN, "maximum": NAN},  # ORC C++ with a NaN
])
def test_float_statistics_never_skip_a_stripe(stats):
    """min / max of a double column say nothing about NaN, which matches d > 100 in Spark."""
    for pred in (Predicate("gt", ("d",), 100.0), Predicate("eq", ("d",), NAN), Predicate("ge", ("d",), INF),
                 Predicate("in", ("d",), (NAN, 1000.0))):
        assert stripe_may_match(pred, stats)


def test_a_nan_value_never_skips_by_integer_statistics():
    stats = {"has_null": False, "number_of_values": 3, "minimum": 1, "maximum": 50}
    assert stripe_may_match(Predicate("eq", ("i",), NAN), stats)
    assert not stripe_may_match(Predicate("gt", ("i",), 100), stats)  # still skips what it can prove


SCHEMA = pa.schema([("id", pa.int32()), ("d", pa.float64()), ("s", pa.string()), ("a", pa.list_(pa.int32()))])
NON_DETERMINISTIC = [  # (a value calling it, the function as written); Spark 4.3's non-deterministic functions
    ("rand()", "rand"), ("RANDOM(7)", "random"), ("randn()", "randn"), ("uuid()", "uuid"),
    ("shuffle(a)", "shuffle"), ("randstr(3)", "randstr"), ("uniform(0, 10)", "uniform"),
    ("monotonically_increasing_id()", "monotonically_increasing_id"),
    ("spark_partition_id()", "spark_partition_id"), ("input_file_name()", "input_file_name"),
    ("input_file_block_start()", "input_file_block_start"), ("input_file_block_length()", "input_file_block_length"),
    ("reflect('java.util.UUID', 'randomUUID')", "reflect"),
    ("java_method('java.util.UUID', 'randomUUID')", "java_method"),
    ("try_reflect('java.util.UUID', 'randomUUID')", "try_reflect"),
    ("abs(`rand`(3))", "rand"),
]


def _refused(call, argument: str, function: str, error=InvalidArgumentError):
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert f"'{argument}'" in message and f"non-deterministic function {function}() is not allowed" in message
    return message


@pytest.mark.parametrize("value, function", NON_DETERMINISTIC)
def test_non_deterministic_functions_are_refused_in_conditions_and_values(value, function):
    condition = f"id > 1 AND CAST({value} AS STRING) IS NOT NULL"
    message = _refused(lambda: parse_condition(condition, SCHEMA, argument="condition"), "condition", function)
    where = condition.index(value) + (value.index("`") if value.startswith("abs") else 0)
    assert message.endswith(f"at line 1, column {where + 1}")
    _refused(lambda: parse_value_expression(value, SCHEMA, argument="set"), "set", function)


def test_non_deterministic_conditions_are_refused_by_every_engine_free_entry(tmp_path):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int32()), ("d", pa.float64()), ("p", pa.string())]),
                 partitionColumns=["p"])
    table = AcidTable.load(path)
    table.append(pa.table({"id": pa.array([1, 2], pa.int32()), "d": [NAN, 1.0], "p": ["a", "b"]}))
    version = table.version
    _refused(lambda: table.scan(rowFilter="rand() < 0.5").toArrow(), "rowFilter", "rand")
    _refused(lambda: read_rows(path, partitionFilter="p = uuid()"), "partitionFilter", "uuid", InvalidOptionError)
    _refused(lambda: table.compact("major", partitionFilter="p = uuid()"), "partitionFilter", "uuid",
             (InvalidArgumentError, InvalidOptionError))
    for call in (lambda: table.delete("d > 0 OR rand() < 0.5"),
                 lambda: table.update("randn() > 0", {"d": "0"}),
                 lambda: table.update("d > 0", {"d": "rand()"})):
        with pytest.raises(InvalidArgumentError, match=r"non-deterministic function rand[n]?\(\) is not allowed"):
            call()
    assert AcidTable.load(path).version == version  # nothing was committed


def test_a_float_column_cast_to_string_is_refused():
    """Spark writes 100.0, 1.0E20, NaN, Infinity where Arrow writes 100, 1e+20, nan, inf: a
    condition such as CAST(d AS STRING) = 'NaN' would silently differ, so it is refused."""
    with pytest.raises(InvalidArgumentError, match=r"'condition': cannot cast double to string: Spark writes"):
        parse_condition("CAST(d AS STRING) = 'NaN'", SCHEMA, argument="condition")


def test_non_finite_values_cast_to_decimal_are_null():
    """Spark (ANSI mode too) casts NaN and +-inf to a decimal as NULL; a finite value out of
    range stays an error."""
    table = pa.table({"d": pa.array([NAN, INF, -INF, 1.5, None], pa.float64())})
    expression = parse_value_expression("CAST(d AS DECIMAL(5, 1))", table.schema).expression
    got = ds.dataset(table).to_table(columns={"v": expression}).column("v").to_pylist()
    assert [None if v is None else str(v) for v in got] == [None, None, None, "1.5", None]
    assert parse_condition("CAST(double('NaN') AS DECIMAL(5, 1)) IS NULL", table.schema).expression.equals(
        parse_condition("true", table.schema).expression)
    with pytest.raises(InvalidArgumentError, match="out of range"):
        parse_condition("CAST(1e20 AS DECIMAL(5, 1)) IS NULL", table.schema)
