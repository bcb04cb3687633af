"""The compiler's dispatch (acid_source.expressions.dispatch): one rule per sqlglot node class,
so a handler added for a class another module already handles fails at import, not by
silently shadowing the other."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from sqlglot import exp

from acid_source.expressions import parse_value_expression
from acid_source.expressions.dispatch import Handlers, merged, no_children, operands
from acid_source.expressions.parsing import parse_expression


def _build(compiler, node, args):
    return args[0]


def test_register_and_register_each_bind_each_class_to_its_handler():
    handlers = Handlers()
    handlers.register(exp.Paren, exp.Null, children=no_children)(_build)
    handlers.register_each({exp.Add: "add", exp.Sub: "subtract"}, children=operands)(
        lambda op, compiler, node, args: op)
    table = merged([handlers])
    assert set(table) == {exp.Paren, exp.Null, exp.Add, exp.Sub}
    assert table[exp.Null].build is _build and table[exp.Null].children is no_children
    assert table[exp.Sub].build(None, None, []) == "subtract"


def test_one_module_cannot_register_a_node_class_twice():
    handlers = Handlers()
    handlers.register(exp.EQ, children=operands)(_build)
    with pytest.raises(ValueError, match="two rules for sqlglot's EQ"):
        handlers.register(exp.EQ, children=operands)(_build)


def test_two_modules_cannot_both_handle_a_node_class():
    first, second = Handlers(), Handlers()
    first.register(exp.Like, children=operands)(_build)
    second.register(exp.Like, exp.ILike, children=operands)(_build)
    with pytest.raises(ValueError, match="two rules for sqlglot's Like"):
        merged([first, second])


def test_a_subclass_without_a_rule_takes_its_base_class_rule():
    # Spark's dialect parses CAST as TryCast, a subclass of Cast: the Cast handler compiles it
    assert type(parse_expression("CAST(n AS BIGINT)", "expression")) is exp.TryCast
    value = parse_value_expression("CAST(n AS BIGINT)", pa.schema([("n", pa.int32())]))
    assert value.type == pa.int64()
    row = ds.dataset(pa.table({"n": pa.array([7, None], pa.int32())})).to_table(columns={"v": value.expression})
    assert row.column("v").to_pylist() == [7, None]
