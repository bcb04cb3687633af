"""``AcidTable``: a Hive ACID table from plain Python (pyarrow), no Spark needed.

Spelled like pyspark and delta-spark (camelCase) because the same class gains the Spark-facing
``forPath(spark, path)`` / ``toDF()`` / ``merge(...)`` for DML. Reads take their snapshot from
the transaction store; writes run in one :class:`~acid_source.txn.Transaction` each.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa

from .errors import InvalidArgumentError, SchemaError, TableNotRegisteredError
from .metastore.tableinfo import TABLE_NAME, normalize_location
from .options import WriteOptions, parse_timestamp, parse_version
from .resolve import open_store, resolve_table
from .scan.planner import TableScan
from .scan.reader import read_split
from .scan.resolved import ResolvedTable, SnapshotSpec
from .write.task import TaskWriter
from .writes import begin_write


class AcidTable:
    """A handle on one table: read it at any committed version, append to it, overwrite it.

    >>> t = AcidTable.load("/warehouse/sales")                         # doctest: +SKIP
    >>> t.scan(rowFilter="region = 'eu'", columns=["id", "amount"]).toArrow()  # doctest: +SKIP
    >>> t.append(pa.table({"id": [1], "amount": [9.5], "region": ["eu"]}))    # doctest: +SKIP
    >>> t.scan(versionAsOf=3).count()                                  # doctest: +SKIP
    """

    def __init__(self, location: str, *, metastoreUrl: str | None = None,
                 storageOptions: Mapping[str, Any] | None = None):
        self._location = location
        self._metastore_url = metastoreUrl
        self._storage_options = tuple(sorted((storageOptions or {}).items()))
        self._latest: ResolvedTable | None = None

    # --- opening ---------------------------------------------------------------------------
    @classmethod
    def load(cls, locationOrName: str, *, metastoreUrl: str | None = None,
             storageOptions: Mapping[str, Any] | None = None) -> "AcidTable":
        """Open the table at a location (path or fsspec URL) or registered under a name
        (``db.table``). Tables written by other engines (not in the store) can be read."""
        if not isinstance(locationOrName, str) or not locationOrName.strip():
            raise InvalidArgumentError("locationOrName", f"expected a table location or name, got {locationOrName!r}")
        location = locationOrName.strip()
        if TABLE_NAME.fullmatch(location):
            store = open_store(metastoreUrl)
            if store is None:
                raise TableNotRegisteredError(name=location)
            location = store.get_table(name=location).location
        table = cls(location, metastoreUrl=metastoreUrl, storageOptions=storageOptions)
        table._refresh()
        return table

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
             versionAsOf: int | None = None, timestampAsOf: Any = None) -> "AcidScan":
        """A scan of the latest snapshot, or of the table as it was right after write id
        ``versionAsOf`` committed, or at ``timestampAsOf`` (datetime, ISO-8601 string — UTC
        unless it names a zone — or epoch seconds). The snapshot is taken now."""
        if versionAsOf is not None and timestampAsOf is not None:
            raise InvalidArgumentError("timestampAsOf", "give versionAsOf or timestampAsOf, not both")
        spec = SnapshotSpec(
            version_as_of=None if versionAsOf is None else _version(versionAsOf),
            timestamp_as_of=None if timestampAsOf is None else _timestamp(timestampAsOf),
        )
        return AcidScan(self._resolve(spec), rowFilter, columns)

    def toArrow(self) -> pa.Table:
        """The whole table at its latest snapshot."""
        return self.scan().toArrow()

    # --- writing ---------------------------------------------------------------------------
    def append(self, data) -> dict:
        """Append rows (pyarrow Table, RecordBatch, RecordBatchReader or iterable of batches)
        in one transaction; returns its metrics."""
        return self._write(data, overwrite=False)

    def overwrite(self, data, partition: str | Mapping[str, Any] | None = None) -> dict:
        """Replace the whole table, or one partition (``{"day": "2026-11-21"}`` or
        ``"day=2026-11-21"``; the data then lacks the partition columns), in one transaction."""
        return self._write(data, overwrite=True, partition=partition)

    def _write(self, data, *, overwrite: bool, partition=None) -> dict:
        schema, batches = _batches(data)
        options: dict[str, str] = {"path": self.location}
        if self._metastore_url is not None:
            options["metastoreUrl"] = self._metastore_url
        for key, value in self._storage_options:
            options[f"fs.{key}"] = str(value)
        if partition is not None:
            options["partition"] = _partition_spec(partition)
        resolved = self._refresh()
        if not resolved.registered:
            raise TableNotRegisteredError(
                f"{resolved.location} is not registered in the transaction store; acidorc writes only tables "
                "whose write ids it allocates (create one with acid_source.create_table)", location=resolved.location)
        job, txn = begin_write(WriteOptions.parse(options), schema, overwrite, heartbeat="thread")
        task = TaskWriter(job.plan, 0)
        try:
            for batch in batches:
                task.write(batch)
            result = task.close()
        except BaseException as exc:
            task.abort()
            job.abort(txn, [task.result], reason=f"{type(exc).__name__}: {exc}")
            raise
        job.commit(txn, [result])
        return {
            "operation": job.operation,
            "writeId": job.plan.write_id,
            "txnId": txn.txn_id,
            "numOutputRows": result.rows,
            "numFiles": len(result.files),
            "partitions": sorted({f.partition for f in result.files}),
        }

    # --- history ---------------------------------------------------------------------------
    def history(self, limit: int | None = None) -> list[dict]:
        """Committed writes, newest first: ``version`` (write id), ``timestamp`` (UTC),
        ``operation``, ``txnId``, ``partitions``, ``user``, ``description``."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgumentError("limit", f"expected None or an integer >= 0, got {limit!r}")
        resolved = self._refresh()
        if not resolved.registered:
            raise TableNotRegisteredError(
                f"{resolved.location} is not registered in the transaction store, which keeps the history",
                location=resolved.location)
        store = open_store(self._metastore_url)
        assert store is not None  # the table is registered, so the store exists
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
            for h in store.history(resolved.info.table_id, limit=limit)
        ]

    def __repr__(self) -> str:
        return f"AcidTable({self.location!r})"


class AcidScan:
    """One snapshot of a table, optionally filtered and projected. Iterating it reads the
    files; memory stays bounded by a stripe (``toBatches``)."""

    def __init__(self, table: ResolvedTable, rowFilter: str | None, columns: Iterable[str] | None):
        self._table = table
        full = table.schema()
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

    def toBatches(self) -> Iterator[pa.RecordBatch]:
        ctx, splits = TableScan(self._table).plan(self._read_schema)
        for split in splits:
            for batch in read_split(split, ctx):
                if self._condition is not None:
                    batch = batch.filter(self._condition.expression)
                    if batch.num_rows == 0:
                        continue
                yield batch.select(self._columns)

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


def _partition_text(value) -> str:
    from .write.rows import format_partition_value

    return format_partition_value(value) or ""


def _partition_spec(partition) -> str:
    if isinstance(partition, str):
        return partition
    if isinstance(partition, Mapping):
        from .layout.partitions import DEFAULT_PARTITION_NAME, escape_path_name

        parts = []
        for column, value in partition.items():
            if value is None:
                text = DEFAULT_PARTITION_NAME
            elif str(value) == DEFAULT_PARTITION_NAME:
                raise SchemaError(f"partition value {DEFAULT_PARTITION_NAME!r} of {column!r} would read back as "
                                  "NULL; pass None for the NULL partition", column=str(column))
            else:  # escaped here, unescaped by the partition spec parser: the value arrives as given
                text = escape_path_name(_partition_text(value))
            parts.append(f"{escape_path_name(str(column))}={text}")
        return "/".join(parts)
    raise InvalidArgumentError("partition", f"expected 'col=value/...' or a dict, got {type(partition).__name__}")
