"""Spark SQL ``UPDATE`` / ``DELETE`` / ``MERGE`` statements, parsed into plain frozen data.

Spark SQL does not hand row-level DML to a Python data source, so ``acid_source.sql`` parses
these statements itself (sqlglot, Spark dialect) and runs them through the ``AcidTable``
builder. This module only parses: no Spark, no transaction store; it shares the bounds (size,
nesting) and the error wording of :mod:`.parsing` with every other SQL text acidorc reads. Any other statement gives
``None``, so the caller can pass it to ``spark.sql`` unchanged. Conditions and expressions come
back as the user's own text (the form the builder takes), never as sqlglot's re-rendering of
them, which would carry sqlglot's reading of the literals into Spark. Errors are
:class:`~acid_source.errors.InvalidArgumentError` about argument ``statement`` whose message
shows the line, the column and the statement line with a ``^`` under the position, in plain
text (sqlglot's own messages underline with terminal escape codes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Union
from urllib.parse import urlsplit

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from ..errors import InvalidArgumentError
from .parsing import (
    CLOSING,
    DIALECT,
    OPENING,
    length_problem,
    nesting_problem,
    node_span,
    parse_failure,
    parse_tokens,
    plain,
    tokenize,
    too_deep_at,
)

PATH_PREFIX = "acidorc"
MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE = "matched", "not_matched", "not_matched_by_source"
UPDATE, DELETE, INSERT = "update", "delete", "insert"

_DML_TOKENS = {TokenType.UPDATE: "UPDATE", TokenType.DELETE: "DELETE", TokenType.MERGE: "MERGE"}
_CLAUSE_TEXT = {MATCHED: "WHEN MATCHED", NOT_MATCHED: "WHEN NOT MATCHED",
                NOT_MATCHED_BY_SOURCE: "WHEN NOT MATCHED BY SOURCE"}
_ALLOWED_ACTIONS = {MATCHED: (UPDATE, DELETE), NOT_MATCHED: (INSERT,), NOT_MATCHED_BY_SOURCE: (UPDATE, DELETE)}
_TABLE_ARGS = {"this", "db", "catalog", "alias", "version"}


@dataclass(frozen=True)
class TableRef:
    """A table as the statement names it: name parts (``db``, ``t``), or the location written
    ``acidorc.`/path```; ``version`` is a time-travel clause on it (kind ``VERSION`` or
    ``TIMESTAMP``, value: a literal's value, else the expression's SQL)."""

    parts: tuple[str, ...] = ()
    path: str | None = None
    version: tuple[str, str] | None = None

    @property
    def name(self) -> str:
        """The reference in messages: ``db.t`` or ``acidorc.`/path```."""
        if self.path is not None:
            return f"{PATH_PREFIX}.`{self.path}`"
        return ".".join(self.parts)

    @property
    def default_alias(self) -> str | None:
        """What qualifies its columns without an explicit alias: the name's last part (none
        for a path)."""
        return None if self.path is not None else self.parts[-1]


@dataclass(frozen=True)
class UpdateStatement:
    target: TableRef
    alias: str | None  #: explicit alias, else the target's default alias
    assignments: tuple[tuple[str, str], ...]  #: (column, Spark SQL expression), in order
    condition: str | None


@dataclass(frozen=True)
class DeleteStatement:
    target: TableRef
    alias: str | None
    condition: str | None


@dataclass(frozen=True)
class SourceTable:
    """A table the MERGE source reads, and where its name (and time travel) stands in
    :attr:`MergeSource.sql` (``start`` to ``end`` inclusive; ``end`` -1 when the time travel is
    not a literal and the text cannot be replaced)."""

    ref: TableRef
    start: int
    end: int
    needs_alias: bool  #: no alias of its own: a replacement must keep the name's last part as one


@dataclass(frozen=True)
class MergeSource:
    """The ``USING`` item: its text exactly as written (alias included), the alias its columns
    go by, and the tables it reads (for the caller to map acidorc ones to views, see
    :func:`source_query`)."""

    sql: str
    alias: str | None
    references: tuple[SourceTable, ...]

    @property
    def tables(self) -> tuple[TableRef, ...]:
        return tuple(dict.fromkeys(r.ref for r in self.references))


@dataclass(frozen=True)
class MergeClause:
    kind: str  #: MATCHED, NOT_MATCHED or NOT_MATCHED_BY_SOURCE
    action: str  #: UPDATE, DELETE or INSERT
    condition: str | None = None
    assignments: tuple[tuple[str, str], ...] = ()  #: UPDATE SET / INSERT (columns) VALUES (...)
    star: bool = False  #: UPDATE SET * / INSERT *


@dataclass(frozen=True)
class MergeStatement:
    target: TableRef
    alias: str | None
    source: MergeSource
    condition: str
    clauses: tuple[MergeClause, ...]  #: in statement order (first match wins within a kind)


Statement = Union[UpdateStatement, DeleteStatement, MergeStatement]


# --- entry points ---------------------------------------------------------------------------
def parse_statement(text: str) -> Statement | None:
    """The DML statement in ``text``, or None when ``text`` is not UPDATE / DELETE / MERGE."""
    if not isinstance(text, str):
        raise InvalidArgumentError("statement", f"expected a SQL statement string, got {type(text).__name__}")
    tokens, failed_at = tokenize(text)
    if not tokens or tokens[0].token_type not in _DML_TOKENS:
        return None
    too_long = length_problem(text, "statement")
    if too_long:
        raise InvalidArgumentError("statement", too_long)
    if failed_at is not None:
        raise _error(text, failed_at, "cannot read the statement (an unterminated string, quoted name or comment?)")
    for before, after in zip(tokens, tokens[1:]):
        if before.token_type == TokenType.SEMICOLON and after.token_type != TokenType.SEMICOLON:
            raise _error(text, after.start, "expected one statement; another one starts")
    deep = too_deep_at(tokens)
    if deep is not None:
        raise _error(text, deep, nesting_problem("statement"))
    node = _parse(text, tokens)
    if isinstance(node, exp.Update):
        return _update(text, tokens, node)
    if isinstance(node, exp.Delete):
        return _delete(text, tokens, node)
    if isinstance(node, exp.Merge):
        return _merge(text, tokens, node)
    raise _error(text, tokens[0].start, f"cannot parse the {_DML_TOKENS[tokens[0].token_type]} statement")


def statement_target(text: str) -> TableRef | None:
    """Best effort: the target a DML statement names, even when the rest does not parse (the
    caller then decides whether the parse error is acidorc's to report or Spark's)."""
    if not isinstance(text, str):
        return None
    tokens, _ = tokenize(text)
    if not tokens or tokens[0].token_type not in _DML_TOKENS:
        return None
    start = 1
    if tokens[0].token_type != TokenType.UPDATE:
        keyword = TokenType.FROM if tokens[0].token_type == TokenType.DELETE else TokenType.INTO
        if len(tokens) < 2 or tokens[1].token_type != keyword:
            return None
        start = 2
    end = start
    while end + 2 < len(tokens) and tokens[end + 1].token_type == TokenType.DOT:
        end += 2
    if end >= len(tokens):
        return None
    try:
        name = text[tokens[start].start:tokens[end].end + 1]
        table = Dialect.get_or_raise(DIALECT).parser().parse_into(exp.Table, tokenize(name)[0], name)[0]
        if not isinstance(table, exp.Table):
            return None
        return _table_ref(text, table)
    except (ParseError, TokenError, InvalidArgumentError, ValueError):
        return None


def source_query(source: MergeSource, views: Mapping[TableRef, str]) -> str:
    """``SELECT * FROM <source>`` with each table in ``views`` replaced by the view named there
    (its time travel dropped: the view carries it). A name keeps its last part as alias, so
    column references in the source still resolve. Only the names change: the rest of the
    source is the user's text, not a re-rendering."""
    text = source.sql
    for r in sorted(source.references, key=lambda r: r.start, reverse=True):
        if r.ref not in views:
            continue
        if r.end < r.start:
            raise InvalidArgumentError("statement", f"{r.ref.name}: time travel on an acidorc table in the MERGE "
                                                    "source takes a literal version or timestamp")
        name = views[r.ref] + (f" AS {_quoted(r.ref.default_alias)}" if r.needs_alias and r.ref.default_alias else "")
        text = text[:r.start] + name + text[r.end + 1:]
    return f"SELECT * FROM {text}"


# --- statements -----------------------------------------------------------------------------
def _update(text: str, tokens: list[Token], node: exp.Update) -> UpdateStatement:
    _no_extra_clauses(text, node, "UPDATE", {"this", "expressions", "where"})
    target, alias = _target(text, node.this)
    end = _statement_end(tokens)
    set_at = _find(tokens, TokenType.SET, 0, end)
    where_at = _find(tokens, TokenType.WHERE, set_at + 1, end) if set_at is not None else None
    if set_at is None:
        raise _error(text, _start(node, text), "UPDATE: cannot find SET")
    values = _assignment_texts(text, tokens, set_at + 1, end if where_at is None else where_at)
    assignments = _assignments(text, node.expressions, target, alias, "SET", values)
    return UpdateStatement(target, alias, assignments, _where(text, tokens, node, where_at, end))


def _delete(text: str, tokens: list[Token], node: exp.Delete) -> DeleteStatement:
    if node.args.get("tables") and not node.this:
        raise _error(text, _start(node, text), "DELETE needs FROM: DELETE FROM table [WHERE condition]")
    _no_extra_clauses(text, node, "DELETE", {"this", "where"})
    target, alias = _target(text, node.this)
    end = _statement_end(tokens)
    where_at = _find(tokens, TokenType.WHERE, 0, end)
    return DeleteStatement(target, alias, _where(text, tokens, node, where_at, end))


def _merge(text: str, tokens: list[Token], node: exp.Merge) -> MergeStatement:
    _no_extra_clauses(text, node, "MERGE", {"this", "using", "on", "whens"})
    target, alias = _target(text, node.this)
    using = node.args["using"]
    source = _source(text, tokens, using)
    end = _statement_end(tokens)
    whens = _when_indexes(tokens)
    offsets = [tokens[i].start for i in whens]
    on_at = _find(tokens, TokenType.ON, _find(tokens, TokenType.USING, 0, end) or 0, end)
    if on_at is None or not whens:
        raise _error(text, _start(node, text), "MERGE: cannot find ON and the WHEN clauses")
    clauses = []
    for i, when in enumerate(node.args["whens"].expressions):  # sqlglot requires at least one
        at = offsets[i] if i < len(offsets) else _start(when, text)
        if i >= len(whens):
            raise _error(text, at, "MERGE: cannot read this WHEN clause")
        clauses.append(_clause(text, tokens, when, target, alias, (whens[i], (whens + [end])[i + 1])))
    _check_clause_order(text, clauses, offsets)
    return MergeStatement(target, alias, source, _text(text, tokens, on_at + 1, whens[0]), tuple(clauses))


def _clause(text: str, tokens: list[Token], when: exp.When, target: TableRef, alias: str | None,
            span: tuple[int, int]) -> MergeClause:
    """One WHEN clause; ``span``: its tokens (from WHEN to before the next clause), where its
    condition and values are read as written."""
    first, stop = span
    at = tokens[first].start
    kind = NOT_MATCHED_BY_SOURCE if when.args.get("source") else MATCHED if when.args.get("matched") else NOT_MATCHED
    then = when.args.get("then")
    then_at = _find(tokens, TokenType.THEN, first, stop)
    and_at = _find(tokens, TokenType.AND, first, then_at) if then_at is not None else None
    if then_at is None or (and_at is None) != (when.args.get("condition") is None):
        raise _error(text, at, f"{_CLAUSE_TEXT[kind]}: cannot read the clause")
    cond = _text(text, tokens, and_at + 1, then_at) if and_at is not None else None
    if isinstance(then, exp.Var) and then.name.upper() == DELETE.upper():
        action, assignments, star = DELETE, (), False
    elif isinstance(then, exp.Update):
        action = UPDATE
        star = len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star)
        if star and kind == NOT_MATCHED_BY_SOURCE:
            raise _error(text, at, "WHEN NOT MATCHED BY SOURCE cannot UPDATE SET * (there is no source row); "
                                   "name the columns")
        set_at = _find(tokens, TokenType.SET, then_at + 1, stop)
        values = _assignment_texts(text, tokens, set_at + 1, stop) if set_at is not None else []
        assignments = () if star else _assignments(text, then.expressions, target, alias, "UPDATE SET", values)
    elif isinstance(then, exp.Insert):
        action = INSERT
        star = isinstance(then.this, exp.Star)
        assignments = () if star else _insert_values(text, tokens, then, target, alias, (then_at + 1, stop), at)
    else:
        raise _error(text, at, f"{_CLAUSE_TEXT[kind]}: expected THEN UPDATE SET, THEN DELETE or THEN INSERT")
    if action not in _ALLOWED_ACTIONS[kind]:
        allowed = " or ".join(a.upper() for a in _ALLOWED_ACTIONS[kind])
        raise _error(text, at, f"{_CLAUSE_TEXT[kind]} clauses can only {allowed}, not {action.upper()}")
    return MergeClause(kind, action, cond, assignments, star)


def _check_clause_order(text: str, clauses: list[MergeClause], offsets: list[int]) -> None:
    """Spark's rule: of several clauses of one kind, only the last may omit its condition (a
    clause after an unconditional one could never apply)."""
    for i, clause in enumerate(clauses):
        if clause.condition is None and any(c.kind == clause.kind for c in clauses[i + 1:]):
            at = offsets[i] if i < len(offsets) else 0
            raise _error(text, at, f"only the last {_CLAUSE_TEXT[clause.kind]} clause can omit its condition "
                                   "(a later one could never apply)")


# --- parts ----------------------------------------------------------------------------------
def _target(text: str, node) -> tuple[TableRef, str | None]:
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        raise _error(text, _start(node, text),
                     "the target must be a table name, acidorc.`/path/to/table` or a temporary view")
    ref = _table_ref(text, node)
    alias_node = node.args.get("alias")
    if alias_node is not None and alias_node.args.get("columns"):
        raise _error(text, _start(alias_node, text), "the target's alias cannot name columns")
    return ref, (node.alias or ref.default_alias)


def _table_ref(text: str, node: exp.Table) -> TableRef:
    extra = [k for k, v in node.args.items() if k not in _TABLE_ARGS and v]
    if extra:
        raise _error(text, _start(node, text), f"{node.sql(dialect=DIALECT)}: unsupported table clause ({extra[0]})")
    version = node.args.get("version")
    when = None
    if version is not None:
        value = version.expression
        shown = value.name if isinstance(value, exp.Literal) else value.sql(dialect=DIALECT)
        when = (str(version.this).upper(), shown)
    parts = tuple(p.name for p in node.parts)
    name = node.this
    if len(parts) == 2 and parts[0].lower() == PATH_PREFIX and _is_location(name.name):
        return TableRef(path=name.name, version=when)
    if len(parts) == 2 and parts[0].lower() == PATH_PREFIX and name.args.get("quoted") and "/" in name.name:
        raise _error(text, _start(node, text), f"{PATH_PREFIX}.`{name.name}`: the table location must be absolute "
                                               "(a path from / or a URL)")
    return TableRef(parts=parts, version=when)


def _source(text: str, tokens: list[Token], using: exp.Expression) -> MergeSource:
    """The USING item as written: the text from after USING to before the top-level ON."""
    depth, begin, stop = 0, None, None
    for i, token in enumerate(tokens):
        if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
        elif token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET):
            depth -= 1
        elif depth == 0 and begin is None and token.token_type == TokenType.USING:
            begin = i + 1
        elif depth == 0 and begin is not None and token.token_type == TokenType.ON:
            stop = i - 1
            break
    if begin is None or stop is None or stop < begin:
        raise _error(text, _start(using, text), "MERGE: cannot find the source between USING and ON")
    first, last = tokens[begin].start, tokens[stop].end
    ctes = {cte.alias_or_name.lower() for cte in using.find_all(exp.CTE)}
    references = []
    for table in using.find_all(exp.Table):
        ref = _source_ref(text, table, ctes)
        spans = [p.meta for p in table.parts if "start" in p.meta]
        if ref is None or not spans:
            continue
        start, end = min(m["start"] for m in spans), max(m["end"] for m in spans)
        version = table.args.get("version")
        if version is not None:
            value = version.expression
            end = value.meta["end"] if isinstance(value, exp.Literal) and "end" in value.meta else first - 1
        references.append(SourceTable(ref, start - first, end - first, table.args.get("alias") is None))
    own = _source_ref(text, using, ctes) if isinstance(using, exp.Table) else None
    alias = using.alias or (own.default_alias if own is not None else None)
    return MergeSource(text[first:last + 1], alias, tuple(references))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _source_ref(text: str, node: exp.Table, ctes: set[str]) -> TableRef | None:
    """A table the source reads, unless it is a CTE's name or a table function."""
    if not isinstance(node.this, exp.Identifier):
        return None
    if not node.args.get("db") and not node.args.get("catalog") and node.name.lower() in ctes:
        return None
    try:
        return _table_ref(text, node)
    except InvalidArgumentError:
        return None


def _is_location(name: str) -> bool:
    """An absolute path or URL (Delta's rule for ``delta.`path```: only those are paths)."""
    if name.startswith("/"):
        return True
    scheme = urlsplit(name).scheme
    return bool(scheme) and name[len(scheme) + 1:].startswith("/")


def _assignments(text: str, expressions, target: TableRef, alias: str | None, what: str, values: list[str]):
    """``(column, value as written)`` pairs; ``values``: the texts of the values, in order."""
    if len(values) != len(expressions):
        raise _error(text, _start(expressions[0], text) if expressions else 0, f"{what}: cannot read the values")
    out: dict[str, tuple[str, str]] = {}
    for node, value in zip(expressions, values):
        if not isinstance(node, exp.EQ) or not isinstance(node.this, (exp.Column, exp.Dot)):
            raise _error(text, _start(node, text), f"{what}: expected column = expression")
        column = _column_name(node.this, target, alias)
        if column is None:
            qualifier = f" (qualified by {alias})" if alias else ""
            raise _error(text, _start(node, text), f"{what}: {node.this.sql(dialect=DIALECT)} is not a column of the "
                                                   f"target{qualifier}; only its own top-level columns can be set")
        if column.lower() in out:
            raise _error(text, _start(node, text), f"{what}: column {column!r} is assigned more than once")
        out[column.lower()] = (column, value)
    return tuple(out.values())


def _insert_values(text: str, tokens: list[Token], node: exp.Insert, target: TableRef, alias: str | None,
                   span: tuple[int, int], at: int):
    columns, values = node.this, node.expression
    if not isinstance(columns, exp.Tuple) or not isinstance(values, exp.Tuple):
        raise _error(text, at, "INSERT: expected INSERT * or INSERT (columns) VALUES (expressions)")
    if len(columns.expressions) != len(values.expressions):
        raise _error(text, _start(values, text, at), f"INSERT names {len(columns.expressions)} columns but gives "
                                                     f"{len(values.expressions)} values")
    pairs = [exp.EQ(this=c, expression=v) for c, v in zip(columns.expressions, values.expressions)]
    values_at = _find(tokens, TokenType.VALUES, *span)
    texts: list[str] = []
    if values_at is not None and tokens[values_at + 1].token_type == TokenType.L_PAREN:
        close = _closing(tokens, values_at + 1, span[1])
        texts = [_text(text, tokens, a, b) for a, b in _pieces(tokens, values_at + 2, close)]
    return _assignments(text, pairs, target, alias, "INSERT", texts)


def _column_name(node, target: TableRef, alias: str | None) -> str | None:
    """The target column an assignment names, without the target's qualifier (``x.a`` is
    ``a``); None when it names anything else (another table's column, a nested field)."""
    parts = [p.name for p in node.parts]
    prefixes = [[alias]] if alias else []
    if target.parts:
        prefixes.append(list(target.parts))
    for prefix in prefixes:
        n = len(prefix)
        if len(parts) > n and [p.lower() for p in parts[:n]] == [p.lower() for p in prefix]:
            parts = parts[n:]
            break
    return parts[0] if len(parts) == 1 else None


def _where(text: str, tokens: list[Token], node, where_at: int | None, end: int) -> str | None:
    """The WHERE condition as written (from after WHERE to the end of the statement)."""
    if (where_at is None) != (node.args.get("where") is None):
        raise _error(text, _start(node, text), "cannot find the WHERE condition")
    return _text(text, tokens, where_at + 1, end) if where_at is not None else None


# --- the statement's own text --------------------------------------------------------------
# Conditions and values go to Spark (and to the compiler) as the user wrote them: sqlglot's
# re-generated SQL is its reading of the text, not Spark's. The parse tree says what the parts
# are; the tokens, split at the statement's top-level keywords, say where each one is written.
def _text(text: str, tokens: list[Token], first: int, stop: int) -> str:
    """The text of tokens ``first`` to ``stop`` (exclusive), comments between them included."""
    return text[tokens[first].start:tokens[stop - 1].end + 1] if first < stop else ""


def _statement_end(tokens: list[Token]) -> int:
    """The index after the statement's last token (trailing semicolons aside)."""
    end = len(tokens)
    while end and tokens[end - 1].token_type == TokenType.SEMICOLON:
        end -= 1
    return end


def _top_level(tokens: list[Token], first: int, stop: int):
    """Indexes of the tokens from ``first`` to ``stop`` outside parentheses, brackets and CASE."""
    depth = 0
    for i in range(first, stop):
        kind = tokens[i].token_type
        if kind in OPENING:
            depth += 1
        elif kind in CLOSING:
            depth = max(0, depth - 1)
        elif depth == 0:
            yield i


def _find(tokens: list[Token], kind: TokenType, first: int, stop: int) -> int | None:
    return next((i for i in _top_level(tokens, first, stop) if tokens[i].token_type == kind), None)


def _closing(tokens: list[Token], opening: int, stop: int) -> int:
    """The index of the parenthesis closing the one at ``opening`` (``stop`` if none does)."""
    depth = 0
    for i in range(opening, stop):
        if tokens[i].token_type in OPENING:
            depth += 1
        elif tokens[i].token_type in CLOSING:
            depth -= 1
            if depth == 0:
                return i
    return stop


def _pieces(tokens: list[Token], first: int, stop: int) -> list[tuple[int, int]]:
    """The top-level comma-separated runs of tokens from ``first`` to ``stop``."""
    cuts = [i for i in _top_level(tokens, first, stop) if tokens[i].token_type == TokenType.COMMA]
    bounds = [first - 1] + cuts + [stop]
    return [(bounds[k] + 1, bounds[k + 1]) for k in range(len(bounds) - 1)]


def _assignment_texts(text: str, tokens: list[Token], first: int, stop: int) -> list[str]:
    """The values of ``column = value, ...`` as written."""
    texts = []
    for a, b in _pieces(tokens, first, stop):
        eq = _find(tokens, TokenType.EQ, a, b)
        texts.append(_text(text, tokens, eq + 1, b) if eq is not None else "")
    return texts


def _no_extra_clauses(text: str, node, statement: str, allowed: set[str]) -> None:
    for key, value in node.args.items():
        if key not in allowed and value:
            shown = key.rstrip("_").upper()
            where = value[0] if isinstance(value, list) else value
            raise _error(text, _start(where, text, _start(node, text)),
                         f"{statement} with {shown} is not Spark SQL's {statement} and is not supported")


# --- tokens, parsing, positions -------------------------------------------------------------
def _parse(text: str, tokens: list[Token]) -> exp.Expression:
    try:
        return parse_tokens(text, tokens)[0]
    except ParseError as exc:
        raise _parse_error(text, exc) from None
    except RecursionError:
        raise _error(text, tokens[0].start, "the statement is nested too deeply") from None


def _parse_error(text: str, exc: ParseError) -> InvalidArgumentError:
    failure = parse_failure(exc)
    if failure is None or failure.line is None or failure.end_column is None:
        return InvalidArgumentError("statement", f"cannot parse the statement: {plain(str(exc)).splitlines()[0]}")
    near = failure.near
    # sqlglot reports the line and the column where the offending token ends
    end = _offset(text, failure.line, failure.end_column)
    start = end - len(near) + 1 if near and text[max(0, end - len(near) + 1):end + 1] == near else end
    suffix = f" (near {near!r})" if near.strip() else ""
    return _error(text, start, f"cannot parse the statement: {failure.description}{suffix}")


def _offset(text: str, line: int, column: int) -> int:
    start = 0
    for _ in range(line - 1):
        nl = text.find("\n", start)
        if nl < 0:
            break
        start = nl + 1
    return max(0, min(len(text) - 1, start + column - 1))


def _error(text: str, offset: int, message: str) -> InvalidArgumentError:
    """``message at line L, column C:`` then the statement line and a caret under the column."""
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line_text = text[line_start:line_end if line_end >= 0 else len(text)].rstrip("\r")
    line_no = text.count("\n", 0, offset) + 1
    column = offset - line_start + 1
    pad = "".join("\t" if ch == "\t" else " " for ch in line_text[:column - 1])
    return InvalidArgumentError(
        "statement", f"{message} at line {line_no}, column {column}:\n  {plain(line_text)}\n  {pad}^")


def _start(node, text: str, default: int = 0) -> int:
    span = node_span(node) if isinstance(node, exp.Expression) else None
    return span[0] if span else default


def _when_indexes(tokens: list[Token]) -> list[int]:
    """The index of each top-level WHEN of a MERGE (CASE ... WHEN inside expressions skipped)."""
    return [i for i in _top_level(tokens, 0, len(tokens)) if tokens[i].token_type == TokenType.WHEN]
