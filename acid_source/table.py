"""``AcidTable``: a Hive ACID table from plain Python (pyarrow), no Spark needed.

Spelled like pyspark and delta-spark (camelCase) because the same class gains the Spark-facing
``forPath(spark, path)`` / ``toDF()`` / ``merge(...)`` for DML. Reads take their snapshot from
the transaction store; writes run in one :class:`~acid_source.txn.Transaction` each.
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa

from .errors import InvalidArgumentError, InvalidOptionError, SchemaError, TableNotRegisteredError
from .metastore.tableinfo import TABLE_NAME, normalize_location
from .options import (
    DEFAULT_MAX_SPLIT_BYTES,
    WriteSpec,
    parse_partition_spec,
    parse_size,
    parse_timestamp,
    parse_version,
    spark_storage_options,
)
from .resolve import open_store, resolve_table
from .scan.planner import TableScan
from .scan.reader import read_split
from .scan.resolved import ResolvedTable, SnapshotSpec
from .scan.splits import ROW_ID_COLUMN
from .staged import StagedWrite
from .storage import option_pairs
from .writes import stage_write


class AcidTable:
    """A handle on one table: read it at any committed version, append to it, overwrite it.

    >>> t = AcidTable.load("/warehouse/sales")                         # doctest: +SKIP
    >>> t.scan(rowFilter="region = 'eu'", columns=["id", "amount"]).toArrow()  # doctest: +SKIP
    >>> t.append(pa.table({"id": [1], "amount": [9.5], "region": ["eu"]}))    # doctest: +SKIP
    >>> t.scan(versionAsOf=3).count()                                  # doctest: +SKIP
    """

    def __init__(self, location: str, *, metastoreUrl: str | None = None,
                 storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None,
                 spark: Any = None):
        from .dml.execution import conflict_mode

        self._location = location
        self._metastore_url = metastoreUrl
        self._storage_options = option_pairs(storageOptions, "storageOptions")
        self._conflict = conflict_mode(conflictDetection)
        self._spark = spark
        self._alias: str | None = None
        self._latest: ResolvedTable | None = None

    # --- opening ---------------------------------------------------------------------------
    @classmethod
    def load(cls, locationOrName: str, *, metastoreUrl: str | None = None,
             storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None) -> "AcidTable":
        """Open the table at a location (path or fsspec URL) or registered under a name
        (``db.table``). Tables written by other engines (not in the store) can be read.
        ``conflictDetection`` (``"object"``, Hive's rule, or ``"row"``) applies to this
        handle's UPDATE / DELETE / MERGE (README, "Concurrent writers")."""
        return cls._open(locationOrName, "locationOrName", metastoreUrl=metastoreUrl, storageOptions=storageOptions,
                         conflictDetection=conflictDetection)

    @classmethod
    def _open(cls, locationOrName: Any, argument: str, *, spark: Any = None, by_name: bool | None = None,
              **kwargs) -> "AcidTable":
        if not isinstance(locationOrName, str) or not locationOrName.strip():
            raise InvalidArgumentError(argument, f"expected a table location or name, got {locationOrName!r}")
        location = locationOrName.strip()
        if by_name or (by_name is None and TABLE_NAME.fullmatch(location)):
            if not TABLE_NAME.fullmatch(location):
                raise InvalidArgumentError(argument, f"{location!r} is not a table name (db.table or table)")
            store = open_store(kwargs.get("metastoreUrl"))
            if store is None:
                raise TableNotRegisteredError(name=location)
            location = store.get_table(name=location).location
        table = cls(location, spark=spark, **kwargs)
        table._refresh()
        return table

    @classmethod
    def forPath(cls, sparkSession: Any, path: str, *, metastoreUrl: str | None = None,
                storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None) -> "AcidTable":
        """The table at ``path``, bound to ``sparkSession``: ``toDF()``, ``delete``,
        ``update`` and ``merge`` run as Spark jobs (delta-spark's ``DeltaTable.forPath``).

        >>> t = AcidTable.forPath(spark, "/warehouse/sales")              # doctest: +SKIP
        >>> t.update("region = 'eu'", {"amount": "amount * 1.1"})         # doctest: +SKIP
        """
        _check_session(sparkSession)
        return cls._open(path, "path", spark=sparkSession, by_name=False, metastoreUrl=metastoreUrl,
                         storageOptions=storageOptions, conflictDetection=conflictDetection)

    @classmethod
    def forName(cls, sparkSession: Any, tableOrViewName: str, *, metastoreUrl: str | None = None,
                storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None) -> "AcidTable":
        """The table registered in the transaction store under ``tableOrViewName``
        (``db.table``), bound to ``sparkSession``."""
        _check_session(sparkSession)
        return cls._open(tableOrViewName, "tableOrViewName", spark=sparkSession, by_name=True,
                         metastoreUrl=metastoreUrl, storageOptions=storageOptions, conflictDetection=conflictDetection)

    @classmethod
    def isAcidTable(cls, sparkSession: Any, identifier: str, *, metastoreUrl: str | None = None) -> bool:
        """Whether ``identifier`` (a path or a registered name) is a Hive ACID table acidorc can
        read: registered in the store, or a directory with an ACID layout."""
        from .errors import AcidError

        try:
            table = cls._open(identifier, "identifier", metastoreUrl=metastoreUrl)
            resolved = table._latest
            assert resolved is not None
            if resolved.registered:
                return True
            from .layout.table_dirs import has_acid_layout

            return has_acid_layout(resolved.layout)
        except AcidError:
            return False

    def _resolve(self, snapshot: SnapshotSpec = SnapshotSpec()) -> ResolvedTable:
        return resolve_table(self._location, metastore_url=self._metastore_url,
                             storage_options=self._storage_options, snapshot=snapshot)

    def _refresh(self) -> ResolvedTable:
        self._latest = self._resolve()
        return self._latest

    # --- what it is ------------------------------------------------------------------------
    @property
    def location(self) -> str:
        return self._latest.location if self._latest is not None else normalize_location(self._location)

    @property
    def schema(self) -> pa.Schema:
        """The table's columns as pyarrow types (partition columns last)."""
        return self._refresh().schema()

    @property
    def partitionColumns(self) -> list[str]:
        return self._refresh().partition_columns

    @property
    def version(self) -> int | None:
        """The latest committed write id (None for a table the store does not know)."""
        return self._refresh().version

    # --- reading ---------------------------------------------------------------------------
    def scan(self, rowFilter: str | None = None, columns: Iterable[str] | None = None, *,
             versionAsOf: int | None = None, timestampAsOf: Any = None, includeRowId: bool = False,
             maxSplitBytes: int | str | None = None) -> "AcidScan":
        """A scan of the latest snapshot, or of the table as it was right after write id
        ``versionAsOf`` committed, or at ``timestampAsOf`` (datetime, ISO-8601 string — UTC
        unless it names a zone — or epoch seconds). The snapshot is taken now.
        ``includeRowId`` adds Hive's ``ROW__ID`` struct column (writeId, bucketId, rowId), as
        the read option does; ``maxSplitBytes`` (bytes, or a size such as ``"128m"``): a bucket
        larger than this is read in several splits, as the read option.

        >>> t.scan(includeRowId=True, columns=["id", "ROW__ID"]).toArrow()  # doctest: +SKIP
        """
        if not isinstance(includeRowId, bool):
            raise InvalidArgumentError("includeRowId", f"expected True or False, got {includeRowId!r}")
        split_bytes = DEFAULT_MAX_SPLIT_BYTES
        if maxSplitBytes is not None:
            if isinstance(maxSplitBytes, bool) or not isinstance(maxSplitBytes, (int, str)):
                raise InvalidArgumentError("maxSplitBytes", f"expected a number of bytes, got {maxSplitBytes!r}")
            try:
                split_bytes = parse_size("maxSplitBytes", str(maxSplitBytes))
            except InvalidOptionError as exc:
                raise InvalidArgumentError("maxSplitBytes", str(exc).removeprefix("option 'maxSplitBytes': ")) from None
        if versionAsOf is not None and timestampAsOf is not None:
            raise InvalidArgumentError("timestampAsOf", "give versionAsOf or timestampAsOf, not both")
        spec = SnapshotSpec(
            version_as_of=None if versionAsOf is None else _version(versionAsOf),
            timestamp_as_of=None if timestampAsOf is None else _timestamp(timestampAsOf),
        )
        return AcidScan(self._resolve(spec), rowFilter, columns, metastoreUrl=self._metastore_url,
                        includeRowId=includeRowId, maxSplitBytes=split_bytes)

    def toArrow(self) -> pa.Table:
        """The whole table at its latest snapshot."""
        return self.scan().toArrow()

    # --- writing ---------------------------------------------------------------------------
    def newWrite(self, mode: str = "append", partition: str | Mapping[str, Any] | None = None) -> "StagedWrite":
        """Stage an append (``mode="append"``) or an overwrite (``"overwrite"``: the whole
        table, or with ``partition`` - ``{"day": "2026-11-21"}`` or ``"day=2026-11-21"`` - that
        one partition) in a new transaction, for tasks that write Arrow batches anywhere - a
        streaming producer, another engine's tasks - and one commit. ``writer(taskId)`` gives a
        task's writer (``write(batch)``, ``close()`` -> result, ``abort()``; its batches have the
        staged write's ``schema``: the table's columns, without the partition columns when
        ``partition`` is given); ``commit(results)`` commits them all and returns the metrics
        ``append`` returns; ``abort()`` removes everything. As a context manager it aborts on
        an exception (or when the block ends without a commit).

        >>> with t.newWrite(mode="append") as staged:                     # doctest: +SKIP
        ...     writers = [staged.writer(i) for i in range(2)]
        ...     writers[0].write(batch_a); writers[1].write(batch_b)
        ...     metrics = staged.commit([w.close() for w in writers])
        """
        return self._stage(mode, partition, None)

    def append(self, data) -> dict:
        """Append rows (pyarrow Table, RecordBatch, RecordBatchReader or iterable of batches)
        in one transaction; returns its metrics. A shorthand for :meth:`newWrite` with one task."""
        return self._write(data, "append", None)

    def overwrite(self, data, partition: str | Mapping[str, Any] | None = None) -> dict:
        """Replace the whole table, or one partition (``{"day": "2026-11-21"}`` or
        ``"day=2026-11-21"``; the data then lacks the partition columns), in one transaction.
        A shorthand for :meth:`newWrite` with one task."""
        return self._write(data, "overwrite", partition)

    def _write(self, data, mode: str, partition) -> dict:
        schema, batches = _batches(data)
        with self._stage(mode, partition, schema) as staged:
            task = staged.writer(0)
            for batch in batches:
                task.write(batch)
            return staged.commit([task.close()])

    def _stage(self, mode: Any, partition: Any, data_schema: pa.Schema | None) -> "StagedWrite":
        if mode not in ("append", "overwrite"):
            raise InvalidArgumentError("mode", f"expected 'append' or 'overwrite', got {mode!r}")
        static = None if partition is None else _static_partition(partition)
        # the store alone says whether acidorc writes the table: no listing of storage (a write
        # does not read the table, and an overwrite replaces data objects storage lost)
        store = open_store(self._metastore_url)
        info = store.find_table(self.location) if store is not None else None
        if info is None:
            raise TableNotRegisteredError(
                f"{self.location} is not registered in the transaction store; acidorc writes only tables "
                "whose write ids it allocates (create one with acid_source.create_table)", location=self.location)
        spec = WriteSpec(path=info.location, metastore_url=self._metastore_url, partition=static,
                         storage_options=self._storage_options)
        return stage_write(spec, overwrite=mode == "overwrite", data_schema=data_schema, heartbeat="thread")

    # --- changing rows (UPDATE / DELETE / MERGE) ----------------------------------------------
    def alias(self, aliasName: str) -> "AcidTable":
        """This table under an alias, for conditions such as ``"t.id = s.id"``."""
        if not isinstance(aliasName, str) or not aliasName.strip():
            raise InvalidArgumentError("aliasName", f"expected a non-empty name, got {aliasName!r}")
        twin = copy.copy(self)
        twin._alias = aliasName.strip()
        return twin

    def _target(self):
        from .dml.execution import DmlTarget

        return DmlTarget(self.location, self._metastore_url, self._storage_options, self._conflict)

    def delete(self, condition: Any = None) -> dict:
        """Delete the rows where ``condition`` (SQL string, or a Column with Spark) is true; all
        rows without one. One transaction; returns its metrics (``numDeletedRows``, ...).

        >>> t.delete("day < '2024-01-01'")                                  # doctest: +SKIP
        """
        if self._spark is not None:
            from .spark.dml import spark_delete

            return spark_delete(self._spark, self._target(), condition, self._alias)
        from .dml.arrow_changes import arrow_changes
        from .dml.execution import run_dml

        return run_dml(self._target(), "delete",
                       lambda resolved, plan: arrow_changes(resolved, plan, condition=condition, assignments=None))

    def update(self, condition: Any = None, set: Mapping[str, Any] | None = None) -> dict:
        """Set columns of the rows where ``condition`` is true (every row without one):
        ``set`` maps column -> SQL expression (or Column) over the old row. Updating a partition
        or bucket column moves the row. Returns the metrics (``numUpdatedRows``, ...).

        >>> t.update("id = 7", {"amount": "amount + 1", "region": "'us'"})  # doctest: +SKIP
        """
        if set is None:
            raise InvalidArgumentError("set", "give the columns to update, e.g. set={'amount': 'amount + 1'}")
        if self._spark is not None:
            from .spark.dml import spark_update

            return spark_update(self._spark, self._target(), condition, set, self._alias)
        from .dml.arrow_changes import arrow_changes
        from .dml.execution import run_dml

        return run_dml(self._target(), "update",
                       lambda resolved, plan: arrow_changes(resolved, plan, condition=condition, assignments=set))

    def merge(self, source: Any, condition: Any) -> "AcidMergeBuilder":
        """Start a MERGE of the Spark DataFrame ``source`` into this table on ``condition``;
        add ``whenMatched...`` / ``whenNotMatched...`` clauses, then ``execute()``.

        >>> (t.alias("t").merge(updates.alias("s"), "t.id = s.id")        # doctest: +SKIP
        ...   .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        """
        self._require_spark("merge")
        return AcidMergeBuilder(self, source, condition)

    # --- compaction --------------------------------------------------------------------------
    def compact(self, kind: str, partitionFilter: str | None = None) -> dict:
        """Compact the table - ``"minor"`` (deltas into one delta and one delete delta per data
        object) or ``"major"`` (everything into one base per data object, deleted rows gone) -
        or only the partitions matching ``partitionFilter``, in one transaction that readers
        see atomically; row ids are kept. Runs as a Spark job for a table opened with
        ``forPath`` / ``forName``, else in this process. Returns its metrics.

        >>> t.compact("major", partitionFilter="day < '2026-01-01'")  # doctest: +SKIP
        """
        from .maintenance.compactor import compact_table

        if partitionFilter is not None and not isinstance(partitionFilter, str):
            raise InvalidArgumentError("partitionFilter", f"expected a SQL condition string, got {partitionFilter!r}")
        run_tasks = None
        if self._spark is not None:
            from .spark.compaction import spark_task_runner

            run_tasks = spark_task_runner(self._spark)
        return compact_table(self.location, kind, partition_filter=partitionFilter,
                             metastore_url=self._metastore_url, storage_options=self._storage_options,
                             run_tasks=run_tasks)

    def optimize(self) -> "AcidOptimizeBuilder":
        """Delta-spark's spelling of compaction: ``optimize().where(...).executeCompaction()``."""
        return AcidOptimizeBuilder(self)

    def toDF(self) -> Any:
        """The table's latest snapshot as a Spark DataFrame (a new one each call: a DataFrame
        keeps the snapshot it was planned with)."""
        self._require_spark("toDF")
        from .metastore.engine import url_for_workers

        reader = self._spark.read.format("acidorc")
        url = url_for_workers(self._metastore_url)
        if url is not None:
            reader = reader.option("metastoreUrl", url)
        for key, value in spark_storage_options(self._storage_options).items():
            reader = reader.option(key, value)
        df = reader.load(self.location)
        return df.alias(self._alias) if self._alias else df

    def detail(self) -> Any:
        """One row describing the table (a DataFrame with Spark, else a dict): location, name,
        format, partition and bucket columns, table type, files, size, version."""
        from .layout.table_dirs import acid_state_for, data_files

        resolved = self._refresh()
        data = []  # the files the latest snapshot reads
        for part in resolved.layout.partitions:
            state = acid_state_for(resolved.layout, part, resolved.write_ids, resolved.txns)
            dirs = ([state.base] if state.base is not None else []) + list(state.deltas)
            data += [f for d in dirs for f in data_files(resolved.storage, d.path)]
            data += list(state.originals)
        info = resolved.info
        row = {
            "format": "acidorc",
            "location": resolved.location,
            "name": info.name if info is not None else None,
            "tableType": "insert_only" if resolved.kind == "insert_only" else "full",
            "partitionColumns": list(resolved.partition_columns),
            "bucketColumns": list(info.bucket_columns) if info is not None else [],
            "numBuckets": int(info.num_buckets) if info is not None else -1,
            "numFiles": len(data),
            "sizeInBytes": sum(f.size or 0 for f in data),
            "version": resolved.version,
        }
        if self._spark is None:
            return row
        return self._spark.createDataFrame([row], _DETAIL_SCHEMA)

    def _require_spark(self, method: str) -> None:
        if self._spark is None:
            from .errors import UnsupportedOperationError

            raise UnsupportedOperationError(method, "needs a SparkSession: open the table with "
                                            "AcidTable.forPath(spark, path) or AcidTable.forName(spark, name)")

    # --- cleaning ----------------------------------------------------------------------------
    def vacuum(self, dryRun: bool = False, retentionSeconds: float | None = None) -> dict:
        """Remove the directories no reader can still need - deltas covered by a compaction,
        superseded bases, what aborted writes left - keeping everything a live read lease, an
        open transaction or a snapshot taken in the last ``retentionSeconds`` (default
        ``$ACIDORC_VACUUM_RETENTION_SECONDS`` or 300) reads. ``dryRun`` only reports. Returns
        what it removed (or would): ``removedPaths``, ``removedBytes``, ``numKeptForLeases``...

        >>> t.vacuum(dryRun=True)["removedPaths"]                          # doctest: +SKIP
        """
        from .maintenance.cleaner import vacuum

        if not isinstance(dryRun, bool):
            raise InvalidArgumentError("dryRun", f"expected True or False, got {dryRun!r}")
        return vacuum(self.location, dry_run=dryRun, metastore_url=self._metastore_url,
                      storage_options=self._storage_options, retention_seconds=retentionSeconds)

    # --- history ---------------------------------------------------------------------------
    def history(self, limit: int | None = None) -> Any:
        """Committed writes, newest first: ``version`` (write id), ``timestamp`` (UTC),
        ``operation``, ``txnId``, ``partitions``, ``user``, ``description``. A list of dicts, or
        a DataFrame for a table opened with ``forPath`` / ``forName``."""
        rows = self._history(limit)
        if self._spark is None:
            return rows
        return self._spark.createDataFrame(rows, _HISTORY_SCHEMA)

    def _history(self, limit: int | None) -> list[dict]:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgumentError("limit", f"expected None or an integer >= 0, got {limit!r}")
        # the store alone keeps the history: no listing of storage (cheap on object stores, and
        # the history of a table whose storage lost data can still be read)
        store = open_store(self._metastore_url)
        info = store.find_table(self.location) if store is not None else None
        if store is None or info is None:
            raise TableNotRegisteredError(
                f"{self.location} is not registered in the transaction store, which keeps the history",
                location=self.location)
        return [
            {
                "version": h["write_id"],
                "timestamp": dt.datetime.fromtimestamp(h["commit_time"], dt.timezone.utc),
                "operation": h["operation"],
                "txnId": h["txn_id"],
                "partitions": h["touched"],
                "user": h["user"],
                "description": h["description"],
            }
            for h in store.history(info.table_id, limit=limit)
        ]

    def __repr__(self) -> str:
        return f"AcidTable({self.location!r})"


_HISTORY_SCHEMA = ("version BIGINT, timestamp TIMESTAMP, operation STRING, txnId BIGINT, partitions ARRAY<STRING>, "
                   "user STRING, description STRING")
_DETAIL_SCHEMA = ("format STRING, location STRING, name STRING, tableType STRING, partitionColumns ARRAY<STRING>, "
                  "bucketColumns ARRAY<STRING>, numBuckets INT, numFiles BIGINT, sizeInBytes BIGINT, version BIGINT")


def _check_session(spark: Any) -> None:
    if not (hasattr(spark, "read") and hasattr(spark, "createDataFrame")):
        raise InvalidArgumentError("sparkSession", f"expected a SparkSession, got {type(spark).__name__}")


class AcidMergeBuilder:
    """The clauses of one MERGE, evaluated in the order they were added (the first that
    matches a row acts on it, as in Spark SQL); ``execute()`` runs it (delta-spark's
    ``DeltaMergeBuilder``). Conditions and values are SQL strings or Columns."""

    def __init__(self, table: AcidTable, source: Any, condition: Any):
        from .spark.dml import to_column

        if condition is None:
            raise InvalidArgumentError("condition", "a MERGE needs a join condition, e.g. 't.id = s.id'")
        to_column(condition, "condition")  # parse errors now, not at execute()
        self._table = table
        self._source = source
        self._condition = condition
        self._clauses: list = []

    def _add(self, when: str, action: str, condition: Any, values: Any, argument: str) -> "AcidMergeBuilder":
        from .spark.dml import MergeClause, to_column

        if condition is not None:
            to_column(condition, "condition")
        if values is not None and (not isinstance(values, Mapping) or not values):
            raise InvalidArgumentError(argument, f"expected a non-empty dict of column -> expression, got {values!r}")
        self._clauses.append(MergeClause(when, action, condition, values))
        return self

    def whenMatchedUpdate(self, condition: Any = None, set: Mapping[str, Any] | None = None) -> "AcidMergeBuilder":
        if set is None:
            raise InvalidArgumentError("set", "give the columns to update (or use whenMatchedUpdateAll)")
        return self._add("matched", "update", condition, set, "set")

    def whenMatchedUpdateAll(self, condition: Any = None) -> "AcidMergeBuilder":
        return self._add("matched", "update", condition, None, "set")

    def whenMatchedDelete(self, condition: Any = None) -> "AcidMergeBuilder":
        return self._add("matched", "delete", condition, None, "condition")

    def whenNotMatchedInsert(self, condition: Any = None,
                             values: Mapping[str, Any] | None = None) -> "AcidMergeBuilder":
        if values is None:
            raise InvalidArgumentError("values", "give the values to insert (or use whenNotMatchedInsertAll)")
        return self._add("not_matched", "insert", condition, values, "values")

    def whenNotMatchedInsertAll(self, condition: Any = None) -> "AcidMergeBuilder":
        return self._add("not_matched", "insert", condition, None, "values")

    def whenNotMatchedBySourceUpdate(self, condition: Any = None,
                                     set: Mapping[str, Any] | None = None) -> "AcidMergeBuilder":
        if set is None:
            raise InvalidArgumentError("set", "give the columns to update")
        return self._add("not_matched_by_source", "update", condition, set, "set")

    def whenNotMatchedBySourceDelete(self, condition: Any = None) -> "AcidMergeBuilder":
        return self._add("not_matched_by_source", "delete", condition, None, "condition")

    def execute(self) -> dict:
        """Run the MERGE in one transaction; returns its metrics (``numUpdatedRows``,
        ``numInsertedRows``, ``numDeletedRows``, ...)."""
        from .spark.dml import spark_merge

        t = self._table
        return spark_merge(t._spark, t._target(), self._source, self._condition, list(self._clauses), t._alias)


class AcidOptimizeBuilder:
    """Which partitions to compact (``where``), then ``executeCompaction()`` (delta-spark's
    ``DeltaOptimizeBuilder``; here a major compaction unless ``kind="minor"``)."""

    def __init__(self, table: AcidTable):
        self._table = table
        self._filters: list[str] = []

    def where(self, partitionFilter: str) -> "AcidOptimizeBuilder":
        """Only partitions matching this SQL condition on partition columns (several calls:
        all must match)."""
        if not isinstance(partitionFilter, str) or not partitionFilter.strip():
            raise InvalidArgumentError("partitionFilter", f"expected a SQL condition string, got {partitionFilter!r}")
        self._filters.append(partitionFilter.strip())
        return self

    def executeCompaction(self, kind: str = "major") -> dict:
        condition = " AND ".join(f"({f})" for f in self._filters) if self._filters else None
        return self._table.compact(kind, partitionFilter=condition)


class AcidScan:
    """One snapshot of a table, optionally filtered and projected. Iterating it reads the
    files; memory stays bounded by a stripe (``toBatches``). While an iteration runs it holds
    a read lease in the transaction store, so the cleaner keeps the files of its snapshot."""

    def __init__(self, table: ResolvedTable, rowFilter: str | None, columns: Iterable[str] | None, *,
                 metastoreUrl: str | None = None, includeRowId: bool = False,
                 maxSplitBytes: int = DEFAULT_MAX_SPLIT_BYTES):
        self._table = table
        self._metastore_url = metastoreUrl
        self._max_split_bytes = maxSplitBytes
        full = table.schema(includeRowId)
        self._condition = None
        if rowFilter is not None:
            from .expressions import parse_condition

            self._condition = parse_condition(rowFilter, full, argument="rowFilter")
        if columns is None:
            self._columns = list(full.names)
        else:
            if isinstance(columns, str):
                raise InvalidArgumentError("columns", "expected a list of column names, not one string")
            by_lower = {n.lower(): n for n in full.names}
            missing = [c for c in columns if str(c).lower() not in by_lower]
            if missing:
                raise SchemaError(f"{table.location}: no column(s) {missing} (columns: {full.names})")
            self._columns = [by_lower[str(c).lower()] for c in columns]
        needed = set(self._columns) | (set(self._condition.columns) if self._condition else set())
        needed |= set(table.partition_columns)
        self._read_schema = pa.schema([f for f in full if f.name in needed])
        self.schema = pa.schema([full.field(c) for c in self._columns])

    @property
    def version(self) -> int | None:
        return self._table.version

    def toBatches(self, *, leaseSeconds: float | None = None) -> Iterator[pa.RecordBatch]:
        """The rows, batch by batch. From the first batch asked for until the iterator is
        exhausted or closed it holds a lease on its snapshot (registered tables), renewed while
        batches are taken: the cleaner keeps the files it reads. ``leaseSeconds`` (default
        ``$ACIDORC_READ_LEASE_SECONDS`` or 3600; 0: no lease): how long the lease outlives the
        last batch taken, e.g. when the consumer stops without closing the iterator."""
        lease = self._lease(leaseSeconds)
        try:
            # lists the directories (leased); the reader applies the filter, partitions it
            # rules out are not read at all
            scan = TableScan(self._table, row_filter=None if self._condition is None else self._condition.text,
                             include_row_id=ROW_ID_COLUMN in self._read_schema.names,
                             max_split_bytes=self._max_split_bytes)
            ctx, splits = scan.plan(self._read_schema)
            for split in splits:
                for batch in read_split(split, ctx):
                    if lease is not None:
                        lease.keep_alive()
                    yield batch.select(self._columns)
        except InvalidOptionError as exc:
            if exc.option != "rowFilter":
                raise
            # here rowFilter is an argument
            raise InvalidArgumentError("rowFilter", str(exc).removeprefix("option 'rowFilter': ")) from exc
        finally:
            if lease is not None:
                lease.release()

    def _lease(self, seconds: float | None):
        """The read lease of one iteration (acquired now), or None: a table the store does not
        know (no cleaner runs on it), or ``seconds`` 0."""
        from .options import default_read_lease_seconds

        if seconds is None:
            ttl = default_read_lease_seconds()
        elif isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < float("inf"):
            raise InvalidArgumentError("leaseSeconds", f"expected a number of seconds >= 0, got {seconds!r}")
        else:
            ttl = float(seconds)
        if ttl == 0 or not self._table.registered:
            return None
        from .metastore.leases import ReadLease, default_holder

        store = open_store(self._metastore_url)
        assert store is not None  # the table is registered, so the store exists
        holder = default_holder(f"AcidScan of {self._table.location}")
        return ReadLease(store, self._table.info.table_id, (self._table.write_ids, self._table.txns), ttl,
                         holder).acquire()

    def toArrow(self) -> pa.Table:
        return pa.Table.from_batches(list(self.toBatches()), schema=self.schema)

    def count(self) -> int:
        return sum(b.num_rows for b in self.toBatches())


def _version(value) -> int:
    if isinstance(value, bool):
        raise InvalidArgumentError("versionAsOf", f"expected a write id, got {value!r}")
    return parse_version("versionAsOf", value)


def _timestamp(value) -> float:
    return parse_timestamp("timestampAsOf", value)


def _batches(data) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping)):
        it = iter(data)
        first = next(it, None)
        if first is None:
            raise InvalidArgumentError("data", "no record batches given (the schema cannot be known)")
        if not isinstance(first, pa.RecordBatch):
            raise InvalidArgumentError("data", f"expected pyarrow RecordBatches, got {type(first).__name__}")

        def chain():
            yield first
            for b in it:
                if not isinstance(b, pa.RecordBatch) or b.schema != first.schema:
                    raise InvalidArgumentError("data", "every record batch must have the first batch's schema")
                yield b

        return first.schema, chain()
    raise InvalidArgumentError("data", f"expected a pyarrow Table, RecordBatch, RecordBatchReader or batches, "
                                       f"got {type(data).__name__}")


def _static_partition(partition) -> tuple[tuple[str, str | None], ...]:
    """The ``partition`` argument as typed (column, value text) pairs: a dict's values keep
    exactly their text (None: the NULL partition); a string is a Hive partition spec."""
    if isinstance(partition, str):
        return parse_partition_spec(partition)
    if isinstance(partition, Mapping):
        from .layout.partitions import DEFAULT_PARTITION_NAME
        from .write.rows import format_partition_value

        pairs: list[tuple[str, str | None]] = []
        for column, value in partition.items():
            if value is None:
                pairs.append((str(column), None))
                continue
            if str(value) == DEFAULT_PARTITION_NAME:
                raise SchemaError(f"partition value {DEFAULT_PARTITION_NAME!r} of {column!r} would read back as "
                                  "NULL; pass None for the NULL partition", column=str(column))
            pairs.append((str(column), format_partition_value(value) or ""))
        return tuple(pairs)
    raise InvalidArgumentError("partition", f"expected 'col=value/...' or a dict, got {type(partition).__name__}")
