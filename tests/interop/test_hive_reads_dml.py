"""Hive 2.3's own reader reads tables after acidorc's UPDATE / DELETE / MERGE.

Each test changes a table with one kind of DML - through the engine-free API
(``AcidTable.load``) and through Spark (``AcidTable.forPath``) - then reads every partition
directory with Hive 2.3's OrcInputFormat (through py4j): Hive must return exactly the rows and
ROW__IDs acidorc's reader returns, and the values must equal a model kept in plain Python.
Hive sees only the files - split-update delete_delta / delta directories, statement ids, bucket
properties, key indexes - so this checks the DML's on-disk format where Hive depends on it.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pytest
from core_read import read_rows

from acid_source import create_table
from acid_source.table import AcidTable

pytestmark = pytest.mark.interop

COLS = [("id", "bigint"), ("tag", "string")]  # the data columns; partition values are directory names
ENGINES = ("python", "spark")


def handle(request, engine: str, path: str) -> AcidTable:
    """The table as the engine-free API or Spark opens it (Spark starts only when needed)."""
    if engine == "spark":
        return AcidTable.forPath(request.getfixturevalue("spark"), path)
    return AcidTable.load(path)


def rid(r: dict) -> tuple[int, int, int]:
    return r["ROW__ID"]["writeId"], r["ROW__ID"]["bucketId"], r["ROW__ID"]["rowId"]


def hive_bucket(bucket_property: int) -> int:
    """The bucket (writer id) in a BucketCodec V1 bucket property."""
    assert bucket_property >> 29 == 1, f"not a V1 bucket property: {bucket_property:#x}"
    return (bucket_property >> 16) & 0xFFF


def read_both(hive, path: str, partition: str | None = None, bucket_count: int = 1):
    """Hive's rows and acidorc's rows - ``((writeId, bucketId, rowId), id, tag)`` - and acidorc's
    rows with every column; ``partition``: the partition column, whose directories Hive reads
    one by one."""
    mine = read_rows(path, includeRowId="true")
    if partition is None:
        theirs = sorted((tuple(r[0]),) + tuple(r[1:])
                        for r in hive.read(path, COLS, with_row_id=True, bucket_count=bucket_count))
        return theirs, sorted((rid(r), r["id"], r["tag"]) for r in mine), mine
    theirs, ours = [], []
    dirs = sorted(Path(path).glob(f"{partition}=*"))
    assert {d.name.split("=", 1)[1] for d in dirs} >= {r[partition] for r in mine}
    for d in dirs:
        value = d.name.split("=", 1)[1]
        got = sorted((tuple(r[0]),) + tuple(r[1:]) for r in hive.read(str(d), COLS, with_row_id=True))
        want = sorted((rid(r), r["id"], r["tag"]) for r in mine if r[partition] == value)
        assert got == want, f"partition {d.name}: Hive read {got}, acidorc {want}"
        theirs += [row + (value,) for row in got]
        ours += [row + (value,) for row in want]
    return sorted(theirs), sorted(ours), mine


def batch(ids, tag, day=None) -> pa.Table:
    columns = {"id": pa.array(ids, pa.int64()), "tag": [tag] * len(ids)}
    if day is not None:
        columns["day"] = [day] * len(ids)
    return pa.table(columns)


# --- DELETE ------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_delete(hive, request, tmp_path, engine):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("tag", pa.string())]))
    t = AcidTable.load(path)
    t.append(batch(range(0, 40), "a"))
    t.append(batch(range(40, 60), "b"))
    t.append(batch(range(60, 70), "c"))
    before = {r["id"]: rid(r) for r in read_rows(path, includeRowId="true")}
    metrics = handle(request, engine, path).delete("id % 3 = 0 OR tag = 'c'")

    model = {i: ("a" if i < 40 else "b") for i in range(60) if i % 3 != 0}
    assert metrics["numDeletedRows"] == 70 - len(model) and metrics["writeId"] == 4
    theirs, ours, _ = read_both(hive, path)
    assert theirs == ours
    assert sorted((row[1], row[2]) for row in theirs) == sorted(model.items())
    assert all(row[0] == before[row[1]] for row in theirs)  # survivors keep their ROW__IDs
    names = {p.name for p in Path(path).iterdir()}  # statement ids are per task: any of them
    assert any(n.startswith("delete_delta_0000004_0000004_") for n in names)
    assert not any(n.startswith("delta_0000004") for n in names)  # a DELETE writes no insert events


# --- UPDATE of a data column ---------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_update_of_a_data_column(hive, request, tmp_path, engine):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("tag", pa.string())]))
    t = AcidTable.load(path)
    t.append(batch(range(0, 30), "a"))
    t.append(batch(range(30, 50), "b"))
    before = {r["id"]: rid(r) for r in read_rows(path, includeRowId="true")}
    metrics = handle(request, engine, path).update("id >= 20 AND id < 40", {"tag": "upper(tag)"})

    changed = set(range(20, 40))
    model = {i: ("a" if i < 30 else "b").upper() if i in changed else ("a" if i < 30 else "b") for i in range(50)}
    assert metrics["numUpdatedRows"] == len(changed) and metrics["writeId"] == 3
    theirs, ours, _ = read_both(hive, path)
    assert theirs == ours
    assert sorted((row[1], row[2]) for row in theirs) == sorted(model.items())
    for row_id, i, _tag in theirs:  # new versions carry the UPDATE's write id, the others keep theirs
        assert (row_id[0] == 3) if i in changed else (row_id == before[i]), (row_id, i)
    # the old versions are deleted, not rewritten: both sides are split-update directories of write id 3
    names = {p.name for p in Path(path).iterdir()}
    assert any(n.startswith("delete_delta_0000003_0000003_") for n in names)
    assert any(n.startswith("delta_0000003_0000003_") for n in names)


# --- UPDATE of the partition column ----------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_update_moves_rows_to_another_partition(hive, request, tmp_path, engine):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("tag", pa.string()), ("day", pa.string())]),
                 partitionColumns=["day"])
    t = AcidTable.load(path)
    t.append(pa.concat_tables([batch(range(0, 20), "x", "d1"), batch(range(20, 30), "y", "d2")]))
    model = {i: ("x", "d1") if i < 20 else ("y", "d2") for i in range(30)}
    table = handle(request, engine, path)

    # rows of d1 move to a new partition d3 ...
    m1 = table.update("day = 'd1' AND id % 2 = 0", {"day": "'d3'", "tag": "'moved'"})
    for i in range(0, 20, 2):
        model[i] = ("moved", "d3")
    assert m1["numUpdatedRows"] == 10 and m1["partitions"] == ["day=d1", "day=d3"]
    # ... and some of them, now in files only the first UPDATE wrote, on to an existing one
    m2 = table.update("day = 'd3' AND id % 4 = 0", {"day": "'d2'"})
    for i in range(0, 20, 4):
        model[i] = ("moved", "d2")
    assert m2["numUpdatedRows"] == 5 and m2["partitions"] == ["day=d2", "day=d3"]

    theirs, ours, _ = read_both(hive, path, partition="day")
    assert theirs == ours
    assert sorted((row[1], row[2], row[3]) for row in theirs) == sorted((i, tag, day) for i, (tag, day) in
                                                                         model.items())
    assert {row[3] for row in theirs} == {"d1", "d2", "d3"}


# --- UPDATE of the bucket column -------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_update_of_the_bucket_column_moves_rows_to_another_bucket(hive, request, tmp_path, engine):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("tag", pa.string())]), bucketColumns=["id"],
                 numBuckets=4)
    t = AcidTable.load(path)
    t.append(batch(range(0, 40), "p"))
    t.append(batch(range(40, 64), "q"))
    before = {r["id"]: rid(r) for r in read_rows(path, includeRowId="true")}
    metrics = handle(request, engine, path).update("id % 3 = 0", {"id": "id + 1000"})

    model = {(i + 1000 if i % 3 == 0 else i): ("p" if i < 40 else "q") for i in range(64)}
    assert metrics["numUpdatedRows"] == 22
    theirs, ours, _ = read_both(hive, path, bucket_count=4)
    assert theirs == ours
    assert sorted((row[1], row[2]) for row in theirs) == sorted(model.items())

    # every row is in the bucket Hive 3's bucketing_version 2 puts its id in: Murmur3.hash32 of the
    # big-endian long (Hive's own Murmur3 class, through the reader's JVM), modulo 4
    murmur = hive._jvm.org.apache.hive.common.util.Murmur3

    def bucket_of(i: int) -> int:
        return (murmur.hash32(bytearray(struct.pack(">q", i)), 8) & 0x7FFFFFFF) % 4

    assert all(hive_bucket(row[0][1]) == bucket_of(row[1]) for row in theirs)
    moved = [i for i in range(0, 64, 3) if hive_bucket(before[i][1]) != bucket_of(i + 1000)]
    assert len(moved) >= 5  # the test must move rows between buckets, not only within one


# --- MERGE with UPDATE, DELETE and INSERT clauses --------------------------------------------------
def test_merge_with_update_delete_and_insert(hive, spark, tmp_path):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("tag", pa.string()), ("day", pa.string())]),
                 partitionColumns=["day"])
    t = AcidTable.load(path)
    t.append(pa.concat_tables([batch(range(0, 20), "a", "d1"), batch(range(20, 40), "b", "d2")]))
    t.delete("id = 39")  # a delete delta already there before the MERGE
    model = {i: ("a", "d1") if i < 20 else ("b", "d2") for i in range(39)}

    source = []
    for i in range(0, 45, 3):  # matched rows: delete every other one, update the rest (some move to d2)
        op = "D" if i % 2 else "U"
        source.append((i, op, f"s{i}", "d2" if i % 9 == 0 else ("d1" if i < 20 else "d2")))
    source += [(100, "I", "new", "d1"), (101, "I", "new", "d4"), (102, "D", "never", "d1")]
    src = spark.createDataFrame(source, "id bigint, op string, tag string, day string")
    metrics = (AcidTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id")
               .whenMatchedDelete(condition="s.op = 'D'")
               .whenMatchedUpdate(set={"tag": "s.tag", "day": "s.day"})
               .whenNotMatchedInsert(condition="s.op <> 'D'", values={"id": "s.id", "tag": "s.tag", "day": "s.day"})
               .execute())

    deleted = updated = inserted = 0
    for i, op, tag, day in source:
        if i in model:
            if op == "D":
                del model[i]
                deleted += 1
            else:
                model[i] = (tag, day)
                updated += 1
        elif op != "D":
            model[i] = (tag, day)
            inserted += 1
    assert (deleted, updated, inserted) == (6, 7, 3)  # 39 (deleted before) and 42 are not in the target
    assert (metrics["numDeletedRows"], metrics["numUpdatedRows"], metrics["numInsertedRows"]) == (6, 7, 3)

    theirs, ours, _ = read_both(hive, path, partition="day")
    assert theirs == ours
    assert sorted((row[1], row[2], row[3]) for row in theirs) == sorted((i, tag, day) for i, (tag, day) in
                                                                         model.items())
    merge_write_id = metrics["writeId"]
    assert {row[3] for row in theirs if row[0][0] == merge_write_id} == {"d1", "d2", "d4"}
