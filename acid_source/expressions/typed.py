"""What every handler builds with: a compiled expression and its type (:class:`Typed`), calls of
Arrow compute functions, constant folding, and the bookkeeping of Spark's runtime errors.

Arrow evaluates every operand of every row, Spark only what it reaches, so an operation that
fails in Spark (a division by zero, an overflow) computes a harmless value here and records the
failure in :attr:`Typed.problem`; :func:`raising` makes the finished expression raise it (a
failing cast of the text: "Failed to parse string: '<problem>' ...", which the evaluation points
turn into a typed error). Problem texts hold no quote.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from .sqltypes import is_null
from .values import to_scalar

# pyarrow builds a call of a compute function by name only with this static method (its own
# function wrappers use it; it is not public): this module is the one place that reaches it.
_call = pc.Expression._call

_NO_PROBLEM = pc.scalar(pa.scalar(None, pa.string()))
_ONE_ROW = pa.table({"_": pa.array([0], pa.int8())})


@dataclass(frozen=True)
class Typed:
    """A compiled expression with its Arrow type; constants keep their Python value."""

    expression: pc.Expression
    type: pa.DataType
    is_constant: bool = False
    value: Any = None
    depth: int = 1
    #: a string expression: NULL on the rows where evaluating this is fine, else the error
    #: Spark (in ANSI mode, its default) raises there (``[DIVIDE_BY_ZERO] ...``); only rows
    #: Spark evaluates count (CASE, IF, AND, OR, COALESCE guard their operands)
    problem: pc.Expression | None = None
    #: the Arrow function of the expression's top call (None: a field, a literal, ...)
    function: str | None = None


def constant(value, data_type: pa.DataType) -> Typed:
    return Typed(pc.scalar(to_scalar(value, data_type)), data_type, True, value, 1)


def null_bool() -> Typed:
    return constant(None, pa.bool_())


def arrow_call(function: str, expressions: list, options=None) -> pc.Expression:
    """A call of Arrow compute function ``function`` on bare expressions."""
    return _call(function, expressions, options)


# Arrow canonicalizes an expression before it runs it, and re-associates nested calls of one of
# these functions as if floating-point and decimal arithmetic were associative: inf * (d * d)
# ran as (inf * d) * d, inf where Spark's NaN. A call of the other spelling (on floats and
# decimals the same operation) nested in one breaks the chain.
_ASSOCIATIVE = {"add": "add_checked", "add_checked": "add", "multiply": "multiply_checked",
                "multiply_checked": "multiply"}


def call(function: str, args: list[Typed], result_type: pa.DataType, options=None) -> Typed:
    """A call of an Arrow compute function on compiled operands (their problems carried on)."""
    if function in _ASSOCIATIVE and (pa.types.is_floating(result_type) or pa.types.is_decimal(result_type)) \
            and any(a.function == function for a in args):
        function = _ASSOCIATIVE[function]
    expression = _call(function, [a.expression for a in args], options)
    return Typed(expression, result_type, depth=1 + max((a.depth for a in args), default=0),
                 problem=first_problem([a.problem for a in args]), function=function)


def balanced(function: str, items: list[Typed]) -> Typed:
    """``items`` joined by the boolean ``function`` as a balanced tree: depth log2(n), not n."""
    level = items
    while len(level) > 1:
        level = [call(function, level[i:i + 2], pa.bool_()) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]


def fold(result: Typed, inputs: list[Typed]) -> Typed:
    """Evaluate an operation on constants now, so that it is a constant to what uses it
    (``x > -(2 * 3)`` compares with the constant -6, converted to x's type)."""
    if not all(i.is_constant for i in inputs) or is_null(result.type):
        return result
    columns = {"v": result.expression, "p": _NO_PROBLEM if result.problem is None else result.problem}
    try:
        row = ds.dataset(_ONE_ROW).to_table(columns=columns)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return result  # left to fail (or not) where the rows are
    if row.column("p")[0].is_valid:
        return result  # Spark fails where it evaluates it
    value = row.column("v")[0].as_py()
    if isinstance(value, dt.datetime) and value.tzinfo is not None:  # constants hold UTC wall-clock times
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return constant(value, result.type)


# -- Spark's runtime errors ------------------------------------------------------------------

def first_problem(problems: list) -> pc.Expression | None:
    found = [p for p in problems if p is not None]
    if len(found) < 2:
        return found[0] if found else None
    return _call("coalesce", found)


def problem_if(condition: pc.Expression, message: str) -> pc.Expression:
    """``message`` on the rows where ``condition`` is true."""
    return _call("if_else", [condition, pc.scalar(message), _NO_PROBLEM])


def reached(condition: pc.Expression | None, problem: pc.Expression | None) -> pc.Expression | None:
    """``problem`` on the rows where ``condition`` (evaluation reaches the operand) is true."""
    if problem is None or condition is None:
        return problem
    return _call("if_else", [condition, problem, _NO_PROBLEM])


def after_valid(first: Typed, second: Typed) -> pc.Expression | None:
    """The problem of two operands where Spark skips the second when the first is NULL."""
    return first_problem([first.problem, reached(_call("is_valid", [first.expression]), second.problem)])


def both(a: pc.Expression | None, b: pc.Expression) -> pc.Expression:
    return b if a is None else _call("and", [a, b])


def is_true(item: Typed) -> pc.Expression:
    return _call("coalesce", [item.expression, pc.scalar(False)])


def in_order(items: list[Typed], goes_on) -> pc.Expression | None:
    """The problem of operands evaluated left to right while ``goes_on(operand)`` (a non-NULL
    boolean expression) holds: AND stops at false, OR at true, COALESCE at a value."""
    if all(i.problem is None for i in items):
        return None
    problems, so_far = [], None
    for item in items:
        problems.append(reached(so_far, item.problem))
        so_far = both(so_far, goes_on(item))
    return first_problem(problems)


def raising(typed: Typed) -> Typed:
    """``typed`` that raises its problem where there is one."""
    if typed.problem is None:
        return typed
    check = _call("cast", [_call("coalesce", [typed.problem, pc.scalar("0")])], pc.CastOptions.safe(pa.int8()))
    fine = _call("equal", [check, pc.scalar(pa.scalar(0, pa.int8()))])
    expression = _call("if_else", [fine, typed.expression, pc.scalar(pa.scalar(None, typed.type))])
    return Typed(expression, typed.type, depth=typed.depth + 3)
