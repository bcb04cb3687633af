"""``acid_source.read(spark, path, **options)``: a table as a DataFrame, with the files that need
no ACID merge read by Spark's own vectorized ORC reader.

A Python data source cannot be fast for plain scans: in pyspark 4.x its rows cross a socket as
Arrow and the JVM rebuilds every row, with no column pruning (benchmarks/README.md). So
``spark.read.format("acidorc")`` stays the Python source, and this entry point - what
``AcidTable.toDF()`` and the SQL entry point's reads use - plans the snapshot here, on the
driver, then builds a DataFrame of two parts (:mod:`acid_source.scan.routes` decides which):

* files that need no merge: ``spark.read.orc`` of the files, their insert events of visible
  write ids, projected to the table's columns (partition values as literals, ``ROW__ID`` from
  the event columns). All six event columns stay in the read schema: ORC recognises an ACID
  file by them and misreads any other read schema, the one with partition columns added too.
  So a few partitions are a file scan each, with literals; more share one scan and take their
  values from a broadcast join on the file each row comes from;
* the buckets that do need the merge: acidorc's reader in a ``mapInArrow`` over the splits
  planned here (``acidorc_merge_read`` in EXPLAIN), with the parsed plan shipped to the tasks.

Same options, snapshot and read lease as ``spark.read.format("acidorc")``; ``nativeRead=false``
reads everything through acidorc's reader.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import threading
from collections import defaultdict
from functools import reduce
from typing import Any, Iterator
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from ..layout.table_dirs import INSERT_ONLY
from ..layout.writeids import ValidWriteIdList
from ..scan.routes import NativeFile, RoutedScan, exception_ranges, route_splits
from ..scan.splits import ROW_ID_COLUMN, BucketSplit, ReadContext
from ..specs import ReadSpec
from .datasource import SOURCE_NAME, take_read_lease
from .options import option_errors, read_spec, with_option_errors
from .session import check_session
from .tasks import one_row_per_partition

log = logging.getLogger("acidorc.read")

_EVENTS = StructType([
    StructField("operation", IntegerType()),
    StructField("originalTransaction", LongType()),
    StructField("bucket", IntegerType()),
    StructField("rowId", LongType()),
    StructField("currentTransaction", LongType()),
])


@with_option_errors
def read(spark: Any, path: str, schema: StructType | str | None = None, **options: Any) -> DataFrame:
    """The table at ``path`` as a DataFrame: what ``spark.read.format("acidorc").load(path)``
    returns, with the files that need no merge read by Spark's own ORC reader (see the module
    docstring). ``schema`` (a StructType or DDL string) and the options are those of
    ``spark.read.format("acidorc")``; the snapshot is taken now.

    >>> df = acid_source.read(spark, "/warehouse/sales")                           # doctest: +SKIP
    >>> df = acid_source.read(spark, "/warehouse/sales", versionAsOf=12, includeRowId=True)  # doctest: +SKIP
    """
    check_session(spark)
    given = {"path": str(path), **{k: _option_text(v) for k, v in options.items()}}
    spec = read_spec(given)
    if spec.read_change_feed or not spec.native_read:
        reader = spark.read.format(SOURCE_NAME).options(**given)
        return (reader.schema(schema) if schema is not None else reader).load()
    return read_table(spark, spec, schema)


def read_table(spark: Any, spec: ReadSpec, schema: StructType | str | None = None) -> DataFrame:
    """:func:`read` of a typed read (``AcidTable.toDF`` builds one: its values never become
    option strings): the snapshot resolved now, then each split routed."""
    from ..resolve import resolve_read, scan_for

    resolved = resolve_read(spec)
    if schema is None:
        output = resolved.schema(spec.include_row_id)
    else:
        struct = schema if isinstance(schema, StructType) else StructType.fromDDL(schema)
        output = to_arrow_schema(struct, timezone="UTC")  # type: ignore[arg-type]  # fromDDL of a struct
    scan = scan_for(spec, output, resolved)
    take_read_lease(spec, resolved)  # before the directories are listed
    ctx, splits = scan.plan(output, [])
    routed = route_splits(ctx, splits)
    log.info("reading %s: %s", resolved.location, routed.describe())
    return routed_frame(spark, ctx, routed, output, resolved.write_ids, spec.row_filter)


def routed_frame(spark: Any, ctx: ReadContext, routed: RoutedScan, schema: pa.Schema,
                 write_ids: ValidWriteIdList, row_filter: str | None) -> DataFrame:
    """The DataFrame of a routed scan: the native file scans and the merged buckets, unioned."""
    spark_schema = from_arrow_schema(schema, prefer_timestamp_ntz=True)
    frames = [_native_frame(spark, ctx, files, spark_schema, write_ids, row_filter)
              for files in _scans(routed.native)]
    if routed.merged:
        frames.append(_merged_frame(spark, ctx, routed.merged, spark_schema))
    if not frames:
        return spark.createDataFrame([], spark_schema)
    return reduce(DataFrame.unionByName, frames)


def _option_text(value: Any) -> str:
    """An option value as Spark's ``.option`` writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: up to this many partitions, each is its own file scan with its values as literals; more
#: share one scan and take their values from a join on the file each row comes from
UNION_PARTITIONS = 16


def _scans(files: tuple[NativeFile, ...]) -> list[list[NativeFile]]:
    """The file scans: files of the same visibility check, of one partition each while there
    are few (ORC cannot take partition columns: see :func:`_with_partition_values`)."""
    groups: dict[tuple, list[NativeFile]] = defaultdict(list)
    by_partition = len({f.partition_values for f in files}) <= UNION_PARTITIONS
    for f in files:
        groups[(f.partition_values if by_partition else (), f.check_valid)].append(f)
    return list(groups.values())


def _spark_path(ctx: ReadContext, path: str) -> str:
    return "file://" + path if ctx.storage.is_local else path


def _native_frame(spark: Any, ctx: ReadContext, files: list[NativeFile], schema: StructType,
                  write_ids: ValidWriteIdList, row_filter: str | None) -> DataFrame:
    data_names = [f.name for f in ctx.data_fields]
    data = StructType([schema[name] for name in data_names])
    acid = ctx.table_kind != INSERT_ONLY
    read_schema = StructType(_EVENTS.fields + [StructField("row", data)]) if acid else data
    df = _load(spark, read_schema, [_spark_path(ctx, f.path) for f in files])
    columns: list[Column] = []
    if acid:
        # every event column stays referenced, so that the read schema keeps all six
        df = df.where(_events_condition(files, write_ids, data_names[0] if data_names else None))
        columns = [F.col("row").getField(name).alias(name) for name in data_names]
    else:
        columns = [_column(name) for name in data_names]
    if ctx.include_row_id:
        columns.append(F.struct(F.col("originalTransaction").alias("writeId"), F.col("bucket").alias("bucketId"),
                                F.col("rowId").alias("rowId")).alias(ROW_ID_COLUMN))
    shaped = _with_partition_values(spark, df, columns, ctx, files, schema)
    if shaped is None:
        partitions: dict[tuple, list[NativeFile]] = defaultdict(list)
        for f in files:
            partitions[f.partition_values].append(f)
        return reduce(DataFrame.unionByName, [_native_frame(spark, ctx, group, schema, write_ids, row_filter)
                                              for group in partitions.values()])
    df = shaped.select([_column(f.name) for f in schema.fields])
    return df.where(row_filter) if row_filter is not None else df


def _column(name: str) -> Column:
    """A top-level column by its exact name (a dot in a name is not a field access)."""
    return F.col("`" + name.replace("`", "``") + "`")


def _load(spark: Any, read_schema: StructType, paths: list[str]) -> DataFrame:
    """Spark's ORC file scan of these files. Given more paths than
    ``spark.sql.sources.parallelPartitionDiscovery.threshold``, Spark would list them in a Spark
    job of one task per path; they are files this process just listed, so the driver looks
    them up itself (:func:`_driver_listing`)."""
    with _driver_listing(spark, len(paths)):
        return spark.read.schema(read_schema).format("orc").load(paths)


_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
_RAISED_LOCK = threading.Lock()
#: per session (its id) whose threshold native loads have raised: [the value before them, the
#: value they set, the loads under way]
_RAISED: dict[int, list] = {}


@contextlib.contextmanager
def _driver_listing(spark: Any, paths: int) -> Iterator[None]:
    """The session's listing threshold at least ``paths`` while the block runs. Spark reads the
    setting only from the session (no read option), so it is raised there; loads in other
    threads share one raise, and the last to finish puts back the value from before the first
    (unless the user set another meanwhile, which stays). Another thread's own file reads list
    on the driver meanwhile: the same files, without a Spark job."""
    with _RAISED_LOCK:
        state = _RAISED.get(id(spark))
        if state is None:
            before = spark.conf.get(_THRESHOLD)
            state = _RAISED[id(spark)] = [before, before, 0]
        state[2] += 1
        if paths > int(state[1]):
            state[1] = str(paths)
            spark.conf.set(_THRESHOLD, state[1])
    try:
        yield
    finally:
        with _RAISED_LOCK:
            state[2] -= 1
            if state[2] == 0:
                del _RAISED[id(spark)]
                if state[1] != state[0] and spark.conf.get(_THRESHOLD) == state[1]:
                    spark.conf.set(_THRESHOLD, state[0])


FILE_COLUMN = "__acidorc_file"


def _with_partition_values(spark: Any, df: DataFrame, columns: list[Column], ctx: ReadContext,
                           files: list[NativeFile], schema: StructType) -> DataFrame | None:
    """``df`` projected to ``columns`` plus the partition columns. Spark's ORC reader cannot
    add them itself: it appends partition columns to the read schema, which ORC then takes for
    a row schema of a non-ACID read. One partition: literals. Several: a broadcast join of each
    row's file (``_metadata.file_path``) with the files' partition values (None when the
    files' names as Spark reports them cannot be matched)."""
    names = list(ctx.partition_columns)
    values = {f.partition_values for f in files}
    if len(values) <= 1:
        (only,) = values or {()}
        literals = [F.lit(v).cast(schema[n].dataType).alias(n) for n, v in zip(names, only)]
        return df.select(columns + literals)
    keys = _file_keys(df, files)
    if keys is None:  # Spark names the files in a way this process cannot match: a scan each
        return None
    mapping = spark.createDataFrame(
        [(key, *f.partition_values) for key, f in keys.items()],
        StructType([StructField(FILE_COLUMN, StringType())] + [schema[n] for n in names]))
    rows = df.select(columns + [F.col("_metadata.file_path").alias(FILE_COLUMN)])
    return rows.join(F.broadcast(mapping), FILE_COLUMN).drop(FILE_COLUMN)


def _events_condition(files: list[NativeFile], write_ids: ValidWriteIdList, first: str | None) -> Column:
    """Insert events (the routes checked that the files hold nothing else), of the write ids the
    snapshot sees where a file may hold others."""
    # Every event column (and a field of the row: a count needs none) must stay referenced,
    # or Spark leaves it out of the read schema, which ORC then misreads. One COALESCE does
    # that and filters nothing of an insert event (its columns are never null), at a fraction
    # of the cost of a test per column.
    row = F.col("row").getField(first) if first is not None else F.col("row")
    condition = (F.col("operation") == 0) & F.coalesce(
        F.col("currentTransaction"), F.col("originalTransaction"), F.col("bucket").cast("bigint"),
        F.col("rowId"), F.when(row.isNotNull(), F.lit(0).cast("bigint"))).isNotNull()
    if files[0].check_valid:
        lo, hi = min(f.min_write_id for f in files), max(f.max_write_id for f in files)
        for a, b in exception_ranges(write_ids, lo, hi):
            condition &= ~F.col("currentTransaction").between(a, b)
    return condition


def _merged_frame(spark: Any, ctx: ReadContext, splits: tuple[BucketSplit, ...], schema: StructType) -> DataFrame:
    from ..scan.reader import read_split

    def acidorc_merge_read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with option_errors():  # a rowFilter that fails on the rows is the option's error
            for batch in batches:
                for blob in batch.column("task").to_pylist():
                    yield from read_split(pickle.loads(blob), ctx)

    payload = [(i, pickle.dumps(s)) for i, s in enumerate(splits)]
    return one_row_per_partition(spark, payload).mapInArrow(acidorc_merge_read, schema)


def _file_keys(df: DataFrame, files: list[NativeFile]) -> dict[str, NativeFile] | None:
    """Each file as Spark's ``_metadata.file_path`` names it (a URI: ``file:/t/p=a%253D1/...``
    for ``/t/p=a%3D1/...``), or None when they cannot all be matched. The names come from the
    scan's own file index; one row read back confirms that ``_metadata`` names them alike."""
    ours = {f.path: f for f in files}
    keys: dict[str, NativeFile] = {}
    for uri in df.inputFiles():
        key = "file:/" + uri[len("file:///"):] if uri.startswith("file:///") else uri
        if not key.startswith("file:/"):
            return None
        f = ours.get(unquote(key[len("file:"):]))
        if f is None:
            return None
        keys[key] = f
    if len(keys) != len(ours):
        return None
    probe = df.select(F.col("_metadata.file_path"), *[F.col(c) for c in df.columns]).limit(1).collect()
    return keys if probe and probe[0][0] in keys else None
