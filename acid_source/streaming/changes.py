"""The change feed from plain Python: ``AcidTable.changes(startingVersion=a, endingVersion=b)``.

Delta Lake's change data feed is the model for names and columns: the table's columns plus
``_change_type`` (``insert`` / ``delete``), ``_commit_version`` (the write id) and
``_commit_timestamp`` (when the store recorded the commit, UTC). Only committed write ids
appear; aborted and open ones never do.

An UPDATE appears as a ``delete`` of the old row and an ``insert`` of the new one with the
same ``_commit_version``: Hive's split update writes a delete event and a new insert event
(with a new ROW__ID) and keeps no link between the two, so neither does the feed (Delta's
``update_preimage`` / ``update_postimage`` pairs cannot be told apart from a delete and an
insert in one commit). A MERGE's updates look the same; its deletes and inserts are plain
deletes and inserts. A row moved to another partition or bucket by an UPDATE is a delete in
the old place and an insert in the new one.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from ..errors import InvalidArgumentError
from ..values import check_change_range, parse_timestamp, parse_version
from .change_plan import ChangePlan, plan_change_range
from .change_reader import read_change_split


class AcidChanges:
    """The change rows of a planned change feed. Iterating reads the delta files; memory stays
    bounded by a stripe plus one bucket's delete events (``toBatches``)."""

    def __init__(self, plan: ChangePlan):
        self._plan = plan
        self.schema: pa.Schema = plan.schema

    @property
    def writeIds(self) -> list[int]:
        """The committed write ids whose changes these are."""
        return list(self._plan.write_ids)

    @property
    def dmlWriteIds(self) -> list[int]:
        """Those of them that deleted rows (UPDATE, DELETE, MERGE)."""
        return list(self._plan.dml_write_ids)

    def toBatches(self) -> Iterator[pa.RecordBatch]:
        for split in self._plan.splits:
            yield from read_change_split(split, self._plan.context)

    def toArrow(self) -> pa.Table:
        return pa.Table.from_batches(list(self.toBatches()), schema=self.schema)

    def count(self) -> int:
        return sum(b.num_rows for b in self.toBatches())

    def __repr__(self) -> str:
        return f"AcidChanges({self._plan.location!r}, writeIds={self.writeIds})"


def table_changes(location: str, *, startingVersion=None, endingVersion=None, startingTimestamp=None,
                  endingTimestamp=None, metastore_url: str | None = None, storage_options: tuple = ()) -> AcidChanges:
    """:meth:`AcidTable.changes`: the arguments checked (InvalidArgumentError), then planned."""
    versions = [_argument(parse_version, name, value) for name, value in
                (("startingVersion", startingVersion), ("endingVersion", endingVersion))]
    times = [_argument(parse_timestamp, name, value) for name, value in
             (("startingTimestamp", startingTimestamp), ("endingTimestamp", endingTimestamp))]
    check_change_range(versions[0], versions[1], times[0], times[1])
    return AcidChanges(plan_change_range(location, starting_version=versions[0], ending_version=versions[1],
                                         starting_timestamp=times[0], ending_timestamp=times[1],
                                         metastore_url=metastore_url, storage_options=storage_options))


def _argument(parse, name: str, value):
    if value is None:
        return None
    if isinstance(value, bool) or (parse is parse_version and isinstance(value, float)):
        raise InvalidArgumentError(name, f"expected {'a write id' if parse is parse_version else 'a timestamp'}, "
                                         f"got {value!r}")
    return parse(name, value)
