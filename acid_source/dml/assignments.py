"""The keys of ``set`` / ``values`` dicts checked against the target's columns, one rule for
every engine: the Spark path and the engine-free path differ only in what a value is (a Spark
Column or SQL text), not in which keys they accept."""

from __future__ import annotations

from typing import Mapping

from ..errors import InvalidArgumentError, SchemaError


def target_assignments(assignments: object, columns: list[str], argument: str,
                       alias: str | None = None) -> dict[str, object]:
    """``{column: value}`` keyed by the table's spelling of each column.

    A key matches a column case-insensitively and may be quoted with backticks or qualified
    with the target's alias (``t.amount``); naming another table's column, a column twice or
    no column at all is an error naming ``argument``. Values are returned as given.

    >>> target_assignments({"T.Amount": "0"}, ["id", "amount"], "set", alias="t")
    {'amount': '0'}
    """
    if not isinstance(assignments, Mapping) or not assignments:
        raise InvalidArgumentError(argument, f"expected a non-empty dict of column -> expression, got {assignments!r}")
    by_lower = {c.lower(): c for c in columns}
    result: dict[str, object] = {}
    for key, value in assignments.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(argument, f"column names are strings, got {key!r}")
        bare = key.strip().strip("`")
        if "." in bare and bare.lower() not in by_lower:
            qualifier, bare = (part.strip("`") for part in bare.rsplit(".", 1))
            if alias is None or qualifier.lower() != alias.lower():
                raise SchemaError(f"{argument}: {key!r} does not name a column of the target table"
                                  + (f" (alias {alias!r})" if alias else "") + "; assign target columns only",
                                  column=key)
        name = by_lower.get(bare.lower())
        if name is None:
            raise SchemaError(f"{argument}: the table has no column {key!r} (columns: {', '.join(columns)})",
                              column=key)
        if name in result:
            raise InvalidArgumentError(argument, f"column {name!r} is assigned twice")
        result[name] = value
    return result


# --- storing a value in its column -----------------------------------------------------------
def storable(source_kind: str, target_kind: str) -> bool:
    """Spark SQL's rule for storing a value in a column (an implicit cast on assignment), one
    rule for every engine: numbers, booleans and strings convert among themselves, dates and
    timestamps among themselves and to or from strings, binary to or from strings; a nested
    value only into a column of the same type (the caller compares those types itself).

    >>> storable("time", "number"), storable("string", "time")
    (False, True)
    """
    if "nested" in (source_kind, target_kind):
        return False
    if source_kind == target_kind or "string" in (source_kind, target_kind):
        return True
    return {source_kind, target_kind} == {"number", "boolean"}


def unstorable_error(argument: str, column: str, value: str, source: str, target: str) -> SchemaError:
    """A value whose type can never be stored in ``column`` (found before anything runs)."""
    return SchemaError(f"{argument}: the value {value} is of type {source}, which cannot be stored in column "
                       f"{column!r} of type {target}", column=column)


def does_not_fit_error(argument: str, column: str, value: str, target: str, detail: str = "") -> SchemaError:
    """A value of a storable type that does not fit ``column`` (malformed for its type, out of
    its range): found when the value is computed, so it names the value computed."""
    return SchemaError(f"{argument}: the value {value} does not fit column {column!r} of type {target}"
                       + (f" ({detail})" if detail else ""), column=column)
