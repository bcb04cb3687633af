"""The target of a Spark DML read at its snapshot, with ROW__IDs and the directory each row was
read from, and change rows written as Hive split-update events by the tasks of one Spark job
(:mod:`acid_source.dml.events`), repartitioned by (partition, writer id of the old row) so that
every delete event of a delete file is in one task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from ..dml.events import (
    DELETE,
    MATCHED_NO_ACTION,
    OP_COLUMN,
    ROW_ID_COLUMN,
    SOURCE_DIR_COLUMN,
    UPDATE_DELETE,
    ChangePlan,
    relative_dir,
    with_source_dir,
    write_changes,
)
from ..errors import AcidError
from ..expressions import Condition
from ..scan.planner import TableScan
from ..scan.reader import read_split
from ..scan.resolved import ResolvedTable
from ..scan.splits import ROW_ID_COLUMN as READ_ROW_ID
from ..write.task import TaskResult
from .tasks import run_per_partition


# --- reading the target ----------------------------------------------------------------------
def target_frame(spark, resolved: ResolvedTable, columns: list[str] | None = None,
                 condition: Any = None) -> tuple[DataFrame, bool]:
    """The target at the DML's snapshot: ``columns`` (all when None), the partition columns,
    the ROW__ID (renamed so that no source column can clash with it) and the partition
    directory each row was read from (:data:`SOURCE_DIR_COLUMN`: its delete event goes there).

    Planned here, on the driver, from the snapshot and listing the DML already holds (no
    second resolution, listing or store opening): one Spark task per split, each reading its
    split on an executor. No read lease is taken: the DML's open transaction, begun before
    its snapshot, holds the cleaner's floor until the statement ends.

    When ``condition`` is a SQL string the reader can evaluate without ever dropping a row
    Spark would keep (:func:`~acid_source.expressions.exactness.reader_prefilter`), the reader
    drops the others before they reach the JVM, and its conjuncts on partition columns prune
    partitions: a 1% DELETE then moves 1% of the rows into Spark. Spark still applies the
    condition on top. Also returns whether any split is left to read (with none, an UPDATE or
    DELETE has nothing to change and runs no Spark job)."""
    full = resolved.schema(include_row_id=True)
    wanted = set(full.names) if columns is None else set(columns) | set(resolved.partition_columns)
    arrow = pa.schema([f for f in full if f.name in wanted or f.name == READ_ROW_ID])
    schema = from_arrow_schema(arrow.append(pa.field(SOURCE_DIR_COLUMN, pa.string())), prefer_timestamp_ntz=True)
    scan = TableScan(resolved, include_row_id=True, row_filter=_reader_prefilter(condition, arrow))
    ctx, splits = scan.plan(arrow)
    if not splits:
        frame = spark.createDataFrame([], schema)
    else:
        root = resolved.storage.root

        def read(batches):  # the Spark task of split i (one id per partition)
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    read_from = relative_dir(root, splits[i].partition_path)
                    for rows in read_split(splits[i], ctx):
                        yield with_source_dir(rows, read_from)

        frame = spark.range(0, len(splits), 1, len(splits)).mapInArrow(read, schema)
    return frame.withColumnRenamed(READ_ROW_ID, ROW_ID_COLUMN), bool(splits)


def _reader_prefilter(condition: Any, schema: pa.Schema) -> Condition | None:
    """What the reader may filter by for ``condition`` (never dropping a row Spark keeps),
    bound to ``schema``, or None when it must pass every row to Spark."""
    if not isinstance(condition, str):
        return None
    from ..expressions import parse_condition
    from ..expressions.exactness import reader_prefilter

    prefilter = reader_prefilter(condition, schema)
    if prefilter is None:
        return None
    try:
        return parse_condition(prefilter, schema, argument="condition")
    except AcidError:
        return None  # Spark reports what is wrong with it


# --- change rows -----------------------------------------------------------------------------
@dataclass
class ChangeShape:
    """Builds change-row structs of one table (every field cast to the table's type)."""

    schema: StructType  # the table's columns
    partition_columns: list[str]
    row_id_type: Any
    names: list[str] = field(init=False)

    def __post_init__(self):
        self.names = [f.name for f in self.schema.fields]

    def _typed(self, name: str, value: Column | None) -> Column:
        dtype = self.schema[name].dataType
        return (F.lit(None) if value is None else value).cast(dtype).alias(name)

    def delete_side(self, op: int, partition_values: Mapping[str, Column], row_id: Column,
                    source_dir: Column) -> Column:
        """The old row: its ROW__ID, old partition values (data columns are not needed) and the
        directory it was read from."""
        fields = [F.lit(op).cast("tinyint").alias(OP_COLUMN)]
        fields += [self._typed(n, partition_values.get(n)) for n in self.names]
        fields.append(row_id.cast(self.row_id_type).alias(ROW_ID_COLUMN))
        fields.append(source_dir.cast("string").alias(SOURCE_DIR_COLUMN))
        return F.struct(*fields)

    def insert_side(self, op: int, values: Mapping[str, Column]) -> Column:
        fields = [F.lit(op).cast("tinyint").alias(OP_COLUMN)]
        fields += [self._typed(n, values.get(n)) for n in self.names]
        fields.append(F.lit(None).cast(self.row_id_type).alias(ROW_ID_COLUMN))
        fields.append(F.lit(None).cast("string").alias(SOURCE_DIR_COLUMN))
        return F.struct(*fields)

    def rows(self, frame: DataFrame, delete: Column | None, insert: Column | None) -> DataFrame:
        """Each row of ``frame`` -> its non-null change rows (0, 1 or 2)."""
        sides = [s for s in (delete, insert) if s is not None]
        exploded = frame.select(F.explode(F.filter(F.array(*sides), lambda x: x.isNotNull())).alias("change"))
        return exploded.select("change.*")


def write_change_rows(spark, changes: DataFrame, plan: ChangePlan, shape: ChangeShape) -> list[TaskResult]:
    """Repartition so that each (partition, old writer id) is in one task; write; collect."""
    write = plan.write
    is_delete = F.col(OP_COLUMN).isin(DELETE, UPDATE_DELETE, MATCHED_NO_ACTION)
    if write.bucketed:
        insert_key = F.hash(*[F.col(c) for c in _spelled(write.bucket_columns, shape.names)])
    else:  # any spread will do; Spark refuses to hash maps (a map column would fail the statement)
        hashable = [F.col(f.name) for f in shape.schema.fields if not _holds_map(f.dataType)]
        insert_key = F.hash(*hashable) if hashable else F.lit(0)
    key = F.when(is_delete, _writer_id(F.col(f"{ROW_ID_COLUMN}.bucketId"))).otherwise(insert_key)
    parts = [F.col(c) for c in write.partition_columns]
    routed = changes.repartition(*parts, key)

    # each task answers with its TaskResult, or with the typed error write_changes raised (a
    # MergeCardinalityError names the row), which arrives here as itself
    return run_per_partition(routed, lambda task_id, batches: write_changes(plan, task_id, batches))


def _holds_map(dtype: DataType) -> bool:
    if isinstance(dtype, MapType):
        return True
    if isinstance(dtype, ArrayType):
        return _holds_map(dtype.elementType)
    if isinstance(dtype, StructType):
        return any(_holds_map(f.dataType) for f in dtype.fields)
    return False


def _writer_id(prop: Column) -> Column:
    """The writer id in a ROW__ID's bucket property (BucketCodec V1, or V0's plain number): the
    N of the ``bucket_N`` file its delete event belongs in. Rows of one writer but different
    statement ids must meet in one task, or two tasks would write the same delete file."""
    v1 = F.shiftright(prop, 29) != 0
    return F.when(v1, F.shiftright(prop.bitwiseAND(0x0FFF0000), 16)).otherwise(prop)


def _spelled(names, columns: list[str]) -> list[str]:
    by_lower = {c.lower(): c for c in columns}
    return [by_lower.get(n.lower(), n) for n in names]


def change_shape(resolved: ResolvedTable) -> ChangeShape:
    full = from_arrow_schema(resolved.schema(include_row_id=True), prefer_timestamp_ntz=True)
    columns = StructType([f for f in full.fields if f.name != READ_ROW_ID])
    return ChangeShape(columns, resolved.partition_columns, full[READ_ROW_ID].dataType)


