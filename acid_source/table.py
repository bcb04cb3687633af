"""``AcidTable``: a Hive ACID table from plain Python (pyarrow), no Spark needed.

Spelled like pyspark and delta-spark (camelCase). ``AcidTable.forPath(spark, path)`` /
``forName(spark, name)`` return the Spark-bound subclass (:mod:`acid_source.spark.table`,
loaded by name: the core never imports a ``spark/`` module), whose DML, compaction and
``toDF`` run as Spark jobs. Reads take their snapshot from
the transaction store; writes run in one :class:`~acid_source.txn.Transaction` each.
"""

from __future__ import annotations

import copy
import datetime as dt
import importlib
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

import pyarrow as pa

from .errors import (
    InvalidArgumentError,
    InvalidOptionError,
    SchemaError,
    TableNotRegisteredError,
    UnsupportedOperationError,
)
from .metastore.tableinfo import TABLE_NAME, normalize_location
from .options import (
    DEFAULT_MAX_SPLIT_BYTES,
    WriteSpec,
    parse_partition_spec,
    parse_size,
    parse_timestamp,
    parse_version,
)
from .resolve import open_store, registered_table, resolve_table
from .scan.planner import TableScan
from .scan.reader import read_split
from .scan.resolved import ResolvedTable, SnapshotSpec
from .scan.splits import ROW_ID_COLUMN
from .staged import StagedWrite
from .storage import option_pairs
from .writes import stage_write

if TYPE_CHECKING:
    from .streaming.changes import AcidChanges

if TYPE_CHECKING:
    from .streaming.connection import StreamingConnection


class AcidTable:
    """A handle on one table: read it at any committed version, append to it, overwrite it.

    >>> t = AcidTable.load("/warehouse/sales")                         # doctest: +SKIP
    >>> t.scan(rowFilter="region = 'eu'", columns=["id", "amount"]).toArrow()  # doctest: +SKIP
    >>> t.append(pa.table({"id": [1], "amount": [9.5], "region": ["eu"]}))    # doctest: +SKIP
    >>> t.scan(versionAsOf=3).count()                                  # doctest: +SKIP
    """

    def __init__(self, location: str, *, metastoreUrl: str | None = None,
                 storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None):
        from .dml.execution import conflict_mode

        self._location = location
        self._metastore_url = metastoreUrl
        self._storage_options = option_pairs(storageOptions, "storageOptions")
        self._conflict = conflict_mode(conflictDetection)
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
    def _open(cls, locationOrName: Any, argument: str, *, by_name: bool | None = None,
              **kwargs) -> "AcidTable":
        """Open by location or name; ``kwargs`` go to the constructor (a subclass may take more,
        e.g. the Spark-bound table's ``sparkSession``)."""
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
        table = cls(location, **kwargs)
        table._refresh()
        return table

    @classmethod
    def forPath(cls, sparkSession: Any, path: str, *, metastoreUrl: str | None = None,
                storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None) -> "AcidTable":
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
                storageOptions: Mapping[str, Any] | None = None, conflictDetection: str | None = None) -> "AcidTable":
        """The table registered in the transaction store under ``tableOrViewName``
        (``db.table``), bound to ``sparkSession``."""
        return _spark_table().forName(sparkSession, tableOrViewName, metastoreUrl=metastoreUrl,
                                      storageOptions=storageOptions, conflictDetection=conflictDetection)

    @classmethod
    def isAcidTable(cls, sparkSession: Any, identifier: str, *, metastoreUrl: str | None = None) -> bool:
        """Whether ``identifier`` (a path or a registered name) is a Hive ACID table acidorc can
        read: registered in the store, or a directory with an ACID layout."""
        return _spark_table().isAcidTable(sparkSession, identifier, metastoreUrl=metastoreUrl)

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
                             metastore_url=self._metastore_url, storage_options=self._storage_options)

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

    def streamingConnection(self, transactionsPerBatch: int = 10,
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

        return StreamingConnection(self.location, metastoreUrl=self._metastore_url,
                                   storageOptions=self._storage_options,
                                   transactionsPerBatch=transactionsPerBatch,
                                   partition=None if partition is None else _static_partition(partition))

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
        _, info = registered_table(self.location, self._metastore_url,
                                   "; acidorc writes only tables whose write ids it allocates (create one with "
                                   "acid_source.create_table)")
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

    def delete(self, condition: str | None = None) -> dict:
        """Delete the rows where the SQL ``condition`` is true; all rows without one. One
        transaction; returns its metrics (``numDeletedRows``, ...).

        >>> t.delete("day < '2024-01-01'")                                  # doctest: +SKIP
        """
        from .dml.arrow_changes import arrow_changes
        from .dml.execution import run_dml

        return run_dml(self._target(), "delete",
                       lambda resolved, plan: arrow_changes(resolved, plan, condition=condition, assignments=None))

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

        return run_dml(self._target(), "update",
                       lambda resolved, plan: arrow_changes(resolved, plan, condition=condition, assignments=set))

    def merge(self, source: Any, condition: Any) -> Any:
        """MERGE joins a Spark DataFrame: on a table opened with ``forPath`` / ``forName``."""
        raise UnsupportedOperationError("merge", _NEEDS_SPARK)

    # --- compaction --------------------------------------------------------------------------
    def compact(self, kind: str, partitionFilter: str | None = None) -> dict:
        """Compact the table - ``"minor"`` (deltas into one delta and one delete delta per data
        object) or ``"major"`` (everything into one base per data object, deleted rows gone) -
        or only the partitions matching ``partitionFilter``, in one transaction that readers
        see atomically; row ids are kept. Runs in this process (on the executors for a table
        opened with ``forPath`` / ``forName``). Returns its metrics.

        >>> t.compact("major", partitionFilter="day < '2026-01-01'")  # doctest: +SKIP
        """
        from .maintenance.compactor import compact_table

        if partitionFilter is not None and not isinstance(partitionFilter, str):
            raise InvalidArgumentError("partitionFilter", f"expected a SQL condition string, got {partitionFilter!r}")
        return compact_table(self.location, kind, partition_filter=partitionFilter,
                             metastore_url=self._metastore_url, storage_options=self._storage_options)

    def optimize(self) -> "AcidOptimizeBuilder":
        """Delta-spark's spelling of compaction: ``optimize().where(...).executeCompaction()``."""
        return AcidOptimizeBuilder(self)

    def toDF(self) -> Any:
        """A Spark DataFrame of the table: on a table opened with ``forPath`` / ``forName``."""
        raise UnsupportedOperationError("toDF", _NEEDS_SPARK)

    def detail(self) -> dict:
        """One row describing the table, as a dict: location, name,
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
        return row

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
    def history(self, limit: int | None = None) -> list[dict]:
        """Committed writes, newest first: ``version`` (write id), ``timestamp`` (UTC),
        ``operation``, ``txnId``, ``partitions``, ``user``, ``description``. A list of dicts (a
        DataFrame for a table opened with ``forPath`` / ``forName``)."""
        return self._history(limit)

    def _history(self, limit: int | None) -> list[dict]:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgumentError("limit", f"expected None or an integer >= 0, got {limit!r}")
        # the store alone keeps the history: no listing of storage (cheap on object stores, and
        # the history of a table whose storage lost data can still be read)
        store, info = registered_table(self.location, self._metastore_url, ", which keeps the history")
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


_NEEDS_SPARK = ("needs a SparkSession: open the table with AcidTable.forPath(spark, path) or "
                "AcidTable.forName(spark, name)")


def _spark_table() -> Any:
    """The Spark-bound table class, loaded by name: the one door from the engine-free core to
    an engine (importing it needs pyspark)."""
    return importlib.import_module("acid_source.spark.table").SparkAcidTable


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

    # --- handing the rows to other engines -----------------------------------------------------
    def toBatchReader(self, *, leaseSeconds: float | None = None) -> pa.RecordBatchReader:
        """The rows as a ``pyarrow.RecordBatchReader``, read as it is consumed (the lease of
        :meth:`toBatches` is held meanwhile)."""
        return pa.RecordBatchReader.from_batches(self.schema, self.toBatches(leaseSeconds=leaseSeconds))

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream interface: engines that read Arrow streams take a scan as
        it is, batch by batch, without copies - ``duckdb.sql("select ... from scan")``,
        ``polars.DataFrame(scan)``, ``pyarrow.RecordBatchReader.from_stream(scan)``. Each use
        reads the snapshot again; the read lease is held while the stream is consumed."""
        return self.toBatchReader().__arrow_c_stream__(requested_schema)

    def toPandas(self) -> Any:
        """The rows as a pandas DataFrame."""
        return self.toArrow().to_pandas()

    def toPolars(self) -> Any:
        """The rows as a polars DataFrame (``pip install acidorc[polars]``)."""
        polars = _optional("polars", "polars")
        return polars.from_arrow(self.toArrow())

    def toDuckDB(self, connection: Any = None) -> Any:
        """The rows as a DuckDB relation, on ``connection`` or DuckDB's default one
        (``pip install acidorc[duckdb]``); query it with SQL or relational methods."""
        duckdb = _optional("duckdb", "duckdb")
        return (connection if connection is not None else duckdb).from_arrow(self.toArrow())


def _optional(module: str, extra: str) -> Any:
    """An engine acidorc hands rows to, imported when asked for: a typed error naming the extra
    that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UnsupportedOperationError(
            f"reading into {module}", f"{module} is not installed: pip install 'acidorc[{extra}]'") from None


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
