from acid_source.layout.partitions import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    parse_partition_segment,
    partition_segment,
    unescape_path_name,
)


def test_escaping_follows_hive():
    assert escape_path_name("a/b:c=d") == "a%2Fb%3Ac%3Dd"
    assert escape_path_name("x y-z_+,}") == "x y-z_+,}"
    assert escape_path_name("%") == "%25"
    assert escape_path_name("\x01") == "%01"
    assert escape_path_name("é") == "é"


def test_unescape_round_trip_and_lenience():
    for value in ["a/b:c=d", "100%", "#[x]^", "plain"]:
        assert unescape_path_name(escape_path_name(value)) == value
    assert unescape_path_name("50%zz") == "50%zz"  # not an escape: kept verbatim


def test_segments_and_default_partition():
    assert partition_segment("DS", "2024/01") == "ds=2024%2F01"
    assert partition_segment("ds", None) == f"ds={DEFAULT_PARTITION_NAME}"
    assert parse_partition_segment(f"ds={DEFAULT_PARTITION_NAME}") == ("ds", None)
    assert parse_partition_segment("ds=a%3Db") == ("ds", "a=b")
    assert parse_partition_segment("delta_0000001_0000001_0000") is None


# --- issue 6: values that cannot be a directory name -----------------------------------------

import pytest  # noqa: E402
from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from acid_source.errors import SchemaError  # noqa: E402
from acid_source.write.rows import partition_path  # noqa: E402


def test_a_value_longer_than_a_file_name_is_a_schema_error():
    with pytest.raises(SchemaError, match="region") as info:
        partition_path(["day", "region"], ("2024-01-01", "é" * 200))  # 400 bytes of UTF-8
    assert "éééé" in str(info.value) and "255" in str(info.value)
    assert partition_segment("region", "x" * 248) == "region=" + "x" * 248  # exactly 255 bytes
    with pytest.raises(SchemaError):
        partition_segment("region", "/" * 84)  # 3 bytes each once escaped


def test_the_default_partition_name_as_a_value_is_refused():
    # written as-is it would read back as NULL
    with pytest.raises(SchemaError, match=DEFAULT_PARTITION_NAME):
        partition_path(["region"], (DEFAULT_PARTITION_NAME,))
    assert partition_path(["region"], (None,)) == f"region={DEFAULT_PARTITION_NAME}"


@pytest.mark.parametrize("column", ["", "_hidden", ".x", "\ud800"])
def test_column_names_that_cannot_name_a_visible_directory(column):
    with pytest.raises(SchemaError):
        partition_segment(column, "v")


def test_values_that_are_not_unicode_text():
    with pytest.raises(SchemaError, match="region"):
        partition_segment("region", "a\udcff")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=20), st.one_of(st.none(), st.text(max_size=80))),
                min_size=1, max_size=3))
@example([("..", ".."), ("/", "/"), (".", "\x00"), ("a/../b", "../../etc")])
def test_partition_paths_never_leave_the_table_and_read_back(pairs):
    columns = [c for c, _ in pairs]
    values = tuple(v for _, v in pairs)
    try:
        path = partition_path(columns, values)
    except SchemaError:
        return
    segments = path.split("/")
    assert len(segments) == len(pairs)
    for segment, column, value in zip(segments, columns, values):
        assert segment not in ("", ".", "..") and "\x00" not in segment and "\\" not in segment
        assert not segment.startswith((".", "_")) and len(segment.encode("utf-8")) <= 255
        expected = None if value in (None, "") else value
        assert parse_partition_segment(segment) == (column.lower(), expected)
