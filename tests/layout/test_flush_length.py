"""``_flush_length`` side files of streaming deltas (HIVE_ACID_FORMAT.md 3.4)."""

import struct

import pytest

from acid_source.errors import CorruptFileError
from acid_source.orc.files import read_flush_length
from acid_source.storage import Storage


def side_file(tmp_path, *values, tail=b""):
    (tmp_path / "bucket_00000").write_bytes(b"x" * 100)
    path = tmp_path / "bucket_00000_flush_length"
    path.write_bytes(b"".join(struct.pack(">q", v) for v in values) + tail)
    return Storage(str(tmp_path)), str(path)


def test_last_complete_value_wins_and_a_partial_tail_is_ignored(tmp_path):
    storage, path = side_file(tmp_path, 0, 40, 77, tail=b"\x00\x01")
    assert read_flush_length(storage, path) == 77
    assert read_flush_length(storage, path, data_size=100) == 77


def test_nothing_flushed_yet(tmp_path):
    storage, path = side_file(tmp_path, tail=b"\x00\x00\x00")
    assert read_flush_length(storage, path) == 0


def test_negative_length_is_corrupt_not_nothing_flushed(tmp_path):
    # taken as "nothing flushed", the committed rows of the file were silently dropped
    storage, path = side_file(tmp_path, 0, 40, -5)
    with pytest.raises(CorruptFileError, match="negative") as info:
        read_flush_length(storage, path)
    assert info.value.path == path


def test_length_beyond_the_data_file_is_corrupt(tmp_path):
    storage, path = side_file(tmp_path, 0, 101)
    with pytest.raises(CorruptFileError, match="101") as info:
        read_flush_length(storage, path, data_size=100)
    assert info.value.path == path


def test_side_file_removed_by_a_clean_close_means_the_whole_file(tmp_path):
    # a streaming writer deletes the side file when it closes: everything in the file is committed
    storage, path = side_file(tmp_path, 0, 40)
    (tmp_path / "bucket_00000_flush_length").unlink()
    assert read_flush_length(storage, path) == 100
    (tmp_path / "bucket_00000").unlink()
    with pytest.raises(CorruptFileError, match="vanished"):
        read_flush_length(storage, path)


def test_a_read_of_a_file_shorter_than_its_flush_length_is_corrupt(tmp_path):
    # the committed prefix must exist when the file is opened; the listing's size may lag
    storage, _ = side_file(tmp_path, 0, 150)
    with pytest.raises(CorruptFileError, match="150"):
        storage.open_input(str(tmp_path / "bucket_00000"), length=150)
    assert storage.open_input(str(tmp_path / "bucket_00000"), length=40).size() == 40
