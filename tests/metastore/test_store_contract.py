"""What every transaction store does the same way (the contract in
acid_source/metastore/contract.py) — acidorc's own (SQLite, PostgreSQL) and a
real Hive 4.1 metastore — run on each (pyiceberg's catalog fixture is the model). Where the
stores differ on purpose (history, time travel, the row-level rule, which commits an UPDATE
conflicts with, locks: a Hive Metastore takes Hive's, so one UPDATE waits for another where
acidorc's store fails the later committer), the store's own suite covers it: test_metastore.py,
test_conflict_rules.py, test_hive_store.py."""

from __future__ import annotations

import inspect
import multiprocessing
import pickle
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from pymetastore.hive_metastore import ttypes as tt

from acid_source.errors import (
    InvalidArgumentError,
    StoreBehindStorageError,
    TableExistsError,
    TableNotRegisteredError,
    TransactionStateError,
    UnsupportedOperationError,
)
from acid_source.layout.ids_on_storage import IdsOnStorage, UsedDir
from acid_source.layout.writeids import LONG_MAX
from acid_source.metastore import TransactionStore, connect, contract, is_store

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # spawned workers import metastore_workers by name

import metastore_workers  # noqa: E402
import worker_context  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ds", pa.string())])
DB = "contract"


@pytest.fixture(params=["sqlite", "postgresql", "hive"])
def store_url(request, tmp_path) -> str:
    """A transaction store of each kind: a fresh SQLite file, a fresh PostgreSQL database, or
    the session's Hive metastore (a database of its own for these tests; tables are new per
    test)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'metastore.db'}"
    if request.param == "postgresql":
        return request.getfixturevalue("pg_store_url")
    server = request.getfixturevalue("hive_metastore")
    with server.client() as client:
        try:
            client.create_database(tt.Database(name=DB, locationUri=f"file:{server.warehouse}/{DB}.db", parameters={}))
        except tt.AlreadyExistsException:
            pass
    return server.uri


@pytest.fixture
def store_kind(store_url, request) -> str:
    """Which kind of store the test runs on: sqlite, postgresql or hive."""
    return request.node.callspec.params["store_url"]


@pytest.fixture
def store(store_url):
    s = connect(store_url)
    yield s
    s.close()


@pytest.fixture
def new_table(store, tmp_path):
    """Creates a new partitioned table; returns its TableInfo."""
    def make(partitioned: bool = True):
        name = f"{DB}.t_{uuid.uuid4().hex[:10]}"
        return store.create_table(tmp_path / name, SCHEMA, name=name, partition_columns=["ds"] if partitioned else [])
    return make


def test_tables_by_name_and_location(store, new_table, tmp_path):
    table = new_table()
    assert store.get_table(name=table.name) == table
    assert store.get_table(table.location) == table
    assert store.find_table(table.location) == table
    assert store.get_table(name=table.name.upper()) == table  # names are case-insensitive, as in Hive
    assert (table.partition_columns, table.schema, table.properties["transactional"]) == (("ds",), SCHEMA, "true")
    with pytest.raises(TableExistsError, match=table.name):
        store.create_table(tmp_path / "elsewhere", SCHEMA, name=table.name)
    assert store.create_table(table.location, SCHEMA, name=table.name, partition_columns=["ds"],
                              if_not_exists=True) == table
    missing = f"{DB}.missing_{uuid.uuid4().hex[:6]}"
    with pytest.raises(TableNotRegisteredError, match=missing):
        store.get_table(name=missing)
    assert store.find_table(tmp_path / "nowhere") is None
    assert store.drop_table(name=table.name) == table
    assert store.drop_table(name=table.name, if_exists=True) is None
    assert store.find_table(table.location) is None


def test_write_ids_count_per_table_and_are_asked_again_unchanged(store, new_table):
    table, other = new_table(), new_table()
    txns = [store.open_transaction(user="u", description=f"n{i}") for i in range(4)]
    assert txns == sorted(txns) and len(set(txns)) == 4
    assert [store.allocate_write_id(t, table.table_id) for t in txns] == [1, 2, 3, 4]
    assert store.allocate_write_id(txns[2], table.table_id) == 3  # asking again: the same id
    assert store.allocate_write_id(txns[3], other.table_id) == 1  # write ids are per table
    for t in txns:
        store.commit(t, touched={table.table_id: ["ds=1"]})


def test_snapshots_hide_open_and_aborted_writes_in_hives_string_form(store, new_table):
    table = new_table()
    tid = table.table_id
    assert str(store.valid_write_ids(tid)) == f"{table.name}:0:{LONG_MAX}::"
    t1, t2, t3, t4 = (store.open_transaction() for _ in range(4))
    for t in (t1, t2, t3, t4):
        store.allocate_write_id(t, tid)  # write ids 1..4
    store.commit(t1, touched={tid: ["ds=1"]})
    store.abort(t3, "test")
    write_ids, txns = store.snapshot(tid)
    assert str(write_ids) == f"{table.name}:4:2:2,4:3"
    assert [write_ids.is_write_id_valid(w) for w in range(1, 6)] == [True, False, False, False, False]
    assert txns.is_txn_valid(t1) and not txns.is_txn_valid(t2) and not txns.is_txn_valid(t4)
    assert {t2, t4} <= set(txns.open_ids) and t3 in txns.aborted_ids and txns.high_watermark >= t4
    store.commit(t2, touched={tid: ["ds=1"]})
    store.commit(t4, touched={tid: ["ds=2"]})
    assert str(store.valid_write_ids(tid)) == f"{table.name}:4:{LONG_MAX}::3"
    assert store.write_ids_of(tid, "aborted") == [3] and store.write_ids_of(tid, "open") == []


def test_the_transaction_state_machine(store, new_table):
    table = new_table()
    t = store.open_transaction()
    assert store.txn_state(t) == "open"
    store.heartbeat(t)
    store.allocate_write_id(t, table.table_id)
    store.commit(t, touched={table.table_id: ["ds=1"]})
    assert store.txn_state(t) == "committed"
    for call in (lambda: store.abort(t), lambda: store.heartbeat(t)):
        with pytest.raises(TransactionStateError, match=f"transaction {t}") as caught:
            call()
        assert caught.value.txn_id == t
    a = store.open_transaction()
    store.abort(a, "user cancelled")
    store.abort(a)  # idempotent
    assert store.txn_state(a) == "aborted"
    for call in (lambda: store.commit(a), lambda: store.heartbeat(a)):
        with pytest.raises(TransactionStateError, match=f"transaction {a}"):
            call()


def test_the_store_pickles_before_and_after_use(store, new_table):
    table = new_table()
    before = pickle.loads(pickle.dumps(store))
    txn = store.open_transaction()
    store.allocate_write_id(txn, table.table_id)
    store.commit(txn, touched={table.table_id: ["ds=1"]})
    after = pickle.loads(pickle.dumps(store))
    assert str(before.valid_write_ids(table.table_id)) == str(after.valid_write_ids(table.table_id)) \
        == f"{table.name}:1:{LONG_MAX}::"


def test_processes_allocating_write_ids_never_collide(store, store_url, new_table):
    table = new_table(partitioned=False)
    workers, iterations = 3, 8
    ctx = multiprocessing.get_context("spawn")
    results = metastore_workers.run_workers(
        ctx, workers, metastore_workers.allocate_and_commit,
        lambda i, start, queue: (store_url, table.table_id, iterations, i, start, queue))
    pairs = [pair for _, _, done in results for pair in done]
    assert sorted(w for _, w in pairs) == list(range(1, workers * iterations + 1))
    assert len({t for t, _ in pairs}) == len(pairs)
    assert str(store.valid_write_ids(table.table_id)) == f"{table.name}:{workers * iterations}:{LONG_MAX}::"


# --- transaction batches (Hive's streaming TransactionBatch) --------------------------------------
def test_a_transaction_batch_takes_consecutive_write_ids(store, new_table):
    table = new_table()
    tid = table.table_id
    single = store.open_transaction()
    assert store.allocate_write_id(single, tid) == 1
    batch = store.open_transaction_batch(tid, 3, user="u", description="stream")
    assert [w for _, w in batch] == [2, 3, 4]
    assert [t for t, _ in batch] == sorted(t for t, _ in batch) and batch[0][0] > single
    assert [store.allocate_write_id(t, tid) for t, _ in batch] == [2, 3, 4]  # asked again: the same
    assert store.open_transaction_batch(tid, 1)[0][1] == 5
    store.commit(single, touched={tid: ["ds=1"]})
    assert all(store.txn_state(t) == "open" for t, _ in batch)


def test_each_transaction_of_a_batch_ends_on_its_own(store, new_table):
    table = new_table()
    tid = table.table_id
    (t1, _), (t2, _), (t3, _), (t4, _) = store.open_transaction_batch(tid, 4)
    store.commit(t2, touched={tid: ["ds=1"]})
    store.abort(t3, "producer abort")
    assert str(store.valid_write_ids(tid)) == f"{table.name}:4:1:1,4:3"
    store.commit(t1, touched={tid: ["ds=1"]})
    assert str(store.valid_write_ids(tid)) == f"{table.name}:4:4:4:3"
    store.commit(t4, touched={tid: ["ds=2"]})
    assert str(store.valid_write_ids(tid)) == f"{table.name}:4:{LONG_MAX}::3"
    assert [store.txn_state(t) for t in (t1, t2, t3, t4)] == ["committed", "committed", "aborted", "committed"]


def test_heartbeat_many_names_the_transactions_no_longer_open(store, new_table):
    table = new_table()
    tid = table.table_id
    (t1, _), (t2, _), (t3, _) = store.open_transaction_batch(tid, 3)
    assert store.heartbeat_many([t1, t2, t3]) == set()
    store.abort(t2, "producer abort")
    assert store.heartbeat_many([t1, t2, t3]) == {t2}
    store.commit(t1, touched={tid: ["ds=1"]})
    assert store.heartbeat_many([t1, t2, t3]) == {t1, t2}
    assert store.heartbeat_many([]) == set()
    assert store.txn_state(t3) == "open"
    store.abort(t3)


def test_processes_opening_transaction_batches_never_overlap(store, store_url, new_table):
    table = new_table(partitioned=False)
    workers, batches, size = 3, 4, 3
    ctx = worker_context.forkserver()
    results = metastore_workers.run_workers(
        ctx, workers, metastore_workers.open_batches,
        lambda i, start, queue: (store_url, table.table_id, batches, size, i, start, queue))
    all_batches = [pairs for _, _, done in results for pairs in done]
    for pairs in all_batches:  # each batch: consecutive write ids in ascending transaction order
        assert [t for t, _ in pairs] == sorted(t for t, _ in pairs)
        assert [w for _, w in pairs] == list(range(pairs[0][1], pairs[0][1] + size))
    total = workers * batches * size
    assert sorted(w for pairs in all_batches for _, w in pairs) == list(range(1, total + 1))
    assert len({t for pairs in all_batches for t, _ in pairs}) == total
    aborted = sorted(pairs[1][1] for pairs in all_batches)
    assert store.write_ids_of(table.table_id, "aborted") == aborted
    assert str(store.valid_write_ids(table.table_id)) == \
        f"{table.name}:{total}:{LONG_MAX}::{','.join(map(str, aborted))}"


# --- the contract itself ------------------------------------------------------------------------
def _contract_members() -> dict[str, object]:
    """Every member the protocols of contract.py declare: name -> the protocol's attribute
    (None for a data member, which has only an annotation)."""
    members: dict[str, object] = {}
    for part in TransactionStore.__mro__:
        if part.__module__ != contract.__name__:
            continue
        for name in getattr(part, "__annotations__", {}):
            members.setdefault(name, None)
        for name, value in vars(part).items():
            if callable(value) or isinstance(value, property):
                if not name.startswith("_") or name in ("__enter__", "__exit__"):
                    members.setdefault(name, value)
    return members


def _parameters(function) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def test_each_store_implements_every_member_of_the_contract_as_declared(store):
    members = _contract_members()
    assert {"commit", "snapshot", "acquire_lease", "sink_batch", "create_table", "keeps_history", "url"} <= set(members)
    assert is_store(store) and not is_store(store.url)
    cls = type(store)
    for name, declared in members.items():
        owner = next(c for c in cls.__mro__ if name in vars(c) or name in getattr(c, "__annotations__", {}))
        if declared is None:  # a data member: set by the store itself
            assert owner.__module__ != contract.__name__ or name in vars(store), (cls.__name__, name)
            continue
        owner = next(c for c in cls.__mro__ if name in vars(c))
        assert owner.__module__ != contract.__name__, f"{cls.__name__} does not implement {name}"
        implemented = vars(owner)[name]
        if isinstance(declared, property):
            assert isinstance(implemented, property), (cls.__name__, name)
            continue
        assert _parameters(implemented) == _parameters(declared), (cls.__name__, name)
    assert isinstance(store.url, str) and isinstance(store.has_password, bool)
    assert isinstance(store.keeps_history, bool) and isinstance(store.clock(), float)
    timeout = store.txn_timeout_seconds()
    assert timeout is None or timeout > 0


# --- the catalog --------------------------------------------------------------------------------
def test_list_tables_shows_the_registered_tables_and_new_tables_go_where_asked(store, new_table, tmp_path):
    table, other = new_table(), new_table(partitioned=False)
    listed = {t.name: t for t in store.list_tables()}
    assert listed[table.name] == table and listed[other.name] == other
    store.drop_table(name=other.name)
    assert other.name not in {t.name for t in store.list_tables()}
    path = str(tmp_path / "new")
    assert store.new_table_place(path, f"{DB}.new") == (path, f"{DB}.new")


# --- transactions -------------------------------------------------------------------------------
def test_txn_info_follows_the_state_and_unknown_transactions_are_refused(store, store_kind, new_table):
    table = new_table()
    t = store.open_transaction(user="contract-user", description="contract txn")
    info = store.txn_info(t)
    assert (info["txn_id"], info["state"]) == (t, "open")
    # the HMS cannot always list who opened it (HiveMetastore.txn_state); when it does, it is right
    if store_kind != "hive" or "user_name" in info:
        assert info["user_name"] == "contract-user"
    store.allocate_write_id(t, table.table_id)
    store.commit(t, touched={table.table_id: ["ds=1"]})
    assert (store.txn_info(t)["state"], store.txn_state(t)) == ("committed", "committed")
    a = store.open_transaction()
    store.abort(a)
    assert (store.txn_info(a)["state"], store.txn_state(a)) == ("aborted", "aborted")
    never = a + 1_000_000
    for call in (store.txn_state, store.txn_info):
        with pytest.raises(TransactionStateError, match=str(never)):
            call(never)


def test_locks_storage_checks_and_expiry_leave_live_writers_alone(store, new_table, tmp_path):
    table = new_table()
    tid = table.table_id
    t = store.open_transaction()
    store.lock(t, tid, "insert")
    assert store.allocate_write_id(t, tid, operation="insert") == 1
    assert store.abort_expired(600, table_id=tid) == [] and store.txn_state(t) == "open"
    store.refuse_if_behind(tid, IdsOnStorage(table.location, (UsedDir("delta_0000001_0000001", 1, 0),)))
    ahead = IdsOnStorage(table.location, (UsedDir("delta_0000007_0000007", 7, 0),))
    with pytest.raises(StoreBehindStorageError, match="delta_0000007_0000007"):
        store.refuse_if_behind(tid, ahead)
    store.commit(t, touched={tid: ["ds=1"]})
    assert store.write_ids_of(tid, "committed") == [1]
    with pytest.raises(InvalidArgumentError, match="state"):
        store.write_ids_of(tid, "finished")


# --- snapshots and history ----------------------------------------------------------------------
def test_the_latest_version_and_the_history_where_the_store_keeps_one(store, new_table):
    table = new_table()
    tid = table.table_id
    assert store.latest_version(tid, store.valid_write_ids(tid)) == 0
    t = store.open_transaction()
    store.allocate_write_id(t, tid)
    store.commit(t, touched={tid: ["ds=1"]})
    assert store.latest_version(tid, store.valid_write_ids(tid)) == 1
    asks = (lambda: store.history(tid), lambda: store.snapshot_as_of(tid, 1),
            lambda: store.write_id_as_of_time(tid, store.clock()), lambda: store.commits_since(tid, ["ds=1"], 0))
    if not store.keeps_history:
        for ask in asks:
            with pytest.raises(UnsupportedOperationError):
                ask()
        return
    history, past, as_of_now, (seq, commits) = (ask() for ask in asks)
    assert [(e["txn_id"], e["write_id"], e["operation"], e["touched"]) for e in history] == [(t, 1, "insert", ["ds=1"])]
    assert str(past[0]) == str(store.valid_write_ids(tid)) and as_of_now == 1
    assert seq == history[0]["commit_seq"] and [(c["txn_id"], c["partition"]) for c in commits] == [(t, "ds=1")]


# --- leases and the cleaner ---------------------------------------------------------------------
def test_a_lease_is_renewed_until_released(store, store_kind, new_table):
    table = new_table()
    tid = table.table_id
    write_ids, txns = store.snapshot(tid)
    lease = store.acquire_lease(tid, write_ids, str(txns), 600, holder="contract reader")
    assert (lease.table_id, str(lease.write_ids), str(lease.txns), lease.ttl_seconds) == \
        (tid, str(write_ids), str(txns), 600)
    renewed = store.renew_lease(lease.lease_id)
    assert renewed is not None and renewed.lease_id == lease.lease_id and renewed.renewed_at >= lease.renewed_at
    # acidorc's store lists the lease; a Hive Metastore holds it as an open transaction instead
    live = [] if store_kind == "hive" else [lease.lease_id]
    assert [held.lease_id for held in store.live_leases(tid)] == live
    store.release_lease(lease.lease_id)
    store.release_lease(lease.lease_id)  # again: nothing
    assert store.renew_lease(lease.lease_id) is None and store.live_leases(tid) == []
    assert store.purge_expired_leases() >= 0
    with pytest.raises(InvalidArgumentError, match="ttl_seconds"):
        store.acquire_lease(tid, write_ids, txns, 0)


def test_the_cleaner_view_keeps_what_an_open_transaction_may_read(store, new_table):
    table = new_table()
    tid = table.table_id
    reader = store.open_transaction()  # may be reading the table as it was before the writes
    t1, t2 = store.open_transaction(), store.open_transaction()
    store.allocate_write_id(t1, tid), store.allocate_write_id(t2, tid)
    store.commit(t1, touched={tid: ["ds=1"]})
    store.abort(t2)
    view = store.cleaner_view(tid, retention_seconds=0, txn_timeout_seconds=600)
    latest_ids, latest_txns = view.latest
    assert str(latest_ids) == str(store.valid_write_ids(tid)) and latest_ids.is_write_id_valid(1)
    assert not view.floor[0].is_write_id_valid(1)  # the reader's snapshot predates it
    assert 2 in view.aborted_write_ids and t2 in view.aborted_txn_ids and reader in latest_txns.open_ids
    store.abort(reader)


# --- streaming sinks ----------------------------------------------------------------------------
def test_a_sinks_batch_is_recorded_with_its_commit_or_refused(store, new_table):
    table = new_table()
    tid = table.table_id
    sink = f"sink-{uuid.uuid4().hex[:8]}"
    t = store.open_transaction()
    store.allocate_write_id(t, tid)
    if not store.keeps_history:  # a Hive Metastore cannot commit a mark with the transaction
        for refused in (lambda: store.commit(t, touched={tid: ["ds=1"]}, sink=(sink, 0)),
                        lambda: store.sink_batch(sink, 0), lambda: store.last_sink_batch(sink)):
            with pytest.raises(UnsupportedOperationError, match="streaming sink"):
                refused()
        assert store.txn_state(t) == "open"
        store.abort(t)
        return
    assert store.sink_batch(sink, 0) is None and store.last_sink_batch(sink) is None
    store.commit(t, touched={tid: ["ds=1"]}, sink=(sink, 0))
    assert store.sink_batch(sink, 0) == t and store.last_sink_batch(sink) == 0
