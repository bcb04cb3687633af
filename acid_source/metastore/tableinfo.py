"""What the metastore knows about a table: :class:`TableInfo`, and the normal forms of its
location, name and schema."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Mapping

import pyarrow as pa

from ..errors import InvalidArgumentError, SchemaError
from ..layout.bucketing import field_hashes
from ..orc.codecs import canonical_codec, hive_codec_name
from ..orc.column_types import unsupported_type
from ..orc.files import wall_clock_type

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
    def data_columns(self) -> tuple[str, ...]:
        parts = set(self.partition_columns)
        return tuple(n for n in self.schema.names if n not in parts)

    @property
    def read_schema(self) -> pa.Schema:
        """The columns as a read returns them: data columns, then the partition columns (Hive's
        order, wherever the DDL named them)."""
        return pa.schema([self.schema.field(n) for n in self.data_columns + tuple(self.partition_columns)])


def normalize_location(location: str | os.PathLike) -> str:
    """An absolute local path (``file:`` URLs become paths) or ``scheme://...``, without a
    trailing slash, so one table has one spelling."""
    text = os.fspath(location) if isinstance(location, os.PathLike) else location
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("location", f"a table location must be a non-empty path or URL, got {location!r}")
    text = text.strip()
    if text.lower().startswith("file:"):
        rest = text[len("file:"):]
        if rest.startswith("//"):  # file:///abs or file://localhost/abs
            rest = rest[2:]
            host, sep, path = rest.partition("/")
            if host not in ("", "localhost"):
                raise InvalidArgumentError("location", f"file URL with a remote host is not supported: {text!r}")
            rest = sep + path
        text = rest or "/"
    if "://" in text:
        scheme, rest = text.split("://", 1)
        rest = rest.rstrip("/")
        if not rest:
            raise InvalidArgumentError("location", f"URL {text!r} names no bucket or path")
        return f"{scheme.lower()}://{rest}"
    # One spelling per directory: '//a/b', 'a/../b' and symbolic links resolve to the real path,
    # so a table is found in the store however its location is written.
    return os.path.realpath(os.path.expanduser(text))


def normalize_name(name: str | None) -> str | None:
    """Hive table names are case-insensitive and stored lower-case (``db.table``)."""
    if name is None:
        return None
    if not isinstance(name, str) or not TABLE_NAME.fullmatch(name.strip()):
        # Hive's identifiers; ':' and '$' would also break the snapshot strings, and a name
        # must never be mistaken for a path
        raise InvalidArgumentError("name", "a table name is 'table' or 'db.table' of letters, digits and "
                                           f"underscores, got {name!r}")
    return name.strip().lower()


TABLE_NAME = re.compile(r"\w+(?:\.\w+)?")


def serialize_schema(schema: pa.Schema) -> bytes:
    return schema.serialize().to_pybytes()


def deserialize_schema(data: bytes) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(data))


def validate_layout(schema, partition_columns, bucket_columns, num_buckets, compression,
                    bucketing_version) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """Check the table layout arguments; returns (partition columns, bucket columns, codec).

    Everything a later write would trip over is refused here, when the table is created:
    column types ORC cannot store, bucket columns Hive's bucketing hash cannot hash, codecs
    the writer cannot write. Bad arguments are :class:`InvalidArgumentError`, a schema that
    cannot work :class:`SchemaError` naming the column.
    """
    if not isinstance(schema, pa.Schema):
        raise SchemaError(f"a table schema must be a pyarrow.Schema, got {type(schema).__name__}")
    if len(set(schema.names)) != len(schema.names):
        dup = sorted({n for n in schema.names if schema.names.count(n) > 1})
        raise SchemaError(f"duplicate column names in the table schema: {dup}", column=dup[0])
    for f in schema:
        problem = unsupported_type(f.type, f.name)
        if problem:
            raise SchemaError(f"column {problem[0]!r}: {problem[1]}", column=f.name)
    for argument, cols in (("partitionColumns", partition_columns), ("bucketColumns", bucket_columns)):
        if isinstance(cols, str):
            raise InvalidArgumentError(argument, f"expected a sequence of column names, not the string {cols!r}")
    parts = tuple(partition_columns)
    buckets = tuple(bucket_columns)
    names = set(schema.names)
    for argument, cols in (("partitionColumns", parts), ("bucketColumns", buckets)):
        missing = [c for c in cols if c not in names]
        if missing:
            raise SchemaError(f"{argument}: {missing} not in the table schema {schema.names}", column=str(missing[0]))
        if len(set(cols)) != len(cols):
            raise InvalidArgumentError(argument, f"columns repeat: {list(cols)}")
    if len(parts) == len(names) and parts:
        raise SchemaError("every column is a partition column; a table needs at least one data column")
    both = sorted(set(parts) & set(buckets))
    if both:
        raise InvalidArgumentError("bucketColumns", f"{both} are partition columns and cannot be bucket columns")
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, int) or num_buckets < 0:
        raise InvalidArgumentError("numBuckets", f"must be an integer >= 0, got {num_buckets!r}")
    if bool(buckets) != (num_buckets > 0):
        raise InvalidArgumentError("numBuckets", f"bucketColumns {list(buckets)} need numBuckets > 0 and vice "
                                   f"versa (got numBuckets={num_buckets})")
    codec = canonical_codec(compression, error=InvalidArgumentError)
    if isinstance(bucketing_version, bool) or bucketing_version not in BUCKETING_VERSIONS:
        raise InvalidArgumentError("bucketing_version", f"expected 1 or 2, got {bucketing_version!r}")
    for name in buckets:
        _check_bucket_column(schema.field(name), bucketing_version)
    return parts, buckets, codec


def _check_bucket_column(column: pa.Field, bucketing_version: int) -> None:
    """Run Hive's bucketing hash (layout/bucketing.py) on a null of the column's type: it
    refuses types it cannot hash by type, before looking at any value."""
    arrow_type = wall_clock_type(column.type)  # what the write task hashes (write/task.py)
    try:
        field_hashes(pa.nulls(1, arrow_type), bucketing_version)
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise SchemaError(f"bucket column {column.name!r} of type {column.type} cannot be hashed by Hive's "
                          f"bucketing hash: {exc}", column=column.name) from None


def table_properties(insert_only: bool, compression: str, bucketing_version: int,
                     extra: Mapping[str, str] | None) -> dict[str, str]:
    """Hive's table properties for the layout, plus the caller's own (which may not contradict
    the reserved ones)."""
    props = {
        "transactional": "true",
        "transactional_properties": "insert_only" if insert_only else "default",
        "bucketing_version": str(bucketing_version),
        "orc.compress": hive_codec_name(compression),
    }
    for key, value in dict(extra or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidArgumentError("properties", f"keys and values must be strings, got {key!r}: {value!r}")
        reserved = key.lower()
        if reserved in props and props[reserved].lower() != value.lower():
            raise InvalidArgumentError("properties", f"{key!r}={value!r} contradicts the table layout "
                                       f"({reserved}={props[reserved]!r})")
        if reserved not in props:
            props[key] = value
    return props
