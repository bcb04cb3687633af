"""The growing ORC event file of streaming ingest: every footer covers exactly the rows committed
before it, and a copy of the file cut at any recorded flush length is a complete, readable ACID
file (pyarrow, pyorc - ORC's C++ reader -, acidorc's own OrcFile, and Spark's Java ORC reader)."""

from __future__ import annotations

import decimal
import io
import math
import os
import struct

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc
import pyorc
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from interop.conftest import hive4  # noqa: F401  (Hive 4.1's classes, one JVM per session)
from properties import examples

from acid_source.errors import AcidError, InvalidArgumentError, SchemaError, StorageError
from acid_source.orc.files import OrcFile, parse_key_index
from acid_source.orc.growing import GrowingEventFile
from acid_source.storage import Storage

BUCKET = 536936448  # bucket 1, statement 0
ORC_COLUMNS = 22  # root, 5 event columns, row, its 10 fields, the fields inside st (2), l (1) and m (2)

SCHEMA = pa.schema([
    ("i", pa.int32()),
    ("b", pa.int64()),
    ("s", pa.string()),
    ("d", pa.float64()),
    ("dec", pa.decimal128(12, 3)),
    ("day", pa.date32()),
    ("ts", pa.timestamp("us")),
    ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ("l", pa.list_(pa.int64())),
    ("m", pa.map_(pa.string(), pa.int32())),
])


def rows(lo: int, n: int) -> pa.RecordBatch:
    """n rows whose every column is derived from the row's number (so a read can be checked)."""
    k = np.arange(lo, lo + n)
    nulls = k % 11 == 5
    return pa.RecordBatch.from_arrays([
        pa.array(k.astype(np.int32)),
        pa.array(k * 1_000_003, mask=nulls),
        pa.array([f"s{v % 97}-{v}" for v in k]),
        pa.array(k / 7.0),
        pa.array([decimal.Decimal(int(v)).scaleb(-3) for v in k], pa.decimal128(12, 3)),
        pa.array((k % 20000).astype(np.int32), pa.date32()),
        pa.array(k * 1_000_001, pa.timestamp("us")),
        pa.StructArray.from_arrays([pa.array((k * 3).astype(np.int32)), pa.array([str(v) for v in k])],
                                   names=["x", "y"]),
        pa.array([list(range(v % 4)) for v in k], pa.list_(pa.int64())),
        pa.array([{"k": int(v % 5)} for v in k], pa.map_(pa.string(), pa.int32())),
    ], schema=SCHEMA)


class Model:
    """What a reader must see at each flush: the committed events, in file order."""

    def __init__(self):
        self.committed: list[tuple[int, int, int]] = []  # (write id, rowId, value number)
        self.pending: list[tuple[int, int, int]] = []
        self.next_row_id: dict[int, int] = {}

    def write(self, write_id: int, lo: int, n: int) -> None:
        start = self.next_row_id.get(write_id, 0)
        self.pending += [(write_id, start + j, lo + j) for j in range(n)]
        self.next_row_id[write_id] = start + n

    def discard(self, write_id: int) -> None:
        self.pending = [e for e in self.pending if e[0] != write_id]
        self.committed = [e for e in self.committed if e[0] != write_id]

    def commit(self) -> list[tuple[int, int, int]]:
        self.committed += self.pending
        self.pending = []
        return list(self.committed)


def read_events(data: bytes) -> pa.Table:
    return paorc.ORCFile(io.BytesIO(data)).read()


def expected_rows(values: list[int]) -> pa.Table:
    """The rows numbered ``values``, built run by run."""
    runs: list[list[int]] = []
    for v in values:
        if runs and runs[-1][0] + runs[-1][1] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    return pa.Table.from_batches([rows(lo, n) for lo, n in runs], schema=SCHEMA)


def check_cut(tmp_path, data: bytes, expected: list[tuple[int, int, int]], label: str) -> None:
    """A copy cut at a flush length reads exactly ``expected``, by every reader we have."""
    got = read_events(data)
    assert got.column("operation").to_pylist() == [0] * len(expected)
    assert got.column("originalTransaction").to_pylist() == [w for w, _, _ in expected]
    assert got.column("currentTransaction").to_pylist() == [w for w, _, _ in expected]
    assert got.column("bucket").to_pylist() == [BUCKET] * len(expected)
    assert got.column("rowId").to_pylist() == [r for _, r, _ in expected]
    want = expected_rows([v for _, _, v in expected])
    row = got.column("row").combine_chunks()
    for name in SCHEMA.names:
        column = row.field(name)
        if name == "ts":
            column = column.cast(pa.timestamp("us"))
        assert column.to_pylist() == want.column(name).to_pylist(), (label, name)

    # pyorc (ORC's C++ reader): one key-index entry per stripe, the last key of that stripe
    path = tmp_path / f"cut_{label}"
    path.write_bytes(data)
    with open(path, "rb") as fh:
        reader = pyorc.Reader(fh, column_indices=[1, 2, 3])
        meta = reader.user_metadata
        keys = parse_key_index(meta["hive.acid.key.index"].decode())
        assert len(keys) == reader.num_of_stripes
        last = []
        for i in range(reader.num_of_stripes):
            stripe = reader.read_stripe(i)
            stripe.seek(len(stripe) - 1)
            last.append(tuple(next(stripe)))
        assert keys == last
        assert meta["hive.acid.stats"] == f"{len(expected)},0,0".encode()
        assert meta["hive.acid.version"] == b"2"
        assert len(reader) == len(expected)
    # acidorc's own reader metadata agrees
    f = OrcFile(Storage(str(tmp_path)), str(path))
    assert f.is_acid and f.num_rows == len(expected)
    assert f.key_index == keys and f.acid_stats == (len(expected), 0, 0)
    if f.num_stripes:
        assert len(f.stripes) == f.num_stripes
        assert sum(s.rows for s in f.stripes) == len(expected)
        ids = pa.concat_arrays([f.read_stripe(i, ["rowId"]).column(0) for i in range(f.num_stripes)])
        assert ids.to_pylist() == [r for _, r, _ in expected]


def side_lengths(side: bytes) -> list[int]:
    assert len(side) % 8 == 0
    return [struct.unpack(">q", side[i:i + 8])[0] for i in range(0, len(side), 8)]


def history(tmp_path, compression: str, stripe_size: int = 64 * 1024, after_commit=None, shrink: int = 1):
    """A streaming batch of write ids 1..6: an empty flush, a big write id spilled over several
    stripes, an aborted one spilled too, an abort of buffered rows, several flushes of one id.
    ``after_commit(length, committed, aborted)`` runs after each flush, the batch still open, and
    again while uncommitted stripes lie beyond the last length. ``shrink`` divides the row counts
    (for the slower readers)."""
    data_path, side_path = tmp_path / "bucket_00001", tmp_path / "bucket_00001_flush_length"
    model, aborted = Model(), []
    cuts: list[tuple[int, list]] = []
    with open(data_path, "wb") as data, open(side_path, "wb") as side:
        g = GrowingEventFile(data, side, SCHEMA, BUCKET, compression=compression, stripe_size=stripe_size,
                             path=str(data_path))
        assert side_path.read_bytes() == bytes(8)

        def commit():
            cuts.append((g.flush(), model.commit()))
            if after_commit is not None:
                after_commit(*cuts[-1], list(aborted))

        def write(w, lo, n, step=None):
            n, step = max(1, n // shrink), step and max(1, step // shrink)
            for start in range(lo, lo + n, step or n):
                k = min(step or n, lo + n - start)
                g.write(w, rows(start, k))
                model.write(w, start, k)

        commit()  # nothing yet: an empty, valid file
        write(1, 0, 100)
        commit()
        write(2, 1000, 6000, step=700)  # spills several stripes
        commit()
        commit()  # nothing new: the same footer still covers it
        write(3, 10000, 5000, step=1000)  # spilled, then aborted
        data.flush()
        assert data_path.stat().st_size > cuts[-1][0] + 1000
        if after_commit is not None:
            after_commit(*cuts[-1], list(aborted))
        g.discard(3)
        model.discard(3)
        aborted.append(3)
        commit()
        write(4, 20000, 50)
        write(4, 20050, 30)
        commit()
        write(4, 21000, 20)  # the same write id again: rowIds go on
        commit()
        write(5, 30000, 10)  # buffered only, then aborted
        g.discard(5)
        model.discard(5)
        aborted.append(5)
        write(6, 40000, 3000, step=1500)
        commit()
        final = g.close()
        assert g.length == final and g.write_ids == (1, 2, 4, 6) and g.rows == len(model.committed)
    return data_path.read_bytes(), side_path.read_bytes(), cuts, final, model


@pytest.mark.parametrize("compression", ["zlib", "snappy", "none"])
def test_every_flush_length_cuts_a_file_of_exactly_the_committed_rows(tmp_path, compression):
    data, side, cuts, final, model = history(tmp_path, compression)
    lengths = [length for length, _ in cuts]
    assert side_lengths(side) == [0] + lengths
    assert lengths == sorted(lengths) and lengths[2] == lengths[3]  # an empty flush writes no footer
    assert final == len(data) == lengths[-1]  # nothing changed after the last flush
    for i, (length, expected) in enumerate(cuts):
        check_cut(tmp_path, data[:length], expected, f"{compression}{i}")
    # the big write id went into several stripes; the aborted ones are in no footer
    with open(tmp_path / f"cut_{compression}{len(cuts) - 1}", "rb") as fh:
        assert pyorc.Reader(fh).num_of_stripes >= 6
    assert set(read_events(data).column("originalTransaction").to_pylist()) == {1, 2, 4, 6}


def test_the_committed_prefix_reads_in_place_through_a_length(tmp_path):
    """Readers of a batch still open read the file in place, limited to the side file's last
    length (OrcFile's ``length``), with the bytes written since beyond it."""
    data_path = tmp_path / "bucket_00000"
    with open(data_path, "wb") as data:
        g = GrowingEventFile(data, None, SCHEMA, BUCKET, stripe_size=16 * 1024, path=str(data_path))
        g.write(7, rows(0, 500))
        length = g.flush()
        g.write(8, rows(500, 3000))  # spilled, not committed
        assert data_path.stat().st_size > length
        f = OrcFile(Storage(str(tmp_path)), str(data_path), length=length)
        assert f.num_rows == 500 and f.num_stripes > 1 and f.key_index[-1] == (7, BUCKET, 499)
        ids = pa.concat_arrays([f.read_stripe(i, ["rowId"]).column(0) for i in range(f.num_stripes)])
        assert ids.to_pylist() == list(range(500))
        g.close()


def test_close_without_rows_is_a_valid_empty_acid_file(tmp_path):
    path = tmp_path / "bucket_00000"
    with open(path, "wb") as data:
        g = GrowingEventFile(data, None, SCHEMA, BUCKET, path=str(path))
        g.write(3, rows(0, 10))
        g.discard(3)
        assert g.close() == path.stat().st_size
    check_cut(tmp_path, path.read_bytes(), [], "empty")
    with open(path, "rb") as fh:
        assert pyorc.Reader(fh).user_metadata["hive.acid.key.index"] == b""


def test_statistics_cover_the_committed_stripes(tmp_path):
    """File and stripe statistics are merged from the stripes a footer lists (Hive's split
    generation reads them; acidorc uses them to find timestamps beyond pyarrow's range)."""
    path = tmp_path / "bucket_00000"
    with open(path, "wb") as data:
        g = GrowingEventFile(data, None, SCHEMA, BUCKET, stripe_size=8 * 1024, path=str(path))
        g.write(1, rows(100, 2000))
        g.write(2, rows(-50, 10))
        g.discard(2)
        g.write(3, rows(5000, 10))
        g.close()
    # the reference: the same events written by pyarrow in one go (its own statistics merge)
    events = read_events(path.read_bytes())
    events = events.cast(pa.schema([f.with_type(pa.struct([g.with_type(pa.timestamp("us")) if g.name == "ts" else g
                                                             for g in f.type])) if f.name == "row" else f
                                    for f in events.schema]))
    reference = tmp_path / "reference.orc"
    paorc.write_table(events, str(reference), compression="zlib", stripe_size=8 * 1024)
    with open(path, "rb") as fh, open(reference, "rb") as rh:
        r, ref = pyorc.Reader(fh), pyorc.Reader(rh)
        assert r.num_of_stripes > 2 and len(r) == 2010
        for column in range(ORC_COLUMNS):
            got, want = dict(r[column].statistics), dict(ref[column].statistics)
            if "sum" in want and isinstance(want["sum"], float):
                assert got.pop("sum") == pytest.approx(want.pop("sum"))
            assert got == want, column
        row = {name: r.schema.fields["row"].fields[name].column_id for name in SCHEMA.names}
        assert r[row["i"]].statistics["minimum"] == 100 and r[row["i"]].statistics["maximum"] == 5009
        assert r[2].statistics["minimum"] == 1 and r[2].statistics["maximum"] == 3  # write id 2 was aborted
        stripe_ids = [r.read_stripe(k)[row["i"]].statistics for k in range(r.num_of_stripes)]
        assert sum(s["number_of_values"] for s in stripe_ids) == 2010
        assert stripe_ids[-1]["minimum"] == 5000
    assert not OrcFile(Storage(str(tmp_path)), str(path)).has_timestamps_beyond_nanoseconds


EDGES = pa.schema([("big", pa.int64()), ("d", pa.float64()), ("dec", pa.decimal128(38, 0)), ("ts", pa.timestamp("ns")),
                   ("s", pa.string()), ("flag", pa.bool_()), ("bin", pa.binary()), ("late", pa.int32())])


def test_merged_statistics_match_orcs_own_on_edge_values(tmp_path):
    """Sums that overflow only when merged (int64, 38-digit decimals), NaN and infinities, a
    column all null in one stripe, sub-millisecond timestamps on both sides of 1970, long
    strings, booleans, binary: the footer's statistics are what ORC's C++ writer computes for
    the same events written in one go."""
    stripes = [
        {"big": [2**62, 5], "d": [1.0, float("nan")], "dec": [9 * 10**37, 1], "s": ["b" * 3000, "m"],
         "ts": [-1_000_000_001, 5], "flag": [True, False], "bin": [b"xx", None], "late": [None, None]},
        {"big": [2**62, 7], "d": [-float("inf"), 2.5], "dec": [9 * 10**37, -3], "s": ["a", None],
         "ts": [946_684_800_000_000_123, 7], "flag": [True, None], "bin": [b"yyy", b""], "late": [None, 4]},
        {"big": [None, None], "d": [None, None], "dec": [None, None], "s": [None, None],
         "ts": [None, None], "flag": [None, None], "bin": [None, None], "late": [-2, None]},
    ]
    path = tmp_path / "bucket_00000"
    with open(path, "wb") as data:
        g = GrowingEventFile(data, None, EDGES, BUCKET, path=str(path))
        for w, values in enumerate(stripes, start=1):
            g.write(w, pa.record_batch([pa.array(values[f.name], f.type) for f in EDGES], schema=EDGES))
            g.flush()
        g.close()
    events = read_events(path.read_bytes())
    reference = tmp_path / "reference.orc"
    paorc.write_table(events, str(reference), compression="zlib")
    with open(path, "rb") as fh, open(reference, "rb") as rh:
        r, ref = pyorc.Reader(fh), pyorc.Reader(rh)
        assert r.num_of_stripes == 3 and ref.num_of_stripes == 1
        for column in range(7 + len(EDGES)):
            got, want = dict(r[column].statistics), dict(ref[column].statistics)
            if isinstance(want.get("sum"), float):
                a, b = got.pop("sum"), want.pop("sum")
                assert (math.isnan(a) and math.isnan(b)) or a == b, column
            assert got == want, column
        row = {n: r.schema.fields["row"].fields[n].column_id for n in EDGES.names}
        assert "sum" not in r[row["big"]].statistics and "sum" not in r[row["dec"]].statistics  # overflowed
        assert r[row["late"]].statistics["minimum"] == -2 and r[row["late"]].statistics["maximum"] == 4


def test_bad_input_is_a_typed_error_naming_the_file(tmp_path):
    path = tmp_path / "bucket_00000"
    with open(path, "wb") as data:
        g = GrowingEventFile(data, None, SCHEMA, BUCKET, path=str(path))
        g.write(5, rows(0, 3))
        with pytest.raises(InvalidArgumentError, match="bucket_00000"):
            g.write(4, rows(0, 3))
        g.discard(5)
        with pytest.raises(InvalidArgumentError, match="bucket_00000"):
            g.write(5, rows(0, 3))
        with pytest.raises(SchemaError, match="bucket_00000"):
            g.write(6, pa.record_batch({"other": [1]}))
        with pytest.raises(SchemaError, match="bucket_00000"):
            g.write(6, rows(0, 2).select(["b", "i"]))
        with pytest.raises(InvalidArgumentError):
            g.write(-1, rows(0, 1))
        g.write(6, pa.Table.from_batches([rows(0, 2)]).cast(SCHEMA.set(0, pa.field("i", pa.int64()))))
        g.close()
        for call in (lambda: g.write(7, rows(0, 1)), g.flush, lambda: g.discard(6)):
            with pytest.raises(StorageError, match="bucket_00000"):
                call()
    with pytest.raises(InvalidArgumentError):
        GrowingEventFile(io.BytesIO(), None, SCHEMA, BUCKET, compression="lzo")
    assert issubclass(StorageError, AcidError)
    assert read_events(path.read_bytes()).column("currentTransaction").to_pylist() == [6, 6]


class FullDisk(io.BytesIO):
    """A data file on a disk that fills up after ``room`` bytes (what the OS reports then)."""

    def __init__(self, room: int):
        super().__init__()
        self.room = room

    def write(self, b) -> int:
        if self.tell() + len(b) > self.room:
            raise OSError(28, "No space left on device")
        return super().write(b)


def test_a_failed_write_stops_the_file_and_keeps_the_flushed_prefix(tmp_path):
    """After an I/O failure half-way the file's tail is unknown: every later write, flush or
    close is a StorageError (a later footer could point at the wrong bytes); the last flushed
    length still cuts a file of exactly the committed rows, and an abort is still possible."""
    data, side = FullDisk(room=60_000), io.BytesIO()
    g = GrowingEventFile(data, side, SCHEMA, BUCKET, stripe_size=8 * 1024, path="t/delta_1_2/bucket_00001")
    g.write(1, rows(0, 100))
    committed = g.flush()
    with pytest.raises(StorageError, match="bucket_00001.*No space left"):
        g.write(2, rows(100, 5000))
    for call in (lambda: g.write(3, rows(0, 1)), g.flush, g.close):
        with pytest.raises(StorageError, match="bucket_00001.*failed earlier"):
            call()
    g.discard(2)
    assert side_lengths(side.getvalue()) == [0, committed]
    check_cut(tmp_path, data.getvalue()[:committed], [(1, r, r) for r in range(100)], "full")


@st.composite
def histories(draw):
    ops, write_id = [], 1
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["write", "write", "write", "flush", "flush", "discard", "next"]))
        if kind == "write":
            ops.append(("write", write_id, draw(st.integers(0, 400))))
        elif kind == "next":
            write_id += draw(st.integers(1, 3))
        elif kind == "discard":
            ops.append(("discard", draw(st.integers(1, write_id)), 0))
            write_id += 1
        else:
            ops.append(("flush", 0, 0))
    return ops


@examples(60, suppress=[HealthCheck.function_scoped_fixture])
@given(ops=histories(), compression=st.sampled_from(["zlib", "snappy", "none"]))
def test_random_histories_against_a_model(tmp_path, ops, compression):
    data, side = io.BytesIO(), io.BytesIO()
    g = GrowingEventFile(data, side, SCHEMA, BUCKET, compression=compression, stripe_size=6 * 1024)
    model, cuts, lo = Model(), [], 0
    for kind, w, n in ops:
        if kind == "write":
            g.write(w, rows(lo, n))
            model.write(w, lo, n)
            lo += n
        elif kind == "discard":
            g.discard(w)
            model.discard(w)
        else:
            cuts.append((g.flush(), model.commit()))
    final = g.close()
    cuts.append((final, model.commit()))
    blob = data.getvalue()
    assert final == len(blob)
    assert side_lengths(side.getvalue()) == [0] + [length for length, _ in cuts[:-1]]
    for length, expected in cuts:
        got = read_events(blob[:length])
        assert list(zip(got.column("currentTransaction").to_pylist(), got.column("rowId").to_pylist(),
                        got.column("row").combine_chunks().field("i").to_pylist())) == expected
        meta = paorc.ORCFile(io.BytesIO(blob[:length]))
        keys = parse_key_index(meta.metadata[b"hive.acid.key.index"].decode())
        assert len(keys) == meta.nstripes
        if expected:
            assert keys[-1] == (expected[-1][0], BUCKET, expected[-1][1])


@pytest.mark.spark
def test_java_orc_reads_every_cut(spark, tmp_path):
    """Spark's ORC reader (Java orc-core) reads each cut as exactly the committed events."""
    data, side, cuts, final, model = history(tmp_path, "zlib", stripe_size=8 * 1024, shrink=4)
    assert os.path.getsize(tmp_path / "bucket_00001") == final
    for i, (length, _) in enumerate(cuts):
        (tmp_path / f"cut{i}").mkdir()
        (tmp_path / f"cut{i}" / "part.orc").write_bytes(data[:length])
    columns = ["input_file_name()", "operation", "originalTransaction", "bucket", "rowId", "currentTransaction",
               "row.i", "row.s", "cast(row.dec as string)", "cast(row.day as string)", "row.st.y", "size(row.l)",
               "cast(row.ts as long)"]
    by_cut: dict[int, list[tuple]] = {i: [] for i in range(len(cuts))}
    for r in spark.read.orc([str(tmp_path / f"cut{i}") for i in range(len(cuts))]).selectExpr(*columns).collect():
        by_cut[int(r[0].split("/cut")[-1].split("/")[0])].append(tuple(r[1:]))
    for i, (length, expected) in enumerate(cuts):
        want = expected_rows([v for _, _, v in expected])
        assert by_cut[i] == list(zip(
            [0] * len(expected), [w for w, _, _ in expected], [BUCKET] * len(expected), [r for _, r, _ in expected],
            [w for w, _, _ in expected], want.column("i").to_pylist(), want.column("s").to_pylist(),
            [str(v) for v in want.column("dec").to_pylist()], [str(v) for v in want.column("day").to_pylist()],
            [v["y"] for v in want.column("st").to_pylist()], [len(v) for v in want.column("l").to_pylist()],
            [v // 1_000_000 for v in want.column("ts").cast(pa.int64()).to_pylist()])), i


HIVE_COLUMNS = [("i", "int"), ("b", "bigint"), ("s", "string"), ("d", "double"), ("dec", "decimal(12,3)"),
                ("day", "date"), ("ts", "timestamp"), ("st", "struct<x:int,y:string>"), ("l", "array<bigint>"),
                ("m", "map<string,int>")]


@pytest.mark.interop
def test_hive_reads_the_open_batch_in_place_at_every_commit(hive4, tmp_path):  # noqa: F811
    """Hive 4's own reader (OrcInputFormat split generation, OrcRawRecordMerger) reads the
    batch's delta while it is still open: the side file's last length cuts the file in place,
    and the uncommitted stripes written beyond it are never seen."""
    table = tmp_path / "t"
    delta = table / "delta_0000001_0000006"
    delta.mkdir(parents=True)
    (delta / "_orc_acid_version").write_bytes(b"2")
    reads = []

    def read(length, committed, aborted):
        done = {w for w, _, _ in committed}
        high = max(done, default=0)
        open_ = [w for w in range(1, 7) if w > high and w not in aborted]
        snapshot = (hive4.valid_txns(100), hive4.valid_write_ids("default.t", 6, open=open_, aborted=aborted))
        got = hive4.read(str(table), *snapshot, columns=HIVE_COLUMNS)
        # split generation that reads the footer, its stripes and statistics (HYBRID chose BI)
        etl = hive4.read(str(table), *snapshot, columns=HIVE_COLUMNS, conf={"hive.exec.orc.split.strategy": "ETL"})
        assert etl == got
        want = expected_rows([v for _, _, v in committed])
        assert [g[0] for g in got] == [(w, BUCKET, r) for w, r, _ in committed]
        assert [g[1] for g in got] == want.column("i").to_pylist()
        assert [g[3] for g in got] == want.column("s").to_pylist()
        assert [g[5] for g in got] == want.column("dec").to_pylist()
        assert [g[6] for g in got] == want.column("day").to_pylist()
        assert [g[8] for g in got] == [(v["x"], v["y"]) for v in want.column("st").to_pylist()]
        assert [g[9] for g in got] == want.column("l").to_pylist()
        assert [g[10] for g in got] == [dict(v) for v in want.column("m").to_pylist()]
        reads.append(len(got))

    history(delta, "zlib", stripe_size=8 * 1024, after_commit=read, shrink=4)
    assert len(reads) == 9 and reads[-1] > 2000


@pytest.mark.interop
def test_hive_2_3_reads_the_open_batch_in_place_at_every_commit(tmp_path, hive23):
    """Hive 2.3's reader too (pyspark's Hive jars; write ids are its transaction ids), through
    OrcRawRecordMerger (ACID v1 mode, the only one that honours side files: 2.3's split-update
    split generation takes ``bucket_00001_flush_length`` for a bucket file and fails on its name,
    as it would on Hive's own streaming deltas)."""
    from interop.hive_reader import make_valid_txns

    table = tmp_path / "t"
    delta = table / "delta_0000001_0000006"
    delta.mkdir(parents=True)
    reads = []

    def read(length, committed, aborted):
        high = max((w for w, _, _ in committed), default=0)
        open_ = [w for w in range(1, 7) if w > high and w not in aborted]
        got = hive23.read(str(table), HIVE_COLUMNS[:3], make_valid_txns(6, open=open_, aborted=aborted),
                          with_row_id=True, bucket_count=2,
                          conf={"hive.txn.operational.properties": "0", "transactional_properties": ""})
        want = expected_rows([v for _, _, v in committed])
        assert got == list(zip([(w, BUCKET, r) for w, r, _ in committed], want.column("i").to_pylist(),
                               want.column("b").to_pylist(), want.column("s").to_pylist()))
        reads.append(len(got))

    history(delta, "snappy", stripe_size=8 * 1024, after_commit=read, shrink=4)
    assert len(reads) == 9 and reads[-1] > 2000
