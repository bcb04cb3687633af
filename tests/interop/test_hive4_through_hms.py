"""acidorc and Hive 4.1 sharing one real Hive Metastore (issue 15): the same tables, the same
transactions, write ids, locks and write-set check, each engine reading what the other wrote.

acidorc uses the HMS as its transaction store (``metastoreUrl="thrift://..."``); Hive 4 is its own
ACID reader / writer and ``HiveMetaStoreClient`` (tests/interop/hive4.py). Every expectation is a
literal list of rows with their ROW__IDs; after each step both engines' reads are compared with it
(and so with each other).

Conflicts: Hive's write-set check runs at commit only when the ``CommitTxnRequest`` says
``exclWriteEnabled=false`` (Hive's DbTxnManager with ``hive.txn.xlock.write=false``, the mode in
which UPDATE / DELETE take shared-write locks); Hive's side here commits that way. acidorc's
UPDATE takes Hive 4's exclusive-write lock before its snapshot, so it waits for a Hive UPDATE
holding a lock rather than losing a write-set check. MERGE runs on Spark (``AcidTable.forName``).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os

import pyarrow as pa
import pytest

import acid_source
from acid_source import AcidTable

pytestmark = [pytest.mark.interop, pytest.mark.hms]

DB = "acidorc_hive4_hms"
COLS = [("id", "int"), ("v", "string")]
SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string())])
PSCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string()), ("day", pa.string())])
B0 = 536870912  # BucketCodec V1 of writer (bucket) 0
_names = itertools.count()


def table_name(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{next(_names)}"


@pytest.fixture(scope="module")
def db(hive_metastore):
    """One database of the session's metastore for this module, made afresh."""
    from pymetastore.hive_metastore.ttypes import Database, NoSuchObjectException

    with hive_metastore.client() as c:
        try:
            c.drop_database(DB, True, True)
        except NoSuchObjectException:
            pass
        c.create_database(Database(name=DB, description="acidorc <-> Hive 4 through the HMS",
                                   locationUri=(hive_metastore.warehouse / f"{DB}.db").as_uri(), parameters={}))
    return DB


def acid_rows(uri: str, name: str, *, row_ids: bool = True) -> list[tuple]:
    """acidorc's read of ``db.name`` through the HMS: ``((writeId, bucketId, rowId), cols...)``
    sorted, or the plain columns without ``row_ids``."""
    t = AcidTable.load(f"{DB}.{name}", metastoreUrl=uri)
    if not row_ids:
        return sorted(tuple(r.values()) for r in t.scan().toArrow().to_pylist())
    out = []
    for r in t.scan(includeRowId=True).toArrow().to_pylist():
        rid = r.pop("ROW__ID")
        out.append(((rid["writeId"], rid["bucketId"], rid["rowId"]),) + tuple(r.values()))
    return sorted(out)


def hive_rows(hive4, uri: str, name: str) -> list[tuple]:
    return sorted(hive4.read_via_hms(uri, DB, name).rows)


def both_read(hive4, uri: str, name: str, expected: list[tuple]) -> None:
    """Hive 4 and acidorc read exactly ``expected`` (sorted literal rows with ROW__IDs)."""
    hive, acid = hive_rows(hive4, uri, name), acid_rows(uri, name)
    assert acid == expected, "acidorc"
    assert hive == expected, "Hive 4"
    assert acid_rows(uri, name, row_ids=False) == sorted(r[1:] for r in expected)


def create_acid_table(server, name: str, *, partitioned: bool = False) -> AcidTable:
    location = server.warehouse / f"{DB}.db" / name
    acid_source.create_table(str(location), PSCHEMA if partitioned else SCHEMA, name=f"{DB}.{name}",
                             partitionColumns=["day"] if partitioned else [], metastoreUrl=server.uri)
    return AcidTable.load(f"{DB}.{name}", metastoreUrl=server.uri)


def rows(schema: pa.Schema, *values: tuple) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(schema.names, v)) for v in values], schema=schema)


# --- 1. Hive writes, acidorc reads -----------------------------------------------------------

def test_acidorc_reads_exactly_what_hive4_committed(hive4, hive_metastore, db):
    uri, name = hive_metastore.uri, table_name("hive_writes")
    location = hive4.create_table(uri, db, name, COLS)

    def insert(values):
        txn = hive4.open_txn(uri)
        assert hive4.lock(uri, txn, db, name, kind="shared_read", operation="INSERT").state == "ACQUIRED"
        write_id = hive4.allocate_write_id(uri, txn, db, name)
        hive4.write_insert(location, write_id, values, COLS)
        return txn, write_id

    committed, w1 = insert([(1, "one"), (2, "two")])
    hive4.commit_txn(uri, committed)
    aborted, w2 = insert([(3, "three")])
    hive4.abort_txn(uri, aborted)
    left_open, w3 = insert([(4, "four")])
    try:
        update = hive4.open_txn(uri)
        assert hive4.lock(uri, update, db, name, kind="shared_write", operation="UPDATE").state == "ACQUIRED"
        w4 = hive4.allocate_write_id(uri, update, db, name)
        hive4.write_update(location, w4, [((1, B0, 0), (1, "ONE"))], COLS)
        hive4.commit_txn(uri, update)
        assert (w1, w2, w3, w4) == (1, 2, 3, 4)

        expected = [((1, B0, 1), 2, "two"), ((4, B0, 0), 1, "ONE")]
        assert acid_rows(uri, name) == expected
        assert acid_rows(uri, name, row_ids=False) == [(1, "ONE"), (2, "two")]
        assert hive_rows(hive4, uri, name) == expected
        t = AcidTable.load(f"{db}.{name}", metastoreUrl=uri)
        assert t.version == 4
    finally:
        hive4.abort_txn(uri, left_open)
    # aborting the open one changes nothing
    both_read(hive4, uri, name, [((1, B0, 1), 2, "two"), ((4, B0, 0), 1, "ONE")])


# --- 2. acidorc writes through the HMS, Hive reads -------------------------------------------

def test_hive4_reads_acidorc_appends_updates_deletes_and_compactions(hive4, hive_metastore, db):
    uri, name = hive_metastore.uri, table_name("acid_writes")
    t = create_acid_table(hive_metastore, name)
    both_read(hive4, uri, name, [])

    assert t.append(rows(SCHEMA, (1, "a"), (2, "b"), (3, "c")))["writeId"] == 1
    both_read(hive4, uri, name, [((1, B0, 0), 1, "a"), ((1, B0, 1), 2, "b"), ((1, B0, 2), 3, "c")])

    assert t.update("id = 2", {"v": "'B'"})["numUpdatedRows"] == 1  # write id 2
    both_read(hive4, uri, name, [((1, B0, 0), 1, "a"), ((1, B0, 2), 3, "c"), ((2, B0, 0), 2, "B")])

    assert t.delete("id = 3")["numDeletedRows"] == 1  # write id 3
    both_read(hive4, uri, name, [((1, B0, 0), 1, "a"), ((2, B0, 0), 2, "B")])

    assert t.append(rows(SCHEMA, (4, "d")))["writeId"] == 4
    after = [((1, B0, 0), 1, "a"), ((2, B0, 0), 2, "B"), ((4, B0, 0), 4, "d")]
    both_read(hive4, uri, name, after)

    root = hive_metastore.warehouse / f"{db}.db" / name
    t.compact("minor")  # row ids survive compaction
    assert {p.name.split("_v")[0] for p in root.iterdir() if "_v" in p.name} == {
        "delta_0000001_0000004", "delete_delta_0000001_0000004"}
    both_read(hive4, uri, name, after)
    t.compact("major")
    assert [p.name.split("_v")[0] for p in root.iterdir() if p.name.startswith("base_")] == ["base_0000004"]
    both_read(hive4, uri, name, after)

    assert t.update("id = 1", {"v": "'A'"})["numUpdatedRows"] == 1  # write id 5, over the base
    both_read(hive4, uri, name, [((2, B0, 0), 2, "B"), ((4, B0, 0), 4, "d"), ((5, B0, 0), 1, "A")])


def test_hive4_reads_acidorc_dml_on_a_partitioned_table(hive4, hive_metastore, db):
    uri, name = hive_metastore.uri, table_name("acid_parts")
    t = create_acid_table(hive_metastore, name, partitioned=True)

    def partitions():
        with hive_metastore.client() as c:
            return sorted(c.get_partition_names(db, name, -1))

    assert t.append(rows(PSCHEMA, (1, "a", "d1"), (2, "b", "d1"), (3, "c", "d2")))["writeId"] == 1
    assert partitions() == ["day=d1", "day=d2"]
    both_read(hive4, uri, name, [((1, B0, 0), 1, "a", "d1"), ((1, B0, 0), 3, "c", "d2"),
                                 ((1, B0, 1), 2, "b", "d1")])

    t.update("id = 2", {"v": "'B'"})  # 2: in d1
    both_read(hive4, uri, name, [((1, B0, 0), 1, "a", "d1"), ((1, B0, 0), 3, "c", "d2"),
                                 ((2, B0, 0), 2, "B", "d1")])

    t.update("id = 1", {"day": "'d3'"})  # 3: moves the row to a new partition
    assert partitions() == ["day=d1", "day=d2", "day=d3"]
    both_read(hive4, uri, name, [((1, B0, 0), 3, "c", "d2"), ((2, B0, 0), 2, "B", "d1"),
                                 ((3, B0, 0), 1, "a", "d3")])

    t.delete("id = 3")  # 4: d2 is left empty
    both_read(hive4, uri, name, [((2, B0, 0), 2, "B", "d1"), ((3, B0, 0), 1, "a", "d3")])

    t.append(rows(PSCHEMA, (4, "d", "d2"), (5, "e", "d4")))  # 5
    assert partitions() == ["day=d1", "day=d2", "day=d3", "day=d4"]
    after = [((2, B0, 0), 2, "B", "d1"), ((3, B0, 0), 1, "a", "d3"), ((5, B0, 0), 4, "d", "d2"),
             ((5, B0, 0), 5, "e", "d4")]
    both_read(hive4, uri, name, after)

    t.compact("minor", partitionFilter="day = 'd1'")
    both_read(hive4, uri, name, after)
    t.compact("major")
    both_read(hive4, uri, name, after)
    assert partitions() == ["day=d1", "day=d2", "day=d3", "day=d4"]


# --- 3. one table, two writers: write ids are never handed out twice --------------------------

def test_interleaved_hive4_and_acidorc_writes_get_distinct_write_ids(hive4, hive_metastore, db):
    uri, name = hive_metastore.uri, table_name("interleaved")
    t = create_acid_table(hive_metastore, name)
    location = t.location

    # Hive allocates first, acidorc appends and commits in between, Hive commits last
    hive_txn = hive4.open_txn(uri)
    assert hive4.lock(uri, hive_txn, db, name, kind="shared_read", operation="INSERT").state == "ACQUIRED"
    hive_w = hive4.allocate_write_id(uri, hive_txn, db, name)
    hive4.write_insert(location, hive_w, [(1, "hive")], COLS)
    acid_w = t.append(rows(SCHEMA, (2, "acid")))["writeId"]
    assert (hive_w, acid_w) == (1, 2)
    both_read(hive4, uri, name, [((2, B0, 0), 2, "acid")])  # Hive's write is still open
    hive4.commit_txn(uri, hive_txn)
    both_read(hive4, uri, name, [((1, B0, 0), 1, "hive"), ((2, B0, 0), 2, "acid")])

    # acidorc allocates first (a staged write), Hive writes and commits, acidorc commits last
    with t.newWrite() as staged:
        task = staged.writer(0)
        task.write(rows(SCHEMA, (3, "acid2")).to_batches()[0])
        result = task.close()
        hive_txn = hive4.open_txn(uri)
        assert hive4.lock(uri, hive_txn, db, name, kind="shared_read", operation="INSERT").state == "ACQUIRED"
        hive_w = hive4.allocate_write_id(uri, hive_txn, db, name)
        hive4.write_insert(location, hive_w, [(4, "hive2")], COLS)
        hive4.commit_txn(uri, hive_txn)
        assert (staged.writeId, hive_w) == (3, 4)
        both_read(hive4, uri, name, [((1, B0, 0), 1, "hive"), ((2, B0, 0), 2, "acid"), ((4, B0, 0), 4, "hive2")])
        staged.commit([result])
    both_read(hive4, uri, name, [((1, B0, 0), 1, "hive"), ((2, B0, 0), 2, "acid"), ((3, B0, 0), 3, "acid2"),
                                 ((4, B0, 0), 4, "hive2")])


# --- 4. conflicting UPDATEs between the engines ------------------------------------------------

def _hive_update(hive4, uri, db, name, location, txn, row_id, new_row, partition=None):
    """Hive's UPDATE of one row in its open ``txn`` (shared-write lock, as DbTxnManager with
    ``hive.txn.xlock.write=false``), written, not committed; returns the write id."""
    lock = hive4.lock(uri, txn, db, name, partition=partition, kind="shared_write", operation="UPDATE")
    assert lock.state == "ACQUIRED"
    write_id = hive4.allocate_write_id(uri, txn, db, name)
    hive4.write_update(location, write_id, [(row_id, new_row)], COLS)
    return write_id


def test_conflicting_updates_acidorc_commits_first_and_hive4_fails(hive4, hive_metastore, db):
    from interop.hive4 import Hive4Error

    uri, name = hive_metastore.uri, table_name("conflict_hive_last")
    t = create_acid_table(hive_metastore, name)
    t.append(rows(SCHEMA, (1, "a"), (2, "b")))  # write id 1
    hive_txn = hive4.open_txn(uri)  # Hive's UPDATE starts first ...
    assert t.update("id = 1", {"v": "'acid'"})["writeId"] == 2  # ... acidorc's commits first
    assert _hive_update(hive4, uri, db, name, t.location, hive_txn, (1, B0, 0), (1, "hive")) == 3
    with pytest.raises(Hive4Error) as failed:  # as DbTxnManager commits with hive.txn.xlock.write=false
        hive4.commit_txn(uri, hive_txn, excl_write_enabled=False)
    assert failed.value.java_class.endswith("TxnAbortedException")
    assert f"write conflict on {db}/{name} " in str(failed.value)
    both_read(hive4, uri, name, [((1, B0, 1), 2, "b"), ((2, B0, 0), 1, "acid")])


def test_acidorc_update_waits_for_hive4s_update_and_changes_hive4s_version(hive4, hive_metastore, db):
    """Hive's UPDATE holds its lock; acidorc's UPDATE of the same table (Hive 4's exclusive-write
    lock, taken before its snapshot) waits, and once Hive committed changes the row as Hive left
    it: the row exists once, with both changes."""
    import threading

    from pymetastore.hive_metastore.ttypes import ShowLocksRequest
    from servers.hive_metastore import wait_for

    uri, name = hive_metastore.uri, table_name("conflict_acid_last")
    t = create_acid_table(hive_metastore, name)
    t.append(rows(SCHEMA, (1, "a"), (2, "b")))  # write id 1
    hive_txn = hive4.open_txn(uri)
    assert _hive_update(hive4, uri, db, name, t.location, hive_txn, (1, B0, 0), (1, "hive")) == 2
    outcome: list = []

    def acid_update():
        try:
            outcome.append(t.update("id = 1", {"v": "v || '+acid'"}))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            outcome.append(exc)

    worker = threading.Thread(target=acid_update, daemon=True)
    worker.start()
    try:
        with hive_metastore.client() as c:
            def acid_waits():
                locks = c.show_locks(ShowLocksRequest(dbname=db, tablename=name)).locks or []
                return [lk for lk in locks if lk.txnid != hive_txn and lk.state == 2]  # LockState.WAITING

            wait_for(acid_waits, timeout=30, what="acidorc's UPDATE waiting for Hive's lock")
        assert not outcome
        hive4.commit_txn(uri, hive_txn, excl_write_enabled=False)
    finally:
        worker.join(60)
    [result] = outcome
    assert isinstance(result, dict), result
    assert (result["writeId"], result["numUpdatedRows"]) == (3, 1)
    both_read(hive4, uri, name, [((1, B0, 1), 2, "b"), ((3, B0, 0), 1, "hive+acid")])


def test_conflicting_updates_of_one_partition_fail_hive4_and_other_partitions_do_not(hive4, hive_metastore, db):
    from interop.hive4 import Hive4Error

    uri, name = hive_metastore.uri, table_name("conflict_parts")
    t = create_acid_table(hive_metastore, name, partitioned=True)
    t.append(rows(PSCHEMA, (1, "a", "d1"), (2, "b", "d2")))  # write id 1
    d1, d2 = f"{t.location}/day=d1", f"{t.location}/day=d2"

    # Hive's UPDATE of day=d2 starts, acidorc's UPDATE of day=d1 commits first: no conflict
    txn = hive4.open_txn(uri)
    assert t.update("id = 1", {"v": "'acid'"})["writeId"] == 2
    assert _hive_update(hive4, uri, db, name, d2, txn, (1, B0, 0), (2, "hive"), partition="day=d2") == 3
    hive4.commit_txn(uri, txn, excl_write_enabled=False)
    both_read(hive4, uri, name, [((2, B0, 0), 1, "acid", "d1"), ((3, B0, 0), 2, "hive", "d2")])

    # Hive's UPDATE of day=d1 starts, acidorc's UPDATE of day=d1 commits first: Hive fails
    txn = hive4.open_txn(uri)
    assert t.update("id = 1", {"v": "'acid2'"})["writeId"] == 4
    assert _hive_update(hive4, uri, db, name, d1, txn, (2, B0, 0), (1, "hive"), partition="day=d1") == 5
    with pytest.raises(Hive4Error) as failed:
        hive4.commit_txn(uri, txn, excl_write_enabled=False)
    assert failed.value.java_class.endswith("TxnAbortedException")
    assert f"write conflict on {db}/{name}/day=d1" in str(failed.value)
    both_read(hive4, uri, name, [((3, B0, 0), 2, "hive", "d2"), ((4, B0, 0), 1, "acid2", "d1")])


# --- 5. an open (then aborted) acidorc write in another process --------------------------------

def _staged_writes(uri: str, name: str, conn) -> None:
    """In a separate process: a staged append left open until the parent says ``abort``, then
    (once the parent says ``next``) another one left open until it says ``commit``; reports its
    write ids and each outcome."""
    t = AcidTable.load(f"{DB}.{name}", metastoreUrl=uri)
    for values in ([(10, "open-then-aborted")], [(20, "open-then-committed")]):
        if values[0][0] == 20:
            assert conn.recv() == "next"  # the parent has read the table after the abort
        staged = t.newWrite()
        task = staged.writer(0)
        task.write(rows(SCHEMA, *values).to_batches()[0])
        result = task.close()
        conn.send(staged.writeId)
        if conn.recv() == "commit":
            staged.commit([result])
        else:
            staged.abort([result])
        conn.send("done")
    conn.close()


def test_hive4_does_not_see_an_open_or_aborted_acidorc_write_of_another_process(hive4, hive_metastore, db):
    uri, name = hive_metastore.uri, table_name("open_write")
    t = create_acid_table(hive_metastore, name)
    t.append(rows(SCHEMA, (1, "a")))  # write id 1
    committed = [((1, B0, 0), 1, "a")]
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_staged_writes, args=(uri, name, child), daemon=True)
    proc.start()
    try:
        def receive():
            assert parent.poll(60), "the writer process did not answer"
            return parent.recv()

        assert receive() == 2  # write id 2 allocated, its rows written, not committed
        got = hive4.read_via_hms(uri, db, name)
        assert sorted(got.rows) == committed
        assert got.valid_write_ids == f"{db}.{name}:2:2:2:"
        assert acid_rows(uri, name) == committed
        # the rows are on storage: a read that takes every write id as committed shows them
        everything = hive4.read(t.location, hive4.valid_txns(1 << 40), hive4.valid_write_ids("x.y", 2), columns=COLS)
        assert sorted(everything) == committed + [((2, B0, 0), 10, "open-then-aborted")]

        parent.send("abort")
        assert receive() == "done"
        got = hive4.read_via_hms(uri, db, name)
        assert sorted(got.rows) == committed
        assert got.valid_write_ids == f"{db}.{name}:2:9223372036854775807::2"
        assert acid_rows(uri, name) == committed

        parent.send("next")
        assert receive() == 3  # the second write, open
        assert hive_rows(hive4, uri, name) == committed
        parent.send("commit")
        assert receive() == "done"
        both_read(hive4, uri, name, committed + [((3, B0, 0), 20, "open-then-committed")])
    finally:
        proc.join(30)
        if proc.is_alive():
            proc.kill()
    assert proc.exitcode == 0


# --- MERGE needs Spark -------------------------------------------------------------------------

@pytest.mark.spark
def test_hive4_reads_a_spark_merge_through_the_hms(hive4, hive_metastore, db, spark):
    uri, name = hive_metastore.uri, table_name("merge")
    create_acid_table(hive_metastore, name).append(rows(SCHEMA, (1, "a"), (2, "b")))  # write id 1
    target = AcidTable.forName(spark, f"{DB}.{name}", metastoreUrl=uri)
    source = spark.createDataFrame([(2, "B"), (3, "c")], "id int, v string")
    (target.alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())  # write id 2
    hive, acid = hive_rows(hive4, uri, name), acid_rows(uri, name)
    assert hive == acid
    assert sorted(r[1:] for r in acid) == [(1, "a"), (2, "B"), (3, "c")]
    by_id = {r[1]: r[0] for r in acid}
    assert by_id[1] == (1, B0, 0)  # untouched: its row id from the append
    assert by_id[2][0] == by_id[3][0] == 2  # the update and the insert: the MERGE's write id
    assert by_id[2] != by_id[3]
