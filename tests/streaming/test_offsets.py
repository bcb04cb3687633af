"""Source offsets are snapshots: every committed write id is delivered exactly once, whatever
order write ids commit in, under read limits and replays (a literal model of the store)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import examples

from acid_source.errors import InvalidOptionError
from acid_source.layout.writeids import ValidWriteIdList
from acid_source.streaming.offsets import StreamOffset, advance, committed_after, delivered_between, offset_of


class Store:
    """Write ids with a state each: the slow literal model."""

    def __init__(self):
        self.state: dict[int, str] = {}

    def allocate(self) -> int:
        w = len(self.state) + 1
        self.state[w] = "open"
        return w

    def snapshot(self) -> ValidWriteIdList:
        hwm = len(self.state)
        open_ids = [w for w, s in self.state.items() if s == "open"]
        aborted = [w for w, s in self.state.items() if s == "aborted"]
        return ValidWriteIdList(hwm, min(open_ids, default=2**63 - 1), open_ids, aborted)

    def committed(self, ids):
        return {w for w in ids if self.state[w] == "committed"}


def test_a_lower_write_id_that_commits_later_is_delivered_later():
    store = Store()
    a, b = store.allocate(), store.allocate()
    store.state[b] = "committed"
    start = StreamOffset(0)
    end = advance(start, store.snapshot())
    assert end == StreamOffset(2, (1,))
    assert delivered_between(start, end, store.committed) == [2]
    store.state[a] = "committed"
    end2 = advance(end, store.snapshot())
    assert end2 == StreamOffset(2, ())
    assert delivered_between(end, end2, store.committed) == [1]
    assert advance(end2, store.snapshot()) == end2  # nothing new: the same offset


def test_aborted_write_ids_are_never_delivered_and_leave_the_offset():
    store = Store()
    a, b = store.allocate(), store.allocate()
    start = advance(StreamOffset(0), store.snapshot())
    assert start == StreamOffset(0)  # nothing committed yet: no new offset
    store.state[a], store.state[b] = "aborted", "committed"
    end = advance(start, store.snapshot())
    assert end == StreamOffset(2, ()) and delivered_between(start, end, store.committed) == [2]


def test_offsets_round_trip_and_foreign_ones_are_typed_errors():
    o = StreamOffset(7, (3, 5), initial=True)
    assert StreamOffset.from_dict(o.to_dict()) == o
    assert offset_of(ValidWriteIdList(9, 4, [4, 8], [6])) == StreamOffset(9, (4, 8))
    for bad in ({"writeId": 3}, {"v": 1, "writeId": "x"}, {"v": 1, "writeId": 3, "pending": [4]}, "nope", {"v": 2}):
        with pytest.raises(InvalidOptionError, match="checkpointLocation"):
            StreamOffset.from_dict(bad)


def test_limits_take_the_lowest_committed_write_ids_first():
    store = Store()
    ids = [store.allocate() for _ in range(6)]
    for w in (1, 3, 4, 6):
        store.state[w] = "committed"
    snap = store.snapshot()
    assert committed_after(StreamOffset(0), snap) == [1, 3, 4, 6]
    first = advance(StreamOffset(0), snap, max_write_ids=2)
    assert first == StreamOffset(3, (2,))
    assert delivered_between(StreamOffset(0), first, store.committed) == [1, 3]
    rows = {1: 5, 3: 5, 4: 5, 6: 5}
    second = advance(first, snap, max_rows=7, rows_of=lambda ws: [rows[w] for w in ws])
    assert second == StreamOffset(6, (2, 5))  # 4 then 6: 10 rows >= 7 after two
    assert delivered_between(first, second, store.committed) == [4, 6]
    assert ids == [1, 2, 3, 4, 5, 6]


events = st.lists(st.one_of(
    st.just(("allocate",)),
    st.tuples(st.just("end"), st.integers(0, 40), st.sampled_from(["committed", "aborted"])),
    st.tuples(st.just("poll"), st.one_of(st.none(), st.integers(1, 3)), st.booleans()),
), max_size=60)


@examples(200)
@given(events)
def test_every_committed_write_id_is_delivered_exactly_once(history):
    store = Store()
    offset = StreamOffset(0)
    delivered: list[int] = []
    for event in history:
        if event[0] == "allocate":
            store.allocate()
        elif event[0] == "end":
            open_ids = [w for w, s in store.state.items() if s == "open"]
            if open_ids:
                store.state[open_ids[event[1] % len(open_ids)]] = event[2]
        else:
            end = advance(offset, store.snapshot(), max_write_ids=event[1])
            got = delivered_between(offset, end, store.committed)
            if event[2]:  # a replay after a restart: the same two offsets, the same write ids
                assert delivered_between(offset, StreamOffset.from_dict(end.to_dict()), store.committed) == got
            delivered += got
            offset = end
    for w, s in store.state.items():
        if s == "open":
            store.state[w] = "committed"
    while True:
        end = advance(offset, store.snapshot())
        if end == offset:
            break
        delivered += delivered_between(offset, end, store.committed)
        offset = end
    assert sorted(delivered) == sorted(w for w, s in store.state.items() if s == "committed")
    assert len(delivered) == len(set(delivered))


def test_a_limited_batch_of_pending_write_ids_never_moves_the_offset_back():
    """Found by the property test: 2 committed and delivered while 1 and 3 were open; both
    commit; a batch limited to one write id takes 1 - and must not deliver 2 again."""
    store = Store()
    for _ in range(3):
        store.allocate()
    store.state[2] = "committed"
    first = advance(StreamOffset(0), store.snapshot())
    assert first == StreamOffset(3, (1, 3)) and delivered_between(StreamOffset(0), first, store.committed) == [2]
    store.state[1] = store.state[3] = "committed"
    second = advance(first, store.snapshot(), max_write_ids=1)
    assert second == StreamOffset(3, (3,))
    assert delivered_between(first, second, store.committed) == [1]
    third = advance(second, store.snapshot(), max_write_ids=1)
    assert third == StreamOffset(3, ()) and delivered_between(second, third, store.committed) == [3]
