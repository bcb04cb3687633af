"""What the metastore knows about a table: :class:`TableInfo`, and the normal forms of its
location, name and schema."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

import pyarrow as pa

from ..errors import InvalidOptionError, SchemaError

COMPRESSIONS = ("none", "zlib", "snappy", "lzo", "lz4", "zstd")
BUCKETING_VERSIONS = (1, 2)


@dataclass(frozen=True)
class TableInfo:
    """One registered table. ``schema`` is the full table schema as Spark sees it: data columns
    and the partition columns (which must be among them)."""

    table_id: int
    name: str | None  # lower-case, e.g. "default.sales"; None when registered by path only
    location: str  # normalized: absolute path or URL, no trailing slash
    schema: pa.Schema
    partition_columns: tuple[str, ...] = ()
    bucket_columns: tuple[str, ...] = ()
    num_buckets: int = 0
    insert_only: bool = False
    compression: str = "zlib"
    bucketing_version: int = 2
    properties: dict[str, str] = field(default_factory=dict, hash=False)  # Hive table properties
    created_at: float = 0.0

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_columns)

    @property
    def is_bucketed(self) -> bool:
        return self.num_buckets > 0

    @property
    def data_columns(self) -> tuple[str, ...]:
        parts = set(self.partition_columns)
        return tuple(n for n in self.schema.names if n not in parts)



def normalize_location(location: str | os.PathLike) -> str:
    """An absolute local path (``file:`` URLs become paths) or ``scheme://...``, without a
    trailing slash, so one table has one spelling."""
    text = os.fspath(location) if isinstance(location, os.PathLike) else location
    if not isinstance(text, str) or not text.strip():
        raise InvalidOptionError("location", f"a table location must be a non-empty path or URL, got {location!r}")
    text = text.strip()
    if text.lower().startswith("file:"):
        rest = text[len("file:"):]
        if rest.startswith("//"):  # file:///abs or file://localhost/abs
            rest = rest[2:]
            host, sep, path = rest.partition("/")
            if host not in ("", "localhost"):
                raise InvalidOptionError("location", f"file URL with a remote host is not supported: {text!r}")
            rest = sep + path
        text = rest or "/"
    if "://" in text:
        scheme, rest = text.split("://", 1)
        rest = rest.rstrip("/")
        if not rest:
            raise InvalidOptionError("location", f"URL {text!r} names no bucket or path")
        return f"{scheme.lower()}://{rest}"
    return os.path.abspath(os.path.expanduser(text))


def normalize_name(name: str | None) -> str | None:
    """Hive table names are case-insensitive and stored lower-case (``db.table``)."""
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip() or ":" in name or "$" in name:
        # ':' and '$' would break the ValidWriteIdList / ValidTxnWriteIdList strings
        raise InvalidOptionError("name", f"a table name must be non-empty and contain no ':' or '$', got {name!r}")
    return name.strip().lower()


def serialize_schema(schema: pa.Schema) -> bytes:
    return schema.serialize().to_pybytes()


def deserialize_schema(data: bytes) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(data))


def validate_layout(schema, partition_columns, bucket_columns, num_buckets, compression,
                    bucketing_version) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """Check the table layout arguments; returns (partition columns, bucket columns, compression)."""
    if not isinstance(schema, pa.Schema):
        raise SchemaError(f"a table schema must be a pyarrow.Schema, got {type(schema).__name__}")
    if len(set(schema.names)) != len(schema.names):
        dup = sorted({n for n in schema.names if schema.names.count(n) > 1})
        raise SchemaError(f"duplicate column names in the table schema: {dup}")
    if isinstance(partition_columns, str) or isinstance(bucket_columns, str):
        raise InvalidOptionError("partition_columns" if isinstance(partition_columns, str) else "bucket_columns",
                                 "expected a sequence of column names, not a single string")
    parts = tuple(partition_columns)
    buckets = tuple(bucket_columns)
    names = set(schema.names)
    for option, cols in (("partition_columns", parts), ("bucket_columns", buckets)):
        missing = [c for c in cols if c not in names]
        if missing:
            raise SchemaError(f"{option}: {missing} not in the table schema {schema.names}")
        if len(set(cols)) != len(cols):
            raise InvalidOptionError(option, f"columns repeat: {list(cols)}")
    if len(parts) == len(names) and parts:
        raise SchemaError("every column is a partition column; a table needs at least one data column")
    both = sorted(set(parts) & set(buckets))
    if both:
        raise InvalidOptionError("bucket_columns", f"{both} are partition columns and cannot be bucket columns")
    if not isinstance(num_buckets, int) or num_buckets < 0:
        raise InvalidOptionError("num_buckets", f"must be an integer >= 0, got {num_buckets!r}")
    if bool(buckets) != (num_buckets > 0):
        raise InvalidOptionError("num_buckets", f"bucket_columns {list(buckets)} need num_buckets > 0 and vice versa "
                                 f"(got num_buckets={num_buckets})")
    comp = str(compression).strip().lower()
    if comp not in COMPRESSIONS:
        raise InvalidOptionError("compression", f"expected one of {', '.join(COMPRESSIONS)}, got {compression!r}")
    if bucketing_version not in BUCKETING_VERSIONS:
        raise InvalidOptionError("bucketing_version", f"expected 1 or 2, got {bucketing_version!r}")
    return parts, buckets, comp


RESERVED_PROPERTIES = ("transactional", "transactional_properties", "bucketing_version", "orc.compress")


def table_properties(insert_only: bool, compression: str, bucketing_version: int,
                     extra: Mapping[str, str] | None) -> dict[str, str]:
    """Hive's table properties for the layout, plus the caller's own (which may not contradict
    the reserved ones)."""
    props = {
        "transactional": "true",
        "transactional_properties": "insert_only" if insert_only else "default",
        "bucketing_version": str(bucketing_version),
        "orc.compress": compression.upper(),
    }
    for key, value in dict(extra or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidOptionError("properties", f"keys and values must be strings, got {key!r}: {value!r}")
        reserved = key.lower()
        if reserved in props and props[reserved].lower() != value.lower():
            raise InvalidOptionError("properties", f"{key!r}={value!r} contradicts the table layout "
                                     f"({reserved}={props[reserved]!r})")
        if reserved not in props:
            props[key] = value
    return props
