"""Directory and file names of a Hive ACID table: parse and format them exactly as Hive does."""

from __future__ import annotations

import re
from dataclasses import dataclass

BASE_PREFIX = "base_"
DELTA_PREFIX = "delta_"
DELETE_DELTA_PREFIX = "delete_delta_"
ACID_VERSION_FILE = "_orc_acid_version"
METADATA_FILE = "_metadata_acid"
FLUSH_LENGTH_SUFFIX = "_flush_length"

_VISIBILITY = re.compile(r"_v(\d+)$")
_BUCKET = re.compile(r"^bucket_(\d+)(?:_(\d+))?$")
_ORIGINAL = re.compile(r"^(\d+)_(\d+)(?:_copy_(\d+))?$")
_LEGACY_BUCKET = re.compile(r"^(\d+)_")


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
    visibility = 0
    rest = name
    m = _VISIBILITY.search(name)
    if m:
        visibility = int(m.group(1))
        rest = name[: m.start()]
    try:
        if rest.startswith(BASE_PREFIX):
            digits = rest[len(BASE_PREFIX):]
            if not digits.isdigit():
                return None
            wid = int(digits)
            return ParsedDir(name, "base", wid, wid, -1, visibility)
        if rest.startswith(DELETE_DELTA_PREFIX):
            kind, parts = "delete_delta", rest[len(DELETE_DELTA_PREFIX):].split("_")
        elif rest.startswith(DELTA_PREFIX):
            kind, parts = "delta", rest[len(DELTA_PREFIX):].split("_")
        else:
            return None
        if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
            return None
        lo, hi = int(parts[0]), int(parts[1])
        stmt = int(parts[2]) if len(parts) == 3 else -1
        if hi < lo:
            return None
        return ParsedDir(name, kind, lo, hi, stmt, visibility)
    except ValueError:
        return None


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
    m = _BUCKET.match(name)
    if m:
        return BucketFile(name, int(m.group(1)), True)
    m = _ORIGINAL.match(name)
    if m:
        return BucketFile(name, int(m.group(1)), False, int(m.group(3) or 0))
    m = _LEGACY_BUCKET.match(name)
    if m:
        return BucketFile(name, int(m.group(1)), False)
    return BucketFile(name, -1, False)


def is_hidden(name: str) -> bool:
    """Hive's hiddenFileFilter: names starting with ``_`` or ``.`` are not data."""
    return name.startswith("_") or name.startswith(".")


def is_flush_length_file(name: str) -> bool:
    return name.endswith(FLUSH_LENGTH_SUFFIX)
