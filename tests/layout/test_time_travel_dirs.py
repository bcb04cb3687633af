"""Time travel after compaction: which later compaction outputs serve a past snapshot exactly
(``with_serving_compactions``), and the id-list arithmetic it needs (names only, no files)."""

from __future__ import annotations

from acid_source.layout.acid_state import with_serving_compactions
from acid_source.layout.writeids import IdRanges, ValidTxnList, ValidWriteIdList
from acid_source.storage import FileEntry


def listing(*names):
    return [[FileEntry(f"/t/{n}", n, 0, True) for n in names]]


def test_ranges_minus():
    ranges = IdRanges([(1, 10), (20, 30)])
    assert ranges.minus(IdRanges([(3, 4), (10, 21), (25, 25)])).pairs == ((1, 2), (5, 9), (22, 24), (26, 30))
    assert ranges.minus(IdRanges()).pairs == ranges.pairs
    assert ranges.minus(IdRanges([(0, 100)])).pairs == ()


def test_with_valid_keeps_the_ids_it_passes_over_invisible():
    txns = ValidTxnList(high_watermark=5, min_open=3, open_ids=[3], aborted_ids=[4])
    assert txns.with_valid([]) is txns
    widened = txns.with_valid([9])
    assert [t for t in range(1, 11) if widened.is_txn_valid(t)] == [1, 2, 5, 9]
    assert widened.min_open == 3 and widened.is_txn_aborted(4)
    assert str(txns.with_valid([3])) == "5:9223372036854775807::4"


# the store's snapshot as of version 3 whose commit came before write id 2's (2 open then), and
# now: 1..4 committed, 5 aborted; compaction transaction 9 committed since
AS_OF_3 = ValidWriteIdList(high_watermark=3, min_open=2, open_ids=[2], table_name="d.t")
NOW = ValidWriteIdList(high_watermark=5, aborted_ids=[5], table_name="d.t")
TXNS_AS_OF = ValidTxnList(high_watermark=6)
TXNS_NOW = ValidTxnList(high_watermark=9)


def serve(names, write_ids=AS_OF_3, insert_only=False):
    return with_serving_compactions(listing(*names), write_ids, TXNS_AS_OF, NOW, TXNS_NOW, insert_only=insert_only)


def test_a_minor_output_of_a_full_acid_table_serves_every_version():
    write_ids, txns = serve(["delta_0000001_0000004_v0000009", "delete_delta_0000001_0000004_v0000009"])
    assert write_ids is AS_OF_3  # the reader filters the events of 2 and 4 per row
    assert txns.is_txn_valid(9) and not txns.is_txn_valid(7) and not txns.is_txn_valid(8)


def test_bases_and_insert_only_deltas_serve_only_versions_that_see_all_they_hold():
    assert serve(["base_0000004_v0000009"]) is None  # holds 2 (and 4's deletes)
    assert serve(["delta_0000001_0000004_v0000009"], insert_only=True) is None
    as_of_4 = ValidWriteIdList(high_watermark=4, table_name="d.t")
    assert serve(["base_0000004_v0000009"], write_ids=as_of_4)[0] is as_of_4
    # a base above the version's high watermark over aborted write ids only: raised, 5 aborted
    write_ids, _ = serve(["base_0000005_v0000009"], write_ids=as_of_4)
    assert write_ids.high_watermark == 5 and write_ids.is_write_id_aborted(5) and write_ids.is_valid_base(5)


def test_a_compaction_is_taken_whole_and_only_once_committed():
    # one output that does not serve the version keeps the transaction's other outputs hidden too
    assert serve(["delta_0000001_0000004_v0000009", "base_0000004_v0000009"]) is None
    assert serve(["delta_0000001_0000004_v0000010"]) is None  # transaction 10 not committed now
    assert serve(["delta_0000001_0000001_0000", "base_0000004"]) is None  # no compaction output
