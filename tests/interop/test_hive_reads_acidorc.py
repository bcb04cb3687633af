"""Hive 2.3's own reader reads the tables acidorc writes, with the same rows and ROW__IDs.

Tables are written through acidorc's core write path (the code the Spark writer runs) and
read twice: by Hive 2.3.10's OrcInputFormat through py4j, and by acidorc. Hive sees only what
the files and directory names say, so this checks the on-disk format byte for byte where it
matters: the ACID struct, bucket properties, key index, directory and file names.
"""

from __future__ import annotations

import datetime as dt
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "write"))

from core_read import read_rows  # noqa: E402
from writers import write  # noqa: E402

pytestmark = pytest.mark.interop


def ours(path, columns):
    return sorted(((r["ROW__ID"]["writeId"], r["ROW__ID"]["bucketId"], r["ROW__ID"]["rowId"]),)
                  + tuple(r[c] for c in columns) for r in read_rows(path, includeRowId="true"))


def theirs(hive, path, columns, bucket_count=1):
    return sorted((tuple(r[0]),) + tuple(r[1:]) for r in hive.read(str(path), columns, with_row_id=True,
                                                                   bucket_count=bucket_count))


def batch(ids, tag):
    return pa.RecordBatch.from_pydict({"id": pa.array(ids, pa.int64()), "tag": [tag] * len(ids)})


COLS = [("id", "bigint"), ("tag", "string")]


def test_appends_from_several_tasks_and_an_overwrite(hive, tmp_path):
    t = tmp_path / "t"
    write(t, [[batch(range(0, 50), "a")], [batch(range(50, 80), "b")], [batch(range(80, 81), "c")]])
    write(t, [[batch(range(100, 110), "d")]])
    assert theirs(hive, t, COLS) == ours(t, ["id", "tag"])
    assert len(ours(t, ["id"])) == 91
    write(t, [[batch(range(200, 205), "o")], [batch(range(205, 207), "p")]], overwrite=True)
    write(t, [[batch(range(300, 302), "q")]])
    result = theirs(hive, t, COLS)
    assert result == ours(t, ["id", "tag"]) and [r[1] for r in result] == [200, 201, 202, 203, 204, 205, 206, 300,
                                                                           301]


def test_partition_directories(hive, tmp_path):
    t = tmp_path / "t"
    rows = pa.RecordBatch.from_pydict({"id": pa.array(range(6), pa.int64()), "tag": list("abcdef"),
                                       "day": ["2024-01-01", "2024-01-02"] * 3})
    write(t, [[rows]], partitionColumns="day")
    for part in ("day=2024-01-01", "day=2024-01-02"):
        mine = [r for r in read_rows(t, includeRowId="true") if f"day={r['day']}" == part]
        expected = sorted(((r["ROW__ID"]["writeId"], r["ROW__ID"]["bucketId"], r["ROW__ID"]["rowId"]), r["id"],
                           r["tag"]) for r in mine)
        assert theirs(hive, t / part, COLS) == expected and len(expected) == 3


def test_bucketed_table(hive, tmp_path):
    t = tmp_path / "t"
    write(t, [[batch(range(0, 40), "x")], [batch(range(40, 64), "y")]], bucketColumns="id", numBuckets=4)
    assert theirs(hive, t, COLS, bucket_count=4) == ours(t, ["id", "tag"])


def test_every_type(hive, tmp_path):
    t = tmp_path / "t"
    columns = [("b", "boolean", pa.bool_()), ("ti", "tinyint", pa.int8()), ("si", "smallint", pa.int16()),
               ("i", "int", pa.int32()), ("bi", "bigint", pa.int64()), ("d", "double", pa.float64()),
               ("s", "string", pa.string()), ("bin", "binary", pa.binary()),
               ("dec", "decimal(12,3)", pa.decimal128(12, 3)), ("da", "date", pa.date32()),
               ("ts", "timestamp", pa.timestamp("us")), ("tz", "timestamp", pa.timestamp("us", tz="UTC")),
               ("l", "array<bigint>", pa.list_(pa.int64())), ("m", "map<string,int>", pa.map_(pa.string(), pa.int32())),
               ("st", "struct<x:int,y:string>", pa.struct([("x", pa.int32()), ("y", pa.string())]))]
    values = [True, -3, 300, 70000, 2**40, 2.25, "héllo", b"\x00\xff", Decimal("123.456"), dt.date(2024, 2, 29),
              dt.datetime(2024, 1, 2, 3, 4, 5, 123456), dt.datetime(2023, 6, 7, 8, 9, 10, tzinfo=dt.timezone.utc),
              [1, 2], [("k", 9)], {"x": 7, "y": "n"}]
    rows = pa.RecordBatch.from_arrays([pa.array([v, None], type=c[2]) for v, c in zip(values, columns)],
                                      names=[c[0] for c in columns])
    write(t, [[rows]])
    got = theirs(hive, t, [(c[0], c[1]) for c in columns])
    assert len(got) == 2
    full = next(r for r in got if r[1] is not None)
    assert full[0] == (1, 536870912, 0)
    assert full[1:8] == (True, -3, 300, 70000, 2**40, 2.25, "héllo") and bytes(full[8]) == b"\x00\xff"
    assert full[9] == Decimal("123.456") and full[10] == dt.date(2024, 2, 29)
    assert full[11] == dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    assert full[12] == dt.datetime(2023, 6, 7, 8, 9, 10)  # a zoned timestamp is stored as UTC wall clock
    assert list(full[13]) == [1, 2] and dict(full[14]) == {"k": 9} and tuple(full[15]) == (7, "n")
    assert all(v is None for v in next(r for r in got if r[1] is None)[1:])
