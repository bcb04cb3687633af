"""Spark DDL schema strings (``"id bigint, amount decimal(10,2), tags array<string>"``) as
pyarrow schemas, without Spark.

The result is what Spark's own DDL parser followed by ``to_arrow_schema(timezone="UTC")``
gives (the schema a DataFrame of that DDL hands the writer): ``timestamp`` /
``timestamp_ltz`` -> ``timestamp[us, tz=UTC]``, ``timestamp_ntz`` -> ``timestamp[us]``, lists
of ``element``, maps of non-null ``key`` and ``value``, ``NOT NULL`` -> non-nullable,
``COMMENT 'x'`` -> Spark's field metadata. ``char(n)`` / ``varchar(n)`` become ``string``, as
in Spark's DataFrame schemas. Errors are :class:`SchemaError` with the 0-based ``position``.
"""

from __future__ import annotations

import json
import re
from typing import NoReturn

import pyarrow as pa

from .errors import SchemaError

# pyspark.sql.pandas.types.metadata_key: where Spark keeps a field's metadata (comments) in Arrow
SPARK_METADATA_KEY = b"SPARK::metadata::json"

_SIMPLE = {
    "boolean": pa.bool_(),
    "tinyint": pa.int8(), "byte": pa.int8(),
    "smallint": pa.int16(), "short": pa.int16(),
    "int": pa.int32(), "integer": pa.int32(),
    "bigint": pa.int64(), "long": pa.int64(),
    "float": pa.float32(), "real": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ltz": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
}
_DECIMAL = ("decimal", "dec", "numeric")
_CHARS = ("char", "character", "varchar")
_NOT_STORABLE = ("interval", "variant", "time", "geometry", "geography", "object")
_MAX_PRECISION = 38

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<word>[A-Za-z0-9_]+)
  | (?P<punct>[<>(),:])
""", re.VERBOSE)


class _Token:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind: str, text: str, pos: int):
        self.kind, self.text, self.pos = kind, text, pos

    @property
    def word(self) -> str:
        return self.text.lower() if self.kind == "word" else ""


def parse_ddl_schema(text: str) -> pa.Schema:
    """The pyarrow schema of a Spark DDL column list (or of ``struct<...>``, as Spark allows)."""
    if not isinstance(text, str):
        raise SchemaError(f"a DDL schema is a string, got {type(text).__name__}")
    return pa.schema(_Parser(text).schema())


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = self._tokenize(text)
        self.i = 0

    # --- tokens -----------------------------------------------------------------------------
    def _tokenize(self, text: str) -> list[_Token]:
        tokens, pos = [], 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                self._fail(f"unexpected character {text[pos]!r}", pos)
            if m.lastgroup != "space":
                tokens.append(_Token(m.lastgroup or "", m.group(), pos))
            pos = m.end()
        return tokens

    def _peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _next(self, expected: str) -> _Token:
        tok = self._peek()
        if tok is None:
            self._fail(f"expected {expected}, found the end of the schema", len(self.text))
        self.i += 1
        return tok

    def _accept(self, punct: str) -> bool:
        tok = self._peek()
        if tok is not None and tok.kind == "punct" and tok.text == punct:
            self.i += 1
            return True
        return False

    def _expect(self, punct: str) -> None:
        tok = self._next(f"{punct!r}")
        if tok.kind != "punct" or tok.text != punct:
            self._fail(f"expected {punct!r}, found {tok.text!r}", tok.pos)

    def _accept_word(self, word: str) -> bool:
        tok = self._peek()
        if tok is not None and tok.word == word:
            self.i += 1
            return True
        return False

    def _fail(self, why: str, pos: int) -> NoReturn:
        raise SchemaError(f"cannot parse the schema {self.text!r} at position {pos}: {why}", position=pos)

    # --- grammar ----------------------------------------------------------------------------
    def schema(self) -> list[pa.Field]:
        if not self.tokens:
            self._fail("no columns", 0)
        first, second = self.tokens[0], self.tokens[1] if len(self.tokens) > 1 else None
        if first.word == "struct" and second is not None and second.text == "<":  # struct<a:int,...>
            self.i = 1
            fields = self._struct_fields()
        else:
            fields = self._fields()
        tok = self._peek()
        if tok is not None:
            self._fail(f"expected ',' or the end of the schema, found {tok.text!r}", tok.pos)
        return fields

    def _fields(self) -> list[pa.Field]:
        fields = [self._field()]
        while self._accept(","):
            fields.append(self._field())
        return fields

    def _struct_fields(self) -> list[pa.Field]:
        self._expect("<")
        if self._accept(">"):
            return []
        fields = self._fields()
        self._expect(">")
        return fields

    def _field(self) -> pa.Field:
        name = self._name()
        self._accept(":")
        arrow_type = self._type(name)
        nullable, comment = True, None
        while True:
            if self._accept_word("not"):
                tok = self._next("NULL")
                if tok.word != "null":
                    self._fail(f"expected NULL after NOT, found {tok.text!r}", tok.pos)
                nullable = False
            elif self._accept_word("comment"):
                tok = self._next("a quoted comment")
                if tok.kind != "string":
                    self._fail(f"expected a quoted comment, found {tok.text!r}", tok.pos)
                comment = _unquote_string(tok.text)
            else:
                break
        metadata = {SPARK_METADATA_KEY: json.dumps({"comment": comment}).encode()} if comment is not None else None
        return pa.field(name, arrow_type, nullable=nullable, metadata=metadata)

    def _name(self) -> str:
        tok = self._next("a column name")
        if tok.kind == "word":
            return tok.text
        if tok.kind == "quoted":
            return tok.text[1:-1].replace("``", "`")
        self._fail(f"expected a column name, found {tok.text!r}", tok.pos)

    def _type(self, column: str) -> pa.DataType:
        tok = self._next(f"the type of column {column!r}")
        word = tok.word
        if word in _SIMPLE:
            return _SIMPLE[word]
        if word in _DECIMAL:
            return self._decimal(tok)
        if word in _CHARS:
            self._expect("(")
            self._int("a length")
            self._expect(")")
            return pa.string()
        if word == "array":
            self._expect("<")
            element = self._type(column)
            self._expect(">")
            return pa.list_(pa.field("element", element))
        if word == "map":
            self._expect("<")
            key = self._type(column)
            self._expect(",")
            value = self._type(column)
            self._expect(">")
            return pa.map_(pa.field("key", key, nullable=False), pa.field("value", value))
        if word == "struct":
            return pa.struct(self._struct_fields())
        if word in _NOT_STORABLE:
            raise SchemaError(f"column {column!r}: Spark type {tok.text!r} (position {tok.pos}) cannot be stored "
                              "in a Hive ACID ORC table", column=column, position=tok.pos)
        self._fail(f"unknown data type {tok.text!r} for column {column!r}", tok.pos)

    def _decimal(self, tok: _Token) -> pa.DataType:
        precision, scale = 10, 0  # Spark's default decimal
        if self._accept("("):
            precision = self._int("a precision")
            scale = self._int("a scale") if self._accept(",") else 0
            self._expect(")")
        if not 1 <= precision <= _MAX_PRECISION or not 0 <= scale <= precision:
            self._fail(f"decimal({precision},{scale}) needs 1 <= precision <= {_MAX_PRECISION} and "
                       "0 <= scale <= precision", tok.pos)
        return pa.decimal128(precision, scale)

    def _int(self, what: str) -> int:
        tok = self._next(what)
        if tok.kind != "word" or not tok.text.isdigit() or len(tok.text) > 9:
            self._fail(f"expected {what}, found {tok.text!r}", tok.pos)
        return int(tok.text)


def _unquote_string(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


# --- Spark's JSON schemas ------------------------------------------------------------------------
_JSON_SIMPLE = {**_SIMPLE, "integer": pa.int32(), "null": pa.null()}
_JSON_PARAMETRIZED = re.compile(r"(decimal|char|varchar)\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)")


def parse_json_schema(text: str) -> pa.Schema:
    """The pyarrow schema of a Spark schema in its JSON form (``StructType.json()``), as
    ``to_arrow_schema(timezone="UTC")`` gives it - without importing pyspark: a ``StructType``
    reaches the core as ``schema.json()`` (field metadata such as comments is kept)."""
    try:
        tree = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"not a Spark JSON schema: {exc}") from None
    if not isinstance(tree, dict) or tree.get("type") != "struct":
        raise SchemaError(f"a Spark JSON schema is a struct, got {str(text)[:80]!r}")
    return pa.schema(_json_fields(tree, "the schema"))


def _json_fields(struct: dict, where: str) -> list[pa.Field]:
    fields = struct.get("fields")
    if not isinstance(fields, list):
        raise SchemaError(f"{where}: a Spark JSON struct without a list of fields")
    out = []
    for f in fields:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise SchemaError(f"{where}: a field without a name: {f!r}")
        name = f["name"]
        metadata = f.get("metadata") or None
        out.append(pa.field(name, _json_type(f.get("type"), name), nullable=bool(f.get("nullable", True)),
                            metadata={SPARK_METADATA_KEY: json.dumps(metadata).encode()} if metadata else None))
    return out


def _json_type(node, column: str) -> pa.DataType:
    if isinstance(node, str):
        word = node.strip().lower()
        if word in _JSON_SIMPLE:
            return _JSON_SIMPLE[word]
        if word == "string" or word.startswith("string collate "):
            return pa.string()
        m = _JSON_PARAMETRIZED.fullmatch(word)
        if m is not None:
            if m.group(1) != "decimal":
                return pa.string()
            precision, scale = int(m.group(2)), int(m.group(3) or 0)
            if not 1 <= precision <= _MAX_PRECISION or not 0 <= scale <= precision:
                raise SchemaError(f"column {column!r}: {node} needs 1 <= precision <= {_MAX_PRECISION} and "
                                  "0 <= scale <= precision", column=column)
            return pa.decimal128(precision, scale)
        if word.split(" ")[0].split("(")[0] in _NOT_STORABLE:
            raise SchemaError(f"column {column!r}: Spark type {node!r} cannot be stored in a Hive ACID ORC table",
                              column=column)
        raise SchemaError(f"column {column!r}: unknown Spark data type {node!r}", column=column)
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "array":
            element = _json_type(node.get("elementType"), column)
            return pa.list_(pa.field("element", element, nullable=bool(node.get("containsNull", True))))
        if kind == "map":
            key = _json_type(node.get("keyType"), column)
            value = _json_type(node.get("valueType"), column)
            return pa.map_(pa.field("key", key, nullable=False),
                           pa.field("value", value, nullable=bool(node.get("valueContainsNull", True))))
        if kind == "struct":
            return pa.struct(_json_fields(node, f"column {column!r}"))
        if kind == "udt" and "sqlType" in node:  # a user-defined type is stored as its SQL type
            return _json_type(node["sqlType"], column)
    raise SchemaError(f"column {column!r}: unknown Spark data type {node!r}", column=column)
