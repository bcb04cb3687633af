"""Which conditions a reader may use to pre-filter rows for Spark.

The compiler follows Spark SQL's semantics but documents where it differs (integer overflow,
decimal precision beyond 38 digits, wall-clock timestamp literals, Unicode case mapping). A
reader that pre-filters rows for a Spark query must never drop a row Spark would keep, so it
may only use conditions built from parts whose results are identical: comparisons, IN,
BETWEEN, IS [NOT] NULL and boolean logic over plain columns of integer, floating-point,
string, boolean, date or decimal type and literals (:func:`is_spark_exact`). Comparisons of
floating-point values order NaN as Spark does (above every number, equal to itself;
tests/spark/test_nan_semantics.py checks them against Spark).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ..errors import InvalidArgumentError
from .parsing import parse_expression

_EXACT_NODES = (
    exp.Column, exp.Identifier, exp.Literal, exp.Boolean, exp.Null, exp.Paren, exp.Tuple,
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ,
    exp.And, exp.Or, exp.Not, exp.In, exp.Between, exp.Is, exp.Neg,
)


def _exact_type(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_boolean(t) or pa.types.is_date(t)
            or pa.types.is_decimal(t))


def is_spark_exact(text: str, schema: pa.Schema) -> bool:
    """True when ``text`` only uses parts whose compiled results equal Spark SQL's, and names
    only top-level, unqualified columns of ``schema`` with exactly comparable types."""
    return _columns_if_simple(text, schema) is not None


def reader_prefilter(text: str, schema: pa.Schema) -> str | None:
    """A condition for the reader that keeps exactly the rows ``text`` keeps in Spark SQL, or
    None when there is none."""
    return text if is_spark_exact(text, schema) else None


def _columns_if_simple(text: str, schema: pa.Schema) -> list[str] | None:
    try:
        tree = parse_expression(text, "condition")
    except InvalidArgumentError:
        return None
    names = {f.name.lower(): f.name for f in schema}
    columns = []
    for node in tree.walk():
        if not isinstance(node, _EXACT_NODES):
            return None
        if isinstance(node, exp.Column):
            name = names.get(node.name.lower())
            if node.table or name is None or not _exact_type(schema.field(name).type):
                return None
            columns.append(name)
        if isinstance(node, exp.Literal) and not node.is_string and "." in node.this:
            return None  # a decimal literal against an integer column widens through double in places
    return columns
