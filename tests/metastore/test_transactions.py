"""Transactions on a real store (a SQLite file, a PostgreSQL database): calls whose COMMIT took
effect although the caller was told it failed (a lost answer), per-table expiry, and argument
checking."""

from __future__ import annotations

import pyarrow as pa
import pytest
from lossy_connections import LOCKED, commit_error, lossy_commits

from acid_source.errors import (
    ConflictError,
    InvalidArgumentError,
    MetastoreError,
    TableNotRegisteredError,
    TransactionStateError,
)
from acid_source.metastore import Metastore

SCHEMA = pa.schema([("id", pa.int64()), ("ds", pa.string())])


class LossyConnection:
    """What the next commits of a real driver connection (pysqlite or psycopg) do, as ``script``
    says: ``"lost"`` commits and then raises ``error`` (the answer to COMMIT is lost), a callable
    rolls back, runs it, and raises ``error`` (the commit did not happen and someone else acted)."""

    script: list = []
    error = LOCKED

    @staticmethod
    def on_commit(conn, commit, backend):
        step = LossyConnection.script.pop(0) if LossyConnection.script else None
        if step is None:
            return commit()
        if step == "lost":
            commit()
        else:
            conn.rollback()
            step()
        raise commit_error(backend, LossyConnection.error)


@pytest.fixture
def table(ms, tmp_path):
    return ms.create_table(tmp_path / "t", SCHEMA, partition_columns=["ds"])


@pytest.fixture
def lossy(ms):
    """Make ``ms`` connect through LossyConnection from now on; yields the script to fill."""
    LossyConnection.script, LossyConnection.error = [], LOCKED
    undo = lossy_commits(ms, LossyConnection.on_commit)
    yield LossyConnection.script
    assert LossyConnection.script == [], "a scripted commit never happened"
    undo()


def _writer(ms, table_id) -> int:
    txn = ms.open_transaction()
    ms.allocate_write_id(txn, table_id)
    return txn


# ---------------------------------------------------------------------------------------------
# a COMMIT that took effect, reported as an error
# ---------------------------------------------------------------------------------------------
def test_a_commit_whose_answer_is_lost_succeeds(ms, table, lossy):
    tid = table.table_id
    txn = _writer(ms, tid)
    lossy.append("lost")
    ms.commit(txn, touched={tid: ["ds=1"]}, operation="insert")  # re-run finds its own commit
    assert ms.txn_state(txn) == "committed"
    assert [(h["txn_id"], h["touched"]) for h in ms.history(tid)] == [(txn, ["ds=1"])]
    assert ms.valid_write_ids(tid).is_write_id_valid(1)
    with pytest.raises(TransactionStateError, match="it is committed"):  # a new call still refuses
        ms.commit(txn, touched={tid: ["ds=1"]}, operation="insert")


def test_a_lost_answer_to_a_conflict_abort_raises_the_conflict(ms, table, lossy):
    tid = table.table_id
    first, second = _writer(ms, tid), _writer(ms, tid)
    ms.commit(first, touched={tid: ["ds=1"]}, operation="update")
    lossy.append("lost")
    with pytest.raises(ConflictError, match=rf"committed by \[txnid:{first}\]") as info:
        ms.commit(second, touched={tid: ["ds=1"]}, operation="delete")
    assert info.value.txn_id == second and info.value.partition == "ds=1"
    assert ms.txn_state(second) == "aborted"


def test_a_commit_done_differently_by_someone_else_is_not_ours(ms, table, lossy, db_url):
    """Between two attempts of one call another process committed the same transaction with
    another operation: that is not this call's commit."""
    tid = table.table_id
    txn = _writer(ms, tid)
    other = Metastore(db_url)
    lossy.append(lambda: other.commit(txn, touched={tid: ["ds=1"]}, operation="insert_overwrite"))
    with pytest.raises(TransactionStateError, match="it is committed"):
        ms.commit(txn, touched={tid: ["ds=1"]}, operation="insert")
    assert ms.history(tid)[0]["operation"] == "insert_overwrite"


def test_an_error_after_commit_that_is_not_retried_is_settled_by_txn_state(ms, table, lossy):
    tid = table.table_id
    txn = _writer(ms, tid)
    LossyConnection.error = "disk I/O error"  # not transient: the call fails
    lossy.append("lost")
    with pytest.raises(MetastoreError, match="disk I/O error"):
        ms.commit(txn, touched={tid: [""]})
    assert ms.txn_state(txn) == "committed"  # the caller must keep the files


def test_a_commit_that_did_not_happen_is_simply_run_again(ms, table, lossy, tmp_path):
    tid = table.table_id
    txn = _writer(ms, tid)
    lossy.append(lambda: None)  # COMMIT failed for real (rolled back): the re-run commits
    ms.commit(txn, touched={tid: [""]})
    assert ms.txn_state(txn) == "committed" and len(ms.history(tid)) == 1


@pytest.mark.parametrize("call", ["open_transaction", "allocate_write_id", "abort", "create_table",
                                  "drop_table", "heartbeat"])
def test_other_writes_recognise_their_own_lost_commit(ms, table, lossy, tmp_path, call):
    tid = table.table_id
    txn = ms.open_transaction()
    before_hwm = ms.valid_txns().high_watermark
    lossy.append("lost")
    if call == "open_transaction":
        new = ms.open_transaction()
        assert new == before_hwm + 1 and ms.valid_txns().high_watermark == new  # opened once
    elif call == "allocate_write_id":
        assert ms.allocate_write_id(txn, tid) == 1
        assert ms.valid_write_ids(tid).high_watermark == 1
    elif call == "abort":
        ms.abort(txn, "stop")
        assert ms.txn_state(txn) == "aborted"
    elif call == "create_table":
        made = ms.create_table(tmp_path / "new", SCHEMA)
        assert ms.get_table(tmp_path / "new") == made
    elif call == "drop_table":
        assert ms.drop_table(table.location) == table
        assert ms.find_table(table.location) is None
    else:
        ms.heartbeat(txn)
        assert ms.txn_state(txn) == "open"


# ---------------------------------------------------------------------------------------------
# expiry of one table's writers
# ---------------------------------------------------------------------------------------------
def test_abort_expired_of_one_table_leaves_other_tables_writers_alone(ms, clock, table, tmp_path):
    other = ms.create_table(tmp_path / "other", SCHEMA)
    mine, theirs, both = _writer(ms, table.table_id), _writer(ms, other.table_id), _writer(ms, table.table_id)
    ms.allocate_write_id(both, other.table_id)
    no_write_id = ms.open_transaction()
    clock.now += 100
    alive = _writer(ms, table.table_id)  # heartbeat just now
    # a silent transaction holding no write id anywhere (a compactor's) is nobody else's writer
    assert ms.abort_expired(60, table_id=table.table_id) == [mine, both, no_write_id]
    assert [ms.txn_state(t) for t in (mine, theirs, both, no_write_id, alive)] == [
        "aborted", "open", "aborted", "aborted", "open"]
    assert ms.write_ids_of(other.table_id, "aborted") == [2]  # 'both' wrote to it too
    assert ms.abort_expired(60, table_id=table.table_id) == []
    assert ms.abort_expired(60) == [theirs]
    with pytest.raises(TableNotRegisteredError, match="id 999"):
        ms.abort_expired(60, table_id=999)
    with pytest.raises(InvalidArgumentError, match="argument 'table_id'"):
        ms.abort_expired(60, table_id="1")


# ---------------------------------------------------------------------------------------------
# Python arguments
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["1", 1.0, True, None])
def test_ids_must_be_integers(ms, table, bad):
    txn = ms.open_transaction()
    calls = {
        "txn_id": [lambda: ms.txn_state(bad), lambda: ms.commit(bad), lambda: ms.abort(bad),
                   lambda: ms.heartbeat(bad), lambda: ms.txn_info(bad), lambda: ms.allocate_write_id(bad, 1)],
        "table_id": [lambda: ms.allocate_write_id(txn, bad), lambda: ms.history(bad),
                     lambda: ms.write_ids_of(bad, "open"), lambda: ms.snapshot(bad),
                     lambda: ms.snapshot_as_of(bad, 1), lambda: ms.write_id_as_of_time(bad, 0.0)],
    }
    if bad is not None:  # None means "not given" for these
        calls["table_id"] += [lambda: ms.get_table(table_id=bad), lambda: ms.abort_expired(1, table_id=bad)]
        calls["for_txn"] = [lambda: ms.valid_txns(for_txn=bad), lambda: ms.valid_write_ids(table.table_id, for_txn=bad)]
    for argument, fns in calls.items():
        for fn in fns:
            with pytest.raises(InvalidArgumentError, match=f"argument '{argument}'") as info:
                fn()
            assert isinstance(info.value, ValueError)


def test_other_arguments(ms, table, tmp_path):
    with pytest.raises(InvalidArgumentError, match="argument 'location': give a table location, name or id"):
        ms.get_table()
    with pytest.raises(InvalidArgumentError, match="argument 'timeout_seconds'"):
        ms.abort_expired(float("inf"))
    with pytest.raises(InvalidArgumentError, match="argument 'touched'"):
        ms.commit(ms.open_transaction(), touched={table.table_id: [1]})
    for kwargs, argument in (({"clock": 5}, "clock"), ({"busy_timeout": -1}, "busy_timeout"),
                             ({"busy_timeout": "1"}, "busy_timeout"), ({"retry_attempts": 0}, "retry_attempts"),
                             ({"retry_attempts": 2.5}, "retry_attempts")):
        with pytest.raises(InvalidArgumentError, match=f"argument '{argument}'"):
            Metastore(tmp_path / "m.db", **kwargs)


# ---------------------------------------------------------------------------------------------
# a server that drops the store's pooled connections (PostgreSQL)
# ---------------------------------------------------------------------------------------------
def test_connections_the_server_dropped_are_replaced_without_a_failure(postgres_server, pg_store_url):
    """No ping before each transaction: a pooled connection the server ended fails its first
    statement, and the call runs again on a new one. Every kind of call succeeds exactly once."""
    import psycopg

    ms = Metastore(pg_store_url)
    tid = ms.create_table(postgres_server.workdir / "t", SCHEMA, partition_columns=["ds"]).table_id
    schema = pg_store_url.rsplit("%3D", 1)[1]

    def kill_store_connections() -> int:
        with psycopg.connect(host="127.0.0.1", port=postgres_server.port, user="postgres",
                             dbname="acidorc_stores", autocommit=True) as admin:
            # every other connection to the stores database: this test's pool
            return admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                 "WHERE datname = 'acidorc_stores' AND pid <> pg_backend_pid()").fetchone()[0]

    assert kill_store_connections() >= 1, f"store {schema} had no pooled connection to drop"
    txn = ms.open_transaction()
    kill_store_connections()
    assert ms.allocate_write_id(txn, tid) == 1
    kill_store_connections()
    ms.commit(txn, touched={tid: ["ds=1"]})
    kill_store_connections()
    assert ms.txn_state(txn) == "committed" and ms.valid_write_ids(tid).high_watermark == 1
    assert [h["txn_id"] for h in ms.history(tid)] == [txn]
    ms.close()
