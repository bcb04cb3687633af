import pytest

from acid_source.errors import InvalidOptionError
from acid_source.options import DEFAULT_MAX_SPLIT_BYTES, ReadOptions, parse_size


def test_defaults():
    o = ReadOptions.parse({"path": "/t"})
    assert o.write_ids is None and o.include_row_id is False and o.table_type == "auto"
    assert o.max_split_bytes == DEFAULT_MAX_SPLIT_BYTES and o.storage_options == ()


def test_keys_are_case_insensitive_as_in_spark():
    o = ReadOptions.parse({"PATH": "/t", "includerowid": "TRUE", "VALIDWRITEIDS": "d.t:3:9223372036854775807::"})
    assert o.include_row_id and o.write_ids.high_watermark == 3


def test_storage_options_pass_through():
    o = ReadOptions.parse({"path": "memory://t", "fs.anon": "true"})
    assert o.storage_options == (("anon", "true"),)


@pytest.mark.parametrize("text, size", [("1", 1), ("128m", 128 << 20), ("2G", 2 << 30), ("64kb", 64 << 10)])
def test_sizes(text, size):
    assert parse_size("maxSplitBytes", text) == size


def test_path_is_required():
    with pytest.raises(InvalidOptionError, match="path"):
        ReadOptions.parse({})
