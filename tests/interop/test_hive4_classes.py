"""Hive 4.1's own classes as the other party: its OrcInputFormat reads tables the test generator
wrote (visibility suffixes, an in-progress streaming file, delete events, partitions) at
explicit snapshots; its OrcRecordUpdater writes under metastore transactions taken with its
HiveMetaStoreClient, and its reader reads exactly the committed rows at the snapshot its client
hands out. See interop/hive4.py."""

from __future__ import annotations

import itertools
import struct
from decimal import Decimal

import pytest
from hivegen import INSERT, Event, HiveTable, bucket_property

pytestmark = pytest.mark.interop

COLS = [("id", "int"), ("name", "string"), ("amount", "decimal(10,2)")]
B0 = bucket_property(0)  # 536870912
_names = itertools.count()


def table_name(prefix: str) -> str:
    return f"{prefix}_{next(_names)}"


def test_hive4_reads_a_generated_table_at_explicit_snapshots(hive4, tmp_path):
    t = HiveTable(tmp_path / "t", COLS)
    w1 = t.insert(1, {0: [(1, "a", Decimal("1.50")), (2, "b", Decimal("2.50"))]})
    w2 = t.insert(2, {0: [(3, "c", Decimal("3.50"))]})
    t.base(2, {0: w1[0] + w2[0]}, visibility=10)  # compacted by txn 10
    t.delete(3, [(1, B0, 1)])  # an update by write id 3: the old row's delete event ...
    t.insert(3, {0: [(20, "b2", Decimal("2.75"))]})  # ... and its new version
    t.base(3, {0: w1[0][:1]}, visibility=12)  # a compaction that was aborted half-way (txn 12)
    # a streaming writer (write ids 4, 5) still open: flushed after write id 4's rows, then
    # bytes of an unfinished stripe; only _flush_length says where the readable file ends
    streaming = [Event(INSERT, 4, B0, 0, 4, (40, "s1", Decimal("4.00"))),
                 Event(INSERT, 4, B0, 1, 4, (41, "s2", Decimal("4.10"))),
                 Event(INSERT, 5, B0, 0, 5, (50, "s3", Decimal("5.00")))]
    d = t.raw_dir("delta_0000004_0000005", {0: streaming}, flush_at=[2])
    flushed = struct.unpack(">q", (d / "bucket_00000_flush_length").read_bytes()[-8:])[0]
    data = (d / "bucket_00000").read_bytes()
    (d / "bucket_00000").write_bytes(data[:flushed] + b"\x07" * 100)

    now = hive4.valid_txns(13, open=[13], aborted=[12])
    assert now == "13:13:13:12"  # Hive's own rendering
    write_ids = hive4.valid_write_ids("default.t", 5, open=[5])
    assert write_ids == "default.t:5:5:5:"
    expected = [((1, B0, 0), 1, "a", Decimal("1.50")),
                ((2, B0, 0), 3, "c", Decimal("3.50")),
                ((3, B0, 0), 20, "b2", Decimal("2.75")),
                ((4, B0, 0), 40, "s1", Decimal("4.00")),
                ((4, B0, 1), 41, "s2", Decimal("4.10"))]
    assert sorted(hive4.read(t.root, now, write_ids, columns=COLS)) == expected
    # compactor txn 10 not committed in the snapshot: its base is not used, the deltas are
    not_compacted = hive4.valid_txns(13, open=[10, 13], aborted=[12])
    assert sorted(hive4.read(t.root, not_compacted, write_ids, columns=COLS)) == expected
    # before write id 3 (and txn 10): write id 3's update is not there yet
    before = hive4.read(t.root, hive4.valid_txns(9), hive4.valid_write_ids("default.t", 2), columns=COLS)
    assert sorted(before) == [((1, B0, 0), 1, "a", Decimal("1.50")),
                              ((1, B0, 1), 2, "b", Decimal("2.50")),
                              ((2, B0, 0), 3, "c", Decimal("3.50"))]


def test_hive4_reads_each_partition_of_a_generated_table(hive4, tmp_path):
    t = HiveTable(tmp_path / "p", COLS)
    t.insert(1, {0: [(1, "x", Decimal("0.10"))]}, partition="day=d1")
    t.insert(2, {0: [(2, "y", Decimal("0.20"))], 1: [(3, "z", Decimal("0.30"))]}, partition="day=d%3A2")
    t.delete(3, [(2, bucket_property(1), 0)], partition="day=d%3A2")
    rows = hive4.read(t.root, hive4.valid_txns(3), hive4.valid_write_ids("default.p", 3), columns=COLS,
                      partition_columns=[("day", "string")])
    assert sorted(rows) == [((1, B0, 0), 1, "x", Decimal("0.10"), "d1"),
                            ((2, B0, 0), 2, "y", Decimal("0.20"), "d:2")]


@pytest.mark.hms
def test_hive4_commits_aborts_and_leaves_open_and_reads_only_the_committed(hive4, hive_metastore):
    uri, name = hive_metastore.uri, table_name("h4_txns")
    location = hive4.create_table(uri, "acidorc_hive4", name, COLS)

    def insert(rows):
        txn = hive4.open_txn(uri)
        lock = hive4.lock(uri, txn, "acidorc_hive4", name, kind="shared_write", operation="INSERT")
        assert lock.state == "ACQUIRED"
        write_id = hive4.allocate_write_id(uri, txn, "acidorc_hive4", name)
        hive4.heartbeat(uri, txn, lock.id)
        hive4.write_insert(location, write_id, rows, COLS)
        return txn, write_id

    committed, w1 = insert([(1, "one", Decimal("1.00")), (2, "two", Decimal("2.00"))])
    hive4.commit_txn(uri, committed)
    aborted, w2 = insert([(3, "three", Decimal("3.00"))])
    hive4.abort_txn(uri, aborted)
    left_open, w3 = insert([(4, "four", Decimal("4.00"))])
    try:
        assert (w1, w2, w3) == (1, 2, 3)
        got = hive4.read_via_hms(uri, "acidorc_hive4", name)
        assert sorted(got.rows) == [((1, B0, 0), 1, "one", Decimal("1.00")), ((1, B0, 1), 2, "two", Decimal("2.00"))]
        assert got.valid_write_ids == f"acidorc_hive4.{name}:3:3:3:2"
        assert got.location == location and got.columns == COLS
        # the same files, everything taken as committed: what the snapshot kept out is on disk
        everything = hive4.read(location, hive4.valid_txns(1 << 40), hive4.valid_write_ids("x.y", 3), columns=COLS)
        assert [r[1] for r in sorted(everything)] == [1, 2, 3, 4]
    finally:
        hive4.abort_txn(uri, left_open)


@pytest.mark.hms
def test_hive4_update_and_delete_read_back_by_hive4(hive4, hive_metastore):
    uri, db, name = hive_metastore.uri, "acidorc_hive4", table_name("h4_dml")
    location = hive4.create_table(uri, db, name, COLS)

    def in_txn(kind, operation, write):
        txn = hive4.open_txn(uri)
        assert hive4.lock(uri, txn, db, name, kind=kind, operation=operation).state == "ACQUIRED"
        out = write(hive4.allocate_write_id(uri, txn, db, name))
        hive4.commit_txn(uri, txn)
        return out

    written = in_txn("shared_write", "INSERT", lambda w: hive4.write_insert(
        location, w, [(1, "a", Decimal("1.00")), (2, "b", Decimal("2.00")), (3, "c", Decimal("3.00"))], COLS))
    assert written.row_ids == [(1, B0, 0), (1, B0, 1), (1, B0, 2)]
    assert written.insert_file.endswith("/delta_0000001_0000001_0000/bucket_00000")
    [update] = in_txn("shared_write", "UPDATE", lambda w: hive4.write_update(
        location, w, [((1, B0, 0), (1, "A", Decimal("10.00")))], COLS))
    assert update.delete_file.endswith("/delete_delta_0000002_0000002_0000/bucket_00000")
    assert update.insert_file.endswith("/delta_0000002_0000002_0000/bucket_00000")
    after_update = hive4.snapshot(uri, db, name)
    [delete] = in_txn("exclusive", "DELETE", lambda w: hive4.write_delete(location, w, [(1, B0, 1)], COLS))
    assert delete.insert_file is None and delete.delete_file.endswith("/delete_delta_0000003_0000003_0000/bucket_00000")

    got = hive4.read_via_hms(uri, db, name)
    assert sorted(got.rows) == [((1, B0, 2), 3, "c", Decimal("3.00")), ((2, B0, 0), 1, "A", Decimal("10.00"))]
    assert sorted(hive4.read(location, *after_update, columns=COLS)) == [
        ((1, B0, 1), 2, "b", Decimal("2.00")), ((1, B0, 2), 3, "c", Decimal("3.00")),
        ((2, B0, 0), 1, "A", Decimal("10.00"))]


@pytest.mark.hms
def test_hive4_reads_a_partitioned_table_through_the_metastore(hive4, hive_metastore):
    uri, db, name = hive_metastore.uri, "acidorc_hive4", table_name("h4_parts")
    hive4.create_table(uri, db, name, COLS, partition_columns=[("day", "string")])
    txn = hive4.open_txn(uri)
    write_id = hive4.allocate_write_id(uri, txn, db, name)
    for day, row in (("d1", (1, "x", Decimal("0.10"))), ("a/b", (2, "y", Decimal("0.20")))):
        part = hive4.add_partition(uri, db, name, [day])
        lock = hive4.lock(uri, txn, db, name, partition=f"day={day.replace('/', '%2F')}", operation="INSERT")
        assert lock.state == "ACQUIRED"
        hive4.write_insert(part, write_id, [row], COLS)
    assert hive4.read_via_hms(uri, db, name).rows == []  # not committed yet
    hive4.commit_txn(uri, txn)
    got = hive4.read_via_hms(uri, db, name)
    assert got.partition_columns == [("day", "string")]
    assert sorted(got.rows) == [((1, B0, 0), 1, "x", Decimal("0.10"), "d1"),
                                ((1, B0, 0), 2, "y", Decimal("0.20"), "a/b")]
