"""Delete-event files written by DeleteFileWriter: Hive 3's split-update shape, footer
metadata derived from the events, and acidorc's reader applying them."""

import numpy as np
import pyarrow as pa
import pyorc
import pytest
from core_read import data, read_rows
from hivegen import INSERT, Event, HiveTable, bucket_property, delta_name

from acid_source.errors import InvalidArgumentError
from acid_source.orc.files import OrcFile
from acid_source.orc.writer import DeleteFileWriter
from acid_source.scan.reader import ScanMetrics
from acid_source.storage import Storage

ROW_SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
B0, B1 = bucket_property(0), bucket_property(1)


def keys(*triples):
    return tuple(np.array([t[i] for t in triples]) for i in range(3))


def events_of(path):
    f = OrcFile(Storage(str(path.parent)), str(path))
    return f, pa.Table.from_batches([f.read_stripe(i) for i in range(f.num_stripes)], schema=f.schema)


@pytest.mark.parametrize("compression", ["zlib", "snappy", "zstd", "lz4", "uncompressed"])
def test_events_have_hive_split_update_shape(tmp_path, compression):
    path = tmp_path / "bucket_00000"
    w = DeleteFileWriter(str(path), ROW_SCHEMA, write_id=7, bucket_id=0, compression=compression)
    w.write(keys((3, B0, 5), (1, B0, 9), (3, B0, 1), (1, bucket_property(0, 2), 0)))  # unsorted: sorted here
    info = w.close()
    assert info.rows == 4 and info.size == path.stat().st_size
    f, events = events_of(path)
    assert f.is_acid and f.acid_stats == (0, 0, 4) and f.user_metadata["hive.acid.version"] == "2"
    assert [(e["originalTransaction"], e["bucket"], e["rowId"]) for e in events.to_pylist()] == [
        (1, B0, 9), (1, bucket_property(0, 2), 0), (3, B0, 1), (3, B0, 5)]
    assert set(events.column("operation").to_pylist()) == {2}
    assert set(events.column("currentTransaction").to_pylist()) == {7}
    assert events.column("row").null_count == 4
    # the row struct has the table's full row type (Hive's writer does the same), timestamps
    # stored as Hive timestamps
    assert f.schema.field("row").type == pa.struct([("id", pa.int64()), ("s", pa.string()),
                                                    ("ts", pa.timestamp("ns"))])
    assert f.key_index == [(3, B0, 5)]


def test_key_index_names_the_last_event_of_every_stripe(tmp_path):
    path = tmp_path / "bucket_00001"
    w = DeleteFileWriter(str(path), ROW_SCHEMA, write_id=9, bucket_id=1, stripe_size=4 * 1024)
    n = 100000
    row_ids = np.sort(np.random.default_rng(0).choice(10**9, n, replace=False))
    for lo in range(0, n, 7000):  # sorted chunks, ascending from one write to the next
        r = row_ids[lo:lo + 7000]
        w.write((np.full(len(r), 4), np.full(len(r), B1), r))
    assert w.close().rows == n
    f, events = events_of(path)
    assert f.num_stripes > 1
    assert events.column("rowId").to_numpy().tolist() == row_ids.tolist()
    last = []
    for i in range(f.num_stripes):
        b = f.read_stripe(i)
        last.append(tuple(b.column(c)[-1].as_py() for c in ("originalTransaction", "bucket", "rowId")))
    assert f.key_index == last
    with open(path, "rb") as fh:
        assert pyorc.Reader(fh).user_metadata["hive.acid.stats"] == f"0,0,{n}".encode()


def test_an_empty_file_is_valid(tmp_path):
    path = tmp_path / "bucket_00000"
    assert DeleteFileWriter(str(path), ROW_SCHEMA, 3, 0).close().rows == 0
    f, events = events_of(path)
    assert f.is_acid and f.num_rows == 0 and f.acid_stats == (0, 0, 0) and f.user_metadata["hive.acid.key.index"] == ""


@pytest.mark.parametrize("first, second, message", [
    (keys((1, B0, 5)), keys((1, B0, 4)), "must ascend"),
    (keys((1, B0, 5)), keys((1, B0, 5)), "must ascend"),
    (keys((1, B0, 5), (1, B0, 5)), None, "given twice"),
    (keys((1, B1, 5)), None, "belongs to bucket 1"),
    ((pa.array([1, None]), pa.array([B0, B0]), pa.array([0, 1])), None, "null"),
    ((np.array([1.5]), np.array([B0]), np.array([0])), None, "integers"),
    ((np.array([1]), np.array([2**40]), np.array([0])), None, "range"),
])
def test_bad_row_ids_are_refused(tmp_path, first, second, message):
    w = DeleteFileWriter(str(tmp_path / "bucket_00000"), ROW_SCHEMA, 3, 0)
    with pytest.raises(InvalidArgumentError, match=message):
        w.write(first)
        if second is not None:
            w.write(second)


def test_row_id_struct_column_as_a_read_returns_it(tmp_path):
    t = HiveTable(tmp_path / "t", [("id", "int")])
    t.insert(1, {0: [(i,) for i in range(10)], 1: [(100 + i,) for i in range(5)]})
    rows = read_rows(t.root, includeRowId="true")
    doomed = [r for r in rows if r["id"] % 3 == 0]
    row_type = pa.struct([("writeId", pa.int64()), ("bucketId", pa.int32()), ("rowId", pa.int64())])
    d = t.dir(delta_name(2, 2, 0, delete=True))
    for bucket, prop in ((0, B0), (1, B1)):
        ids = pa.array([r["ROW__ID"] for r in doomed if r["ROW__ID"]["bucketId"] == prop], row_type)
        w = DeleteFileWriter(str(d / f"bucket_{bucket:05d}"), pa.schema([("id", pa.int32())]), 2, bucket)
        w.write(pa.chunked_array([ids]))
        w.close()
    assert data(read_rows(t.root), "id") == [(i,) for i in (1, 2, 4, 5, 7, 8, 100, 101, 103, 104)]


def test_the_reader_applies_the_deletes_and_uses_their_key_index(tmp_path):
    """A multi-stripe base and a multi-stripe delete file: with one split per base stripe, the
    splits together skip delete stripes outside their key ranges - the key index is right."""
    n = 60000
    rng = np.random.default_rng(0)
    # sparse row ids (as in a compacted base), so that the delete file's stripes fill up too
    row_ids = np.sort(rng.choice(10**9, n, replace=False))
    t = HiveTable(tmp_path, [("id", "bigint")], stripe_rows=n // 10)
    t.base(1, {0: [Event(INSERT, 1, B0, int(r), 1, (i,)) for i, r in enumerate(row_ids)]})
    t.insert(2, {0: [(10**6 + i,) for i in range(10)]})
    doomed = np.sort(rng.choice(n, 40000, replace=False))
    d = t.dir(delta_name(3, 3, 0, delete=True))
    w = DeleteFileWriter(str(d / "bucket_00000"), pa.schema([("id", pa.int64())]), 3, 0, stripe_size=4 * 1024)
    w.write((np.full(len(doomed), 1), np.full(len(doomed), B0), row_ids[doomed]))
    w.write(keys((2, B0, 0), (2, B0, 9)))
    w.close()
    delete_stripes = OrcFile(Storage(str(tmp_path)), str(d / "bucket_00000")).num_stripes
    assert delete_stripes > 1
    expected = sorted(set(range(n)) - set(doomed.tolist())) + [10**6 + i for i in range(1, 9)]
    whole, sliced = ScanMetrics(), ScanMetrics()
    assert sorted(r["id"] for r in read_rows(tmp_path, whole)) == expected
    assert sorted(r["id"] for r in read_rows(tmp_path, sliced, maxSplitBytes="1")) == expected
    assert whole.delete_events_loaded == len(doomed) + 2
    assert (whole.delete_stripes_read, whole.delete_stripes_skipped) == (delete_stripes, 0)
    assert sliced.delete_stripes_skipped > 0
    # before write id 3 nothing is deleted
    assert len(read_rows(tmp_path, validWriteIds="default.t:2:9223372036854775807::")) == n + 10
