"""Arithmetic: ``+ - * / % div``, unary minus and ``abs``, typed as Spark types them
(:func:`.sqltypes.arithmetic_types`), with Spark's ANSI-mode errors where a result does not fit
(integral overflow, decimal out of range) or a divisor is zero. Arrow's kernels wrap around or
fail on every row alike, so each check is built here and recorded as a problem
(:mod:`.typed`), which counts only on the rows Spark evaluates."""

from __future__ import annotations

import decimal
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from .conversions import cast
from .dispatch import Handlers, operand, operands
from .leaves import literal_number
from .sqltypes import (
    MAX_DECIMAL_PRECISION,
    arithmetic_types,
    describe,
    integer_range,
    is_decimal,
    is_integral,
    is_null,
    is_numeric,
    literal_decimal,
)
from .typed import Typed, after_valid, call, constant, first_problem, fold, problem_if

if TYPE_CHECKING:
    from .compiler import Compiler

HANDLERS = Handlers()

_ARITHMETIC: dict[type[exp.Expression], str] = {
    exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply", exp.Div: "divide", exp.Mod: "remainder",
    exp.IntDiv: "int_divide"}
_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "remainder": "%",
              "int_divide": "div"}
_ARROW_FUNCTION = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
                   "remainder": "remainder", "int_divide": "divide"}
_DIVIDE_BY_ZERO = "[DIVIDE_BY_ZERO] Division by zero (Spark in ANSI mode; try_divide is not supported here)"
_REMAINDER_BY_ZERO = "[REMAINDER_BY_ZERO] Remainder by zero (Spark in ANSI mode)"


@HANDLERS.register_each(_ARITHMETIC, children=operands)
def _arithmetic(op: str, compiler: Compiler, node, args: list[Typed]) -> Typed:
    left, right = args
    symbol = _OPERATORS[op]
    for side in (left, right):
        if not (is_numeric(side.type) or is_null(side.type)):
            compiler.fail(node, f"{symbol} needs numbers, not {describe(side.type)}")
    if is_null(left.type) and is_null(right.type):
        return constant(None, pa.null())
    if is_null(left.type):
        left = constant(None, right.type)
    if is_null(right.type):
        right = constant(None, left.type)
    left, right = _literal_decimal(node.this, left, right), _literal_decimal(node.expression, right, left)
    types = arithmetic_types(op, left.type, right.type)
    if types is None:
        compiler.fail(node, f"{symbol} needs integral numbers, not {describe(left.type)} and {describe(right.type)}")
    left_type, right_type, result_type = types
    left, right = cast(compiler, node, left, left_type), cast(compiler, node, right, right_type)
    function = _ARROW_FUNCTION[op]
    if op in ("add", "subtract", "multiply") and is_decimal(result_type):
        if op == "multiply" and left_type.precision + right_type.precision + 1 > 76:
            compiler.fail(node, f"* of {describe(left_type)} and {describe(right_type)} needs more than 76 digits "
                                "before Spark rounds it, which is not implemented here; CAST an operand to a "
                                "smaller decimal")
        return fold(_decimal_arithmetic(function, left, right, result_type), [left, right])
    if op == "divide" and is_decimal(result_type):
        return fold(_decimal_division(compiler, node, left, right, result_type), [left, right])
    if op == "remainder" and is_decimal(result_type):  # Arrow's decimal128 remainder may type past 38 digits
        left, right = (call("cast", [t], pa.decimal256(t.type.precision, t.type.scale),
                            pc.CastOptions.safe(pa.decimal256(t.type.precision, t.type.scale))) for t in (left, right))
        left_type, right_type = left.type, right.type
    arrow_type = pc.call_function(function, [pa.array([], left_type), pa.array([], right_type)]).type
    # Spark skips the other operand of a NULL one (the divisor is evaluated first)
    divides = op in ("divide", "remainder", "int_divide")
    operands_problem = after_valid(right, left) if divides else after_valid(left, right)
    left, right = replace(left, problem=None), replace(right, problem=None)
    problem = None
    if divides:
        result, problem = _division(op, left, right, arrow_type)
    elif is_integral(result_type):
        result, problem = _integral_arithmetic(function, left, right, result_type)
    else:
        result = call(function, [left, right], arrow_type)
    if result.type != result_type:
        result = call("cast", [result], result_type, pc.CastOptions.safe(result_type))
    result = replace(result, problem=first_problem([operands_problem, problem]))
    return fold(result, [left, right])


def _literal_decimal(node, item: Typed, other: Typed) -> Typed:
    """An integer literal beside a decimal, as Spark types it: a decimal of just its digits
    (:func:`.sqltypes.literal_decimal`; ``-3``, ``3S`` and ``300L`` are such literals, ``3Y``
    gets tinyint's decimal(3,0), ``(1 + 2)`` and ``CAST(3 AS INT)`` int's decimal(10,0))."""
    while isinstance(node, exp.Paren):
        node = node.this
    if not (literal_number(node) is not None and is_decimal(other.type) and item.is_constant
            and item.value is not None and item.type in (pa.int16(), pa.int32(), pa.int64())):
        return item
    return constant(decimal.Decimal(item.value), literal_decimal(item.value))


def _decimal_division(compiler: Compiler, node, left: Typed, right: Typed, result_type: pa.DataType) -> Typed:
    """``/`` on decimals as Spark divides them: the exact quotient rounded half up to the
    result's scale, NULL and DIVIDE_BY_ZERO where the divisor is 0, NUMERIC_VALUE_OUT_OF_RANGE
    where it does not fit. Arrow's quotient truncates at its own scale, so the dividend gets
    scale enough for one digit more than the result keeps: that digit decides the rounding."""
    operands_problem = after_valid(right, left)
    left, right = replace(left, problem=None), replace(right, problem=None)
    (p1, s1), (p2, s2) = (left.type.precision, left.type.scale), (right.type.precision, right.type.scale)
    extra = max(0, result_type.scale + 1 - (s1 + p2 - s2 + 1))  # Arrow's scale: max(4, s1 + p2 - s2 + 1)
    wide_left, wide_right = pa.decimal256(p1 + extra, s1 + extra), pa.decimal256(p2, s2)
    try:
        quotient_type = pc.call_function("divide", [pa.array([], wide_left), pa.array([], wide_right)]).type
        # one integer digit more: rounding may carry into it (Spark's result then does not fit)
        carried = pa.decimal256(quotient_type.precision + 1, quotient_type.scale)
    except (pa.ArrowInvalid, ValueError):
        compiler.fail(node, f"/ of {describe(left.type)} by {describe(right.type)} needs more than 76 digits before "
                            "Spark rounds it, which is not implemented here; CAST an operand to a smaller decimal")
    dividend = call("cast", [left], wide_left, pc.CastOptions.safe(wide_left))
    divisor = call("cast", [right], wide_right, pc.CastOptions.safe(wide_right))
    zero = call("equal", [divisor, constant(decimal.Decimal(0), wide_right)], pa.bool_())
    one = constant(decimal.Decimal(1).scaleb(-s2), wide_right)  # any divisor the type holds
    quotient = call("divide", [dividend, call("if_else", [zero, one, divisor], wide_right)], quotient_type)
    quotient = call("cast", [quotient], carried, pc.CastOptions.safe(carried))
    rounded = call("round", [quotient], carried, pc.RoundOptions(result_type.scale, "half_towards_infinity"))
    result, out_of_range = _fitted(rounded, result_type)
    result = call("if_else", [zero, constant(None, result_type), result], result_type)
    by_zero = problem_if(call("and", [zero, call("is_valid", [left], pa.bool_())], pa.bool_()).expression,
                         _DIVIDE_BY_ZERO)
    return replace(result, problem=first_problem([operands_problem, by_zero, out_of_range]))


def _division(op: str, left: Typed, right: Typed, arrow_type: pa.DataType) -> tuple[Typed, pc.Expression | None]:
    """``/``, ``%`` or ``div``: NULL where the divisor is 0, with Spark's DIVIDE_BY_ZERO /
    REMAINDER_BY_ZERO there (ANSI mode), and ``div``'s one overflow."""
    right_type = right.type
    zero = call("equal", [right, constant(0, right_type)], pa.bool_())
    one = decimal.Decimal(1).scaleb(-right_type.scale) if is_decimal(right_type) else 1  # fits the type
    divisor = call("if_else", [zero, constant(one, right_type), right], right_type)
    value = call(_ARROW_FUNCTION[op], [left, divisor], arrow_type)
    result = call("if_else", [zero, constant(None, arrow_type), value], arrow_type)
    problem = problem_if(call("and", [zero, call("is_valid", [left], pa.bool_())], pa.bool_()).expression,
                         _REMAINDER_BY_ZERO if op == "remainder" else _DIVIDE_BY_ZERO)
    if op == "int_divide":  # the one quotient a bigint cannot hold
        lowest = constant(integer_range(pa.int64())[0], pa.int64())
        overflow = call("and", [call("equal", [left, lowest], pa.bool_()),
                                call("equal", [right, constant(-1, pa.int64())], pa.bool_())], pa.bool_())
        problem = first_problem([problem, problem_if(overflow.expression, _overflow(pa.int64(), "div"))])
    return result, problem


@HANDLERS.register(exp.Neg, children=operand)
def _minus(compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = args
    if is_null(value.type):
        return value
    if not is_numeric(value.type):
        compiler.fail(node, f"unary - needs a number, not {describe(value.type)}")
    if value.is_constant and value.value is not None:
        # (-2147483648 is an int literal: literal_number reads it whole); the lowest value of
        # an integer type has no negation in it, Spark's ARITHMETIC_OVERFLOW where evaluated
        if not (is_integral(value.type) and value.value == integer_range(value.type)[0]):
            return constant(-value.value, value.type)
    return _lowest_overflows(call("negate", [value], value.type), value)


@HANDLERS.register(exp.Abs, children=operand)
def _abs(compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = args
    if not is_numeric(value.type) and not is_null(value.type):
        compiler.fail(node, f"abs needs a number, not {describe(value.type)}")
    return value if is_null(value.type) else fold(
        _lowest_overflows(call("abs", [value], value.type), value), [value])


def _overflow(result_type: pa.DataType, symbol: str) -> str:
    if result_type.bit_width < 32:  # Spark names the class of tinyint and smallint operations apart
        return f"[BINARY_ARITHMETIC_OVERFLOW] {describe(result_type)} {symbol} caused overflow (Spark in ANSI mode)"
    return f"[ARITHMETIC_OVERFLOW] {describe(result_type)} {symbol} caused overflow (Spark in ANSI mode)"


def _integral_arithmetic(function: str, left: Typed, right: Typed, result_type: pa.DataType):
    """``left <function> right`` on integers of ``result_type`` and Spark's ARITHMETIC_OVERFLOW
    where the exact result does not fit (Arrow's unchecked kernels wrap around)."""
    symbol = {"add": "+", "subtract": "-", "multiply": "*"}[function]
    if result_type.bit_width < 64:  # exact in bigint, then checked against the type's range
        wide = pa.int64()
        widen = pc.CastOptions.safe(wide)
        exact = call(function, [call("cast", [left], wide, widen), call("cast", [right], wide, widen)], wide)
        lo, hi = integer_range(result_type)
        overflow = call("or", [call("less", [exact, constant(lo, wide)], pa.bool_()),
                               call("greater", [exact, constant(hi, wide)], pa.bool_())], pa.bool_())
        fitted = call("if_else", [overflow, constant(0, wide), exact], wide)
        return (call("cast", [fitted], result_type, pc.CastOptions.safe(result_type)),
                problem_if(overflow.expression, _overflow(result_type, symbol)))
    wrapped = call(function, [left, right], result_type)
    negative = constant(0, result_type)

    def sign_differs(a: Typed, b: Typed) -> Typed:
        return call("less", [call("bit_wise_xor", [a, b], result_type), negative], pa.bool_())

    if function == "add":  # operands of one sign, a result of the other
        overflow = call("and", [call("not_equal", [sign_differs(left, right), constant(True, pa.bool_())],
                                     pa.bool_()), sign_differs(left, wrapped)], pa.bool_())
    elif function == "subtract":  # operands of different signs, a result of the right's sign
        overflow = call("and", [sign_differs(left, right), sign_differs(left, wrapped)], pa.bool_())
    else:  # a wrapped product divided by one factor is not the other (the factors 0 and -1 apart)
        zero, minus_one = (call("equal", [left, constant(v, result_type)], pa.bool_()) for v in (0, -1))
        divisor = call("if_else", [call("or", [zero, minus_one], pa.bool_()), constant(1, result_type), left],
                       result_type)
        differs = call("not_equal", [call("divide", [wrapped, divisor], result_type), right], pa.bool_())
        lowest = call("equal", [right, constant(integer_range(result_type)[0], result_type)], pa.bool_())
        overflow = call("if_else", [zero, constant(False, pa.bool_()),
                                    call("if_else", [minus_one, lowest, differs], pa.bool_())], pa.bool_())
    return wrapped, problem_if(overflow.expression, _overflow(result_type, symbol))


def _decimal_arithmetic(function: str, left: Typed, right: Typed, result_type: pa.DataType) -> Typed:
    """``left <function> right`` on decimals, of Spark's result type: computed exactly (in
    decimal256 where the exact result has more than 38 digits), rounded half up to the result's
    scale, and Spark's NUMERIC_VALUE_OUT_OF_RANGE where it does not fit."""
    problem = after_valid(left, right)
    left, right = replace(left, problem=None), replace(right, problem=None)
    exact_type = pc.call_function(function, [pa.array([], pa.decimal256(left.type.precision, left.type.scale)),
                                             pa.array([], pa.decimal256(right.type.precision, right.type.scale))]).type
    if exact_type.precision <= MAX_DECIMAL_PRECISION:  # Arrow's type is Spark's
        result = call(function, [left, right], exact_type)
        if result.type != result_type:
            result = call("cast", [result], result_type, pc.CastOptions.safe(result_type))
        return replace(result, problem=problem)
    wide = [call("cast", [t], pa.decimal256(t.type.precision, t.type.scale),
                 pc.CastOptions.safe(pa.decimal256(t.type.precision, t.type.scale))) for t in (left, right)]
    exact = call(function, wide, exact_type)
    if exact_type.scale > result_type.scale:
        exact = call("round", [exact], exact_type, pc.RoundOptions(result_type.scale, "half_towards_infinity"))
    result, out_of_range = _fitted(exact, result_type)
    return replace(result, problem=first_problem([problem, out_of_range]))


def _fitted(exact: Typed, result_type: pa.DataType) -> tuple[Typed, pc.Expression | None]:
    """A wide decimal already rounded to ``result_type``'s scale, as ``result_type``, and
    Spark's NUMERIC_VALUE_OUT_OF_RANGE where it has more integer digits than that type holds."""
    if exact.type.precision - exact.type.scale <= result_type.precision - result_type.scale:
        return call("cast", [exact], result_type, pc.CastOptions(result_type, allow_decimal_truncate=True)), None
    limit = constant(decimal.Decimal(10) ** (result_type.precision - result_type.scale), exact.type)
    fits = call("less", [call("abs", [exact], exact.type), limit], pa.bool_())
    fitted = call("if_else", [fits, exact, constant(decimal.Decimal(0), exact.type)], exact.type)
    result = call("cast", [fitted], result_type, pc.CastOptions(result_type, allow_decimal_truncate=True))
    message = (f"[NUMERIC_VALUE_OUT_OF_RANGE] a result does not fit {describe(result_type)} (Spark in ANSI mode; "
               "try_add / try_divide / try_multiply are not supported here)")
    return result, problem_if(call("invert", [fits], pa.bool_()).expression, message)


def _lowest_overflows(result: Typed, value: Typed) -> Typed:
    """-x and abs(x) of an integer: the type's lowest value has no positive counterpart."""
    if not is_integral(value.type):
        return result
    lowest = call("equal", [value, constant(integer_range(value.type)[0], value.type)], pa.bool_())
    message = f"[ARITHMETIC_OVERFLOW] {describe(value.type)} overflow (Spark in ANSI mode)"
    return replace(result, problem=first_problem([result.problem, problem_if(lowest.expression, message)]))
