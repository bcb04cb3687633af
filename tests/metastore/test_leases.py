"""Reader leases in the transaction store (real SQLite files, a clock the test moves): live
while renewed within their ttl, expired ones ignored, never revived, and purged; the cleaner's
view (latest snapshot, live leases, the floor that protects readers without a lease)."""

from __future__ import annotations

import multiprocessing

import pyarrow as pa
import pytest
import sqlalchemy as sa

from acid_source.errors import InvalidArgumentError, InvalidSnapshotError, TableNotRegisteredError
from acid_source.layout.writeids import ValidTxnList, ValidWriteIdList
from acid_source.metastore import Metastore
from acid_source.metastore.leases import ReadLease

SCHEMA = pa.schema([("id", pa.int64())])
TTL = 60.0


@pytest.fixture
def tid(ms, tmp_path) -> int:
    return ms.create_table(tmp_path / "t", SCHEMA, name="default.t").table_id


def _commit_write(ms, tid, operation="insert") -> int:
    txn = ms.open_transaction()
    wid = ms.allocate_write_id(txn, tid)
    ms.commit(txn, touched={tid: [""]}, operation=operation)
    return wid


def test_a_lease_records_its_snapshot_and_lives_while_renewed(ms, clock, tid):
    _commit_write(ms, tid)
    write_ids, txns = ms.snapshot(tid)
    lease = ms.acquire_lease(tid, write_ids, txns, TTL, holder="reader 1")
    assert (lease.table_id, lease.holder, lease.ttl_seconds) == (tid, "reader 1", TTL)
    assert (str(lease.write_ids), str(lease.txns)) == (str(write_ids), str(txns))
    assert lease.expires_at == clock.now + TTL
    (live,) = ms.live_leases(tid)
    assert live == lease and live.snapshot == (write_ids, txns)

    clock.now += TTL  # exactly at its expiry it still counts
    assert [x.lease_id for x in ms.live_leases(tid)] == [lease.lease_id]
    renewed = ms.renew_lease(lease.lease_id)
    assert renewed is not None and renewed.renewed_at == clock.now and renewed.acquired_at == lease.acquired_at
    clock.now += TTL - 1  # would have expired without the renewal
    assert [x.lease_id for x in ms.live_leases(tid)] == [lease.lease_id]


def test_an_expired_lease_is_ignored_never_revived_and_purged(ms, clock, tid):
    write_ids, txns = ms.snapshot(tid)
    old = ms.acquire_lease(tid, write_ids, txns, TTL)
    clock.now += TTL + 0.5
    assert ms.live_leases(tid) == []
    assert ms.renew_lease(old.lease_id) is None  # the cleaner may have removed its files already
    assert ms.live_leases(tid) == []
    fresh = ms.acquire_lease(tid, write_ids, txns, TTL)  # acquiring purges the expired ones
    assert ms.purge_expired_leases() == 0
    assert [x.lease_id for x in ms.live_leases(tid)] == [fresh.lease_id]
    clock.now += TTL + 1
    assert ms.purge_expired_leases() == 1


def test_release_ends_a_lease_and_is_idempotent(ms, tid):
    write_ids, txns = ms.snapshot(tid)
    a = ms.acquire_lease(tid, str(write_ids), str(txns), TTL)  # strings are accepted too
    b = ms.acquire_lease(tid, write_ids, txns, TTL)
    assert {x.lease_id for x in ms.live_leases(tid)} == {a.lease_id, b.lease_id}
    ms.release_lease(a.lease_id)
    ms.release_lease(a.lease_id)
    ms.release_lease("no-such-lease")
    assert [x.lease_id for x in ms.live_leases(tid)] == [b.lease_id]
    assert ms.renew_lease(a.lease_id) is None


def test_leases_belong_to_their_table(ms, tmp_path, tid):
    other = ms.create_table(tmp_path / "u", SCHEMA).table_id
    ms.acquire_lease(other, *ms.snapshot(other), TTL)
    assert ms.live_leases(tid) == [] and len(ms.live_leases(other)) == 1


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), float("inf"), "60", True])
def test_a_ttl_must_be_a_positive_number_of_seconds(ms, tid, ttl):
    with pytest.raises(InvalidArgumentError, match="ttl_seconds"):
        ms.acquire_lease(tid, *ms.snapshot(tid), ttl)


def test_bad_arguments_are_typed_errors(ms, tid):
    write_ids, txns = ms.snapshot(tid)
    with pytest.raises(TableNotRegisteredError):
        ms.acquire_lease(tid + 100, write_ids, txns, TTL)
    with pytest.raises(TableNotRegisteredError):
        ms.live_leases(tid + 100)
    with pytest.raises(InvalidSnapshotError):
        ms.acquire_lease(tid, "not a snapshot", txns, TTL)
    with pytest.raises(InvalidArgumentError, match="lease_id"):
        ms.renew_lease(7)
    with pytest.raises(InvalidArgumentError, match="table_id"):
        ms.live_leases("1")


def test_a_store_created_before_leases_existed_gains_the_table(db_url, tmp_path, tid):
    engine = sa.create_engine(db_url)
    with engine.begin() as db:
        db.exec_driver_sql("DROP TABLE acidorc_read_leases")
    engine.dispose()
    store = Metastore.existing(db_url)  # a reader's store: never creates a database, but this table
    lease = store.acquire_lease(tid, *store.snapshot(tid), TTL)
    assert [x.lease_id for x in Metastore(db_url).live_leases(tid)] == [lease.lease_id]


def _acquire_in_child(url: str, tid: int, out) -> None:
    store = Metastore(url)
    out.send(store.acquire_lease(tid, *store.snapshot(tid), TTL, holder="child").lease_id)


def test_a_lease_taken_by_another_process_is_seen(ms, db_url, tid):
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("spawn").Process(target=_acquire_in_child, args=(db_url, tid, send))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    lease_id = receive.recv()
    assert [(x.lease_id, x.holder) for x in ms.live_leases(tid)] == [(lease_id, "child")]


# --- ReadLease: what a reader holds ---------------------------------------------------------------
class Ticks:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_read_lease_renews_after_a_third_of_its_ttl_and_replaces_an_expired_one(ms, clock, tid):
    ticks = Ticks()
    held = ReadLease(ms, tid, ms.snapshot(tid), TTL, "scan", monotonic=ticks).acquire()
    first = held.lease
    ticks.now, clock.now = TTL / 3 - 1, clock.now + TTL / 3 - 1
    held.keep_alive()  # too early: the store is not asked
    assert ms.live_leases(tid)[0].renewed_at == first.renewed_at
    ticks.now, clock.now = TTL / 3, clock.now + 1
    held.keep_alive()
    assert ms.live_leases(tid)[0].renewed_at == clock.now and held.lease.lease_id == first.lease_id
    ticks.now, clock.now = ticks.now + 2 * TTL, clock.now + 2 * TTL  # the consumer paused too long
    held.keep_alive()
    (live,) = ms.live_leases(tid)
    assert live.lease_id != first.lease_id and live.snapshot == first.snapshot
    held.release()
    held.release()
    assert ms.live_leases(tid) == []


# --- the cleaner's view ---------------------------------------------------------------------------
def test_the_view_holds_the_latest_snapshot_and_the_live_leases(ms, clock, tid):
    _commit_write(ms, tid)
    old = ms.acquire_lease(tid, *ms.snapshot(tid), TTL)
    clock.now += 1
    _commit_write(ms, tid)
    new = ms.acquire_lease(tid, *ms.snapshot(tid), TTL)
    view = ms.cleaner_view(tid, retention_seconds=0, txn_timeout_seconds=600)
    assert [str(x) for x in view.latest] == [str(x) for x in ms.snapshot(tid)]
    assert view.floor is view.latest
    assert [x.lease_id for x in view.leases] == [old.lease_id, new.lease_id]
    assert view.leases[0].write_ids.high_watermark == 1 and view.leases[1].write_ids.high_watermark == 2
    clock.now += TTL + 1
    assert ms.cleaner_view(tid, retention_seconds=0, txn_timeout_seconds=600).leases == ()


def test_the_floor_is_the_table_as_it_was_retention_seconds_ago(ms, clock, tid):
    _commit_write(ms, tid)  # write id 1 at t0
    clock.now += 100
    _commit_write(ms, tid)  # write id 2 at t0 + 100
    clock.now += 100
    _commit_write(ms, tid)  # write id 3 at t0 + 200
    clock.now += 10

    def floor(retention):
        view = ms.cleaner_view(tid, retention_seconds=retention, txn_timeout_seconds=600)
        return view.floor[0]

    assert floor(0).high_watermark == 3
    assert floor(5).high_watermark == 3  # nothing committed in the last 5 s: the latest state
    assert floor(50).high_watermark == 2
    (f,) = [floor(150)]
    assert f.high_watermark == 1 and f.is_write_id_valid(1) and not f.is_write_id_valid(2)
    assert floor(1000).high_watermark == 0  # before the first commit: nothing visible


def test_the_floor_protects_open_transactions_that_may_read_the_table(ms, clock, tmp_path, tid):
    other = ms.create_table(tmp_path / "u", SCHEMA).table_id
    _commit_write(ms, tid)  # write id 1
    dml = ms.open_transaction()
    ms.allocate_write_id(dml, tid)  # write id 2, open: a DML reading the snapshot with 1
    elsewhere = ms.open_transaction()
    ms.allocate_write_id(elsewhere, other)  # writes another table only: protects nothing here
    _commit_write(ms, tid)  # write id 3

    view = ms.cleaner_view(tid, retention_seconds=0, txn_timeout_seconds=600)
    assert view.latest[0].high_watermark == 3
    assert view.floor[0].high_watermark == 1 and view.floor[0].is_write_id_valid(1)

    ms.abort(dml)
    compaction = ms.open_transaction()  # no write id anywhere: it may be compacting this table
    _commit_write(ms, tid)  # write id 4
    view = ms.cleaner_view(tid, retention_seconds=0, txn_timeout_seconds=600)
    assert view.floor[0].high_watermark == 3
    assert not view.floor[1].is_txn_valid(compaction)

    clock.now += 601  # silent for longer than the timeout: its driver is presumed dead
    assert ms.cleaner_view(tid, retention_seconds=0, txn_timeout_seconds=600).floor[0].high_watermark == 4


def test_aborts_count_for_the_cleaner_once_retention_seconds_old(ms, clock, tid):
    txn = ms.open_transaction()
    wid = ms.allocate_write_id(txn, tid)
    ms.abort(txn)
    view = ms.cleaner_view(tid, retention_seconds=30, txn_timeout_seconds=600)
    assert view.latest[0].is_write_id_aborted(wid)
    assert (view.aborted_write_ids, view.aborted_txn_ids) == (frozenset(), frozenset())
    clock.now += 30
    view = ms.cleaner_view(tid, retention_seconds=30, txn_timeout_seconds=600)
    assert (view.aborted_write_ids, view.aborted_txn_ids) == ({wid}, {txn})


def test_snapshot_types_round_trip_through_the_store(ms, tid):
    write_ids = ValidWriteIdList(high_watermark=9, min_open=4, open_ids=[4, 6], aborted_ids=[5], table_name="default.t")
    txns = ValidTxnList(high_watermark=40, min_open=30, open_ids=list(range(30, 38)), aborted_ids=[12])
    lease = ms.acquire_lease(tid, write_ids, txns, TTL)
    (live,) = ms.live_leases(tid)
    assert live.write_ids == write_ids and live.txns == txns and live == lease


def test_a_store_that_cannot_record_a_lease_does_not_fail_the_read(tmp_path, caplog, monkeypatch):
    """A read-only or unreachable store (a replica, no write permission) must not fail reads:
    the scan goes on without a lease (the cleaner's retention still protects it)."""
    import pyarrow as pa

    from acid_source import create_table
    from acid_source.errors import MetastoreError
    from acid_source.metastore import Metastore
    from acid_source.table import AcidTable

    url = f"sqlite:///{tmp_path}/store.db"
    create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), metastoreUrl=url)
    AcidTable.load(str(tmp_path / "t"), metastoreUrl=url).append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    table = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url)

    def refuse(self, *args, **kwargs):  # what SQLite says to a writer on a read-only file
        raise MetastoreError("attempt to write a readonly database", url=url)

    monkeypatch.setattr(Metastore, "acquire_lease", refuse)
    scan = table.scan()  # takes its lease now
    assert sorted(scan.toArrow().column("id").to_pylist()) == [1, 2]
    assert "without a read lease" in caplog.text
