"""Hive 2.3's own reader reads what the engine-free AcidTable writes (appends from plain
Python, a partition overwrite, a bucketed table), with the same rows and ROW__IDs as acidorc."""

from __future__ import annotations

import pyarrow as pa
import pytest
from core_read import read_rows

from acid_source import create_table
from acid_source.table import AcidTable

pytestmark = pytest.mark.interop

COLS = [("id", "bigint"), ("tag", "string")]


def ours(path, predicate=lambda r: True):
    return sorted(((r["ROW__ID"]["writeId"], r["ROW__ID"]["bucketId"], r["ROW__ID"]["rowId"]), r["id"], r["tag"])
                  for r in read_rows(path, includeRowId="true") if predicate(r))


def theirs(hive, path, bucket_count=1):
    return sorted((tuple(r[0]),) + tuple(r[1:]) for r in hive.read(str(path), COLS, with_row_id=True,
                                                                   bucket_count=bucket_count))


def table(ids, tag, day=None):
    d = {"id": pa.array(ids, pa.int64()), "tag": [tag] * len(ids)}
    if day is not None:
        d["day"] = [day] * len(ids)
    return pa.table(d)


def test_appends_and_an_overwrite_from_plain_python(hive, tmp_path):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("tag", pa.string())]))
    t = AcidTable.load(path)
    t.append(table(range(0, 30), "a"))
    t.append(table(range(30, 35), "b"))
    assert theirs(hive, path) == ours(path) and len(ours(path)) == 35
    t.overwrite(table(range(100, 103), "o"))
    t.append(table([200], "c"))
    got = theirs(hive, path)
    assert got == ours(path) and [r[1] for r in got] == [100, 101, 102, 200]


def test_a_partition_overwrite(hive, tmp_path):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("tag", pa.string()), ("day", pa.string())]),
                 partitionColumns=["day"])
    t = AcidTable.load(path)
    t.append(pa.concat_tables([table([1, 2], "a", "d1"), table([3], "b", "d2")]))
    t.overwrite(table([9], "z"), partition={"day": "d1"})
    for day, expected_ids in (("d1", [9]), ("d2", [3])):
        got = theirs(hive, tmp_path / "t" / f"day={day}")
        assert got == ours(path, lambda r, day=day: r["day"] == day)
        assert [r[1] for r in got] == expected_ids


def test_a_bucketed_table(hive, tmp_path):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("tag", pa.string())]), bucketColumns=["id"],
                 numBuckets=4)
    t = AcidTable.load(path)
    t.append(table(range(64), "x"))
    assert theirs(hive, path, bucket_count=4) == ours(path) and len(ours(path)) == 64
