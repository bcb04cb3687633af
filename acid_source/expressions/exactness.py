"""Whether a condition compiled here gives exactly Spark SQL's answer on every row.

The compiler follows Spark SQL's semantics but documents where it differs (NaN ordering,
integer overflow, decimal precision beyond 38 digits, wall-clock timestamp literals, Unicode
case mapping). A reader that pre-filters rows for a Spark query must never drop a row Spark
would keep, so it may only use conditions built from parts whose results are identical:
comparisons, IN, BETWEEN, IS [NOT] NULL and boolean logic over plain columns of integer,
string, boolean, date or decimal type and literals.
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
    return (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_boolean(t) or pa.types.is_date(t) or pa.types.is_decimal(t))


def is_spark_exact(text: str, schema: pa.Schema) -> bool:
    """True when ``text`` only uses parts whose compiled results equal Spark SQL's, and names
    only top-level, unqualified columns of ``schema`` with exactly comparable types."""
    try:
        tree = parse_expression(text, "condition")
    except InvalidArgumentError:
        return False
    types = {f.name.lower(): f.type for f in schema}
    for node in tree.walk():
        if not isinstance(node, _EXACT_NODES):
            return False
        if isinstance(node, exp.Column):
            if node.table or node.name.lower() not in types or not _exact_type(types[node.name.lower()]):
                return False
        if isinstance(node, exp.Literal) and not node.is_string and "." in node.this:
            return False  # a decimal literal against an integer column widens through double in places
    return True
