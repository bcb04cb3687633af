"""Spark adapters only: they translate between Spark's Python Data Source API and the core.

Spark pickles these objects between separate Python worker processes (schema inference,
planning, each task), so they hold options and plain values, never live clients.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceWriter,
    WriterCommitMessage,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from .filters import Predicate
from .options import ReadOptions, WriteOptions
from .scan.planner import TableScan
from .scan.reader import read_split
from .scan.splits import BucketSplit, ReadContext
from .write.job import WriteJob
from .write.task import TaskResult, TaskWriter

SOURCE_NAME = "acidorc"

_COMPARISON_FILTERS = {
    EqualTo: "eq",
    EqualNullSafe: "eq_null_safe",
    GreaterThan: "gt",
    GreaterThanOrEqual: "ge",
    LessThan: "lt",
    LessThanOrEqual: "le",
}


def to_predicate(f: Filter) -> Predicate | None:
    """A Spark filter as a core predicate; None for filters we cannot use."""
    for cls, op in _COMPARISON_FILTERS.items():
        if type(f) is cls:
            return Predicate(op, tuple(f.attribute), f.value)
    if isinstance(f, In):
        return Predicate("in", tuple(f.attribute), tuple(f.value))
    if isinstance(f, IsNull):
        return Predicate("is_null", tuple(f.attribute))
    if isinstance(f, IsNotNull):
        return Predicate("is_not_null", tuple(f.attribute))
    if isinstance(f, StringStartsWith):
        return Predicate("starts_with", tuple(f.attribute), f.value)
    if isinstance(f, Not):
        inner = to_predicate(f.child)
        return Predicate("not", inner.column, inner) if inner is not None else None
    return None


class AcidInputPartition(InputPartition):
    """One (partition directory, bucket) split plus the scan-wide read context."""

    def __init__(self, ctx: ReadContext, split: BucketSplit | None):
        super().__init__(split.description if split else "empty")
        self.ctx = ctx
        self.split = split


def pushdown_is_safe(spark_version: str) -> bool:
    """Whether Spark keeps pushed-down read plans per scan.

    Spark 4.2 and 4.3 cache the partitions planned for a filtered scan on the data source
    object and reuse them for a later scan without pushable filters of the same DataFrame
    (``PythonScanBuilder.pushFilters`` -> ``PythonDataSourceV2.setReadInfo``): a filtered
    ``df.filter(...).count()`` followed by ``df.count()`` would return pruned rows for the
    second query. Spark 5 carries pushed-down plans in the scan instead.
    """
    try:
        major = int(spark_version.split(".")[0])
    except ValueError:
        return False
    return major >= 5


def _use_pushdown(options: ReadOptions) -> bool:
    if options.filter_pushdown == "auto":
        import pyspark

        return pushdown_is_safe(pyspark.__version__)
    return options.filter_pushdown == "true"


class AcidOrcReader(DataSourceReader):
    """Reads without filter pushdown (``partitionFilter`` still prunes partitions)."""

    def __init__(self, options: dict, schema: StructType):
        self._options = ReadOptions.parse(options)
        self._schema = schema
        self._predicates: list[Predicate] = []
        self._scan_cache: TableScan | None = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_scan_cache"] = None  # listings stay on the driver
        return state

    def _scan(self) -> TableScan:
        if self._scan_cache is None:
            self._scan_cache = TableScan.open(self._options)
        return self._scan_cache

    def partitions(self) -> Sequence[InputPartition]:
        arrow_schema = to_arrow_schema(self._schema, timezone="UTC")
        ctx, splits = self._scan().plan(arrow_schema, self._predicates)
        if not splits:
            return [AcidInputPartition(ctx, None)]
        return [AcidInputPartition(ctx, s) for s in splits]

    def read(self, partition: AcidInputPartition) -> Iterator[pa.RecordBatch]:
        if partition.split is None:
            return iter(())
        return read_split(partition.split, partition.ctx)


class AcidOrcPushdownReader(AcidOrcReader):
    """Also uses filters Spark pushes down: partition pruning and stripe skipping."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        partition_columns = {c.lower() for c in self._scan().layout.partition_columns}
        for f in filters:
            pred = to_predicate(f)
            if pred is not None:
                self._predicates.append(pred)
            # Partition filters are applied exactly by pruning; everything else only skips
            # stripes by statistics, so Spark must still evaluate it.
            if pred is None or not pred.columns <= partition_columns:
                yield f


class AcidCommitMessage(WriterCommitMessage):
    def __init__(self, result: TaskResult):
        self.result = result


class AcidOrcWriter(DataSourceArrowWriter):
    """Tasks write files of the new write id; the driver commits it in the metastore."""

    HEARTBEAT_SECONDS = 60.0

    def __init__(self, job: WriteJob):
        self.job = job

    def write(self, iterator: Iterator[pa.RecordBatch]) -> AcidCommitMessage:
        import time

        from pyspark import TaskContext

        context = TaskContext.get()
        task = TaskWriter(self.job.plan, context.partitionId() if context else 0)
        last_beat = 0.0
        try:
            for batch in iterator:
                if time.monotonic() - last_beat > self.HEARTBEAT_SECONDS:
                    self._heartbeat()
                    last_beat = time.monotonic()
                task.write(batch)
            return AcidCommitMessage(task.close())
        except BaseException:
            task.abort()
            raise

    def _heartbeat(self) -> None:
        """Keep the transaction alive while tasks run (best effort: an executor may not reach
        the metastore; the commit still checks that the transaction is open)."""
        try:
            self.job.metastore.heartbeat(self.job.txn_id)
        except Exception:
            pass

    def commit(self, messages: list[AcidCommitMessage | None]) -> None:
        self.job.commit([m.result for m in messages if m is not None])

    def abort(self, messages: list[AcidCommitMessage | None]) -> None:
        self.job.abort([m.result for m in messages if m is not None])


class AcidOrcDataSource(DataSource):
    """``spark.read.format("acidorc")``: Hive ACID (transactional ORC) tables."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        options = ReadOptions.parse(self.options)
        return from_arrow_schema(TableScan.open(options).infer_schema(), prefer_timestamp_ntz=True)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = WriteOptions.parse(self.options)
        return AcidOrcWriter(WriteJob.begin(options, to_arrow_schema(schema, timezone="UTC"), overwrite))

    def reader(self, schema: StructType) -> DataSourceReader:
        options = ReadOptions.parse(self.options)
        cls = AcidOrcPushdownReader if _use_pushdown(options) else AcidOrcReader
        return cls(self.options, schema)
