"""The entry points: a SQL condition (``rowFilter``, ``partitionFilter``, DML ``WHERE`` /
``ON``) or a SQL value (``SET col = ...``) as a pyarrow compute expression over a table's
schema. Every one parses with the same grammar and bounds (:mod:`.parsing`) and compiles with
the same :class:`~.compiler.Compiler`, so a condition means the same wherever it is given."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ..errors import InvalidArgumentError
from .compiler import Compiler, Typed, chain_operands
from .parsing import parse_expression
from .sqltypes import describe, is_boolean, is_null


@dataclass(frozen=True, eq=False)  # an Expression has no truth value to compare by
class Condition:
    """A parsed SQL condition, bound to a schema: parse it once, hand it on.

    ``expression`` is a boolean ``pyarrow.compute.Expression`` with Spark SQL's semantics; a
    row where it is NULL does not match (``Table.filter`` and dataset filters drop NULLs).
    ``columns`` are the top-level columns it reads, spelled as in the schema.
    """

    text: str
    expression: pc.Expression
    columns: frozenset[str]
    schema: pa.Schema | None = field(default=None, repr=False)
    tree: exp.Expression | None = field(default=None, repr=False)
    argument: str = "rowFilter"
    _conjuncts: dict = field(default_factory=dict, repr=False)

    def on_columns(self, columns: Sequence[str]) -> "Condition | None":
        """The part of this condition that reads ``columns`` only (partition columns, say): the
        AND of its top-level conjuncts that read no other column, or None when there is none.

        A row matches the condition only if it matches every conjunct, so a partition whose
        values do not make this part true holds no matching row: it need not be read at all.
        The conjuncts are compiled exactly as the whole condition was, so they agree with the
        filter the rows get. Computed once per set of columns."""
        key = frozenset(c.lower() for c in columns)
        if key not in self._conjuncts:
            self._conjuncts[key] = self._compile_conjuncts(key, tuple(columns))
        return self._conjuncts[key]

    def _compile_conjuncts(self, wanted: frozenset[str], columns: tuple[str, ...]) -> "Condition | None":
        assert self.tree is not None and self.schema is not None, "a condition from parse_condition has both"
        parts: list[pc.Expression] = []
        for node in chain_operands(self.tree, exp.And):
            compiler = Compiler(self.text, self.schema, self.argument)
            typed = compiler.compile(node)
            if all(c.lower() in wanted for c in compiler.columns):
                parts.append(pc.scalar(pa.scalar(None, pa.bool_())) if is_null(typed.type) else typed.expression)
        if not parts:
            return None
        combined = parts[0]
        for part in parts[1:]:
            combined = combined & part
        return Condition(self.text, combined, frozenset(columns))


@dataclass(frozen=True, eq=False)
class ValueExpression:
    """A parsed SQL scalar expression and the Arrow type of its result (``null`` for a bare
    NULL, which takes the type of wherever it is stored)."""

    text: str
    expression: pc.Expression
    columns: frozenset[str]
    type: pa.DataType


def _compile(text: str, schema: pa.Schema, argument: str,
             store_in: pa.Field | None = None) -> tuple[Compiler, exp.Expression, Typed]:
    if not isinstance(schema, pa.Schema):
        raise InvalidArgumentError("schema", f"expected a pyarrow.Schema, got {type(schema).__name__}")
    tree = parse_expression(text, argument)
    compiler = Compiler(text, schema, argument)
    try:
        return compiler, tree, compiler.compile(tree, store_in=store_in)
    except RecursionError:
        raise InvalidArgumentError(argument, "the expression is nested too deeply") from None


def parse_condition(text: str, schema: pa.Schema, *, argument: str = "rowFilter") -> Condition:
    """Parse a SQL boolean condition (Spark dialect) over the columns of ``schema``.

    Errors are :class:`~acid_source.errors.InvalidArgumentError` naming ``argument``, with
    the line and column of the offending part.
    """
    compiler, tree, typed = _compile(text, schema, argument)
    if is_null(typed.type):
        typed = Typed(pc.scalar(pa.scalar(None, pa.bool_())), pa.bool_(), True)
    elif not is_boolean(typed.type):
        compiler.fail(tree, "a condition must be true or false, but this expression is of type "
                            f"{describe(typed.type)}")
    return Condition(text, typed.expression, frozenset(compiler.columns), schema, tree, argument)


def parse_value_expression(text: str, schema: pa.Schema, *, argument: str = "expression",
                           store_in: pa.Field | None = None) -> ValueExpression:
    """Parse a SQL scalar expression (any type, booleans included) over ``schema``; with
    ``store_in``, the value as Spark's UPDATE stores it in that column (a number as the
    column's type: decimals rounded half up to its scale, out of range an error)."""
    compiler, _, typed = _compile(text, schema, argument, store_in)
    return ValueExpression(text, typed.expression, frozenset(compiler.columns), typed.type)


def parse_partition_filter(text: str, schema: pa.Schema, partition_columns: Sequence[str], *,
                           argument: str = "partitionFilter") -> Condition:
    """A ``partitionFilter``: a condition whose top-level conjuncts read partition columns
    only, compiled exactly as :func:`parse_condition` compiles a ``rowFilter`` (so a partition
    is kept exactly when its rows would pass that condition).

    Errors are :class:`~acid_source.errors.InvalidArgumentError` naming ``argument``, with the
    message :func:`parse_condition` gives for the same text; a conjunct reading another column
    is refused with a message naming it and listing the partition columns.
    """
    condition = parse_condition(text, schema, argument=argument)
    wanted = {c.lower() for c in partition_columns}
    if all(c.lower() in wanted for c in condition.columns):
        return condition
    known = ", ".join(partition_columns) or "none: the table is not partitioned"
    assert condition.tree is not None
    for node in chain_operands(condition.tree, exp.And):  # the first conjunct at fault
        compiler = Compiler(text, schema, argument)
        compiler.compile(node)
        others = sorted(c for c in compiler.columns if c.lower() not in wanted)
        if others:
            compiler.fail(node, f"{others[0]!r} is not a partition column (partition columns: {known})")
    others = sorted(c for c in condition.columns if c.lower() not in wanted)
    raise InvalidArgumentError(argument, f"{others[0]!r} is not a partition column (partition columns: {known})")


def columns_of(text: object, columns: Sequence[str]) -> list[str] | None:
    """The columns of ``columns`` a SQL condition reads, in the order it names them (a column
    read twice is listed twice); ``[]`` for no condition. None - "unknown: read them all" -
    when it is not SQL text, does not parse, or names something not in ``columns``."""
    if text is None:
        return []
    if not isinstance(text, str):
        return None
    try:
        tree = parse_expression(text, "condition")
    except InvalidArgumentError:
        return None
    by_lower = {c.lower(): c for c in columns}
    found = []
    for node in tree.find_all(exp.Column):
        name = by_lower.get(node.name.lower())
        if name is None:
            return None
        found.append(name)
    return found
