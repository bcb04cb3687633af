"""Casts and conversions, Spark's way: bringing operands to one type (:func:`unify`: a literal
takes the type of what it is compared with, numbers widen as Spark widens them), reading a
string literal as that type, and CAST (truncating to integers, rounding decimals half away from
zero, failing as Spark's ANSI mode does where a value does not fit)."""

from __future__ import annotations

import decimal
import math
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from .dispatch import Handlers
from .sqltypes import (
    arrow_type_of,
    as_decimal,
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
from .typed import Typed, call, constant, first_problem, problem_if
from .values import cast_value, number_literal, parse_boolean, parse_date, parse_timestamp

if TYPE_CHECKING:
    from .compiler import Compiler

HANDLERS = Handlers()


def unify(compiler: Compiler, node, items: list[Typed], what: str) -> tuple[list[Typed], pa.DataType]:
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
            compiler.fail(node, f"cannot {what} {describe(target)} with {describe(item.type)}; "
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
            candidate = _reinterpret(compiler, node, item, target, what) if is_string(item.type) else item
            if what == "compare" and is_floating(candidate.type) and (is_integral(target) or is_decimal(target)):
                # Spark compares an integer or decimal with a float or double as doubles
                # (ANSI coercion), which rounds bigints beyond 2**53 and long decimals: a
                # whole-number double is not the integer it looks like
                if target != pa.float64():
                    target, changed = pa.float64(), True
                continue
            if _fits(candidate, target) is None:
                widened = common_type(target, candidate.type)
                if widened is None:
                    compiler.fail(node, f"cannot {what} {describe(target)} with {_literal_text(item)}")
                if widened != target:
                    target, changed = widened, True
    return [_convert(compiler, node, item, target) for item in items], target


def _convert(compiler: Compiler, node, item: Typed, target: pa.DataType) -> Typed:
    """``item`` as a ``target`` value after :func:`unify` chose ``target``."""
    if item.type == target:
        return item
    if item.is_constant:
        if item.value is None:
            return constant(None, target)
        candidate = _reinterpret(compiler, node, item, target) if is_string(item.type) else item
        return cast(compiler, node, candidate, target)
    return cast(compiler, node, item, target)


def _reinterpret(compiler: Compiler, node, item: Typed, target: pa.DataType, what: str = "compare") -> Typed:
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
        compiler.fail(node, f"cannot {what} {describe(target)} with {text!r}: {exc}")
    return item


def _fits(item: Typed, target: pa.DataType):
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


def _literal_text(typed: Typed) -> str:
    if typed.value is None:
        return "NULL"
    if is_string(typed.type):
        return repr(typed.value)
    return cast_value(typed.value, typed.type, pa.string())


def cast(compiler: Compiler, node, item: Typed, target: pa.DataType, explicit: bool = False) -> Typed:
    if item.type == target:
        return item
    if item.is_constant:
        if is_floating(item.type) and is_decimal(target) and item.value is not None \
                and not math.isfinite(item.value):
            return constant(None, target)  # Spark: NaN and +-inf as a decimal are NULL, even in ANSI mode
        try:
            return constant(cast_value(item.value, item.type, target), target)
        except ValueError as exc:
            compiler.fail(node, f"cannot cast {_literal_text(item)} to {describe(target)}: {exc}")
    source = item.type
    try:
        pa.array([], type=source).cast(target)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        compiler.fail(node, f"cannot cast {describe(source)} to {describe(target)}")
    if is_floating(source) and is_string(target):
        compiler.fail(node, f"cannot cast {describe(source)} to {describe(target)}: Spark writes such numbers as "
                            "Java does (100.0, 1.0E20, NaN, Infinity), which is not implemented here")
    if is_string(source) and is_floating(target):
        # Java's Double.parseDouble, as Spark: surrounding whitespace and a d / f suffix are
        # allowed (Arrow reads the rest, inf and nan words included; hex numbers it refuses)
        item = call("utf8_trim", [item], source, pc.TrimOptions("".join(map(chr, range(33)))))
        item = call("replace_substring_regex", [item], source, pc.ReplaceSubstringOptions(
            r"^([+-]?(?:[0-9]+[.]?[0-9]*|[.][0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]$", r"\1"))
    if is_floating(source) and is_decimal(target):  # NaN and +-inf become NULL, as in Spark
        item = call("if_else", [call("is_finite", [item], pa.bool_()), item, constant(None, source)], source)
    if is_decimal(source) and is_floating(target):
        # Arrow's decimal-to-double is not correctly rounded (404.46 becomes
        # 404.46000000000004); through text it is, like Java's BigDecimal.doubleValue
        text = call("cast", [item], pa.string(), pc.CastOptions.safe(pa.string()))
        return call("cast", [text], target, pc.CastOptions.safe(target))
    if is_decimal(source) and is_string(target):
        return _decimal_text(item)
    if is_string(source) and (is_integral(target) or is_decimal(target)):
        return _number_from_text(item, target)
    if is_decimal(target) and (is_decimal(source) or is_integral(source)):
        return to_decimal(item, target, f"[NUMERIC_VALUE_OUT_OF_RANGE] a {describe(source)} value does not fit "
                                        f"{describe(target)} (Spark in ANSI mode; try_cast is not supported here)")
    options = pc.CastOptions.safe(target)
    if is_integral(source) and is_floating(target):  # rounds beyond 2**53, as Spark does
        options = pc.CastOptions(target, allow_float_truncate=True)
    if explicit:
        # Spark truncates to integers and rounds half away from zero to a smaller scale.
        # Arrow's own truncating casts skip the range check, so round first, then cast
        # safely: a value out of the target's range fails as in Spark's ANSI mode.
        if is_integral(target) and is_floating(source):
            item = _cast_overflow(call("trunc", [item], source), target)
        elif is_integral(target) and is_integral(source):
            item = _cast_overflow(item, target)
        elif is_integral(target) and is_decimal(source):
            if source.precision == source.scale:  # no integer digit for Arrow to round into
                source = pa.decimal256(source.precision + 1, source.scale)
                item = call("cast", [item], source, pc.CastOptions.safe(source))
            item = _cast_overflow(call("round", [item], source, pc.RoundOptions(0, "towards_zero")), target)
        elif is_decimal(target) and (is_floating(source) or (is_decimal(source) and source.scale > target.scale)):
            item = call("round", [item], source, pc.RoundOptions(target.scale, "half_towards_infinity"))
        if is_date(target) or is_timestamp(target):
            options = pc.CastOptions(target, allow_time_truncate=True)
    return call("cast", [item], target, options)


def to_decimal(item: Typed, target: pa.DataType, message: str) -> Typed:
    """A decimal or integer as decimal ``target``, as Spark changes a decimal's precision:
    rounded half up to the target's scale, and ``message`` as the problem of the rows whose
    value then has more integer digits than ``target`` holds (computed there as 0, so that the
    cast never fails on a row Spark does not evaluate)."""
    source = as_decimal(item.type)
    rounds = source.scale > target.scale
    wide = pa.decimal256(min(76, source.precision + 1), source.scale)  # rounding may carry a digit
    value = call("cast", [item], wide, pc.CastOptions.safe(wide))
    if rounds:
        value = call("round", [value], wide, pc.RoundOptions(target.scale, "half_towards_infinity"))
    problem = None
    if source.precision - source.scale + int(rounds) > target.precision - target.scale:
        limit = constant(decimal.Decimal(10) ** (target.precision - target.scale), wide)
        fits = call("less", [call("abs", [value], wide), limit], pa.bool_())
        value = call("if_else", [fits, value, constant(decimal.Decimal(0), wide)], wide)
        problem = problem_if(call("invert", [fits], pa.bool_()).expression, message)
    result = call("cast", [value], target, pc.CastOptions(target, allow_decimal_truncate=True))
    return replace(result, problem=first_problem([item.problem, problem]))


def store_assigned(compiler: Compiler, node, item: Typed, target: pa.DataType, column: str) -> Typed:
    """A value to be stored in ``column`` of type ``target``, as Spark's INSERT and UPDATE store
    it (spark.sql.storeAssignmentPolicy=ANSI, the default): a number becomes the column's
    number type as CAST does it (a decimal rounded half up to the column's scale, a fraction
    truncated to an integer), and a value out of the column's range fails. Other kinds are
    left to the caller's storage check."""
    source = item.type
    if source == target or not (is_numeric(source) and is_numeric(target)):
        return item
    if is_decimal(target) and (is_decimal(source) or is_integral(source)):
        return to_decimal(item, target, f"[CAST_OVERFLOW_IN_TABLE_INSERT] a {describe(source)} value does not fit "
                                        f"the {describe(target)} column {column} (Spark in ANSI mode)")
    return cast(compiler, node, item, target, explicit=True)


_WHITESPACE = "".join(map(chr, range(33)))  # what Spark trims around a number it reads (chars <= ' ')
_INTEGER_TEXT = r"^[+-]?[0-9]{1,39}$"
_DECIMAL_TEXT = r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"


def _number_from_text(item: Typed, target: pa.DataType) -> Typed:
    """A string column as an integer or a decimal, Spark's way in ANSI mode: surrounding
    whitespace trimmed; an integer is digits with a sign (no point, no exponent), a decimal
    Java's BigDecimal grammar, rounded half up to the type. Text that is no such number, or an
    integer out of the type's range, is Spark's CAST_INVALID_INPUT (a decimal out of range
    NUMERIC_VALUE_OUT_OF_RANGE) - on the rows Spark evaluates only: the others read 0."""
    integral = is_integral(target)
    wide = pa.decimal256(40, 0) if integral else pa.decimal256(76, 38)
    trimmed = call("utf8_trim", [item], pa.string(), pc.TrimOptions(_WHITESPACE))
    pattern = _INTEGER_TEXT if integral else _DECIMAL_TEXT
    valid = call("match_substring_regex", [trimmed], pa.bool_(), pc.MatchSubstringOptions(pattern))
    invalid = call("invert", [call("coalesce", [valid, constant(True, pa.bool_())], pa.bool_())], pa.bool_())
    text = call("if_else", [invalid, constant("0", pa.string()), trimmed], pa.string())
    number = call("cast", [text], wide, pc.CastOptions.safe(wide))
    message = f"[CAST_INVALID_INPUT] a string value cannot be cast to {describe(target)} (Spark in ANSI mode)"
    problem = problem_if(invalid.expression, message)
    if not integral:
        out_of_range = (f"[NUMERIC_VALUE_OUT_OF_RANGE] a string value does not fit {describe(target)} "
                        "(Spark in ANSI mode)")
        result = to_decimal(replace(number, problem=None), target, out_of_range)
        return replace(result, problem=first_problem([item.problem, problem, result.problem]))
    lo, hi = integer_range(target)
    fits = call("and", [call("greater_equal", [number, constant(decimal.Decimal(lo), wide)], pa.bool_()),
                        call("less_equal", [number, constant(decimal.Decimal(hi), wide)], pa.bool_())], pa.bool_())
    fitted = call("if_else", [fits, number, constant(decimal.Decimal(0), wide)], wide)
    result = call("cast", [fitted], target, pc.CastOptions.safe(target))
    too_big = problem_if(call("invert", [fits], pa.bool_()).expression, message)
    return replace(result, problem=first_problem([item.problem, problem, too_big]))


def _decimal_text(item: Typed) -> Typed:
    """A decimal as Spark writes it: plain digits with the type's scale (``0.0000000001``,
    ``0.0000000000``), where Arrow writes very small values as Java's ``toString`` does
    (``1E-10``, ``0E-10``: their integer part is 0, and their digits the unscaled value)."""
    scale = item.type.scale
    text = call("cast", [item], pa.string(), pc.CastOptions.safe(pa.string()))
    if scale == 0:
        return text
    scientific = call("match_substring", [text], pa.bool_(), pc.MatchSubstringOptions("E"))
    digits = call("replace_substring_regex", [text], pa.string(),
                  pc.ReplaceSubstringOptions(r"^-?([0-9])[.]?([0-9]*)E.*$", r"\1\2"))
    padded = call("utf8_lpad", [digits], pa.string(), pc.PadOptions(scale, "0"))
    negative = call("starts_with", [text], pa.bool_(), pc.MatchSubstringOptions("-"))
    sign = call("if_else", [negative, constant("-0.", pa.string()), constant("0.", pa.string())], pa.string())
    plain = call("binary_join_element_wise", [sign, padded, constant("", pa.string())], pa.string())
    return call("if_else", [scientific, plain, text], pa.string())


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
        fits = call("and", [call("greater_equal", [item, constant(lo, source)], pa.bool_()),
                            call("less_equal", [item, constant(hi, source)], pa.bool_())], pa.bool_())
    elif is_decimal(source):  # a whole number already (rounded towards zero)
        if source.precision - source.scale < len(str(hi)):
            return item
        fits = call("and", [call("greater_equal", [item, constant(decimal.Decimal(lo), source)], pa.bool_()),
                            call("less_equal", [item, constant(decimal.Decimal(hi), source)], pa.bool_())],
                    pa.bool_())
        message = f"[CAST_OVERFLOW] a {describe(source)} value cannot be cast to {describe(target)} due to an overflow"
        fitted = call("if_else", [fits, item, constant(decimal.Decimal(0), source)], source)
        problem = problem_if(call("invert", [fits], pa.bool_()).expression, message)
        return replace(fitted, problem=first_problem([item.problem, problem]))
    else:  # -2**k and 2**k are exact floats
        fits = call("and", [call("greater_equal", [item, constant(float(lo), source)], pa.bool_()),
                            call("less", [item, constant(float(hi + 1), source)], pa.bool_())], pa.bool_())
    message = f"[CAST_OVERFLOW] a {describe(source)} value cannot be cast to {describe(target)} due to an overflow"
    fitted = call("if_else", [fits, item, constant(0, source)], source)
    problem = problem_if(call("invert", [fits], pa.bool_()).expression, message)
    return replace(fitted, problem=first_problem([item.problem, problem]))


def _cast_children(compiler: Compiler, node) -> list:
    if node.args.get("format"):
        compiler.fail(node, "CAST ... FORMAT is not supported")
    return [node.this]


@HANDLERS.register(exp.Cast, children=_cast_children)  # TryCast too: Spark's CAST
def _explicit_cast(compiler: Compiler, node, args: list[Typed]) -> Typed:
    try:
        target = arrow_type_of(node.args["to"])
    except ValueError as exc:
        compiler.fail(node, str(exc))
    return cast(compiler, node, args[0], target, explicit=True)
