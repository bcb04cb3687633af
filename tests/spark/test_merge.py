"""MERGE through ``AcidTable.merge`` against a literal reference of Spark SQL's MERGE semantics.

The reference (``reference_merge``) is written from the definition, row by row: join the target
and the source on the condition (a NULL condition is no match); a target row matched by more
than one source row is an error unless the only WHEN MATCHED clause is an unconditional DELETE;
every matched pair takes the first WHEN MATCHED clause whose condition is TRUE, every source row
without a match the first WHEN NOT MATCHED clause, every target row without a match the first
WHEN NOT MATCHED BY SOURCE clause; no clause, no change. Each test writes its conditions and
values twice, as the SQL acidorc runs and as Python with NULL semantics, and compares the
table read back (and the metrics) with the reference.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa
import pytest

import acid_source
from acid_source.errors import (
    InvalidArgumentError,
    MergeCardinalityError,
    SchemaError,
    UnsupportedOperationError,
)
from acid_source.table import AcidTable

pytestmark = pytest.mark.spark

COLUMNS = ("id", "a", "s", "p")
SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("s", pa.string()), ("p", pa.string())])
DDL = "id bigint, a int, s string, p string"

TARGET = [
    {"id": 1, "a": 1, "s": "one", "p": "x"},
    {"id": 2, "a": 2, "s": "two", "p": "x"},
    {"id": 3, "a": None, "s": "three", "p": "y"},
    {"id": 4, "a": 4, "s": None, "p": None},
    {"id": 5, "a": 5, "s": "five", "p": "y"},
    {"id": None, "a": 6, "s": "nokey", "p": "x"},
]
SOURCE = [
    {"id": 1, "a": 10, "s": "s1", "p": "y"},  # matches 1
    {"id": 2, "a": None, "s": "s2", "p": "x"},  # matches 2, NULL value
    {"id": 3, "a": 30, "s": None, "p": None},  # matches 3 (whose a is NULL)
    {"id": 7, "a": 70, "s": "s7", "p": "z"},  # no target row
    {"id": 8, "a": None, "s": None, "p": "x"},  # no target row, NULLs
    {"id": None, "a": 90, "s": "s9", "p": "y"},  # NULL key: matches nothing
]


# --- NULL-aware Python twins of the SQL used below ---------------------------------------------
def eq(x, y):
    return None if x is None or y is None else x == y


def gt(x, y):
    return None if x is None or y is None else x > y


def lt(x, y):
    return None if x is None or y is None else x < y


def add(x, k):
    return None if x is None else x + k


def mul(x, k):
    return None if x is None else x * k


def cat(x, y):
    return None if x is None or y is None else x + y


def or3(x, y):
    if x is True or y is True:
        return True
    return None if x is None or y is None else False


# --- the reference -----------------------------------------------------------------------------
@dataclass
class Clause:
    """A WHEN clause: ``when`` matched / not_matched / not_matched_by_source, ``action`` update /
    updateAll / delete / insert / insertAll; ``cond`` and each value as (SQL, Python(t, s))."""

    when: str
    action: str
    cond: tuple[str, Callable] | None = None
    values: dict[str, tuple[str, Callable]] | None = None


class CardinalityViolation(Exception):
    pass


def by_name(row: dict, column: str):
    """A source column by name, case-insensitively (the source may spell and order them its way)."""
    return next(v for k, v in row.items() if k.lower() == column)


def reference_merge(target: list[dict], source: list[dict], on: Callable, clauses: list[Clause]):
    """Spark SQL's MERGE, literally. Returns (rows after, deleted, updated, inserted)."""
    matched_clauses = [c for c in clauses if c.when == "matched"]
    check = bool(matched_clauses) and not (
        len(matched_clauses) == 1 and matched_clauses[0].action == "delete" and matched_clauses[0].cond is None)
    matches = [[s for s in source if on(t, s) is True] for t in target]
    if check and any(len(m) > 1 for m in matches):
        raise CardinalityViolation
    result, deleted, updated, inserted = [], 0, 0, 0

    def first(when, t, s):
        return next((c for c in clauses if c.when == when and (c.cond is None or c.cond[1](t, s) is True)), None)

    for t, m in zip(target, matches):
        s = m[0] if m else None
        clause = first("matched", t, s) if m else first("not_matched_by_source", t, None)
        if clause is None:
            result.append(t)
        elif clause.action == "delete":
            deleted += 1
        elif clause.action == "updateAll":
            result.append({c: by_name(s, c) for c in COLUMNS})
            updated += 1
        else:
            result.append({c: clause.values[c][1](t, s) if c in clause.values else t[c] for c in COLUMNS})
            updated += 1
    hit = {id(s) for m in matches for s in m}
    for s in source:
        if id(s) in hit:
            continue
        clause = first("not_matched", None, s)
        if clause is None:
            continue
        if clause.action == "insertAll":
            result.append({c: by_name(s, c) for c in COLUMNS})
        else:
            result.append({c: clause.values[c][1](None, s) if c in clause.values else None for c in COLUMNS})
        inserted += 1
    return result, deleted, updated, inserted


def test_reference_on_a_hand_worked_merge():
    """The reference itself, on a case worked out by hand."""
    clauses = [Clause("matched", "update", ("", lambda t, s: gt(s["a"], t["a"])), {"a": ("", lambda t, s: s["a"])}),
               Clause("matched", "delete"), Clause("not_matched", "insertAll"),
               Clause("not_matched_by_source", "update", None, {"s": ("", lambda t, s: "gone")})]
    rows, deleted, updated, inserted = reference_merge(TARGET, SOURCE, lambda t, s: eq(t["id"], s["id"]), clauses)
    assert (deleted, updated, inserted) == (2, 4, 3)  # 2 and 3 deleted (NULL > comparisons); 1, 4, 5, NULL updated
    assert multiset(rows) == multiset([
        {"id": 1, "a": 10, "s": "one", "p": "x"}, {"id": 4, "a": 4, "s": "gone", "p": None},
        {"id": 5, "a": 5, "s": "gone", "p": "y"}, {"id": None, "a": 6, "s": "gone", "p": "x"},
        SOURCE[3], SOURCE[4], SOURCE[5]])
    with pytest.raises(CardinalityViolation):
        reference_merge(TARGET, SOURCE + [SOURCE[0]], lambda t, s: eq(t["id"], s["id"]), clauses[:1])
    rows, deleted, _, _ = reference_merge(TARGET, SOURCE + [SOURCE[0]], lambda t, s: eq(t["id"], s["id"]),
                                          [Clause("matched", "delete")])
    assert deleted == 3 and len(rows) == 3


# --- helpers -----------------------------------------------------------------------------------
def multiset(rows) -> Counter:
    return Counter(tuple((v is not None, v) for v in (r[c] for c in COLUMNS)) for r in rows)


def make_table(path, rows, *, insert_only: bool = False) -> str:
    location = str(path / "t")
    acid_source.create_table(location, SCHEMA, partitionColumns=["p"], insertOnly=insert_only)
    AcidTable.load(location).append(pa.Table.from_pylist(rows, schema=SCHEMA))
    return location


def rows_of(path: str) -> list[dict]:
    return AcidTable.load(path).toArrow().to_pylist()


def files_of(path: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs}


def frame(spark, rows, ddl: str = DDL):
    names = [part.split()[0] for part in ddl.split(",")]
    return spark.createDataFrame([tuple(by_name(r, n.lower()) for n in names) for r in rows], ddl)


def builder_for(table: AcidTable, source_df, on_sql: str, clauses: list[Clause]):
    b = table.alias("t").merge(source_df.alias("s"), on_sql)
    for c in clauses:
        cond = None if c.cond is None else c.cond[0]
        values = None if c.values is None else {k: v[0] for k, v in c.values.items()}
        b = {
            ("matched", "update"): lambda: b.whenMatchedUpdate(condition=cond, set=values),
            ("matched", "updateAll"): lambda: b.whenMatchedUpdateAll(condition=cond),
            ("matched", "delete"): lambda: b.whenMatchedDelete(condition=cond),
            ("not_matched", "insert"): lambda: b.whenNotMatchedInsert(condition=cond, values=values),
            ("not_matched", "insertAll"): lambda: b.whenNotMatchedInsertAll(condition=cond),
            ("not_matched_by_source", "update"): lambda: b.whenNotMatchedBySourceUpdate(condition=cond, set=values),
            ("not_matched_by_source", "delete"): lambda: b.whenNotMatchedBySourceDelete(condition=cond),
        }[(c.when, c.action)]()
    return b


KEY = ("t.id = s.id", lambda t, s: eq(t["id"], s["id"]))


def run_and_compare(spark, path: str, source: list[dict], clauses: list[Clause], on=KEY, *,
                    source_df=None) -> dict:
    """Run the MERGE on the table at ``path`` and check the table and the metrics against the
    reference; returns the metrics."""
    before = rows_of(path)
    expected, deleted, updated, inserted = reference_merge(before, source, on[1], clauses)
    table = AcidTable.forPath(spark, path)
    metrics = builder_for(table, frame(spark, source) if source_df is None else source_df, on[0], clauses).execute()
    assert multiset(rows_of(path)) == multiset(expected)
    assert {k: metrics[k] for k in ("operation", "numDeletedRows", "numUpdatedRows", "numInsertedRows",
                                    "numAffectedRows")} == {
        "operation": "merge", "numDeletedRows": deleted, "numUpdatedRows": updated, "numInsertedRows": inserted,
        "numAffectedRows": deleted + updated + inserted}
    assert (metrics["writeId"] is None) == (deleted + updated + inserted == 0)
    return metrics


def snapshot(path: str):
    """Everything a failed MERGE must leave as it was: rows, files, history."""
    return multiset(rows_of(path)), files_of(path), AcidTable.load(path).history()


@pytest.fixture
def table(tmp_path) -> str:
    return make_table(tmp_path, TARGET)


# --- every clause kind -------------------------------------------------------------------------
EACH_KIND = {
    "matchedUpdate": Clause("matched", "update", ("s.a > t.a", lambda t, s: gt(s["a"], t["a"])),
                            {"a": ("s.a", lambda t, s: s["a"]), "s": ("t.s || s.s", lambda t, s: cat(t["s"], s["s"]))}),
    "matchedUpdateAll": Clause("matched", "updateAll", ("s.a IS NOT NULL", lambda t, s: s["a"] is not None)),
    "matchedDelete": Clause("matched", "delete", ("t.a < s.a", lambda t, s: lt(t["a"], s["a"]))),
    "notMatchedInsert": Clause("not_matched", "insert", ("s.a > 0", lambda t, s: gt(s["a"], 0)),
                               {"id": ("s.id", lambda t, s: s["id"]), "a": ("s.a * 10", lambda t, s: mul(s["a"], 10)),
                                "p": ("s.p", lambda t, s: s["p"])}),
    "notMatchedInsertAll": Clause("not_matched", "insertAll", ("s.s <> 's7'", lambda t, s: None if s["s"] is None
                                                                else s["s"] != "s7")),
    "notMatchedBySourceUpdate": Clause("not_matched_by_source", "update", ("t.a > 4", lambda t, s: gt(t["a"], 4)),
                                       {"a": ("t.a + 100", lambda t, s: add(t["a"], 100)),
                                        "p": ("'moved'", lambda t, s: "moved")}),
    "notMatchedBySourceDelete": Clause("not_matched_by_source", "delete",
                                       ("t.s IS NULL OR t.a = 6", lambda t, s: or3(t["s"] is None, eq(t["a"], 6)))),
}


@pytest.mark.parametrize("kind", sorted(EACH_KIND))
def test_each_clause_kind(spark, table, kind):
    metrics = run_and_compare(spark, table, SOURCE, [EACH_KIND[kind]])
    assert metrics["writeId"] is not None  # every clause above acts on some row


def test_all_clause_kinds_together_unconditional_last(spark, table):
    clauses = [
        EACH_KIND["matchedDelete"],
        EACH_KIND["matchedUpdate"],
        Clause("matched", "updateAll"),
        EACH_KIND["notMatchedInsert"],
        Clause("not_matched", "insertAll"),
        EACH_KIND["notMatchedBySourceUpdate"],
        Clause("not_matched_by_source", "delete"),
    ]
    metrics = run_and_compare(spark, table, SOURCE, clauses)
    assert metrics["numDeletedRows"] and metrics["numUpdatedRows"] and metrics["numInsertedRows"]


# --- clause order ------------------------------------------------------------------------------
FIRST = Clause("matched", "update", ("s.a > 5", lambda t, s: gt(s["a"], 5)), {"s": ("'first'", lambda t, s: "first")})
SECOND = Clause("matched", "update", ("s.p IS NOT NULL", lambda t, s: s["p"] is not None),
                {"s": ("'second'", lambda t, s: "second")})


@pytest.mark.parametrize("order", ["first-second", "second-first"])
def test_first_clause_whose_condition_is_true_wins(spark, table, order):
    """Overlapping WHEN MATCHED conditions: the earlier clause takes the rows both accept; a row
    whose first condition is NULL (s.a NULL) falls through to the next clause."""
    clauses = [FIRST, SECOND] if order == "first-second" else [SECOND, FIRST]
    run_and_compare(spark, table, SOURCE, clauses)
    by_id = {r["id"]: r["s"] for r in rows_of(table)}
    # id 1: both true; id 2: first NULL, second true; id 3: first true, second false
    expected = {"first-second": ("first", "second", "first"), "second-first": ("second", "second", "first")}[order]
    assert (by_id[1], by_id[2], by_id[3]) == expected


# --- cardinality -------------------------------------------------------------------------------
DUPLICATED = SOURCE + [{"id": 1, "a": -10, "s": "dup", "p": "x"}]


@pytest.mark.parametrize("clauses", [
    [Clause("matched", "update", None, {"a": ("s.a", lambda t, s: s["a"])})],
    [Clause("matched", "delete", ("s.a > 1000", lambda t, s: gt(s["a"], 1000)))],  # acts on nothing: still an error
    [Clause("matched", "delete", ("s.a > 1000", lambda t, s: gt(s["a"], 1000))), Clause("matched", "delete")],
    [Clause("not_matched", "insertAll"), Clause("matched", "updateAll")],
], ids=["update", "conditional-delete", "two-deletes", "insert-and-updateAll"])
def test_cardinality_violation_fails_and_changes_nothing(spark, table, clauses):
    with pytest.raises(CardinalityViolation):
        reference_merge(rows_of(table), DUPLICATED, KEY[1], clauses)
    before = snapshot(table)
    with pytest.raises(MergeCardinalityError) as info:
        builder_for(AcidTable.forPath(spark, table), frame(spark, DUPLICATED), KEY[0], clauses).execute()
    assert info.value.condition == "t.id = s.id"
    assert "'t.id = s.id'" in str(info.value)
    # raised in a Spark task, it arrives as itself: the row and the partition it is in
    assert info.value.row_id.startswith("(writeId ") and info.value.location.startswith(table)
    assert snapshot(table) == before


@pytest.mark.parametrize("with_insert", [False, True])
def test_lone_unconditional_delete_allows_duplicate_matches(spark, table, with_insert):
    """Spark's exception: with only an unconditional WHEN MATCHED DELETE (WHEN NOT MATCHED
    clauses do not count), deleting a row matched twice is well defined."""
    clauses = [Clause("matched", "delete")] + ([Clause("not_matched", "insertAll")] if with_insert else [])
    metrics = run_and_compare(spark, table, DUPLICATED, clauses)
    assert metrics["numDeletedRows"] == 3  # ids 1, 2, 3: id 1 counted once


# --- NULL keys, duplicates, empty and self sources ---------------------------------------------
@pytest.mark.parametrize("on", [KEY, ("t.id <=> s.id", lambda t, s: t["id"] == s["id"])], ids=["=", "<=>"])
def test_null_join_keys(spark, table, on):
    """With ``=`` a NULL key never matches: the NULL-keyed source row is inserted, the
    NULL-keyed target row is not matched by source. With ``<=>`` the two NULL keys match."""
    clauses = [Clause("matched", "update", None, {"s": ("'matched'", lambda t, s: "matched")}),
               Clause("not_matched", "insertAll"),
               Clause("not_matched_by_source", "update", None, {"s": ("'orphan'", lambda t, s: "orphan")})]
    run_and_compare(spark, table, SOURCE, clauses, on=on)
    null_keyed = sorted(r["s"] for r in rows_of(table) if r["id"] is None)
    assert null_keyed == (["orphan", "s9"] if on is KEY else ["matched"])


def test_duplicate_source_keys_that_match_nothing_are_all_inserted(spark, table):
    source = SOURCE + [{"id": 7, "a": 71, "s": "s7bis", "p": "z"}]  # 7 twice, no target row 7
    metrics = run_and_compare(spark, table, source,
                              [Clause("matched", "updateAll"), Clause("not_matched", "insertAll")])
    assert metrics["numInsertedRows"] == 4  # 7, 7, 8, NULL
    assert sorted(r["a"] for r in rows_of(table) if r["id"] == 7) == [70, 71]


@pytest.mark.parametrize("by_source", [False, True])
def test_empty_source(spark, table, by_source):
    """An empty source matches nothing: no commit, no write id, no files, history unchanged -
    unless a WHEN NOT MATCHED BY SOURCE clause acts on every target row."""
    clauses = [Clause("matched", "updateAll"), Clause("not_matched", "insertAll")]
    if by_source:
        clauses.append(Clause("not_matched_by_source", "delete", ("t.a > 1", lambda t, s: gt(t["a"], 1))))
    before = snapshot(table)
    metrics = run_and_compare(spark, table, [], clauses, source_df=spark.createDataFrame([], DDL))
    if by_source:
        assert metrics["numDeletedRows"] == 4  # a in (2, 4, 5, 6); the NULL a stays
    else:
        assert metrics["writeId"] is None
        assert snapshot(table) == before


def test_self_merge(spark, tmp_path):
    """The source is the table's own DataFrame: every keyed row matches itself; the NULL-keyed
    row matches nothing, so its copy is inserted."""
    path = make_table(tmp_path, TARGET)
    table = AcidTable.forPath(spark, path)
    clauses = [Clause("matched", "update", None, {"a": ("s.a + 1", lambda t, s: add(s["a"], 1)),
                                                  "s": ("upper(s.s)", lambda t, s: s["s"] and s["s"].upper())}),
               Clause("not_matched", "insertAll")]
    metrics = run_and_compare(spark, path, rows_of(path), clauses, source_df=table.toDF())
    assert (metrics["numUpdatedRows"], metrics["numInsertedRows"]) == (5, 1)


def test_insert_all_and_update_all_take_source_columns_by_name(spark, table):
    """The source lists its columns in another order and spelling; * matches them by name."""
    ddl = "P string, S string, A int, ID bigint"
    source = [{("P", "S", "A", "ID")[i]: v for i, v in enumerate((r["p"], r["s"], r["a"], r["id"]))} for r in SOURCE]
    clauses = [Clause("matched", "updateAll", ("s.A > 5", lambda t, s: gt(s["A"], 5))),
               Clause("not_matched", "insertAll")]
    run_and_compare(spark, table, source, clauses, on=("t.id = s.ID", lambda t, s: eq(t["id"], s["ID"])),
                    source_df=frame(spark, source, ddl))
    assert {"id": 1, "a": 10, "s": "s1", "p": "y"} in rows_of(table)


def test_insert_of_some_columns_leaves_the_rest_null(spark, table):
    clauses = [Clause("not_matched", "insert", None, {"id": ("s.id", lambda t, s: s["id"]),
                                                      "s": ("s.s", lambda t, s: s["s"])})]
    run_and_compare(spark, table, SOURCE, clauses)
    assert {"id": 7, "a": None, "s": "s7", "p": None} in rows_of(table)


def test_update_of_the_partition_column_moves_rows(spark, table):
    clauses = [Clause("matched", "update", None, {"p": ("s.p", lambda t, s: s["p"])})]
    before = files_of(table)
    metrics = run_and_compare(spark, table, SOURCE, clauses)
    # id 1 x -> y, id 2 x -> x, id 3 y -> NULL
    assert metrics["partitions"] == ["p=__HIVE_DEFAULT_PARTITION__", "p=x", "p=y"]
    added = files_of(table) - before
    kinds = {(f.split(os.sep)[0], f.split(os.sep)[1].split("_0")[0]) for f in added if "bucket_" in f}
    assert kinds == {("p=x", "delete_delta"), ("p=y", "delete_delta"),  # old versions of 1, 2 / 3
                     ("p=y", "delta"), ("p=x", "delta"), ("p=__HIVE_DEFAULT_PARTITION__", "delta")}
    scan = AcidTable.load(table).scan(rowFilter="p IS NULL", columns=["id"]).toArrow().column("id").to_pylist()
    assert sorted(scan) == [3, 4]


# --- typed errors, table unchanged -------------------------------------------------------------
def _expect_error(spark, path, error, build, *needles):
    before = snapshot(path)
    with pytest.raises(error) as info:
        build(AcidTable.forPath(spark, path).alias("t")).execute()
    for needle in needles:
        assert needle in str(info.value)
    assert snapshot(path) == before
    return info.value


@pytest.mark.parametrize("where", ["set", "values", "updateAll-source-lacks", "expression"])
def test_unknown_column_is_a_schema_error_naming_it(spark, table, where):
    src = frame(spark, SOURCE).alias("s")
    build = {
        "set": lambda t: t.merge(src, "t.id = s.id").whenMatchedUpdate(set={"nope": "s.a"}),
        "values": lambda t: t.merge(src, "t.id = s.id").whenNotMatchedInsert(values={"id": "s.id", "nope": "1"}),
        "updateAll-source-lacks": lambda t: t.merge(frame(spark, SOURCE).drop("a").alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll(),
        "expression": lambda t: t.merge(src, "t.id = s.id").whenMatchedUpdate(set={"a": "s.nope + 1"}),
    }[where]
    error = _expect_error(spark, table, SchemaError, build, "nope" if where != "updateAll-source-lacks" else "lacks a")
    if where != "expression":
        assert error.column == ("a" if where == "updateAll-source-lacks" else "nope")


@pytest.mark.parametrize("where", ["merge condition", "clause condition", "set value"])
def test_condition_that_does_not_parse_is_an_invalid_argument(spark, table, where):
    src = frame(spark, SOURCE).alias("s")
    build = {
        "merge condition": lambda t: t.merge(src, "t.id = = s.id").whenMatchedDelete(),
        "clause condition": lambda t: t.merge(src, "t.id = s.id").whenMatchedDelete(condition="s.a >"),
        "set value": lambda t: t.merge(src, "t.id = s.id").whenMatchedUpdate(set={"a": "s.a +"}),
    }[where]
    _expect_error(spark, table, InvalidArgumentError, build)


@pytest.mark.parametrize("where", ["clause condition", "set value", "merge condition"])
def test_ambiguous_unqualified_column_is_a_schema_error(spark, table, where):
    src = frame(spark, SOURCE).alias("s")
    build = {
        "clause condition": lambda t: t.merge(src, "t.id = s.id").whenMatchedUpdate(condition="a > 1",
                                                                                    set={"s": "'x'"}),
        "set value": lambda t: t.merge(src, "t.id = s.id").whenMatchedUpdate(set={"a": "a + 1"}),
        "merge condition": lambda t: t.merge(src, "id = s.id").whenMatchedDelete(),
    }[where]
    error = _expect_error(spark, table, SchemaError, build)
    assert "ambiguous" in str(error).lower()


def test_merge_into_an_insert_only_table_is_refused(spark, tmp_path):
    path = make_table(tmp_path, TARGET, insert_only=True)
    _expect_error(spark, path, UnsupportedOperationError,
                  lambda t: t.merge(frame(spark, SOURCE).alias("s"), "t.id = s.id").whenMatchedDelete()
                  .whenNotMatchedInsertAll(), "insert-only")
