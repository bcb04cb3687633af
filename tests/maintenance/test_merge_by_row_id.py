"""Minor compaction's k-way merge (``compaction_tasks.merge_by_row_id``) against a plain Python
sort: random streams, each in ROW__ID order and cut into random batches, come out as one stream
in Hive's merge order - ROW__ID ascending, currentTransaction descending - holding every event
once, with each stream's events in their order within that stream."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_source.maintenance.compaction_tasks import merge_by_row_id

# Few distinct values, so equal ROW__IDs across streams (an update's delete and insert events,
# a row deleted twice) are common.
_key = st.tuples(st.integers(1, 4), st.integers(0, 2), st.integers(0, 5), st.integers(1, 6))


@st.composite
def _streams(draw):
    streams = []
    for index in range(draw(st.integers(1, 7))):
        events = sorted(draw(st.lists(_key, max_size=25)), key=lambda e: (e[0], e[1], e[2], -e[3]))
        cuts = sorted(draw(st.lists(st.integers(0, len(events)), max_size=4)))
        bounds = [0, *cuts, len(events)]
        batches = [events[lo:hi] for lo, hi in zip(bounds, bounds[1:])]   # empty batches too
        streams.append([[(*e, index, pos) for pos, e in enumerate(batch, start=lo)]
                        for (lo, _), batch in zip(zip(bounds, bounds[1:]), batches)])
    return streams


def _batch(events):
    names = ("originalTransaction", "bucket", "rowId", "currentTransaction", "stream", "position")
    return pa.RecordBatch.from_arrays(
        [pa.array([e[k] for e in events], pa.int64() if k != 1 else pa.int32()) for k in range(6)],
        names=list(names))


@settings(max_examples=300, deadline=None)
@given(_streams())
def test_merge_matches_a_plain_sort(streams):
    everything = [e for stream in streams for batch in stream for e in batch]

    merged = list(merge_by_row_id([iter([_batch(b) for b in stream]) for stream in streams]))

    got = [tuple(row.values()) for batch in merged for row in batch.to_pylist()]
    assert sorted(got) == sorted(everything)
    hive_order = [(e[0], e[1], e[2], -e[3]) for e in got]
    assert hive_order == sorted(hive_order)
    for index in range(len(streams)):
        positions = [e[5] for e in got if e[4] == index]
        assert positions == sorted(positions)
    assert all(batch.num_rows for batch in merged)
