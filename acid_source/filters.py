"""Pushed-down predicates, independent of Spark.

Two uses: prune table partitions (evaluated exactly on partition values, with SQL null
semantics) and skip stripes of insert files whose ORC column statistics prove that no row can
match (conservative: when in doubt, read).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass
from typing import Any

COMPARISONS = ("eq", "eq_null_safe", "gt", "ge", "lt", "le")


@dataclass(frozen=True)
class Predicate:
    """``op`` is one of COMPARISONS, "in", "is_null", "is_not_null", "starts_with", "not",
    "and", "or"."""

    op: str
    column: tuple[str, ...] = ()
    value: Any = None  # "in": a tuple; "not": the negated Predicate; "and"/"or": a tuple of them

    @property
    def top_column(self) -> str | None:
        """The one top-level column this predicate is about (None if several or nested)."""
        cols = self.columns
        return next(iter(cols)) if len(cols) == 1 else None

    @property
    def columns(self) -> frozenset:
        if self.op == "not":
            return self.value.columns
        if self.op in ("and", "or"):
            return frozenset().union(*(p.columns for p in self.value))
        return frozenset([self.column[0].lower()]) if len(self.column) == 1 else frozenset([None])


def _is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _spark_order(value):
    """A key ordering numbers as Spark does: NaN above every other value (+inf included) and
    equal to itself (Python's float comparisons make every comparison with NaN false)."""
    return (1, 0.0) if _is_nan(value) else (0, value)


def _compare(op: str, left, right) -> bool | None:
    if left is None or right is None:
        return None
    if isinstance(left, float) or isinstance(right, float):
        left, right = _spark_order(left), _spark_order(right)
    try:
        if op == "eq":
            return left == right
        if op == "gt":
            return left > right
        if op == "ge":
            return left >= right
        if op == "lt":
            return left < right
        if op == "le":
            return left <= right
    except TypeError:
        return None
    raise ValueError(op)


def evaluate(pred: Predicate, row: dict[str, Any]) -> bool | None:
    """SQL three-valued evaluation of ``pred`` on a row of (lower-cased) column values."""
    if pred.op == "not":
        inner = evaluate(pred.value, row)
        return None if inner is None else not inner
    if pred.op in ("and", "or"):
        results = [evaluate(p, row) for p in pred.value]
        decisive = pred.op == "or"  # True decides an OR, False decides an AND
        if any(r is decisive for r in results):
            return decisive
        return None if any(r is None for r in results) else not decisive
    column = pred.top_column
    value = row.get(column) if column is not None else None
    if pred.op == "is_null":
        return value is None
    if pred.op == "is_not_null":
        return value is not None
    if pred.op == "eq_null_safe":
        if value is None or pred.value is None:
            return value is pred.value
        return _compare("eq", value, pred.value) is True
    if pred.op == "in":
        if value is None:
            return None
        if any(_compare("eq", value, v) for v in pred.value if v is not None):
            return True
        return None if any(v is None for v in pred.value) else False
    if pred.op == "starts_with":
        return None if value is None else str(value).startswith(pred.value)
    return _compare(pred.op, value, pred.value)


def partition_matches(predicates: list[Predicate], values: dict[str, Any]) -> bool:
    """True unless some predicate is certainly not true for this partition."""
    return all(evaluate(p, values) is True for p in predicates)


_ORDERABLE = (int, float, str, dt.date, dt.datetime, decimal.Decimal)


def stripe_may_match(pred: Predicate, stats: dict | None) -> bool:
    """Can a stripe with these ORC column statistics hold a row matching ``pred``?"""
    if stats is None:
        return True
    has_null = bool(stats.get("has_null", True))
    n_values = stats.get("number_of_values")
    if pred.op == "is_null":
        return has_null
    if pred.op == "is_not_null":
        return n_values is None or n_values > 0
    if pred.op == "eq_null_safe" and pred.value is None:
        return has_null
    if pred.op not in COMPARISONS + ("in",):
        return True  # "not", "starts_with": not worth proving
    if n_values == 0:
        return False  # only nulls: no comparison is true
    lo, hi = stats.get("minimum"), stats.get("maximum")
    if lo is None or hi is None or not isinstance(lo, _ORDERABLE) or isinstance(lo, bool):
        return True
    v = pred.value
    if isinstance(lo, float) or _is_nan(v) or (pred.op == "in" and any(_is_nan(x) for x in v)):
        # ORC's float statistics ignore NaN (or are NaN), and Spark orders NaN above every
        # number; float-vs-double rounding too: such statistics prove nothing
        return True
    try:
        if pred.op in ("eq", "eq_null_safe"):
            return v is not None and lo <= v <= hi
        if pred.op == "gt":
            return v is not None and hi > v
        if pred.op == "ge":
            return v is not None and hi >= v
        if pred.op == "lt":
            return v is not None and lo < v
        if pred.op == "le":
            return v is not None and lo <= v
        return any(x is not None and lo <= x <= hi for x in v)
    except TypeError:
        return True
    return True
