"""What a read, a write and a streaming read are asked to do, typed: the core takes these, never
option strings. ``AcidTable`` builds them from its arguments; the Spark edge from Spark's
options (:mod:`acid_source.spark.options`), in one place."""

from __future__ import annotations

from dataclasses import dataclass

from .layout.writeids import ValidTxnList, ValidWriteIdList
from .orc.codecs import DEFAULT_CODEC
from .values import DEFAULT_MAX_SPLIT_BYTES, DEFAULT_READ_LEASE_SECONDS, StaticPartition


@dataclass(frozen=True)
class ReadSpec:
    """What one read reads, typed: the core takes this, never option strings (Spark's string
    options become one in one place, :func:`acid_source.spark.options.read_spec`)."""

    path: str
    write_ids: ValidWriteIdList | None = None  # None: from the metastore, else everything on disk
    txns: ValidTxnList | None = None
    include_row_id: bool = False
    table_type: str = "auto"
    max_split_bytes: int = DEFAULT_MAX_SPLIT_BYTES
    storage_options: tuple = ()
    partition_filter: str | None = None
    row_filter: str | None = None
    filter_pushdown: str = "auto"
    metastore_url: str | None = None
    version_as_of: int | None = None
    timestamp_as_of: float | None = None
    read_lease_seconds: float = DEFAULT_READ_LEASE_SECONDS  # 0: the read takes no lease
    read_change_feed: bool = False
    native_read: bool = True  # acid_source.read: files that need no merge go to Spark's ORC reader
    starting_version: int | None = None  # the change feed's range (only with read_change_feed)
    ending_version: int | None = None
    starting_timestamp: float | None = None
    ending_timestamp: float | None = None


@dataclass(frozen=True)
class WriteSpec:
    """What one append or overwrite writes, typed: ``AcidTable`` builds one directly; Spark's
    string options become one in one place (:func:`acid_source.spark.options.write_spec`)."""

    path: str
    metastore_url: str | None = None
    #: None, or the static partition the data goes to (the data then lacks those columns)
    partition: StaticPartition | None = None
    dynamic_overwrite: bool = False
    partition_columns: tuple[str, ...] = ()
    bucket_columns: tuple[str, ...] = ()
    num_buckets: int = 0
    insert_only: bool = False
    compression: str = DEFAULT_CODEC
    table_name: str | None = None
    storage_options: tuple = ()
    # the table-creation options the caller actually gave (checked against an existing table)
    given: frozenset = frozenset()


@dataclass(frozen=True)
class StreamReadSpec:
    """A streaming read, typed (:mod:`acid_source.spark.stream_reader`)."""

    path: str
    metastore_url: str | None = None
    storage_options: tuple = ()
    starting_version: int | str | None = None  # None: the table as it is, then changes; "latest"; a write id
    read_change_feed: bool = False
    skip_change_commits: bool = False
    max_write_ids_per_trigger: int | None = None
    max_rows_per_trigger: int | None = None
