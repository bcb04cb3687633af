"""Three-valued (Kleene) logic and the conditional expressions: AND / OR / NOT, ``IS [NOT]
NULL|TRUE|FALSE``, ``COALESCE``, ``IF`` and ``CASE``. Arrow computes every operand on every
row; Spark evaluates an operand only where the ones before it let it (AND stops at false, CASE
at the first true condition), so the runtime errors of an operand count only there."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from .comparisons import compare
from .conversions import unify
from .dispatch import Handlers, chain_operands, listed, operand
from .sqltypes import describe, is_boolean, is_null
from .typed import Typed, arrow_call, balanced, both, call, constant, first_problem, fold, in_order, is_true, reached

if TYPE_CHECKING:
    from .compiler import Compiler

HANDLERS = Handlers()


def _booleans(compiler: Compiler, node, args: list[Typed], what: str) -> list[Typed]:
    out = []
    for arg in args:
        if is_null(arg.type):
            arg = constant(None, pa.bool_())
        elif not is_boolean(arg.type):
            compiler.fail(node, f"{what} needs true/false operands, not {describe(arg.type)}")
        out.append(arg)
    return out


def _chain(compiler: Compiler, node) -> list:
    return chain_operands(node, type(node))


@HANDLERS.register(exp.And, exp.Or, children=_chain)
def _and_or(compiler: Compiler, node, args: list[Typed]) -> Typed:
    function = "and_kleene" if isinstance(node, exp.And) else "or_kleene"
    operands = _booleans(compiler, node, args, "AND" if isinstance(node, exp.And) else "OR")
    joined = balanced(function, operands)
    if isinstance(node, exp.And):  # Spark evaluates an operand while the ones before are not false
        problem = in_order(operands, lambda o: arrow_call("coalesce", [o.expression, pc.scalar(True)]))
    else:
        problem = in_order(operands, lambda o: arrow_call("invert", [is_true(o)]))
    return replace(joined, problem=problem)


@HANDLERS.register(exp.Not, children=operand)
def _not(compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = _booleans(compiler, node, args, "NOT")
    if value.is_constant:
        return constant(None if value.value is None else not value.value, pa.bool_())
    return call("invert", [value], pa.bool_())


def _is_children(compiler: Compiler, node) -> list:
    if not isinstance(node.expression, (exp.Null, exp.Boolean)):
        compiler.fail(node, "IS must be followed by [NOT] NULL, TRUE or FALSE")
    return [node.this]


@HANDLERS.register(exp.Is, children=_is_children)
def _is(compiler: Compiler, node, args: list[Typed]) -> Typed:
    (value,) = args
    if isinstance(node.expression, exp.Null):
        if value.is_constant:
            return constant(value.value is None, pa.bool_())
        return call("is_null", [value], pa.bool_())
    (value,) = _booleans(compiler, node, [value], "IS TRUE / IS FALSE")
    if not node.expression.this:
        value = call("invert", [value], pa.bool_())
    return call("coalesce", [value, constant(False, pa.bool_())], pa.bool_())


@HANDLERS.register(exp.Coalesce, children=listed)
def _coalesce(compiler: Compiler, node, args: list[Typed]) -> Typed:
    values, target = unify(compiler, node, args, "combine")
    if is_null(target):
        return constant(None, target)
    return replace(call("coalesce", values, target), problem=in_order(
        values, lambda v: arrow_call("is_null", [v.expression])))


def _if_children(compiler: Compiler, node) -> list:
    return [node.this, node.args["true"]] + ([node.args["false"]] if node.args.get("false") else [])


@HANDLERS.register(exp.If, children=_if_children)
def _if(compiler: Compiler, node, args: list[Typed]) -> Typed:
    return _first_true(compiler, node, [(args[0], args[1])], args[2] if len(args) > 2 else None)


def _case_children(compiler: Compiler, node) -> list:
    children = [node.this] if node.this is not None else []
    for branch in node.args.get("ifs") or []:
        children += [branch.this, branch.args["true"]]
    return children + ([node.args["default"]] if node.args.get("default") is not None else [])


@HANDLERS.register(exp.Case, children=_case_children)
def _case(compiler: Compiler, node, args: list[Typed]) -> Typed:
    subject = args.pop(0) if node.this is not None else None
    has_default = node.args.get("default") is not None
    default = args.pop() if has_default else None
    branches = [(args[i], args[i + 1]) for i in range(0, len(args), 2)]
    if subject is not None:
        branches = [(compare(compiler, node, "equal", subject, when), then) for when, then in branches]
    return _first_true(compiler, node, branches, default)


def _first_true(compiler: Compiler, node, branches: list[tuple[Typed, Typed]], default: Typed | None) -> Typed:
    """The value of the first branch whose condition is true, else ``default`` (CASE, IF)."""
    values = [v for _, v in branches] + ([default] if default is not None else [])
    values, target = unify(compiler, node, values, "combine")
    if is_null(target):
        return constant(None, target)
    conditions = _booleans(compiler, node, [c for c, _ in branches], "WHEN / IF")
    names = [str(i) for i in range(len(conditions))]
    chosen = call("make_struct", conditions, pa.struct([(n, pa.bool_()) for n in names]),
                  pc.MakeStructOptions(names))
    # case_when takes the first true condition; a NULL condition counts as false, as in Spark
    result = call("case_when", [chosen, *values], target)
    problems, so_far = [], None
    for condition, value in zip(conditions, values):
        problems.append(reached(so_far, condition.problem))
        problems.append(reached(both(so_far, is_true(condition)), value.problem))
        so_far = both(so_far, arrow_call("invert", [is_true(condition)]))
    if default is not None:
        problems.append(reached(so_far, values[-1].problem))
    return fold(replace(result, problem=first_problem(problems)), [*conditions, *values])
