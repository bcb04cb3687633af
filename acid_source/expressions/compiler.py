"""Compile a parsed sqlglot expression into a typed pyarrow compute expression.

Types and null handling follow Spark SQL: literals are converted to the type of what they are
compared with (``day = '2024-01-01'`` on a date column compares dates), numeric operands are
widened the way Spark widens them, AND / OR / NOT use three-valued (Kleene) logic, a
comparison with NULL is NULL, and floating-point values compare in Spark's order (NaN above
every other value and equal to itself, -0.0 = 0.0). The tree is walked with an explicit
stack, and chains of AND / OR become balanced trees, so neither a long chain nor deep nesting
recurses in Python or in Arrow.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass, replace
from typing import Any, NoReturn

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from sqlglot import exp

from ..errors import InvalidArgumentError
from .columns import ColumnError, resolve
from .dispatch import (
    Handlers,
    Rule,
    chain_operands,
    function_name,
    listed,
    merged,
    no_children,
    operand,
    operands,
)
from .parsing import node_span, position
from .sqltypes import (
    MAX_DECIMAL_PRECISION,
    arithmetic_types,
    arrow_type_of,
    common_type,
    describe,
    integer_range,
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
from .values import (
    cast_value,
    hex_literal,
    number_literal,
    parse_boolean,
    parse_date,
    parse_timestamp,
    sql_number,
    to_scalar,
)

# Arrow evaluates expressions recursively in C++; a few thousand levels overflow its stack.
MAX_EXPRESSION_DEPTH = 1000

_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "equal", exp.NEQ: "not_equal", exp.GT: "greater", exp.GTE: "greater_equal", exp.LT: "less",
    exp.LTE: "less_equal"}
_ARITHMETIC: dict[type[exp.Expression], str] = {
    exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply", exp.Div: "divide", exp.Mod: "remainder",
    exp.IntDiv: "int_divide"}
_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "remainder": "%",
              "int_divide": "div"}
_ARROW_FUNCTION = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
                   "remainder": "remainder", "int_divide": "divide"}
_STRING_FUNCTIONS: dict[type[exp.Expression], str] = {exp.Lower: "utf8_lower", exp.Upper: "utf8_upper"}
_ONE_ROW = pa.table({"_": pa.array([0], pa.int8())})
# Spark's non-deterministic functions (Expression.deterministic is false in Spark 4.3): refused
# in every condition and value, as Delta refuses them in MERGE, since each evaluation of a row
# (the scan, the rewrite, a retried task) could choose differently.
_NON_DETERMINISTIC_NODES: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name) for name in ("Rand", "Randn", "Uuid", "Shuffle", "Randstr", "Uniform") if hasattr(exp, name))
NON_DETERMINISTIC_FUNCTIONS = frozenset({
    "rand", "random", "randn", "uuid", "shuffle", "randstr", "uniform", "monotonically_increasing_id",
    "spark_partition_id", "input_file_name", "input_file_block_start", "input_file_block_length", "reflect",
    "java_method", "try_reflect"})


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


def constant(value, data_type: pa.DataType) -> Typed:
    return Typed(pc.scalar(to_scalar(value, data_type)), data_type, True, value, 1)


def _call(function: str, args: list[Typed], result_type: pa.DataType, options=None) -> Typed:
    """A call of an Arrow compute function (``Expression._call`` is what pyarrow's own function
    wrappers use to build expressions)."""
    expression = pc.Expression._call(function, [a.expression for a in args], options)
    return Typed(expression, result_type, depth=1 + max((a.depth for a in args), default=0),
                 problem=_first_problem([a.problem for a in args]))


# -- Spark's runtime errors ------------------------------------------------------------------
# Arrow evaluates every operand of every row, Spark only what it reaches, so an operation that
# fails in Spark (a division by zero, an overflow) computes a harmless value here and records
# the failure in Typed.problem; Compiler.compile makes the finished expression raise it (a
# failing cast of the text: "Failed to parse string: '<problem>' ...", which the evaluation
# points turn into a typed error). Problem texts hold no quote.
_NO_PROBLEM = pc.scalar(pa.scalar(None, pa.string()))


def _first_problem(problems: list) -> pc.Expression | None:
    found = [p for p in problems if p is not None]
    if len(found) < 2:
        return found[0] if found else None
    return pc.Expression._call("coalesce", found)


def _problem_if(condition: pc.Expression, message: str) -> pc.Expression:
    """``message`` on the rows where ``condition`` is true."""
    return pc.Expression._call("if_else", [condition, pc.scalar(message), _NO_PROBLEM])


def _reached(condition: pc.Expression | None, problem: pc.Expression | None) -> pc.Expression | None:
    """``problem`` on the rows where ``condition`` (evaluation reaches the operand) is true."""
    if problem is None or condition is None:
        return problem
    return pc.Expression._call("if_else", [condition, problem, _NO_PROBLEM])


def _both(a: pc.Expression | None, b: pc.Expression) -> pc.Expression:
    return b if a is None else pc.Expression._call("and", [a, b])


def _is_true(item: Typed) -> pc.Expression:
    return pc.Expression._call("coalesce", [item.expression, pc.scalar(False)])


def _in_order(items: list[Typed], goes_on) -> pc.Expression | None:
    """The problem of operands evaluated left to right while ``goes_on(operand)`` (a non-NULL
    boolean expression) holds: AND stops at false, OR at true, COALESCE at a value."""
    if all(i.problem is None for i in items):
        return None
    problems, reached = [], None
    for item in items:
        problems.append(_reached(reached, item.problem))
        reached = _both(reached, goes_on(item))
    return _first_problem(problems)


def _raising(typed: Typed) -> Typed:
    """``typed`` that raises its problem where there is one."""
    if typed.problem is None:
        return typed
    check = pc.Expression._call("cast", [pc.Expression._call("coalesce", [typed.problem, pc.scalar("0")])],
                                pc.CastOptions.safe(pa.int8()))
    fine = pc.Expression._call("equal", [check, pc.scalar(pa.scalar(0, pa.int8()))])
    expression = pc.Expression._call("if_else", [fine, typed.expression, pc.scalar(pa.scalar(None, typed.type))])
    return Typed(expression, typed.type, depth=typed.depth + 3)


def _null_bool() -> Typed:
    return constant(None, pa.bool_())


def _comparable(t: pa.DataType) -> bool:
    return (is_numeric(t) or is_string(t) or is_binary(t) or is_boolean(t) or is_date(t)
            or is_timestamp(t) or is_null(t))


def _literal_text(typed: Typed) -> str:
    if typed.value is None:
        return "NULL"
    if is_string(typed.type):
        return repr(typed.value)
    return cast_value(typed.value, typed.type, pa.string())


# -- floating-point comparisons -------------------------------------------------------------
# Spark orders NaN above every other value (+inf included) and equal to itself; IEEE (and so
# Arrow) makes every comparison with NaN false. -0.0 = 0.0 in both. The helpers below build
# Spark's answer from Arrow's with the non-Kleene "and" / "or" (NULL in, NULL out), so a
# comparison with NULL stays NULL; constants that decide nothing are left out.

def _is_nan(item: Typed) -> Typed:
    if item.is_constant:
        return constant(math.isnan(item.value), pa.bool_())
    return _call("is_nan", [item], pa.bool_())


def _not(item: Typed) -> Typed:
    return constant(not item.value, pa.bool_()) if item.is_constant else _call("invert", [item], pa.bool_())


def _and(a: Typed, b: Typed) -> Typed:
    if a.is_constant and a.value is True:
        return b
    if b.is_constant and b.value is True:
        return a
    return _call("and", [a, b], pa.bool_())


def _or(a: Typed, b: Typed) -> Typed:
    if a.is_constant and a.value is False:
        return b
    if b.is_constant and b.value is False:
        return a
    return _call("or", [a, b], pa.bool_())


def _float_compare(function: str, left: Typed, right: Typed) -> Typed:
    """``left <function> right`` on two floating-point operands of one type, as Spark orders
    them (no operand is a NULL constant)."""
    if function in ("less", "less_equal"):  # a < b is b > a
        function, left, right = function.replace("less", "greater"), right, left
    if function in ("equal", "not_equal"):
        equal = _or(_call("equal", [left, right], pa.bool_()), _and(_is_nan(left), _is_nan(right)))
        return equal if function == "equal" else _not(equal)
    ordered = _call(function, [left, right], pa.bool_())
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
        terms.append(_call("is_in", [value], pa.bool_(), pc.SetLookupOptions(pa.array(rest, type=target))))
    if zero:
        terms.append(_call("equal", [value, constant(0.0, target)], pa.bool_()))
    if nan:
        terms.append(_is_nan(value))
    if not terms:
        return constant(False, pa.bool_())
    hit = terms[0]
    for term in terms[1:]:
        hit = _or(hit, term)
    return hit


_DIVIDE_BY_ZERO = "[DIVIDE_BY_ZERO] Division by zero (Spark in ANSI mode; try_divide is not supported here)"
_REMAINDER_BY_ZERO = "[REMAINDER_BY_ZERO] Remainder by zero (Spark in ANSI mode)"


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
        exact = _call(function, [_call("cast", [left], wide, widen), _call("cast", [right], wide, widen)], wide)
        lo, hi = integer_range(result_type)
        overflow = _call("or", [_call("less", [exact, constant(lo, wide)], pa.bool_()),
                                _call("greater", [exact, constant(hi, wide)], pa.bool_())], pa.bool_())
        fitted = _call("if_else", [overflow, constant(0, wide), exact], wide)
        return (_call("cast", [fitted], result_type, pc.CastOptions.safe(result_type)),
                _problem_if(overflow.expression, _overflow(result_type, symbol)))
    wrapped = _call(function, [left, right], result_type)
    negative = constant(0, result_type)

    def sign_differs(a: Typed, b: Typed) -> Typed:
        return _call("less", [_call("bit_wise_xor", [a, b], result_type), negative], pa.bool_())

    if function == "add":  # operands of one sign, a result of the other
        overflow = _call("and", [_call("not_equal", [sign_differs(left, right), constant(True, pa.bool_())],
                                       pa.bool_()), sign_differs(left, wrapped)], pa.bool_())
    elif function == "subtract":  # operands of different signs, a result of the right's sign
        overflow = _call("and", [sign_differs(left, right), sign_differs(left, wrapped)], pa.bool_())
    else:  # a wrapped product divided by one factor is not the other (the factors 0 and -1 apart)
        zero, minus_one = (_call("equal", [left, constant(v, result_type)], pa.bool_()) for v in (0, -1))
        divisor = _call("if_else", [_call("or", [zero, minus_one], pa.bool_()), constant(1, result_type), left],
                        result_type)
        differs = _call("not_equal", [_call("divide", [wrapped, divisor], result_type), right], pa.bool_())
        lowest = _call("equal", [right, constant(integer_range(result_type)[0], result_type)], pa.bool_())
        overflow = _call("if_else", [zero, constant(False, pa.bool_()),
                                     _call("if_else", [minus_one, lowest, differs], pa.bool_())], pa.bool_())
    return wrapped, _problem_if(overflow.expression, _overflow(result_type, symbol))


def _decimal_arithmetic(function: str, left: Typed, right: Typed, result_type: pa.DataType) -> Typed:
    """``left <function> right`` on decimals, of Spark's result type: computed exactly (in
    decimal256 where the exact result has more than 38 digits), rounded half up to the result's
    scale, and Spark's NUMERIC_VALUE_OUT_OF_RANGE where it does not fit."""
    problem = _first_problem([left.problem, _reached(
        pc.Expression._call("is_valid", [left.expression]), right.problem)])
    left, right = replace(left, problem=None), replace(right, problem=None)
    exact_type = pc.call_function(function, [pa.array([], pa.decimal256(left.type.precision, left.type.scale)),
                                             pa.array([], pa.decimal256(right.type.precision, right.type.scale))]).type
    if exact_type.precision <= MAX_DECIMAL_PRECISION:  # Arrow's type is Spark's
        result = _call(function, [left, right], exact_type)
        if result.type != result_type:
            result = _call("cast", [result], result_type, pc.CastOptions.safe(result_type))
        return replace(result, problem=problem)
    wide = [_call("cast", [t], pa.decimal256(t.type.precision, t.type.scale),
                  pc.CastOptions.safe(pa.decimal256(t.type.precision, t.type.scale))) for t in (left, right)]
    exact = _call(function, wide, exact_type)
    if exact_type.scale > result_type.scale:
        exact = _call("round", [exact], exact_type, pc.RoundOptions(result_type.scale, "half_towards_infinity"))
    limit = constant(decimal.Decimal(10) ** (result_type.precision - result_type.scale), exact_type)
    fits = _call("less", [_call("abs", [exact], exact_type), limit], pa.bool_())
    fitted = _call("if_else", [fits, exact, constant(decimal.Decimal(0), exact_type)], exact_type)
    result = _call("cast", [fitted], result_type, pc.CastOptions(result_type, allow_decimal_truncate=True))
    message = (f"[NUMERIC_VALUE_OUT_OF_RANGE] a result does not fit {describe(result_type)} (Spark in ANSI mode; "
               "try_add / try_multiply are not supported here)")
    out_of_range = _problem_if(_call("invert", [fits], pa.bool_()).expression, message)
    return replace(result, problem=_first_problem([problem, out_of_range]))


def _lowest_overflows(result: Typed, value: Typed) -> Typed:
    """-x and abs(x) of an integer: the type's lowest value has no positive counterpart."""
    if not is_integral(value.type):
        return result
    lowest = _call("equal", [value, constant(integer_range(value.type)[0], value.type)], pa.bool_())
    message = f"[ARITHMETIC_OVERFLOW] {describe(value.type)} overflow (Spark in ANSI mode)"
    return replace(result, problem=_first_problem([result.problem, _problem_if(lowest.expression, message)]))


def _cast_overflow(item: Typed, target: pa.DataType) -> Typed:
    """A number (a float already truncated) to be cast to integer type ``target``: where it is
    NaN, infinite or out of range, Spark's CAST_OVERFLOW, and a 0 that casts safely."""
    source = item.type
    lo, hi = integer_range(target)
    if is_integral(source):
        s_lo, s_hi = integer_range(source)
        if s_lo >= lo and s_hi <= hi:
            return item
        lo, hi = max(lo, s_lo), min(hi, s_hi)
        fits = _call("and", [_call("greater_equal", [item, constant(lo, source)], pa.bool_()),
                             _call("less_equal", [item, constant(hi, source)], pa.bool_())], pa.bool_())
    else:  # -2**k and 2**k are exact floats
        fits = _call("and", [_call("greater_equal", [item, constant(float(lo), source)], pa.bool_()),
                             _call("less", [item, constant(float(hi + 1), source)], pa.bool_())], pa.bool_())
    message = f"[CAST_OVERFLOW] a {describe(source)} value cannot be cast to {describe(target)} due to an overflow"
    fitted = _call("if_else", [fits, item, constant(0, source)], source)
    problem = _problem_if(_call("invert", [fits], pa.bool_()).expression, message)
    return replace(fitted, problem=_first_problem([item.problem, problem]))


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

    def compile(self, root: exp.Expression) -> Typed:
        results: dict[int, Typed] = {}
        # (node, None) until its children are pushed, then (node, (its rule, its children))
        stack: list[tuple[Any, tuple[Rule, list] | None]] = [(root, None)]
        while stack:
            node, expanded = stack.pop()
            if expanded is None:
                number = literal_number(node)
                if number is not None:  # a literal as a whole, its sign and type suffix included
                    results[id(node)] = _number(self, node, number)
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
        return _raising(results[id(root)])

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

    # -- leaves -------------------------------------------------------------------------------

    def _column(self, node, parts: list[str]) -> Typed:
        try:
            top, path, data_type = resolve(self.schema, parts)
        except ColumnError as exc:
            self.fail(node, str(exc))
        self.columns.add(top)
        return Typed(pc.field(*path), data_type)

    def _dot(self, node) -> Typed:
        names, current = [], node
        while isinstance(current, exp.Dot):
            if not isinstance(current.expression, exp.Identifier):
                self.fail(node, "only struct fields can follow a '.'")
            names.append(current.expression.name)
            current = current.this
        if not isinstance(current, exp.Column) or isinstance(current.this, exp.Star):
            self.fail(node, "only struct fields can follow a '.'")
        return self._column(node, [p.name for p in current.parts] + names[::-1])

    # -- logic --------------------------------------------------------------------------------

    def _booleans(self, node, args: list[Typed], what: str) -> list[Typed]:
        out = []
        for arg in args:
            if is_null(arg.type):
                arg = constant(None, pa.bool_())
            elif not is_boolean(arg.type):
                self.fail(node, f"{what} needs true/false operands, not {describe(arg.type)}")
            out.append(arg)
        return out

    def _logical(self, node, args: list[Typed]) -> Typed:
        function = "and_kleene" if isinstance(node, exp.And) else "or_kleene"
        operands = level = self._booleans(node, args, "AND" if isinstance(node, exp.And) else "OR")
        while len(level) > 1:  # a balanced tree: depth log2(n), not n
            level = [_call(function, level[i:i + 2], pa.bool_()) if i + 1 < len(level) else level[i]
                     for i in range(0, len(level), 2)]
        if isinstance(node, exp.And):  # Spark evaluates an operand while the ones before are not false
            problem = _in_order(operands, lambda o: pc.Expression._call(
                "coalesce", [o.expression, pc.scalar(True)]))
        else:
            problem = _in_order(operands, lambda o: pc.Expression._call("invert", [_is_true(o)]))
        return replace(level[0], problem=problem)

    def _is(self, node, value: Typed) -> Typed:
        if isinstance(node.expression, exp.Null):
            if value.is_constant:
                return constant(value.value is None, pa.bool_())
            return _call("is_null", [value], pa.bool_())
        (value,) = self._booleans(node, [value], "IS TRUE / IS FALSE")
        if not node.expression.this:
            value = _call("invert", [value], pa.bool_())
        return _call("coalesce", [value, constant(False, pa.bool_())], pa.bool_())

    # -- types --------------------------------------------------------------------------------

    def _reinterpret(self, node, item: Typed, target: pa.DataType, what: str = "compare") -> Typed:
        """A string constant read as a value of ``target``'s kind, as Spark casts a string that
        is compared with a date, a number, ..."""
        text = item.value
        try:
            if is_floating(target):  # Spark's CAST to double: '1.1d', '0x1p3', 'NaN', '-inf', ... (cast_value)
                return constant(cast_value(text, pa.string(), pa.float64()), pa.float64())
            if is_numeric(target):
                return constant(*number_literal(text))
            if is_date(target):
                return constant(parse_date(text), pa.date32())
            if is_timestamp(target):
                return constant(parse_timestamp(text), pa.timestamp("us"))
            if is_boolean(target):
                return constant(parse_boolean(text), pa.bool_())
            if is_binary(target):
                return constant(text.encode("utf-8"), pa.binary())
        except ValueError as exc:
            self.fail(node, f"cannot {what} {describe(target)} with {text!r}: {exc}")
        return item

    def _fits(self, item: Typed, target: pa.DataType):
        """The constant converted to ``target`` if that loses nothing, else None."""
        source = item.type
        same_kind = (
            (is_numeric(source) and is_numeric(target)) or (is_string(source) and is_string(target))
            or (is_binary(source) and is_binary(target)) or (is_boolean(source) and is_boolean(target))
            or ((is_date(source) or is_timestamp(source)) and (is_date(target) or is_timestamp(target))))
        if not same_kind:
            return None
        try:
            converted = cast_value(item.value, source, target)
            if is_numeric(source):  # Python compares int, float and Decimal exactly
                return converted if converted == item.value else None
            back = cast_value(converted, target, source)
        except ValueError:
            return None
        if isinstance(back, float) and isinstance(item.value, float) and math.isnan(back) and math.isnan(item.value):
            return converted
        if back != item.value or type(back) is not type(item.value):
            return None
        return converted

    def _unify(self, node, items: list[Typed], what: str) -> tuple[list[Typed], pa.DataType]:
        """Bring ``items`` to one type, Spark's way: the type of the non-constant operands,
        with constants converted to it where they fit and the type widened where not."""
        target = None
        for item in items:
            # Where the result is a value (COALESCE, CASE), a number literal keeps its own type
            # (Spark: coalesce(int_column, 2.0e0) is a double); in a comparison it need not.
            if item.is_constant and not (what == "combine" and is_numeric(item.type)):
                continue
            widened = item.type if target is None else common_type(target, item.type)
            if widened is None:
                self.fail(node, f"cannot {what} {describe(target)} with {describe(item.type)}; "
                                "CAST one side to the other's type")
            target = widened
        constants = [i for i in items if i.is_constant and not is_null(i.type)]
        if target is None and constants:
            typed = [c for c in constants if not is_string(c.type)]
            target = (typed or constants)[0].type
        if target is None:
            return items, pa.null()
        changed = True
        while changed:
            changed = False
            for item in constants:
                if item.value is None:
                    continue
                candidate = self._reinterpret(node, item, target, what) if is_string(item.type) else item
                if what == "compare" and is_floating(candidate.type) and (is_integral(target) or is_decimal(target)):
                    # Spark compares an integer or decimal with a float or double as doubles
                    # (ANSI coercion), which rounds bigints beyond 2**53 and long decimals: a
                    # whole-number double is not the integer it looks like
                    if target != pa.float64():
                        target, changed = pa.float64(), True
                    continue
                if self._fits(candidate, target) is None:
                    widened = common_type(target, candidate.type)
                    if widened is None:
                        self.fail(node, f"cannot {what} {describe(target)} with {_literal_text(item)}")
                    if widened != target:
                        target, changed = widened, True
        return [self._convert(node, item, target) for item in items], target

    def _convert(self, node, item: Typed, target: pa.DataType) -> Typed:
        """``item`` as a ``target`` value after :meth:`_unify` chose ``target``."""
        if item.type == target:
            return item
        if item.is_constant:
            if item.value is None:
                return constant(None, target)
            candidate = self._reinterpret(node, item, target) if is_string(item.type) else item
            return self._cast(node, candidate, target)
        return self._cast(node, item, target)

    def _cast(self, node, item: Typed, target: pa.DataType, explicit: bool = False) -> Typed:
        if item.type == target:
            return item
        if item.is_constant:
            if is_floating(item.type) and is_decimal(target) and item.value is not None \
                    and not math.isfinite(item.value):
                return constant(None, target)  # Spark: NaN and +-inf as a decimal are NULL, even in ANSI mode
            try:
                return constant(cast_value(item.value, item.type, target), target)
            except ValueError as exc:
                self.fail(node, f"cannot cast {_literal_text(item)} to {describe(target)}: {exc}")
        source = item.type
        try:
            pa.array([], type=source).cast(target)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            self.fail(node, f"cannot cast {describe(source)} to {describe(target)}")
        if is_floating(source) and is_string(target):
            self.fail(node, f"cannot cast {describe(source)} to {describe(target)}: Spark writes such numbers as "
                            "Java does (100.0, 1.0E20, NaN, Infinity), which is not implemented here")
        if is_string(source) and is_floating(target):
            # Java's Double.parseDouble, as Spark: surrounding whitespace and a d / f suffix are
            # allowed (Arrow reads the rest, inf and nan words included; hex numbers it refuses)
            item = _call("utf8_trim", [item], source, pc.TrimOptions("".join(map(chr, range(33)))))
            item = _call("replace_substring_regex", [item], source, pc.ReplaceSubstringOptions(
                r"^([+-]?(?:[0-9]+[.]?[0-9]*|[.][0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]$", r"\1"))
        if is_floating(source) and is_decimal(target):  # NaN and +-inf become NULL, as in Spark
            item = _call("if_else", [_call("is_finite", [item], pa.bool_()), item, constant(None, source)], source)
        if is_decimal(source) and is_floating(target):
            # Arrow's decimal-to-double is not correctly rounded (404.46 becomes
            # 404.46000000000004); through text it is, like Java's BigDecimal.doubleValue
            text = _call("cast", [item], pa.string(), pc.CastOptions.safe(pa.string()))
            return _call("cast", [text], target, pc.CastOptions.safe(target))
        options = pc.CastOptions.safe(target)
        if is_integral(source) and is_floating(target):  # rounds beyond 2**53, as Spark does
            options = pc.CastOptions(target, allow_float_truncate=True)
        if explicit:
            # Spark truncates to integers and rounds half away from zero to a smaller scale.
            # Arrow's own truncating casts skip the range check, so round first, then cast
            # safely: a value out of the target's range fails as in Spark's ANSI mode.
            if is_integral(target) and is_floating(source):
                item = _cast_overflow(_call("trunc", [item], source), target)
            elif is_integral(target) and is_integral(source):
                item = _cast_overflow(item, target)
            elif is_integral(target) and is_decimal(source):
                item = _call("round", [item], source, pc.RoundOptions(0, "towards_zero"))
            elif is_decimal(target) and (is_floating(source) or (is_decimal(source) and source.scale > target.scale)):
                item = _call("round", [item], source, pc.RoundOptions(target.scale, "half_towards_infinity"))
            if is_date(target) or is_timestamp(target):
                options = pc.CastOptions(target, allow_time_truncate=True)
        return _call("cast", [item], target, options)

    # -- operators ----------------------------------------------------------------------------

    def _compare(self, node, function: str, left: Typed, right: Typed) -> Typed:
        for side in (left, right):
            if not _comparable(side.type):
                self.fail(node, f"cannot compare {describe(side.type)} values")
        (left, right), target = self._unify(node, [left, right], "compare")
        if is_null(target) or (left.is_constant and left.value is None) or (right.is_constant and right.value is None):
            return _null_bool()
        result = _float_compare(function, left, right) if is_floating(target) else _call(
            function, [left, right], pa.bool_())
        # Spark does not evaluate the right operand of a NULL left one
        problem = _first_problem([left.problem, _reached(
            pc.Expression._call("is_valid", [left.expression]), right.problem)])
        return self._fold(replace(result, problem=problem), [left, right])

    def _null_safe_equal(self, node, left: Typed, right: Typed) -> Typed:
        for side in (left, right):
            if not _comparable(side.type):
                self.fail(node, f"cannot compare {describe(side.type)} values")
        (left, right), target = self._unify(node, [left, right], "compare")
        left_null = left.is_constant and left.value is None
        right_null = right.is_constant and right.value is None
        if left_null and right_null:
            return constant(True, pa.bool_())
        if left_null or right_null:
            other = right if left_null else left
            if other.is_constant:
                return constant(other.value is None, pa.bool_())
            return _call("is_null", [other], pa.bool_())
        both_valid = _call("and", [_call("is_valid", [left], pa.bool_()), _call("is_valid", [right], pa.bool_())],
                           pa.bool_())
        both_null = _call("and", [_call("is_null", [left], pa.bool_()), _call("is_null", [right], pa.bool_())],
                          pa.bool_())
        equal = (_float_compare("equal", left, right) if is_floating(target)
                 else _call("equal", [left, right], pa.bool_()))
        return self._fold(_call("if_else", [both_valid, equal, both_null], pa.bool_()), [left, right])

    def _in(self, node, value: Typed, options: list[Typed]) -> Typed:
        for item in [value, *options]:
            if not _comparable(item.type):
                self.fail(node, f"cannot compare {describe(item.type)} values")
        if not all(o.is_constant for o in options):
            level = [self._compare(node, "equal", value, o) for o in options]
            while len(level) > 1:
                level = [_call("or_kleene", level[i:i + 2], pa.bool_()) if i + 1 < len(level) else level[i]
                         for i in range(0, len(level), 2)]
            return level[0]
        (value, *options), target = self._unify(node, [value, *options], "compare")
        if is_null(target) or (value.is_constant and value.value is None):
            return _null_bool()
        present = [o.value for o in options if o.value is not None]
        if is_floating(target):
            hit = _float_in(value, present, target)
        else:
            hit = _call("is_in", [value], pa.bool_(),
                        pc.SetLookupOptions(pa.array(present, type=target), skip_nulls=True))
        if len(present) < len(options):  # NULL in the list: no match is unknown, not false
            hit = _call("if_else", [hit, constant(True, pa.bool_()), _null_bool()], pa.bool_())
        result = _call("if_else", [_call("is_null", [value], pa.bool_()), _null_bool(), hit], pa.bool_())
        return self._fold(result, [value])

    def _like(self, node, value: Typed, pattern: Typed) -> Typed:
        if not pattern.is_constant or not (is_string(pattern.type) or is_null(pattern.type)):
            self.fail(node, "the pattern of LIKE must be a string literal")
        if is_null(value.type) or pattern.value is None:
            return _null_bool()
        if not is_string(value.type):
            if not (is_integral(value.type) or is_decimal(value.type) or is_date(value.type)):
                self.fail(node, f"LIKE needs a string, not {describe(value.type)}")
            value = self._cast(node, value, pa.string())
        options = pc.MatchSubstringOptions(pattern.value, ignore_case=isinstance(node, exp.ILike))
        result = _call("match_like", [value], pa.bool_(), options)
        if node.args.get("negate"):
            result = _call("invert", [result], pa.bool_())
        return self._fold(result, [value])

    def _arithmetic(self, node, op: str, left: Typed, right: Typed) -> Typed:
        symbol = _OPERATORS[op]
        for side in (left, right):
            if not (is_numeric(side.type) or is_null(side.type)):
                self.fail(node, f"{symbol} needs numbers, not {describe(side.type)}")
        if is_null(left.type) and is_null(right.type):
            return constant(None, pa.null())
        if is_null(left.type):
            left = constant(None, right.type)
        if is_null(right.type):
            right = constant(None, left.type)
        types = arithmetic_types(op, left.type, right.type)
        if types is None:
            self.fail(node, f"{symbol} needs integral numbers, not {describe(left.type)} and {describe(right.type)}")
        left_type, right_type, result_type = types
        left, right = self._cast(node, left, left_type), self._cast(node, right, right_type)
        function = _ARROW_FUNCTION[op]
        if op in ("add", "subtract", "multiply") and is_decimal(result_type):
            if op == "multiply" and left_type.precision + right_type.precision + 1 > 76:
                self.fail(node, f"* of {describe(left_type)} and {describe(right_type)} needs more than 76 digits "
                                "before Spark rounds it, which is not implemented here; CAST an operand to a "
                                "smaller decimal")
            return self._fold(_decimal_arithmetic(function, left, right, result_type), [left, right])
        arrow_type = pc.call_function(function, [pa.array([], left_type), pa.array([], right_type)]).type
        # Spark skips the other operand of a NULL one (the divisor is evaluated first)
        first, second = (right, left) if op in ("divide", "remainder", "int_divide") else (left, right)
        operands_problem = _first_problem([first.problem, _reached(
            pc.Expression._call("is_valid", [first.expression]), second.problem)])
        left, right = replace(left, problem=None), replace(right, problem=None)
        problem = None
        if op in ("divide", "remainder", "int_divide"):  # Spark (ANSI): DIVIDE_BY_ZERO / REMAINDER_BY_ZERO
            zero = _call("equal", [right, constant(0, right_type)], pa.bool_())
            one = decimal.Decimal(1).scaleb(-right_type.scale) if is_decimal(right_type) else 1  # fits the type
            divisor = _call("if_else", [zero, constant(one, right_type), right], right_type)
            value = _call(function, [left, divisor], arrow_type)
            result = _call("if_else", [zero, constant(None, arrow_type), value], arrow_type)
            problem = _problem_if(_call("and", [zero, _call("is_valid", [left], pa.bool_())], pa.bool_()).expression,
                                  _REMAINDER_BY_ZERO if op == "remainder" else _DIVIDE_BY_ZERO)
            if op == "int_divide":  # the one quotient a bigint cannot hold
                lowest = constant(integer_range(pa.int64())[0], pa.int64())
                overflow = _call("and", [_call("equal", [left, lowest], pa.bool_()),
                                         _call("equal", [right, constant(-1, pa.int64())], pa.bool_())], pa.bool_())
                problem = _first_problem([problem, _problem_if(overflow.expression, _overflow(pa.int64(), "div"))])
        elif is_integral(result_type):
            result, problem = _integral_arithmetic(function, left, right, result_type)
        else:
            result = _call(function, [left, right], arrow_type)
        if result.type != result_type:
            result = _call("cast", [result], result_type, pc.CastOptions.safe(result_type))
        result = replace(result, problem=_first_problem([operands_problem, problem]))
        return self._fold(result, [left, right])

    def _negate(self, node, value: Typed) -> Typed:
        if is_null(value.type):
            return value
        if not is_numeric(value.type):
            self.fail(node, f"unary - needs a number, not {describe(value.type)}")
        if value.is_constant and value.value is not None:
            # (-2147483648 is an int literal: literal_number reads it whole); the lowest value of
            # an integer type has no negation in it, Spark's ARITHMETIC_OVERFLOW where evaluated
            if not (is_integral(value.type) and value.value == integer_range(value.type)[0]):
                return constant(-value.value, value.type)
        return _lowest_overflows(_call("negate", [value], value.type), value)

    def _concat(self, node, args: list[Typed]) -> Typed:
        parts = []
        for arg in args:
            if is_null(arg.type):
                return constant(None, pa.string())
            if not is_string(arg.type):
                if not (is_integral(arg.type) or is_decimal(arg.type) or is_date(arg.type) or is_boolean(arg.type)):
                    self.fail(node, f"cannot concatenate a {describe(arg.type)} value; CAST it to string")
                arg = self._cast(node, arg, pa.string())
            parts.append(arg)
        joined = _call("binary_join_element_wise", parts + [constant("", pa.string())], pa.string(),
                       pc.JoinOptions("emit_null"))
        return self._fold(joined, parts)

    def _case(self, node, branches: list[tuple[Typed, Typed]], default: Typed | None) -> Typed:
        values = [v for _, v in branches] + ([default] if default is not None else [])
        values, target = self._unify(node, values, "combine")
        if is_null(target):
            return constant(None, target)
        conditions = self._booleans(node, [c for c, _ in branches], "WHEN / IF")
        names = [str(i) for i in range(len(conditions))]
        chosen = _call("make_struct", conditions, pa.struct([(n, pa.bool_()) for n in names]),
                       pc.MakeStructOptions(names))
        # case_when takes the first true condition; a NULL condition counts as false, as in Spark
        result = _call("case_when", [chosen, *values], target)
        problems, reached = [], None
        for condition, value in zip(conditions, values):
            problems.append(_reached(reached, condition.problem))
            problems.append(_reached(_both(reached, _is_true(condition)), value.problem))
            reached = _both(reached, pc.Expression._call("invert", [_is_true(condition)]))
        if default is not None:
            problems.append(_reached(reached, values[-1].problem))
        return self._fold(replace(result, problem=_first_problem(problems)), [*conditions, *values])

    def _case_expression(self, node, args: list[Typed]) -> Typed:
        subject = args.pop(0) if node.this is not None else None
        has_default = node.args.get("default") is not None
        default = args.pop() if has_default else None
        branches = [(args[i], args[i + 1]) for i in range(0, len(args), 2)]
        if subject is not None:
            branches = [(self._compare(node, "equal", subject, when), then) for when, then in branches]
        return self._case(node, branches, default)

    # -- constant folding ---------------------------------------------------------------------

    def _fold(self, result: Typed, inputs: list[Typed]) -> Typed:
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


# -- the handlers: one a node class ----------------------------------------------------------

_HANDLERS = Handlers()


def _number(compiler: Compiler, node, text: str) -> Typed:
    try:
        return constant(*sql_number(text))
    except ValueError as exc:
        compiler.fail(node, str(exc))


@_HANDLERS.register(exp.Paren, children=operand)
def _parenthesized(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return args[0]


@_HANDLERS.register(exp.Column, children=no_children)
def _column(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._column(node, [p.name for p in node.parts])


@_HANDLERS.register(exp.Dot, children=no_children)
def _dot(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._dot(node)


@_HANDLERS.register(exp.Literal, children=no_children)
def _string(compiler: Compiler, node, args: list[Typed]) -> Typed:
    """A string literal (the walk takes a number literal whole: :func:`literal_number`)."""
    return constant(node.this, pa.string())


@_HANDLERS.register(exp.HexString, children=no_children)
def _hex(compiler: Compiler, node, args: list[Typed]) -> Typed:
    try:
        return constant(hex_literal(node.this), pa.binary())
    except ValueError as exc:
        compiler.fail(node, str(exc))


@_HANDLERS.register(exp.Boolean, children=no_children)
def _boolean(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return constant(bool(node.this), pa.bool_())


@_HANDLERS.register(exp.Null, children=no_children)
def _null(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return constant(None, pa.null())


def _chain(compiler: Compiler, node) -> list:
    return chain_operands(node, type(node))


@_HANDLERS.register(exp.And, exp.Or, children=_chain)
def _and_or(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._logical(node, args)


@_HANDLERS.register(exp.Not, children=operand)
def _negation(compiler: Compiler, node, args: list[Typed]) -> Typed:
    (operand,) = compiler._booleans(node, args, "NOT")
    if operand.is_constant:
        return constant(None if operand.value is None else not operand.value, pa.bool_())
    return _call("invert", [operand], pa.bool_())


@_HANDLERS.register_each(_COMPARISONS, children=operands)
def _comparison(function: str, compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._compare(node, function, args[0], args[1])


@_HANDLERS.register(exp.NullSafeEQ, exp.NullSafeNEQ, children=operands)
def _null_safe(compiler: Compiler, node, args: list[Typed]) -> Typed:
    result = compiler._null_safe_equal(node, args[0], args[1])
    return _call("invert", [result], pa.bool_()) if isinstance(node, exp.NullSafeNEQ) else result


@_HANDLERS.register_each(_ARITHMETIC, children=operands)
def _arithmetic_operator(op: str, compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._arithmetic(node, op, args[0], args[1])


@_HANDLERS.register(exp.Neg, children=operand)
def _minus(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._negate(node, args[0])


def _in_children(compiler: Compiler, node) -> list:
    if node.args.get("query"):
        compiler.fail(node, "IN with a subquery is not supported (list the values instead)")
    if node.args.get("unnest") or node.args.get("field"):
        compiler.fail(node, "IN needs a list of values in parentheses")
    if not node.expressions:
        compiler.fail(node, "IN needs at least one value")
    return [node.this, *node.expressions]


@_HANDLERS.register(exp.In, children=_in_children)
def _in_list(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._in(node, args[0], args[1:])


def _between_children(compiler: Compiler, node) -> list:
    if node.args.get("symmetric"):
        compiler.fail(node, "BETWEEN SYMMETRIC is not supported")
    return [node.this, node.args["low"], node.args["high"]]


@_HANDLERS.register(exp.Between, children=_between_children)
def _between(compiler: Compiler, node, args: list[Typed]) -> Typed:
    low = compiler._compare(node, "greater_equal", args[0], args[1])
    high = compiler._compare(node, "less_equal", args[0], args[2])
    return _call("and_kleene", [low, high], pa.bool_())


def _is_children(compiler: Compiler, node) -> list:
    if not isinstance(node.expression, (exp.Null, exp.Boolean)):
        compiler.fail(node, "IS must be followed by [NOT] NULL, TRUE or FALSE")
    return [node.this]


@_HANDLERS.register(exp.Is, children=_is_children)
def _is(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._is(node, args[0])


def _escape_children(compiler: Compiler, node) -> list:
    escape = node.expression
    if not (isinstance(node.this, (exp.Like, exp.ILike)) and isinstance(escape, exp.Literal)
            and escape.is_string and escape.this == "\\"):
        compiler.fail(node, "LIKE ... ESCAPE is only supported with the default escape character '\\'")
    return [node.this]


@_HANDLERS.register(exp.Escape, children=_escape_children)
def _escape(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return args[0]


def _like_children(compiler: Compiler, node) -> list:
    if isinstance(node.expression, (exp.Any, exp.All)):
        compiler.fail(node, "LIKE ANY / LIKE ALL is not supported")
    return [node.this, node.expression]


@_HANDLERS.register(exp.Like, exp.ILike, children=_like_children)
def _like(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._like(node, args[0], args[1])


def _cast_children(compiler: Compiler, node) -> list:
    if node.args.get("format"):
        compiler.fail(node, "CAST ... FORMAT is not supported")
    return [node.this]


@_HANDLERS.register(exp.Cast, children=_cast_children)  # TryCast too: Spark's CAST
def _cast(compiler: Compiler, node, args: list[Typed]) -> Typed:
    try:
        target = arrow_type_of(node.args["to"])
    except ValueError as exc:
        compiler.fail(node, str(exc))
    return compiler._cast(node, args[0], target, explicit=True)


@_HANDLERS.register(exp.Coalesce, children=listed)
def _coalesce(compiler: Compiler, node, args: list[Typed]) -> Typed:
    values, target = compiler._unify(node, args, "combine")
    if is_null(target):
        return constant(None, target)
    return replace(_call("coalesce", values, target), problem=_in_order(
        values, lambda v: pc.Expression._call("is_null", [v.expression])))


@_HANDLERS.register(exp.DPipe, children=operands)
@_HANDLERS.register(exp.Concat, children=listed)
def _concatenation(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._concat(node, args)


def _if_children(compiler: Compiler, node) -> list:
    return [node.this, node.args["true"]] + ([node.args["false"]] if node.args.get("false") else [])


@_HANDLERS.register(exp.If, children=_if_children)
def _if(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._case(node, [(args[0], args[1])], args[2] if len(args) > 2 else None)


def _case_children(compiler: Compiler, node) -> list:
    children = [node.this] if node.this is not None else []
    for branch in node.args.get("ifs") or []:
        children += [branch.this, branch.args["true"]]
    return children + ([node.args["default"]] if node.args.get("default") is not None else [])


@_HANDLERS.register(exp.Case, children=_case_children)
def _case(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return compiler._case_expression(node, args)


@_HANDLERS.register(exp.IsNan, children=operand)
def _isnan(compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = args
    if is_string(value.type) and value.is_constant:  # isnan('NaN'): Spark casts it to double
        value = compiler._cast(node, value, pa.float64())
    if not is_numeric(value.type) and not is_null(value.type):
        compiler.fail(node, f"isnan needs a number, not {describe(value.type)}")
    if not is_floating(value.type):  # Spark: isnan(NULL) and isnan of an integer or decimal are false
        return constant(False, pa.bool_())
    nan = _is_nan(value)
    return nan if nan.is_constant else _call("coalesce", [nan, constant(False, pa.bool_())], pa.bool_())


@_HANDLERS.register(exp.Abs, children=operand)
def _abs(compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = args
    if not is_numeric(value.type) and not is_null(value.type):
        compiler.fail(node, f"abs needs a number, not {describe(value.type)}")
    return value if is_null(value.type) else compiler._fold(
        _lowest_overflows(_call("abs", [value], value.type), value), [value])


@_HANDLERS.register_each(_STRING_FUNCTIONS, children=operand)
def _string_function(function: str, compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = args
    if not is_string(value.type) and not is_null(value.type):
        compiler.fail(node, f"{function_name(node)} needs a string, not {describe(value.type)}")
    return value if is_null(value.type) else compiler._fold(_call(function, [value], value.type), [value])


@_HANDLERS.register(exp.Length, children=operand)
def _length(compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = args
    if is_null(value.type):
        return constant(None, pa.int32())
    if not (is_string(value.type) or is_binary(value.type)):
        compiler.fail(node, f"length needs a string or binary value, not {describe(value.type)}")
    function = "utf8_length" if is_string(value.type) else "binary_length"
    result = _call(function, [value], pa.int32() if value.type in (pa.string(), pa.binary()) else pa.int64())
    return compiler._fold(compiler._cast(node, result, pa.int32()), [value])


_REGISTERED = merged([_HANDLERS])
_RULES = dict(_REGISTERED)  # by a node's own class: the walk's first, cheap look-up


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


def non_deterministic_message(function: str) -> str:
    """Why a condition or value calling ``function`` is refused (the Spark path says the same)."""
    return f"non-deterministic function {function}() is not allowed (each evaluation could give another result)"

