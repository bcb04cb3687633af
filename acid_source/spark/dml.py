"""UPDATE, DELETE and MERGE as Spark jobs: Spark reads the target at the DML's snapshot (with
ROW__IDs), evaluates conditions and values with Spark SQL's own semantics, joins the MERGE
source, and turns every affected row into change rows; tasks write them as Hive split-update
events (:mod:`acid_source.dml.events`); the driver commits (:mod:`acid_source.dml.execution`).

One pass over the target: each joined row becomes at most two change rows (old version deleted,
new version inserted) through one ``explode``. Change rows are repartitioned by (partition,
writer id of the old row) so that every delete event of a delete file is in one task - which
also makes the MERGE cardinality check (one ROW__ID at most once) a by-product of writing.

The inputs (arguments, conditions, values) are checked by :mod:`.dml_inputs`; the target is
read and change rows written by :mod:`.dml_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..dml.events import (
    DELETE,
    INSERT,
    MATCHED_NO_ACTION,
    ROW_ID_COLUMN,
    SOURCE_DIR_COLUMN,
    UPDATE_DELETE,
    UPDATE_INSERT,
    ChangePlan,
)
from ..dml.execution import run_dml
from ..errors import AcidError, InvalidArgumentError, SchemaError
from ..expressions import columns_of
from ..scan.resolved import ResolvedTable
from ..table_ref import TableRef
from ..write.task import TaskResult
from .compaction import spark_task_runner
from .dml_inputs import (
    Assignment,
    StatementInputs,
    analysis,
    analyzed,
    assignments_of,
    nondeterministic_error,
    nondeterministic_function,
    to_column,
)
from .dml_rows import ChangeShape, change_shape, target_frame, write_change_rows
from .tasks import error_condition
from .types import ColumnMapping, ExpressionOrColumn

_SOURCE_MARK = "__acidorc_source_row"


# --- the three statements --------------------------------------------------------------------
def spark_delete(spark, target: TableRef, condition: ExpressionOrColumn | None, alias: str | None) -> dict:
    cond = None if condition is None else to_column(condition, "condition")

    def produce(resolved: ResolvedTable, plan: ChangePlan) -> list[TaskResult]:
        shape = change_shape(resolved)
        inputs = StatementInputs()
        needed = columns_of(condition, shape.names)
        frame, anything = target_frame(spark, resolved, needed, condition=condition)
        if alias:
            frame = frame.alias(alias)
        matched = frame if cond is None else _where(inputs, frame, cond, condition)
        parts = {c: F.col(c) for c in resolved.partition_columns}
        deleted = shape.delete_side(DELETE, parts, F.col(ROW_ID_COLUMN), F.col(SOURCE_DIR_COLUMN))
        changes = shape.rows(matched, deleted, None)
        return inputs.run(lambda: write_change_rows(spark, changes, plan, shape)) if anything else []

    return run_dml(target, "delete", produce, compaction_runner=spark_task_runner(spark))


def spark_update(spark, target: TableRef, condition: ExpressionOrColumn | None, assignments: ColumnMapping,
                 alias: str | None) -> dict:
    cond = None if condition is None else to_column(condition, "condition")

    def produce(resolved: ResolvedTable, plan: ChangePlan) -> list[TaskResult]:
        shape = change_shape(resolved)
        inputs = StatementInputs()
        values = assignments_of(assignments, shape.names, "set", alias)
        frame, anything = target_frame(spark, resolved, condition=condition)
        if alias:
            frame = frame.alias(alias)
        matched = frame if cond is None else _where(inputs, frame, cond, condition)
        old = {n: frame[n] for n in shape.names}
        stored = inputs.store(frame, [Assignment(n, value, text, shape.schema[n].dataType, f"set[{n}]")
                                      for n, (value, text) in values.items()])
        new = {n: stored.get(n, old[n]) for n in shape.names}
        parts = {c: frame[c] for c in resolved.partition_columns}
        changes = analysis(lambda: shape.rows(
            matched, shape.delete_side(UPDATE_DELETE, parts, frame[ROW_ID_COLUMN], frame[SOURCE_DIR_COLUMN]),
            shape.insert_side(UPDATE_INSERT, new)), "set")
        return inputs.run(lambda: write_change_rows(spark, changes, plan, shape)) if anything else []

    return run_dml(target, "update", produce, compaction_runner=spark_task_runner(spark))


def _where(inputs: StatementInputs, frame: DataFrame, cond: Column, given: Any) -> DataFrame:
    """``frame`` filtered by the DELETE / UPDATE condition (Spark's analysis errors and a
    non-deterministic condition refused, naming ``condition``)."""
    matched = analysis(lambda: frame.where(cond), "condition")
    inputs.condition(frame, cond, given, "condition")
    return matched


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause: ``matched`` / ``not_matched`` / ``not_matched_by_source``; action
    ``update`` / ``delete`` / ``insert``; ``values`` None for UPDATE SET * / INSERT *."""

    when: str
    action: str
    condition: ExpressionOrColumn | None = None
    values: ColumnMapping | None = None


def spark_merge(spark, target: TableRef, source: DataFrame, condition: ExpressionOrColumn, clauses: list[MergeClause],
                alias: str | None) -> dict:
    if not isinstance(source, DataFrame):
        raise InvalidArgumentError("source", f"expected a Spark DataFrame, got {type(source).__name__}")
    on = to_column(condition, "condition")
    cond_text = condition if isinstance(condition, str) else str(condition)
    if not clauses:
        raise InvalidArgumentError("merge", "add at least one whenMatched... / whenNotMatched... clause "
                                            "before execute()")

    def produce(resolved: ResolvedTable, plan: ChangePlan) -> list[TaskResult]:
        shape = change_shape(resolved)
        frame, _ = target_frame(spark, resolved)  # an empty target still meets the source
        if alias:
            frame = frame.alias(alias)
        marked = source.withColumn(_SOURCE_MARK, F.lit(True))
        kinds = {c.when for c in clauses}
        how = {frozenset({"matched"}): "inner", frozenset({"not_matched"}): "right",
               frozenset({"matched", "not_matched"}): "right",
               frozenset({"not_matched_by_source"}): "left",
               frozenset({"matched", "not_matched_by_source"}): "left"}.get(frozenset(kinds), "full")
        inputs = StatementInputs()
        joined = analysis(lambda: _join(frame, marked, on, how), "condition")
        inputs.condition(joined, on, condition, "condition")  # remembered for the job's errors
        has_target = joined[ROW_ID_COLUMN].isNotNull()
        has_source = marked[_SOURCE_MARK].isNotNull()
        state = {"matched": has_target & has_source, "not_matched": ~has_target & has_source,
                 "not_matched_by_source": has_target & ~has_source}
        chosen = None
        for i, clause in enumerate(clauses):
            test = state[clause.when]
            if clause.condition is not None:
                argument = f"clause {i + 1} condition"
                when = to_column(clause.condition, argument)
                inputs.condition(joined, when, clause.condition, argument)
                test = test & when
            chosen = (F.when(test, F.lit(i)) if chosen is None else chosen.when(test, F.lit(i)))
        assert chosen is not None
        old = {n: frame[n] for n in shape.names}
        parts = {c: frame[c] for c in resolved.partition_columns}
        delete_side = None
        insert_side = None
        for i, clause in enumerate(clauses):
            is_i = chosen == F.lit(i)
            if clause.action in ("update", "delete"):
                op = UPDATE_DELETE if clause.action == "update" else DELETE
                side = shape.delete_side(op, parts, frame[ROW_ID_COLUMN], frame[SOURCE_DIR_COLUMN])
                delete_side = F.when(is_i, side) if delete_side is None else delete_side.when(is_i, side)
            if clause.action in ("update", "insert"):
                values = _clause_values(clause, i, shape, marked, old, alias, inputs, joined)
                side = shape.insert_side(UPDATE_INSERT if clause.action == "update" else INSERT, values)
                insert_side = F.when(is_i, side) if insert_side is None else insert_side.when(is_i, side)
        if _checks_cardinality(clauses):  # a matched row no clause acts on still counts once
            quiet = state["matched"] & chosen.isNull()
            side = shape.delete_side(MATCHED_NO_ACTION, parts, frame[ROW_ID_COLUMN], frame[SOURCE_DIR_COLUMN])
            delete_side = F.when(quiet, side) if delete_side is None else delete_side.when(quiet, side)
        changes = analysis(lambda: shape.rows(joined, delete_side, insert_side), "merge clauses")
        return inputs.run(lambda: write_change_rows(spark, changes, plan, shape))

    checked = _checks_cardinality(clauses)
    return run_dml(target, "merge", produce, merge_condition=cond_text if checked else None,
                   repeated_deletes=not checked, compaction_runner=spark_task_runner(spark))


def _checks_cardinality(clauses: list[MergeClause]) -> bool:
    """Spark SQL's rule: a target row matched by several source rows is an error, unless the
    only WHEN MATCHED clause is an unconditional DELETE (deleting it once or twice is alike)."""
    matched = [c for c in clauses if c.when == "matched"]
    if not matched:
        return False
    return not (len(matched) == 1 and matched[0].action == "delete" and matched[0].condition is None)


def _join(frame: DataFrame, source: DataFrame, on: Column, how: str) -> DataFrame:
    """The target joined with the source on the MERGE condition. Spark refuses a
    non-deterministic join condition without naming the function; it is named here, from the
    condition analyzed over both sides."""
    try:
        return frame.join(source, on=on, how=how)
    except AnalysisException as exc:
        if error_condition(exc) != "INVALID_NON_DETERMINISTIC_EXPRESSIONS":
            raise
        try:
            function = nondeterministic_function(analyzed(frame.crossJoin(source), on, "condition")[0])
        except AcidError:
            function = None
        if function is None:
            raise
        raise nondeterministic_error("condition", function) from None


def _clause_values(clause: MergeClause, index: int, shape: ChangeShape, source: DataFrame, old: Mapping[str, Column],
                   alias: str | None, inputs: StatementInputs, joined: DataFrame) -> dict[str, Column]:
    """The new row of an UPDATE / INSERT clause, each given value stored into its column."""
    columns = shape.names
    argument = f"clause {index + 1} ({'set' if clause.action == 'update' else 'values'})"

    def store(given: Mapping[str, tuple[Column, str | None]]) -> dict[str, Column]:
        return inputs.store(joined, [Assignment(n, value, text, shape.schema[n].dataType, f"{argument}[{n}]")
                                     for n, (value, text) in given.items()])

    if clause.values is not None:
        given = store(assignments_of(clause.values, columns, argument, alias))
        if clause.action == "update":
            return {n: given.get(n, old[n]) for n in columns}
        return given  # INSERT: columns not given are NULL
    # UPDATE SET * / INSERT *: every target column from the source column of that name
    by_lower = {c.lower(): c for c in source.columns if c != _SOURCE_MARK}
    missing = [c for c in columns if c.lower() not in by_lower]
    if missing:
        raise SchemaError(f"{argument}: {'UPDATE SET *' if clause.action == 'update' else 'INSERT *'} needs a source "
                          f"column for every target column; the source lacks {', '.join(missing)} "
                          f"(source columns: {', '.join(by_lower.values())})", column=missing[0])
    return store({c: (source[by_lower[c.lower()]], by_lower[c.lower()]) for c in columns})
