"""Spark adapters only: they translate between Spark's Python Data Source API and the core.

Spark pickles these objects between separate Python worker processes (schema inference,
planning, each task), so they hold options and plain values, never live clients. What runs in
tasks (``read``, ``write``) imports only executor-side modules; resolution, planning and the
transaction store are imported inside the driver-side methods that use them.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceWriter,
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
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from ..filters import Predicate
from ..scan.reader import read_split
from ..scan.splits import BucketSplit, ReadContext
from ..specs import ReadSpec
from ..staged import StagedWrite
from ..write.task import TaskResult
from .options import option_errors, read_spec, stream_read_spec, with_option_errors, write_spec

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
        if type(f) is cls:  # each of these classes has .attribute and .value
            return Predicate(op, tuple(f.attribute), f.value)  # type: ignore[attr-defined]
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


def _use_pushdown(options: ReadSpec) -> bool:
    if options.filter_pushdown == "auto":
        import pyspark

        return pushdown_is_safe(pyspark.__version__)
    return options.filter_pushdown == "true"


def take_read_lease(options: ReadSpec, table) -> None:
    """A lease on the planned snapshot, for ``readLeaseSeconds``: the cleaner keeps the files
    these partitions read until it expires. Planning runs in a short-lived driver-side process
    and tasks never talk to the store, so nothing renews or releases it; Spark may reuse the
    planned partitions for later queries of the same DataFrame, which then read the same files
    (if the cleaner removed them after the lease expired, the tasks fail with
    SnapshotFilesRemovedError rather than return fewer rows)."""
    if options.read_lease_seconds == 0 or not table.registered:
        return
    from ..errors import MetastoreError
    from ..metastore.leases import default_holder
    from ..resolve import open_store

    store = open_store(options.metastore_url)
    assert store is not None  # the table is registered, so the store exists
    try:
        store.acquire_lease(table.info.table_id, table.write_ids, table.txns, options.read_lease_seconds,
                            default_holder(f"Spark read of {table.location}"))
    except MetastoreError as exc:  # a read-only or unreachable store must not fail the read
        import logging

        logging.getLogger("acidorc.leases").warning(
            "reading %s without a read lease (the store did not record it: %s)", table.location, exc)


class AcidOrcReader(DataSourceReader):
    """Reads without filter pushdown (``partitionFilter`` still prunes partitions)."""

    def __init__(self, options: ReadSpec, schema: StructType, resolved=None):
        self._options = options
        self._schema = schema
        self._predicates: list[Predicate] = []
        self._resolved = resolved  # the table resolved by DataSource.schema(), if it ran
        self._scan_cache = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_scan_cache"] = state["_resolved"] = None  # listings stay on the driver
        return state

    def _scan(self):
        if self._scan_cache is None:
            from ..resolve import scan_for

            self._scan_cache = scan_for(self._options, self._arrow_schema(), self._resolved)
        return self._scan_cache

    def _arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(self._schema, timezone="UTC")

    @with_option_errors
    def partitions(self) -> Sequence[InputPartition]:
        scan = self._scan()
        take_read_lease(self._options, scan.table)  # before the directories are listed
        ctx, splits = scan.plan(self._arrow_schema(), self._predicates)
        if not splits:
            return [AcidInputPartition(ctx, None)]
        return [AcidInputPartition(ctx, s) for s in splits]

    def read(self, partition: AcidInputPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        if partition.split is None:
            return
        with option_errors():  # a rowFilter that fails on the rows is the option's error
            yield from read_split(partition.split, partition.ctx)


class AcidOrcPushdownReader(AcidOrcReader):
    """Also uses filters Spark pushes down: partition pruning and stripe skipping."""

    @with_option_errors
    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        partition_columns = {c.lower() for c in self._scan().table.layout.partition_columns}
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
    """Tasks write files of the new write id; the driver commits it in the transaction store:
    a :class:`~acid_source.staged.StagedWrite` (``AcidTable.newWrite``) run by Spark.

    The transaction was opened when Spark asked for this writer, in a short-lived planning
    process; a detached heartbeat process keeps it alive while the job runs (tasks never talk
    to the store). Commit and abort run in another driver-side process, which finds the
    transaction again through the staged write's :class:`~acid_source.txn.TransactionRef` (no
    password inside).
    """

    def __init__(self, staged: StagedWrite):
        self.staged = staged

    @with_option_errors
    def write(self, iterator: Iterator[pa.RecordBatch]) -> AcidCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        task = self.staged.writer(context.partitionId() if context else 0)
        try:
            for batch in iterator:
                task.write(batch)
            return AcidCommitMessage(task.close())
        except BaseException:
            task.abort()
            raise

    @with_option_errors
    def commit(self, messages: list[AcidCommitMessage | None]) -> None:  # type: ignore[override]
        # runs in Spark's commit worker, which has no SparkSession: an automatic compaction runs
        # in this process (capped in size: larger ones are left to an explicit compact())
        self.staged.commit([m.result for m in messages if m is not None])

    def abort(self, messages: list[AcidCommitMessage | None]) -> None:  # type: ignore[override]
        self.staged.abort([m.result for m in messages if m is not None], reason="the Spark job failed")


#: Options (lower case, as Spark gives them) only a streaming read takes.
_STREAM_ONLY = {"maxwriteidspertrigger", "maxrowspertrigger", "skipchangecommits"}


def _is_stream_read(options) -> bool:
    """Whether ``schema()`` is asked for a streaming read (Spark does not say): options only a
    stream takes, ``startingVersion=latest``, a start without the change feed (a batch read
    refuses it), or a change feed without a start (a stream starts from the table as it is).
    What is left - a change feed with a start - has the same columns either way."""
    given = {str(k).lower(): str(v).strip().lower() for k, v in options.items()}
    if _STREAM_ONLY & set(given) or given.get("startingversion") == "latest":
        return True
    if "endingversion" in given or "endingtimestamp" in given:  # a range: a batch change feed
        return False
    started = "startingversion" in given or "startingtimestamp" in given
    return started != (given.get("readchangefeed") == "true")


class AcidOrcDataSource(DataSource):
    """``spark.read.format("acidorc")``: Hive ACID (transactional ORC) tables."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    @with_option_errors
    def schema(self) -> StructType:
        from ..resolve import resolve_read

        if _is_stream_read(self.options):
            from .stream_reader import stream_schema

            return stream_schema(stream_read_spec(self.options))
        options = read_spec(self.options)
        if options.read_change_feed:  # planned once, as a read is resolved once
            from .change_feed import change_feed_schema, plan_change_feed

            self._change_plan = plan_change_feed(options)
            return change_feed_schema(self._change_plan)
        # Resolved once: Spark pickles this object into the planning process, which reuses it.
        self._resolved = resolve_read(options)
        return from_arrow_schema(self._resolved.schema(options.include_row_id), prefer_timestamp_ntz=True)

    @with_option_errors
    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from ..writes import stage_write

        staged = stage_write(write_spec(self.options), overwrite=overwrite,
                             data_schema=to_arrow_schema(schema, timezone="UTC"), heartbeat="process")
        try:
            return AcidOrcWriter(staged.detached())
        except BaseException as exc:
            staged.abort(reason=f"could not hand the transaction to Spark: {exc}")
            raise

    @with_option_errors
    def streamWriter(self, schema: StructType, overwrite: bool):
        """``df.writeStream.format("acidorc")``: one transaction per micro-batch, exactly once
        (:mod:`acid_source.spark.stream_writer`)."""
        from .stream_writer import make_stream_writer

        return make_stream_writer(self.options, schema, overwrite)

    def streamReader(self, schema: StructType):
        """``spark.readStream.format("acidorc")``: the rows of newly committed writes
        (:mod:`acid_source.spark.stream_reader`). Bad options fail on first use: Spark's stream
        runner would bury an error raised here."""
        from ..errors import AcidError
        from .stream_reader import AcidStreamReader, FailedStreamReader

        try:
            with option_errors():
                return AcidStreamReader(stream_read_spec(self.options), schema)
        except AcidError as exc:
            return FailedStreamReader(exc)

    @with_option_errors
    def reader(self, schema: StructType) -> DataSourceReader:
        options = read_spec(self.options)
        if options.read_change_feed:
            from .change_feed import AcidChangeFeedReader

            return AcidChangeFeedReader(options, getattr(self, "_change_plan", None))
        cls = AcidOrcPushdownReader if _use_pushdown(options) else AcidOrcReader
        return cls(options, schema, getattr(self, "_resolved", None))
