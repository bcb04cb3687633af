"""SQL literals mean what Spark SQL means (issue 18): through ``acid_source.sql`` (Spark runs the
condition and values as the user wrote them) and through the engine-free ``AcidTable`` (our own
lexer and compiler read them).

The expectation is always Spark's own evaluation of the literal (``spark.sql("SELECT <literal>,
...")``, one job for a whole corpus), never a value computed by acidorc; each DML path must then
have stored, kept or deleted exactly that.
"""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from acid_source import create_table
from acid_source.expressions import parse_value_expression
from acid_source.spark.sql import sql
from acid_source.table import AcidTable

pytestmark = pytest.mark.spark

STRINGS = [
    "'n''8'", "'it''s; ok'", "''''", "''", "'a' 'b'", "'a' \"b\"", "'a'/* c */'b' -- d\n 'c'", '"a""b"',
    '"it\'s"', "'a\\'b'", "'a\\\\b'", "'\\\"'", "'\\u0041'", "'\\U0001F600'", "'\\uD83D\\uDE00'", "'\\uD83D'",
    "'\\U00110000'", "'\\u00'", "'\\u00zz'", "'\\101'", "'\\1011'", "'\\400'", "'\\0'", "'\\00'", "'\\8'", "'\\z'",
    "'a\\nb'", "'\\b\\r\\t\\Z'", "'a\\%b'", "'a\\_b'", "r'a\\nb'", "R'a\\'", "R\"x'y\"", "R'a''b'",
    "'a' r'\\n' \"c\"", "'--not a comment /* nor this */'", "'line\nbreak'", "'semi;colon'", "'`tick`'",
    "'tab\\there'", "'\\\\%'", "'ü\\u00fc'",
]

TYPED = [
    "1", "-2147483648", "2147483648", "- 1", "1L", "1l", "-9223372036854775808L", "9223372036854775807L",
    "1S", "-32768S", "1Y", "-128Y", "1D", "-0.0D", ".5D", "5.D", "5.e2D", "1e-3D", "1e-400D", "1F", "0.1F",
    "16777217F", "3.40282346E38F", "1.00000005960464477539062500001F", "1BD", "1.50BD", "-1.5BD", "1E2BD",
    "1.5E2BD", "1.5e-5BD", "0.000BD", "1E10", "1e+5", "1.e2", "1e-400", "1.5", ".5", "1.", "0.001", "00.10",
    "12345678901234567890123456789012345678", "-0.5", "X'0A0b'", "X'A'", "x 'ff'", "X\"0a\"", "X''",
    "DATE'2024-01-01'", "DATE '2024-1-1'", "DATE \"2024-01-02\"", "TIMESTAMP'2024-01-01 10:00:00'",
    "TIMESTAMP '2024-01-01 10:00:00.123456+02:00'", "TIMESTAMP_NTZ'2024-01-01 10:00:00'",
    "/* a /* nested */ comment */ 7",
]


def spark_values(spark, literals: list[str]) -> tuple[list, list[str]]:
    """Spark's values and type names of ``literals``: one SELECT, one job."""
    columns = ", ".join(f"{text} AS c{k}" for k, text in enumerate(literals))
    frame = spark.sql(f"SELECT {columns}")
    values = [column[0].as_py() for column in frame.toArrow().columns]  # timestamps with their zone
    return values, [f.dataType.simpleString() for f in frame.schema.fields]


def new_path(tmp_path) -> str:
    return str(tmp_path / uuid.uuid4().hex)


def rows(path: str) -> list[tuple]:
    return sorted(tuple(r.values()) for r in AcidTable.load(path).toArrow().to_pylist())


def sqlglot_reading(text: str) -> str | None:
    """What sqlglot's own tokenizer makes of a string literal (issue 18: ``'n''8'`` is ``n8`` to
    it), or None when that is not a plain string."""
    try:
        node = sqlglot.parse_one(text, dialect="spark")
    except sqlglot.errors.SqlglotError:
        return None
    parts = node.expressions if isinstance(node, exp.Concat) else [node]
    if all(isinstance(p, exp.Literal) and p.is_string for p in parts):
        return "".join(p.this for p in parts)
    return None


def test_literals_mean_what_spark_reads(spark, tmp_path):
    """One table for both corpora: row k's string column gets STRINGS[k] (CASE id ...) and every
    row the TYPED literals, one column each (typed as Spark types them); decoy rows share the ids
    and must be left alone. One SELECT, then one UPDATE and one DELETE per path."""
    expected, types = spark_values(spark, STRINGS + TYPED)
    strings, typed, typed_types = expected[:len(STRINGS)], expected[len(STRINGS):], types[len(STRINGS):]
    assert set(types[:len(STRINGS)]) == {"string"}
    for text, spark_type in zip(TYPED, typed_types):  # the engine-free reading types literals as Spark does
        ours = _spark_name(parse_value_expression(text, pa.schema([])).type)
        # but TIMESTAMP '...': wall-clock time, UTC against a zoned column (expressions/__init__.py)
        assert ours == spark_type or (ours, spark_type) == ("timestamp_ntz", "timestamp"), text

    # a decoy: same id, another string, no typed values. Where sqlglot alone reads the literal
    # otherwise, that reading: issue 18's DELETE ... WHERE name = 'n''8' deleted n8, and
    # SET name = 'it''s; ok' stored "its; ok"
    misread = [sqlglot_reading(text) for text in STRINGS]
    decoys = [(k, m if m is not None and m != v else v + "~") for k, (v, m) in enumerate(zip(strings, misread))]
    assert (0, "n8") in decoys and (1, "its; ok") in decoys
    ddl = "id int, s string, " + ", ".join(f"c{k} {t}" for k, t in enumerate(typed_types))
    assign = {"s": "CASE id " + " ".join(f"WHEN {k} THEN {text}" for k, text in enumerate(STRINGS)) + " END",
              **{f"c{k}": text for k, text in enumerate(TYPED)}}
    each = ("(" + " OR ".join(f"(id = {k} AND s = {text})" for k, text in enumerate(STRINGS)) + ") AND "
            + " AND ".join(f"c{k} = {text}" for k, text in enumerate(TYPED)))
    by_spark, by_arrow = new_path(tmp_path), new_path(tmp_path)
    for path in (by_spark, by_arrow):
        create_table(path, ddl)
        schema = AcidTable.load(path).toArrow().schema
        ids = list(range(len(STRINGS))) + [k for k, _ in decoys]
        texts = ["-"] * len(STRINGS) + [v for _, v in decoys]
        AcidTable.load(path).append(pa.table(
            {"id": pa.array(ids, pa.int32()), "s": texts,
             **{f.name: pa.nulls(len(ids), f.type) for f in schema if f.name not in ("id", "s")}}, schema=schema))

    sql(spark, f"UPDATE acidorc.`{by_spark}` SET " + ", ".join(f"{c} = {t}" for c, t in assign.items())
        + " WHERE s = '-'")
    AcidTable.load(by_arrow).update("s = '-'", assign)
    want = sorted([(k, v, *typed) for k, v in enumerate(strings)] + [(k, v, *[None] * len(TYPED)) for k, v in decoys],
                  key=repr)
    for path in (by_spark, by_arrow):
        got = sorted(rows(path), key=repr)
        assert got == want and [str(v) for v in got] == [str(v) for v in want]  # -0.0, decimal scales, types

    scanned = AcidTable.load(by_arrow).scan(rowFilter=each, columns=["id", "s"]).toArrow().to_pylist()
    assert sorted((r["id"], r["s"]) for r in scanned) == sorted(enumerate(strings))
    sql(spark, f"DELETE FROM acidorc.`{by_spark}` WHERE {each}")
    AcidTable.load(by_arrow).delete(each)
    assert [r[:2] for r in sorted(rows(by_spark))] == [r[:2] for r in sorted(rows(by_arrow))] == sorted(decoys)


def _spark_name(arrow_type: pa.DataType) -> str:
    names = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
             pa.float32(): "float", pa.float64(): "double", pa.string(): "string", pa.binary(): "binary",
             pa.date32(): "date", pa.timestamp("us"): "timestamp_ntz", pa.timestamp("us", "UTC"): "timestamp"}
    if pa.types.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    return names.get(arrow_type, str(arrow_type))

