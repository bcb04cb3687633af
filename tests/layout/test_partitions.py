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
