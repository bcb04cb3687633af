"""All reader options, parsed and validated in one place.

Spark hands options over as a case-insensitive dict of strings; anything we do not know is an
error that names the option, so typos never silently change what a query returns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidOptionError
from .layout.writeids import ValidTxnList, ValidWriteIdList

DEFAULT_MAX_SPLIT_BYTES = 256 * 1024 * 1024
TABLE_TYPES = ("auto", "full", "insert_only")
STORAGE_OPTION_PREFIX = "fs."

READ_OPTIONS = {
    "path": "table location (URL or local path)",
    "validWriteIds": "Hive ValidWriteIdList snapshot, e.g. 'db.t:5:9223372036854775807::'",
    "validTxns": "Hive ValidReadTxnList deciding which _vN (compacted) directories are visible",
    "includeRowId": "true to add Hive's ROW__ID struct column (writeId, bucketId, rowId)",
    "tableType": "auto | full | insert_only",
    "maxSplitBytes": "a bucket larger than this is read by several tasks (e.g. 256m)",
    "partitionFilter": "SQL condition on partition columns; only matching partition directories are read",
    "filterPushdown": "auto | true | false: use filters Spark pushes down (auto: where Spark does it safely)",
}
PUSHDOWN_MODES = ("auto", "true", "false")

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_bool(option: str, value: str) -> bool:
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise InvalidOptionError(option, f"expected true or false, got {value!r}")


def parse_size(option: str, value: str) -> int:
    m = _SIZE.match(str(value))
    if not m:
        raise InvalidOptionError(option, f"expected a size such as 134217728 or 128m, got {value!r}")
    size = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if size <= 0:
        raise InvalidOptionError(option, "must be positive")
    return size


def _canonical(options: dict, known: dict[str, str]) -> dict[str, str]:
    """Map case-insensitive keys to their canonical spelling; reject unknown keys."""
    by_lower = {k.lower(): k for k in known}
    out: dict[str, str] = {}
    for key, value in options.items():
        if key.lower().startswith(STORAGE_OPTION_PREFIX):
            out[key] = value
            continue
        canon = by_lower.get(key.lower())
        if canon is None:
            valid = ", ".join(sorted(known))
            raise InvalidOptionError(key, f"unknown option; valid options are: {valid}, fs.<storage option>")
        out[canon] = value
    return out


@dataclass(frozen=True)
class ReadOptions:
    path: str
    write_ids: ValidWriteIdList | None
    txns: ValidTxnList
    include_row_id: bool
    table_type: str
    max_split_bytes: int
    storage_options: tuple
    partition_filter: str | None = None
    filter_pushdown: str = "auto"

    @classmethod
    def parse(cls, options: dict) -> "ReadOptions":
        opts = _canonical(dict(options), READ_OPTIONS)
        path = opts.get("path")
        if not path or not str(path).strip():
            raise InvalidOptionError("path", "the table location is required: .load(path) or .option('path', ...)")
        table_type = opts.get("tableType", "auto").strip().lower()
        if table_type not in TABLE_TYPES:
            raise InvalidOptionError("tableType", f"expected one of {', '.join(TABLE_TYPES)}, got {table_type!r}")
        pushdown = opts.get("filterPushdown", "auto").strip().lower()
        if pushdown not in PUSHDOWN_MODES:
            raise InvalidOptionError("filterPushdown", f"expected one of {', '.join(PUSHDOWN_MODES)}, got {pushdown!r}")
        partition_filter = opts.get("partitionFilter")
        if partition_filter is not None and not partition_filter.strip():
            raise InvalidOptionError("partitionFilter", "is empty")
        write_ids = None
        if "validWriteIds" in opts:
            write_ids = ValidWriteIdList.parse(opts["validWriteIds"], option="validWriteIds")
        return cls(
            path=str(path).strip(),
            write_ids=write_ids,
            txns=ValidTxnList.parse(opts.get("validTxns"), option="validTxns"),
            include_row_id=parse_bool("includeRowId", opts.get("includeRowId", "false")),
            table_type=table_type,
            max_split_bytes=parse_size("maxSplitBytes", opts.get("maxSplitBytes", str(DEFAULT_MAX_SPLIT_BYTES))),
            partition_filter=partition_filter,
            filter_pushdown=pushdown,
            storage_options=tuple(sorted(
                (k[len(STORAGE_OPTION_PREFIX):], v) for k, v in opts.items()
                if k.lower().startswith(STORAGE_OPTION_PREFIX)
            )),
        )
