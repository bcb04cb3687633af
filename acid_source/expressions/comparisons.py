"""Comparisons (``= <> < <= > >=``, ``<=>``), ``IN``, ``BETWEEN``, ``LIKE`` / ``ILIKE`` and
``isnan``: operands unified to one type first (:func:`.conversions.unify`), a comparison with
NULL is NULL, and floating-point values compare in Spark's order (NaN above every other value
and equal to itself, -0.0 = 0.0)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from .conversions import cast, unify
from .dispatch import Handlers, operand, operands
from .sqltypes import (
    describe,
    is_binary,
    is_boolean,
    is_date,
    is_decimal,
    is_floating,
    is_integral,
    is_null,
    is_numeric,
    is_string,
    is_timestamp,
)
from .typed import Typed, after_valid, arrow_call, balanced, call, constant, fold, in_order, null_bool

if TYPE_CHECKING:
    from .compiler import Compiler

HANDLERS = Handlers()

_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "equal", exp.NEQ: "not_equal", exp.GT: "greater", exp.GTE: "greater_equal", exp.LT: "less",
    exp.LTE: "less_equal"}


@HANDLERS.register_each(_COMPARISONS, children=operands)
def _comparison(function: str, compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compare(compiler, node, function, args[0], args[1])


def compare(compiler: Compiler, node, function: str, left: Typed, right: Typed) -> Typed:
    for side in (left, right):
        if not _comparable(side.type):
            compiler.fail(node, f"cannot compare {describe(side.type)} values")
    (left, right), target = unify(compiler, node, [left, right], "compare")
    if is_null(target) or (left.is_constant and left.value is None):
        return null_bool()  # Spark evaluates nothing after a NULL left operand
    if right.is_constant and right.value is None:
        return replace(null_bool(), problem=left.problem)  # the left one is evaluated first
    result = _float_compare(function, left, right) if is_floating(target) else call(
        function, [left, right], pa.bool_())
    problem = after_valid(left, right)  # Spark does not evaluate the right operand of a NULL left one
    return fold(replace(result, problem=problem), [left, right])


@HANDLERS.register(exp.Nullif, children=operands)
def _nullif(compiler: Compiler, node, args: list[Typed]) -> Typed:
    """``nullif(a, b)``: NULL where ``a = b`` is true, else ``a`` (Spark's
    ``IF(a = b, NULL, a)``: of ``a``'s type, ``b`` evaluated only where ``a`` is not NULL)."""
    value, other = args
    if is_null(value.type):
        return value
    equal = compare(compiler, node, "equal", value, other)
    matched = call("coalesce", [equal, constant(False, pa.bool_())], pa.bool_())
    result = call("if_else", [matched, constant(None, value.type), value], value.type)
    return fold(replace(result, problem=equal.problem), [value, other])


@HANDLERS.register(exp.NullSafeEQ, exp.NullSafeNEQ, children=operands)
def _null_safe(compiler: Compiler, node, args: list[Typed]) -> Typed:
    result = _null_safe_equal(compiler, node, args[0], args[1])
    return call("invert", [result], pa.bool_()) if isinstance(node, exp.NullSafeNEQ) else result


def _null_safe_equal(compiler: Compiler, node, left: Typed, right: Typed) -> Typed:
    for side in (left, right):
        if not _comparable(side.type):
            compiler.fail(node, f"cannot compare {describe(side.type)} values")
    (left, right), target = unify(compiler, node, [left, right], "compare")
    left_null = left.is_constant and left.value is None
    right_null = right.is_constant and right.value is None
    if left_null and right_null:
        return constant(True, pa.bool_())
    if left_null or right_null:
        other = right if left_null else left
        if other.is_constant:
            return constant(other.value is None, pa.bool_())
        return call("is_null", [other], pa.bool_())
    both_valid = call("and", [call("is_valid", [left], pa.bool_()), call("is_valid", [right], pa.bool_())],
                      pa.bool_())
    both_null = call("and", [call("is_null", [left], pa.bool_()), call("is_null", [right], pa.bool_())],
                     pa.bool_())
    equal = (_float_compare("equal", left, right) if is_floating(target)
             else call("equal", [left, right], pa.bool_()))
    return fold(call("if_else", [both_valid, equal, both_null], pa.bool_()), [left, right])


def _in_children(compiler: Compiler, node) -> list:
    if node.args.get("query"):
        compiler.fail(node, "IN with a subquery is not supported (list the values instead)")
    if node.args.get("unnest") or node.args.get("field"):
        compiler.fail(node, "IN needs a list of values in parentheses")
    if not node.expressions:
        compiler.fail(node, "IN needs at least one value")
    return [node.this, *node.expressions]


@HANDLERS.register(exp.In, children=_in_children)
def _in_list(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return _is_in(compiler, node, args[0], args[1:])


def _is_in(compiler: Compiler, node, value: Typed, options: list[Typed]) -> Typed:
    for item in [value, *options]:
        if not _comparable(item.type):
            compiler.fail(node, f"cannot compare {describe(item.type)} values")
    if not all(o.is_constant for o in options):
        return balanced("or_kleene", [compare(compiler, node, "equal", value, o) for o in options])
    (value, *options), target = unify(compiler, node, [value, *options], "compare")
    if is_null(target) or (value.is_constant and value.value is None):
        return null_bool()
    present = [o.value for o in options if o.value is not None]
    if is_floating(target):
        hit = _float_in(value, present, target)
    else:
        hit = call("is_in", [value], pa.bool_(),
                   pc.SetLookupOptions(pa.array(present, type=target), skip_nulls=True))
    if len(present) < len(options):  # NULL in the list: no match is unknown, not false
        hit = call("if_else", [hit, constant(True, pa.bool_()), null_bool()], pa.bool_())
    result = call("if_else", [call("is_null", [value], pa.bool_()), null_bool(), hit], pa.bool_())
    return fold(result, [value])


def _between_children(compiler: Compiler, node) -> list:
    if node.args.get("symmetric"):
        compiler.fail(node, "BETWEEN SYMMETRIC is not supported")
    return [node.this, node.args["low"], node.args["high"]]


@HANDLERS.register(exp.Between, children=_between_children)
def _between(compiler: Compiler, node, args: list[Typed]) -> Typed:
    """``x BETWEEN a AND b``: Spark's ``x >= a AND x <= b``, the second comparison evaluated
    only where the first is not false."""
    low = compare(compiler, node, "greater_equal", args[0], args[1])
    high = compare(compiler, node, "less_equal", args[0], args[2])
    joined = call("and_kleene", [low, high], pa.bool_())
    return replace(joined, problem=in_order([low, high], lambda o: arrow_call("coalesce", [o.expression,
                                                                                         pc.scalar(True)])))


def _escape_children(compiler: Compiler, node) -> list:
    escape = node.expression
    if not (isinstance(node.this, (exp.Like, exp.ILike)) and isinstance(escape, exp.Literal)
            and escape.is_string and escape.this == "\\"):
        compiler.fail(node, "LIKE ... ESCAPE is only supported with the default escape character '\\'")
    return [node.this]


@HANDLERS.register(exp.Escape, children=_escape_children)
def _escape(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return args[0]


def _like_children(compiler: Compiler, node) -> list:
    if isinstance(node.expression, (exp.Any, exp.All)):
        compiler.fail(node, "LIKE ANY / LIKE ALL is not supported")
    return [node.this, node.expression]


@HANDLERS.register(exp.Like, exp.ILike, children=_like_children)
def _like(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return _matches_like(compiler, node, args[0], args[1])


def _matches_like(compiler: Compiler, node, value: Typed, pattern: Typed) -> Typed:
    if not pattern.is_constant or not (is_string(pattern.type) or is_null(pattern.type)):
        compiler.fail(node, "the pattern of LIKE must be a string literal")
    if is_null(value.type) or pattern.value is None:
        return null_bool()
    if not is_string(value.type):
        if not (is_integral(value.type) or is_decimal(value.type) or is_date(value.type)):
            compiler.fail(node, f"LIKE needs a string, not {describe(value.type)}")
        value = cast(compiler, node, value, pa.string())
    options = pc.MatchSubstringOptions(pattern.value, ignore_case=isinstance(node, exp.ILike))
    result = call("match_like", [value], pa.bool_(), options)
    if node.args.get("negate"):
        result = call("invert", [result], pa.bool_())
    return fold(result, [value])


@HANDLERS.register(exp.IsNan, children=operand)
def _isnan(compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = args
    if is_string(value.type) and value.is_constant:  # isnan('NaN'): Spark casts it to double
        value = cast(compiler, node, value, pa.float64())
    if not is_numeric(value.type) and not is_null(value.type):
        compiler.fail(node, f"isnan needs a number, not {describe(value.type)}")
    if not is_floating(value.type):  # Spark: isnan(NULL) and isnan of an integer or decimal are false
        return constant(False, pa.bool_())
    nan = _is_nan(value)
    return nan if nan.is_constant else call("coalesce", [nan, constant(False, pa.bool_())], pa.bool_())


def _comparable(t: pa.DataType) -> bool:
    return (is_numeric(t) or is_string(t) or is_binary(t) or is_boolean(t) or is_date(t)
            or is_timestamp(t) or is_null(t))


# -- floating-point comparisons -------------------------------------------------------------
# Spark orders NaN above every other value (+inf included) and equal to itself; IEEE (and so
# Arrow) makes every comparison with NaN false. -0.0 = 0.0 in both. The helpers below build
# Spark's answer from Arrow's with the non-Kleene "and" / "or" (NULL in, NULL out), so a
# comparison with NULL stays NULL; constants that decide nothing are left out.

def _is_nan(item: Typed) -> Typed:
    if item.is_constant:
        return constant(math.isnan(item.value), pa.bool_())
    return call("is_nan", [item], pa.bool_())


def _not(item: Typed) -> Typed:
    return constant(not item.value, pa.bool_()) if item.is_constant else call("invert", [item], pa.bool_())


def _and(a: Typed, b: Typed) -> Typed:
    return _joined("and", True, a, b)


def _or(a: Typed, b: Typed) -> Typed:
    return _joined("or", False, a, b)


def _joined(function: str, neutral: bool, a: Typed, b: Typed) -> Typed:
    """``a <function> b``, an operand that is the constant ``neutral`` (which decides nothing) left out."""
    if a.is_constant and a.value is neutral:
        return b
    if b.is_constant and b.value is neutral:
        return a
    return call(function, [a, b], pa.bool_())


def _float_compare(function: str, left: Typed, right: Typed) -> Typed:
    """``left <function> right`` on two floating-point operands of one type, as Spark orders
    them (no operand is a NULL constant)."""
    if function in ("less", "less_equal"):  # a < b is b > a
        function, left, right = function.replace("less", "greater"), right, left
    if function in ("equal", "not_equal"):
        equal = _or(call("equal", [left, right], pa.bool_()), _and(_is_nan(left), _is_nan(right)))
        return equal if function == "equal" else _not(equal)
    ordered = call(function, [left, right], pa.bool_())
    if function == "greater":  # NaN > x unless x is NaN too
        return _and(_not(_is_nan(right)), _or(_is_nan(left), ordered))
    return _or(_is_nan(left), _and(_not(_is_nan(right)), ordered))  # greater_equal: NaN >= everything


def _float_in(value: Typed, present: list, target: pa.DataType) -> Typed:
    """``value IN (present...)`` for a non-NULL floating-point value and non-NULL constants:
    Arrow's set lookup tells -0.0 from 0.0 (Spark does not), so zeros and NaN are tested apart."""
    zero = any(v == 0 for v in present)
    nan = any(math.isnan(v) for v in present)
    rest = [v for v in present if v != 0 and not math.isnan(v)]
    terms = []
    if rest:
        terms.append(call("is_in", [value], pa.bool_(), pc.SetLookupOptions(pa.array(rest, type=target))))
    if zero:
        terms.append(call("equal", [value, constant(0.0, target)], pa.bool_()))
    if nan:
        terms.append(_is_nan(value))
    if not terms:
        return constant(False, pa.bool_())
    hit = terms[0]
    for term in terms[1:]:
        hit = _or(hit, term)
    return hit
