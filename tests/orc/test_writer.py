"""ACID ORC files written by pyarrow with the Hive footer metadata appended."""

import numpy as np
import pyarrow as pa
import pyorc
import pytest

from acid_source.orc.files import OrcFile
from acid_source.orc.writer import InsertFileWriter, append_user_metadata
from acid_source.storage import Storage

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("m", pa.map_(pa.string(), pa.int32()))])


def batch(lo, hi):
    ids = np.arange(lo, hi)
    return pa.RecordBatch.from_arrays(
        [pa.array(ids), pa.array([f"v{i}" for i in ids]), pa.array([{"k": int(i)} for i in ids % 7],
                                                                       pa.map_(pa.string(), pa.int32()))],
        schema=SCHEMA)


@pytest.mark.parametrize("compression", ["zlib", "snappy", "zstd", "lz4", "uncompressed"])
def test_events_and_metadata(tmp_path, compression):
    path = str(tmp_path / "bucket_00003")
    w = InsertFileWriter(path, SCHEMA, write_id=42, bucket_property=536936451, compression=compression,
                         stripe_size=32 * 1024)
    for lo in range(0, 30000, 7000):
        w.write(batch(lo, min(lo + 7000, 30000)))
    info = w.close()
    assert info.rows == 30000
    f = OrcFile(Storage(str(tmp_path)), path)
    assert f.is_acid and f.num_stripes > 1
    assert f.acid_stats == (30000, 0, 0) and f.user_metadata["hive.acid.version"] == "2"
    # the key index names the real last event of every stripe
    last_keys = []
    for i in range(f.num_stripes):
        b = f.read_stripe(i)
        last_keys.append((b.column(1)[-1].as_py(), b.column(2)[-1].as_py(), b.column(3)[-1].as_py()))
        assert set(b.column(0).to_pylist()) == {0} and set(b.column(4).to_pylist()) == {42}
    assert f.key_index == last_keys
    rows = pa.Table.from_batches([f.read_stripe(i) for i in range(f.num_stripes)])
    assert rows.column("rowId").to_pylist() == list(range(30000))
    assert rows.column("row").combine_chunks().field("id").to_pylist() == list(range(30000))
    # pyorc (ORC's C++ reader) agrees about the metadata
    with open(path, "rb") as fh:
        assert pyorc.Reader(fh).user_metadata["hive.acid.stats"] == b"30000,0,0"


def test_append_user_metadata_keeps_existing_items(tmp_path):
    path = str(tmp_path / "f.orc")
    buf = open(path, "wb")
    with pyorc.Writer(buf, "struct<a:int>") as w:
        w.set_user_metadata(first=b"1")
        w.write((1,))
    buf.close()
    append_user_metadata(path, {"second": b"2" * 100000})  # larger than one compression block
    with open(path, "rb") as fh:
        r = pyorc.Reader(fh)
        assert r.user_metadata == {"first": b"1", "second": b"2" * 100000}
        assert list(r) == [(1,)]
