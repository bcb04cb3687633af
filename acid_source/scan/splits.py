"""What one read task needs, as small picklable values: no live clients, no Spark types.

A :class:`BucketSplit` is one (partition directory, bucket) - or a stripe range of a very
large bucket - with the snapshot that decides visibility, so executors contact nothing but
storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..filters import Predicate
from ..storage import Storage

ROW_ID_COLUMN = "ROW__ID"
ROW_ID_TYPE = pa.struct([("writeId", pa.int64()), ("bucketId", pa.int32()), ("rowId", pa.int64())])


@dataclass(frozen=True)
class FileSlice:
    """One data file of a bucket, or a stripe range of it."""

    path: str
    bucket_id: int
    dir_kind: str  # "base" | "delta" | "delete_delta" | "original" (pre-ACID, partition root)
    min_write_id: int
    max_write_id: int
    statement_id: int  # -1 when the directory name has none
    length: int | None = None  # committed length from a _flush_length side file
    stripes: tuple[int, int] | None = None  # inclusive stripe range; None = whole file
    # files of the same bucket listed before this one in the same folder: the synthetic row ids
    # of a pre-ACID (original) file start after their rows
    earlier_originals: tuple[str, ...] = ()
    size: int = 0  # bytes to read (the committed length for a streamed file)


@dataclass(frozen=True)
class BucketSplit:
    partition_path: str
    partition_values: tuple
    bucket_id: int
    inserts: tuple[FileSlice, ...]
    deletes: tuple[FileSlice, ...]
    write_ids: str  # the snapshot, as Hive serializes a ValidWriteIdList
    sliced: bool = False  # True when the bucket was split into stripe ranges

    @property
    def description(self) -> str:
        part = self.partition_path.rsplit("/", 1)[-1] if self.partition_values else ""
        return f"{part} bucket {self.bucket_id}".strip()


@dataclass(frozen=True)
class ReadContext:
    """Everything shared by all splits of one scan."""

    storage: Storage
    table_kind: str  # "full" | "insert_only"
    output_schema: pa.Schema  # data columns, then partition columns, then ROW__ID if asked
    partition_columns: tuple[str, ...]
    include_row_id: bool
    predicates: tuple[Predicate, ...] = field(default=())  # on data columns: stripe skipping
    #: a pyarrow compute Expression over the output columns (option rowFilter, compiled on the
    #: driver): rows where it is not true are dropped before they leave the task
    row_filter: Any = None
    #: the splits' snapshot, parsed once on the driver (a ValidWriteIdList; each split also
    #: carries it as Hive's string)
    write_ids: Any = None

    @property
    def data_fields(self) -> list[pa.Field]:
        skip = {c.lower() for c in self.partition_columns} | {ROW_ID_COLUMN.lower()}
        return [f for f in self.output_schema if f.name.lower() not in skip]
