"""Snapshots: Hive's ValidReaderWriteIdList and ValidReadTxnList, parsed and serialized exactly.

A snapshot says which write ids (per table) or transaction ids (global) a reader may see.
The semantics follow Hive's storage-api classes method by method, because directory
selection (``get_acid_state``) depends on their exact edge cases.
"""

from __future__ import annotations

import bisect
import enum
from dataclasses import dataclass, field

from ..errors import InvalidSnapshotError

LONG_MAX = 9223372036854775807


class RangeResponse(enum.Enum):
    NONE = "none"
    SOME = "some"
    ALL = "all"


def _parse_id_list(text: str, whole: str, option: str | None) -> list[int]:
    """Comma-separated ids; Hive 4 also writes runs as ``lo-hi``."""
    ids: list[int] = []
    if not text:
        return ids
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part[1:]:
                lo_s, hi_s = part.split("-", 1) if not part.startswith("-") else (part, "")
                lo, hi = int(lo_s), int(hi_s)
                if hi < lo:
                    raise ValueError(f"empty range {part}")
                ids.extend(range(lo, hi + 1))
            else:
                ids.append(int(part))
        except ValueError as exc:
            raise InvalidSnapshotError(whole, f"bad id {part!r} ({exc})", option) from None
    return ids


def _split_fields(text: str) -> list[str]:
    fields = text.split(":")
    while fields and fields[-1] == "":  # Java's split() drops trailing empty fields
        fields.pop()
    return fields


@dataclass(frozen=True)
class _IdList:
    """Shared logic of ValidReaderWriteIdList and ValidReadTxnList: an ``hwm`` plus sorted
    exceptions (open or aborted ids), some of them flagged aborted."""

    high_watermark: int = LONG_MAX
    min_open: int = LONG_MAX
    open_ids: tuple[int, ...] = ()
    aborted_ids: tuple[int, ...] = ()
    _exceptions: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)
    _aborted: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "open_ids", tuple(sorted(set(self.open_ids))))
        object.__setattr__(self, "aborted_ids", tuple(sorted(set(self.aborted_ids))))
        object.__setattr__(self, "_exceptions", tuple(sorted(set(self.open_ids) | set(self.aborted_ids))))
        object.__setattr__(self, "_aborted", frozenset(self.aborted_ids))

    # --- Hive semantics -------------------------------------------------------------------
    def is_valid(self, id_: int) -> bool:
        if id_ > self.high_watermark:
            return False
        i = bisect.bisect_left(self._exceptions, id_)
        return not (i < len(self._exceptions) and self._exceptions[i] == id_)

    def is_aborted(self, id_: int) -> bool:
        return id_ in self._aborted

    def is_range_valid(self, lo: int, hi: int) -> RangeResponse:
        if lo > self.high_watermark:
            return RangeResponse.NONE
        if not self._exceptions or self._exceptions[0] > hi:
            # Hive only short-cuts on exceptions; ids above the hwm still count below.
            if hi <= self.high_watermark:
                return RangeResponse.ALL
        count = max(0, hi - self.high_watermark)
        lo_i = bisect.bisect_left(self._exceptions, lo)
        hi_i = bisect.bisect_right(self._exceptions, hi)
        count += hi_i - lo_i
        if count == 0:
            return RangeResponse.ALL
        if count == hi - lo + 1:
            return RangeResponse.NONE
        return RangeResponse.SOME

    def is_range_aborted(self, lo: int, hi: int) -> RangeResponse:
        if self.high_watermark < lo or not self.aborted_ids:
            return RangeResponse.NONE
        lo_i = bisect.bisect_left(self.aborted_ids, lo)
        hi_i = bisect.bisect_right(self.aborted_ids, hi)
        count = hi_i - lo_i
        if count == 0:
            return RangeResponse.NONE
        if count == hi - lo + 1:
            return RangeResponse.ALL
        return RangeResponse.SOME

    @property
    def min_open_id(self) -> int | None:
        return None if self.min_open == LONG_MAX else self.min_open

    def _body(self) -> str:
        return (
            f"{self.high_watermark}:{self.min_open}:"
            f"{','.join(map(str, self.open_ids))}:{','.join(map(str, self.aborted_ids))}"
        )

    @staticmethod
    def _parse_body(fields: list[str], whole: str, option: str | None):
        try:
            hwm = int(fields[0]) if fields and fields[0] else LONG_MAX
            min_open = int(fields[1]) if len(fields) > 1 and fields[1] else LONG_MAX
        except ValueError:
            raise InvalidSnapshotError(whole, "high watermark and min open id must be integers", option) from None
        if len(fields) > 4:
            raise InvalidSnapshotError(whole, f"expected at most {4} ':'-separated id fields", option)
        open_ids = _parse_id_list(fields[2], whole, option) if len(fields) > 2 else []
        aborted = _parse_id_list(fields[3], whole, option) if len(fields) > 3 else []
        if set(open_ids) & set(aborted):
            raise InvalidSnapshotError(whole, "an id is listed both as open and as aborted", option)
        return hwm, min_open, open_ids, aborted


@dataclass(frozen=True)
class ValidWriteIdList(_IdList):
    """Hive's ``ValidReaderWriteIdList``: ``<db.table>:<hwm>:<minOpen>:<open>:<aborted>``."""

    table_name: str | None = None

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
        name = None if fields[0] in ("", "null") else fields[0]
        hwm, min_open, open_ids, aborted = cls._parse_body(fields[1:], text, option)
        return cls(high_watermark=hwm, min_open=min_open, open_ids=tuple(open_ids),
                   aborted_ids=tuple(aborted), table_name=name)

    def __str__(self) -> str:
        return f"{self.table_name or 'null'}:{self._body()}"


@dataclass(frozen=True)
class ValidTxnList(_IdList):
    """Hive's ``ValidReadTxnList``: ``<hwm>:<minOpen>:<open>:<aborted>``; decides which
    ``_vN`` (compacted) directories are visible."""

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
        hwm, min_open, open_ids, aborted = cls._parse_body(fields, text, option)
        return cls(high_watermark=hwm, min_open=min_open, open_ids=tuple(open_ids), aborted_ids=tuple(aborted))

    def __str__(self) -> str:
        return self._body()
