"""The Spark-bound side of :class:`~acid_source.table.AcidTable`.

``AcidTable.forPath(spark, path)`` / ``forName(spark, name)`` return a
:class:`SparkAcidTable`: an engine-free table (its :attr:`~SparkAcidTable.table`) bound to a
SparkSession, whose UPDATE / DELETE / MERGE run as Spark jobs (:mod:`.dml`), whose compaction
runs its tasks on the executors (:mod:`.compaction`), and whose ``toDF`` / ``detail`` /
``history`` are DataFrames. It wraps the core table rather than extending it, so each keeps its
own return types; everything else (reading, appending, vacuum) is the core's. The core never
imports this module: delta-spark keeps its Spark-bound ``DeltaTable`` apart from engine-free
code the same way.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from ..deprecation import keyword_only
from ..errors import AcidError, InvalidArgumentError
from ..scans import AcidScan
from ..staged import StagedWrite
from ..table import AcidOptimizeBuilder, AcidTable, alias_name, compact, record_commit
from ..table_ref import TableRef, location_of
from .session import check_session
from .types import ColumnMapping, ExpressionOrColumn

HISTORY_SCHEMA = ("version BIGINT, timestamp TIMESTAMP, operation STRING, txnId BIGINT, partitions ARRAY<STRING>, "
                  "user STRING, description STRING")
DETAIL_SCHEMA = ("format STRING, location STRING, name STRING, tableType STRING, partitionColumns ARRAY<STRING>, "
                 "bucketColumns ARRAY<STRING>, numBuckets INT, numFiles BIGINT, sizeInBytes BIGINT, version BIGINT")


class SparkAcidTable:
    """A table bound to a SparkSession (delta-spark's ``DeltaTable``).

    >>> t = AcidTable.forPath(spark, "/warehouse/sales")              # doctest: +SKIP
    >>> t.update("region = 'eu'", {"amount": "amount * 1.1"})         # doctest: +SKIP
    >>> t.toDF().where("amount > 100").count()                        # doctest: +SKIP
    """

    def __init__(self, table: AcidTable, sparkSession: SparkSession, *, alias: str | None = None):
        check_session(sparkSession)
        if not isinstance(table, AcidTable):
            raise InvalidArgumentError("table", f"expected an AcidTable, got {type(table).__name__}")
        self._table = table
        self._session = sparkSession
        self._alias = alias

    # --- opening ---------------------------------------------------------------------------
    @classmethod
    def forPath(cls, sparkSession: SparkSession, path: str, *, metastoreUrl: str | None = None,
                storageOptions: Mapping[str, Any] | None = None,
                conflictDetection: str | None = None) -> "SparkAcidTable":
        """The table at ``path``, bound to ``sparkSession``: ``toDF()``, ``delete``,
        ``update``, ``merge`` and ``compact`` run as Spark jobs."""
        check_session(sparkSession)
        location = location_of(path, "path", metastore_url=metastoreUrl, by_name=False)
        return cls(AcidTable(location, metastoreUrl=metastoreUrl, storageOptions=storageOptions,
                             conflictDetection=conflictDetection).refresh(), sparkSession)

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str, *, metastoreUrl: str | None = None,
                storageOptions: Mapping[str, Any] | None = None,
                conflictDetection: str | None = None) -> "SparkAcidTable":
        """The table registered in the transaction store under ``tableOrViewName``
        (``db.table``), bound to ``sparkSession``."""
        check_session(sparkSession)
        location = location_of(tableOrViewName, "tableOrViewName", metastore_url=metastoreUrl, by_name=True)
        return cls(AcidTable(location, metastoreUrl=metastoreUrl, storageOptions=storageOptions,
                             conflictDetection=conflictDetection).refresh(), sparkSession)

    @classmethod
    def isAcidTable(cls, sparkSession: SparkSession, identifier: str, *, metastoreUrl: str | None = None) -> bool:
        """Whether ``identifier`` (a path or a registered name) is a Hive ACID table acidorc can
        read: registered in the store, or a directory with an ACID layout."""
        from ..layout.table_dirs import has_acid_layout
        from ..resolve import resolve_table

        try:
            location = location_of(identifier, "identifier", metastore_url=metastoreUrl, by_name=None)
            resolved = resolve_table(location, metastore_url=metastoreUrl)
        except AcidError:
            return False
        return resolved.registered or has_acid_layout(resolved.layout)

    # --- what it is (the engine-free table's) ------------------------------------------------
    @property
    def table(self) -> AcidTable:
        """The engine-free table this one wraps (same location, store and handle state)."""
        return self._table

    @property
    def ref(self) -> TableRef:
        return self._table.ref

    @property
    def location(self) -> str:
        return self._table.location

    @property
    def schema(self) -> pa.Schema:
        """The table's columns as pyarrow types (partition columns last)."""
        return self._table.schema

    @property
    def partitionColumns(self) -> list[str]:
        return self._table.partitionColumns

    @property
    def version(self) -> int | None:
        """The latest committed write id, as of the last load or :meth:`refresh` and this
        handle's own commits."""
        return self._table.version

    def refresh(self) -> "SparkAcidTable":
        """See :meth:`AcidTable.refresh`."""
        self._table.refresh()
        return self

    def alias(self, aliasName: str) -> "SparkAcidTable":
        """This table under an alias, for conditions such as ``"t.id = s.id"``."""
        return SparkAcidTable(self._table, self._session, alias=alias_name(aliasName))

    # --- reading ---------------------------------------------------------------------------
    def toDF(self) -> DataFrame:
        """The table's latest snapshot as a Spark DataFrame (a new one each call: a DataFrame
        keeps the snapshot it was planned with). Files that need no ACID merge are read by
        Spark's own ORC reader (:func:`acid_source.read`)."""
        from ..specs import ReadSpec
        from ..values import default_read_lease_seconds
        from .native_read import read_table

        ref = self._table.ref
        spec = ReadSpec(path=self.location, metastore_url=ref.metastore_url, storage_options=ref.storage_options,
                        read_lease_seconds=default_read_lease_seconds())
        df = read_table(self._session, spec)
        return df.alias(self._alias) if self._alias else df

    def scan(self, rowFilter: str | None = None, columns: Iterable[str] | None = None, *,
             versionAsOf: int | None = None, timestampAsOf: Any = None, includeRowId: bool = False,
             maxSplitBytes: int | str | None = None) -> AcidScan:
        """An engine-free scan, in this process (:meth:`AcidTable.scan`)."""
        return self._table.scan(rowFilter, columns, versionAsOf=versionAsOf, timestampAsOf=timestampAsOf,
                                includeRowId=includeRowId, maxSplitBytes=maxSplitBytes)

    def toArrow(self) -> pa.Table:
        """The whole table at its latest snapshot, as a pyarrow Table (read in this process)."""
        return self._table.toArrow()

    def changes(self, startingVersion: int | None = None, endingVersion: int | None = None, *,
                startingTimestamp: Any = None, endingTimestamp: Any = None) -> Any:
        """The change feed, engine-free (:meth:`AcidTable.changes`; as a DataFrame:
        ``spark.read.format("acidorc").option("readChangeFeed", "true")``)."""
        return self._table.changes(startingVersion, endingVersion, startingTimestamp=startingTimestamp,
                                   endingTimestamp=endingTimestamp)

    # --- writing from this process (a DataFrame: df.write.format("acidorc")) -------------------
    @keyword_only
    def newWrite(self, mode: str = "append", *, partition: str | Mapping[str, Any] | None = None) -> StagedWrite:
        """:meth:`AcidTable.newWrite`."""
        return self._table.newWrite(mode, partition=partition)

    def append(self, data: Any) -> dict:
        """:meth:`AcidTable.append` (Arrow data in this process)."""
        return self._table.append(data)

    @keyword_only
    def overwrite(self, data: Any, *, partition: str | Mapping[str, Any] | None = None) -> dict:
        """:meth:`AcidTable.overwrite` (Arrow data in this process)."""
        return self._table.overwrite(data, partition=partition)

    @keyword_only
    def streamingConnection(self, transactionsPerBatch: int = 10, *,
                            partition: str | Mapping[str, Any] | None = None) -> Any:
        """:meth:`AcidTable.streamingConnection`."""
        return self._table.streamingConnection(transactionsPerBatch, partition=partition)

    # --- changing rows (UPDATE / DELETE / MERGE) ----------------------------------------------
    def delete(self, condition: ExpressionOrColumn | None = None) -> dict:
        """Delete the rows where ``condition`` (SQL string or Column) is true, all rows without
        one, as a Spark job. One transaction; returns its metrics (``numDeletedRows``, ...)."""
        from .dml import spark_delete

        return self._recorded(spark_delete(self._session, self._table.ref, condition, self._alias))

    def update(self, condition: ExpressionOrColumn | None = None,
               set: ColumnMapping | None = None) -> dict:
        """Set columns of the rows where ``condition`` is true (every row without one), as a
        Spark job: ``set`` maps column -> SQL expression or Column over the old row. Updating a
        partition or bucket column moves the row. Returns the metrics (``numUpdatedRows``, ...)."""
        from .dml import spark_update

        if set is None:
            raise InvalidArgumentError("set", "give the columns to update, e.g. set={'amount': 'amount + 1'}")
        return self._recorded(spark_update(self._session, self._table.ref, condition, set, self._alias))

    def merge(self, source: DataFrame, condition: ExpressionOrColumn) -> "AcidMergeBuilder":
        """Start a MERGE of the DataFrame ``source`` into this table on ``condition``; add
        ``whenMatched...`` / ``whenNotMatched...`` clauses, then ``execute()``.

        >>> (t.alias("t").merge(updates.alias("s"), "t.id = s.id")        # doctest: +SKIP
        ...   .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        """
        return AcidMergeBuilder(self._session, self._table.ref, self._alias, source, condition, self._recorded)

    def _recorded(self, metrics: dict) -> dict:
        record_commit(self._table, metrics)
        return metrics

    # --- compaction and cleaning -------------------------------------------------------------
    @keyword_only
    def compact(self, kind: str, *, partitionFilter: str | None = None) -> dict:
        """Compact as :meth:`AcidTable.compact` does, with the compaction tasks running on
        the session's executors (the driver plans and commits)."""
        from .compaction import spark_task_runner

        return compact(self._table.ref, kind, partitionFilter, spark_task_runner(self._session))

    def optimize(self) -> AcidOptimizeBuilder:
        """Delta-spark's spelling of compaction: ``optimize().where(...).executeCompaction()``."""
        return AcidOptimizeBuilder(self.compact)

    @keyword_only
    def vacuum(self, *, dryRun: bool = False, retentionSeconds: float | None = None) -> dict:
        """:meth:`AcidTable.vacuum` (the cleaner runs on the driver)."""
        return self._table.vacuum(dryRun=dryRun, retentionSeconds=retentionSeconds)

    # --- history and detail ------------------------------------------------------------------
    def detail(self) -> DataFrame:
        """One row describing the table, as a DataFrame: location, name, format, partition and
        bucket columns, table type, files, size, version."""
        return self._session.createDataFrame([self._table.detail()], DETAIL_SCHEMA)

    def history(self, limit: int | None = None) -> DataFrame:
        """Committed writes, newest first, as a DataFrame: ``version`` (write id),
        ``timestamp`` (UTC), ``operation``, ``txnId``, ``partitions``, ``user``, ``description``."""
        return self._session.createDataFrame(self._table.history(limit), HISTORY_SCHEMA)

    def __repr__(self) -> str:
        return f"AcidTable.forPath(spark, {self.location!r})"


class AcidMergeBuilder:
    """The clauses of one MERGE, evaluated in the order they were added (the first that
    matches a row acts on it, as in Spark SQL); ``execute()`` runs it (delta-spark's
    ``DeltaMergeBuilder``). Conditions and values are SQL strings or Columns."""

    def __init__(self, session: SparkSession, target: TableRef, alias: str | None, source: DataFrame,
                 condition: ExpressionOrColumn, recorded: Any):
        from .dml_inputs import to_column

        if condition is None:
            raise InvalidArgumentError("condition", "a MERGE needs a join condition, e.g. 't.id = s.id'")
        to_column(condition, "condition")  # parse errors now, not at execute()
        self._session = session
        self._target = target
        self._alias = alias
        self._recorded = recorded
        self._source = source
        self._condition = condition
        self._clauses: list = []

    def _add(self, when: str, action: str, condition: ExpressionOrColumn | None, values: ColumnMapping | None,
             argument: str, *, missing: str | None = None) -> "AcidMergeBuilder":
        """Add a clause; ``missing``: the error when ``values`` is None (a clause that needs them)."""
        from .dml import MergeClause
        from .dml_inputs import to_column

        if values is None and missing is not None:
            raise InvalidArgumentError(argument, missing)
        if condition is not None:
            to_column(condition, "condition")
        if values is not None and (not isinstance(values, Mapping) or not values):
            raise InvalidArgumentError(argument, f"expected a non-empty dict of column -> expression, got {values!r}")
        self._clauses.append(MergeClause(when, action, condition, values))
        return self

    def whenMatchedUpdate(self, condition: ExpressionOrColumn | None = None,
                          set: ColumnMapping | None = None) -> "AcidMergeBuilder":
        """Update matched target rows: ``set`` maps column -> SQL expression or Column (others keep their values).

        >>> builder.whenMatchedUpdate("s.op = 'u'", {"amount": "s.amount"})  # doctest: +SKIP
        """
        return self._add("matched", "update", condition, set, "set",
                         missing="give the columns to update (or use whenMatchedUpdateAll)")

    def whenMatchedUpdateAll(self, condition: ExpressionOrColumn | None = None) -> "AcidMergeBuilder":
        """Update matched target rows from the source column of each target column's name (UPDATE SET *)."""
        return self._add("matched", "update", condition, None, "set")

    def whenMatchedDelete(self, condition: ExpressionOrColumn | None = None) -> "AcidMergeBuilder":
        """Delete matched target rows (where ``condition`` holds, if given).

        >>> builder.whenMatchedDelete("s.op = 'd'")  # doctest: +SKIP
        """
        return self._add("matched", "delete", condition, None, "condition")

    def whenNotMatchedInsert(self, condition: ExpressionOrColumn | None = None,
                             values: ColumnMapping | None = None) -> "AcidMergeBuilder":
        """Insert source rows no target row matches: ``values`` maps column -> expression (others NULL).

        >>> builder.whenNotMatchedInsert(values={"id": "s.id", "amount": "s.amount"})  # doctest: +SKIP
        """
        return self._add("not_matched", "insert", condition, values, "values",
                         missing="give the values to insert (or use whenNotMatchedInsertAll)")

    def whenNotMatchedInsertAll(self, condition: ExpressionOrColumn | None = None) -> "AcidMergeBuilder":
        """Insert source rows no target row matches, every column from the source column of its name."""
        return self._add("not_matched", "insert", condition, None, "values")

    def whenNotMatchedBySourceUpdate(self, condition: ExpressionOrColumn | None = None,
                                     set: ColumnMapping | None = None) -> "AcidMergeBuilder":
        """Update target rows no source row matches: ``set`` maps column -> expression."""
        return self._add("not_matched_by_source", "update", condition, set, "set",
                         missing="give the columns to update")

    def whenNotMatchedBySourceDelete(self, condition: ExpressionOrColumn | None = None) -> "AcidMergeBuilder":
        """Delete target rows no source row matches.

        >>> builder.whenNotMatchedBySourceDelete("t.day < '2026-01-01'")  # doctest: +SKIP
        """
        return self._add("not_matched_by_source", "delete", condition, None, "condition")

    def execute(self) -> dict:
        """Run the MERGE in one transaction; returns its metrics (``numUpdatedRows``,
        ``numInsertedRows``, ``numDeletedRows``, ...)."""
        from .dml import spark_merge

        return self._recorded(spark_merge(self._session, self._target, self._source, self._condition,
                                          list(self._clauses), self._alias))
