"""The ``partitionFilter`` read option: a SQL condition on partition columns, parsed with
sqlglot into predicates that prune partition directories at planning time.

Unlike filters Spark pushes down, it is part of the read's options, so it prunes the same way
for every query on the DataFrame (see README, "Partition pruning").
"""

from __future__ import annotations

import pyarrow as pa
import sqlglot
from sqlglot import exp

from .errors import InvalidOptionError, SchemaError
from .filters import Predicate
from .scan.discovery import convert_partition_value

OPTION = "partitionFilter"

_COMPARISONS = {exp.EQ: "eq", exp.NullSafeEQ: "eq_null_safe", exp.GT: "gt", exp.GTE: "ge",
                exp.LT: "lt", exp.LTE: "le"}
_FLIPPED = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge", "eq": "eq", "eq_null_safe": "eq_null_safe"}


def parse_partition_filter(text: str, partition_fields: list[pa.Field]) -> Predicate:
    types = {f.name.lower(): f.type for f in partition_fields}
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.ParseError as exc:
        raise InvalidOptionError(OPTION, f"cannot parse {text!r}: {exc}") from None
    return _convert(tree, types, text)


def _fail(text: str, why: str):
    raise InvalidOptionError(OPTION, f"{why} in {text!r}")


def _column(node, types, text) -> str:
    name = node.name.lower()
    if name not in types:
        known = ", ".join(types) or "none: the table is not partitioned"
        _fail(text, f"{node.name!r} is not a partition column (partition columns: {known})")
    return name


def _value(node, column, types, text):
    if isinstance(node, exp.Cast):  # DATE '2024-01-01', CAST('1' AS INT)
        node = node.this
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        raw = "true" if node.this else "false"
    elif isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        raw = "-" + node.this.this
    elif isinstance(node, exp.Literal):
        raw = node.this
    else:
        _fail(text, f"only literal values are supported, not {node.sql()!r}")
    try:
        return convert_partition_value(raw, types[column])
    except SchemaError as exc:
        _fail(text, str(exc))


def _convert(node, types, text) -> Predicate:
    if isinstance(node, exp.Paren):
        return _convert(node.this, types, text)
    if isinstance(node, (exp.And, exp.Or)):
        op = "and" if isinstance(node, exp.And) else "or"
        return Predicate(op, (), (_convert(node.this, types, text), _convert(node.expression, types, text)))
    if isinstance(node, exp.Not):
        return Predicate("not", (), _convert(node.this, types, text))
    if isinstance(node, exp.NEQ):
        return Predicate("not", (), _convert(exp.EQ(this=node.this, expression=node.expression), types, text))
    for cls, op in _COMPARISONS.items():
        if isinstance(node, cls):
            left, right = node.this, node.expression
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                left, right, op = right, left, _FLIPPED[op]
            if not isinstance(left, exp.Column):
                _fail(text, f"a comparison needs a partition column on one side: {node.sql()!r}")
            col = _column(left, types, text)
            return Predicate(op, (col,), _value(right, col, types, text))
    if isinstance(node, exp.In) and isinstance(node.this, exp.Column):
        col = _column(node.this, types, text)
        return Predicate("in", (col,), tuple(_value(v, col, types, text) for v in node.expressions))
    if isinstance(node, exp.Between) and isinstance(node.this, exp.Column):
        col = _column(node.this, types, text)
        return Predicate("and", (), (Predicate("ge", (col,), _value(node.args["low"], col, types, text)),
                                     Predicate("le", (col,), _value(node.args["high"], col, types, text))))
    if isinstance(node, exp.Is) and isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Null):
        return Predicate("is_null", (_column(node.this, types, text),))
    _fail(text, f"unsupported condition {node.sql()!r} (use =, <>, <, <=, >, >=, IN, BETWEEN, IS [NOT] NULL, "
                "AND, OR, NOT on partition columns)")
