"""Transaction batches (Hive's streaming ``TransactionBatch``) on acidorc's own store, SQLite and
PostgreSQL: consecutive write ids in one database transaction, the same checks as a single
allocation, one heartbeat for all, expiry on a controlled clock, a lost answer, and the
Transaction that wraps one transaction of a batch. What every store does alike (the Hive
metastore too) is in test_store_contract.py."""

from __future__ import annotations

import pyarrow as pa
import pytest
from lossy_connections import LOCKED, commit_error, lossy_commits

from acid_source.errors import (
    ConflictError,
    InvalidArgumentError,
    StoreBehindStorageError,
    TableNotRegisteredError,
    TransactionStateError,
)
from acid_source.layout.ids_on_storage import list_ids_on_storage
from acid_source.layout.writeids import LONG_MAX
from acid_source.storage import Storage
from acid_source.txn import Transaction

SCHEMA = pa.schema([("id", pa.int64()), ("ds", pa.string())])


@pytest.fixture
def table(ms, tmp_path):
    return ms.create_table(tmp_path / "t", SCHEMA, name="streams.t", partition_columns=["ds"])


def test_a_batch_takes_consecutive_write_ids_after_single_writers(ms, table):
    tid = table.table_id
    single = ms.open_transaction()
    assert ms.allocate_write_id(single, tid) == 1
    batch = ms.open_transaction_batch(tid, 4, user="u", description="stream")
    assert [w for _, w in batch] == [2, 3, 4, 5]
    txn_ids = [t for t, _ in batch]
    assert txn_ids == list(range(single + 1, single + 5))
    assert all(ms.txn_state(t) == "open" for t in txn_ids)
    info = ms.txn_info(txn_ids[2])
    assert (info["user_name"], info["description"], info["write_ids"]) == ("u", "stream", {tid: 4})
    assert ms.allocate_write_id(txn_ids[1], tid) == 3  # asking again: the batch's write id
    after = ms.open_transaction()
    assert after == txn_ids[-1] + 1 and ms.allocate_write_id(after, tid) == 6
    assert ms.open_transaction_batch(tid, 1) == [(after + 1, 7)]


@pytest.mark.parametrize("count", [0, -1, True, 1.5, "3", None])
def test_a_batch_size_is_an_integer_of_at_least_one(ms, table, count):
    with pytest.raises(InvalidArgumentError, match="count") as caught:
        ms.open_transaction_batch(table.table_id, count)
    assert caught.value.argument == "count"
    assert ms.valid_write_ids(table.table_id).high_watermark == 0


def test_a_batch_on_a_missing_table_or_a_store_behind_its_storage_allocates_nothing(ms, table, tmp_path):
    with pytest.raises(TableNotRegisteredError):
        ms.open_transaction_batch(table.table_id + 999, 3)
    (tmp_path / "t" / "ds=1" / "delta_0000005_0000005_0000").mkdir(parents=True)
    before = ms.valid_txns().high_watermark
    with pytest.raises(StoreBehindStorageError, match="delta_0000005_0000005_0000") as caught:
        ms.open_transaction_batch(table.table_id, 3, on_storage=list_ids_on_storage(Storage(str(tmp_path / "t"))))
    assert caught.value.write_id == 1
    assert ms.valid_txns().high_watermark == before
    assert str(ms.valid_write_ids(table.table_id)) == f"{table.name}:0:{LONG_MAX}::"


def test_heartbeat_many_keeps_a_batch_alive_while_the_silent_expire(ms, table, clock):
    tid = table.table_id
    batch = [t for t, _ in ms.open_transaction_batch(tid, 3)]
    silent = ms.open_transaction_batch(tid, 2)
    for _ in range(3):
        clock.now += 40
        assert ms.heartbeat_many(batch) == set()
    assert ms.abort_expired(60) == [t for t, _ in silent]
    assert all(ms.txn_state(t) == "open" for t in batch)
    assert str(ms.valid_write_ids(tid)) == f"{table.name}:5:1:1,2,3:4,5"
    clock.now += 61
    assert ms.abort_expired(60) == batch  # the beats stopped: they expire too


def test_heartbeat_many_names_the_transactions_no_longer_open(ms, table):
    tid = table.table_id
    (t1, _), (t2, _), (t3, _) = ms.open_transaction_batch(tid, 3)
    ms.commit(t1, touched={tid: ["ds=1"]})
    ms.abort(t2, "producer gave up")
    unknown = t3 + 100
    assert ms.heartbeat_many([t1, t2, t3, unknown]) == {t1, t2, unknown}
    assert ms.heartbeat_many([]) == set()
    assert ms.txn_state(t3) == "open"


# --- a lost answer -------------------------------------------------------------------------------
def test_a_batch_whose_commit_answer_is_lost_is_opened_once(ms, table):
    script = ["lost"]

    def on_commit(conn, commit, backend):
        if not script:
            return commit()
        script.pop()
        commit()
        raise commit_error(backend, LOCKED)

    undo = lossy_commits(ms, on_commit)
    try:
        batch = ms.open_transaction_batch(table.table_id, 3)
    finally:
        undo()
    assert not script
    assert [w for _, w in batch] == [1, 2, 3]
    assert ms.valid_write_ids(table.table_id).high_watermark == 3
    assert ms.valid_txns().high_watermark == batch[-1][0]


# --- Transaction over one transaction of a batch -------------------------------------------------
def _delta(root, write_id, partition="ds=1", top=None):
    d = root / partition / f"delta_{write_id:07d}_{(top or write_id):07d}_0000"
    d.mkdir(parents=True, exist_ok=True)
    (d / "bucket_00000").write_bytes(b"rows")
    return d


def test_adopted_transactions_of_a_batch_end_on_their_own(ms, table, tmp_path):
    tid = table.table_id
    root = tmp_path / "t"
    storage = Storage(str(root))
    batch = ms.open_transaction_batch(tid, 3)
    shared = _delta(root, 1, top=3)  # the batch's one delta directory: every transaction's rows
    txns = [Transaction.adopt(ms, t, table_id=tid, storage=storage, write_id=w, description=f"txn {w}")
            for t, w in batch]
    assert [t.allocate_write_id(tid, storage) for t in txns] == [1, 2, 3]  # known: no store call
    txns[0].commit("insert", {tid: ["ds=1"]})
    own = _delta(root, 2)  # a directory of write id 2 alone (a side file, say)
    txns[1].abort("producer abort")
    txns[2].commit("insert", {tid: ["ds=1"]})
    assert [t.state for t in txns] == ["committed", "aborted", "committed"]
    assert [ms.txn_state(t) for t, _ in batch] == ["committed", "aborted", "committed"]
    assert str(ms.valid_write_ids(tid)) == f"{table.name}:3:{LONG_MAX}::2"
    assert shared.exists() and not own.exists()  # the abort kept the batch's shared directory


def test_an_adopted_transaction_commits_through_the_one_commit_path(ms, table, tmp_path):
    """set_commit on a clean exit, abort on an exception, a conflict abort, and no thread."""
    tid = table.table_id
    storage = Storage(str(tmp_path / "t"))
    (t1, w1), (t2, w2), (t3, w3) = ms.open_transaction_batch(tid, 3)
    with Transaction.adopt(ms, t1, table_id=tid, storage=storage, write_id=w1) as txn:
        assert txn._heartbeat is None  # the batch beats for it
        txn.set_commit("insert", {tid: ["ds=1"]})
    assert txn.state == "committed"
    with pytest.raises(RuntimeError):
        with Transaction.adopt(ms, t2, table_id=tid, storage=storage, write_id=w2) as txn:
            raise RuntimeError("producer failed")
    assert ms.txn_state(t2) == "aborted"
    overwrite = ms.open_transaction()
    ms.allocate_write_id(overwrite, tid)
    ms.commit(overwrite, touched={tid: ["ds=1"]}, operation="insert_overwrite")
    doomed = _delta(tmp_path / "t", w3)
    txn = Transaction.adopt(ms, t3, table_id=tid, storage=storage, write_id=w3)
    with pytest.raises(ConflictError):  # its rows would sit under the overwrite's higher base
        txn.commit("insert", {tid: ["ds=1"]})
    assert txn.state == "aborted" and not doomed.exists()


def test_adopt_checks_its_arguments(ms, table, tmp_path):
    txn_id = ms.open_transaction()
    with pytest.raises(InvalidArgumentError, match="write_id"):
        Transaction.adopt(ms, txn_id, table_id=table.table_id)
    with pytest.raises(InvalidArgumentError, match="txn_id"):
        Transaction.adopt(ms, "7")
    txn = Transaction.adopt(ms, txn_id)  # no table yet: allocate_write_id asks the store
    assert txn.allocate_write_id(table.table_id, Storage(str(tmp_path / "t"))) == 1
    txn.commit("insert", {table.table_id: []})
    with pytest.raises(TransactionStateError):
        txn.commit("insert", {table.table_id: []})
