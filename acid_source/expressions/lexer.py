"""Spark SQL's lexical rules in front of sqlglot's tokenizer: literals, quoted names and comments
are read here exactly as Spark 4 reads them, everything else by sqlglot.

Why: sqlglot's Spark dialect reads some text differently from Spark's own lexer
(``SqlBaseLexer.g4``, ``SparkParserUtils.unescapeSQLString``): ``'n''8'`` is two adjacent literals
to it (``CONCAT('n', '8')``) but ``n'8`` to Spark, ``1.5F`` is the decimal 1.5 cast to float,
``1_000`` a number where Spark sees a name. A condition that means something else than in Spark
changes other rows than the user named, so no literal may be read by other rules than Spark's.

How: one pass over the text reads, by Spark's rules,

- strings ``'...'`` and ``"..."`` (a doubled quote is one quote; backslash escapes as Spark
  unescapes them: ``\\uXXXX``, ``\\UXXXXXXXX``, octal ``\\[01][0-7][0-7]``, ``\\0 \\b \\n \\r \\t
  \\Z``, ``\\%`` and ``\\_`` keeping their backslash, any other character as itself) and raw
  strings ``r'...'`` (no escapes). Adjacent strings are one literal (Spark's ``stringLit+``),
  except after DATE, TIMESTAMP[_LTZ|_NTZ], INTERVAL and ESCAPE, which take one string;
- binary literals ``X'...'`` (one string; its hex digits are checked where the value is built);
- names in backquotes (a doubled backquote is one);
- numbers, by Spark's longest-match rule: ``1L 1S 1Y 1D 1F 1BD``, exponents (double), decimals
  (Spark's ``isValidDecimal``: ``2.3W`` is ``2 . 3W``), and words that start with digits, which are
  names (``1a``, ``1_000``, ``0x1F``). A number with a type suffix becomes the tokens sqlglot
  emits for one (``NUMBER :: TYPE``, so trees keep the shape every reader of them knows), but the
  NUMBER carries the literal as written; the compiler types it from that text;
- comments: ``--`` to the end of the line (a backslash before the newline continues it) and
  ``/* */``, nested; hints ``/*+`` are left to sqlglot.

Spark's default settings are the reference: ``spark.sql.parser.escapedStringLiterals`` false
(backslashes escape), ``spark.sql.ansi.doubleQuotedIdentifiers`` false (``"..."`` is a string),
``spark.sql.legacy.exponentLiteralAsDecimal.enabled`` false (``1E2`` is a double).

sqlglot tokenizes a copy of the text in which all of that is blanked out (line breaks kept), so
its tokens (keywords, names, operators) keep their offsets, lines and columns; the tokens read
here are merged in by offset. Each token's ``start`` / ``end`` are its characters in the text.
"""

from __future__ import annotations

import bisect

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

#: Spark's WS rule
WHITESPACE = frozenset(" \t\n\f\r\u000b\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                       "\u2009\u200a\u2028\u202f\u205f\u3000")
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_QUOTES = frozenset("'\"")
_ESCAPES = {"0": "\x00", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}
#: words after which a string stands alone: they take one string literal in Spark's grammar
_ONE_STRING_AFTER = frozenset({"DATE", "TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP_NTZ", "INTERVAL", "ESCAPE"})
#: a numeric literal's type suffix, and the type token sqlglot emits for it
SUFFIX_TYPES = {"L": (TokenType.BIGINT, "BIGINT"), "S": (TokenType.SMALLINT, "SMALLINT"),
                "Y": (TokenType.TINYINT, "TINYINT"), "F": (TokenType.FLOAT, "FLOAT"),
                "D": (TokenType.DOUBLE, "DOUBLE"), "BD": (TokenType.DECIMAL, "DECIMAL")}
DIALECT = "spark"


class UnreadableText(ValueError):
    """The text cannot be read from ``offset`` on: an unterminated string, quoted name or comment."""

    def __init__(self, offset: int, what: str):
        super().__init__(f"unterminated {what} at offset {offset}")
        self.offset = offset
        self.what = what


def tokenize(text: str) -> list[Token]:
    """sqlglot tokens for ``text``, literals and quoted names read by Spark's rules. Raises
    :class:`UnreadableText`."""
    return _Lexer(text).run()


def unescape(literal: str) -> str:
    """The value of one Spark string literal token, quotes (and ``r`` prefix) included:
    ``SparkParserUtils.unescapeSQLString`` on UTF-16 code units, so ``\\uD83D\\uDE00`` is one
    character and a lone surrogate becomes ``?`` (as Java's UTF-8 encoder writes it)."""
    if literal[0] in "rR":
        return literal[2:-1]
    quote, out = literal[0], []
    i, length = 1, len(literal) - 1
    while i < length:
        c = literal[i]
        if c == quote and i + 1 < length and literal[i + 1] == quote:
            out.append(quote)
            i += 2
        elif c != "\\" or i + 1 == length:
            out.append(c)
            i += 1
        else:
            i += 1
            n = literal[i]
            if n == "u" and i + 5 <= length and all(ch in _HEX for ch in literal[i + 1:i + 5]):
                out.append(chr(int(literal[i + 1:i + 5], 16)))
                i += 5
            elif n == "U" and i + 9 <= length and all(ch in _HEX for ch in literal[i + 1:i + 9]):
                code = int(literal[i + 1:i + 9], 16)
                if code < 0x10000:
                    out.append(chr(code))
                else:  # Java's arithmetic, truncated to 16 bits as its (char) casts do
                    out.append(chr(((code - 0x10000) // 0x400 + 0xD800) & 0xFFFF))
                    out.append(chr(((code - 0x10000) % 0x400 + 0xDC00) & 0xFFFF))
                i += 9
            elif i + 3 <= length and n in "01" and literal[i + 1] in "01234567" and literal[i + 2] in "01234567":
                out.append(chr(int(literal[i:i + 3], 8)))
                i += 3
            else:
                out.append(_ESCAPES.get(n, n))
                i += 1
    return _from_utf16("".join(out))


def _from_utf16(units: str) -> str:
    """Pair surrogates into characters; a lone one becomes ``?``."""
    if not any("\ud800" <= c <= "\udfff" for c in units):
        return units
    out, i = [], 0
    while i < len(units):
        c = units[i]
        if "\ud800" <= c <= "\udbff" and i + 1 < len(units) and "\udc00" <= units[i + 1] <= "\udfff":
            out.append(chr(0x10000 + ((ord(c) - 0xD800) << 10) + (ord(units[i + 1]) - 0xDC00)))
            i += 2
        else:
            out.append("?" if "\ud800" <= c <= "\udfff" else c)
            i += 1
    return "".join(out)


def _upper(ch: str) -> str:
    """The character as Spark's upper-casing char stream shows it to the lexer."""
    upper = ch.upper()
    return upper if len(upper) == 1 else ch


def _is_word_char(ch: str) -> bool:
    return ch.isalpha() or ch in _DIGITS or ch == "_"


class _Lexer:
    def __init__(self, text: str):
        self.text = text
        self.n = len(text)
        self.tokens: list[Token] = []
        self.blanks: list[tuple[int, int]] = []  # [start, end) spans read here
        self.line_starts = [0] + [i + 1 for i, c in enumerate(text)
                                  if c == "\n" or (c == "\r" and text[i + 1:i + 2] != "\n")]
        #: what came last, comments and whitespace aside: "string" (a string literal adjacent
        #: ones join), "word" (with its upper-cased text in last_word) or "other"
        self.last = "other"
        self.last_word = ""

    # -- the pass ---------------------------------------------------------------------------
    def run(self) -> list[Token]:
        text, n, i = self.text, self.n, 0
        while i < n:
            ch = text[i]
            if ch in WHITESPACE:
                i += 1
            elif text.startswith("--", i):
                i = self._blank(i, self._simple_comment_end(i))
            elif text.startswith("/*", i) and not text.startswith("/*+", i):
                i = self._blank(i, self._bracketed_comment_end(i))
            elif ch in _QUOTES:
                i = self._string(i, self._quoted_end(i, "string"))
            elif ch == "`":
                end = self._quoted_end(i, "quoted name")
                self._add(TokenType.IDENTIFIER, text[i + 1:end - 1].replace("``", "`"), i, end)
                i = self._blank(i, end)
                self.last = "other"
            elif ch in _DIGITS or (ch == "." and i + 1 < n and text[i + 1] in _DIGITS):
                i = self._number(i)
            elif _is_word_char(ch):
                i = self._word(i)
            else:
                i += 1
                self.last = "other"
        return self._merge(self._sqlglot_tokens())

    def _word(self, i: int) -> int:
        text, end = self.text, i
        while end < self.n and _is_word_char(text[end]):
            end += 1
        word = _upper(text[i]) if end == i + 1 else text[i:end].upper()
        if word == "R" and end < self.n and text[end] in _QUOTES:
            return self._string(i, self._raw_end(i))
        if word == "X":
            at = self._skip_hidden(end)
            raw = at + 1 < self.n and _upper(text[at]) == "R" and text[at + 1] in _QUOTES
            if at < self.n and (text[at] in _QUOTES or raw):
                close = self._raw_end(at) if raw else self._quoted_end(at, "string")
                self._add(TokenType.HEX_STRING, unescape(text[at:close]), i, close)
                self.last = "other"
                return self._blank(i, close)
        self.last, self.last_word = "word", word
        return end

    def _string(self, start: int, end: int) -> int:
        """A string literal at ``start:end``, joined to the one before when they are adjacent."""
        value = unescape(self.text[start:end])
        previous = self.tokens[-1] if self.tokens else None
        if self.last == "string" and previous is not None and previous.token_type == TokenType.STRING:
            previous.text += value
            previous.end = end - 1
            previous.line, previous.col = self._line_col(end - 1)
        else:
            self._add(TokenType.STRING, value, start, end)
        self.last = "other" if self.last == "word" and self.last_word in _ONE_STRING_AFTER else "string"
        return self._blank(start, end)

    def _number(self, i: int) -> int:
        end, kind, suffix = self._number_match(i)
        if kind == "dot":
            self.last = "other"
            return end
        if kind == "name":
            self._add(TokenType.VAR, self.text[i:end], i, end)
        else:
            self._add(TokenType.NUMBER, self.text[i:end], i, end)
            if suffix:
                type_token, type_name = SUFFIX_TYPES[suffix]
                self._add(TokenType.DCOLON, "::", i, end)
                self._add(type_token, type_name, i, end)
        self.last = "other"
        return self._blank(i, end)

    def _number_match(self, i: int) -> tuple[int, str, str | None]:
        """The token Spark's lexer reads at ``i`` (a digit, or a point before one): the longest
        of the numeric literal rules and IDENTIFIER, ties going to the rule listed first in
        SqlBaseLexer.g4. Returns its end, its kind ("number", "name" or "dot") and the suffix."""
        text, n = self.text, self.n

        def digits(j: int) -> int:
            while j < n and text[j] in _DIGITS:
                j += 1
            return j

        def exponent(j: int) -> int | None:
            if j < n and _upper(text[j]) == "E":
                k = j + 1 + (j + 1 < n and text[j + 1] in "+-")
                end = digits(k)
                if end > k:
                    return end
            return None

        def valid_decimal(j: int) -> bool:  # Spark's isValidDecimal: what follows is no letter, digit or _
            if j >= n:
                return True
            c = _upper(text[j])
            return not ("A" <= c <= "Z" or c in _DIGITS or c == "_")

        def suffixes(base: int, checked: bool) -> list[tuple[int, int, str]]:
            found = []
            for suffix, order in (("F", 6), ("D", 7), ("BD", 8)):
                end = base + len(suffix)
                if end <= n and "".join(_upper(c) for c in text[base:end]) == suffix and (
                        not checked or valid_decimal(end)):
                    found.append((end, order, suffix))
            return found

        candidates: list[tuple[int, int, str | None]] = []  # (end, rule order, suffix or kind)
        whole = digits(i)
        if whole > i:
            candidates.append((whole, 3, None))
            for suffix, order in (("L", 0), ("S", 1), ("Y", 2)):
                if whole < n and _upper(text[whole]) == suffix:
                    candidates.append((whole + 1, order, suffix))
            power = exponent(whole)
            if power is not None:
                candidates.append((power, 4, None))
            for base in (whole, power):
                if base is not None:
                    candidates += suffixes(base, checked=False)
        if whole < n and text[whole] == ".":
            fraction = digits(whole + 1)
            if whole > i or fraction > whole + 1:
                if valid_decimal(fraction):
                    candidates.append((fraction, 5, None))
                power = exponent(fraction)
                if power is not None and valid_decimal(power):
                    candidates.append((power, 4, None))
                for base in (fraction, power):
                    if base is not None:
                        candidates += suffixes(base, checked=True)
        if text[i] == ".":
            candidates.append((i + 1, -1, "dot"))  # DOT is listed before every literal rule
        else:
            end = i
            while end < n and _is_word_char(text[end]):
                end += 1
            candidates.append((end, 9, "name"))
        end, _, tag = max(candidates, key=lambda c: (c[0], -c[1]))
        if tag in ("dot", "name"):
            return end, tag, None
        return end, "number", tag

    # -- pieces -----------------------------------------------------------------------------
    def _quoted_end(self, i: int, what: str) -> int:
        """The end (exclusive) of the quoted text opening at ``i``: a doubled quote is one, and in
        strings a backslash escapes the next character."""
        text, quote, j = self.text, self.text[i], i + 1
        while j < self.n:
            c = text[j]
            if c == "\\" and quote != "`":
                j += 2
            elif c == quote:
                if j + 1 < self.n and text[j + 1] == quote:
                    j += 2
                else:
                    return j + 1
            else:
                j += 1
        raise UnreadableText(i, what)

    def _raw_end(self, i: int) -> int:
        """The end (exclusive) of the raw string ``r'...'`` at ``i``: the next same quote ends it."""
        quote = self.text[i + 1]
        close = self.text.find(quote, i + 2)
        if close < 0:
            raise UnreadableText(i, "string")
        return close + 1

    def _simple_comment_end(self, i: int) -> int:
        text, j = self.text, i + 2
        while j < self.n:
            if text[j] == "\\" and text[j + 1:j + 2] == "\n":
                j += 2
            elif text[j] in "\r\n":
                break
            else:
                j += 1
        return j

    def _bracketed_comment_end(self, i: int) -> int:
        text, depth, j = self.text, 0, i
        while j < self.n:
            if text.startswith("/*", j) and not text.startswith("/*+", j):
                depth += 1
                j += 2
            elif text.startswith("*/", j):
                depth -= 1
                j += 2
                if depth == 0:
                    return j
            else:
                j += 1
        raise UnreadableText(i, "comment")

    def _skip_hidden(self, i: int) -> int:
        """The first offset from ``i`` that is neither whitespace nor a comment."""
        text = self.text
        while i < self.n:
            if text[i] in WHITESPACE:
                i += 1
            elif text.startswith("--", i):
                i = self._simple_comment_end(i)
            elif text.startswith("/*", i) and not text.startswith("/*+", i):
                i = self._bracketed_comment_end(i)
            else:
                break
        return i

    def _blank(self, start: int, end: int) -> int:
        self.blanks.append((start, end))
        return end

    def _line_col(self, offset: int) -> tuple[int, int]:
        """sqlglot's line and column of a character (both from 1)."""
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def _add(self, token_type: TokenType, value: str, start: int, end: int) -> None:
        line, col = self._line_col(end - 1)
        self.tokens.append(Token(token_type, value, line, col, start, end - 1))

    # -- sqlglot for the rest ---------------------------------------------------------------
    def _sqlglot_tokens(self) -> list[Token]:
        masked = list(self.text)
        for start, end in self.blanks:
            for k in range(start, end):
                if masked[k] not in "\r\n":
                    masked[k] = " "
        tokenizer = Dialect.get_or_raise(DIALECT).tokenizer()
        try:
            return tokenizer.tokenize("".join(masked))
        except TokenError:
            tokens = list(getattr(tokenizer, "tokens", None) or [])
            offset = tokens[-1].end + 1 if tokens else 0
            while offset < self.n and self.text[offset].isspace():
                offset += 1
            raise UnreadableText(offset, "text") from None

    def _merge(self, theirs: list[Token]) -> list[Token]:
        """Both token lists in text order. A token of sqlglot's that covers some of ours (the
        rest of a command such as SHOW, which it keeps as one string) replaces them."""
        out: list[Token] = []
        ours = self.tokens
        k = 0
        for token in theirs:
            while k < len(ours) and ours[k].start < token.start:
                out.append(ours[k])
                k += 1
            while k < len(ours) and ours[k].start <= token.end:
                k += 1
            out.append(token)
        out.extend(ours[k:])
        return out
