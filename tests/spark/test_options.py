import pytest

from acid_source.errors import InvalidOptionError
from acid_source.spark.options import read_spec, write_spec
from acid_source.values import DEFAULT_MAX_SPLIT_BYTES, parse_size


def test_defaults():
    o = read_spec({"path": "/t"})
    assert o.write_ids is None and o.include_row_id is False and o.table_type == "auto"
    assert o.max_split_bytes == DEFAULT_MAX_SPLIT_BYTES and o.storage_options == ()


def test_keys_are_case_insensitive_as_in_spark():
    o = read_spec({"PATH": "/t", "includerowid": "TRUE", "VALIDWRITEIDS": "d.t:3:9223372036854775807::"})
    assert o.include_row_id and o.write_ids.high_watermark == 3


def test_storage_options_pass_through():
    o = read_spec({"path": "memory://t", "fs.anon": "true"})
    assert o.storage_options == (("anon", "true"),)


@pytest.mark.parametrize("text, size", [("1", 1), ("128m", 128 << 20), ("2G", 2 << 30), ("64kb", 64 << 10)])
def test_sizes(text, size):
    assert parse_size("maxSplitBytes", text) == size


def test_path_is_required():
    with pytest.raises(InvalidOptionError, match="path"):
        read_spec({})


# --- errors name options in their canonical spelling (Spark lower-cases the keys) -----------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from acid_source.errors import InvalidSnapshotError  # noqa: E402
from acid_source.spark.options import READ_OPTIONS, WRITE_OPTIONS  # noqa: E402


@pytest.mark.parametrize("parse, key, canonical", [
    (read_spec, "validwriteid", "validWriteIds"),
    (read_spec, "includerowids", "includeRowId"),
    (read_spec, "maxsplitbyte", "maxSplitBytes"),
    (read_spec, "partitionfilters", "partitionFilter"),
    (write_spec, "compresion", "compression"),
    (write_spec, "partitioncolumn", "partitionColumns"),
    (write_spec, "numbucket", "numBuckets"),
])
def test_unknown_option_suggests_the_closest_known_one(parse, key, canonical):
    with pytest.raises(InvalidOptionError, match=f"did you mean '{canonical}'") as info:
        parse({"path": "/t", key: "x"})
    assert info.value.option == key


def test_unknown_option_without_a_close_match_lists_the_valid_ones():
    with pytest.raises(InvalidOptionError) as info:
        read_spec({"path": "/t", "xyzzy": "1"})
    assert "did you mean" not in str(info.value) and "validWriteIds" in str(info.value)


@pytest.mark.parametrize("parse, key, kind", [
    (write_spec, "validwriteids", "read"), (write_spec, "includerowid", "read"),
    (read_spec, "partitioncolumns", "write"), (read_spec, "compression", "write"),
])
def test_an_option_of_the_other_direction_says_so(parse, key, kind):
    with pytest.raises(InvalidOptionError, match=f"is a {kind} option"):
        parse({"path": "/t", key: "x"})


@pytest.mark.parametrize("key, value, canonical", [
    ("validwriteids", "garbage", "validWriteIds"), ("validtxns", "x", "validTxns"),
    ("includerowid", "maybe", "includeRowId"), ("maxsplitbytes", "lots", "maxSplitBytes"),
    ("tabletype", "delta", "tableType"), ("filterpushdown", "sometimes", "filterPushdown"),
    ("partitionfilter", " ", "partitionFilter"),
])
def test_read_option_errors_use_the_canonical_name(key, value, canonical):
    with pytest.raises((InvalidOptionError, InvalidSnapshotError)) as info:
        read_spec({"path": "/t", key: value})
    assert f"option '{canonical}'" in str(info.value) and info.value.option == canonical


@pytest.mark.parametrize("options, canonical", [
    ({"numbuckets": "many", "bucketcolumns": "id"}, "numBuckets"),
    ({"compression": "gzip"}, "compression"),
    ({"tabletype": "delta"}, "tableType"),
    ({"partitionoverwritemode": "some"}, "partitionOverwriteMode"),
    ({"bucketcolumns": "id"}, "numBuckets"),
    ({"partitioncolumns": "a, A"}, "partitionColumns"),
    ({"partitioncolumns": "day", "bucketcolumns": "DAY", "numbuckets": "2"}, "bucketColumns"),
])
def test_write_option_errors_use_the_canonical_name(options, canonical):
    with pytest.raises(InvalidOptionError) as info:
        write_spec({"path": "/t", **options})
    assert f"option '{canonical}'" in str(info.value) and info.value.option == canonical


def test_an_option_given_twice_in_different_cases_is_an_error():
    with pytest.raises(InvalidOptionError, match="given twice"):
        read_spec({"path": "/t", "includeRowId": "true", "INCLUDEROWID": "false"})


@pytest.mark.parametrize("given, codec", [("ZLIB", "zlib"), ("none", "uncompressed"), ("Uncompressed", "uncompressed"),
                                          ("zstd", "zstd")])
def test_compression_option_accepts_hive_spellings(given, codec):
    assert write_spec({"path": "/t", "compression": given}).compression == codec


# --- fuzz: any dict of strings parses or raises one of the two option errors ----------------

_KEYS = st.one_of(
    st.sampled_from(sorted({k for k in READ_OPTIONS} | {k for k in WRITE_OPTIONS}
                           | {k.lower() for k in READ_OPTIONS} | {"fs.anon", "FS.key"})),
    st.text(max_size=12),
)
_VALUES = st.one_of(
    st.text(max_size=30),
    st.text(alphabet="0123456789:,.-_ abcdefghijklmnopqrstuvwxyzT+Z$/=", max_size=40),
    st.sampled_from(["true", "false", "128m", "0", "-1", "9" * 30, "1e400", "nan", "d.t:5:9223372036854775807::",
                     "txn$d.t:5:1:2:3", "5:1::", "2026-11-21", "0001-01-01T00:00:00+14:00", "auto", "dynamic",
                     "insert_only", "none", "lzo", "a,b,a", "", "inf", "-nan", "9" * 5000,
                     "d.t:" + "9" * 5000 + ":1::"]),
)
_OPTIONS = st.dictionaries(_KEYS, _VALUES, max_size=6)
_NASTY = ["", " ", "x", "-1", "0", "9" * 5000, "1e400", "inf", "nan", "\x00", "ß", "\u0661\u0662", "d.t:1:1::",
          "d.t:" + "9" * 5000 + ":1::", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "a,b,a", "a=1/../b"]


@pytest.mark.parametrize("parse, known",
                         [(read_spec, READ_OPTIONS), (write_spec, WRITE_OPTIONS)],
                         ids=["read", "write"])
def test_every_known_option_with_nasty_values_raises_only_option_errors(parse, known):
    for key in known:
        for value in _NASTY:
            try:
                parse({"path": "/t", key.lower(): value})
            except (InvalidOptionError, InvalidSnapshotError):
                pass


@pytest.mark.parametrize("parse", [read_spec, write_spec], ids=["read", "write"])
@settings(max_examples=200, deadline=None)
@given(options=_OPTIONS, path=st.one_of(st.just("/t"), st.text(max_size=10)))
def test_parse_raises_only_option_errors(parse, options, path):
    try:
        parse({"path": path, **options})
    except (InvalidOptionError, InvalidSnapshotError):
        pass


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity"])
def test_time_travel_needs_a_finite_time(value):
    with pytest.raises(InvalidOptionError, match="finite"):
        read_spec({"path": "/t", "timestampasof": value})


def test_a_size_with_thousands_of_digits_is_an_option_error():
    with pytest.raises(InvalidOptionError, match="maxSplitBytes"):
        read_spec({"path": "/t", "maxsplitbytes": "9" * 5000})


def test_the_spark_edge_reports_a_core_argument_of_an_options_name_as_that_option():
    """The core names the values it checks as arguments; where Spark's options gave them, the
    edge (spark.options.option_errors) reports the option of that name, message unchanged."""
    import pyarrow as pa

    from acid_source.errors import InvalidArgumentError
    from acid_source.expressions import parse_condition
    from acid_source.spark.options import option_errors, with_option_errors

    schema = pa.schema([("id", pa.int64())])
    with pytest.raises(InvalidArgumentError) as core:
        parse_condition("id = = 1", schema, argument="rowFilter")
    with pytest.raises(InvalidOptionError) as edge, option_errors():
        parse_condition("id = = 1", schema, argument="rowfilter")  # any case: Spark lower-cases options
    assert (edge.value.option, edge.value.detail) == ("rowFilter", core.value.detail)
    assert str(edge.value) == str(core.value).replace("argument 'rowFilter'", "option 'rowFilter'")
    with pytest.raises(InvalidArgumentError, match="argument 'condition'"), option_errors():
        parse_condition("id = = 1", schema, argument="condition")  # not an option: unchanged

    @with_option_errors
    def rows():  # a Spark task's read: errors raised while iterating count too
        yield 1
        raise InvalidArgumentError("partition", "no such partition column")

    with pytest.raises(InvalidOptionError, match="option 'partition': no such partition column"):
        list(rows())
    with pytest.raises(InvalidOptionError, match="maxSplitBytes"):
        read_spec({"path": "/t", "maxSplitBytes": "lots"})  # the value parsers are shared with the API
