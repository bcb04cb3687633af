"""NaN, -0.0, +-inf and NULL in conditions: the engine-free path (the compiled condition,
rowFilter scans, DELETE, UPDATE) and the Spark path (DELETE, reads with pushed filters on data
and partition columns) give Spark SQL's answers.

Spark orders NaN above every other value (+inf included) and equal to itself, and -0.0 equals
0.0. Every expected answer here comes from Spark itself: one SELECT over a temp view of the
same rows, one boolean column per condition. Our results are compared with it three-valued
(true / false / NULL), so a NOT around a condition cannot hide a NULL-vs-false difference.
"""

from __future__ import annotations

import decimal
import itertools
import math
import uuid

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from hivegen import HiveTable

from acid_source import create_table
from acid_source.expressions import parse_condition
from acid_source.table import AcidTable

pytestmark = pytest.mark.spark

NAN, INF = math.nan, math.inf
VALUES = [NAN, -0.0, 0.0, INF, -INF, None, 1.1, 50.0, 100.0, 150.0, -7.5]
SCHEMA = pa.schema([("id", pa.int32()), ("f", pa.float32()), ("d", pa.float64()), ("i", pa.int32()),
                    ("m", pa.decimal128(10, 2))])
SPARK_SCHEMA = "id int, f float, d double, i int, m decimal(10,2)"
INTS = [0, 100, None, -8, 150]
DECIMALS = [decimal.Decimal("1.10"), decimal.Decimal("100.00"), None, decimal.Decimal("-0.01")]

OPERATORS = ["=", "<>", "!=", "<", "<=", ">", ">=", "<=>"]
OPERANDS = ["100", "0", "-0.0", "1.1", "1.1D", "1e2", "150.0f", "'NaN'", "'nan'", "double('NaN')",
            "cast('NaN' as double)", "cast('NaN' as float)", "'Infinity'", "' -inf'", "NULL", "d", "f", "i", "m"]
OTHER_CONDITIONS = [
    "'NaN' > d", "100 < d", "-0.0 = f", "'-Infinity' >= f", "NULL <=> d",
    "d BETWEEN 0 AND 'NaN'", "d BETWEEN -1 AND 100", "d NOT BETWEEN -1 AND 100", "f BETWEEN 'NaN' AND 'NaN'",
    "d BETWEEN f AND 'inf'", "d BETWEEN -0.0 AND 0.0", "f NOT BETWEEN 1.1 AND 'NaN'",
    "d IN (1.1, 'NaN')", "d IN (0.0)", "d IN (-0.0)", "f IN (0, 100)", "d NOT IN (double('NaN'), 100)",
    "d IN (NULL, 'NaN')", "d NOT IN (NULL, 1.1)", "d IN (f, 100)", "d IN (i, m)", "f IN ('NaN')",
    "d IN ('-inf', 'inf')", "f NOT IN (-0.0)", "d IN (1e0, 'NaN', -0.0)", "d NOT IN (f)",
    "CASE WHEN d > 100 THEN true ELSE false END", "IF(d < f, true, false)",
    "CASE d WHEN double('NaN') THEN true WHEN 0 THEN NULL ELSE false END", "CASE WHEN f = 'NaN' THEN d > f END",
    "NOT (d > 100)", "NOT (d = f)", "NOT (d <=> f)", "coalesce(d, f) > 100", "abs(d) >= 100", "-d < -100",
    "d + 1 > 100", "d * 0 = 0", "d - d = 0", "d > 100 OR f < 0", "d > 100 AND f >= d",
    "cast(f as double) = d", "cast(d as float) >= f", "coalesce(f, 'NaN') = 'NaN'",
    "cast(d as decimal(10,2)) > 0", "cast(f as decimal(10,2)) IS NULL", "cast(double('NaN') as decimal(10,2)) IS NULL",
    "isnan(d)", "isnan(f) OR d > 100", "NOT isnan(d)", "isnan(i)", "isnan(m)", "isnan(NULL)", "isnan('NaN')",
]
CONDITIONS = [f"{left} {op} {right}" for left, op, right in itertools.product(["f", "d"], OPERATORS, OPERANDS)]
CONDITIONS += OTHER_CONDITIONS
# Representative conditions for the slower paths (a scan, a write or a Spark job each)
SCAN_CONDITIONS = [f"d {op} 'NaN'" for op in OPERATORS] + [f"f {op} 100" for op in OPERATORS] + [
    "d IN (-0.0, 'NaN')", "d BETWEEN f AND 'inf'", "NOT (d > 100)", "f <=> d"]
DML_CONDITIONS = ["d > 100", "f = 'NaN'", "d <= f", "d IN (-0.0, 'NaN')"]
CONDITIONS += [c for c in SCAN_CONDITIONS + DML_CONDITIONS if c not in CONDITIONS]


def _rows() -> pa.Table:
    pairs = list(itertools.product(VALUES, VALUES))  # every (f, d) pair: column-to-column cases too
    return pa.table({
        "id": pa.array(range(len(pairs)), pa.int32()),
        "f": pa.array([f for f, _ in pairs], pa.float32()),
        "d": pa.array([d for _, d in pairs], pa.float64()),
        "i": pa.array([INTS[k % len(INTS)] for k in range(len(pairs))], pa.int32()),
        "m": pa.array([DECIMALS[k % len(DECIMALS)] for k in range(len(pairs))], SCHEMA.field("m").type),
    }, schema=SCHEMA)


ROWS = _rows()


@pytest.fixture(scope="module")
def spark_answers(spark):
    """{condition: [True / False / None per id]} and {name: [value per id]} of the extra value
    columns, from one Spark job. Interpreted, not compiled: generating code for some 350
    expressions takes Spark 20 s, interpreting them 2 s (both are Spark's own semantics)."""
    view = f"nan_rows_{uuid.uuid4().hex[:8]}"
    frame = spark.createDataFrame(ROWS)
    assert frame.schema.simpleString() == f"struct<{SPARK_SCHEMA.replace(' ', ':').replace(',:', ',')}>"
    frame.createOrReplaceTempView(view)
    values = {"updated_i": "IF(d >= 100, IF(d > f, 1, 0), i)"}
    columns = [f"({c}) AS c{k}" for k, c in enumerate(CONDITIONS)] + [f"{v} AS {n}" for n, v in values.items()]
    saved = {k: spark.conf.get(k) for k in ("spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode")}
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    spark.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN")
    try:
        got = sorted(spark.sql(f"SELECT id, {', '.join(columns)} FROM {view}").collect(), key=lambda r: r["id"])
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)
        spark.catalog.dropTempView(view)
    assert [r["id"] for r in got] == list(range(ROWS.num_rows))
    answers = {c: [r[f"c{k}"] for r in got] for k, c in enumerate(CONDITIONS)}
    return answers, {n: [r[n] for r in got] for n in values}


def _true_ids(answer: list) -> list[int]:
    return [i for i, v in enumerate(answer) if v is True]


def _ids(table) -> list[int]:
    return sorted(table.column("id").to_pylist())


@pytest.fixture(scope="module")
def table_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("nan") / "t")
    create_table(path, SCHEMA)
    AcidTable.load(path).append(ROWS)
    return path


def test_every_comparison_evaluates_as_in_spark(spark_answers):
    answers, _ = spark_answers
    wrong = []
    for condition in CONDITIONS:
        expression = parse_condition(condition, SCHEMA).expression
        got = ds.dataset(ROWS).to_table(columns={"r": expression}).column("r").to_pylist()
        if got != answers[condition]:
            wrong.append((condition, [(ROWS["f"][i].as_py(), ROWS["d"][i].as_py(), g, s)
                                      for i, (g, s) in enumerate(zip(got, answers[condition])) if g != s][:3]))
    assert not wrong, f"{len(wrong)} of {len(CONDITIONS)} conditions differ from Spark (f, d, ours, Spark): {wrong}"


def test_row_filters_keep_the_rows_spark_keeps(spark_answers, table_path):
    answers, _ = spark_answers
    table = AcidTable.load(table_path)
    wrong = [c for c in SCAN_CONDITIONS if _ids(table.scan(rowFilter=c).toArrow()) != _true_ids(answers[c])]
    assert not wrong, f"{len(wrong)} of {len(SCAN_CONDITIONS)} row filters differ from Spark: {wrong}"


def test_engine_free_delete_and_update_match_spark(spark_answers, tmp_path):
    answers, values = spark_answers
    path = str(tmp_path / "t")
    create_table(path, SCHEMA)
    table = AcidTable.load(path)
    table.append(ROWS)
    table.update("d >= 100", {"i": "IF(d > f, 1, 0)"})
    got = {r["id"]: r["i"] for r in table.toArrow().to_pylist()}
    assert [got[i] for i in range(ROWS.num_rows)] == values["updated_i"]
    left = set(range(ROWS.num_rows))
    for condition in DML_CONDITIONS:
        table.delete(condition)
        left -= set(_true_ids(answers[condition]))
        assert _ids(table.toArrow()) == sorted(left), condition


def test_spark_delete_matches_spark(spark, spark_answers, tmp_path):
    answers, _ = spark_answers
    path = str(tmp_path / "t")
    create_table(path, SCHEMA)
    AcidTable.load(path).append(ROWS)
    # the reader pre-filters by the same condition before Spark sees the rows (spark/dml.py)
    AcidTable.forPath(spark, path).delete(" OR ".join(DML_CONDITIONS[:2]))
    deleted = set(_true_ids(answers[DML_CONDITIONS[0]])) | set(_true_ids(answers[DML_CONDITIONS[1]]))
    expected = sorted(set(range(ROWS.num_rows)) - deleted)
    assert _ids(AcidTable.load(path).toArrow()) == expected


def test_a_stripe_holding_nan_is_not_skipped(spark, spark_answers, tmp_path):
    """ORC's min / max of a double column say nothing about NaN: a stripe whose values are at
    most 50 but which holds NaN has rows matching d > 100 (Spark: NaN > 100), for the reader's
    own filter and for a filter Spark pushes down."""
    answers, _ = spark_answers
    # stripes of 22 rows, two values of d each: (NaN, 50), (-0.0, 0.0), (inf, -inf), ...
    order = [NAN, 50.0, -0.0, 0.0, INF, -INF, None, 1.1, 100.0, 150.0, -7.5]
    rank = {("nan" if isinstance(v, float) and math.isnan(v) else repr(v)): k for k, v in enumerate(order)}
    rows = sorted(ROWS.to_pylist(), key=lambda r: rank["nan" if r["d"] is not None and math.isnan(r["d"])
                                                    else repr(r["d"])])
    path = tmp_path / "hive"
    HiveTable(path, [("id", "int"), ("d", "double")], stripe_rows=22).insert(1, {0: [(r["id"], r["d"]) for r in rows]})
    condition = "d > 100"
    expected = _true_ids(answers[condition])
    assert _ids(AcidTable.load(str(path)).scan(rowFilter=condition).toArrow()) == expected
    frame = spark.read.format("acidorc").option("filterPushdown", "true").load(str(path)).where(condition)
    assert sorted(r.id for r in frame.collect()) == expected


def test_partitions_of_nan_are_pruned_as_spark_filters(spark, spark_answers, tmp_path):
    """A filter Spark pushes down on a partition column prunes partitions exactly (Spark does
    not filter their rows again): the partition p=NaN matches p > 100 and p IN (.., NaN), and
    q=1.1 of a float column matches q = float(1.1) (1.1 rounded to float, not to double)."""
    answers, _ = spark_answers
    names = {0: "NaN", 3: "Infinity", 4: "-Infinity", 5: "__HIVE_DEFAULT_PARTITION__"}
    hive = HiveTable(tmp_path / "hive", [("id", "int"), ("d", "double")])
    for k, value in enumerate(VALUES):  # rows 0..10 of ROWS: d = VALUES[k], one per partition
        assert repr(ROWS["d"][k].as_py()) == repr(value)
        hive.insert(1, {0: [(k, value)]}, partition=f"p={names.get(k, repr(value))}/q=1.1")
    for condition in ("d > 100", "d IN (-0.0, 'NaN')"):
        expected = [k for k in _true_ids(answers[condition]) if k < len(VALUES)]
        frame = (spark.read.format("acidorc").option("filterPushdown", "true")
                 .schema("id int, d double, p double, q float").load(str(tmp_path / "hive"))
                 .where(f"{condition.replace('d', 'p')} AND q = float(1.1)"))
        assert sorted(r.id for r in frame.collect()) == expected, condition
