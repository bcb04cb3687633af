"""SQL literals read exactly as Spark SQL reads them (issue 18), on the engine-free path.

The expected values and types are Spark 4's own (``SELECT <literal>, typeof(<literal>)``, written
out here); tests/spark/test_sql_literals.py checks the same corpus against a live Spark.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from acid_source.errors import InvalidArgumentError
from acid_source.expressions import parse_condition, parse_value_expression
from acid_source.expressions.parsing import tokenize

ONE_ROW = pa.table({"_": pa.array([0], pa.int8())})


def evaluate(text: str):
    """The value and Arrow type of a constant SQL expression."""
    value = parse_value_expression(text, ONE_ROW.schema, argument="x")
    column = ds.dataset(ONE_ROW).to_table(columns={"v": value.expression}).column("v")
    return column[0].as_py(), value.type


STRINGS = [  # (SQL text, the string Spark reads)
    ("'n''8'", "n'8"),
    ("'it''s; ok'", "it's; ok"),
    ("''''", "'"),
    ("''", ""),
    ("'a' 'b'", "ab"),
    ("'a' \"b\"", "ab"),
    ("'a'/* c */'b' -- d\n 'c'", "abc"),
    ('"a""b"', 'a"b'),
    ('"it\'s"', "it's"),
    ("'a\\'b'", "a'b"),
    ("'a\\\\b'", "a\\b"),
    ("'\\\"'", '"'),
    ("'\\u0041'", "A"),
    ("'\\U0001F600'", "\U0001F600"),
    ("'\\uD83D\\uDE00'", "\U0001F600"),
    ("'\\uD83D'", "?"),
    ("'\\U00110000'", "??"),
    ("'\\u00'", "u00"),
    ("'\\u00zz'", "u00zz"),
    ("'\\101'", "A"),
    ("'\\1011'", "A1"),
    ("'\\400'", "400"),
    ("'\\0'", "\x00"),
    ("'\\00'", "\x000"),
    ("'\\8'", "8"),
    ("'\\z'", "z"),
    ("'a\\nb'", "a\nb"),
    ("'\\b\\r\\t\\Z'", "\b\r\t\x1a"),
    ("'a\\%b'", "a\\%b"),
    ("'a\\_b'", "a\\_b"),
    ("r'a\\nb'", "a\\nb"),
    ("R'a\\'", "a\\"),
    ("R\"x'y\"", "x'y"),
    ("R'a''b'", "ab"),
    ("'a' r'\\n' \"c\"", "a\\nc"),
    ("'--not a comment /* nor this */'", "--not a comment /* nor this */"),
    ("'line\nbreak'", "line\nbreak"),
]

NUMBERS = [  # (SQL text, Spark's value, Spark's type)
    ("1", 1, pa.int32()),
    ("-2147483648", -2147483648, pa.int32()),
    ("2147483648", 2147483648, pa.int64()),
    ("- 1", -1, pa.int32()),
    ("1L", 1, pa.int64()),
    ("1l", 1, pa.int64()),
    ("-9223372036854775808L", -9223372036854775808, pa.int64()),
    ("9223372036854775807L", 9223372036854775807, pa.int64()),
    ("1S", 1, pa.int16()),
    ("-32768S", -32768, pa.int16()),
    ("1Y", 1, pa.int8()),
    ("-128Y", -128, pa.int8()),
    ("1D", 1.0, pa.float64()),
    ("-0.0D", -0.0, pa.float64()),
    (".5D", 0.5, pa.float64()),
    ("5.D", 5.0, pa.float64()),
    ("5.e2D", 500.0, pa.float64()),
    ("1e-3D", 0.001, pa.float64()),
    ("1e-400D", 0.0, pa.float64()),
    ("1F", 1.0, pa.float32()),
    ("0.1F", 0.10000000149011612, pa.float32()),
    ("16777217F", 16777216.0, pa.float32()),
    ("3.40282346E38F", 3.4028234663852886e+38, pa.float32()),
    ("1.00000005960464477539062500001F", 1.0000001192092896, pa.float32()),
    ("1BD", Decimal("1"), pa.decimal128(1, 0)),
    ("1.50BD", Decimal("1.50"), pa.decimal128(3, 2)),
    ("-1.5BD", Decimal("-1.5"), pa.decimal128(2, 1)),
    ("1E2BD", Decimal("100"), pa.decimal128(3, 0)),
    ("1.5E2BD", Decimal("150"), pa.decimal128(3, 0)),
    ("1.5e-5BD", Decimal("0.000015"), pa.decimal128(6, 6)),
    ("0.000BD", Decimal("0.000"), pa.decimal128(3, 3)),
    ("1E10", 10000000000.0, pa.float64()),
    ("1e+5", 100000.0, pa.float64()),
    ("1.e2", 100.0, pa.float64()),
    ("1e-400", 0.0, pa.float64()),
    ("1.5", Decimal("1.5"), pa.decimal128(2, 1)),
    (".5", Decimal("0.5"), pa.decimal128(1, 1)),
    ("1.", Decimal("1"), pa.decimal128(1, 0)),
    ("0.001", Decimal("0.001"), pa.decimal128(3, 3)),
    ("00.10", Decimal("0.10"), pa.decimal128(2, 2)),
    ("12345678901234567890123456789012345678", Decimal("12345678901234567890123456789012345678"),
     pa.decimal128(38, 0)),
]

OTHERS = [  # typed literals: (SQL text, Spark's value, Spark's type)
    ("X'0A0b'", b"\n\x0b", pa.binary()),
    ("X'A'", b"\n", pa.binary()),
    ("x 'ff'", b"\xff", pa.binary()),
    ("X\"0a\"", b"\n", pa.binary()),
    ("X''", b"", pa.binary()),
    ("DATE'2024-01-01'", dt.date(2024, 1, 1), pa.date32()),
    ("DATE '2024-1-1'", dt.date(2024, 1, 1), pa.date32()),
    ("DATE \"2024-01-02\"", dt.date(2024, 1, 2), pa.date32()),
    ("/* a /* nested */ comment */ 1", 1, pa.int32()),
    ("1 /* x */ + 2", 3, pa.int32()),
]

REFUSED = [  # Spark refuses these too (its error in the comment)
    "128Y",  # INVALID_NUMERIC_LITERAL_RANGE
    "32768S",
    "9223372036854775808L",
    "-9223372036854775809L",
    "1e400",
    "1e400D",
    "1.79769313486231575E308D",
    "3.4028235E38F",
    "3.5e38F",
    "123456789012345678901234567890123456789",  # DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION
    "1234567890123456789012345678901234567.89",
    "X'zz'",  # INVALID_TYPED_LITERAL
    "X'f''f'",
    "'a' 'b",  # unterminated
    "/* open",
    "`open",
]


@pytest.mark.parametrize("text, expected", STRINGS)
def test_string_literals(text, expected):
    assert evaluate(text) == (expected, pa.string())


@pytest.mark.parametrize("text, expected, arrow_type", NUMBERS + OTHERS)
def test_typed_literals(text, expected, arrow_type):
    value, value_type = evaluate(text)
    assert value_type == arrow_type
    assert value == expected and type(value) is type(expected)
    if isinstance(expected, float):
        assert str(value) == str(expected)  # -0.0 too


@pytest.mark.parametrize("text", REFUSED)
def test_literals_spark_refuses_are_refused(text):
    with pytest.raises(InvalidArgumentError) as info:
        parse_value_expression(text, ONE_ROW.schema, argument="x")
    assert info.value.argument == "x" and "line 1, column" in str(info.value)


def test_the_issue_rows():
    """Issue 18: on a table holding n8 and n'8, name = 'n''8' matches n'8 only."""
    table = pa.table({"name": ["n8", "n'8", "it's; ok", "its; ok"]})
    for text, expected in [("name = 'n''8'", ["n'8"]), ("name = 'n' '8'", ["n8"]),
                           ("name IN ('it''s; ok')", ["it's; ok"]), ("name = 'it\\'s; ok'", ["it's; ok"])]:
        condition = parse_condition(text, table.schema)
        assert table.filter(condition.expression).column("name").to_pylist() == expected


def test_the_issue_on_an_acid_table(tmp_path):
    """The engine-free DML and scan read the literal as Spark does (no Spark here)."""
    from acid_source import create_table
    from acid_source.table import AcidTable

    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int32()), ("name", pa.string())]))
    table = AcidTable.load(path)
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "name": ["n8", "n'8", "x"]}))
    assert [r["id"] for r in table.scan(rowFilter="name = 'n''8'").toArrow().to_pylist()] == [2]
    assert table.delete("name = 'n''8'")["numDeletedRows"] == 1
    table.update("id = 3", {"name": "'it''s; ok'"})
    assert sorted(tuple(r.values()) for r in AcidTable.load(path).toArrow().to_pylist()) == [(1, "n8"), (3, "it's; ok")]


@pytest.mark.parametrize("text, kinds", [
    # Spark's lexer takes the longest match; a word starting with digits is a name
    ("1Lx", [("VAR", "1Lx")]),
    ("1E2L", [("VAR", "1E2L")]),
    ("1_000", [("VAR", "1_000")]),
    ("0x1F", [("VAR", "0x1F")]),
    ("2.3W", [("NUMBER", "2"), ("DOT", "."), ("VAR", "3W")]),
    ("1.5e", [("NUMBER", "1"), ("DOT", "."), ("VAR", "5e")]),
    ("a.1", [("VAR", "a"), ("NUMBER", ".1")]),
    ("12.0D 34.E2+0.12", [("NUMBER", "12.0D"), ("DCOLON", "::"), ("DOUBLE", "DOUBLE"), ("NUMBER", "34.E2"),
                          ("PLUS", "+"), ("NUMBER", "0.12")]),
    ("`a``b` `c d`", [("IDENTIFIER", "a`b"), ("IDENTIFIER", "c d")]),
    ("-- a \\\nstill the comment\n1", [("NUMBER", "1")]),
    ("'a'\n'b' DATE 'c' 'd'", [("STRING", "ab"), ("DATE", "DATE"), ("STRING", "c"), ("STRING", "d")]),
])
def test_tokens_follow_sparks_lexer(text, kinds):
    tokens, failed_at = tokenize(text)
    assert failed_at is None
    assert [(t.token_type.name, t.text) for t in tokens] == kinds


def test_token_offsets_are_the_texts():
    text = "x = 'it''s'\n  AND `a b` = 1.5BD"
    tokens, _ = tokenize(text)
    assert [text[t.start:t.end + 1] for t in tokens if t.token_type.name != "DCOLON"] == [
        "x", "=", "'it''s'", "AND", "`a b`", "=", "1.5BD", "1.5BD"]
    string = tokens[2]
    assert (string.line, string.col) == (1, 11)  # where it ends, as sqlglot counts
    number = tokens[-3]
    assert (number.line, number.col) == (2, 19)


@pytest.mark.parametrize("text, offset", [("a = 'open", 4), ("a = `open", 4), ("a /* open /* */", 2),
                                          ("'x' + \"y", 6)])
def test_unterminated_text_is_reported_where_it_starts(text, offset):
    assert tokenize(text)[1] == offset


def test_concat_ws_joins_with_its_separator_and_leaves_nulls_out():
    """Spark's concat_ws (it was compiled as concat: sqlglot's ConcatWs is a Concat)."""
    from acid_source.expressions import parse_value_expression

    table = pa.table({"a": ["x", None, "z"], "b": ["1", "2", None], "n": [1, 2, 3]})

    def values(text):
        return ds.dataset(table).to_table(columns={"r": parse_value_expression(text, table.schema).expression}) \
            .column("r").to_pylist()

    assert values("concat_ws('-', a, b)") == ["x-1", "2", "z"]
    assert values("concat_ws(',', a, NULL, b)") == ["x,1", "2", "z"]
    assert values("concat_ws('/', n, a)") == ["1/x", "2", "3/z"]
    assert values("concat_ws(NULL, a)") == [None, None, None]
    assert values("concat_ws('-')") == ["", "", ""]
