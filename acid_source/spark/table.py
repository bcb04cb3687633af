"""The Spark-bound side of :class:`~acid_source.table.AcidTable`.

``AcidTable.forPath(spark, path)`` / ``forName(spark, name)`` return a
:class:`SparkAcidTable`: the same table, bound to a SparkSession, whose UPDATE / DELETE / MERGE
run as Spark jobs (:mod:`.dml`), whose compaction runs its tasks on the executors
(:mod:`.compaction`), and whose ``toDF`` / ``detail`` / ``history`` are DataFrames. The
engine-free core keeps everything else (reading, appending, vacuum) and never imports this
module: delta-spark keeps its Spark-bound ``DeltaTable`` apart from engine-free code the same
way.
"""

from __future__ import annotations

from typing import Any, Mapping

from pyspark.sql import DataFrame, SparkSession

from ..errors import AcidError, InvalidArgumentError
from ..table import AcidTable
from .session import check_session
from .types import ColumnMapping, ExpressionOrColumn

HISTORY_SCHEMA = ("version BIGINT, timestamp TIMESTAMP, operation STRING, txnId BIGINT, partitions ARRAY<STRING>, "
                  "user STRING, description STRING")
DETAIL_SCHEMA = ("format STRING, location STRING, name STRING, tableType STRING, partitionColumns ARRAY<STRING>, "
                 "bucketColumns ARRAY<STRING>, numBuckets INT, numFiles BIGINT, sizeInBytes BIGINT, version BIGINT")


class SparkAcidTable(AcidTable):
    """A table bound to a SparkSession (delta-spark's ``DeltaTable``).

    >>> t = AcidTable.forPath(spark, "/warehouse/sales")              # doctest: +SKIP
    >>> t.update("region = 'eu'", {"amount": "amount * 1.1"})         # doctest: +SKIP
    >>> t.toDF().where("amount > 100").count()                        # doctest: +SKIP
    """

    def __init__(self, location: str, *, sparkSession: SparkSession, **options: Any):
        super().__init__(location, **options)
        self._session = sparkSession

    # --- opening ---------------------------------------------------------------------------
    @classmethod
    def forPath(cls, sparkSession: SparkSession, path: str, *, metastoreUrl: str | None = None,
                storageOptions: Mapping[str, Any] | None = None,
                conflictDetection: str | None = None) -> "SparkAcidTable":
        """The table at ``path``, bound to ``sparkSession``: ``toDF()``, ``delete``,
        ``update``, ``merge`` and ``compact`` run as Spark jobs."""
        check_session(sparkSession)
        table = cls._open(path, "path", by_name=False, sparkSession=sparkSession, metastoreUrl=metastoreUrl,
                          storageOptions=storageOptions, conflictDetection=conflictDetection)
        assert isinstance(table, SparkAcidTable)
        return table

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str, *, metastoreUrl: str | None = None,
                storageOptions: Mapping[str, Any] | None = None,
                conflictDetection: str | None = None) -> "SparkAcidTable":
        """The table registered in the transaction store under ``tableOrViewName``
        (``db.table``), bound to ``sparkSession``."""
        check_session(sparkSession)
        table = cls._open(tableOrViewName, "tableOrViewName", by_name=True, sparkSession=sparkSession,
                          metastoreUrl=metastoreUrl, storageOptions=storageOptions,
                          conflictDetection=conflictDetection)
        assert isinstance(table, SparkAcidTable)
        return table

    @classmethod
    def isAcidTable(cls, sparkSession: SparkSession, identifier: str, *, metastoreUrl: str | None = None) -> bool:
        """Whether ``identifier`` (a path or a registered name) is a Hive ACID table acidorc can
        read: registered in the store, or a directory with an ACID layout."""
        from ..layout.table_dirs import has_acid_layout

        try:
            resolved = AcidTable._open(identifier, "identifier", metastoreUrl=metastoreUrl)._latest
        except AcidError:
            return False
        assert resolved is not None  # _open resolved it
        return resolved.registered or has_acid_layout(resolved.layout)

    # --- reading ---------------------------------------------------------------------------
    def toDF(self) -> DataFrame:
        """The table's latest snapshot as a Spark DataFrame (a new one each call: a DataFrame
        keeps the snapshot it was planned with). Files that need no ACID merge are read by
        Spark's own ORC reader (:func:`acid_source.read`)."""
        from ..metastore.urls import url_for_workers
        from ..options import spark_storage_options
        from .native_read import read

        options = dict(spark_storage_options(self._storage_options))
        url = url_for_workers(self._metastore_url)
        if url is not None:
            options["metastoreUrl"] = url
        df = read(self._session, self.location, **options)
        return df.alias(self._alias) if self._alias else df

    # --- changing rows (UPDATE / DELETE / MERGE) ----------------------------------------------
    def delete(self, condition: ExpressionOrColumn | None = None) -> dict:
        """Delete the rows where ``condition`` (SQL string or Column) is true, all rows without
        one, as a Spark job. One transaction; returns its metrics (``numDeletedRows``, ...)."""
        from .dml import spark_delete

        return spark_delete(self._session, self._target(), condition, self._alias)

    def update(self, condition: ExpressionOrColumn | None = None,
               set: ColumnMapping | None = None) -> dict:
        """Set columns of the rows where ``condition`` is true (every row without one), as a
        Spark job: ``set`` maps column -> SQL expression or Column over the old row. Updating a
        partition or bucket column moves the row. Returns the metrics (``numUpdatedRows``, ...)."""
        from .dml import spark_update

        if set is None:
            raise InvalidArgumentError("set", "give the columns to update, e.g. set={'amount': 'amount + 1'}")
        return spark_update(self._session, self._target(), condition, set, self._alias)

    def merge(self, source: DataFrame, condition: ExpressionOrColumn) -> "AcidMergeBuilder":
        """Start a MERGE of the DataFrame ``source`` into this table on ``condition``; add
        ``whenMatched...`` / ``whenNotMatched...`` clauses, then ``execute()``.

        >>> (t.alias("t").merge(updates.alias("s"), "t.id = s.id")        # doctest: +SKIP
        ...   .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        """
        return AcidMergeBuilder(self, source, condition)

    # --- compaction --------------------------------------------------------------------------
    def compact(self, kind: str, partitionFilter: str | None = None) -> dict:
        """Compact as :meth:`AcidTable.compact` does, with the compaction tasks running on
        the session's executors (the driver plans and commits)."""
        from ..maintenance.compactor import compact_table
        from .compaction import spark_task_runner

        if partitionFilter is not None and not isinstance(partitionFilter, str):
            raise InvalidArgumentError("partitionFilter", f"expected a SQL condition string, got {partitionFilter!r}")
        return compact_table(self.location, kind, partition_filter=partitionFilter,
                             metastore_url=self._metastore_url, storage_options=self._storage_options,
                             run_tasks=spark_task_runner(self._session))

    # --- what it is ------------------------------------------------------------------------
    def detail(self) -> DataFrame:  # type: ignore[override]
        """One row describing the table, as a DataFrame: location, name, format, partition and
        bucket columns, table type, files, size, version."""
        return self._session.createDataFrame([super().detail()], DETAIL_SCHEMA)

    def history(self, limit: int | None = None) -> DataFrame:  # type: ignore[override]
        """Committed writes, newest first, as a DataFrame: ``version`` (write id),
        ``timestamp`` (UTC), ``operation``, ``txnId``, ``partitions``, ``user``, ``description``."""
        return self._session.createDataFrame(self._history(limit), HISTORY_SCHEMA)

    def __repr__(self) -> str:
        return f"AcidTable.forPath(spark, {self.location!r})"


class AcidMergeBuilder:
    """The clauses of one MERGE, evaluated in the order they were added (the first that
    matches a row acts on it, as in Spark SQL); ``execute()`` runs it (delta-spark's
    ``DeltaMergeBuilder``). Conditions and values are SQL strings or Columns."""

    def __init__(self, table: SparkAcidTable, source: DataFrame, condition: ExpressionOrColumn):
        from .dml import to_column

        if condition is None:
            raise InvalidArgumentError("condition", "a MERGE needs a join condition, e.g. 't.id = s.id'")
        to_column(condition, "condition")  # parse errors now, not at execute()
        self._table = table
        self._source = source
        self._condition = condition
        self._clauses: list = []

    def _add(self, when: str, action: str, condition: ExpressionOrColumn | None, values: ColumnMapping | None,
             argument: str, *, missing: str | None = None) -> "AcidMergeBuilder":
        """Add a clause; ``missing``: the error when ``values`` is None (a clause that needs them)."""
        from .dml import MergeClause, to_column

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

        t = self._table
        return spark_merge(t._session, t._target(), self._source, self._condition, list(self._clauses), t._alias)
