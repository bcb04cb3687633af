"""Streaming sinks' micro-batch marks (exactly once) on acidorc's own store, SQLite and
PostgreSQL: a commit records (sink, batch) in its own database transaction; a second commit of
the batch is refused atomically (aborted, BatchAlreadyCommittedError, its files removed); two
processes racing for one batch: exactly one wins; lost answers; the table created on first use
in a store made before it; marks survive reopening the store. The Hive metastore refuses."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
import worker_context
from lossy_connections import LOCKED, commit_error, lossy_commits

from acid_source import create_table
from acid_source.errors import (
    BatchAlreadyCommittedError,
    ConflictError,
    InvalidArgumentError,
    TransactionStateError,
    UnsupportedOperationError,
)
from acid_source.metastore import Metastore, connect
from acid_source.metastore.sql.schema import sink_batches
from acid_source.table import AcidTable

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import metastore_workers  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("ds", pa.string())])
SINK = "file:/checkpoints/query-1"


@pytest.fixture
def table(ms, tmp_path):
    return ms.create_table(tmp_path / "t", SCHEMA, name="streams.t", partition_columns=["ds"])


def _writer(ms, table_id) -> int:
    txn = ms.open_transaction()
    ms.allocate_write_id(txn, table_id)
    return txn


def test_a_commit_records_its_micro_batch(ms, table, clock):
    tid = table.table_id
    assert ms.sink_batch(SINK, 0) is None and ms.last_sink_batch(SINK) is None
    first, second = _writer(ms, tid), _writer(ms, tid)
    ms.commit(first, touched={tid: ["ds=1"]}, sink=(SINK, 0))
    ms.commit(second, touched={tid: ["ds=2"]}, sink=(SINK, 1))
    assert (ms.sink_batch(SINK, 0), ms.sink_batch(SINK, 1), ms.sink_batch(SINK, 2)) == (first, second, None)
    assert ms.last_sink_batch(SINK) == 1 and ms.last_sink_batch("another sink") is None
    other = _writer(ms, tid)  # another sink's batch 0 is another batch
    ms.commit(other, touched={tid: ["ds=1"]}, sink=("another sink", 0))
    assert ms.sink_batch("another sink", 0) == other


def test_a_second_commit_of_a_batch_is_aborted_instead(ms, table):
    tid = table.table_id
    winner, replay = _writer(ms, tid), _writer(ms, tid)
    ms.commit(winner, touched={tid: ["ds=1"]}, sink=(SINK, 7))
    with pytest.raises(BatchAlreadyCommittedError, match=rf"batch 7 was committed already by transaction {winner}"
                       ) as caught:
        ms.commit(replay, touched={tid: ["ds=1"]}, sink=(SINK, 7))
    error = caught.value
    assert isinstance(error, ConflictError)
    assert (error.sink_id, error.batch_id, error.committed_txn_id, error.txn_id) == (SINK, 7, winner, replay)
    assert ms.txn_state(replay) == "aborted" and ms.sink_batch(SINK, 7) == winner
    assert ms.txn_info(replay)["abort_reason"].startswith("micro-batch committed already")
    assert str(ms.valid_write_ids(tid)) == "streams.t:2:9223372036854775807::2"
    with pytest.raises(TransactionStateError):  # aborted for good
        ms.commit(replay, touched={tid: ["ds=1"]})


def test_the_refusal_comes_before_any_other_conflict(ms, table):
    """A replayed batch that would also lose a write conflict is reported as the replay: the
    sink treats it as done rather than retry it."""
    tid = table.table_id
    first, late = _writer(ms, tid), _writer(ms, tid)
    ms.commit(first, touched={tid: ["ds=1"]}, operation="update", sink=(SINK, 3))
    with pytest.raises(BatchAlreadyCommittedError):
        ms.commit(late, touched={tid: ["ds=1"]}, operation="update", sink=(SINK, 3))


@pytest.mark.parametrize("sink, argument", [
    (("", 0), "sink_id"), ((SINK, -1), "batch_id"), ((SINK, True), "batch_id"), ((SINK, "1"), "batch_id"),
    (("x" * 1025, 0), "sink_id"), ((None, 0), "sink_id"), ((SINK,), "sink"), ((SINK, 0, 1), "sink"),
])
def test_a_sink_mark_is_checked_before_anything_happens(ms, table, sink, argument):
    txn = _writer(ms, table.table_id)
    with pytest.raises(InvalidArgumentError) as caught:
        ms.commit(txn, touched={table.table_id: ["ds=1"]}, sink=sink)
    assert caught.value.argument == argument
    assert ms.txn_state(txn) == "open"
    if argument != "sink":
        with pytest.raises(InvalidArgumentError):
            ms.sink_batch(*sink)


def test_a_sink_commit_writes_one_table(ms, table, tmp_path):
    other = ms.create_table(tmp_path / "u", SCHEMA, name="streams.u")
    txn = _writer(ms, table.table_id)
    ms.allocate_write_id(txn, other.table_id)
    with pytest.raises(InvalidArgumentError, match="writes one table"):
        ms.commit(txn, touched={table.table_id: ["ds=1"], other.table_id: [""]}, sink=(SINK, 0))
    assert ms.txn_state(txn) == "open" and ms.sink_batch(SINK, 0) is None
    empty = _writer(ms, table.table_id)  # an empty micro-batch: the table of its write id
    ms.commit(empty, touched={}, sink=(SINK, 0))
    with Metastore(ms.connect_url()) as again:
        row = again._run(lambda conn: conn.execute(sa.select(sink_batches)).one(), write=False, what="read")
    assert (row.sink_id, row.batch_id, row.txn_id, row.table_id) == (SINK, 0, empty, table.table_id)


def test_marks_survive_reopening_the_store(ms, table, db_url, clock):
    txn = _writer(ms, table.table_id)
    ms.commit(txn, touched={table.table_id: ["ds=1"]}, sink=(SINK, 41))
    ms.close()
    with Metastore(db_url) as reopened:
        assert reopened.sink_batch(SINK, 41) == txn and reopened.last_sink_batch(SINK) == 41
        replay = _writer(reopened, table.table_id)
        with pytest.raises(BatchAlreadyCommittedError):
            reopened.commit(replay, touched={table.table_id: ["ds=1"]}, sink=(SINK, 41))


def test_a_store_made_before_sinks_gets_the_table_on_first_use(ms, table, db_url):
    ms._run(lambda conn: sink_batches.drop(conn), write=True, what="drop the sink table")
    with Metastore(db_url) as old:  # what a store created by an earlier release looks like
        assert old.last_sink_batch(SINK) is None
        txn = _writer(old, table.table_id)
        old.commit(txn, touched={table.table_id: ["ds=1"]}, sink=(SINK, 0))
        assert old.sink_batch(SINK, 0) == txn
    ms._run(lambda conn: sink_batches.drop(conn), write=True, what="drop the sink table")
    with Metastore(db_url) as old:  # the commit is the first use
        txn = _writer(old, table.table_id)
        old.commit(txn, touched={table.table_id: ["ds=1"]}, sink=(SINK, 0))
        assert old.sink_batch(SINK, 0) == txn


# --- lost answers --------------------------------------------------------------------------------
@pytest.fixture
def lose_next_commit(ms):
    script: list = []

    def on_commit(conn, commit, backend):
        if not script:
            return commit()
        script.pop()
        commit()
        raise commit_error(backend, LOCKED)

    ms.last_sink_batch(SINK)  # the table exists before the lossy connections start
    undo = lossy_commits(ms, on_commit)
    yield script
    undo()
    assert not script, "the scripted commit never happened"


def test_a_sink_commit_whose_answer_is_lost_succeeds_once(ms, table, lose_next_commit):
    txn = _writer(ms, table.table_id)
    lose_next_commit.append("lost")
    ms.commit(txn, touched={table.table_id: ["ds=1"]}, sink=(SINK, 5))  # the re-run finds its own mark
    assert ms.txn_state(txn) == "committed" and ms.sink_batch(SINK, 5) == txn


def test_a_lost_answer_to_a_refusal_raises_the_refusal(ms, table, lose_next_commit):
    winner, replay = _writer(ms, table.table_id), _writer(ms, table.table_id)
    ms.commit(winner, touched={table.table_id: ["ds=1"]}, sink=(SINK, 5))
    lose_next_commit.append("lost")
    with pytest.raises(BatchAlreadyCommittedError) as caught:
        ms.commit(replay, touched={table.table_id: ["ds=1"]}, sink=(SINK, 5))
    assert (caught.value.committed_txn_id, caught.value.txn_id) == (winner, replay)
    assert ms.txn_state(replay) == "aborted"


def test_the_error_pickles_with_its_context():
    error = BatchAlreadyCommittedError(SINK, 9, committed_txn_id=3, txn_id=4)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is BatchAlreadyCommittedError and isinstance(copy, ConflictError)
    assert (copy.sink_id, copy.batch_id, copy.committed_txn_id, copy.txn_id) == (SINK, 9, 3, 4)
    assert str(copy) == str(error) and "batch 9" in str(copy) and SINK in str(copy)


# --- a staged write on a real table --------------------------------------------------------------
def _rows(ids, ds="a"):
    return pa.record_batch({"id": pa.array(ids, pa.int64()), "ds": [ds] * len(ids)})


def _staged_append(location, url, ids):
    staged = AcidTable.load(str(location), metastoreUrl=url).newWrite(mode="append")
    writer = staged.writer(0)
    writer.write(_rows(ids))
    return staged, writer.close()


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "delta_" in str(p))


def test_a_replayed_staged_write_leaves_nothing_on_storage(db_url, tmp_path):
    location = tmp_path / "events"
    create_table(str(location), SCHEMA, partitionColumns=["ds"], metastoreUrl=db_url)
    first, results = _staged_append(location, db_url, [1, 2])
    metrics = first.commit([results], sink=(SINK, 0))
    committed = _files(location)
    replay, results = _staged_append(location, db_url, [1, 2])  # the same batch, new files
    assert _files(location) != committed
    with pytest.raises(BatchAlreadyCommittedError) as caught:
        replay.commit([results], sink=(SINK, 0))
    assert caught.value.committed_txn_id == metrics["txnId"] and caught.value.txn_id == replay.txnId
    assert _files(location) == committed  # the replay's directories are gone
    store = connect(db_url)
    assert store.txn_state(replay.txnId) == "aborted"
    assert sorted(AcidTable.load(str(location), metastoreUrl=db_url).toArrow().column("id").to_pylist()) == [1, 2]
    nxt, results = _staged_append(location, db_url, [3])
    nxt.commit([results], sink=(SINK, 1))
    assert store.last_sink_batch(SINK) == 1


def test_a_context_managed_transaction_commits_its_mark(ms, table):
    from acid_source.txn import Transaction

    with Transaction.begin(ms, heartbeat="none") as txn:
        ms.allocate_write_id(txn.txn_id, table.table_id)
        txn.set_commit("insert", {table.table_id: ["ds=1"]}, sink=(SINK, 2))
    assert txn.state == "committed" and ms.sink_batch(SINK, 2) == txn.txn_id
    with pytest.raises(BatchAlreadyCommittedError):
        with Transaction.begin(ms, heartbeat="none") as again:
            ms.allocate_write_id(again.txn_id, table.table_id)
            again.set_commit("insert", {table.table_id: ["ds=1"]}, sink=(SINK, 2))
    assert again.state == "aborted"


def test_processes_racing_to_commit_one_batch_exactly_one_wins(db_url, tmp_path):
    location = tmp_path / "events"
    create_table(str(location), SCHEMA, partitionColumns=["ds"], metastoreUrl=db_url)
    workers = 3
    ctx = worker_context.forkserver()
    results = metastore_workers.run_workers(
        ctx, workers, metastore_workers.commit_batch,
        lambda i, start, queue: (str(location), db_url, SINK, 0, [10 * i, 10 * i + 1], i, start, queue))
    outcomes = {worker: value for worker, _, value in results}
    winners = [w for w, (outcome, _, _) in outcomes.items() if outcome == "committed"]
    assert len(winners) == 1, outcomes
    winner_txn = outcomes[winners[0]][1]
    store = connect(db_url)
    assert store.sink_batch(SINK, 0) == winner_txn
    for w, (outcome, txn, committed_by) in outcomes.items():
        if w != winners[0]:
            assert (outcome, committed_by) == ("refused", winner_txn) and store.txn_state(txn) == "aborted"
    ids = sorted(AcidTable.load(str(location), metastoreUrl=db_url).toArrow().column("id").to_pylist())
    assert ids == [10 * winners[0], 10 * winners[0] + 1]  # one copy of the batch, the winner's
    assert len({p.parent for p in location.rglob("bucket_*")}) == 1  # the losers' directories are gone


# --- the Hive metastore ---------------------------------------------------------------------------
@pytest.mark.hms
def test_the_hive_metastore_refuses_sink_marks_and_the_write_leaves_nothing(hive_metastore, tmp_path):
    from pymetastore.hive_metastore import ttypes as tt

    with hive_metastore.client() as client:
        try:
            client.create_database(tt.Database(name="sinks", locationUri=f"file:{hive_metastore.warehouse}/sinks.db",
                                               parameters={}))
        except tt.AlreadyExistsException:
            pass
    store = connect(hive_metastore.uri)
    for call in (lambda: store.sink_batch(SINK, 0), lambda: store.last_sink_batch(SINK)):
        with pytest.raises(UnsupportedOperationError, match="commit's own database transaction"):
            call()
    location = tmp_path / "events"
    create_table(str(location), SCHEMA, name="sinks.events", partitionColumns=["ds"],
                 metastoreUrl=hive_metastore.uri)
    staged, results = _staged_append(location, hive_metastore.uri, [1])
    with pytest.raises(UnsupportedOperationError, match="CommitTxnRequest.keyValue"):
        staged.commit([results], sink=(SINK, 0))
    assert store.txn_state(staged.txnId) == "aborted"
    assert not list(location.rglob("bucket_*"))
