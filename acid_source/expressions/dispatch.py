"""How the compiler finds what to do with a sqlglot node: one rule per node class, registered
next to its handler with a decorator, so supporting a new node (a function, an operator) is one
handler in the module of its concern and nothing else.

A rule has two halves because the tree is walked with an explicit stack (no recursion): first
which sub-expressions to compile (``children``, which also refuses what is not supported, before
anything below is compiled), then how to build the node from its compiled children (``build``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

if TYPE_CHECKING:
    from .compiler import Compiler
    from .typed import Typed

Children = Callable[["Compiler", Any], list]
Build = Callable[["Compiler", Any, list["Typed"]], "Typed"]


@dataclass(frozen=True)
class Rule:
    children: Children
    build: Build


class Handlers:
    """The rules of one module, by node class (a subclass without a rule of its own takes its
    nearest base class's, as ``isinstance`` would)."""

    def __init__(self) -> None:
        self.rules: dict[type[exp.Expression], Rule] = {}

    def _add(self, cls: type[exp.Expression], rule: Rule) -> None:
        if cls in self.rules:
            raise ValueError(f"two rules for sqlglot's {cls.__name__}")
        self.rules[cls] = rule

    def register(self, *classes: type[exp.Expression], children: Children) -> Callable[[Build], Build]:
        """Decorate ``build(compiler, node, args)``: the handler of ``classes``."""
        def add(build: Build) -> Build:
            for cls in classes:
                self._add(cls, Rule(children, build))
            return build
        return add

    def register_each(self, table: Mapping[type[exp.Expression], Any], *, children: Children) -> Callable:
        """Decorate ``build(value, compiler, node, args)``: the handler of each class of
        ``table``, called with the class's value (the Arrow function of an operator, say)."""
        def add(build: Callable) -> Callable:
            for cls, value in table.items():
                self._add(cls, Rule(children, functools.partial(build, value)))
            return build
        return add


def merged(handlers: Iterable[Handlers]) -> dict[type[exp.Expression], Rule]:
    """One table of the rules of every module; a node class may have one rule only."""
    table: dict[type[exp.Expression], Rule] = {}
    for part in handlers:
        for cls, rule in part.rules.items():
            if cls in table:
                raise ValueError(f"two rules for sqlglot's {cls.__name__}")
            table[cls] = rule
    return table


# -- the common shapes of children -----------------------------------------------------------

def no_children(compiler: Compiler, node) -> list:
    return []


def operand(compiler: Compiler, node) -> list:
    return [node.this]


def operands(compiler: Compiler, node) -> list:
    return [node.this, node.expression]


def listed(compiler: Compiler, node) -> list:
    """The arguments of a function of any number of them (``coalesce(a, b, ...)``)."""
    return [node.this, *node.expressions] if node.this is not None else list(node.expressions)


def chain_operands(node, cls) -> list:
    """Operands of a chain of one associative operator, left to right, without recursion."""
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        while isinstance(current, exp.Paren) and isinstance(current.this, cls):
            current = current.this
        if isinstance(current, cls):
            stack.append(current.expression)
            stack.append(current.this)
        else:
            out.append(current)
    return out


def function_name(node) -> str:
    """The SQL name of a function node, lower-cased, as error messages name it."""
    try:
        return node.sql_name().lower()
    except Exception:  # a sqlglot version without sql_name
        return type(node).__name__.lower()
