"""Hive 2.3's own reader applies delete events written by acidorc's DeleteFileWriter.

Tables hold a base and/or insert deltas (written by the test generator or by acidorc's insert
writer) plus ``delete_delta_W_W_S/bucket_N`` files written by DeleteFileWriter; Hive 2.3's
OrcInputFormat (through py4j) must return exactly the surviving rows with their ROW__IDs, and
so must acidorc.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from core_read import read_rows
from hivegen import INSERT, Event, HiveTable, bucket_property, delta_name

from acid_source.orc.writer import DeleteFileWriter, InsertFileWriter

pytestmark = pytest.mark.interop

COLS = [("id", "bigint"), ("name", "string")]
ROW_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
B0, B1 = bucket_property(0), bucket_property(1)


def acid_dir(root: Path, name: str) -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "_orc_acid_version").write_bytes(b"2")
    return d


def write_deletes(root: Path, write_id: int, row_ids, stmt: int = 0) -> None:
    """One delete file per writer id, as Hive's split-update writes them."""
    d = acid_dir(root, delta_name(write_id, write_id, stmt, delete=True))
    by_bucket: dict[int, list] = {}
    for key in row_ids:
        by_bucket.setdefault((key[1] >> 16) & 0xFFF, []).append(key)
    for bucket, keys in sorted(by_bucket.items()):
        w = DeleteFileWriter(str(d / f"bucket_{bucket:05d}"), ROW_SCHEMA, write_id, bucket)
        w.write(tuple(np.array([k[i] for k in keys]) for i in range(3)))
        assert w.close().rows == len(keys)


def ours(path):
    return sorted((tuple(r["ROW__ID"].values()), r["id"], r["name"]) for r in read_rows(path, includeRowId="true"))


def theirs(hive, path):
    return sorted((tuple(r[0]),) + tuple(r[1:]) for r in hive.read(str(path), COLS, with_row_id=True))


def test_deletes_of_base_and_delta_rows(hive, tmp_path):
    t = HiveTable(tmp_path / "t", COLS)
    base = {0: [Event(INSERT, 1, B0, i, 1, (i, f"b0-{i}")) for i in range(100)],
            1: [Event(INSERT, 1, B1, i, 1, (1000 + i, f"b1-{i}")) for i in range(50)]}
    t.base(1, base)
    delta = t.insert(2, {0: [(2000 + i, f"d-{i}") for i in range(10)]})
    everything = {e.key: e.row for events in list(base.values()) + list(delta.values()) for e in events}
    doomed = [(1, B0, 0), (1, B0, 5), (1, B0, 99), (1, B1, 0), (1, B1, 49), (2, B0, 3)]
    write_deletes(t.root, 3, reversed(doomed))  # unsorted on purpose: the writer sorts
    expected = sorted((k,) + row for k, row in everything.items() if k not in doomed)
    assert len(expected) == 154
    assert theirs(hive, t.root) == expected
    assert ours(t.root) == expected


def test_split_update_over_files_acidorc_wrote(hive, tmp_path):
    """The DML flow: insert deltas from acidorc's writer, ROW__IDs from acidorc's read, then a
    split-update by write id 3 (delete events plus the new row versions) and a delete by 4."""
    root = tmp_path / "t"
    for write_id, task_rows in ((1, [range(0, 40), range(40, 70)]), (2, [range(100, 120)])):
        d = acid_dir(root, delta_name(write_id, write_id, 0))
        for task, ids in enumerate(task_rows):
            w = InsertFileWriter(str(d / f"bucket_{task:05d}"), ROW_SCHEMA, write_id, bucket_property(task))
            w.write(pa.RecordBatch.from_pydict({"id": pa.array(ids, pa.int64()), "name": [f"w{write_id}"] * len(ids)},
                                               schema=ROW_SCHEMA))
            w.close()
    before = read_rows(root, includeRowId="true")
    updated = [r for r in before if r["id"] % 4 == 0]
    write_deletes(root, 3, [tuple(r["ROW__ID"].values()) for r in updated])
    d = acid_dir(root, delta_name(3, 3, 0))
    w = InsertFileWriter(str(d / "bucket_00000"), ROW_SCHEMA, 3, B0)
    w.write(pa.RecordBatch.from_pydict({"id": pa.array([r["id"] for r in updated], pa.int64()),
                                        "name": ["updated"] * len(updated)}, schema=ROW_SCHEMA))
    w.close()
    gone = [r for r in before if r["id"] in (1, 41, 101)]
    write_deletes(root, 4, [tuple(r["ROW__ID"].values()) for r in gone])

    result = theirs(hive, root)
    assert result == ours(root)
    by_id = {row[1]: row for row in result}
    assert len(result) == len(before) - 3
    assert sorted(by_id) == sorted(r["id"] for r in before if r not in gone)
    assert all(by_id[r["id"]][2] == "updated" and by_id[r["id"]][0][0] == 3 for r in updated)
    kept = [r for r in before if r not in updated and r not in gone]
    assert all(by_id[r["id"]] == (tuple(r["ROW__ID"].values()), r["id"], r["name"]) for r in kept)
