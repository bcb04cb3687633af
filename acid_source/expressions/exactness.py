"""Which conditions a reader may use to pre-filter rows for Spark.

The compiler follows Spark SQL's semantics but documents where it differs (NaN ordering,
integer overflow, decimal precision beyond 38 digits, wall-clock timestamp literals, Unicode
case mapping). A reader that pre-filters rows for a Spark query must never drop a row Spark
would keep, so it may only use conditions built from parts whose results are identical:
comparisons, IN, BETWEEN, IS [NOT] NULL and boolean logic over plain columns of integer,
string, boolean, date or decimal type and literals (:func:`is_spark_exact`). Floating-point
columns differ only on NaN (Spark orders NaN above every number and equal to itself), so
:func:`reader_prefilter` lets rows with a NaN in such a column through for Spark to decide.
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


def _exact_type(t: pa.DataType, floats: bool = False) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_boolean(t) or pa.types.is_date(t) or pa.types.is_decimal(t)
            or (floats and pa.types.is_floating(t)))


def is_spark_exact(text: str, schema: pa.Schema) -> bool:
    """True when ``text`` only uses parts whose compiled results equal Spark SQL's, and names
    only top-level, unqualified columns of ``schema`` with exactly comparable types."""
    return _columns_if_simple(text, schema, floats=False) is not None


def reader_prefilter(text: str, schema: pa.Schema) -> str | None:
    """A condition for the reader that keeps every row ``text`` keeps in Spark SQL (and, apart
    from rows holding NaN, no other), or None when there is none."""
    columns = _columns_if_simple(text, schema, floats=True)
    if columns is None:
        return None
    floats = sorted({c for c in columns if pa.types.is_floating(schema.field(c).type)})
    if not floats:
        return text
    # x <> x holds exactly for NaN: such rows go to Spark, which orders NaN its own way
    escapes = " OR ".join(f"`{c}` <> `{c}`" for c in floats)
    return f"({text}) OR {escapes}"


def _columns_if_simple(text: str, schema: pa.Schema, *, floats: bool) -> list[str] | None:
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
            if node.table or name is None or not _exact_type(schema.field(name).type, floats):
                return None
            columns.append(name)
        if isinstance(node, exp.Literal) and not node.is_string and "." in node.this:
            return None  # a decimal literal against an integer column widens through double in places
    return columns
