"""Hive type strings (``decimal(10,2)``, ``array<struct<a:int>>``, ...) parsed into type
trees, and the Hive type of an Arrow type: what :mod:`.bucketing` hashes a column as."""

from __future__ import annotations

import re

import pyarrow as pa

_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\d+|[<>(),:])")
_SIMPLE = {"boolean", "tinyint", "smallint", "int", "integer", "bigint", "float", "double",
           "string", "binary", "date", "timestamp", "void"}
_NOT_IMPLEMENTED = {"uniontype", "interval_year_month", "interval_day_time", "interval"}


def parse_hive_type(text: str) -> tuple:
    """Parse a Hive type string into a small tree.

    ``(kind,)`` for primitives, ``("decimal", p, s)``, ``("char", n)``, ``("varchar", n)``,
    ``("array", elem)``, ``("map", key, value)``, ``("struct", ((name, type), ...))``.
    Types this module cannot hash (``uniontype``, ``timestamp with local time zone``,
    intervals) raise :class:`NotImplementedError`.
    """
    tokens, pos, text = [], 0, text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"bad Hive type {text!r} near {text[pos:]!r}")
        tokens.append(m.group(1))
        pos = m.end()
    tree, i = _parse(tokens, 0, text)
    if i != len(tokens):
        rest = " ".join(tokens[i:])
        if tree == ("timestamp",) and rest.lower().startswith("with"):
            raise NotImplementedError(
                f"bucketing hash of Hive type {text!r} (timestamp with local time zone) is not "
                "implemented")
        raise ValueError(f"bad Hive type {text!r}: trailing {rest!r}")
    return tree


def _expect(tokens, i, tok, text):
    if i >= len(tokens) or tokens[i] != tok:
        raise ValueError(f"bad Hive type {text!r}: expected {tok!r}")
    return i + 1


def _parse(tokens, i, text):
    if i >= len(tokens):
        raise ValueError(f"bad Hive type {text!r}: unexpected end")
    name = tokens[i].lower()
    i += 1
    if name in _SIMPLE:
        return ("int" if name == "integer" else name,), i
    if name == "decimal":
        p, s = 10, 0  # Hive's default for a bare "decimal"
        if i < len(tokens) and tokens[i] == "(":
            p = int(tokens[i + 1])
            i += 2
            if tokens[i] == ",":
                s = int(tokens[i + 1])
                i += 2
            i = _expect(tokens, i, ")", text)
        return ("decimal", p, s), i
    if name in ("char", "varchar"):
        i = _expect(tokens, i, "(", text)
        n = int(tokens[i])
        return (name, n), _expect(tokens, i + 1, ")", text)
    if name == "array":
        elem, i = _parse(tokens, _expect(tokens, i, "<", text), text)
        return ("array", elem), _expect(tokens, i, ">", text)
    if name == "map":
        key, i = _parse(tokens, _expect(tokens, i, "<", text), text)
        val, i = _parse(tokens, _expect(tokens, i, ",", text), text)
        return ("map", key, val), _expect(tokens, i, ">", text)
    if name == "struct":
        i = _expect(tokens, i, "<", text)
        fields = []
        while True:
            fname = tokens[i]
            ftype, i = _parse(tokens, _expect(tokens, i + 1, ":", text), text)
            fields.append((fname, ftype))
            if i < len(tokens) and tokens[i] == ",":
                i += 1
                continue
            return ("struct", tuple(fields)), _expect(tokens, i, ">", text)
    if name in _NOT_IMPLEMENTED:
        raise NotImplementedError(f"bucketing hash of Hive type {name!r} (in {text!r}) is not "
                                  "implemented")
    raise ValueError(f"unknown Hive type {name!r} in {text!r}")


def hive_type_of(arrow_type: pa.DataType) -> tuple:
    """The Hive type (as :func:`parse_hive_type` returns it) an Arrow type stands for."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        return hive_type_of(t.value_type)
    simple = [
        (pa.types.is_boolean, "boolean"), (pa.types.is_int8, "tinyint"),
        (pa.types.is_int16, "smallint"), (pa.types.is_int32, "int"),
        (pa.types.is_int64, "bigint"), (pa.types.is_float32, "float"),
        (pa.types.is_float64, "double"), (pa.types.is_date, "date"),
        (pa.types.is_timestamp, "timestamp"), (pa.types.is_null, "void"),
    ]
    for pred, name in simple:
        if pred(t):
            return (name,)
    if is_string_type(t):
        return ("string",)
    if is_binary_type(t):
        return ("binary",)
    if pa.types.is_decimal(t):
        return ("decimal", t.precision, t.scale)
    if pa.types.is_map(t):
        return ("map", hive_type_of(t.key_type), hive_type_of(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return ("array", hive_type_of(t.value_type))
    if pa.types.is_struct(t):
        return ("struct", tuple((f.name, hive_type_of(f.type)) for f in t))
    if pa.types.is_union(t):
        raise NotImplementedError(
            f"bucketing hash of Hive uniontype (Arrow {t}) is not implemented")
    raise TypeError(f"Arrow type {t} has no Hive equivalent to compute a bucket hash for")


def is_string_type(t):
    return (pa.types.is_string(t) or pa.types.is_large_string(t)
            or getattr(pa.types, "is_string_view", lambda _: False)(t))


def is_binary_type(t):
    return (pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t)
            or getattr(pa.types, "is_binary_view", lambda _: False)(t))
