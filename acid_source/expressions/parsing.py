"""Bounded parsing of SQL text with sqlglot (Spark dialect): the one front door for every SQL
text acidorc reads (``rowFilter``, ``partitionFilter``, DML conditions and values, and the
UPDATE / DELETE / MERGE statements of :mod:`.statements`).

Text is tokenized by :mod:`.lexer`: literals, quoted names and comments by Spark's own lexical
rules (so ``'n''8'`` is ``n'8`` everywhere), the rest by sqlglot.

One bound for all of them: at most MAX_TEXT_LENGTH characters and MAX_NESTING levels of
parentheses, brackets and CASE, checked on the tokens before sqlglot's parser sees them (it
recurses about twenty Python frames per level, so at the default recursion limit it fails near
thirty levels). Text is parsed inline, and again on a helper thread with a large stack and a
raised recursion limit only when the inline attempt ran out of frames. Every failure becomes an
:class:`InvalidArgumentError` with a plain-text position (sqlglot's own messages underline with
terminal escape codes).
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from ..errors import InvalidArgumentError
from . import lexer

DIALECT = lexer.DIALECT
MAX_TEXT_LENGTH = 100_000
MAX_NESTING = 200

#: tokens that open / close one level of nesting (what the parser recurses on)
OPENING = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.CASE})
CLOSING = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.END})
_DEEP_STACK_BYTES = 256 * 1024 * 1024
_DEEP_RECURSION_LIMIT = 60_000
_DEEP_LOCK = threading.Lock()


def position(text: str, offset: int) -> str:
    """``line L, column C`` (both from 1) of a character offset in ``text``."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


def node_span(node: exp.Expression) -> tuple[int, int] | None:
    """First and last character offsets of the tokens a parsed node came from, if known."""
    starts, ends = [], []
    for child in node.walk():
        meta = child.meta
        if "start" in meta:
            starts.append(meta["start"])
            ends.append(meta.get("end", meta["start"]))
    return (min(starts), max(ends)) if starts else None


# --- the shared steps ---------------------------------------------------------------------------
def length_problem(text: str, what: str) -> str | None:
    """Why ``text`` is too long to parse (``what``: "expression", "statement"), or None."""
    if len(text) > MAX_TEXT_LENGTH:
        return f"the {what} is {len(text)} characters long; at most {MAX_TEXT_LENGTH} are accepted"
    return None


def tokenize(text: str) -> tuple[list[Token], int | None]:
    """The tokens (literals, quoted names and comments read by Spark's rules, see
    :mod:`.lexer`), and where reading failed (or None): the start of an unterminated string,
    quoted name or comment; the tokens are then those of the text before it."""
    try:
        return lexer.tokenize(text), None
    except lexer.UnreadableText as exc:
        try:
            return lexer.tokenize(text[:exc.offset]), exc.offset
        except lexer.UnreadableText:
            return [], exc.offset


def too_deep_at(tokens: list[Token]) -> int | None:
    """The offset of the first token nested deeper than MAX_NESTING, or None."""
    depth = 0
    for token in tokens:
        if token.token_type in OPENING:
            depth += 1
            if depth > MAX_NESTING:
                return token.start
        elif token.token_type in CLOSING:
            depth = max(0, depth - 1)
    return None


def nesting_problem(what: str) -> str:
    """The message for text nested deeper than MAX_NESTING (the caller adds where)."""
    return f"the {what} is nested more than {MAX_NESTING} levels deep"


def parse_tokens(text: str, tokens: list[Token]) -> list[exp.Expression]:
    """sqlglot's parse of already-checked tokens, on a deep stack if the inline attempt runs
    out of frames. Raises sqlglot's ParseError, or RecursionError even on the deep stack."""
    def parse():
        return Dialect.get_or_raise(DIALECT).parser().parse(tokens, text)

    try:
        statements = parse()
    except RecursionError:
        statements = on_deep_stack(parse)
    return [s for s in statements if s is not None]


def on_deep_stack(function):
    """Run ``function`` on a thread with a large stack and a raised recursion limit."""
    outcome = {}

    def target():
        try:
            outcome["value"] = function()
        except BaseException as exc:  # handed back to the caller's thread
            outcome["error"] = exc

    with _DEEP_LOCK:
        old_limit = sys.getrecursionlimit()
        old_stack = threading.stack_size(_DEEP_STACK_BYTES)
        try:
            sys.setrecursionlimit(max(old_limit, _DEEP_RECURSION_LIMIT))
            worker = threading.Thread(target=target, name="acidorc-sql-parse", daemon=True)
            worker.start()
            worker.join()
        finally:
            threading.stack_size(old_stack)
            sys.setrecursionlimit(old_limit)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def plain(message: str) -> str:
    """Drop terminal escape sequences (sqlglot underlines the offending token with them)."""
    out, i = [], 0
    while i < len(message):
        if message[i] == "\x1b":
            i += 1
            if i < len(message) and message[i] == "[":
                i += 1
                while i < len(message) and not ("@" <= message[i] <= "~"):
                    i += 1
            i += 1
            continue
        out.append(message[i])
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class ParseFailure:
    """What sqlglot's parser objected to, in plain words: the description, the offending
    token's text, and where it ends (sqlglot's line and column; None when it gave none)."""

    description: str
    near: str
    line: int | None
    end_column: int | None


def parse_failure(exc: ParseError) -> ParseFailure | None:
    """The plain-words form of sqlglot's first parse error (None when it has no details)."""
    details = exc.errors[0] if getattr(exc, "errors", None) else None
    if not details:
        return None
    description = plain(str(details.get("description") or "syntax error"))
    if "Required keyword" in description and "missing for" in description:
        kind = description.rsplit(".", 1)[-1].strip("'>\" ")
        description = ("MERGE needs at least one WHEN [NOT] MATCHED clause" if kind == "Whens"
                       else f"incomplete {kind} expression")
    elif description.startswith("Invalid expression / Unexpected token"):
        description = "unexpected token"
    line, column = details.get("line"), details.get("col")
    near = plain(str(details.get("highlight") or ""))
    return ParseFailure(description, near, line if isinstance(line, int) else None,
                        column if isinstance(column, int) else None)


# --- one expression -------------------------------------------------------------------------------
def parse_expression(text: str, argument: str) -> exp.Expression:
    """The single sqlglot expression in ``text``."""
    if not isinstance(text, str):
        raise InvalidArgumentError(argument, f"expected a SQL expression string, got {type(text).__name__}")
    too_long = length_problem(text, "expression")
    if too_long:
        raise InvalidArgumentError(argument, too_long)
    tokens, failed_at = tokenize(text)
    if failed_at is not None:
        raise InvalidArgumentError(argument, "cannot read the expression (an unterminated string, quoted name or "
                                             f"comment?) at {position(text, failed_at)}")
    deep = too_deep_at(tokens)
    if deep is not None:
        raise InvalidArgumentError(argument, f"{nesting_problem('expression')} (at {position(text, deep)})")
    try:
        statements = parse_tokens(text, tokens)
    except ParseError as exc:
        raise InvalidArgumentError(argument, _parse_error_message(exc)) from None
    except RecursionError:
        raise InvalidArgumentError(argument, "the expression is nested too deeply") from None
    if not statements:
        raise InvalidArgumentError(argument, "the expression is empty")
    if len(statements) > 1:
        span = node_span(statements[1])
        where = f" (the second starts at {position(text, span[0])})" if span else ""
        raise InvalidArgumentError(argument, f"expected one expression, found {len(statements)} statements{where}")
    return statements[0]


def _parse_error_message(exc: ParseError) -> str:
    failure = parse_failure(exc)
    if failure is None:
        return f"cannot parse the expression: {plain(str(exc)).splitlines()[0]}"
    near = failure.near.strip()
    column = failure.end_column
    if isinstance(column, int) and near and "\n" not in near:
        column = max(1, column - len(near) + 1)  # sqlglot gives the column where the token ends
    where = f"line {failure.line}, column {column}"
    return f"cannot parse the expression: {failure.description} at {where}" + (f" (near {near!r})" if near else "")
