"""Bounded parsing of one SQL expression with sqlglot (Spark dialect).

sqlglot's parser recurses about twenty Python frames per level of parentheses, so at the
default recursion limit it fails near thirty levels. Text is tokenized first (to reject deep
nesting with a position), parsed inline, and parsed again on a helper thread with a large stack
and a raised recursion limit only when the inline attempt ran out of frames. Every failure
becomes an :class:`InvalidArgumentError` with a plain-text position.
"""

from __future__ import annotations

import sys
import threading

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from ..errors import InvalidArgumentError

DIALECT = "spark"
MAX_TEXT_LENGTH = 100_000
MAX_NESTING = 200

_OPENING = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.CASE}
_CLOSING = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.END}
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


def parse_expression(text: str, argument: str) -> exp.Expression:
    """The single sqlglot expression in ``text``."""
    if not isinstance(text, str):
        raise InvalidArgumentError(argument, f"expected a SQL expression string, got {type(text).__name__}")
    if len(text) > MAX_TEXT_LENGTH:
        raise InvalidArgumentError(
            argument, f"the expression is {len(text)} characters long; at most {MAX_TEXT_LENGTH} are accepted")
    dialect = Dialect.get_or_raise(DIALECT)
    try:
        tokens = dialect.tokenize(text)
    except TokenError as exc:
        raise InvalidArgumentError(argument, f"cannot read the expression: {_plain(str(exc))}") from None
    _check_nesting(text, tokens, argument)

    def parse():
        return dialect.parser().parse(tokens, text)

    try:
        try:
            statements = parse()
        except RecursionError:
            statements = _on_deep_stack(parse)
    except ParseError as exc:
        raise InvalidArgumentError(argument, _parse_error_message(exc)) from None
    except RecursionError:
        raise InvalidArgumentError(argument, "the expression is nested too deeply") from None
    statements = [s for s in statements if s is not None]
    if not statements:
        raise InvalidArgumentError(argument, "the expression is empty")
    if len(statements) > 1:
        span = node_span(statements[1])
        where = f" (the second starts at {position(text, span[0])})" if span else ""
        raise InvalidArgumentError(argument, f"expected one expression, found {len(statements)} statements{where}")
    return statements[0]


def _check_nesting(text, tokens, argument) -> None:
    depth = 0
    for token in tokens:
        if token.token_type in _OPENING:
            depth += 1
            if depth > MAX_NESTING:
                raise InvalidArgumentError(
                    argument, f"the expression is nested more than {MAX_NESTING} levels deep "
                              f"(at {position(text, token.start)})")
        elif token.token_type in _CLOSING:
            depth = max(0, depth - 1)


def _on_deep_stack(function):
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


def _plain(message: str) -> str:
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


def _parse_error_message(exc: ParseError) -> str:
    details = exc.errors[0] if getattr(exc, "errors", None) else None
    if not details:
        return f"cannot parse the expression: {_plain(str(exc)).splitlines()[0]}"
    description = _plain(str(details.get("description") or "syntax error"))
    if "Required keyword" in description and "missing for" in description:
        kind = description.rsplit(".", 1)[-1].strip("'>\" ")
        description = f"incomplete {kind} expression"
    elif description.startswith("Invalid expression / Unexpected token"):
        description = "unexpected token"
    near = _plain(str(details.get("highlight") or "")).strip()
    column = details.get("col")
    if isinstance(column, int) and near and "\n" not in near:
        column = max(1, column - len(near) + 1)  # sqlglot gives the column where the token ends
    where = f"line {details.get('line')}, column {column}"
    return f"cannot parse the expression: {description} at {where}" + (f" (near {near!r})" if near else "")
