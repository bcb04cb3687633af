"""Directory and file names of a Hive ACID table: parse and format them exactly as Hive does."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .writeids import LONG_MAX  # write and transaction ids are Java longs

BASE_PREFIX = "base_"
DELTA_PREFIX = "delta_"
DELETE_DELTA_PREFIX = "delete_delta_"
ACID_VERSION_FILE = "_orc_acid_version"
METADATA_FILE = "_metadata_acid"
FLUSH_LENGTH_SUFFIX = "_flush_length"

ACID_DIR_PREFIXES = (BASE_PREFIX, DELTA_PREFIX, DELETE_DELTA_PREFIX)

# ASCII digits only (\d and str.isdigit also take digits of other scripts), matched whole.
_VISIBILITY = re.compile(r"_v([0-9]+)\Z")
_DIGITS = re.compile(r"[0-9]+")
_BUCKET = re.compile(r"bucket_([0-9]+)(?:_([0-9]+))?")
_ORIGINAL = re.compile(r"([0-9]+)_([0-9]+)(?:_copy_([0-9]+))?")
_LEGACY_BUCKET = re.compile(r"([0-9]+)_")
INT_MAX = 2**31 - 1  # statement and bucket ids are Java ints


@dataclass(frozen=True, order=False)
class ParsedDir:
    """A base, delta or delete_delta directory name.

    ``statement_id`` is -1 when the name has none (minor-compacted or pre-Hive-1.3 deltas),
    matching Hive's internal convention; ``visibility_txn_id`` is 0 when there is no ``_vN``.
    """

    name: str
    kind: str  # "base" | "delta" | "delete_delta"
    min_write_id: int
    max_write_id: int
    statement_id: int = -1
    visibility_txn_id: int = 0

    @property
    def is_base(self) -> bool:
        return self.kind == "base"

    @property
    def is_delete(self) -> bool:
        return self.kind == "delete_delta"

    @property
    def write_id(self) -> int:
        """The write id of a base (its max)."""
        return self.max_write_id

    def sort_key(self, path: str) -> tuple:
        """Hive's ``ParsedDeltaLight.compareTo``: min asc, max desc, statement asc, path."""
        return (self.min_write_id, -self.max_write_id, self.statement_id, path)


def parse_dir_name(name: str) -> ParsedDir | None:
    """Parse ``base_N[_vT]``, ``delta_a_b[_S][_vT]``, ``delete_delta_a_b[_S][_vT]``; None otherwise."""
    parsed = _parse_dir_name(name)
    return parsed if isinstance(parsed, ParsedDir) else None


def acid_dir_name_problem(name: str) -> str | None:
    """Why ``name``, which starts like a base or delta directory, is not one (None when it
    parses or does not start so). Hive fails on such names too; reading them as pre-ACID
    directories would return their ACID events as plain rows."""
    parsed = _parse_dir_name(name)
    return parsed if isinstance(parsed, str) else None


def _number(digits: str, limit: int) -> int | None:
    """ASCII digits as an int of at most ``limit``; None otherwise (never a huge int() call)."""
    if not _DIGITS.fullmatch(digits):
        return None
    significant = digits.lstrip("0") or "0"
    if len(significant) > len(str(limit)) or int(significant) > limit:
        return None
    return int(significant)


def _parse_dir_name(name: str) -> ParsedDir | str | None:
    """A ParsedDir; a reason (str) for a name with an ACID prefix that does not parse; None for
    any other name."""
    if not name.startswith(ACID_DIR_PREFIXES):
        return None
    visibility = 0
    rest = name
    m = _VISIBILITY.search(name)
    if m:
        number = _number(m.group(1), LONG_MAX)
        if number is None:
            return f"directory name {name!r}: visibility transaction id {m.group(1)} does not fit in 64 bits"
        visibility, rest = number, name[: m.start()]
    if rest.startswith(BASE_PREFIX):
        wid = _number(rest[len(BASE_PREFIX):], LONG_MAX)
        if wid is None:
            return f"directory name {name!r} is not base_<write id>[_v<txn id>]"
        return ParsedDir(name, "base", wid, wid, -1, visibility)
    if rest.startswith(DELETE_DELTA_PREFIX):
        kind, parts = "delete_delta", rest[len(DELETE_DELTA_PREFIX):].split("_")
    else:
        kind, parts = "delta", rest[len(DELTA_PREFIX):].split("_")
    form = f"{kind}_<min write id>_<max write id>[_<statement id>][_v<txn id>]"
    if len(parts) not in (2, 3):
        return f"directory name {name!r} is not {form}"
    lo, hi = _number(parts[0], LONG_MAX), _number(parts[1], LONG_MAX)
    stmt = _number(parts[2], INT_MAX) if len(parts) == 3 else -1
    if lo is None or hi is None or stmt is None:
        return f"directory name {name!r} is not {form} (ids are 64-bit, statement ids 32-bit numbers)"
    if hi < lo:
        return f"directory name {name!r}: max write id {hi} is below min write id {lo}"
    return ParsedDir(name, kind, lo, hi, stmt, visibility)


def base_dir_name(write_id: int, visibility_txn_id: int = 0) -> str:
    name = f"{BASE_PREFIX}{write_id:07d}"
    return f"{name}_v{visibility_txn_id:07d}" if visibility_txn_id else name


def delta_dir_name(min_write_id: int, max_write_id: int, statement_id: int | None = None,
                   visibility_txn_id: int = 0, delete: bool = False) -> str:
    prefix = DELETE_DELTA_PREFIX if delete else DELTA_PREFIX
    name = f"{prefix}{min_write_id:07d}_{max_write_id:07d}"
    if statement_id is not None and statement_id >= 0:
        name += f"_{statement_id:04d}"
    if visibility_txn_id:
        name += f"_v{visibility_txn_id:07d}"
    return name


def bucket_file_name(bucket_id: int, attempt_id: int | None = None) -> str:
    name = f"bucket_{bucket_id:05d}"
    return f"{name}_{attempt_id}" if attempt_id is not None else name


@dataclass(frozen=True)
class BucketFile:
    """A data file name: ``bucket_N[_attempt]`` (ACID) or ``NNNNNN_N[_copy_K]`` (original)."""

    name: str
    bucket_id: int  # -1 when the name carries none
    is_acid_name: bool
    copy_number: int = 0


def parse_bucket_file(name: str) -> BucketFile:
    """The bucket id a file name carries; -1 when none, or when it does not fit in 32 bits."""
    m = _BUCKET.fullmatch(name)
    if m:
        return BucketFile(name, _bucket_id(m.group(1)), True)
    m = _ORIGINAL.fullmatch(name)
    if m:
        copy = _number(m.group(3) or "0", LONG_MAX)
        if copy is None:
            return BucketFile(name, -1, False)
        return BucketFile(name, _bucket_id(m.group(1)), False, copy)
    m = _LEGACY_BUCKET.match(name)
    if m:
        return BucketFile(name, _bucket_id(m.group(1)), False)
    return BucketFile(name, -1, False)


def _bucket_id(digits: str) -> int:
    number = _number(digits, INT_MAX)
    return -1 if number is None else number


def is_hidden(name: str) -> bool:
    """Hive's hiddenFileFilter: names starting with ``_`` or ``.`` are not data."""
    return name.startswith("_") or name.startswith(".")


def is_flush_length_file(name: str) -> bool:
    return name.endswith(FLUSH_LENGTH_SUFFIX)
