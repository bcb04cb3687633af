import pytest

from acid_source.errors import InvalidSnapshotError
from acid_source.layout.writeids import LONG_MAX, RangeResponse, ValidTxnList, ValidWriteIdList


def test_parse_and_serialize_round_trip():
    text = "default.t:10:7:7,9:8"
    wl = ValidWriteIdList.parse(text)
    assert wl.table_name == "default.t"
    assert wl.high_watermark == 10 and wl.min_open == 7
    assert wl.open_ids == (7, 9) and wl.aborted_ids == (8,)
    assert str(wl) == text


@pytest.mark.parametrize("text", ["default.t:10:9223372036854775807::", "default.t:10:9223372036854775807:",
                                  "default.t:10:9223372036854775807"])
def test_trailing_empty_fields_are_optional(text):
    wl = ValidWriteIdList.parse(text)
    assert wl.high_watermark == 10 and wl.min_open_id is None
    assert str(wl) == "default.t:10:9223372036854775807::"


def test_null_table_name_and_empty_string():
    assert ValidWriteIdList.parse("null:3:9223372036854775807::").table_name is None
    everything = ValidWriteIdList.parse("")
    assert everything.high_watermark == LONG_MAX and everything.is_write_id_valid(10**12)


def test_validity_rules_from_hive():
    wl = ValidWriteIdList.parse("default.t:10:7:7,9:8")
    assert [w for w in range(1, 13) if wl.is_write_id_valid(w)] == [1, 2, 3, 4, 5, 6, 10]
    assert wl.is_write_id_aborted(8) and not wl.is_write_id_aborted(7)
    # the worked example of HIVE_ACID_FORMAT.md 2.1: 2 above hwm + 3 exceptions of 8
    assert wl.is_write_id_range_valid(5, 12) is RangeResponse.SOME
    assert wl.is_write_id_range_valid(1, 6) is RangeResponse.ALL
    assert wl.is_write_id_range_valid(11, 12) is RangeResponse.NONE
    assert wl.is_write_id_range_valid(7, 9) is RangeResponse.NONE
    assert wl.is_write_id_range_aborted(8, 8) is RangeResponse.ALL
    assert wl.is_write_id_range_aborted(7, 8) is RangeResponse.SOME
    assert wl.is_write_id_range_aborted(1, 6) is RangeResponse.NONE
    assert wl.is_valid_base(6) and not wl.is_valid_base(7)


def test_txn_write_id_list_with_one_table_is_accepted():
    wl = ValidWriteIdList.parse("42$default.t:5:9223372036854775807::")
    assert wl.table_name == "default.t" and wl.high_watermark == 5


def test_txn_list_ranges_are_expanded():
    # Hive 4 writes runs of five or more ids as lo-hi (HIVE_ACID_FORMAT.md 2.3)
    tl = ValidTxnList.parse("100:90:90-99,120:105")
    assert tl.open_ids == tuple(range(90, 100)) + (120,)
    assert tl.aborted_ids == (105,)
    assert not tl.is_txn_valid(95) and tl.is_txn_valid(100) and not tl.is_txn_valid(101)
    assert tl.is_txn_aborted(105) and not tl.is_txn_aborted(95)
    assert str(ValidTxnList.parse("7:9223372036854775807::")) == "7:9223372036854775807::"


@pytest.mark.parametrize("text, fragment", [
    ("default.t:x:1::", "integers"),
    ("default.t:5", "expected"),
    ("default.t:5:9223372036854775807:a::", "bad id"),
    ("default.t:5:3:3:3", "both"),
    ("default.t:5:9223372036854775807:3-1:", "empty range"),
])
def test_malformed_lists_raise_typed_errors(text, fragment):
    with pytest.raises(InvalidSnapshotError, match=fragment) as info:
        ValidWriteIdList.parse(text, option="validWriteIds")
    assert "validWriteIds" in str(info.value)
    assert isinstance(info.value, ValueError)


# --- issue 6: ranges, bounds and typed errors -----------------------------------------------

def test_huge_open_range_is_kept_as_one_range():
    wl = ValidWriteIdList.parse("t:2000000000:1:1-2000000000:")
    assert wl.open_ranges == ((1, 2000000000),) and wl.aborted_ranges == ()
    assert not wl.is_write_id_valid(1) and not wl.is_write_id_valid(1999999999)
    assert wl.is_write_id_valid(0)
    assert wl.is_write_id_range_valid(5, 10) is RangeResponse.NONE
    assert str(wl) == "t:2000000000:1:1-2000000000:"


def test_a_million_open_ids_serialize_compactly():
    wl = ValidWriteIdList.parse("t:2000000:1:1-1000000:")
    assert len(str(wl)) < 40
    built = ValidWriteIdList(high_watermark=2000000, min_open=1, open_ids=range(1, 1000001), table_name="t")
    assert built == wl and str(built) == str(wl)


def test_runs_follow_hive4_min_range_length():
    # Hive 4 writes runs of five or more ids as lo-hi, shorter runs id by id
    tl = ValidTxnList(high_watermark=30, min_open=1, open_ids=[1, 2, 3, 4, 10, 11, 12, 13, 14, 20],
                      aborted_ids=[25, 26])
    assert str(tl) == "30:1:1,2,3,4,10-14,20:25,26"
    assert ValidTxnList.parse(str(tl)) == tl
    assert tl.open_ranges == ((1, 4), (10, 14), (20, 20)) and tl.aborted_ranges == ((25, 26),)


def test_build_from_ranges():
    wl = ValidWriteIdList(high_watermark=100, min_open=5, open_ranges=[(5, 9), (50, 60)],
                          aborted_ranges=[(20, 20)], table_name="db.t")
    assert wl == ValidWriteIdList.parse("db.t:100:5:5-9,50-60:20")
    assert wl.open_ids == (5, 6, 7, 8, 9) + tuple(range(50, 61)) and wl.aborted_ids == (20,)
    assert wl.is_write_id_aborted(20) and not wl.is_write_id_aborted(21)
    assert wl.is_write_id_range_aborted(19, 21) is RangeResponse.SOME


def test_listing_a_huge_range_as_ids_is_refused():
    wl = ValidWriteIdList.parse("t:2000000000:1:1-2000000000:")
    with pytest.raises(InvalidSnapshotError, match="open_ranges"):
        wl.open_ids  # noqa: B018


@pytest.mark.parametrize("text", [
    "t:9223372036854775808:1::",  # hwm above Long.MAX
    "t:5:-9223372036854775809::",
    "t:5:1:9223372036854775808:",
    "t:5:1::1-99999999999999999999",
    "t: :1::", "t:5: ::", "t::1::", "t:5::1:", ":::", "t:5:1:1,,2:", "t:5:1:٣:", "t:5:1:1_000:",
    "t:5:1:--3:", "t:5:1:3-:", "t:5:1:-:",
])
def test_out_of_range_and_malformed_fields_raise_typed_errors(text):
    with pytest.raises(InvalidSnapshotError):
        ValidWriteIdList.parse(text)


def test_constructor_rejects_overlap_and_out_of_range_ids():
    from acid_source.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="aborted"):
        ValidWriteIdList(high_watermark=10, min_open=3, open_ids=[3, 4], aborted_ids=[4])
    with pytest.raises(InvalidArgumentError, match="open_ids"):
        ValidWriteIdList(high_watermark=10, min_open=3, open_ids=[2**63])
    with pytest.raises(InvalidArgumentError, match="open_ranges"):
        ValidWriteIdList(high_watermark=10, open_ranges=[(5, 3)])


def test_valid_mask_is_vectorized_is_write_id_valid():
    import numpy as np

    from acid_source.scan.visibility import valid_write_id_mask

    wl = ValidWriteIdList.parse("t:1000:3:3,7-20,500:8000000000")
    ids = np.array([-1, 0, 2, 3, 4, 6, 7, 15, 20, 21, 499, 500, 501, 1000, 1001, LONG_MAX], dtype=np.int64)
    expected = np.array([wl.is_write_id_valid(int(i)) for i in ids])
    assert (wl.valid_mask(ids) == expected).all()
    assert (valid_write_id_mask(wl, ids) == expected).all()
    huge = ValidWriteIdList.parse("t:2000000000:1:1-2000000000:")
    assert huge.valid_mask(np.array([0, 1, 2000000000], dtype=np.int64)).tolist() == [True, False, False]


def test_snapshots_pickle_and_hash():
    import pickle

    wl = ValidWriteIdList.parse("db.t:10:7:7,9:8")
    assert pickle.loads(pickle.dumps(wl)) == wl and hash(pickle.loads(pickle.dumps(wl))) == hash(wl)
    assert wl != ValidTxnList.parse("10:7:7,9:8")
