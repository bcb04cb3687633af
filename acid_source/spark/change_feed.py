"""``spark.read.format("acidorc").option("readChangeFeed", "true").option("startingVersion", a)``:
the change feed as a Spark batch read, one partition per change split (partition directory and
bucket). Planning (the store, the listing) runs on the driver side only; tasks unpickle a split
and its context and read them with the executor-side
:func:`~acid_source.streaming.change_reader.read_change_split`.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from ..specs import ReadSpec
from ..streaming.change_reader import ChangeContext, ChangeSplit, read_change_split
from .options import with_option_errors


class ChangeFeedPartition(InputPartition):
    """One change split plus the context every split of the feed shares."""

    def __init__(self, ctx: ChangeContext, split: ChangeSplit | None):
        super().__init__(split.description if split else "empty")
        self.ctx = ctx
        self.split = split


@with_option_errors
def plan_change_feed(options: ReadSpec):
    """The change plan a read's options ask for (driver side): the range checked (a start is
    required for a batch read), then planned."""
    from ..streaming.change_plan import plan_change_range
    from ..values import check_change_range

    check_change_range(options.starting_version, options.ending_version, options.starting_timestamp,
                       options.ending_timestamp)
    return plan_change_range(options.path, starting_version=options.starting_version,
                             ending_version=options.ending_version, starting_timestamp=options.starting_timestamp,
                             ending_timestamp=options.ending_timestamp, metastore_url=options.metastore_url,
                             storage_options=options.storage_options)


def change_feed_schema(plan) -> StructType:
    """The feed's Spark schema: the table's columns (timestamps without a zone, as the table
    reads), ``_commit_timestamp`` a TimestampType."""
    return from_arrow_schema(plan.schema, prefer_timestamp_ntz=True)


class AcidChangeFeedReader(DataSourceReader):
    """Reads a planned change feed (planned again if ``DataSource.schema()`` did not run here)."""

    def __init__(self, options: ReadSpec, plan=None):
        self._options = options
        self._plan = plan

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_plan"] = None  # the splits travel in the partitions
        return state

    def partitions(self) -> Sequence[InputPartition]:
        plan = self._plan if self._plan is not None else plan_change_feed(self._options)
        if not plan.splits:
            return [ChangeFeedPartition(plan.context, None)]
        return [ChangeFeedPartition(plan.context, s) for s in plan.splits]

    def read(self, partition: ChangeFeedPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        if partition.split is None:
            return iter(())
        return read_change_split(partition.split, partition.ctx)
