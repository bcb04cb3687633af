"""Transaction: commit / abort, the context manager, lost commit answers, heartbeats, and
what may cross a process boundary."""

from __future__ import annotations

import pickle
import threading

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.errors import ConflictError, MetastoreError, TransactionStateError
from acid_source.metastore import Metastore
from acid_source.metastore.records import Recheck
from acid_source.storage import Storage
from acid_source.table import AcidTable
from acid_source.txn import Transaction, TransactionRef

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def store(tmp_path):
    return Metastore(f"sqlite:///{tmp_path}/store.db")


@pytest.fixture
def table(tmp_path, store):
    info = create_table(str(tmp_path / "t"), SCHEMA, metastoreUrl=f"sqlite:///{tmp_path}/store.db")
    return info, Storage(info.location)


def _dir(storage: Storage, write_id: int) -> str:
    path = storage.join(storage.root, f"delta_{write_id:07d}_{write_id:07d}_0000")
    storage.make_dirs(path)
    return path


def _open_write(store: Metastore, table) -> tuple[Transaction, int, str]:
    """A transaction that allocated a write id on ``table`` and recorded its delta directory."""
    info, storage = table
    txn = Transaction.begin(store, heartbeat="none")
    w = txn.allocate_write_id(info.table_id, storage)
    path = _dir(storage, w)
    txn.record_written(info.table_id, [path])
    return txn, w, path


def test_context_manager_commits_on_clean_exit_and_aborts_on_error(store, table):
    info, storage = table
    with Transaction.begin(store, heartbeat="none") as txn:
        w = txn.allocate_write_id(info.table_id, storage)
        txn.record_written(info.table_id, [_dir(storage, w)])
        txn.set_commit("insert", {info.table_id: [""]})
    assert store.txn_state(txn.txn_id) == "committed" and storage.exists(_dir(storage, w))

    with pytest.raises(ZeroDivisionError):
        with Transaction.begin(store, heartbeat="none") as failed:
            w2 = failed.allocate_write_id(info.table_id, storage)
            _dir(storage, w2)  # not even recorded: an abort still finds it by its write id
            1 / 0
    assert store.txn_state(failed.txn_id) == "aborted"
    assert [e.name for e in storage.list_dir(storage.root)] == [f"delta_{w:07d}_{w:07d}_0000"]

    with Transaction.begin(store, heartbeat="none") as nothing:
        pass  # nothing to commit: aborted, not committed empty
    assert store.txn_state(nothing.txn_id) == "aborted"


class LostAnswer(Metastore):
    """The store commits, then the connection breaks before the caller hears back."""

    def commit(self, txn_id, **kwargs):
        super().commit(txn_id, **kwargs)
        raise MetastoreError("connection lost after COMMIT")


class Unreachable(Metastore):
    def commit(self, txn_id, **kwargs):
        raise MetastoreError("connection refused")

    def txn_state(self, txn_id):
        raise MetastoreError("connection refused")

    def abort(self, txn_id, reason=""):
        raise MetastoreError("connection refused")


def test_a_lost_commit_answer_is_resolved_by_asking_the_store(tmp_path, table):
    info, storage = table
    url = f"sqlite:///{tmp_path}/store.db"
    txn, _, path = _open_write(LostAnswer(url), table)
    txn.commit("insert", {info.table_id: [""]})  # no error: the store says committed
    assert txn.state == "committed" and storage.exists(path)
    assert Metastore(url).txn_state(txn.txn_id) == "committed"


def test_an_unknown_outcome_never_deletes_files(tmp_path, table):
    info, storage = table
    url = f"sqlite:///{tmp_path}/store.db"
    opened = Transaction.begin(Metastore(url), heartbeat="none")
    w = opened.allocate_write_id(info.table_id, storage)
    path = _dir(storage, w)
    txn = Transaction(Unreachable(url), opened.txn_id)
    txn._written = opened._written
    with pytest.raises(MetastoreError):
        txn.commit("insert", {info.table_id: [""]})
    assert storage.exists(path)  # the store could not say it was aborted: the files stay
    assert Metastore(url).txn_state(opened.txn_id) == "open"


def test_commit_after_abort_is_refused(store, table):
    info, storage = table
    txn = Transaction.begin(store, heartbeat="none")
    txn.abort("changed my mind")
    with pytest.raises(TransactionStateError):
        txn.commit("insert", {info.table_id: [""]})


def test_heartbeat_thread_keeps_the_transaction_alive(monkeypatch, store):
    monkeypatch.setenv("ACIDORC_HEARTBEAT_SECONDS", "0.05")
    beaten = threading.Event()
    real_heartbeat = store.heartbeat

    def heartbeat_and_signal(txn_id):  # the real store call; the event only tells the test when
        real_heartbeat(txn_id)
        beaten.set()

    monkeypatch.setattr(store, "heartbeat", heartbeat_and_signal)
    txn = Transaction.begin(store)
    first = store.txn_info(txn.txn_id)["last_heartbeat"]
    assert beaten.wait(timeout=120), "no heartbeat from the background thread"
    assert store.txn_info(txn.txn_id)["last_heartbeat"] > first
    txn.abort("done")
    assert txn._heartbeat is None


def test_transactions_do_not_pickle_and_refs_carry_no_password(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("ACIDORC_METASTORE_URL", raising=False)
    url = "postgresql://acid:s3cret@db.example/acid"
    txn = Transaction(Metastore(url), 42)
    with pytest.raises(TypeError, match="ref"):
        pickle.dumps(txn)
    ref = txn.ref()
    blob = pickle.dumps(ref)
    assert b"s3cret" not in blob and isinstance(pickle.loads(blob), TransactionRef)
    # the driver's commit process finds the password again, from the driver's machine only
    assert pickle.loads(blob).metastore()._url.password == "s3cret"


def test_appends_heartbeat_from_the_driver_not_from_tasks(tmp_path, monkeypatch):
    # an AcidTable write keeps its transaction alive while a slow source is consumed
    monkeypatch.setenv("ACIDORC_HEARTBEAT_SECONDS", "0.05")
    url = f"sqlite:///{tmp_path}/store.db"
    create_table(str(tmp_path / "t"), SCHEMA, metastoreUrl=url)
    t = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url)
    store = Metastore(url)
    seen = []

    def slow_source():
        yield pa.record_batch({"id": pa.array([1], pa.int64())})
        txn_id = max(store.txn_info(i)["txn_id"] for i in (1,))  # the append's transaction
        first = store.txn_info(txn_id)["last_heartbeat"]
        for _ in range(2000):
            if store.txn_info(txn_id)["last_heartbeat"] > first:
                seen.append(True)
                break
        yield pa.record_batch({"id": pa.array([2], pa.int64())})

    t.append(slow_source())
    assert seen == [True] and t.scan().count() == 2


# --- conflicts and the row-level rule (checked_through) -------------------------------------
def _commit_other(store, table_id: int, operation: str) -> int:
    other = store.open_transaction()
    store.allocate_write_id(other, table_id)
    store.commit(other, touched={table_id: [""]}, operation=operation)
    return other


def test_a_write_id_order_conflict_aborts_and_removes_the_files(store, table):
    """An insert holding a lower write id than an overwrite that committed first would be
    hidden by the overwrite's base: the commit fails and the insert's files go."""
    info, storage = table
    txn, w, path = _open_write(store, table)
    winner = _commit_other(store, info.table_id, "insert_overwrite")
    with pytest.raises(ConflictError, match="retry the insert") as err:
        txn.commit("insert", {info.table_id: [""]})
    assert err.value.committed_txn_id == winner and err.value.committed_write_id == w + 1
    assert txn.state == "aborted" and store.txn_state(txn.txn_id) == "aborted"
    assert not storage.exists(path)


def test_checked_through_refusal_returns_a_recheck_and_keeps_everything(store, table):
    info, storage = table
    txn, _, path = _open_write(store, table)
    seq, _ = store.commits_since(info.table_id, [""], store.txn_info(txn.txn_id)["start_seq"])
    late = _commit_other(store, info.table_id, "update")  # after the caller's check
    recheck = txn.commit("delete", {info.table_id: [""]}, checked_through=seq)
    assert isinstance(recheck, Recheck) and [c["txn_id"] for c in recheck.commits] == [late]
    assert txn.state == "open" and store.txn_state(txn.txn_id) == "open" and storage.exists(path)
    assert txn.commit("delete", {info.table_id: [""]}, checked_through=recheck.through_seq) is None
    assert txn.state == "committed" and store.txn_state(txn.txn_id) == "committed" and storage.exists(path)


def test_checked_through_conflict_aborts_and_removes_the_files(store, table):
    info, storage = table
    txn, _, path = _open_write(store, table)
    seq, _ = store.commits_since(info.table_id, [""], store.txn_info(txn.txn_id)["start_seq"])
    winner = _commit_other(store, info.table_id, "insert_overwrite")
    with pytest.raises(ConflictError) as err:
        txn.commit("update", {info.table_id: [""]}, checked_through=seq)
    assert err.value.committed_txn_id == winner
    assert txn.state == "aborted" and not storage.exists(path)


def test_checked_through_with_a_lost_answer_is_resolved_by_asking_the_store(tmp_path, table):
    info, storage = table
    url = f"sqlite:///{tmp_path}/store.db"
    txn, _, path = _open_write(LostAnswer(url), table)
    seq, _ = txn.metastore.commits_since(info.table_id, [""], 0)
    assert txn.commit("merge", {info.table_id: [""]}, checked_through=seq) is None
    assert txn.state == "committed" and storage.exists(path)
    assert Metastore(url).txn_info(txn.txn_id)["operation"] == "merge"


def test_a_write_id_whose_directories_exist_is_never_allocated(store, table):
    """The store is behind the storage: nothing is allocated, nothing recorded, and the abort
    leaves the directories found alone (removing them would destroy the history the store lost)."""
    from acid_source.errors import StoreBehindStorageError

    info, storage = table
    with Transaction.begin(store, heartbeat="none") as txn:  # a concurrent writer's directory counts not
        w = txn.allocate_write_id(info.table_id, storage)
        _dir(storage, w)
        other = Transaction.begin(store, heartbeat="none")
        assert other.allocate_write_id(info.table_id, storage) == w + 1
        other.abort("test")
        txn.set_commit("insert", {info.table_id: [""]})
    lost = _dir(storage, w + 5)  # a write id this store never handed out
    txn = Transaction.begin(store, heartbeat="none")
    with pytest.raises(StoreBehindStorageError) as caught:
        txn.allocate_write_id(info.table_id, storage)
    assert caught.value.directories == (lost,) and caught.value.write_id == w + 2
    txn.abort("refused")
    assert storage.exists(lost) and store.valid_write_ids(info.table_id).high_watermark == w + 1
    assert store.write_ids_of(info.table_id, "aborted") == [w + 1]  # the other writer's, not a new one
