"""``spark.readStream.format("acidorc")``: the rows of newly committed writes, micro-batch by
micro-batch.

Offsets are snapshots (:mod:`acid_source.streaming.offsets`): the highest write id looked at
plus the ones below it still open, so a write id that commits after a higher one is still
delivered, once. Each micro-batch delivers the write ids committed between its two offsets,
read from their own delta directories (:mod:`acid_source.streaming.change_plan`), never by
diffing scans. By default a query first reads the table as it is (one micro-batch of the
whole snapshot), then its changes; ``startingVersion`` starts from a write id instead
(``latest``: only what commits from now on).

A commit that deleted or updated rows cannot be shown as appended rows: without
``readChangeFeed=true`` (change rows with ``_change_type``, ``_commit_version``,
``_commit_timestamp``) it fails the query with a typed error naming the write id, unless
``skipChangeCommits=true`` leaves such commits out (Delta's option of that name).

Spark runs ``initialOffset`` / ``latestOffset`` / ``partitions`` in one long-lived driver-side
process and ``read`` in tasks, which import only executor-side modules.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from ..errors import AcidError
from ..scan.reader import read_split
from ..specs import StreamReadSpec
from ..streaming.change_reader import CHANGE_FIELDS, INSERT, read_change_split


def stream_schema(spec: StreamReadSpec) -> StructType:
    """The stream's columns: the table's (timestamps without a zone, as the table reads), then
    the change feed's with ``readChangeFeed``."""
    from ..resolve import resolve_read
    from ..specs import ReadSpec
    from ..streaming.change_reader import change_schema

    table = resolve_read(ReadSpec(path=spec.path, metastore_url=spec.metastore_url,
                                  storage_options=spec.storage_options))
    schema = table.schema(False)
    return from_arrow_schema(change_schema(schema) if spec.read_change_feed else schema, prefer_timestamp_ntz=True)


class FailedStreamReader(DataSourceStreamReader):
    """A stream whose options were refused: the typed error on first use. (Spark's stream runner
    calls ``stop()`` in a ``finally`` even when creating the reader failed, so an error raised by
    ``DataSource.streamReader`` itself reaches the user buried under an ``UnboundLocalError``.)"""

    def __init__(self, error: AcidError):
        self.error = error

    def _refuse(self, *_args, **_kwargs):
        raise self.error

    initialOffset = latestOffset = partitions = read = commit = _refuse

    def stop(self) -> None:
        """Nothing to release."""


class _SnapshotPartition(InputPartition):
    """A split of the first micro-batch's full read of the table."""

    def __init__(self, ctx, split, version: int, commit_micros: int | None):
        super().__init__(split.description if split else "empty")
        self.ctx, self.split, self.version, self.commit_micros = ctx, split, version, commit_micros


class _ChangePartition(InputPartition):
    """A split of the changes of some committed write ids."""

    def __init__(self, ctx, split):
        super().__init__(split.description)
        self.ctx, self.split = ctx, split


class AcidStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The acidorc streaming source (see the module docstring)."""

    def __init__(self, spec: StreamReadSpec, schema: StructType):
        self.spec = spec
        self.schema = schema
        self._target = None  # Trigger.AvailableNow: the snapshot the query ends at
        self._rows: dict[int, int] = {}  # rows per write id, for maxRowsPerTrigger

    # --- offsets (driver) ------------------------------------------------------------------------
    def _table(self):
        from ..resolve import registered_table

        return registered_table(self.spec.path, self.spec.metastore_url,
                                ", whose commits a streaming read follows")

    def _snapshot(self):
        store, info = self._table()
        return store.valid_write_ids(info.table_id)

    def initialOffset(self) -> dict:
        from ..streaming.offsets import StreamOffset, offset_of

        start = self.spec.starting_version
        if start is None:
            return StreamOffset(0, initial=True).to_dict()
        if start == "latest":
            return offset_of(self._snapshot()).to_dict()
        return StreamOffset(int(start) - 1).to_dict()

    def getDefaultReadLimit(self):
        if self.spec.max_rows_per_trigger is not None:
            return ReadMaxRows(self.spec.max_rows_per_trigger)
        if self.spec.max_write_ids_per_trigger is not None:
            return ReadMaxFiles(self.spec.max_write_ids_per_trigger)  # a write id is Spark's "file" here
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._snapshot()

    def latestOffset(self, start: dict, limit) -> dict:
        from ..streaming.offsets import StreamOffset, advance, offset_of

        begin = StreamOffset.from_dict(start)
        snapshot = self._target if self._target is not None else self._snapshot()
        if begin.initial:
            return offset_of(snapshot).to_dict()
        if isinstance(limit, ReadAllAvailable):
            return advance(begin, snapshot).to_dict()
        return advance(begin, snapshot, max_write_ids=self.spec.max_write_ids_per_trigger,
                       max_rows=self.spec.max_rows_per_trigger, rows_of=self._rows_of).to_dict()

    def reportLatestOffset(self):
        from ..streaming.offsets import offset_of

        return offset_of(self._snapshot()).to_dict()

    def _rows_of(self, write_ids: Sequence[int]) -> Iterator[int]:
        from ..streaming.row_counts import inserted_rows

        for w in write_ids:
            if w not in self._rows:
                self._rows.update(inserted_rows(self.spec.path, [w], metastore_url=self.spec.metastore_url,
                                                storage_options=self.spec.storage_options))
            yield self._rows.get(w, 0)

    # --- planning (driver) -----------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        from ..streaming.offsets import StreamOffset, delivered_between

        begin, finish = StreamOffset.from_dict(start), StreamOffset.from_dict(end)
        if begin.initial:
            return self._snapshot_partitions(finish)
        snapshot = self._snapshot()
        ids = delivered_between(begin, finish, lambda ws: {w for w in ws if snapshot.is_write_id_valid(w)})
        if not ids:
            return []
        return self._change_partitions(ids)

    def _change_partitions(self, ids: list[int]) -> list[InputPartition]:
        from ..errors import UnsupportedOperationError
        from ..streaming.change_plan import plan_changes

        spec = self.spec
        plan = plan_changes(spec.path, ids, metastore_url=spec.metastore_url, storage_options=spec.storage_options,
                            asked=f"the streaming read of write ids {_shown(ids)}")
        if plan.has_deletes and not spec.read_change_feed:
            if not spec.skip_change_commits:
                first = plan.dml_write_ids[0]
                raise UnsupportedOperationError(
                    "streaming read", f"{spec.path}: write id {first} updated or deleted rows, which a stream of "
                    "appended rows cannot show; set the option readChangeFeed=true to read change rows "
                    "(_change_type, _commit_version, _commit_timestamp), or skipChangeCommits=true to leave such "
                    "commits out")
            kept = [w for w in plan.write_ids if w not in set(plan.dml_write_ids)]
            if not kept:
                return []
            plan = plan_changes(spec.path, kept, metastore_url=spec.metastore_url,
                                storage_options=spec.storage_options,
                                asked=f"the streaming read of write ids {_shown(kept)}")
        return [_ChangePartition(plan.context, s) for s in plan.splits]

    def _snapshot_partitions(self, end) -> list[InputPartition]:
        from ..layout.writeids import LONG_MAX, ValidWriteIdList
        from ..resolve import scan_for
        from ..specs import ReadSpec

        spec = self.spec
        store, info = self._table()
        now = store.valid_write_ids(info.table_id)
        aborted = [w for lo, hi in now.aborted_ranges for w in range(lo, min(hi, end.write_id) + 1)]
        write_ids = ValidWriteIdList(end.write_id, min(end.pending, default=LONG_MAX), end.pending, aborted,
                                     table_name=now.table_name)
        read = ReadSpec(path=spec.path, write_ids=write_ids, metastore_url=spec.metastore_url,
                        storage_options=spec.storage_options)
        names = {f.name for f in CHANGE_FIELDS}
        wanted = to_arrow_schema(StructType([f for f in self.schema.fields if f.name not in names]), timezone="UTC")
        ctx, splits = scan_for(read, wanted).plan(wanted, [])
        micros = _commit_micros(store, info.table_id, end) if spec.read_change_feed else None
        return [_SnapshotPartition(ctx, s, end.write_id, micros) for s in splits]

    # --- reading (executor) ----------------------------------------------------------------------
    def read(self, partition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, _SnapshotPartition):
            if partition.split is None:
                return
            for batch in read_split(partition.split, partition.ctx):
                yield _as_changes(batch, partition.version, partition.commit_micros) \
                    if self.spec.read_change_feed else batch
            return
        for batch in read_change_split(partition.split, partition.ctx):
            if not self.spec.read_change_feed:
                batch = batch.select(list(range(batch.num_columns - len(CHANGE_FIELDS))))
            yield batch

    def commit(self, end: dict) -> None:
        """Nothing to release: offsets live in Spark's checkpoint."""

    def stop(self) -> None:
        """Nothing to release (Spark does not always call this)."""


def _as_changes(batch: pa.RecordBatch, version: int, micros: int | None) -> pa.RecordBatch:
    """Rows of the first micro-batch's snapshot as change rows: inserts of that version."""
    n = batch.num_rows
    change_type, commit_version, commit_time = (f.type for f in CHANGE_FIELDS)
    extra = [pa.array([INSERT] * n, change_type), pa.array([version] * n, commit_version),
             pa.array([micros] * n, pa.int64()).cast(commit_time)]
    return pa.RecordBatch.from_arrays(batch.columns + extra, names=batch.schema.names + [f.name for f in CHANGE_FIELDS])


def _commit_micros(store, table_id: int, end) -> int | None:
    """When the snapshot's last commit happened (the first batch's ``_commit_timestamp``)."""
    for entry in store.history(table_id):  # newest first
        w = entry["write_id"]
        if w is not None and w <= end.write_id and w not in end.pending:
            return int(round(entry["commit_time"] * 1_000_000))
    return None


def _shown(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:10])) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
