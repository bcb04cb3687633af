"""UPDATE, DELETE and MERGE as Spark jobs: Spark reads the target at the DML's snapshot (with
ROW__IDs), evaluates conditions and values with Spark SQL's own semantics, joins the MERGE
source, and turns every affected row into change rows; tasks write them as Hive split-update
events (:mod:`acid_source.dml.events`); the driver commits (:mod:`acid_source.dml.execution`).

One pass over the target: each joined row becomes at most two change rows (old version deleted,
new version inserted) through one ``explode``. Change rows are repartitioned by (partition,
writer id of the old row) so that every delete event of a delete file is in one task - which
also makes the MERGE cardinality check (one ROW__ID at most once) a by-product of writing.

The rules every input obeys, as on the engine-free path (:class:`StatementInputs`):

* SQL text is bounded as :mod:`acid_source.expressions.parsing` bounds it (length, nesting)
  before Spark's parser sees it; a Column nested so deeply that Spark's analysis overflows the
  JVM stack is an :class:`InvalidArgumentError` too.
* Conditions (DELETE / UPDATE ``WHERE``, MERGE ``ON`` and clause conditions) and values (SET,
  INSERT) must be deterministic, as on the engine-free path: ``rand() < 0.5`` would select other
  rows on every run (Delta refuses it in MERGE conditions). Delta allows ``uuid()`` as an UPDATE
  value; acidorc does not, because a value is also the key that routes its change row to a
  write task (the bucket columns, or a hash of the new row): a map task Spark re-runs after a
  lost shuffle file would compute other values and could send a row to a second write task,
  writing it twice. Per-row random data belongs in the MERGE source, made stable first (written
  out, or ``localCheckpoint()``); a non-deterministic source plan is not inspected. The check
  asks Spark's analyzed expression (``deterministic``), which only classic Spark has: under
  Spark Connect it is skipped and Spark's own rules apply.
* A value is stored in its column under the one store rule
  (:func:`acid_source.dml.assignments.storable`): a type that can never be stored is a
  :class:`SchemaError` before anything runs; a value that does not fit (malformed, out of
  range) is one when it is computed, naming the column and the value, whatever
  ``spark.sql.ansi.enabled`` says. Other data errors of an expression (an ANSI cast inside it,
  an overflow) are an :class:`InvalidArgumentError` naming the argument they came from (``set[k]``)
  when Spark's message quotes its SQL text, else every argument given. A failed statement
  writes and commits nothing.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TypeVar

import pyarrow as pa
from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]  # py4j ships no type hints
from pyspark.errors import AnalysisException, ParseException, PySparkException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from ..dml.assignments import does_not_fit_error, storable, target_assignments, unstorable_error
from ..dml.events import (
    DELETE,
    INSERT,
    MATCHED_NO_ACTION,
    OP_COLUMN,
    ROW_ID_COLUMN,
    SOURCE_DIR_COLUMN,
    UPDATE_DELETE,
    UPDATE_INSERT,
    ChangePlan,
    relative_dir,
    with_source_dir,
    write_changes,
)
from ..dml.execution import run_dml
from ..errors import AcidError, InvalidArgumentError, SchemaError
from ..expressions import Condition, columns_of
from ..expressions.compiler import non_deterministic_message
from ..expressions.parsing import length_problem, nesting_problem, position, tokenize, too_deep_at
from ..scan.planner import TableScan
from ..scan.reader import read_split
from ..scan.resolved import ResolvedTable
from ..scan.splits import ROW_ID_COLUMN as READ_ROW_ID
from ..table_ref import TableRef
from ..write.task import TaskResult
from .compaction import spark_task_runner
from .tasks import error_condition, run_per_partition, sql_state, stack_overflow
from .types import ColumnMapping, ExpressionOrColumn, never_fails, same_shape, value_kind

_SOURCE_MARK = "__acidorc_source_row"
T = TypeVar("T")


# --- arguments -------------------------------------------------------------------------------
def to_column(value: Any, argument: str) -> Column:
    """A SQL expression string or a Column, as a Column (parse errors name ``argument``)."""
    if isinstance(value, Column):
        check_column_bounds(value, argument)
        return value
    if isinstance(value, str):
        if not value.strip():
            raise InvalidArgumentError(argument, "the SQL expression is empty")
        check_bounds(value, argument)
        try:
            _parse_now(value)
            return F.expr(value)
        except ParseException as exc:
            raise InvalidArgumentError(argument, f"cannot parse {value!r}: {_first_line(exc)}") from None
        except Py4JJavaError as exc:
            if stack_overflow(exc):  # text the bound check could not read (a token sqlglot stops at)
                raise InvalidArgumentError(argument, f"{nesting_problem('expression')}: Spark's parser ran out of "
                                                     "stack") from None
            raise
    raise InvalidArgumentError(argument, f"expected a SQL string or a Column, got {type(value).__name__}")


def check_bounds(text: str, argument: str) -> None:
    """The one bound on SQL text (``acid_source.expressions.parsing``: length, nesting), checked
    on its tokens before Spark's recursive parser sees it. Only the bound: the grammar stays
    Spark's, so Spark-only syntax keeps working."""
    too_long = length_problem(text, "expression")
    if too_long:
        raise InvalidArgumentError(argument, too_long)
    tokens, _ = tokenize(text)  # an unreadable rest is Spark's parser's to report
    deep = too_deep_at(tokens)
    if deep is not None:
        raise InvalidArgumentError(argument, f"{nesting_problem('expression')} (at {position(text, deep)})")


def check_column_bounds(column: Column, argument: str) -> None:
    """The same nesting bound for a Column, measured on Spark's text of it (each level of the
    tree is one level of parentheses there): whether Spark's analysis of a deep tree runs out
    of stack depends on how warm its JVM is, so the bound is what decides, every time. Under
    Spark Connect a Column has no JVM expression to measure; Spark's own limits apply there."""
    jcolumn = getattr(column, "_jc", None)
    if jcolumn is None:
        return
    try:
        text = jcolumn.toString()
    except Py4JJavaError as exc:
        if stack_overflow(exc):
            raise _too_deep_for_spark(argument) from None
        raise
    deep = too_deep_at(tokenize(text)[0])
    if deep is not None:
        raise InvalidArgumentError(argument, f"{nesting_problem('expression')}: build the Column with fewer levels")


def _parse_now(text: str) -> None:
    """Parse with Spark's own SQL parser now (``F.expr`` parses lazily, at analysis), so that
    a builder reports a malformed condition when it is given."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    jspark = getattr(spark, "_jsparkSession", None)
    if jspark is not None:
        jspark.sessionState().sqlParser().parseExpression(text)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _assignments(values: Any, columns: list[str], argument: str,
                 alias: str | None = None) -> dict[str, tuple[Column, str | None]]:
    """``{column: (Column, its SQL text or None)}``: the keys checked against the table, the
    values made Columns."""
    checked = target_assignments(values, columns, argument, alias)
    return {name: (to_column(value, f"{argument}[{name}]"), value if isinstance(value, str) else None)
            for name, value in checked.items()}


def _analysis(fn, argument: str):
    """Run ``fn`` (which builds a DataFrame: Spark analyzes it eagerly) and turn Spark's
    analysis errors into typed errors naming ``argument``."""
    try:
        return fn()
    except ParseException as exc:
        raise InvalidArgumentError(argument, _first_line(exc)) from None
    except Py4JJavaError as exc:
        if stack_overflow(exc):
            raise _too_deep_for_spark(argument) from None
        raise
    except AnalysisException as exc:
        message = _first_line(exc)
        if "AMBIGUOUS" in message:
            raise SchemaError(f"{argument}: {message} - qualify the column with the target's or the source's "
                              "alias (AcidTable.alias(...), DataFrame.alias(...))") from None
        raise SchemaError(f"{argument}: {message}") from None


def _too_deep_for_spark(argument: str) -> InvalidArgumentError:
    return InvalidArgumentError(argument, "the expression is nested too deeply for Spark (its analysis ran out of "
                                          "stack: a java.lang.StackOverflowError); build it with fewer levels")


def _analyzed(frame: DataFrame, column: Column, argument: str) -> tuple[Any, DataType, str]:
    """``column`` analyzed over ``frame`` (without running anything): its JVM expression (None
    under Spark Connect, which has no JVM to ask), its type and Spark's name for it."""
    selected = _analysis(lambda: frame.select(column), argument)
    jdf = getattr(selected, "_jdf", None)
    expression = None if jdf is None else _analysis(
        lambda: jdf.queryExecution().analyzed().expressions().head(), argument)
    only = selected.schema.fields[0]
    return expression, only.dataType, only.name


def _nondeterministic_function(expression: Any) -> str | None:
    """The name of a non-deterministic function in an analyzed JVM expression (the innermost:
    ``rand`` in ``rand() * 2 < 1``), or None when it is deterministic."""
    if expression is None or expression.deterministic():
        return None
    stack = [expression]
    while stack:
        node = stack.pop()
        seq = node.children()
        children = [seq.apply(i) for i in range(seq.size())]
        if not node.deterministic() and all(c.deterministic() for c in children):
            return str(node.prettyName())
        stack.extend(children)
    return str(expression.prettyName())


def nondeterministic_error(argument: str, function: str) -> InvalidArgumentError:
    """The one refusal of a non-deterministic condition or value, in the engine-free compiler's words."""
    return InvalidArgumentError(argument, non_deterministic_message(function.lower()))


@dataclass(frozen=True)
class Assignment:
    """One value given for a column: the Column, its SQL text (None for a Column given as
    one), the column's type and the argument it was given as (``set[amount]``)."""

    column: str
    value: Column
    text: str | None
    target: DataType
    argument: str


@dataclass
class _Store:
    """One value checked into its column when computed (see :meth:`StatementInputs.store`)."""

    argument: str
    column: str
    shown: str
    source: DataType
    target: DataType


class StatementInputs:
    """The expressions one statement was given: checked while the statement is analyzed (every
    condition and value deterministic, a value storable in its column), and remembered so that a
    data error Spark raises while running the job is raised as a typed error naming the
    argument, column and value it came from (:meth:`run`)."""

    def __init__(self) -> None:
        self._texts: list[tuple[str, str | None, str | None]] = []  # (argument, SQL text, column)
        self._stores: list[_Store] = []
        self._mark = f"acidorc store check {uuid.uuid4().hex} "

    def condition(self, frame: DataFrame, column: Column, text: Any, argument: str) -> None:
        """A condition over ``frame``: refused when it calls a non-deterministic function."""
        self._texts.append((argument, text if isinstance(text, str) else None, None))
        function = _nondeterministic_function(_analyzed(frame, column, argument)[0])
        if function is not None:
            raise nondeterministic_error(argument, function)

    def store(self, frame: DataFrame, values: list[Assignment]) -> dict[str, Column]:
        """Each value (over ``frame``) as the type of its column: refused now when it calls a
        non-deterministic function or its type can never be stored there; otherwise a Column that
        raises, when a row's value does not fit, an error :meth:`run` turns into a
        :class:`SchemaError` naming the column and the value. The values are analyzed together
        (one analysis, not one per column), and one at a time only to name the one Spark refuses."""
        if not values:
            return {}
        try:
            selected = _analysis(lambda: frame.select(*[a.value for a in values]),
                                 " / ".join(a.argument for a in values))
        except AcidError:
            for a in values:
                _analyzed(frame, a.value, a.argument)
            raise
        jdf = getattr(selected, "_jdf", None)
        if jdf is not None:
            expressions = jdf.queryExecution().analyzed().expressions()
            for i, a in enumerate(values):
                function = _nondeterministic_function(expressions.apply(i))
                if function is not None:
                    raise nondeterministic_error(a.argument, function)
        return {a.column: self._stored(a, f.dataType, f.name) for a, f in zip(values, selected.schema.fields)}

    def _stored(self, a: Assignment, source: DataType, name: str) -> Column:
        """One value of type ``source`` (Spark's ``name`` for it) as its column's type; it is
        computed once per row (a lambda variable), however often the check reads it."""
        self._texts.append((a.argument, a.text, a.column))
        shown = a.text if a.text is not None else name
        source_kind, target_kind = value_kind(source), value_kind(a.target)
        fits = (same_shape(source, a.target) if "nested" in (source_kind, target_kind)
                else storable(source_kind, target_kind))
        if not fits:
            raise unstorable_error(a.argument, a.column, shown, source.simpleString(), a.target.simpleString())
        if source == a.target or "nested" in (source_kind, target_kind) or never_fails(source, a.target):
            return a.value
        check = len(self._stores)
        self._stores.append(_Store(a.argument, a.column, shown, source, a.target))
        mark = F.lit(f"{self._mark}{check}:")

        def fit(x: Column) -> Column:
            stored = x.try_cast(a.target)
            failed = x.isNotNull() & stored.isNull()
            return F.when(failed, F.raise_error(F.concat(mark, x.cast("string")))).otherwise(stored)

        return F.transform(F.array(a.value), fit)[0]

    def arguments(self) -> str:
        """Every argument given, for an error no single one can be blamed for."""
        return " / ".join(dict.fromkeys(a for a, _, _ in self._texts)) or "statement"

    def run(self, job: Callable[[], T]) -> T:
        """Run the statement's Spark job; its data errors become typed errors."""
        try:
            return job()
        except Py4JJavaError as exc:
            if stack_overflow(exc):
                raise _too_deep_for_spark(self.arguments()) from None
            raise
        except PySparkException as exc:
            typed = self._typed(exc)
            if typed is None:
                raise
            raise typed from None

    def _typed(self, exc: PySparkException) -> Exception | None:
        if error_condition(exc) == "USER_RAISED_EXCEPTION":
            message = str((exc.getMessageParameters() or {}).get("errorMessage", ""))
            if message.startswith(self._mark):
                check, _, value = message[len(self._mark):].partition(":")
                store = self._stores[int(check)]
                shown_value = repr(value) if value_kind(store.source) == "string" else value
                return does_not_fit_error(store.argument, store.column, shown_value, store.target.simpleString(),
                                          f"computed by {store.shown}, of type {store.source.simpleString()}")
        state = sql_state(exc) or ""
        if not state.startswith("22"):  # SQLSTATE class 22: a data exception (cast, overflow, division, ...)
            return None
        # an expression that fails on a row (its own ANSI cast, an overflow) is a bad argument, as
        # on the engine-free path; set[k] names the column
        return InvalidArgumentError(self._blame(str(exc)), f"cannot be evaluated on the rows of the table: "
                                                           f"{_first_line(exc)}")

    def _blame(self, message: str) -> str:
        """The argument whose SQL text holds the fragment Spark's message quotes (``== SQL (line
        L, position P) ==`` and the line), when exactly one does; else every argument given."""
        found = re.search(r"== SQL \(line (\d+), position \d+\) ==\n(.*)\n", message)
        if found:
            number, line = int(found.group(1)), found.group(2)
            owners = {a for a, text, _ in self._texts if text is not None
                      and number <= len(lines := text.split("\n")) and lines[number - 1] == line}
            if len(owners) == 1:
                return owners.pop()
        return self.arguments()


# --- reading the target ----------------------------------------------------------------------
def target_frame(spark, resolved: ResolvedTable, columns: list[str] | None = None,
                 condition: Any = None) -> tuple[DataFrame, bool]:
    """The target at the DML's snapshot: ``columns`` (all when None), the partition columns,
    the ROW__ID (renamed so that no source column can clash with it) and the partition
    directory each row was read from (:data:`SOURCE_DIR_COLUMN`: its delete event goes there).

    Planned here, on the driver, from the snapshot and listing the DML already holds (no
    second resolution, listing or store opening): one Spark task per split, each reading its
    split on an executor. No read lease is taken: the DML's open transaction, begun before
    its snapshot, holds the cleaner's floor until the statement ends.

    When ``condition`` is a SQL string the reader can evaluate without ever dropping a row
    Spark would keep (:func:`~acid_source.expressions.exactness.reader_prefilter`), the reader
    drops the others before they reach the JVM, and its conjuncts on partition columns prune
    partitions: a 1% DELETE then moves 1% of the rows into Spark. Spark still applies the
    condition on top. Also returns whether any split is left to read (with none, an UPDATE or
    DELETE has nothing to change and runs no Spark job)."""
    full = resolved.schema(include_row_id=True)
    wanted = set(full.names) if columns is None else set(columns) | set(resolved.partition_columns)
    arrow = pa.schema([f for f in full if f.name in wanted or f.name == READ_ROW_ID])
    schema = from_arrow_schema(arrow.append(pa.field(SOURCE_DIR_COLUMN, pa.string())), prefer_timestamp_ntz=True)
    scan = TableScan(resolved, include_row_id=True, row_filter=_reader_prefilter(condition, arrow))
    ctx, splits = scan.plan(arrow)
    if not splits:
        frame = spark.createDataFrame([], schema)
    else:
        root = resolved.storage.root

        def read(batches):  # the Spark task of split i (one id per partition)
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    read_from = relative_dir(root, splits[i].partition_path)
                    for rows in read_split(splits[i], ctx):
                        yield with_source_dir(rows, read_from)

        frame = spark.range(0, len(splits), 1, len(splits)).mapInArrow(read, schema)
    return frame.withColumnRenamed(READ_ROW_ID, ROW_ID_COLUMN), bool(splits)


def _reader_prefilter(condition: Any, schema: pa.Schema) -> Condition | None:
    """What the reader may filter by for ``condition`` (never dropping a row Spark keeps),
    bound to ``schema``, or None when it must pass every row to Spark."""
    if not isinstance(condition, str):
        return None
    from ..errors import AcidError
    from ..expressions import parse_condition
    from ..expressions.exactness import reader_prefilter

    prefilter = reader_prefilter(condition, schema)
    if prefilter is None:
        return None
    try:
        return parse_condition(prefilter, schema, argument="condition")
    except AcidError:
        return None  # Spark reports what is wrong with it


# --- change rows -----------------------------------------------------------------------------
@dataclass
class ChangeShape:
    """Builds change-row structs of one table (every field cast to the table's type)."""

    schema: StructType  # the table's columns
    partition_columns: list[str]
    row_id_type: Any
    names: list[str] = field(init=False)

    def __post_init__(self):
        self.names = [f.name for f in self.schema.fields]

    def _typed(self, name: str, value: Column | None) -> Column:
        dtype = self.schema[name].dataType
        return (F.lit(None) if value is None else value).cast(dtype).alias(name)

    def delete_side(self, op: int, partition_values: Mapping[str, Column], row_id: Column,
                    source_dir: Column) -> Column:
        """The old row: its ROW__ID, old partition values (data columns are not needed) and the
        directory it was read from."""
        fields = [F.lit(op).cast("tinyint").alias(OP_COLUMN)]
        fields += [self._typed(n, partition_values.get(n)) for n in self.names]
        fields.append(row_id.cast(self.row_id_type).alias(ROW_ID_COLUMN))
        fields.append(source_dir.cast("string").alias(SOURCE_DIR_COLUMN))
        return F.struct(*fields)

    def insert_side(self, op: int, values: Mapping[str, Column]) -> Column:
        fields = [F.lit(op).cast("tinyint").alias(OP_COLUMN)]
        fields += [self._typed(n, values.get(n)) for n in self.names]
        fields.append(F.lit(None).cast(self.row_id_type).alias(ROW_ID_COLUMN))
        fields.append(F.lit(None).cast("string").alias(SOURCE_DIR_COLUMN))
        return F.struct(*fields)

    def rows(self, frame: DataFrame, delete: Column | None, insert: Column | None) -> DataFrame:
        """Each row of ``frame`` -> its non-null change rows (0, 1 or 2)."""
        sides = [s for s in (delete, insert) if s is not None]
        exploded = frame.select(F.explode(F.filter(F.array(*sides), lambda x: x.isNotNull())).alias("change"))
        return exploded.select("change.*")


def write_change_rows(spark, changes: DataFrame, plan: ChangePlan, shape: ChangeShape) -> list[TaskResult]:
    """Repartition so that each (partition, old writer id) is in one task; write; collect."""
    write = plan.write
    is_delete = F.col(OP_COLUMN).isin(DELETE, UPDATE_DELETE, MATCHED_NO_ACTION)
    if write.bucketed:
        insert_key = F.hash(*[F.col(c) for c in _spelled(write.bucket_columns, shape.names)])
    else:  # any spread will do; Spark refuses to hash maps (a map column would fail the statement)
        hashable = [F.col(f.name) for f in shape.schema.fields if not _holds_map(f.dataType)]
        insert_key = F.hash(*hashable) if hashable else F.lit(0)
    key = F.when(is_delete, _writer_id(F.col(f"{ROW_ID_COLUMN}.bucketId"))).otherwise(insert_key)
    parts = [F.col(c) for c in write.partition_columns]
    routed = changes.repartition(*parts, key)

    # each task answers with its TaskResult, or with the typed error write_changes raised (a
    # MergeCardinalityError names the row), which arrives here as itself
    return run_per_partition(routed, lambda task_id, batches: write_changes(plan, task_id, batches))


def _holds_map(dtype: DataType) -> bool:
    if isinstance(dtype, MapType):
        return True
    if isinstance(dtype, ArrayType):
        return _holds_map(dtype.elementType)
    if isinstance(dtype, StructType):
        return any(_holds_map(f.dataType) for f in dtype.fields)
    return False


def _writer_id(prop: Column) -> Column:
    """The writer id in a ROW__ID's bucket property (BucketCodec V1, or V0's plain number): the
    N of the ``bucket_N`` file its delete event belongs in. Rows of one writer but different
    statement ids must meet in one task, or two tasks would write the same delete file."""
    v1 = F.shiftright(prop, 29) != 0
    return F.when(v1, F.shiftright(prop.bitwiseAND(0x0FFF0000), 16)).otherwise(prop)


def _spelled(names, columns: list[str]) -> list[str]:
    by_lower = {c.lower(): c for c in columns}
    return [by_lower.get(n.lower(), n) for n in names]


def _shape(resolved: ResolvedTable) -> ChangeShape:
    full = from_arrow_schema(resolved.schema(include_row_id=True), prefer_timestamp_ntz=True)
    columns = StructType([f for f in full.fields if f.name != READ_ROW_ID])
    return ChangeShape(columns, resolved.partition_columns, full[READ_ROW_ID].dataType)


# --- the three statements --------------------------------------------------------------------
def spark_delete(spark, target: TableRef, condition: ExpressionOrColumn | None, alias: str | None) -> dict:
    cond = None if condition is None else to_column(condition, "condition")

    def produce(resolved: ResolvedTable, plan: ChangePlan) -> list[TaskResult]:
        shape = _shape(resolved)
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
        shape = _shape(resolved)
        inputs = StatementInputs()
        values = _assignments(assignments, shape.names, "set", alias)
        frame, anything = target_frame(spark, resolved, condition=condition)
        if alias:
            frame = frame.alias(alias)
        matched = frame if cond is None else _where(inputs, frame, cond, condition)
        old = {n: frame[n] for n in shape.names}
        stored = inputs.store(frame, [Assignment(n, value, text, shape.schema[n].dataType, f"set[{n}]")
                                      for n, (value, text) in values.items()])
        new = {n: stored.get(n, old[n]) for n in shape.names}
        parts = {c: frame[c] for c in resolved.partition_columns}
        changes = _analysis(lambda: shape.rows(
            matched, shape.delete_side(UPDATE_DELETE, parts, frame[ROW_ID_COLUMN], frame[SOURCE_DIR_COLUMN]),
            shape.insert_side(UPDATE_INSERT, new)), "set")
        return inputs.run(lambda: write_change_rows(spark, changes, plan, shape)) if anything else []

    return run_dml(target, "update", produce, compaction_runner=spark_task_runner(spark))


def _where(inputs: StatementInputs, frame: DataFrame, cond: Column, given: Any) -> DataFrame:
    """``frame`` filtered by the DELETE / UPDATE condition (Spark's analysis errors and a
    non-deterministic condition refused, naming ``condition``)."""
    matched = _analysis(lambda: frame.where(cond), "condition")
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
        shape = _shape(resolved)
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
        joined = _analysis(lambda: _join(frame, marked, on, how), "condition")
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
        changes = _analysis(lambda: shape.rows(joined, delete_side, insert_side), "merge clauses")
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
            function = _nondeterministic_function(_analyzed(frame.crossJoin(source), on, "condition")[0])
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
        given = store(_assignments(clause.values, columns, argument, alias))
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
