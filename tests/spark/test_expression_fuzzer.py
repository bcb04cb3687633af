"""The differential fuzzer: random typed expressions (expression_grammar.py) evaluated by
acidorc's engine-free compiler and by Spark's own SELECT on the same rows (NULL, NaN, +-0.0,
extreme integers and decimals, unicode and empty strings, far dates). Every disagreement fails:
a value, a NULL-ness, a result type, an error where the other computes, another error class.
An expression acidorc refuses engine-free (a function it does not evaluate) is skipped and
counted; the refusal is the documented answer, and it comes before anything is written.

Fixed seeds: the same cases on every run - ``CASES`` by default, ACIDORC_PROPERTY_EXAMPLES
cases for a soak. ``fuzz_corpus.txt`` keeps every expression that ever disagreed, run first.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from expression_grammar import ROWS, SCHEMA, Grammar
from properties import SCALE
from spark_answers import rows_view, same_value, selected

from acid_source.errors import InvalidArgumentError
from acid_source.expressions import engine_free_functions, parse_value_expression

pytestmark = pytest.mark.spark

CASES = 300
SEED = 20261129
CORPUS = Path(__file__).with_name("fuzz_corpus.txt")
_CLASS = re.compile(r"\[([A-Z_]+)(?:\.[A-Z_]+)?\]")
_CHUNK = 40


def corpus() -> list[str]:
    return [line for line in CORPUS.read_text().splitlines() if line.strip() and not line.startswith("#")]


def cases(count: int) -> list[str]:
    rng = random.Random(SEED)
    grammar = Grammar(rng)
    return corpus() + [grammar.expression() for _ in range(count)]


def spark_type(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    names = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
             pa.float32(): "float", pa.float64(): "double", pa.string(): "string", pa.bool_(): "boolean",
             pa.date32(): "date", pa.binary(): "binary", pa.null(): "void"}
    return names.get(t, str(t))


def error_class(text: str) -> str:
    found = _CLASS.search(text)
    return found.group(1) if found else text.splitlines()[0][:120]


def ours(text: str):
    """("refused", reason) | ("error", class) | ("value", type, values)."""
    try:
        parsed = parse_value_expression(text, SCHEMA, argument="x")
    except InvalidArgumentError as exc:
        return ("refused", str(exc))
    try:
        column = ds.dataset(ROWS).to_table(columns={"v": parsed.expression}).column("v")
    except (pa.ArrowException, ArithmeticError, ValueError) as exc:
        return ("error", error_class(str(exc)))
    return ("value", spark_type(parsed.type), column.to_pylist())


def spark_answers(spark, view: str, texts: list[str]) -> dict[str, tuple]:
    """Spark's ("error", class) or ("value", typeof, values) of each expression: one SELECT per
    chunk, split in halves where one of them fails (a failure fails the whole query)."""
    answers: dict[str, tuple] = {}

    def run(chunk: list[str]) -> None:
        columns = ", ".join(f"typeof({t}) AS t{k}, ({t}) AS v{k}" for k, t in enumerate(chunk))
        try:
            got = selected(spark, view, columns)
        except Exception as exc:  # noqa: BLE001 - Spark's failure is the answer, compared by class
            if len(chunk) == 1:
                condition = getattr(exc, "getCondition", lambda: None)()
                answers[chunk[0]] = ("error", (condition or error_class(str(exc))).split(".")[0])
                return
            half = len(chunk) // 2
            run(chunk[:half])
            run(chunk[half:])
            return
        for k, text in enumerate(chunk):
            answers[text] = ("value", got[0][f"t{k}"], [r[f"v{k}"] for r in got])

    for start in range(0, len(texts), _CHUNK):
        run(texts[start:start + _CHUNK])
    return answers


def row_by_row(spark, view: str, text: str) -> str | None:
    """Where both fail with other errors: each row alone, as Spark runs a row's operations in
    order but may meet several failing rows in any order (its tasks run in parallel)."""
    parsed = parse_value_expression(text, SCHEMA, argument="x")
    wrong = []
    for k in range(ROWS.num_rows):
        try:
            mine = ("value", ds.dataset(ROWS.slice(k, 1)).to_table(columns={"v": parsed.expression})["v"][0].as_py())
        except (pa.ArrowException, ArithmeticError, ValueError) as exc:
            mine = ("error", error_class(str(exc)))
        try:
            theirs = ("value", spark.sql(f"SELECT ({text}) AS v FROM {view} WHERE id = {k}").collect()[0]["v"])
        except Exception as exc:  # noqa: BLE001 - Spark's failure is the answer, compared by class
            theirs = ("error", (getattr(exc, "getCondition", lambda: None)() or error_class(str(exc))).split(".")[0])
        if mine[0] != theirs[0] or (mine[0] == "error" and mine[1] != theirs[1]) or (
                mine[0] == "value" and not same_value(mine[1], theirs[1])):
            wrong.append((k, mine, theirs))
    return f"{text}: rows differ (row, acidorc, Spark): {wrong[:3]}" if wrong else None


def disagreement(spark, view: str, text: str, mine: tuple, theirs: tuple) -> str | None:
    if mine[0] != theirs[0]:
        return f"{text}: acidorc {mine}, Spark {theirs}"
    if mine[0] == "error":
        return None if mine[1] == theirs[1] else row_by_row(spark, view, text)
    if mine[1] != theirs[1] and not (mine[1] == "void" or theirs[1] == "void"):
        return f"{text}: acidorc types it {mine[1]}, Spark {theirs[1]}"
    wrong = [(k, o, s) for k, (o, s) in enumerate(zip(mine[2], theirs[2])) if not same_value(o, s)]
    return f"{text}: rows differ (row, acidorc, Spark): {wrong[:3]}" if wrong else None


@pytest.fixture(scope="module")
def fuzz_view(spark):
    yield from rows_view(spark, ROWS, "fuzz_rows")


def test_the_rows_reach_spark_as_they_are(spark, fuzz_view):
    """The fuzzer's premise: Spark holds exactly the rows acidorc evaluates on."""
    got = sorted(spark.sql(f"SELECT * FROM {fuzz_view}").collect(), key=lambda r: r["id"])
    for name in SCHEMA.names:
        assert all(same_value(o, r[name]) or (o is None and r[name] is None)
                   for o, r in zip(ROWS.column(name).to_pylist(), got)), name


def test_engine_free_expressions_agree_with_spark(spark, fuzz_view):
    texts = list(dict.fromkeys(cases(SCALE or CASES)))
    mine = {t: ours(t) for t in texts}
    compared = [t for t in texts if mine[t][0] != "refused"]
    theirs = spark_answers(spark, fuzz_view, compared)
    wrong = [d for t in compared if (d := disagreement(spark, fuzz_view, t, mine[t], theirs[t])) is not None]
    refused = len(texts) - len(compared)
    assert not wrong, (f"{len(wrong)} of {len(compared)} expressions disagree with Spark ({refused} refused "
                       "engine-free):\n" + "\n".join(wrong[:15]))
    assert len(compared) >= len(texts) // 2, f"the grammar generates mostly what acidorc refuses ({refused})"


def test_the_readme_lists_the_functions_evaluated_without_spark(spark):
    """The README's list is the compiler's, as far as Spark knows the names (sqlglot reads a
    few more spellings, such as ``iif``)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    listed = re.search(r"<!-- engine-free functions -->(.*?)<!-- end -->", readme, re.S)
    assert listed is not None
    spark_names = {r.function for r in spark.sql("SHOW FUNCTIONS").collect()}
    expected = [f for f in engine_free_functions() if f in spark_names]
    assert re.findall(r"`([a-z_]+)`", listed.group(1)) == expected
