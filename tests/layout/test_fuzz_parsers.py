"""Every parser of names, snapshots and conditions, on generated and arbitrary input: it either
returns a value that round-trips, or raises its typed error - never another exception, never
unbounded time or memory."""

import struct
import time

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from acid_source.errors import CorruptFileError, InvalidArgumentError, InvalidSnapshotError
from acid_source.expressions import parse_partition_filter
from acid_source.layout.names import (
    ACID_DIR_PREFIXES,
    acid_dir_name_problem,
    base_dir_name,
    bucket_file_name,
    delta_dir_name,
    parse_bucket_file,
    parse_dir_name,
)
from acid_source.layout.partitions import escape_path_name, parse_partition_segment, unescape_path_name
from acid_source.layout.writeids import LONG_MAX, LONG_MIN, RangeResponse, ValidTxnList, ValidWriteIdList
from acid_source.orc.files import read_flush_length
from acid_source.scan.planner import partition_may_match
from acid_source.storage import Storage

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ids = st.integers(min_value=0, max_value=LONG_MAX)
# text with the characters these grammars care about, plus anything else
grammar_text = st.text(alphabet=st.sampled_from("0123456789_-:,$v ab\u0663\n") | st.characters(), max_size=60)


# --- directory and file names ---------------------------------------------------------------

@FUZZ
@given(st.sampled_from(ACID_DIR_PREFIXES + ("", "bucket_")).flatmap(lambda p: grammar_text.map(lambda t: p + t)))
@example("base_99999999999999999999")
@example("delta_1_1_99999999999")
@example("delta_1_2_v" + "9" * 5000)
def test_dir_names_parse_or_explain(name):
    parsed, problem = parse_dir_name(name), acid_dir_name_problem(name)
    if not name.startswith(ACID_DIR_PREFIXES):
        assert parsed is None and problem is None
        return
    assert (parsed is None) != (problem is None)
    if parsed is not None:
        assert 0 <= parsed.min_write_id <= parsed.max_write_id <= LONG_MAX
        assert -1 <= parsed.statement_id < 2**31 and 0 <= parsed.visibility_txn_id <= LONG_MAX
    else:
        assert problem.startswith("directory name")


@FUZZ
@given(st.sampled_from(["base", "delta", "delete_delta"]), ids, ids, st.none() | st.integers(0, 2**31 - 1), ids)
def test_generated_dir_names_round_trip(kind, a, b, stmt, visibility):
    lo, hi = min(a, b), max(a, b)
    if kind == "base":
        name, expected = base_dir_name(hi, visibility), (hi, hi, -1)
    else:
        name = delta_dir_name(lo, hi, stmt, visibility, delete=kind == "delete_delta")
        expected = (lo, hi, -1 if stmt is None else stmt)
    parsed = parse_dir_name(name)
    assert (parsed.kind, parsed.min_write_id, parsed.max_write_id, parsed.statement_id) == (kind,) + expected
    assert parsed.visibility_txn_id == visibility


@FUZZ
@given(grammar_text.map(lambda t: "bucket_" + t) | grammar_text)
@example("bucket_99999999999")
@example("0" * 5000 + "_0_copy_" + "9" * 5000)
def test_bucket_file_names_never_raise(name):
    parsed = parse_bucket_file(name)
    assert parsed.bucket_id == -1 or 0 <= parsed.bucket_id < 2**31


@FUZZ
@given(st.integers(0, 2**31 - 1), st.none() | st.integers(0, 10**6))
def test_bucket_file_names_round_trip(bucket, attempt):
    parsed = parse_bucket_file(bucket_file_name(bucket, attempt))
    assert parsed.bucket_id == bucket and parsed.is_acid_name


@FUZZ
@given(st.text(max_size=60))
def test_path_escaping_round_trips(value):
    escaped = escape_path_name(value)
    assert "/" not in escaped and "\x00" not in escaped and unescape_path_name(escaped) == value


@FUZZ
@given(st.text(alphabet=st.sampled_from("%=./_aF0\x00") | st.characters(), max_size=40))
def test_partition_segments_never_raise(segment):
    parsed = parse_partition_segment(segment)
    assert parsed is None or (isinstance(parsed[0], str) and (parsed[1] is None or isinstance(parsed[1], str)))


# --- snapshots ------------------------------------------------------------------------------

@st.composite
def id_lists(draw, cls):
    """A snapshot with runs short and long, near the 64-bit edges too."""
    base = draw(st.sampled_from([0, 1, 2**40, LONG_MAX - 10**6, LONG_MIN]))
    runs = draw(st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 12)), max_size=8))
    taken: set[tuple[int, int]] = set()
    open_ranges, aborted_ranges = [], []
    for (offset, length), aborted in zip(runs, draw(st.lists(st.booleans(), min_size=len(runs),
                                                             max_size=len(runs)))):
        lo, hi = base + offset, min(LONG_MAX, base + offset + length - 1)
        if any(lo <= t_hi and t_lo <= hi for t_lo, t_hi in taken):
            continue
        taken.add((lo, hi))
        (aborted_ranges if aborted else open_ranges).append((lo, hi))
    hwm = draw(st.sampled_from([LONG_MAX, base + 10**6, base + 5]))
    min_open = min((lo for lo, _ in open_ranges), default=LONG_MAX)
    kwargs = dict(high_watermark=hwm, min_open=min_open, open_ranges=open_ranges, aborted_ranges=aborted_ranges)
    if cls is ValidWriteIdList:
        kwargs["table_name"] = draw(st.sampled_from([None, "default.t", "db.weird name"]))
    return cls(**kwargs)


class Model:
    """The rules of HIVE_ACID_FORMAT.md 2.1 over explicit id sets (small lists only)."""

    def __init__(self, snapshot):
        self.hwm = snapshot.high_watermark
        self.open = {i for lo, hi in snapshot.open_ranges for i in range(lo, hi + 1)}
        self.aborted = {i for lo, hi in snapshot.aborted_ranges for i in range(lo, hi + 1)}
        self.exceptions = sorted(self.open | self.aborted)

    def valid(self, i):
        return i <= self.hwm and i not in self.open and i not in self.aborted

    def range_valid(self, lo, hi):
        if lo > self.hwm:
            return RangeResponse.NONE
        if (not self.exceptions or self.exceptions[0] > hi) and hi <= self.hwm:
            return RangeResponse.ALL
        count = max(0, hi - self.hwm) + len([e for e in self.exceptions if lo <= e <= hi])
        return RangeResponse.ALL if count == 0 else RangeResponse.NONE if count == hi - lo + 1 else RangeResponse.SOME

    def range_aborted(self, lo, hi):
        if self.hwm < lo or not self.aborted:
            return RangeResponse.NONE
        count = len([e for e in self.aborted if lo <= e <= hi])
        return RangeResponse.NONE if count == 0 else RangeResponse.ALL if count == hi - lo + 1 else RangeResponse.SOME


@FUZZ
@given(st.sampled_from([ValidWriteIdList, ValidTxnList]).flatmap(id_lists), st.data())
def test_snapshots_round_trip_and_follow_the_rules(snapshot, data):
    cls = type(snapshot)
    text = str(snapshot)
    assert cls.parse(text) == snapshot and str(cls.parse(text)) == text
    assert len(text) < 600  # runs stay runs
    model = Model(snapshot)
    probes = sorted({i for lo, hi in snapshot.open_ranges + snapshot.aborted_ranges for i in (lo - 1, lo, hi, hi + 1)}
                    | {snapshot.high_watermark, snapshot.high_watermark + 1, 0})
    probes = [p for p in probes if LONG_MIN <= p <= LONG_MAX]
    assert snapshot.valid_mask(np.array(probes, dtype=np.int64)).tolist() == [model.valid(p) for p in probes]
    for p in probes:
        assert snapshot.is_valid(p) == model.valid(p)
        assert snapshot.is_aborted(p) == (p in model.aborted)
    for _ in range(10):
        lo = data.draw(st.sampled_from(probes))
        hi = data.draw(st.sampled_from([p for p in probes if p >= lo] + [min(LONG_MAX, lo + 20)]))
        assert snapshot.is_range_valid(lo, hi) is model.range_valid(lo, hi)
        assert snapshot.is_range_aborted(lo, hi) is model.range_aborted(lo, hi)


snapshot_text = st.text(alphabet=st.sampled_from("0123456789-,: $tnul.\u0663_+") | st.characters(), max_size=80)


@FUZZ
@given(snapshot_text)
@example("t:2000000000:1:1-2000000000:")
@example("t:1:1:" + "-" * 3000)
@example("t:1:1:" + "9" * 5000 + ":")
@example("1$a:1:1::$b:2:2::")
def test_arbitrary_snapshot_text_parses_or_raises_typed(text):
    for cls in (ValidWriteIdList, ValidTxnList):
        start = time.monotonic()
        try:
            parsed = cls.parse(text, option="x")
        except InvalidSnapshotError as exc:
            assert "option 'x'" in str(exc)
        else:
            assert cls.parse(str(parsed)) == parsed
        assert time.monotonic() - start < 1.0


# --- partitionFilter ------------------------------------------------------------------------

FIELDS = [pa.field("day", pa.date32()), pa.field("region", pa.string()), pa.field("n", pa.int64()),
          pa.field("d", pa.decimal128(10, 2)), pa.field("ok", pa.bool_())]
sql_alphabet = st.sampled_from(list("()'\"`,=<>!-+*/ ;") + ["AND", "OR", "NOT", "IN", "SELECT", "BETWEEN", "IS",
                                                           "NULL", "n", "region", "day", "d", "1", "'a'",
                                                           "--", "/*", "*/", "\\", "x(", "DATE", "CAST"])
PARTITION = pa.schema(FIELDS)
VALUES = (None, "a", 1, None, True)


def _partition_filter(text):
    return parse_partition_filter(text, PARTITION, PARTITION.names).expression


@FUZZ
@given(st.lists(sql_alphabet, max_size=30).map(" ".join) | st.text(max_size=60))
@example("region IN (SELECT 'a')")
@example("n = 1 OR " * 40 + "(" * 40 + "n = 1" + ")" * 40)
def test_arbitrary_filter_text_parses_or_raises_typed(text):
    start = time.monotonic()
    try:
        condition = _partition_filter(text)
        partition_may_match(condition, FIELDS, VALUES, "partitionFilter")
    except InvalidArgumentError as exc:
        assert exc.argument == "partitionFilter"
    assert time.monotonic() - start < 2.0


conditions = st.recursive(
    st.sampled_from(["n = 1", "region IN ('a', 'b')", "day >= DATE '2024-01-01'", "n BETWEEN -1 AND 3",
                     "region IS NULL", "d < 2.5", "ok = true", "1 < n", "region <> 'x'"]),
    lambda inner: st.one_of(st.tuples(inner, st.sampled_from([" AND ", " OR "]), inner).map("".join),
                            inner.map(lambda c: f"NOT ({c})"), inner.map(lambda c: f"({c})")),
    max_leaves=40,
)


@FUZZ
@given(conditions)
def test_generated_conditions_convert(text):
    try:
        condition = _partition_filter(text)
    except InvalidArgumentError as exc:  # only for nesting beyond the documented bounds
        assert "nested" in str(exc)
        return
    partition_may_match(condition, FIELDS, VALUES, "partitionFilter")


# --- _flush_length side files ---------------------------------------------------------------

@FUZZ
@given(st.binary(max_size=64) | st.lists(st.integers(LONG_MIN, LONG_MAX), max_size=6).map(
    lambda vs: b"".join(struct.pack(">q", v) for v in vs)))
def test_flush_length_of_arbitrary_bytes(tmp_path_factory, data):
    directory = tmp_path_factory.mktemp("flush")
    (directory / "bucket_00000").write_bytes(b"x" * 1000)
    (directory / "bucket_00000_flush_length").write_bytes(data)
    storage = Storage(str(directory))
    try:
        length = read_flush_length(storage, str(directory / "bucket_00000_flush_length"), data_size=1000)
    except CorruptFileError as exc:
        assert exc.path.endswith("bucket_00000_flush_length")
        return
    assert 0 <= length <= 1000
    complete = len(data) // 8
    assert length == (struct.unpack(">q", data[(complete - 1) * 8:complete * 8])[0] if complete else 0)
