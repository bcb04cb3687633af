"""Column references against a pyarrow schema, matched case-insensitively as Spark does."""

from __future__ import annotations

import difflib

import pyarrow as pa


class ColumnError(LookupError):
    """A reference names no column or field; the message says what was meant."""


def _match(name: str, candidates: list[str], what: str, where: str = "") -> str:
    if name in candidates:
        return name
    folded = [c for c in candidates if c.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    if len(folded) > 1:
        raise ColumnError(f"{what} {name!r}{where} is ambiguous: it matches {', '.join(map(repr, folded))}")
    lowered = {c.lower(): c for c in candidates}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    if close:
        hint = f"did you mean {lowered[close[0]]!r}?"
    elif len(candidates) <= 20:
        hint = "known: " + (", ".join(candidates) or "none")
    else:
        hint = f"{len(candidates)} known"
    raise ColumnError(f"unknown {what} {name!r}{where} ({hint})")


def resolve(schema: pa.Schema, parts: list[str]) -> tuple[str, tuple[str, ...], pa.DataType]:
    """``(top-level column, field path, type)`` of ``a`` or of a struct field ``a.b.c``."""
    top = _match(parts[0], schema.names, "column")
    if len(schema.get_all_field_indices(top)) > 1:
        raise ColumnError(f"column {top!r} is ambiguous: the schema has it more than once")
    path, data_type = [top], schema.field(top).type
    for part in parts[1:]:
        if not pa.types.is_struct(data_type):
            raise ColumnError(f"{'.'.join(path)!r} is not a struct, so it has no field {part!r}")
        name = _match(part, [f.name for f in data_type], "field", f" in struct {'.'.join(path)!r}")
        path.append(name)
        data_type = data_type.field(name).type
    return top, tuple(path), data_type
