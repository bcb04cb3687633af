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
    "metastoreUrl": "the transaction store (SQLAlchemy URL); default: $ACIDORC_METASTORE_URL or ~/.acidorc",
}

WRITE_OPTIONS = {
    "path": "table location (URL or local path)",
    "metastoreUrl": READ_OPTIONS["metastoreUrl"],
    "partition": "static partition to write, e.g. 'ds=2026-11-21/region=eu' (the data then lacks those columns)",
    "partitionOverwriteMode": "static (overwrite replaces the whole table) | dynamic (only partitions in the data)",
    "partitionColumns": "new table: comma-separated partition columns (taken from the data's columns)",
    "bucketColumns": "new table: comma-separated bucketing columns",
    "numBuckets": "new table: number of buckets (with bucketColumns)",
    "tableType": "new table: full (default) | insert_only",
    "compression": "new table: zlib (default) | snappy | zstd | lz4 | uncompressed",
    "tableName": "new table: a name (db.table) to find it by",
}
COMPRESSIONS = ("zlib", "snappy", "zstd", "lz4", "uncompressed")
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


def _path(opts: dict, how: str) -> str:
    path = opts.get("path")
    if not path or not str(path).strip():
        raise InvalidOptionError("path", f"the table location is required: {how} or .option('path', ...)")
    return str(path).strip()


def _choice(opts: dict, name: str, choices: tuple[str, ...], default: str) -> str:
    value = str(opts.get(name, default)).strip().lower()
    if value not in choices:
        raise InvalidOptionError(name, f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def _storage_options(opts: dict) -> tuple:
    return tuple(sorted((k[len(STORAGE_OPTION_PREFIX):], v) for k, v in opts.items()
                        if k.lower().startswith(STORAGE_OPTION_PREFIX)))


@dataclass(frozen=True)
class ReadOptions:
    path: str
    write_ids: ValidWriteIdList | None  # None: from the metastore, else everything on disk
    txns: ValidTxnList | None
    include_row_id: bool
    table_type: str
    max_split_bytes: int
    storage_options: tuple
    partition_filter: str | None = None
    filter_pushdown: str = "auto"
    metastore_url: str | None = None

    @classmethod
    def parse(cls, options: dict) -> "ReadOptions":
        opts = _canonical(dict(options), READ_OPTIONS)
        path = _path(opts, ".load(path)")
        table_type = _choice(opts, "tableType", TABLE_TYPES, "auto")
        pushdown = _choice(opts, "filterPushdown", PUSHDOWN_MODES, "auto")
        partition_filter = opts.get("partitionFilter")
        if partition_filter is not None and not partition_filter.strip():
            raise InvalidOptionError("partitionFilter", "is empty")
        write_ids = None
        if "validWriteIds" in opts:
            write_ids = ValidWriteIdList.parse(opts["validWriteIds"], option="validWriteIds")
        return cls(
            path=path,
            write_ids=write_ids,
            txns=ValidTxnList.parse(opts["validTxns"], option="validTxns") if "validTxns" in opts else None,
            include_row_id=parse_bool("includeRowId", opts.get("includeRowId", "false")),
            table_type=table_type,
            max_split_bytes=parse_size("maxSplitBytes", opts.get("maxSplitBytes", str(DEFAULT_MAX_SPLIT_BYTES))),
            partition_filter=partition_filter,
            filter_pushdown=pushdown,
            metastore_url=opts.get("metastoreUrl"),
            storage_options=_storage_options(opts),
        )


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(c.strip() for c in (value or "").split(",") if c.strip())


@dataclass(frozen=True)
class WriteOptions:
    path: str
    metastore_url: str | None
    static_partition: str | None
    dynamic_overwrite: bool
    partition_columns: tuple[str, ...]
    bucket_columns: tuple[str, ...]
    num_buckets: int
    insert_only: bool
    compression: str
    table_name: str | None
    storage_options: tuple

    @classmethod
    def parse(cls, options: dict) -> "WriteOptions":
        opts = _canonical(dict(options), WRITE_OPTIONS)
        path = _path(opts, ".save(path)")
        mode = _choice(opts, "partitionOverwriteMode", ("static", "dynamic"), "static")
        table_type = _choice(opts, "tableType", ("full", "insert_only"), "full")
        compression = _choice(opts, "compression", COMPRESSIONS, "zlib")
        bucket_columns = _csv(opts.get("bucketColumns"))
        num_buckets = 0
        if "numBuckets" in opts:
            try:
                num_buckets = int(opts["numBuckets"])
            except ValueError:
                raise InvalidOptionError("numBuckets", f"expected a positive integer, got {opts['numBuckets']!r}") from None
            if not 1 <= num_buckets <= 4096:
                raise InvalidOptionError("numBuckets", "must be between 1 and 4096")
        if bool(bucket_columns) != bool(num_buckets):
            raise InvalidOptionError("numBuckets" if bucket_columns else "bucketColumns",
                                     "bucketColumns and numBuckets go together")
        return cls(
            path=path,
            metastore_url=opts.get("metastoreUrl"),
            static_partition=opts.get("partition"),
            dynamic_overwrite=mode == "dynamic",
            partition_columns=_csv(opts.get("partitionColumns")),
            bucket_columns=bucket_columns,
            num_buckets=num_buckets,
            insert_only=table_type == "insert_only",
            compression=compression,
            table_name=opts.get("tableName"),
            storage_options=_storage_options(opts),
        )
