"""String functions: ``||`` / ``concat``, ``concat_ws``, ``lower``, ``upper`` and ``length``;
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
