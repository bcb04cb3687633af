"""The leaves of an expression: literals, typed as Spark types them (``1`` an int, ``1L`` a
bigint, ``1.5`` a decimal, ``X'0A'`` binary), and columns and struct fields, matched against the
schema case-insensitively; and parentheses, which only group."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from .columns import ColumnError, resolve
from .dispatch import Handlers, no_children, operand
from .typed import Typed, constant
from .values import hex_literal, sql_number

if TYPE_CHECKING:
    from .compiler import Compiler

HANDLERS = Handlers()


def literal_number(node) -> str | None:
    """The text of a numeric literal, as written, that ``node`` is: a number; a number with a
    type suffix (the lexer's ``NUMBER :: TYPE``: a cast of a literal whose text ends in the
    suffix); either after a unary minus, which Spark reads as part of the literal (``-128Y`` is a
    tinyint, ``-2147483648`` an int). None for anything else."""
    sign = ""
    if isinstance(node, exp.Neg):
        sign, node = "-", node.this
    if (isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and not node.this.is_string
            and node.this.this[-1:].isalpha()):
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string:
        return sign + node.this
    return None


def number(compiler: Compiler, node, text: str) -> Typed:
    """The constant of a number literal's ``text`` (:func:`literal_number`), which the walk
    takes whole, before it looks for the rule of ``node``."""
    try:
        return constant(*sql_number(text))
    except ValueError as exc:
        compiler.fail(node, str(exc))


@HANDLERS.register(exp.Literal, children=no_children)
def _string(compiler: Compiler, node, args: list[Typed]) -> Typed:
    """A string literal (the walk takes a number literal whole: :func:`literal_number`)."""
    return constant(node.this, pa.string())


@HANDLERS.register(exp.HexString, children=no_children)
def _hex(compiler: Compiler, node, args: list[Typed]) -> Typed:
    try:
        return constant(hex_literal(node.this), pa.binary())
    except ValueError as exc:
        compiler.fail(node, str(exc))


@HANDLERS.register(exp.Boolean, children=no_children)
def _boolean(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return constant(bool(node.this), pa.bool_())


@HANDLERS.register(exp.Null, children=no_children)
def _null(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return constant(None, pa.null())


@HANDLERS.register(exp.Column, children=no_children)
def _column(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return _field(compiler, node, [p.name for p in node.parts])


@HANDLERS.register(exp.Dot, children=no_children)
def _dot(compiler: Compiler, node, args: list[Typed]) -> Typed:
    names, current = [], node
    while isinstance(current, exp.Dot):
        if not isinstance(current.expression, exp.Identifier):
            compiler.fail(node, "only struct fields can follow a '.'")
        names.append(current.expression.name)
        current = current.this
    if not isinstance(current, exp.Column) or isinstance(current.this, exp.Star):
        compiler.fail(node, "only struct fields can follow a '.'")
    return _field(compiler, node, [p.name for p in current.parts] + names[::-1])


def _field(compiler: Compiler, node, parts: list[str]) -> Typed:
    """The column (and struct field) named by ``parts``; its top-level column counts as read."""
    try:
        top, path, data_type = resolve(compiler.schema, parts)
    except ColumnError as exc:
        compiler.fail(node, str(exc))
    compiler.columns.add(top)
    return Typed(pc.field(*path), data_type)


@HANDLERS.register(exp.Paren, children=operand)
def _parenthesized(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return args[0]
