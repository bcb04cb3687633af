"""Which write ids a listing holds (the proof a listing is complete), against a literal model."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from properties import examples

from acid_source.layout.coverage import Holder, base_floor, unheld, visible_holders
from acid_source.layout.writeids import ValidTxnList, ValidWriteIdList
from acid_source.storage import FileEntry


def entry(name: str, is_dir: bool = True) -> FileEntry:
    return FileEntry(f"/t/{name}", name, 0, is_dir)


ranges = st.lists(st.tuples(st.integers(1, 40), st.integers(0, 12)).map(lambda t: Holder("d", t[0], t[0] + t[1])),
                  max_size=8)


@examples(200)
@given(holders=ranges, wanted=st.lists(st.integers(1, 60), max_size=30))
def test_unheld_is_what_no_range_contains(holders, wanted):
    model = sorted({w for w in wanted if not any(h.lo <= w <= h.hi for h in holders)})
    assert unheld(wanted, holders) == model


def test_a_base_holds_everything_up_to_its_write_id():
    assert unheld([1, 5, 6], [Holder("base_5", 1, 5)]) == [6]
    assert base_floor([Holder("base_5", 1, 5), Holder("delta_6_6", 6, 6), Holder("base_3", 1, 3)]) == 5
    assert base_floor([Holder("delta_1_4", 1, 4)]) == 4  # a delta from 1 holds the same
    assert base_floor([Holder("delta_2_4", 2, 4)]) == 0


def test_only_directories_the_snapshot_may_use_hold_anything():
    write_ids = ValidWriteIdList(high_watermark=9, open_ids=[7], aborted_ids=[8])
    txns = ValidTxnList(high_watermark=100, open_ids=[50], aborted_ids=[60])
    listing = [
        entry("delta_0000001_0000001_0000"),
        entry("delete_delta_0000002_0000002_0000"),
        entry("delta_0000001_0000004_v0000050"),  # a running compaction's output
        entry("base_0000006_v0000060"),  # an aborted compaction's output
        entry("base_0000007"),  # an overwrite still open
        entry("base_0000008"),  # an aborted overwrite
        entry("delta_0000008_0000008_0000"),  # an aborted append
        entry("base_0000003_v0000040"),  # a committed compaction's output
        entry("_tmp_delta_0000009_0000009_0000"),  # hidden
        entry("delta_0000009_0000009_0000", is_dir=False),  # a file, not a directory
        entry("p=1"),  # not an ACID directory
    ]
    held = sorted((h.name, h.lo, h.hi) for h in visible_holders(listing, write_ids, txns))
    assert held == [("base_0000003_v0000040", 1, 3), ("delete_delta_0000002_0000002_0000", 2, 2),
                    ("delta_0000001_0000001_0000", 1, 1)]
