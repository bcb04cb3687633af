"""Directory selection, checked against the rules and worked examples of HIVE_ACID_FORMAT.md 1."""

import json

import pytest

from acid_source.errors import CorruptFileError, NotEnoughHistoryError
from acid_source.layout.acid_state import get_acid_state
from acid_source.layout.writeids import ValidTxnList, ValidWriteIdList
from acid_source.storage import Storage


def make(tmp_path, *names, files=()):
    for n in names:
        (tmp_path / n).mkdir(parents=True)
        (tmp_path / n / "bucket_00000").write_bytes(b"x")
    for f in files:
        (tmp_path / f).write_bytes(b"data")
    return Storage(str(tmp_path))


def state(storage, writeids="", txns=""):
    return get_acid_state(storage, storage.root, ValidWriteIdList.parse(writeids), ValidTxnList.parse(txns))


def names(dirs):
    return [d.parsed.name for d in dirs]


def test_worked_example_of_the_format_doc(tmp_path):
    s = make(tmp_path, "base_0000005", "delete_delta_0000006_0000010_v0000100", "delta_0000006_0000010_v0000100",
             "delta_0000006_0000006_0000", "delta_0000007_0000007_0000", "delta_0000011_0000011_0000",
             "delta_0000012_0000012_0000", "base_0000012_v0000200")
    st = state(s, "default.t:12:11:11:", "300:200:200:")  # compaction txn 200 still open
    assert st.base.parsed.name == "base_0000005"
    assert names(st.deltas) == ["delete_delta_0000006_0000010_v0000100", "delta_0000006_0000010_v0000100",
                                "delta_0000012_0000012_0000"]
    assert {p.rsplit("/", 1)[1] for p in st.obsolete} == {"delta_0000006_0000006_0000", "delta_0000007_0000007_0000"}


def test_compacted_base_is_rejected_above_an_open_write_id(tmp_path):
    s = make(tmp_path, "base_0000005", "base_0000012_v0000100", "delta_0000012_0000012_0000")
    assert state(s, "default.t:12:11:11:").base.parsed.name == "base_0000005"
    assert state(s, "default.t:12:9223372036854775807::").base.parsed.name == "base_0000012_v0000100"


def test_invisible_compaction_is_ignored(tmp_path):
    s = make(tmp_path, "delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "delta_0000001_0000002_v0000050")
    open_compaction = state(s, "", "60:50:50:")
    assert names(open_compaction.deltas) == ["delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
    aborted_compaction = state(s, "", "60:9223372036854775807::50")
    assert [p.rsplit("/", 1)[1] for p in aborted_compaction.aborted] == ["delta_0000001_0000002_v0000050"]
    committed = state(s, "", "60:9223372036854775807::")
    assert names(committed.deltas) == ["delta_0000001_0000002_v0000050"]


def test_multi_statement_transaction_keeps_every_statement(tmp_path):
    s = make(tmp_path, "delta_0000007_0000007_0000", "delta_0000007_0000007_0001", "delete_delta_0000007_0000007_0001")
    assert names(state(s).deltas) == ["delta_0000007_0000007_0000", "delete_delta_0000007_0000007_0001",
                                      "delta_0000007_0000007_0001"]


def test_aborted_and_open_deltas(tmp_path):
    s = make(tmp_path, "delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "delta_0000003_0000003_0000")
    st = state(s, "default.t:3:3:3:2")
    assert names(st.deltas) == ["delta_0000001_0000001_0000"]
    assert [p.rsplit("/", 1)[1] for p in st.aborted] == ["delta_0000002_0000002_0000"]


def test_insert_overwrite_base_needs_a_committed_write_id(tmp_path):
    s = make(tmp_path, "delta_0000001_0000001_0000", "base_0000002")
    assert state(s, "default.t:2:2:2:").base is None  # overwrite still running
    assert state(s, "default.t:2:9223372036854775807::2").base is None  # aborted overwrite
    assert state(s, "default.t:2:9223372036854775807::").base.parsed.name == "base_0000002"


def test_base_without_suffix_marked_compacted_by_metadata(tmp_path):
    s = make(tmp_path, "base_0000003", "delta_0000004_0000004_0000")
    (tmp_path / "base_0000003" / "_metadata_acid").write_text(json.dumps(
        {"thisFileVersion": "0", "dataFormat": "compacted"}))
    with pytest.raises(NotEnoughHistoryError, match="ACID_NOT_ENOUGH_HISTORY"):
        state(s, "default.t:4:2:2:")


def test_originals_are_used_only_without_a_base(tmp_path):
    s = make(tmp_path, files=["000000_0", "000000_0_copy_10", "000000_0_copy_2"])
    (tmp_path / "HIVE_UNION_SUBDIR_1").mkdir()
    (tmp_path / "HIVE_UNION_SUBDIR_1" / "000001_0").write_bytes(b"d")
    (tmp_path / "_SUCCESS").write_bytes(b"")
    st = state(s)
    # full-path string order, so copy_10 sorts before copy_2 (HIVE_ACID_FORMAT.md 9.12)
    assert [e.path.split(str(tmp_path))[1] for e in st.originals] == [
        "/000000_0", "/000000_0_copy_10", "/000000_0_copy_2", "/HIVE_UNION_SUBDIR_1/000001_0"]
    (tmp_path / "base_0000001").mkdir()
    assert state(s).originals == []


@pytest.mark.parametrize("bad", ["delta_abc", "base_-1", "delta_0000005_0000003", "delete_delta_x", "base_",
                                 "delta_0000001_0000001_0000_0000", "base_0000001_v", "base_٣",
                                 "delta_99999999999999999999_99999999999999999999"])
def test_unparsable_acid_directory_names_are_corrupt_not_originals(tmp_path, bad):
    # read as pre-ACID originals, the ACID files inside would come back as plain (duplicate) rows
    s = make(tmp_path, "delta_0000001_0000001_0000", bad)
    with pytest.raises(CorruptFileError) as info:
        state(s)
    assert bad in str(info.value) and info.value.path.endswith(bad)


def test_hidden_directories_with_acid_prefixes_stay_ignored(tmp_path):
    s = make(tmp_path, "delta_0000001_0000001_0000", "_tmp.delta_abc", ".base_x", "_delta_zz")
    assert names(state(s).deltas) == ["delta_0000001_0000001_0000"]
