"""Whatever a data file holds, a read task fails with a typed error naming that file - never
with a raw KeyError, UnicodeDecodeError or AttributeError from the libraries underneath."""

import io

import pyorc
import pytest
from core_read import data, read_rows
from hivegen import HiveTable, bucket_property, delta_name

from acid_source.errors import CorruptFileError

B0 = bucket_property(0)
COLS = [("id", "int"), ("name", "string")]


def table(root) -> HiveTable:
    t = HiveTable(root, COLS)
    t.insert(1, {0: [(i, f"r{i}") for i in range(20)]})
    return t


def write_orc(path, schema: str, rows, compression=pyorc.CompressionKind.ZLIB):
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with pyorc.Writer(buf, schema, compression=compression, struct_repr=pyorc.StructRepr.TUPLE) as w:
        w.set_user_metadata(**{"hive.acid.key.index": b"", "hive.acid.stats": b"1,0,0",
                               "hive.acid.version": b"2"})
        for row in rows:
            w.write(row)
    path.write_bytes(buf.getvalue())
    return path


def test_a_column_name_that_is_not_utf8(tmp_path):
    """Seen by corrupting single bytes: pyarrow raised UnicodeDecodeError out of the task."""
    t = table(tmp_path)
    victim = t.delete(2, [(1, B0, 3)], compression=pyorc.CompressionKind.NONE)
    path = t.root / delta_name(2, 2, 0, delete=True) / "bucket_00000"
    raw = path.read_bytes()
    assert raw.count(b"operation") == 1 and victim
    path.write_bytes(raw.replace(b"operation", b"operat\x89on"))
    with pytest.raises(CorruptFileError, match="delete_delta_0000002_0000002_0000/bucket_00000") as info:
        read_rows(t.root)
    assert info.value.path == str(path)


def test_a_row_column_that_is_not_a_struct(tmp_path):
    t = table(tmp_path)
    bad = t.root / delta_name(2, 2, 0) / "bucket_00000"
    write_orc(bad, "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
                   "currentTransaction:bigint,row:int>", [(0, 2, B0, 0, 2, 7)])
    t.insert(3, {0: [(30, "new")]})  # the newest file, which the schema is inferred from, is sound
    with pytest.raises(CorruptFileError, match="'row' column is int32, not a struct") as info:
        read_rows(t.root)
    assert info.value.path == str(bad)


def test_event_columns_of_the_wrong_type(tmp_path):
    t = table(tmp_path)
    bad = t.root / delta_name(2, 2, 0, delete=True) / "bucket_00000"
    write_orc(bad, "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
                   "currentTransaction:string,row:struct<id:int,name:string>>", [(2, 1, B0, 3, "2", None)])
    with pytest.raises(CorruptFileError, match="'currentTransaction' is string, not an integer") as info:
        read_rows(t.root)
    assert info.value.path == str(bad)


def test_a_truncated_delete_delta(tmp_path):
    t = table(tmp_path)
    t.delete(2, [(1, B0, i) for i in range(0, 20, 2)])
    path = t.root / delta_name(2, 2, 0, delete=True) / "bucket_00000"
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(CorruptFileError, match="delete_delta_0000002_0000002_0000/bucket_00000"):
        read_rows(t.root)


def test_a_delete_delta_holding_plain_rows(tmp_path):
    t = table(tmp_path)
    bad = t.root / delta_name(2, 2, 0, delete=True) / "bucket_00000"
    write_orc(bad, "struct<id:int,name:string>", [(1, "x")])
    with pytest.raises(CorruptFileError, match="must hold ACID events"):
        read_rows(t.root)


def test_sound_files_still_read(tmp_path):
    t = table(tmp_path)
    t.delete(2, [(1, B0, i) for i in range(1, 20)])
    assert data(read_rows(t.root), "id", "name") == [(0, "r0")]
