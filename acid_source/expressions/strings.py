"""String functions: ``||`` / ``concat``, ``concat_ws``, ``lower``, ``upper``, ``substring``,
``trim`` and ``length``;
numbers, dates and booleans are cast to text where Spark casts them implicitly."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from .conversions import cast
from .dispatch import Handlers, function_name, listed, operand, operands
from .sqltypes import describe, is_binary, is_boolean, is_date, is_decimal, is_integral, is_null, is_string
from .typed import Typed, call, constant, fold

if TYPE_CHECKING:
    from .compiler import Compiler

HANDLERS = Handlers()

_STRING_FUNCTIONS: dict[type[exp.Expression], str] = {exp.Lower: "utf8_lower", exp.Upper: "utf8_upper"}


def _as_text(compiler: Compiler, node, arg: Typed) -> Typed:
    """A value to concatenate, as text (the casts Spark makes implicitly)."""
    if is_string(arg.type):
        return arg
    if not (is_integral(arg.type) or is_decimal(arg.type) or is_date(arg.type) or is_boolean(arg.type)):
        compiler.fail(node, f"cannot concatenate a {describe(arg.type)} value; CAST it to string")
    return cast(compiler, node, arg, pa.string())


@HANDLERS.register(exp.DPipe, children=operands)
@HANDLERS.register(exp.Concat, children=listed)
def _concat(compiler: Compiler, node, args: list[Typed]) -> Typed:
    parts = []
    for arg in args:  # in order: a NULL before a value that cannot be text makes the result NULL
        if is_null(arg.type):
            return constant(None, pa.string())
        parts.append(_as_text(compiler, node, arg))
    joined = call("binary_join_element_wise", parts + [constant("", pa.string())], pa.string(),
                  pc.JoinOptions("emit_null"))
    return fold(joined, parts)


@HANDLERS.register(exp.ConcatWs, children=listed)
def _concat_ws(compiler: Compiler, node, args: list[Typed]) -> Typed:
    """``concat_ws(sep, s, ...)``: the values joined by ``sep``, NULL ones left out (Spark's
    rule; none left: the empty string); a NULL separator gives NULL."""
    if not args:
        compiler.fail(node, "concat_ws needs a separator")
    separator, *values = args
    if is_null(separator.type):
        return constant(None, pa.string())
    separator = _as_text(compiler, node, separator)
    parts = [_as_text(compiler, node, value) for value in values if not is_null(value.type)]
    joined = call("binary_join_element_wise", parts + [separator], pa.string(), pc.JoinOptions("skip"))
    return fold(joined, [separator, *parts])


@HANDLERS.register_each(_STRING_FUNCTIONS, children=operand)
def _string_function(function: str, compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = args
    if not is_string(value.type) and not is_null(value.type):
        compiler.fail(node, f"{function_name(node)} needs a string, not {describe(value.type)}")
    return value if is_null(value.type) else fold(call(function, [value], value.type), [value])


def _substring_children(compiler: Compiler, node) -> list:
    return [node.this] + [node.args[k] for k in ("start", "length") if node.args.get(k) is not None]


@HANDLERS.register(exp.Substring, children=_substring_children)
def _substring(compiler: Compiler, node, args: list[Typed]) -> Typed:
    """``substring(s, pos[, len])`` / ``substr``, Spark's way (``UTF8String.substringSQL``):
    characters counted from 1, ``pos`` 0 as 1, a negative ``pos`` counted from the end, and
    ``len`` characters from there (none when ``len`` <= 0). Engine-free ``pos`` and ``len``
    are integer literals."""
    value, *bounds = args
    numbers = []
    for bound in bounds:
        if not (bound.is_constant and (is_integral(bound.type) or is_null(bound.type))):
            compiler.fail(node, "substring takes integer literals as position and length here")
        numbers.append(bound.value)
    if is_null(value.type) or any(n is None for n in numbers):
        return constant(None, pa.string())
    text = _as_text(compiler, node, value)
    pos, length = int(numbers[0]), (int(numbers[1]) if len(numbers) > 1 else None)
    start: int
    stop: int | None
    if length is not None and length <= 0:
        start, stop = 0, 0
    elif pos >= 0:
        start = max(pos - 1, 0)
        stop = None if length is None else start + length
    else:  # counted from the end; an end at or past the last character is no end
        start = pos
        stop = None if length is None or pos + length >= 0 else pos + length
    options = pc.SliceOptions(start, stop) if stop is not None else pc.SliceOptions(start)
    return fold(call("utf8_slice_codeunits", [text], pa.string(), options), [text])


_TRIMS = {"LEADING": "utf8_ltrim", "TRAILING": "utf8_rtrim", "BOTH": "utf8_trim"}


def _trim_children(compiler: Compiler, node) -> list:
    return [node.this] + ([node.args["expression"]] if node.args.get("expression") is not None else [])


@HANDLERS.register(exp.Trim, children=_trim_children)
def _trim(compiler: Compiler, node, args: list[Typed]) -> Typed:
    """``trim`` / ``ltrim`` / ``rtrim`` (and ``trim(BOTH | LEADING | TRAILING chars FROM s)``):
    Spark removes spaces (U+0020 only), or every character of ``chars`` (a literal here)."""
    value, *chars = args
    characters = " "
    if chars:
        if not (chars[0].is_constant and (is_string(chars[0].type) or is_null(chars[0].type))):
            compiler.fail(node, "trim takes a string literal as the characters to remove here")
        if chars[0].value is None:
            return constant(None, pa.string())
        characters = chars[0].value
    if is_null(value.type):
        return constant(None, pa.string())
    text = _as_text(compiler, node, value)
    position = str(node.args.get("position") or "BOTH").upper()
    if not characters:
        return text
    return fold(call(_TRIMS[position], [text], pa.string(), pc.TrimOptions(characters)), [text])


@HANDLERS.register(exp.Length, children=operand)
def _length(compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = args
    if is_null(value.type):
        return constant(None, pa.int32())
    if not (is_string(value.type) or is_binary(value.type)):
        compiler.fail(node, f"length needs a string or binary value, not {describe(value.type)}")
    function = "utf8_length" if is_string(value.type) else "binary_length"
    result = call(function, [value], pa.int32() if value.type in (pa.string(), pa.binary()) else pa.int64())
    return fold(cast(compiler, node, result, pa.int32()), [value])
