"""The transaction store, on real SQLite files: tables, transactions, snapshots, the conflict
rules of DESIGN.md, and real concurrent processes."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sqlite3
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

from acid_source.errors import (
    AcidError,
    ConflictError,
    InvalidArgumentError,
    MetastoreError,
    NoSuchTableError,
    SchemaError,
    TableExistsError,
    TransactionStateError,
)
from acid_source.layout.writeids import LONG_MAX, ValidTxnList, ValidWriteIdList
from acid_source.metastore import CONFLICT_CHECKED, OPERATIONS, Metastore, default_url

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # spawned workers import metastore_workers by name

import metastore_workers  # noqa: E402
from servers.postgres import sqlite_only  # noqa: E402

# layout arguments of create_table are checked by tableinfo.validate_layout (shared with the
# write options): argument errors, which the Spark edge reports as options
BAD_VALUE = InvalidArgumentError
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ds", pa.string())])


@pytest.fixture
def table(ms, tmp_path):
    return ms.create_table(tmp_path / "warehouse" / "sales", SCHEMA, name="Default.Sales", partition_columns=["ds"])


# ---------------------------------------------------------------------------------------------
# URLs and pickling
# ---------------------------------------------------------------------------------------------
def test_default_url_from_environment_else_home_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    assert default_url() == f"sqlite:///{tmp_path / 'env.db'}"
    Metastore().open_transaction()
    assert (tmp_path / "env.db").exists()

    monkeypatch.delenv("ACIDORC_METASTORE_URL")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_url() == f"sqlite:///{tmp_path / 'home' / '.acidorc' / 'metastore.db'}"
    assert (tmp_path / "home" / ".acidorc").is_dir()


def test_a_bare_path_means_a_sqlite_file(tmp_path):
    ms = Metastore(tmp_path / "plain.db")
    assert ms.url == f"sqlite:///{tmp_path / 'plain.db'}"
    ms.open_transaction()
    assert (tmp_path / "plain.db").exists()


def test_bad_urls_raise_metastore_errors(tmp_path):
    with pytest.raises(MetastoreError, match="cannot parse metastore URL"):
        Metastore("postgresql://u@h:notaport/db")
    ms = Metastore("nosuchdialect://host/db")  # lazily: nothing happens until first use
    with pytest.raises(MetastoreError, match="nosuchdialect"):
        ms.open_transaction()
    with pytest.raises(MetastoreError, match="unable to open database file"):
        Metastore(f"sqlite:///{tmp_path}/missing-dir/m.db").open_transaction()


def test_picklable_before_and_after_use_and_the_copy_sees_the_same_data(ms, table):
    txn = ms.open_transaction()
    state = ms.__getstate__()
    assert set(state) == {"url", "clock", "busy_timeout", "retry_attempts", "create"}  # no engine, no lock
    copy = pickle.loads(pickle.dumps(ms))
    assert copy.txn_state(txn) == "open" and copy.get_table(name="default.sales") == table
    copy.commit(txn)
    assert ms.txn_state(txn) == "committed"
    assert repr(copy) == f"Metastore('{ms.url}')"


def test_passwords_stay_out_of_repr_and_messages():
    ms = Metastore("postgresql://scott:tiger@localhost:1/db")
    assert "tiger" not in repr(ms) and "***" in ms.url
    assert "tiger" in ms.__getstate__()["url"]  # but a pickled copy can still log in


def test_schema_version_newer_than_this_release_is_refused(db_url):
    Metastore(db_url).open_transaction()
    engine = sa.create_engine(db_url)
    with engine.begin() as con:
        con.exec_driver_sql("UPDATE acidorc_meta SET value = '99' WHERE name = 'schema_version'")
    engine.dispose()
    with pytest.raises(MetastoreError, match="schema version 99, newer"):
        Metastore(db_url).open_transaction()


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------
def test_create_get_find(ms, table, tmp_path):
    loc = str(tmp_path / "warehouse" / "sales")
    assert table.location == loc and table.name == "default.sales" and table.table_id >= 1
    assert table.partition_columns == ("ds",) and table.data_columns == ("id", "name")
    assert table.properties == {"transactional": "true", "transactional_properties": "default",
                                "bucketing_version": "2", "orc.compress": "ZLIB"}
    for spelling in (loc, loc + "/", f"file://{loc}", f"file:{loc}", Path(loc)):
        assert ms.get_table(spelling) == table
        assert ms.find_table(spelling) == table
    assert ms.get_table(name="DEFAULT.sales") == table
    assert ms.get_table(table_id=table.table_id) == table
    assert ms.get_table(loc, name="default.sales", table_id=table.table_id) == table
    assert ms.find_table(tmp_path / "elsewhere") is None
    assert ms.list_tables() == [table]


def test_missing_tables_name_what_was_asked(ms, table, tmp_path):
    with pytest.raises(NoSuchTableError, match="nothing-here") as info:
        ms.get_table(tmp_path / "nothing-here")
    assert isinstance(info.value, LookupError) and isinstance(info.value, AcidError)
    assert info.value.location == str(tmp_path / "nothing-here")
    with pytest.raises(NoSuchTableError, match="'default.nope'"):
        ms.get_table(name="default.nope")
    with pytest.raises(NoSuchTableError, match="name 'other'"):  # location right, name wrong
        ms.get_table(table.location, name="other")
    with pytest.raises(NoSuchTableError, match="id 999"):
        ms.valid_write_ids(999)


def test_duplicates_and_if_not_exists(ms, table, tmp_path):
    with pytest.raises(TableExistsError, match=f"already registered at {table.location}"):
        ms.create_table(table.location + "/", SCHEMA)
    with pytest.raises(TableExistsError, match="'default.sales' is already used"):
        ms.create_table(tmp_path / "other", SCHEMA, name="default.SALES")
    again = ms.create_table(table.location, pa.schema([("x", pa.int8())]), if_not_exists=True)
    assert again == table  # the registered table, not the one asked for
    assert ms.create_table(table.location, SCHEMA, name="default.sales", if_not_exists=True) == table
    with pytest.raises(TableExistsError):  # same location, different name: not "the same table"
        ms.create_table(table.location, SCHEMA, name="default.other", if_not_exists=True)
    second = ms.create_table(tmp_path / "other", SCHEMA)
    assert second.table_id > table.table_id and second.name is None


def test_url_locations_are_kept_as_urls(ms):
    t = ms.create_table("S3://bucket/warehouse/t/", SCHEMA)
    assert t.location == "s3://bucket/warehouse/t"
    assert ms.get_table("s3://bucket/warehouse/t") == t


def test_layout_arguments_are_validated(ms, tmp_path):
    loc = tmp_path / "bad"
    with pytest.raises(SchemaError, match="'nope'"):
        ms.create_table(loc, SCHEMA, partition_columns=["nope"])
    with pytest.raises(InvalidArgumentError, match="numBuckets"):
        ms.create_table(loc, SCHEMA, bucket_columns=["id"])
    with pytest.raises(InvalidArgumentError, match="partition columns and cannot be bucket columns"):
        ms.create_table(loc, SCHEMA, partition_columns=["ds"], bucket_columns=["ds"], num_buckets=4)
    with pytest.raises(InvalidArgumentError, match="compression"):
        ms.create_table(loc, SCHEMA, compression="gzip")
    with pytest.raises(InvalidArgumentError, match="bucketing_version"):
        ms.create_table(loc, SCHEMA, bucketing_version=3)
    with pytest.raises(BAD_VALUE, match="contradicts"):
        ms.create_table(loc, SCHEMA, properties={"transactional": "false"})
    with pytest.raises(SchemaError, match="pyarrow.Schema"):
        ms.create_table(loc, {"id": "int"})
    assert ms.find_table(loc) is None  # nothing registered by any failed attempt


def test_insert_only_bucketed_table_properties(ms, tmp_path):
    t = ms.create_table(tmp_path / "mm", SCHEMA, bucket_columns=["id"], num_buckets=8, insert_only=True,
                        compression="SNAPPY", bucketing_version=1, properties={"no_auto_compaction": "true"})
    got = ms.get_table(tmp_path / "mm")
    assert got == t and got.num_buckets == 8 and got.bucket_columns == ("id",)
    assert got.insert_only and got.compression == "snappy" and got.bucketing_version == 1
    assert got.properties == {"transactional": "true", "transactional_properties": "insert_only",
                              "bucketing_version": "1", "orc.compress": "SNAPPY", "no_auto_compaction": "true"}


ARROW_TYPES = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "float32": pa.float32(), "float64": pa.float64(), "bool": pa.bool_(), "string": pa.string(),
    "binary": pa.binary(), "decimal": pa.decimal128(38, 10), "decimal_small": pa.decimal128(5, 2),
    "date": pa.date32(), "timestamp_us": pa.timestamp("us"), "timestamp_us_utc": pa.timestamp("us", tz="UTC"),
    "struct": pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string())),
                         ("c", pa.struct([("d", pa.decimal128(38, 10))]))]),
    "list": pa.list_(pa.struct([("x", pa.timestamp("us")), ("y", pa.binary())])),
    "map": pa.map_(pa.string(), pa.int64()),
    "map_nested": pa.map_(pa.int32(), pa.struct([("v", pa.list_(pa.date32()))])),
}


@pytest.mark.parametrize("type_name", sorted(ARROW_TYPES))
def test_schema_round_trips_every_type(ms, tmp_path, type_name):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("v", ARROW_TYPES[type_name], metadata={b"comment": b"the value"})],
                       metadata={b"origin": b"test"})
    ms.create_table(tmp_path / type_name, schema)
    got = ms.get_table(tmp_path / type_name).schema
    assert got.equals(schema, check_metadata=True)
    assert got.field("v").type == ARROW_TYPES[type_name] and not got.field("id").nullable


# ---------------------------------------------------------------------------------------------
# transactions and write ids
# ---------------------------------------------------------------------------------------------
def test_txn_ids_increase_and_write_ids_count_per_table(ms, table, tmp_path):
    other = ms.create_table(tmp_path / "other", SCHEMA)
    txns = [ms.open_transaction(user="u", description=f"n{i}") for i in range(4)]
    assert txns == sorted(txns) and len(set(txns)) == 4
    assert [ms.allocate_write_id(t, table.table_id) for t in txns] == [1, 2, 3, 4]
    assert ms.allocate_write_id(txns[2], table.table_id) == 3  # asking again: the same id
    assert ms.allocate_write_id(txns[3], other.table_id) == 1  # write ids are per table
    assert ms.allocate_write_id(txns[0], other.table_id) == 2
    info = ms.txn_info(txns[0])
    assert info["write_ids"] == {table.table_id: 1, other.table_id: 2}
    assert info["user_name"] == "u" and info["description"] == "n0" and info["pid"] == os.getpid()
    with pytest.raises(NoSuchTableError, match="id 424242"):
        ms.allocate_write_id(txns[0], 424242)


def test_valid_write_ids_show_open_and_aborted(ms, table):
    tid = table.table_id
    assert str(ms.valid_write_ids(tid)) == f"default.sales:0:{LONG_MAX}::"
    t1, t2, t3, t4, t5 = (ms.open_transaction() for _ in range(5))
    for t in (t1, t2, t3, t4):
        ms.allocate_write_id(t, tid)  # write ids 1..4
    ms.commit(t1)
    ms.abort(t3, "test")
    snap = ms.valid_write_ids(tid)
    assert str(snap) == "default.sales:4:2:2,4:3"
    assert [snap.is_write_id_valid(w) for w in range(1, 6)] == [True, False, False, False, False]
    assert snap.is_write_id_aborted(3) and not snap.is_write_id_aborted(2)
    assert ValidWriteIdList.parse(str(snap)) == snap

    own = ms.valid_write_ids(tid, for_txn=t2)  # a txn sees its own writes
    assert str(own) == "default.sales:4:4:4:3" and own.is_write_id_valid(2)
    assert ValidWriteIdList.parse(str(own)) == own
    assert ms.valid_write_ids(tid, for_txn=t5) == snap  # t5 has no write id here

    ms.commit(t2)
    ms.commit(t4)
    done = ms.valid_write_ids(tid)
    assert str(done) == f"default.sales:4:{LONG_MAX}::3" and done.min_open_id is None
    assert ms.write_ids_of(tid, "aborted") == [3]
    assert ms.write_ids_of(tid, "committed") == [1, 2, 4]
    assert ms.write_ids_of(tid, "open") == []
    with pytest.raises(InvalidArgumentError, match="argument 'state'"):
        ms.write_ids_of(tid, "pending")
    with pytest.raises(TransactionStateError, match="transaction 999 does not exist"):
        ms.valid_write_ids(tid, for_txn=999)


def test_unnamed_table_writes_null_as_its_name(ms, tmp_path):
    t = ms.create_table(tmp_path / "anon", SCHEMA)
    assert str(ms.valid_write_ids(t.table_id)).startswith("null:0:")


def test_valid_txns(ms, table):
    assert str(ms.valid_txns()) == f"0:{LONG_MAX}::"
    t1, t2, t3, t4 = (ms.open_transaction() for _ in range(4))
    ms.commit(t1)
    ms.abort(t3)
    snap = ms.valid_txns()
    assert (snap.high_watermark, snap.min_open, snap.open_ids, snap.aborted_ids) == (t4, t2, (t2, t4), (t3,))
    assert ValidTxnList.parse(str(snap)) == snap
    own = ms.valid_txns(for_txn=t2)
    assert own.open_ids == (t4,) and own.min_open == t4 and own.is_txn_valid(t2)


def test_transaction_state_machine(ms, table):
    tid = table.table_id
    t = ms.open_transaction()
    assert ms.txn_state(t) == "open"
    ms.heartbeat(t)
    ms.commit(t)
    assert ms.txn_state(t) == "committed"
    for call in (lambda: ms.commit(t), lambda: ms.abort(t), lambda: ms.heartbeat(t),
                 lambda: ms.allocate_write_id(t, tid)):
        with pytest.raises(TransactionStateError, match=f"transaction {t}: it is committed") as info:
            call()
        assert info.value.txn_id == t and info.value.state == "committed"

    a = ms.open_transaction()
    ms.abort(a, "user cancelled")
    ms.abort(a)  # idempotent
    assert ms.txn_state(a) == "aborted" and ms.txn_info(a)["abort_reason"] == "user cancelled"
    with pytest.raises(TransactionStateError, match=r"commit transaction \d+: it is aborted \(user cancelled\)"):
        ms.commit(a)
    with pytest.raises(TransactionStateError, match="heartbeat"):
        ms.heartbeat(a)
    with pytest.raises(TransactionStateError, match="transaction 12345 does not exist"):
        ms.txn_state(12345)
    with pytest.raises(TransactionStateError, match="12345"):
        ms.abort(12345)

    o = ms.open_transaction()
    with pytest.raises(InvalidArgumentError, match="argument 'operation'"):
        ms.commit(o, operation="upsert")
    with pytest.raises(InvalidArgumentError, match="argument 'touched'"):
        ms.commit(o, touched={tid: "ds=1"})  # a string, not a list of partitions
    with pytest.raises(NoSuchTableError):
        ms.commit(o, touched={777: [""]})
    assert ms.txn_state(o) == "open"  # failed calls changed nothing


def test_abort_expired_uses_the_clock(ms, clock, table):
    dead = ms.open_transaction()
    ms.allocate_write_id(dead, table.table_id)
    alive = ms.open_transaction()
    clock.now += 10
    ms.heartbeat(alive)
    young = ms.open_transaction()
    clock.now += 5
    assert ms.abort_expired(8.0) == [dead]
    assert [ms.txn_state(t) for t in (dead, alive, young)] == ["aborted", "open", "open"]
    assert ms.write_ids_of(table.table_id, "aborted") == [1]
    with pytest.raises(TransactionStateError, match="no heartbeat for more than 8s"):
        ms.commit(dead)
    assert ms.abort_expired(8.0) == []
    clock.now += 100
    assert ms.abort_expired(8.0) == [alive, young]
    with pytest.raises(InvalidArgumentError, match="argument 'timeout_seconds'"):
        ms.abort_expired(-1)


def test_times_are_epoch_seconds_from_the_clock(ms, clock, table):
    t = ms.open_transaction()
    clock.now += 3.5
    ms.commit(t, touched={table.table_id: ["ds=1"]})
    info = ms.txn_info(t)
    assert info["started_at"] == clock.now - 3.5 and info["ended_at"] == clock.now
    assert ms.history(table.table_id)[0]["commit_time"] == clock.now


# ---------------------------------------------------------------------------------------------
# conflict rules (DESIGN.md "Concurrency rules")
# ---------------------------------------------------------------------------------------------
def _start(ms, table_id):
    txn = ms.open_transaction()
    ms.allocate_write_id(txn, table_id)
    return txn


@pytest.mark.parametrize("later", OPERATIONS)
@pytest.mark.parametrize("earlier", OPERATIONS)
def test_conflict_table(ms, table, earlier, later):
    """Two concurrent jobs on one partition: only UPDATE/DELETE/MERGE/compaction committing
    second fail, except that a compaction never fails an UPDATE/DELETE/MERGE and is failed
    only by an overwrite or another compaction (it keeps row ids). The first committer started
    first here, so write-id order agrees with commit order (the other order:
    tests/metastore/test_conflict_rules.py)."""
    tid = table.table_id
    first, second = _start(ms, tid), _start(ms, tid)
    ms.commit(first, touched={tid: ["ds=1"]}, operation=earlier)
    exempt = ((earlier == "compaction" and later in ("update", "delete", "merge"))
              or (later == "compaction" and earlier not in ("insert_overwrite", "compaction")))
    if later in CONFLICT_CHECKED and not exempt:
        with pytest.raises(ConflictError) as info:
            ms.commit(second, touched={tid: ["ds=1"]}, operation=later)
        err = info.value
        assert str(err).startswith(f"Aborting [txnid:{second}] due to a write conflict on "
                                   f"{table.location}/ds=1 committed by [txnid:{first}]")
        assert (err.txn_id, err.committed_txn_id, err.location, err.partition) == (
            second, first, table.location, "ds=1")
        assert ms.txn_state(second) == "aborted"
        assert ms.write_ids_of(tid, "aborted") == [2]  # its data stays invisible
    else:
        ms.commit(second, touched={tid: ["ds=1"]}, operation=later)
        assert ms.txn_state(second) == "committed"


def test_updates_on_different_partitions_both_succeed(ms, table):
    tid = table.table_id
    a, b = _start(ms, tid), _start(ms, tid)
    ms.commit(a, touched={tid: ["ds=1"]}, operation="update")
    ms.commit(b, touched={tid: ["ds=2"]}, operation="update")
    assert ms.txn_state(b) == "committed"


def test_insert_committing_after_an_update_succeeds(ms, table):
    tid = table.table_id
    upd, ins = _start(ms, tid), _start(ms, tid)
    ms.commit(upd, touched={tid: ["ds=1"]}, operation="update")
    ms.commit(ins, touched={tid: ["ds=1"]}, operation="insert")
    assert [h["operation"] for h in ms.history(tid)] == ["insert", "update"]


def test_update_fails_when_an_insert_committed_after_it_started(ms, table):
    tid = table.table_id
    upd = _start(ms, tid)
    ins = _start(ms, tid)
    ms.commit(ins, touched={tid: ["ds=1", "ds=2"]}, operation="insert")
    with pytest.raises(ConflictError, match=rf"ds=2 committed by \[txnid:{ins}\]"):
        ms.commit(upd, touched={tid: ["ds=2", "ds=3"]}, operation="delete")


def test_a_commit_before_the_start_is_no_conflict(ms, table):
    tid = table.table_id
    first = _start(ms, tid)
    ms.commit(first, touched={tid: ["ds=1"]}, operation="update")
    second = _start(ms, tid)  # starts after the first committed: it saw that data
    ms.commit(second, touched={tid: ["ds=1"]}, operation="update")
    assert ms.txn_state(second) == "committed"


def test_aborted_and_open_writers_are_no_conflict(ms, table):
    tid = table.table_id
    upd, gone, still_open = _start(ms, tid), _start(ms, tid), _start(ms, tid)
    ms.abort(gone)
    ms.commit(upd, touched={tid: ["ds=1"]}, operation="merge")
    assert ms.txn_state(upd) == "committed" and ms.txn_state(still_open) == "open"


def test_unpartitioned_table_and_the_earliest_conflict_is_named(ms, tmp_path):
    t = ms.create_table(tmp_path / "flat", SCHEMA)
    tid = t.table_id
    upd, i1, i2 = _start(ms, tid), _start(ms, tid), _start(ms, tid)
    ms.commit(i1, touched={tid: [""]})
    ms.commit(i2, touched={tid: [""]})
    with pytest.raises(ConflictError, match=rf"on {t.location} committed by \[txnid:{i1}\]") as info:
        ms.commit(upd, touched={tid: [""]}, operation="delete")
    assert info.value.partition == ""
    copy = pickle.loads(pickle.dumps(info.value))
    assert str(copy) == str(info.value) and copy.committed_txn_id == i1


def test_conflicts_are_per_table(ms, table, tmp_path):
    other = ms.create_table(tmp_path / "other", SCHEMA, partition_columns=["ds"])
    upd, ins = _start(ms, table.table_id), _start(ms, other.table_id)
    ms.commit(ins, touched={other.table_id: ["ds=1"]})
    ms.commit(upd, touched={table.table_id: ["ds=1"]}, operation="update")
    assert ms.txn_state(upd) == "committed"


# ---------------------------------------------------------------------------------------------
# history and drop
# ---------------------------------------------------------------------------------------------
def test_history_newest_first(ms, clock, table):
    tid = table.table_id
    a = _start(ms, tid)
    ms.commit(a, touched={tid: ["ds=2", "ds=1"]}, operation="insert")
    ms.abort(_start(ms, tid))
    b = _start(ms, tid)
    clock.now += 1
    ms.commit(b, touched={tid: ["ds=1"]}, operation="update")
    c = ms.open_transaction()  # a compaction: no write id, but touches the table
    ms.commit(c, touched={tid: ["ds=1"]}, operation="compaction")
    ms.commit(ms.open_transaction())  # touches nothing: not in the history
    hist = ms.history(tid)
    assert [(h["txn_id"], h["write_id"], h["operation"], h["touched"]) for h in hist] == [
        (c, None, "compaction", ["ds=1"]), (b, 3, "update", ["ds=1"]), (a, 1, "insert", ["ds=1", "ds=2"])]
    assert [h["commit_seq"] for h in hist] == sorted((h["commit_seq"] for h in hist), reverse=True)
    assert hist[1]["commit_time"] == clock.now
    assert ms.history(tid, limit=1) == hist[:1]
    with pytest.raises(InvalidArgumentError, match="argument 'limit'"):
        ms.history(tid, limit=-1)


def test_drop_table_is_refused_while_a_writer_is_open(ms, table):
    txn = _start(ms, table.table_id)
    with pytest.raises(TransactionStateError,
                       match=rf"cannot drop table {table.location}: open transaction\(s\) \[{txn}\]"):
        ms.drop_table(table.location)
    ms.commit(txn)
    assert ms.drop_table(name="default.sales") == table
    assert ms.find_table(table.location) is None
    with pytest.raises(NoSuchTableError):
        ms.drop_table(table.location)
    assert ms.drop_table(table.location, if_exists=True) is None
    again = ms.create_table(table.location, SCHEMA, name="default.sales")
    assert again.table_id != table.table_id  # ids are never reused


# ---------------------------------------------------------------------------------------------
# locking: BEGIN IMMEDIATE and retries (SQLite's own locks)
# ---------------------------------------------------------------------------------------------
def _try_write_lock(path) -> bool:
    con = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError as exc:
        assert "locked" in str(exc)
        return False
    finally:
        con.close()


@sqlite_only
def test_write_transactions_hold_the_write_lock_from_their_start(ms, tmp_path):
    path = tmp_path / "metastore.db"
    ms.valid_txns()  # creates the schema
    assert ms._run(lambda conn: _try_write_lock(path), write=True, what="probe") is False
    assert ms._run(lambda conn: _try_write_lock(path), write=False, what="probe") is True
    assert ms._run(lambda conn: conn.exec_driver_sql("PRAGMA journal_mode").scalar(), write=False,
                   what="probe") == "wal"


@sqlite_only
def test_lock_contention_is_retried_until_the_lock_is_free(db_url, tmp_path):
    Metastore(db_url).valid_txns()
    holder = sqlite3.connect(tmp_path / "metastore.db", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    released = threading.Event()

    def release():
        released.wait(0.3)
        holder.execute("COMMIT")
        released.set()

    threading.Thread(target=release, daemon=True).start()
    ms = Metastore(db_url, busy_timeout=0.02, retry_attempts=30)
    txn = ms.open_transaction()  # fails with "database is locked" until release() commits
    assert released.is_set() and ms.txn_state(txn) == "open"
    holder.close()


@sqlite_only
def test_lock_contention_gives_up_after_the_retry_budget(db_url, tmp_path):
    Metastore(db_url).valid_txns()
    holder = sqlite3.connect(tmp_path / "metastore.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        ms = Metastore(db_url, busy_timeout=0.01, retry_attempts=3)
        with pytest.raises(MetastoreError, match=r"cannot open a transaction in metastore sqlite:///.*"
                                                 r"after 3 attempts: database is locked"):
            ms.open_transaction()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert Metastore(db_url).valid_txns().high_watermark == 0  # nothing half-done


def test_threads_sharing_one_metastore(ms, table):
    """A driver's heartbeat thread and its committer share one object (and connection pool)."""
    got: list[tuple[int, int]] = []
    errors: list[BaseException] = []

    def work():
        try:
            for _ in range(5):
                txn = ms.open_transaction()
                got.append((txn, ms.allocate_write_id(txn, table.table_id)))
                ms.heartbeat(txn)
                ms.commit(txn, touched={table.table_id: ["ds=1"]})
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(w for _, w in got) == list(range(1, 21)) and len({t for t, _ in got}) == 20
    assert ms.write_ids_of(table.table_id, "committed") == list(range(1, 21))


# ---------------------------------------------------------------------------------------------
# real separate processes
# ---------------------------------------------------------------------------------------------
def _run_workers(target, n: int, args_for) -> dict[int, object]:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    sync = ctx.Barrier(n, timeout=60)
    procs = [ctx.Process(target=target, args=args_for(i, sync, queue)) for i in range(n)]
    for p in procs:
        p.start()
    try:
        results = dict((w, (status, value)) for w, status, value in (queue.get(timeout=120) for _ in procs))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    failed = {w: v for w, (s, v) in results.items() if s != "ok"}
    assert not failed, "\n".join(f"worker {w}:\n{tb}" for w, tb in failed.items())
    return {w: v for w, (_, v) in results.items()}


def test_processes_allocating_write_ids_never_collide_or_lose_commits(ms, table, db_url):
    workers, iterations = 4, 50
    results = _run_workers(metastore_workers.allocate_and_commit, workers,
                           lambda i, sync, q: (db_url, table.table_id, iterations, i, sync, q))
    pairs = [pair for done in results.values() for pair in done]
    txn_ids = [t for t, _ in pairs]
    write_ids = sorted(w for _, w in pairs)
    assert len(pairs) == workers * iterations
    assert write_ids == list(range(1, workers * iterations + 1))
    assert len(set(txn_ids)) == len(txn_ids)
    for done in results.values():  # each process saw its own txn ids increase
        assert [t for t, _ in done] == sorted(t for t, _ in done)

    assert str(ms.valid_write_ids(table.table_id)) == f"default.sales:200:{LONG_MAX}::"
    assert ms.write_ids_of(table.table_id, "committed") == write_ids
    hist = ms.history(table.table_id)
    assert len(hist) == 200 and {(h["txn_id"], h["write_id"]) for h in hist} == set(pairs)
    assert len({h["commit_seq"] for h in hist}) == 200
    txns = ms.valid_txns()
    assert txns.high_watermark == max(txn_ids) and not txns.open_ids and not txns.aborted_ids


def test_processes_using_a_fresh_store_at_once_all_succeed(store_backend, tmp_path, request):
    """The first use of a store creates its tables; several processes doing so at the same moment
    all succeed (on PostgreSQL one of them used to fail with 'relation ... already exists')."""
    if store_backend == "sqlite":
        urls = [f"sqlite:///{tmp_path / f'fresh-{i}.db'}" for i in range(5)]
    else:
        server = request.getfixturevalue("postgres_server")
        urls = [server.create_store() for _ in range(5)]
    workers = 6
    results = _run_workers(metastore_workers.first_use, workers, lambda i, sync, q: (urls, i, sync, q))
    for n, url in enumerate(urls):
        assert sorted(done[n] for done in results.values()) == list(range(1, workers + 1))
        assert list(Metastore(url).valid_txns().open_ids) == list(range(1, workers + 1))
    if store_backend != "sqlite":
        for url in urls:
            server.drop_store(url)


def test_processes_racing_update_commits(ms, table, db_url):
    """Rounds in which every process has an update open before any commits: on one shared
    partition exactly one wins per round, on a partition each exactly all win."""
    workers, rounds = 4, 6
    results = _run_workers(metastore_workers.racing_updates, workers,
                           lambda i, sync, q: (db_url, table.table_id, rounds, i, sync, q))
    per_round = list(zip(*(results[w] for w in range(workers))))
    assert len(per_round) == 2 * rounds
    committed = [[t for t, outcome, _ in rnd if outcome == "committed"] for rnd in per_round]
    assert [len(c) for c in committed] == [1] * rounds + [workers] * rounds
    for rnd in per_round:  # the losers were aborted, the winners committed
        for txn, outcome, state in rnd:
            assert state == ("committed" if outcome == "committed" else "aborted")
    winners = sorted(t for c in committed for t in c)
    assert sorted(h["txn_id"] for h in ms.history(table.table_id)) == winners
    assert len(ms.write_ids_of(table.table_id, "aborted")) == workers * 2 * rounds - len(winners)
