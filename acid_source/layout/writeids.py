"""Snapshots: Hive's ValidReaderWriteIdList and ValidReadTxnList, parsed and serialized exactly.

A snapshot says which write ids (per table) or transaction ids (global) a reader may see.
The semantics follow Hive's storage-api classes method by method, because directory
selection (``get_acid_state``) depends on their exact edge cases.

Open and aborted ids are held as sorted, disjoint inclusive ranges, never expanded: Hive 4
writes long runs as ``lo-hi``, and ``1-2000000000`` must cost one range, not two billion ids
(the string is also shipped inside every Spark split).
"""

from __future__ import annotations

import bisect
import enum
import operator
import re
from typing import Iterable

import numpy as np

from ..errors import InvalidArgumentError, InvalidSnapshotError

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
# Hive 4's ValidReadTxnList writes runs of at least this many consecutive ids as ``lo-hi``.
MIN_RANGE_LENGTH = 5
# ``open_ids`` / ``aborted_ids`` expand ranges into a tuple only up to this many ids.
MAX_LISTED_IDS = 1_000_000

# ASCII digits only: int() alone would also take '1_000', ' 7' and digits of other scripts.
_LONG = re.compile(r"[+-]?[0-9]+")
_ITEM = re.compile(r"([+-]?[0-9]+)(?:-([+-]?[0-9]+))?")
_LONG_DIGITS = 19  # 2**63 has 19 decimal digits


class RangeResponse(enum.Enum):
    NONE = "none"
    SOME = "some"
    ALL = "all"


class IdRanges:
    """An immutable set of ids as sorted, disjoint, non-adjacent inclusive ``(lo, hi)`` ranges,
    with exact counting and membership by binary search."""

    __slots__ = ("pairs", "_starts", "_ends", "_before", "_arrays")

    def __init__(self, pairs: Iterable[tuple[int, int]] = ()):
        merged: list[list[int]] = []
        for lo, hi in sorted(pairs):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        self.pairs: tuple[tuple[int, int], ...] = tuple((lo, hi) for lo, hi in merged)
        self._starts = [lo for lo, _ in merged]
        self._ends = [hi for _, hi in merged]
        before = [0]
        for lo, hi in merged:
            before.append(before[-1] + hi - lo + 1)
        self._before = before  # _before[i]: how many ids the first i ranges hold
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_ids(cls, ids: Iterable[int]) -> "IdRanges":
        if isinstance(ids, range) and ids.step == 1:
            return cls([(ids.start, ids.stop - 1)] if len(ids) else [])
        runs: list[tuple[int, int]] = []
        for i in sorted(set(ids)):
            if runs and i == runs[-1][1] + 1:
                runs[-1] = (runs[-1][0], i)
            else:
                runs.append((i, i))
        return cls(runs)

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def __len__(self) -> int:
        return self._before[-1]

    @property
    def first(self) -> int:
        return self._starts[0]

    def __contains__(self, id_: int) -> bool:
        i = bisect.bisect_right(self._starts, id_) - 1
        return i >= 0 and id_ <= self._ends[i]

    def count(self, lo: int, hi: int) -> int:
        """How many ids lie in ``[lo, hi]``."""
        i = bisect.bisect_left(self._ends, lo)  # first range reaching lo
        j = bisect.bisect_right(self._starts, hi)  # ranges before j start at or below hi
        if i >= j:
            return 0
        total = self._before[j] - self._before[i]
        return total - max(0, lo - self._starts[i]) - max(0, self._ends[j - 1] - hi)

    def first_common(self, other: "IdRanges") -> int | None:
        """The smallest id in both sets, or None."""
        a, b = self.pairs, other.pairs
        i = j = 0
        while i < len(a) and j < len(b):
            lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
            if lo <= hi:
                return lo
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return None

    def union(self, other: "IdRanges") -> "IdRanges":
        return IdRanges(self.pairs + other.pairs)

    def minus(self, other: "IdRanges") -> "IdRanges":
        """The ids of this set that ``other`` does not hold."""
        kept: list[tuple[int, int]] = []
        for lo, hi in self.pairs:
            start = lo
            for a, b in other.pairs[max(0, bisect.bisect_right(other._ends, lo - 1)):]:
                if a > hi:
                    break
                if a > start:
                    kept.append((start, a - 1))
                start = max(start, b + 1)
                if start > hi:
                    break
            if start <= hi:
                kept.append((start, hi))
        return IdRanges(kept)

    def ids(self) -> tuple[int, ...]:
        return tuple(i for lo, hi in self.pairs for i in range(lo, hi + 1))

    def mask(self, values: np.ndarray) -> np.ndarray:
        """Vectorized membership of an int64 array."""
        if self._arrays is None:
            self._arrays = (np.asarray(self._starts, dtype=np.int64), np.asarray(self._ends, dtype=np.int64))
        starts, ends = self._arrays
        idx = np.searchsorted(starts, values, side="right") - 1
        inside = idx >= 0
        return inside & (values <= ends[np.maximum(idx, 0)])

    def format(self) -> str:
        """Hive 4's list syntax: runs of MIN_RANGE_LENGTH or more as ``lo-hi``, others id by id."""
        parts: list[str] = []
        for lo, hi in self.pairs:
            if hi - lo + 1 >= MIN_RANGE_LENGTH:
                parts.append(f"{lo}-{hi}")
            else:
                parts.extend(str(i) for i in range(lo, hi + 1))
        return ",".join(parts)


_NO_IDS = IdRanges()


# --- parsing ------------------------------------------------------------------------------

def _parse_long(text: str, what: str, whole: str, option: str | None) -> int:
    text = text.strip()
    if not text:
        raise InvalidSnapshotError(whole, f"the {what} is empty", option)
    if not _LONG.fullmatch(text):
        raise InvalidSnapshotError(whole, f"the {what} {text[:40]!r}: ids and watermarks must be integers", option)
    if len(text.lstrip("+-").lstrip("0")) > _LONG_DIGITS or not LONG_MIN <= int(text) <= LONG_MAX:
        raise InvalidSnapshotError(whole, f"the {what} {text[:40]} does not fit in 64 bits", option)
    return int(text)


def _parse_id_list(text: str, what: str, whole: str, option: str | None) -> IdRanges:
    """Comma-separated ids; Hive 4 also writes runs as ``lo-hi``."""
    items = text.split(",")
    while items and items[-1] == "":  # Java's split() drops trailing empty items
        items.pop()
    pairs: list[tuple[int, int]] = []
    for item in items:
        m = _ITEM.fullmatch(item.strip())
        if m is None:
            raise InvalidSnapshotError(whole, f"bad id {item[:40]!r} in the {what}", option)
        lo = _parse_long(m.group(1), f"id in the {what}", whole, option)
        hi = lo if m.group(2) is None else _parse_long(m.group(2), f"id in the {what}", whole, option)
        if hi < lo:
            raise InvalidSnapshotError(whole, f"empty range {item.strip()!r} in the {what}", option)
        pairs.append((lo, hi))
    return IdRanges(pairs)


def _split_fields(text: str) -> list[str]:
    fields = text.split(":")
    while fields and fields[-1] == "":  # Java's split() drops trailing empty fields
        fields.pop()
    return fields


def _parse_body(fields: list[str], whole: str, option: str | None):
    """``hwm:minOpen[:open[:aborted]]`` -> (hwm, min_open, open, aborted)."""
    if len(fields) > 4:
        raise InvalidSnapshotError(whole, "expected at most 4 ':'-separated id fields", option)
    hwm = _parse_long(fields[0], "high watermark", whole, option)
    min_open = _parse_long(fields[1], "min open id", whole, option)
    open_ = _parse_id_list(fields[2], "open ids", whole, option) if len(fields) > 2 else _NO_IDS
    aborted = _parse_id_list(fields[3], "aborted ids", whole, option) if len(fields) > 3 else _NO_IDS
    common = open_.first_common(aborted)
    if common is not None:
        raise InvalidSnapshotError(whole, f"id {common} is listed both as open and as aborted", option)
    return hwm, min_open, open_, aborted


# --- constructor arguments ----------------------------------------------------------------

def _long_argument(name: str, value) -> int:
    try:
        value = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(name, f"expected an integer, got {value!r}") from None
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidArgumentError(name, f"{value} does not fit in 64 bits")
    return value


def _ranges_argument(ids_name: str, ids, ranges_name: str, ranges) -> IdRanges:
    if isinstance(ids, range) and ids.step == 1 and len(ids):
        from_ids = IdRanges.from_ids(range(_long_argument(ids_name, ids.start),
                                           _long_argument(ids_name, ids.stop - 1) + 1))
    else:
        from_ids = IdRanges.from_ids(_long_argument(ids_name, i) for i in ids)
    pairs = []
    for pair in ranges:
        try:
            lo, hi = pair
        except (TypeError, ValueError):
            raise InvalidArgumentError(ranges_name, f"expected (lo, hi) pairs, got {pair!r}") from None
        lo, hi = _long_argument(ranges_name, lo), _long_argument(ranges_name, hi)
        if hi < lo:
            raise InvalidArgumentError(ranges_name, f"empty range ({lo}, {hi})")
        pairs.append((lo, hi))
    return from_ids.union(IdRanges(pairs)) if pairs else from_ids


def _restore(cls, high_watermark, min_open, open_pairs, aborted_pairs, table_name):
    """Unpickling: the state was validated when it was first built."""
    obj = cls.__new__(cls)
    obj._init(high_watermark, min_open, IdRanges(open_pairs), IdRanges(aborted_pairs), table_name)
    return obj


class _IdList:
    """Shared logic of ValidReaderWriteIdList and ValidReadTxnList: a high watermark plus
    exceptions (open or aborted ids), some of them aborted. Immutable and hashable."""

    __slots__ = ("high_watermark", "min_open", "_open", "_aborted", "_exceptions", "_table_name")
    # set once, by _init (object.__setattr__: instances are immutable)
    high_watermark: int
    min_open: int
    _open: IdRanges
    _aborted: IdRanges
    _exceptions: IdRanges
    _table_name: str | None

    def __init__(self, high_watermark: int = LONG_MAX, min_open: int = LONG_MAX, open_ids: Iterable[int] = (),
                 aborted_ids: Iterable[int] = (), *, open_ranges: Iterable[tuple[int, int]] = (),
                 aborted_ranges: Iterable[tuple[int, int]] = ()):
        open_ = _ranges_argument("open_ids", open_ids, "open_ranges", open_ranges)
        aborted = _ranges_argument("aborted_ids", aborted_ids, "aborted_ranges", aborted_ranges)
        common = open_.first_common(aborted)
        if common is not None:
            raise InvalidArgumentError("aborted_ids", f"id {common} is both open and aborted")
        self._init(_long_argument("high_watermark", high_watermark), _long_argument("min_open", min_open),
                   open_, aborted, None)

    def _init(self, hwm: int, min_open: int, open_: IdRanges, aborted: IdRanges, table_name: str | None):
        set_ = object.__setattr__
        set_(self, "high_watermark", hwm)
        set_(self, "min_open", min_open)
        set_(self, "_open", open_)
        set_(self, "_aborted", aborted)
        set_(self, "_exceptions", open_.union(aborted) if open_ and aborted else (open_ or aborted))
        set_(self, "_table_name", table_name)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self):
        return _restore, (type(self), self.high_watermark, self.min_open, self._open.pairs, self._aborted.pairs,
                          self._table_name)

    def _key(self) -> tuple:
        return (self.high_watermark, self.min_open, self._open.pairs, self._aborted.pairs, self._table_name)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__,) + self._key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}.parse({str(self)!r})"

    # --- the ids ----------------------------------------------------------------------------
    @property
    def open_ranges(self) -> tuple[tuple[int, int], ...]:
        """Open ids as sorted, disjoint inclusive ``(lo, hi)`` ranges."""
        return self._open.pairs

    @property
    def aborted_ranges(self) -> tuple[tuple[int, int], ...]:
        return self._aborted.pairs

    @property
    def open_ids(self) -> tuple[int, ...]:
        """Open ids one by one (sorted); refused above MAX_LISTED_IDS: use ``open_ranges``."""
        return self._listed(self._open, "open")

    @property
    def aborted_ids(self) -> tuple[int, ...]:
        return self._listed(self._aborted, "aborted")

    def _listed(self, ranges: IdRanges, what: str) -> tuple[int, ...]:
        if len(ranges) > MAX_LISTED_IDS:
            raise InvalidSnapshotError(
                str(self), f"it has {len(ranges)} {what} ids, more than the {MAX_LISTED_IDS} that {what}_ids "
                f"lists one by one; use {what}_ranges")
        return ranges.ids()

    # --- Hive semantics ---------------------------------------------------------------------
    def is_valid(self, id_: int) -> bool:
        return id_ <= self.high_watermark and id_ not in self._exceptions

    def is_aborted(self, id_: int) -> bool:
        return id_ in self._aborted

    def valid_mask(self, ids: np.ndarray) -> np.ndarray:
        """``is_valid`` over an int64 array, vectorized (a binary search per id)."""
        ids = np.asarray(ids, dtype=np.int64)
        mask = ids <= self.high_watermark
        if self._exceptions:
            mask &= ~self._exceptions.mask(ids)
        return mask

    def is_range_valid(self, lo: int, hi: int) -> RangeResponse:
        if lo > self.high_watermark:
            return RangeResponse.NONE
        if not self._exceptions or self._exceptions.first > hi:
            # Hive only short-cuts on exceptions; ids above the hwm still count below.
            if hi <= self.high_watermark:
                return RangeResponse.ALL
        count = max(0, hi - self.high_watermark) + self._exceptions.count(lo, hi)
        if count == 0:
            return RangeResponse.ALL
        if count == hi - lo + 1:
            return RangeResponse.NONE
        return RangeResponse.SOME

    def is_range_aborted(self, lo: int, hi: int) -> RangeResponse:
        if self.high_watermark < lo or not self._aborted:
            return RangeResponse.NONE
        count = self._aborted.count(lo, hi)
        if count == 0:
            return RangeResponse.NONE
        if count == hi - lo + 1:
            return RangeResponse.ALL
        return RangeResponse.SOME

    def with_valid(self, ids: Iterable[int]):
        """The same list with ``ids`` made valid (time travel: a later compaction's outputs that
        serve a past snapshot exactly). Ids between the old high watermark and a raised one stay
        invisible, as open ids."""
        made = IdRanges.from_ids(ids)
        if not made:
            return self
        hwm = max(self.high_watermark, made.pairs[-1][1])
        open_ = self._open
        if hwm > self.high_watermark:
            open_ = open_.union(IdRanges([(self.high_watermark + 1, hwm)]))
        open_, aborted = open_.minus(made), self._aborted.minus(made)
        widened = type(self).__new__(type(self))
        widened._init(hwm, open_.first if open_ else LONG_MAX, open_, aborted, self._table_name)
        return widened

    @property
    def min_open_id(self) -> int | None:
        return None if self.min_open == LONG_MAX else self.min_open

    def _body(self) -> str:
        return f"{self.high_watermark}:{self.min_open}:{self._open.format()}:{self._aborted.format()}"


class ValidWriteIdList(_IdList):
    """Hive's ``ValidReaderWriteIdList``: ``<db.table>:<hwm>:<minOpen>:<open>:<aborted>``."""

    __slots__ = ()

    def __init__(self, high_watermark: int = LONG_MAX, min_open: int = LONG_MAX, open_ids: Iterable[int] = (),
                 aborted_ids: Iterable[int] = (), table_name: str | None = None, *,
                 open_ranges: Iterable[tuple[int, int]] = (), aborted_ranges: Iterable[tuple[int, int]] = ()):
        super().__init__(high_watermark, min_open, open_ids, aborted_ids,
                         open_ranges=open_ranges, aborted_ranges=aborted_ranges)
        table_name = table_name or None  # "" and None both serialize as Hive's "null"
        if table_name is not None and (not isinstance(table_name, str) or table_name != table_name.strip()
                                       or set(table_name) & set(":$")):
            raise InvalidArgumentError("table_name", f"{table_name!r} cannot be written into a snapshot string")
        object.__setattr__(self, "_table_name", table_name)

    @property
    def table_name(self) -> str | None:
        return self._table_name

    is_write_id_valid = _IdList.is_valid
    is_write_id_aborted = _IdList.is_aborted
    is_write_id_range_valid = _IdList.is_range_valid
    is_write_id_range_aborted = _IdList.is_range_aborted

    def is_valid_base(self, write_id: int) -> bool:
        """A compacted base is usable only below every open write id."""
        return write_id < self.min_open and write_id <= self.high_watermark

    @classmethod
    def all_valid(cls, high_watermark: int = LONG_MAX, table_name: str | None = None) -> "ValidWriteIdList":
        return cls(high_watermark=high_watermark, table_name=table_name)

    @classmethod
    def parse(cls, text: str | None, option: str | None = None) -> "ValidWriteIdList":
        if text is None or not text.strip():
            return cls()
        text = text.strip()
        if "$" in text:  # a ValidTxnWriteIdList: <txnId>$<table list>$...
            entries = [e for e in text.split("$")[1:] if e]
            if len(entries) != 1:
                raise InvalidSnapshotError(
                    text, f"a ValidTxnWriteIdList must name exactly one table here, found {len(entries)}", option
                )
            text = entries[0]
        fields = _split_fields(text)
        if len(fields) < 3:
            raise InvalidSnapshotError(
                text, "expected '<db.table>:<hwm>:<minOpenWriteId>[:<open ids>[:<aborted ids>]]'", option
            )
        name = fields[0].strip()
        hwm, min_open, open_, aborted = _parse_body(fields[1:], text, option)
        obj = cls.__new__(cls)
        obj._init(hwm, min_open, open_, aborted, None if name in ("", "null") else name)
        return obj

    def __str__(self) -> str:
        return f"{self._table_name or 'null'}:{self._body()}"


class ValidTxnList(_IdList):
    """Hive's ``ValidReadTxnList``: ``<hwm>:<minOpen>:<open>:<aborted>``; decides which
    ``_vN`` (compacted) directories are visible."""

    __slots__ = ()

    is_txn_valid = _IdList.is_valid
    is_txn_aborted = _IdList.is_aborted

    @classmethod
    def parse(cls, text: str | None, option: str | None = None) -> "ValidTxnList":
        if text is None or not text.strip():
            return cls()
        text = text.strip()
        fields = _split_fields(text)
        if len(fields) < 2:
            raise InvalidSnapshotError(text, "expected '<hwm>:<minOpenTxn>[:<open ids>[:<aborted ids>]]'", option)
        hwm, min_open, open_, aborted = _parse_body(fields, text, option)
        obj = cls.__new__(cls)
        obj._init(hwm, min_open, open_, aborted, None)
        return obj

    def __str__(self) -> str:
        return self._body()
