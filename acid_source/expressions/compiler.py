"""Compile a parsed sqlglot expression into a typed pyarrow compute expression.

Types and null handling follow Spark SQL: literals are converted to the type of what they are
compared with (``day = '2024-01-01'`` on a date column compares dates), numeric operands are
widened the way Spark widens them, AND / OR / NOT use three-valued (Kleene) logic, a
comparison with NULL is NULL, and floating-point values compare in Spark's order (NaN above
every other value and equal to itself, -0.0 = 0.0). The tree is walked with an explicit
stack, and chains of AND / OR become balanced trees, so neither a long chain nor deep nesting
recurses in Python or in Arrow.

This module is the walk; what a node means is its handler's, found by the node's sqlglot class
(:mod:`.dispatch`) in the module of its concern: :mod:`.leaves` (literals, columns),
:mod:`.logic` (AND / OR / NOT / IS, COALESCE, IF, CASE), :mod:`.comparisons` (comparisons,
IN, BETWEEN, LIKE, isnan), :mod:`.arithmetic`, :mod:`.strings` and :mod:`.conversions` (CAST,
and the unification of operands every other module uses). Supporting a new function is one
handler, registered with its module's ``HANDLERS`` decorator; a node without a handler is
refused (:meth:`Compiler._reject`).
"""

from __future__ import annotations

from typing import Any, NoReturn

import pyarrow as pa
from sqlglot import exp

from ..errors import InvalidArgumentError
from . import arithmetic, comparisons, conversions, leaves, logic, strings
from .dispatch import Rule, chain_operands, function_name, merged
from .leaves import literal_number
from .parsing import node_span, position
from .typed import Typed, constant, raising

__all__ = ["MAX_EXPRESSION_DEPTH", "NON_DETERMINISTIC_FUNCTIONS", "Compiler", "Typed", "chain_operands", "constant",
           "literal_number", "non_deterministic_message"]

# Arrow evaluates expressions recursively in C++; a few thousand levels overflow its stack.
MAX_EXPRESSION_DEPTH = 1000

# Spark's non-deterministic functions (Expression.deterministic is false in Spark 4.3): refused
# in every condition and value, as Delta refuses them in MERGE, since each evaluation of a row
# (the scan, the rewrite, a retried task) could choose differently.
_NON_DETERMINISTIC_NODES: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name) for name in ("Rand", "Randn", "Uuid", "Shuffle", "Randstr", "Uniform") if hasattr(exp, name))
NON_DETERMINISTIC_FUNCTIONS = frozenset({
    "rand", "random", "randn", "uuid", "shuffle", "randstr", "uniform", "monotonically_increasing_id",
    "spark_partition_id", "input_file_name", "input_file_block_start", "input_file_block_length", "reflect",
    "java_method", "try_reflect"})

# every handler, by the sqlglot class it handles (a class has one handler)
_REGISTERED = merged(module.HANDLERS for module in (leaves, logic, comparisons, arithmetic, strings, conversions))
_RULES = dict(_REGISTERED)  # by a node's own class: the walk's first, cheap look-up (subclasses join on first use)


class Compiler:
    """One compilation of ``text`` against ``schema``; errors name ``argument``."""

    def __init__(self, text: str, schema: pa.Schema, argument: str):
        self.text = text
        self.schema = schema
        self.argument = argument
        self.columns: set[str] = set()

    # -- errors -------------------------------------------------------------------------------

    def fail(self, node, message: str) -> NoReturn:
        span = node_span(node) if node is not None else None
        where = f" at {position(self.text, span[0])}" if span else ""
        raise InvalidArgumentError(self.argument, message + where)

    def _written_name(self, node) -> str:
        """A function's name as the text spells it (``random`` parses as ``rand``), lower-cased."""
        span = node_span(node)
        if span is not None:
            name = self.text[span[0]:].lstrip("`")
            end = next((i for i, ch in enumerate(name) if not (ch.isalnum() or ch == "_")), len(name))
            if end:
                return name[:end].lower()
        return node.name.lower() if isinstance(node, exp.Anonymous) else function_name(node)

    # -- the walk -----------------------------------------------------------------------------

    def compile(self, root: exp.Expression, *, store_in: pa.Field | None = None) -> Typed:
        """The compiled expression; with ``store_in``, as it is stored in that column
        (:func:`.conversions.store_assigned`)."""
        results: dict[int, Typed] = {}
        # (node, None) until its children are pushed, then (node, (its rule, its children))
        stack: list[tuple[Any, tuple[Rule, list] | None]] = [(root, None)]
        while stack:
            node, expanded = stack.pop()
            if expanded is None:
                text = literal_number(node)
                if text is not None:  # a literal as a whole, its sign and type suffix included
                    results[id(node)] = leaves.number(self, node, text)
                    continue
                rule = _RULES.get(type(node)) or self._rule(node)
                children = rule.children(self, node)
                stack.append((node, (rule, children)))
                stack.extend((child, None) for child in reversed(children))
                continue
            rule, children = expanded
            typed = rule.build(self, node, [results.pop(id(child)) for child in children])
            if typed.depth > MAX_EXPRESSION_DEPTH:
                self.fail(node, f"the expression is nested too deeply (more than {MAX_EXPRESSION_DEPTH} "
                                "operations inside each other)")
            results[id(node)] = typed
        typed = results[id(root)]
        if store_in is not None:
            typed = conversions.store_assigned(self, root, typed, store_in.type, store_in.name)
        return raising(typed)

    def _rule(self, node) -> Rule:
        """The rule of the nearest class of ``node`` that has one (remembered for its class);
        rejects a node without one."""
        for cls in type(node).__mro__:
            rule = _REGISTERED.get(cls)
            if rule is not None:
                _RULES[type(node)] = rule
                return rule
        self._reject(node)

    def _reject(self, node) -> NoReturn:
        if isinstance(node, _NON_DETERMINISTIC_NODES) or (
                isinstance(node, exp.Anonymous) and node.name.lower() in NON_DETERMINISTIC_FUNCTIONS):
            self.fail(node, non_deterministic_message(self._written_name(node)))
        if isinstance(node, (exp.Subquery, exp.Exists)) or isinstance(node, getattr(exp, "Query", exp.Select)):
            self.fail(node, "subqueries are not supported")
        if isinstance(node, exp.Window):
            self.fail(node, "window functions are not supported")
        if isinstance(node, exp.AggFunc):
            self.fail(node, f"aggregate function {function_name(node)} is not allowed here")
        if isinstance(node, exp.Anonymous):
            self.fail(node, f"unknown function {node.name}")
        if isinstance(node, exp.Func):
            self.fail(node, f"function {function_name(node)} is not supported")
        if isinstance(node, (exp.Placeholder, exp.Parameter)):
            self.fail(node, "parameters are not supported: write the value itself")
        if isinstance(node, exp.Star):
            self.fail(node, "* is not allowed here")
        if isinstance(node, exp.Alias):
            alias = node.args.get("alias")
            self.fail(alias if alias is not None and node_span(alias) else node,
                      f"unexpected name {node.alias!r} after an expression (aliases are not allowed here)")
        self.fail(node, f"{type(node).__name__} expressions are not supported")


def non_deterministic_message(function: str) -> str:
    """Why a condition or value calling ``function`` is refused (the Spark path says the same)."""
    return f"non-deterministic function {function}() is not allowed (each evaluation could give another result)"


def registered_classes() -> frozenset[type[exp.Expression]]:
    """The node classes the compiler has a rule for (their subclasses share it)."""
    return frozenset(_REGISTERED)
