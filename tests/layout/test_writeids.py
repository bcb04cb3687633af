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
