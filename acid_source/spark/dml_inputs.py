"""The inputs of UPDATE, DELETE and MERGE as Spark jobs (:mod:`.dml`): the SQL strings or Columns
given as conditions and values, checked while the statement is analyzed and remembered so that a
data error of the job names the argument it came from.

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
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]  # py4j ships no type hints
from pyspark.errors import AnalysisException, ParseException, PySparkException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from ..dml.assignments import does_not_fit_error, storable, target_assignments, unstorable_error
from ..errors import AcidError, InvalidArgumentError, SchemaError
from ..expressions.compiler import non_deterministic_message
from ..expressions.parsing import length_problem, nesting_problem, position, tokenize, too_deep_at
from .tasks import error_condition, sql_state, stack_overflow
from .types import never_fails, same_shape, value_kind

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


def assignments_of(values: Any, columns: list[str], argument: str,
                 alias: str | None = None) -> dict[str, tuple[Column, str | None]]:
    """``{column: (Column, its SQL text or None)}``: the keys checked against the table, the
    values made Columns."""
    checked = target_assignments(values, columns, argument, alias)
    return {name: (to_column(value, f"{argument}[{name}]"), value if isinstance(value, str) else None)
            for name, value in checked.items()}


def analysis(fn, argument: str):
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


def analyzed(frame: DataFrame, column: Column, argument: str) -> tuple[Any, DataType, str]:
    """``column`` analyzed over ``frame`` (without running anything): its JVM expression (None
    under Spark Connect, which has no JVM to ask), its type and Spark's name for it."""
    selected = analysis(lambda: frame.select(column), argument)
    jdf = getattr(selected, "_jdf", None)
    expression = None if jdf is None else analysis(
        lambda: jdf.queryExecution().analyzed().expressions().head(), argument)
    only = selected.schema.fields[0]
    return expression, only.dataType, only.name


def nondeterministic_function(expression: Any) -> str | None:
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
        function = nondeterministic_function(analyzed(frame, column, argument)[0])
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
            selected = analysis(lambda: frame.select(*[a.value for a in values]),
                                 " / ".join(a.argument for a in values))
        except AcidError:
            for a in values:
                analyzed(frame, a.value, a.argument)
            raise
        jdf = getattr(selected, "_jdf", None)
        if jdf is not None:
            expressions = jdf.queryExecution().analyzed().expressions()
            for i, a in enumerate(values):
                function = nondeterministic_function(expressions.apply(i))
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


