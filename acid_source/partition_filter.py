"""The ``partitionFilter`` read option: a SQL condition on partition columns, parsed with
sqlglot into predicates that prune partition directories at planning time.

Unlike filters Spark pushes down, it is part of the read's options, so it prunes the same way
for every query on the DataFrame (see README, "Partition pruning").

Whatever the text, parsing ends in a predicate or an :class:`InvalidOptionError` that says
where the problem is, with bounded work: texts longer than MAX_FILTER_CHARS or nested deeper
than MAX_NESTING parentheses are refused before sqlglot sees them (its parser recurses per
level), and long AND / OR chains are flattened without recursion.
"""

from __future__ import annotations

import re
from typing import NoReturn

import pyarrow as pa
import sqlglot
from sqlglot import exp

from .errors import InvalidOptionError, SchemaError
from .filters import Predicate
from .layout.table_dirs import convert_partition_value

OPTION = "partitionFilter"
MAX_FILTER_CHARS = 100_000
MAX_NESTING = 32  # parentheses
MAX_DEPTH = 100  # levels of AND / OR / NOT in the converted predicate

_COMPARISONS = {exp.EQ: "eq", exp.NullSafeEQ: "eq_null_safe", exp.GT: "gt", exp.GTE: "ge",
                exp.LT: "lt", exp.LTE: "le"}
_FLIPPED = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge", "eq": "eq", "eq_null_safe": "eq_null_safe"}
_SUPPORTED = ("use =, <=>, <>, <, <=, >, >=, IN, BETWEEN, IS [NOT] NULL, AND, OR, NOT on partition columns "
              "and literal values")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LEXEMES = re.compile(r"['\"`()]|--|/\*")
_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


def parse_partition_filter(text: str, partition_fields: list[pa.Field]) -> Predicate:
    types = {f.name.lower(): f.type for f in partition_fields}
    if len(text) > MAX_FILTER_CHARS:
        raise InvalidOptionError(OPTION, f"the condition is {len(text)} characters long; at most "
                                         f"{MAX_FILTER_CHARS} are accepted")
    unterminated = _check_nesting(text)
    try:
        tree = sqlglot.parse_one(text, read="spark")
        if tree.find(exp.Subquery, exp.Select, exp.Exists) is not None:
            _fail(text, "subqueries are not supported")
        return _convert(tree, types, text, 0)
    except sqlglot.errors.TokenError as exc:
        start = getattr(exc, "start", None)
        where = unterminated or "it does not split into SQL tokens" + (
            f" (near position {start + 1})" if start is not None else "")
        raise InvalidOptionError(OPTION, f"cannot parse {_shown(text)}: {where}") from None
    except sqlglot.errors.ParseError as exc:
        raise InvalidOptionError(OPTION, f"cannot parse {_shown(text)}: {_parse_error(exc)}") from None
    except sqlglot.errors.SqlglotError as exc:
        raise InvalidOptionError(OPTION, f"cannot parse {_shown(text)}: {_ANSI.sub('', str(exc))[:200]}") from None
    except RecursionError:
        raise InvalidOptionError(OPTION, f"{_shown(text)} is nested too deeply to parse") from None


def _check_nesting(text: str) -> str | None:
    """Refuse parentheses nested deeper than MAX_NESTING (string literals, quoted names and
    comments do not count). Returns where an unterminated literal starts, for the message
    should the tokenizer fail."""
    depth, pos = 0, 0
    while True:
        m = _LEXEMES.search(text, pos)
        if m is None:
            return None
        lexeme, start = m.group(), m.start()
        if lexeme == "(":
            depth += 1
            if depth > MAX_NESTING:
                raise InvalidOptionError(OPTION, f"parentheses nested more than {MAX_NESTING} deep at position "
                                                 f"{start + 1} of {_shown(text)}")
            pos = start + 1
        elif lexeme == ")":
            depth = max(0, depth - 1)
            pos = start + 1
        elif lexeme == "--":
            end = text.find("\n", start)
            if end < 0:
                return None
            pos = end + 1
        elif lexeme == "/*":
            end = text.find("*/", start + 2)
            if end < 0:
                return f"unterminated comment starting at position {start + 1}"
            pos = end + 2
        else:
            end = _closing_quote(text, start)
            if end < 0:
                what = "quoted name" if lexeme == "`" else "string literal"
                return f"unterminated {what} starting at position {start + 1}"
            pos = end + 1


def _closing_quote(text: str, start: int) -> int:
    """Index of the quote closing the literal opened at ``start`` (-1 if none); backslash
    escapes in strings, doubled quotes anywhere."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and quote != "`":
            i += 2
        elif ch == quote:
            if text[i + 1:i + 2] == quote:
                i += 2
            else:
                return i
        else:
            i += 1
    return -1


def _parse_error(exc: sqlglot.errors.ParseError) -> str:
    if not exc.errors:
        return _ANSI.sub("", str(exc))[:200]
    first = exc.errors[0]
    near = f" (near {first['highlight']!r})" if first.get("highlight") else ""
    description = _MISSING.sub(r"incomplete \2 (no \1)", str(first.get("description")))
    return f"{description} at line {first.get('line')}, column {first.get('col')}{near}"


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 200 else repr(text[:200]) + f" (... {len(text)} characters)"


def _fail(text: str, why: str) -> NoReturn:
    raise InvalidOptionError(OPTION, f"{why} in {_shown(text)}")


def _sql(node) -> str:
    sql = node.sql()
    return sql if len(sql) <= 80 else sql[:80] + "..."


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
        _fail(text, f"only literal values are supported, not {_sql(node)!r}")
    try:
        return convert_partition_value(raw, types[column])
    except SchemaError as exc:
        _fail(text, str(exc))
    except (ArithmeticError, ValueError):  # e.g. decimal.InvalidOperation
        _fail(text, f"{raw[:40]!r} is not a valid {types[column]}")


def _unwrap(node):
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _operands(node, cls) -> list:
    """The operands of a chain of one operator (``a OR b OR c``), left to right, without
    recursion: sqlglot builds 1,500 ORs as a tree 1,500 deep."""
    operands, stack = [], [node]
    while stack:
        current = _unwrap(stack.pop())
        if isinstance(current, cls):
            stack.append(current.expression)
            stack.append(current.this)
        else:
            operands.append(current)
    return operands


def _convert(node, types, text, depth: int) -> Predicate:
    if depth > MAX_DEPTH:
        _fail(text, f"conditions nested more than {MAX_DEPTH} levels deep")
    node = _unwrap(node)
    if isinstance(node, (exp.And, exp.Or)):
        op = "and" if isinstance(node, exp.And) else "or"
        return Predicate(op, (), tuple(_convert(n, types, text, depth + 1) for n in _operands(node, type(node))))
    if isinstance(node, exp.Not):
        return Predicate("not", (), _convert(node.this, types, text, depth + 1))
    if isinstance(node, exp.NEQ):
        equal = exp.EQ(this=node.this, expression=node.expression)
        return Predicate("not", (), _convert(equal, types, text, depth + 1))
    for cls, op in _COMPARISONS.items():
        if isinstance(node, cls):
            left, right = node.this, node.expression
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                left, right, op = right, left, _FLIPPED[op]
            if not isinstance(left, exp.Column):
                _fail(text, f"a comparison needs a partition column on one side: {_sql(node)!r}")
            col = _column(left, types, text)
            return Predicate(op, (col,), _value(right, col, types, text))
    if isinstance(node, exp.In) and isinstance(node.this, exp.Column):
        extra = [k for k, v in node.args.items() if v and k not in ("this", "expressions")]
        if extra:
            _fail(text, f"only IN (<literal values>) is supported, not {_sql(node)!r}")
        if not node.expressions:
            _fail(text, f"an empty IN list: {_sql(node)!r}")
        col = _column(node.this, types, text)
        return Predicate("in", (col,), tuple(_value(v, col, types, text) for v in node.expressions))
    if isinstance(node, exp.Between) and isinstance(node.this, exp.Column):
        col = _column(node.this, types, text)
        return Predicate("and", (), (Predicate("ge", (col,), _value(node.args["low"], col, types, text)),
                                     Predicate("le", (col,), _value(node.args["high"], col, types, text))))
    if isinstance(node, exp.Is) and isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Null):
        return Predicate("is_null", (_column(node.this, types, text),))
    _fail(text, f"unsupported condition {_sql(node)!r} ({_SUPPORTED})")
