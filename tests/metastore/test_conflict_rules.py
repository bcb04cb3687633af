"""The store's side of the conflict rules (DESIGN.md "Concurrency rules"), on real SQLite:

* the default ("object") rule, every (earlier, later) pair of operations, with the change that
  a compaction never fails an UPDATE / DELETE / MERGE and is failed only by an overwrite or
  another compaction (it keeps row ids), and errors naming the data object and the winner's
  transaction and write id;
* the write-id order rule, every pair again with the later committer holding the lower write
  id: an overwrite that would not replace a higher write id, or a commit that a higher
  overwrite's base would hide, fails (readers order directories by write id, not by commits);
* the row-level rule's store half: ``commits_since`` lists what a DML must compare its rows
  with, and ``commit(checked_through=S)`` aborts on an overwrite after S, refuses (a Recheck,
  nothing changed) when DML commits arrived after S, and commits otherwise.

The row comparison itself and real concurrent processes are in tests/dml/test_conflicts.py.
"""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from lossy_connections import LOCKED, commit_error, lossy_commits

from acid_source.errors import ConflictError, InvalidArgumentError
from acid_source.metastore import OPERATIONS, Metastore
from acid_source.metastore.records import Recheck

SCHEMA = pa.schema([("id", pa.int64()), ("ds", pa.string())])
DML = ("update", "delete", "merge")


@pytest.fixture
def table(ms, tmp_path):
    return ms.create_table(tmp_path / "t", SCHEMA, partition_columns=["ds"])


def start(ms, table_id, *, write_id: bool = True) -> int:
    txn = ms.open_transaction()
    if write_id:
        ms.allocate_write_id(txn, table_id)
    return txn


def expected_to_fail(earlier: str, later: str) -> bool:
    if later == "compaction":  # row ids survive compaction: only an overwrite or a compaction fails it
        return earlier in ("insert_overwrite", "compaction")
    if later in DML:
        return earlier != "compaction"
    return False


def wrong_write_id_order(earlier: str, later: str) -> bool:
    """When the later committer holds the lower write id: its overwrite would not hide the
    earlier commit, or the earlier overwrite's base would hide it (compactions are exempt)."""
    if "compaction" in (earlier, later):
        return False
    return "insert_overwrite" in (earlier, later)


# ---------------------------------------------------------------------------------------------
# object rule
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("later", OPERATIONS)
@pytest.mark.parametrize("earlier", OPERATIONS)
def test_object_rule_table(ms, table, earlier, later):
    tid = table.table_id
    first = start(ms, tid, write_id=earlier != "compaction")  # a compaction has no write id of its own
    second = start(ms, tid, write_id=later != "compaction")
    ms.commit(first, touched={tid: ["ds=1"]}, operation=earlier)
    first_wid = ms.txn_info(first)["write_ids"].get(tid)
    if expected_to_fail(earlier, later):
        with pytest.raises(ConflictError) as info:
            ms.commit(second, touched={tid: ["ds=1"]}, operation=later)
        err = info.value
        assert (err.txn_id, err.committed_txn_id, err.committed_write_id) == (second, first, first_wid)
        assert (err.location, err.partition) == (table.location, "ds=1")
        winner = f"committed by [txnid:{first}] ({earlier}" + (f", write id {first_wid})" if first_wid else ")")
        assert winner in str(err) and f"{table.location}/ds=1" in str(err)
        assert ms.txn_state(second) == "aborted"
        assert vars(pickle.loads(pickle.dumps(err))) == vars(err)
    else:
        assert ms.commit(second, touched={tid: ["ds=1"]}, operation=later) is None
        assert ms.txn_state(second) == "committed"


@pytest.mark.parametrize("later", DML)
def test_a_compaction_between_does_not_hide_an_earlier_change(ms, table, later):
    """Compactions are skipped, not the commits around them: an insert before the compaction
    still fails the DML, and it is the one named."""
    tid = table.table_id
    dml, ins = start(ms, tid), start(ms, tid)
    ms.commit(ins, touched={tid: ["ds=1"]}, operation="insert")
    ms.commit(start(ms, tid, write_id=False), touched={tid: ["ds=1"]}, operation="compaction")
    with pytest.raises(ConflictError) as info:
        ms.commit(dml, touched={tid: ["ds=1"]}, operation=later)
    assert info.value.committed_txn_id == ins and info.value.committed_write_id == 2


def test_the_winner_write_id_is_the_one_on_the_conflicting_table(ms, table, tmp_path):
    other = ms.create_table(tmp_path / "other", SCHEMA, partition_columns=["ds"])
    tid = table.table_id
    upd = start(ms, tid)
    both = ms.open_transaction()
    for _ in range(3):  # move the other table's write ids away from this table's
        ms.commit(start(ms, other.table_id), touched={other.table_id: ["ds=1"]})
    ms.allocate_write_id(both, other.table_id)
    ms.allocate_write_id(both, tid)
    ms.commit(both, touched={tid: ["ds=1"], other.table_id: ["ds=1"]}, operation="insert")
    with pytest.raises(ConflictError) as info:
        ms.commit(upd, touched={tid: ["ds=1"]}, operation="update")
    assert (info.value.committed_txn_id, info.value.committed_write_id) == (both, 2)


# ---------------------------------------------------------------------------------------------
# write-id order rule
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("later", OPERATIONS)
@pytest.mark.parametrize("earlier", OPERATIONS)
def test_write_id_order_rule_table(ms, table, earlier, later):
    """The later committer started first, so it holds the lower write id (the object rule's
    table above has the other start order, where write-id order agrees with commit order)."""
    tid = table.table_id
    second = start(ms, tid, write_id=later != "compaction")
    first = start(ms, tid, write_id=earlier != "compaction")
    ms.commit(first, touched={tid: ["ds=1"]}, operation=earlier)
    first_wid = ms.txn_info(first)["write_ids"].get(tid)
    second_wid = ms.txn_info(second)["write_ids"].get(tid)
    if expected_to_fail(earlier, later):  # the object rule comes first and names the same winner
        with pytest.raises(ConflictError, match="must be retried on a fresh snapshot") as info:
            ms.commit(second, touched={tid: ["ds=1"]}, operation=later)
        assert "higher write id" not in str(info.value)
        assert (info.value.committed_txn_id, info.value.committed_write_id) == (first, first_wid)
    elif wrong_write_id_order(earlier, later):
        assert first_wid > second_wid
        with pytest.raises(ConflictError) as info:
            ms.commit(second, touched={tid: ["ds=1"]}, operation=later)
        err = info.value
        assert (err.txn_id, err.committed_txn_id, err.committed_write_id) == (second, first, first_wid)
        assert (err.location, err.partition) == (table.location, "ds=1")
        message = str(err)
        assert f"{table.location}/ds=1 committed by [txnid:{first}] ({earlier}, write id {first_wid})" in message
        assert f"the higher write id {first_wid} (this transaction has {second_wid})" in message
        effect = "be hidden by its base for ever" if earlier == "insert_overwrite" else "not overwrite its rows"
        assert f"so this {later} would {effect}" in message
        assert message.endswith(f"retry the {later}: a new attempt gets a higher write id and succeeds")
        assert ms.txn_state(second) == "aborted"
        assert ms.txn_info(second)["abort_reason"].startswith(f"write conflict on {table.location}/ds=1")
        assert vars(pickle.loads(pickle.dumps(err))) == vars(err)
        retry = start(ms, tid)  # what the message promises: a new attempt commits
        assert ms.commit(retry, touched={tid: ["ds=1"]}, operation=later) is None
        assert ms.txn_info(retry)["write_ids"][tid] > first_wid
    else:
        assert ms.commit(second, touched={tid: ["ds=1"]}, operation=later) is None
        assert ms.txn_state(second) == "committed"


def test_write_id_order_is_per_data_object(ms, table):
    """A higher write id in another partition does not count, nor an overwrite that committed
    before this transaction started (its write id is lower anyway)."""
    tid = table.table_id
    before = start(ms, tid)
    ms.commit(before, touched={tid: ["ds=1"]}, operation="insert_overwrite")
    ow = start(ms, tid)
    ms.commit(start(ms, tid), touched={tid: ["ds=2"]}, operation="insert")  # higher, elsewhere
    ms.commit(start(ms, tid), touched={tid: ["ds=3"]}, operation="insert_overwrite")  # higher, elsewhere
    assert ms.commit(ow, touched={tid: ["ds=1"]}, operation="insert_overwrite") is None


def test_write_id_order_compares_write_ids_on_the_same_table(ms, table, tmp_path):
    """A transaction writing two tables holds a lower write id than ours on our table and a
    higher one on the other: no conflict (only its write id on our table counts)."""
    other = ms.create_table(tmp_path / "other", SCHEMA, partition_columns=["ds"])
    tid = table.table_id
    for _ in range(3):  # the other table's write ids run ahead of this table's
        ms.commit(start(ms, other.table_id), touched={other.table_id: ["ds=1"]})
    both = ms.open_transaction()
    assert ms.allocate_write_id(both, tid) == 1
    ow = start(ms, tid)
    assert ms.allocate_write_id(both, other.table_id) == 4 and ms.txn_info(ow)["write_ids"][tid] == 2
    ms.commit(both, touched={tid: ["ds=1"], other.table_id: ["ds=1"]}, operation="insert")
    assert ms.commit(ow, touched={tid: ["ds=1"]}, operation="insert_overwrite") is None


def test_a_compaction_is_outside_the_write_id_order_rule(ms, table):
    """A compaction holding a write id (as a compactor might) that commits after an overwrite
    started does not fail it, and a compaction is never failed by an overwrite's write id."""
    tid = table.table_id
    ow = start(ms, tid)
    comp = start(ms, tid)  # holds write id 2 > 1
    ms.commit(comp, touched={tid: ["ds=1"]}, operation="compaction")
    assert ms.commit(ow, touched={tid: ["ds=1"]}, operation="insert_overwrite") is None


# ---------------------------------------------------------------------------------------------
# row rule: commits_since
# ---------------------------------------------------------------------------------------------
def test_commits_since_lists_committed_work_on_the_objects(ms, table, tmp_path):
    tid = table.table_id
    other = ms.create_table(tmp_path / "other", SCHEMA, partition_columns=["ds"])
    mine = start(ms, tid)
    start_seq = ms.txn_info(mine)["start_seq"]
    ins = start(ms, tid)
    ms.commit(ins, touched={tid: ["ds=1", "ds=2"]}, operation="insert")
    upd = start(ms, tid)
    ms.commit(upd, touched={tid: ["ds=2"]}, operation="update")
    comp = start(ms, tid, write_id=False)
    ms.commit(comp, touched={tid: ["ds=1"]}, operation="compaction")
    ms.abort(start(ms, tid))  # aborted: never listed
    start(ms, tid)  # open: never listed
    ms.commit(start(ms, other.table_id), touched={other.table_id: ["ds=1"]}, operation="delete")  # other table
    ms.commit(start(ms, tid), touched={tid: ["ds=9"]}, operation="delete")  # other partition
    seq, commits = ms.commits_since(tid, ["ds=1", "ds=2"], start_seq)
    assert seq == ms.history(tid, limit=1)[0]["commit_seq"]  # the ds=9 delete was the last commit
    assert [(c["txn_id"], c["operation"], c["write_id"], c["partition"]) for c in commits] == [
        (ins, "insert", 2, "ds=1"), (ins, "insert", 2, "ds=2"), (upd, "update", 3, "ds=2"),
        (comp, "compaction", None, "ds=1")]
    assert [c["commit_seq"] for c in commits] == sorted(c["commit_seq"] for c in commits)
    _, only_dml = ms.commits_since(tid, ["ds=1", "ds=2"], start_seq, operations=DML)
    assert [c["txn_id"] for c in only_dml] == [upd]
    _, later = ms.commits_since(tid, ["ds=2"], commits[-2]["commit_seq"])
    assert later == []
    with pytest.raises(InvalidArgumentError, match="operations"):
        ms.commits_since(tid, ["ds=1"], 0, operations=["upsert"])


# ---------------------------------------------------------------------------------------------
# row rule: commit(checked_through=...)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("operation", DML)
def test_row_rule_commits_when_nothing_new_arrived(ms, table, operation):
    tid = table.table_id
    mine = start(ms, tid)
    other = start(ms, tid)
    ms.commit(other, touched={tid: ["ds=1"]}, operation="update")  # the caller compared its rows with it
    seq, _ = ms.commits_since(tid, ["ds=1"], ms.txn_info(mine)["start_seq"])
    for op in ("insert", "compaction"):  # after the check, but never a reason to fail
        ms.commit(start(ms, tid, write_id=op == "insert"), touched={tid: ["ds=1"]}, operation=op)
    assert ms.commit(mine, touched={tid: ["ds=1"]}, operation=operation, checked_through=seq) is None
    assert ms.txn_state(mine) == "committed"


def test_row_rule_refuses_without_aborting_when_a_dml_arrived_after_the_check(ms, table):
    tid = table.table_id
    mine = start(ms, tid)
    seq, _ = ms.commits_since(tid, ["ds=1", "ds=2"], ms.txn_info(mine)["start_seq"])
    late = start(ms, tid)
    ms.commit(late, touched={tid: ["ds=2"]}, operation="merge")
    ms.commit(start(ms, tid), touched={tid: ["ds=1"]}, operation="insert")
    recheck = ms.commit(mine, touched={tid: ["ds=1", "ds=2"]}, operation="delete", checked_through=seq)
    assert isinstance(recheck, Recheck)
    assert [(c["txn_id"], c["operation"], c["write_id"], c["partition"]) for c in recheck.commits] == [
        (late, "merge", 2, "ds=2")]
    assert recheck.through_seq == ms.commits_since(tid, ["ds=1"], 0)[0]
    info = ms.txn_info(mine)
    assert info["state"] == "open" and info["commit_seq"] is None and info["touched"] == {}  # nothing changed
    # checked through the new point, it commits
    assert ms.commit(mine, touched={tid: ["ds=1", "ds=2"]}, operation="delete",
                     checked_through=recheck.through_seq) is None
    assert ms.txn_state(mine) == "committed"


@pytest.mark.parametrize("checked", ["before", "after"])
def test_row_rule_aborts_on_an_overwrite_after_the_check(ms, table, checked):
    """An overwrite after the point the rows were checked through aborts; one before it was
    the caller's to find (and it would have failed already), so the store does not look,
    unless its write id is above ours (next test)."""
    tid = table.table_id
    if checked == "after":
        mine = start(ms, tid)
        ow = start(ms, tid)
        seq, _ = ms.commits_since(tid, ["ds=1"], ms.txn_info(mine)["start_seq"])
        ms.commit(ow, touched={tid: ["ds=1"]}, operation="insert_overwrite")
        with pytest.raises(ConflictError) as info:
            ms.commit(mine, touched={tid: ["ds=1"]}, operation="update", checked_through=seq)
        err = info.value
        assert (err.committed_txn_id, err.committed_write_id, err.partition) == (ow, 2, "ds=1")
        assert "(insert_overwrite, write id 2)" in str(err)
        assert ms.txn_state(mine) == "aborted"
    else:
        ow = start(ms, tid)  # the overwrite's write id is below ours
        mine = start(ms, tid)
        ms.commit(ow, touched={tid: ["ds=1"]}, operation="insert_overwrite")
        seq, _ = ms.commits_since(tid, ["ds=1"], ms.txn_info(mine)["start_seq"])
        assert ms.commit(mine, touched={tid: ["ds=1"]}, operation="update", checked_through=seq) is None


@pytest.mark.parametrize("operation", DML)
def test_row_rule_applies_the_write_id_order_rule_before_the_check_too(ms, table, operation):
    """An overwrite with a higher write id that committed before the point the rows were
    checked through: its base would hide this DML's deltas for ever, so the store aborts."""
    tid = table.table_id
    mine = start(ms, tid)
    ow = start(ms, tid)
    ms.commit(ow, touched={tid: ["ds=1"]}, operation="insert_overwrite")
    seq, _ = ms.commits_since(tid, ["ds=1"], ms.txn_info(mine)["start_seq"])
    with pytest.raises(ConflictError, match=r"the higher write id 2 \(this transaction has 1\)") as info:
        ms.commit(mine, touched={tid: ["ds=1"]}, operation=operation, checked_through=seq)
    assert (info.value.committed_txn_id, info.value.committed_write_id) == (ow, 2)
    assert f"this {operation} would be hidden by its base for ever" in str(info.value)
    assert ms.txn_state(mine) == "aborted"


def test_row_rule_is_for_dml_only(ms, table):
    tid = table.table_id
    for op in ("insert", "insert_overwrite", "compaction"):
        with pytest.raises(InvalidArgumentError, match="checked_through"):
            ms.commit(start(ms, tid), touched={tid: ["ds=1"]}, operation=op, checked_through=0)


# ---------------------------------------------------------------------------------------------
# a commit aborted by the write-id order rule whose answer was lost
# ---------------------------------------------------------------------------------------------
class LostAnswer:
    """A real driver connection (pysqlite, psycopg) whose next COMMIT takes effect, then runs
    ``then[0]`` (another process acting between the two attempts of one call) and reports lock
    contention, so the store runs the call again."""

    then: list = []

    @staticmethod
    def on_commit(conn, commit, backend):
        if not LostAnswer.then:
            return commit()
        step = LostAnswer.then.pop(0)
        commit()
        step()
        raise commit_error(backend, LOCKED)


@pytest.fixture
def lossy(ms):
    LostAnswer.then = []
    undo = lossy_commits(ms, LostAnswer.on_commit)
    yield LostAnswer.then
    assert LostAnswer.then == [], "a scripted commit never happened"
    undo()


def test_a_lost_answer_to_a_write_id_order_abort_raises_it_again(ms, table, lossy):
    tid = table.table_id
    ins = start(ms, tid)
    ow = start(ms, tid)
    ms.commit(ow, touched={tid: ["ds=1"]}, operation="insert_overwrite")
    lossy.append(lambda: None)
    with pytest.raises(ConflictError, match=r"this insert would be hidden by its base for ever") as info:
        ms.commit(ins, touched={tid: ["ds=1"]}, operation="insert")
    assert (info.value.txn_id, info.value.committed_txn_id, info.value.committed_write_id) == (ins, ow, 2)
    assert ms.txn_state(ins) == "aborted"


def test_a_re_run_names_the_same_winner_when_another_conflict_arrived_between(ms, table, db_url, lossy):
    """Row mode: the commit is aborted for the write-id order of an overwrite that committed
    before the check; between the two attempts another overwrite commits after the check (the
    row rule's kind of conflict). The re-run reports the first one, as the abort did."""
    tid = table.table_id
    mine = start(ms, tid)
    first = start(ms, tid)
    ms.commit(first, touched={tid: ["ds=1"]}, operation="insert_overwrite")
    seq, _ = ms.commits_since(tid, ["ds=1"], ms.txn_info(mine)["start_seq"])
    other = Metastore(db_url)
    second = start(other, tid)
    lossy.append(lambda: other.commit(second, touched={tid: ["ds=1"]}, operation="insert_overwrite"))
    with pytest.raises(ConflictError) as info:
        ms.commit(mine, touched={tid: ["ds=1"]}, operation="delete", checked_through=seq)
    assert other.txn_state(second) == "committed"  # it did arrive between the attempts
    assert (info.value.committed_txn_id, info.value.committed_write_id) == (first, 2)
    assert "this delete would be hidden by its base for ever" in str(info.value)
    assert ms.txn_state(mine) == "aborted"
    other.close()
