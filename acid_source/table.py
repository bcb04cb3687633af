"""``AcidTable``: a Hive ACID table from plain Python (pyarrow), no Spark needed.

Spelled like pyspark and delta-spark (camelCase). ``AcidTable.forPath(spark, path)`` /
``forName(spark, name)`` return the Spark-bound table (:mod:`acid_source.spark.table`, loaded
by name: the core never imports a ``spark/`` module), which wraps this one and runs DML,
compaction and ``toDF`` as Spark jobs. Reads take their snapshot from the transaction store;
writes run in one :class:`~acid_source.txn.Transaction` each.

A handle keeps what it learnt when it was loaded (``schema``, ``partitionColumns``,
``version``) and what its own writes committed, and asks again only on :meth:`refresh`, as
pyiceberg's and deltalake's tables do: reading an attribute never lists storage.
"""

from __future__ import annotations

import copy
import datetime as dt
import importlib
import os
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import pyarrow as pa

from .deprecation import keyword_only
from .errors import InvalidArgumentError, UnsupportedOperationError
from .metastore.tableinfo import normalize_location
from .resolve import registered_table, resolve_table
from .scan.resolved import ResolvedTable, SnapshotSpec
from .scans import AcidScan, scan_arguments
from .staged import StagedWrite
from .storage import option_pairs
from .table_ref import TableRef, conflict_mode, location_of
from .writes import arrow_batches, stage_for, static_partition

if TYPE_CHECKING:
    from .streaming.changes import AcidChanges
    from .streaming.connection import StreamingConnection


class AcidTable:
    """A handle on one table: read it at any committed version, append to it, overwrite it,
    change its rows, compact and vacuum it.

    >>> t = AcidTable.load("/warehouse/sales")                         # doctest: +SKIP
    >>> t.scan(rowFilter="region = 'eu'", columns=["id", "amount"]).toArrow()  # doctest: +SKIP
    >>> t.append(pa.table({"id": [1], "amount": [9.5], "region": ["eu"]}))    # doctest: +SKIP
    >>> t.scan(versionAsOf=3).count()                                  # doctest: +SKIP
    """

    def __init__(self, location: str | os.PathLike, *, metastoreUrl: str | None = None,
                 storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None):
        location = location_of(location, "location", metastore_url=metastoreUrl, by_name=False)
        self._ref = TableRef(location, metastoreUrl, option_pairs(storageOptions, "storageOptions"),
                             conflict_mode(conflictDetection))
        self._alias: str | None = None
        self._latest: ResolvedTable | None = None
        self._version: int | None = None

    # --- opening ---------------------------------------------------------------------------
    @classmethod
    def load(cls, locationOrName: str | os.PathLike, *, metastoreUrl: str | None = None,
             storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None) -> "AcidTable":
        """Open the table at a location (path or fsspec URL) or registered under a name
        (``db.table``). Tables written by other engines (not in the store) can be read.
        ``conflictDetection`` (``"object"``, Hive's rule, or ``"row"``) applies to this
        handle's UPDATE / DELETE / MERGE (README, "Concurrent writers").

        >>> AcidTable.load("sales.orders", metastoreUrl="thrift://metastore:9083")  # doctest: +SKIP
        """
        location = location_of(locationOrName, "locationOrName", metastore_url=metastoreUrl, by_name=None)
        return cls(location, metastoreUrl=metastoreUrl, storageOptions=storageOptions,
                   conflictDetection=conflictDetection).refresh()

    @classmethod
    def create(cls, location: str | os.PathLike, schema: Any, *, name: str | None = None,
               partitionColumns: Iterable[str] = (), bucketColumns: Iterable[str] = (), numBuckets: int = 0,
               insertOnly: bool = False, compression: str = "zlib", ifNotExists: bool = False, adopt: bool = False,
               metastoreUrl: str | None = None, storageOptions: Mapping[str, Any] | None = None,
               conflictDetection: str | None = None) -> "AcidTable":
        """Create an empty ACID table at ``location``, register it in the transaction store and
        return it (the arguments are :func:`acid_source.create_table`'s).

        >>> t = AcidTable.create("/warehouse/sales", "id bigint, amount decimal(10,2), day date",
        ...                      partitionColumns=["day"], bucketColumns=["id"], numBuckets=4)  # doctest: +SKIP
        """
        from .tables import create_table

        conflict = conflict_mode(conflictDetection)  # a bad argument creates nothing
        info = create_table(location, schema, name=name, partitionColumns=partitionColumns,
                            bucketColumns=bucketColumns, numBuckets=numBuckets, insertOnly=insertOnly,
                            compression=compression, ifNotExists=ifNotExists, adopt=adopt,
                            metastoreUrl=metastoreUrl, storageOptions=storageOptions)
        return cls(info.location, metastoreUrl=metastoreUrl, storageOptions=storageOptions,
                   conflictDetection=conflict).refresh()

    @classmethod
    def forPath(cls, sparkSession: Any, path: str, *, metastoreUrl: str | None = None,
                storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None) -> Any:
        """The table at ``path``, bound to ``sparkSession``: ``toDF()``, ``delete``,
        ``update``, ``merge`` and ``compact`` run as Spark jobs (delta-spark's
        ``DeltaTable.forPath``; see :class:`acid_source.spark.table.SparkAcidTable`).

        >>> t = AcidTable.forPath(spark, "/warehouse/sales")              # doctest: +SKIP
        >>> t.update("region = 'eu'", {"amount": "amount * 1.1"})         # doctest: +SKIP
        """
        return _spark_table().forPath(sparkSession, path, metastoreUrl=metastoreUrl, storageOptions=storageOptions,
                                      conflictDetection=conflictDetection)

    @classmethod
    def forName(cls, sparkSession: Any, tableOrViewName: str, *, metastoreUrl: str | None = None,
                storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None) -> Any:
        """The table registered in the transaction store under ``tableOrViewName``
        (``db.table``), bound to ``sparkSession``."""
        return _spark_table().forName(sparkSession, tableOrViewName, metastoreUrl=metastoreUrl,
                                      storageOptions=storageOptions, conflictDetection=conflictDetection)

    @classmethod
    def isAcidTable(cls, sparkSession: Any, identifier: str, *, metastoreUrl: str | None = None) -> bool:
        """Whether ``identifier`` (a path or a registered name) is a Hive ACID table acidorc can
        read: registered in the store, or a directory with an ACID layout."""
        return _spark_table().isAcidTable(sparkSession, identifier, metastoreUrl=metastoreUrl)

    def refresh(self) -> "AcidTable":
        """Ask the store and storage again: ``schema``, ``partitionColumns`` and ``version``
        show the table as it is now (they keep what the last load or refresh saw, plus this
        handle's own commits). Returns the handle."""
        self._latest = self._resolve()
        self._version = self._latest.version
        return self

    def _resolve(self, snapshot: SnapshotSpec = SnapshotSpec()) -> ResolvedTable:
        ref = self._ref
        return resolve_table(ref.location, metastore_url=ref.metastore_url, storage_options=ref.storage_options,
                             snapshot=snapshot)

    def _state(self) -> ResolvedTable:
        """The last resolution (the first one on the first use of a handle built directly)."""
        if self._latest is None:
            self.refresh()
        assert self._latest is not None
        return self._latest

    def _committed(self, metrics: Mapping[str, Any]) -> None:
        """A commit of this handle: the version it knows moves to the write id committed."""
        write_id = metrics.get("writeId")
        if write_id is not None and self._latest is not None and self._latest.registered:
            self._version = max(self._version or 0, int(write_id))

    # --- what it is ------------------------------------------------------------------------
    @property
    def ref(self) -> TableRef:
        """The location, store URL, storage options and conflict rule this handle uses (for
        engines built on it, such as the Spark-bound table)."""
        return self._ref

    @property
    def location(self) -> str:
        return self._latest.location if self._latest is not None else normalize_location(self._ref.location)

    @property
    def schema(self) -> pa.Schema:
        """The table's columns as pyarrow types (partition columns last)."""
        return self._state().schema()

    @property
    def partitionColumns(self) -> list[str]:
        return list(self._state().partition_columns)

    @property
    def version(self) -> int | None:
        """The latest committed write id (None for a table the store does not know), as of the
        last load or :meth:`refresh` and this handle's own commits."""
        self._state()
        return self._version

    # --- reading ---------------------------------------------------------------------------
    def scan(self, rowFilter: str | None = None, columns: Iterable[str] | None = None, *,
             versionAsOf: int | None = None, timestampAsOf: Any = None, includeRowId: bool = False,
             maxSplitBytes: int | str | None = None, leaseSeconds: float | None = None) -> AcidScan:
        """A scan of the latest snapshot, or of the table as it was right after write id
        ``versionAsOf`` committed, or at ``timestampAsOf`` (datetime, ISO-8601 string — UTC
        unless it names a zone — or epoch seconds). The snapshot is taken now, and a read lease
        on it held until the scan is closed or collected (``leaseSeconds``: how long it outlives
        the scan's last read, default ``$ACIDORC_READ_LEASE_SECONDS`` or 3600; 0: no lease).
        ``includeRowId`` adds Hive's ``ROW__ID`` struct column (writeId, bucketId, rowId), as
        the read option does; ``maxSplitBytes`` (bytes, or a size such as ``"128m"``): a bucket
        larger than this is read in several splits, as the read option.

        >>> t.scan(includeRowId=True, columns=["id", "ROW__ID"]).toArrow()  # doctest: +SKIP
        """
        snapshot, split_bytes = scan_arguments(versionAsOf, timestampAsOf, includeRowId, maxSplitBytes)
        return AcidScan(self._resolve(snapshot), rowFilter, columns, metastoreUrl=self._ref.metastore_url,
                        includeRowId=includeRowId, maxSplitBytes=split_bytes, leaseSeconds=leaseSeconds)

    def toArrow(self) -> pa.Table:
        """The whole table at its latest snapshot."""
        with self.scan() as scan:
            return scan.toArrow()

    def changes(self, startingVersion: int | None = None, endingVersion: int | None = None, *,
                startingTimestamp: Any = None, endingTimestamp: Any = None) -> "AcidChanges":
        """The change feed (Delta Lake's change data feed): the rows the committed write ids
        ``startingVersion..endingVersion`` (both inclusive; the end defaults to the latest)
        inserted and deleted, or those committed between ``startingTimestamp`` and
        ``endingTimestamp`` (datetime, ISO-8601 string - UTC unless it names a zone - or epoch
        seconds). The table's columns plus ``_change_type`` (``insert`` / ``delete``),
        ``_commit_version`` (write id) and ``_commit_timestamp``. Read from the write ids' own
        delta files; an UPDATE is a delete and an insert of the same version. Changes whose
        deltas compaction and the cleaner removed are a HistoryUnavailableError.

        >>> t.changes(startingVersion=3, endingVersion=5).toArrow()       # doctest: +SKIP
        """
        from .streaming.changes import table_changes

        return table_changes(self.location, startingVersion=startingVersion, endingVersion=endingVersion,
                             startingTimestamp=startingTimestamp, endingTimestamp=endingTimestamp,
                             metastore_url=self._ref.metastore_url, storage_options=self._ref.storage_options)

    # --- writing ---------------------------------------------------------------------------
    @keyword_only
    def newWrite(self, mode: str = "append", *,
                 partition: str | Mapping[str, Any] | None = None) -> StagedWrite:
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

    def append(self, data: Any) -> dict:
        """Append rows in one transaction; returns its metrics (``writeId``, ``numOutputRows``,
        ``numFiles``, ``partitions``, ...). ``data``: a pyarrow Table, RecordBatch,
        RecordBatchReader, an iterable of batches, or anything that is an Arrow stream
        (``__arrow_c_stream__``: a polars DataFrame, a DuckDB relation, another table's
        :meth:`scan`). A shorthand for :meth:`newWrite` with one task.

        >>> t.append(polars.DataFrame({"id": [1], "amount": [9.5], "region": ["eu"]}))  # doctest: +SKIP
        """
        return self._write(data, "append", None)

    @keyword_only
    def overwrite(self, data: Any, *, partition: str | Mapping[str, Any] | None = None) -> dict:
        """Replace the whole table, or one partition (``{"day": "2026-11-21"}`` or
        ``"day=2026-11-21"``; the data then lacks the partition columns), in one transaction.
        ``data`` as :meth:`append`. A shorthand for :meth:`newWrite` with one task."""
        return self._write(data, "overwrite", partition)

    @keyword_only
    def streamingConnection(self, transactionsPerBatch: int = 10, *,
                            partition: str | Mapping[str, Any] | None = None) -> "StreamingConnection":
        """Hive's streaming ingest for Python producers (``HiveStreamingConnection``'s model):
        transactions of a batch share one ``delta_x_y`` directory whose bucket files grow, and
        each commit is an intermediate ORC footer plus a ``_flush_length`` entry, so a reader
        sees every committed transaction and nothing else, even while the batch is open.
        ``partition`` names one static partition; without it rows carry their partition columns.

        >>> with table.streamingConnection(transactionsPerBatch=10) as conn:   # doctest: +SKIP
        ...     conn.beginTransaction()
        ...     conn.write(batch)
        ...     conn.commitTransaction()
        """
        from .streaming.connection import StreamingConnection

        return StreamingConnection(self.location, metastoreUrl=self._ref.metastore_url,
                                   storageOptions=self._ref.storage_options,
                                   transactionsPerBatch=transactionsPerBatch,
                                   partition=None if partition is None else static_partition(partition))

    def _write(self, data: Any, mode: str, partition: Any) -> dict:
        schema, batches = arrow_batches(data)
        with self._stage(mode, partition, schema) as staged:
            task = staged.writer(0)
            for batch in batches:
                task.write(batch)
            return staged.commit([task.close()])

    def _stage(self, mode: Any, partition: Any, data_schema: pa.Schema | None) -> StagedWrite:
        staged = stage_for(self._ref, mode, partition, data_schema)
        staged.on_commit(self._committed)
        return staged

    # --- changing rows (UPDATE / DELETE / MERGE) ----------------------------------------------
    def alias(self, aliasName: str) -> "AcidTable":
        """This table under an alias, for conditions such as ``"t.id = s.id"``."""
        twin = copy.copy(self)
        twin._alias = alias_name(aliasName)
        return twin

    def delete(self, condition: str | None = None) -> dict:
        """Delete the rows where the SQL ``condition`` is true; all rows without one. One
        transaction; returns its metrics (``numDeletedRows``, ...).

        >>> t.delete("day < '2024-01-01'")                                  # doctest: +SKIP
        """
        from .dml.arrow_changes import arrow_changes
        from .dml.execution import run_dml

        metrics = run_dml(self._ref, "delete",
                          lambda resolved, plan: arrow_changes(resolved, plan, condition=condition, assignments=None))
        self._committed(metrics)
        return metrics

    def update(self, condition: str | None = None, set: Mapping[str, str] | None = None) -> dict:
        """Set columns of the rows where ``condition`` is true (every row without one):
        ``set`` maps column -> SQL expression over the old row. Updating a partition
        or bucket column moves the row. Returns the metrics (``numUpdatedRows``, ...).

        >>> t.update("id = 7", {"amount": "amount + 1", "region": "'us'"})  # doctest: +SKIP
        """
        if set is None:
            raise InvalidArgumentError("set", "give the columns to update, e.g. set={'amount': 'amount + 1'}")
        from .dml.arrow_changes import arrow_changes
        from .dml.execution import run_dml

        metrics = run_dml(self._ref, "update",
                          lambda resolved, plan: arrow_changes(resolved, plan, condition=condition, assignments=set))
        self._committed(metrics)
        return metrics

    def merge(self, source: Any, condition: Any) -> Any:
        """MERGE joins a Spark DataFrame: on a table opened with ``forPath`` / ``forName``."""
        raise UnsupportedOperationError("merge", _NEEDS_SPARK)

    def toDF(self) -> Any:
        """A Spark DataFrame of the table: on a table opened with ``forPath`` / ``forName``."""
        raise UnsupportedOperationError("toDF", _NEEDS_SPARK)

    # --- compaction and cleaning -------------------------------------------------------------
    @keyword_only
    def compact(self, kind: str, *, partitionFilter: str | None = None) -> dict:
        """Compact the table - ``"minor"`` (deltas into one delta and one delete delta per data
        object) or ``"major"`` (everything into one base per data object, deleted rows gone) -
        or only the partitions matching ``partitionFilter``, in one transaction that readers
        see atomically; row ids are kept. Runs in this process (on the executors for a table
        opened with ``forPath`` / ``forName``). Returns its metrics.

        >>> t.compact("major", partitionFilter="day < '2026-01-01'")  # doctest: +SKIP
        """
        return compact(self._ref, kind, partitionFilter, None)

    def optimize(self) -> "AcidOptimizeBuilder":
        """Delta-spark's spelling of compaction: ``optimize().where(...).executeCompaction()``."""
        return AcidOptimizeBuilder(self.compact)

    @keyword_only
    def vacuum(self, *, dryRun: bool = False, retentionSeconds: float | None = None) -> dict:
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
        return vacuum(self.location, dryRun=dryRun, metastoreUrl=self._ref.metastore_url,
                      storageOptions=self._ref.storage_options, retentionSeconds=retentionSeconds)

    # --- history and detail ------------------------------------------------------------------
    def history(self, limit: int | None = None) -> list[dict]:
        """Committed writes, newest first: ``version`` (write id), ``timestamp`` (UTC),
        ``operation``, ``txnId``, ``partitions``, ``user``, ``description``."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgumentError("limit", f"expected None or an integer >= 0, got {limit!r}")
        # the store alone keeps the history: no listing of storage (cheap on object stores, and
        # the history of a table whose storage lost data can still be read)
        store, info = registered_table(self.location, self._ref.metastore_url, ", which keeps the history")
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

    def detail(self) -> dict:
        """One row describing the table as it is now, as a dict: location, name, format,
        partition and bucket columns, table type, files, size, version."""
        from .layout.table_dirs import acid_state_for, data_files

        resolved = self.refresh()._state()
        data = []  # the files the latest snapshot reads
        for part in resolved.layout.partitions:
            state = acid_state_for(resolved.layout, part, resolved.write_ids, resolved.txns)
            dirs = ([state.base] if state.base is not None else []) + list(state.deltas)
            data += [f for d in dirs for f in data_files(resolved.storage, d.path)]
            data += list(state.originals)
        info = resolved.info
        return {
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

    def __repr__(self) -> str:
        return f"AcidTable({self.location!r})"


_NEEDS_SPARK = ("needs a SparkSession: open the table with AcidTable.forPath(spark, path) or "
                "AcidTable.forName(spark, name)")


def _spark_table() -> Any:
    """The Spark-bound table class, loaded by name: the one door from the engine-free core to
    an engine (importing it needs pyspark)."""
    return importlib.import_module("acid_source.spark.table").SparkAcidTable


def record_commit(table: AcidTable, metrics: Mapping[str, Any]) -> None:
    """Tell ``table`` that a commit on it went through another path (the Spark-bound table's
    DML): its ``version`` moves as for its own writes."""
    table._committed(metrics)


def alias_name(value: Any) -> str:
    """An ``alias`` argument: a non-empty name."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError("aliasName", f"expected a non-empty name, got {value!r}")
    return value.strip()


def compact(ref: TableRef, kind: str, partition_filter: Any, run_tasks: Any) -> dict:
    """``compact(kind, partitionFilter=...)`` of a handle on ``ref``; ``run_tasks`` runs the
    compaction's tasks (None: in this process)."""
    from .maintenance.compactor import compact_table

    if partition_filter is not None and not isinstance(partition_filter, str):
        raise InvalidArgumentError("partitionFilter", f"expected a SQL condition string, got {partition_filter!r}")
    return compact_table(ref.location, kind, partitionFilter=partition_filter, metastoreUrl=ref.metastore_url,
                         storageOptions=ref.storage_options, runTasks=run_tasks)


class AcidOptimizeBuilder:
    """Which partitions to compact (``where``), then ``executeCompaction()`` (delta-spark's
    ``DeltaOptimizeBuilder``; here a major compaction unless ``kind="minor"``)."""

    def __init__(self, compact: Any):
        self._compact = compact
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
        return self._compact(kind, partitionFilter=condition)
