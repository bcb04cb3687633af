"""Snapshots read in one database transaction, and time travel: the snapshot as of a past
commit selects exactly the directories a reader selected at that instant (real SQLite files,
real directories, Hive's directory selection)."""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from acid_source.errors import ConflictError, InvalidArgumentError, VersionNotFoundError
from acid_source.layout.acid_state import get_acid_state
from acid_source.layout.names import base_dir_name, delta_dir_name
from acid_source.metastore import Metastore
from acid_source.storage import Storage

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def tid(ms, tmp_path) -> int:
    return ms.create_table(tmp_path / "t", SCHEMA, name="default.t").table_id


def _writer(ms, tid) -> tuple[int, int]:
    txn = ms.open_transaction()
    return txn, ms.allocate_write_id(txn, tid)


def _visible(root: Path, snapshot) -> list[str]:
    """The directories a reader of ``root`` uses under ``snapshot`` (base first, then deltas)."""
    write_ids, txns = snapshot
    state = get_acid_state(Storage(str(root)), str(root), write_ids, txns)
    return [Path(d.path).name for d in ([state.base] if state.base else []) + state.deltas]


# ---------------------------------------------------------------------------------------------
# one instant
# ---------------------------------------------------------------------------------------------
def _commit_between_statements(ms, other, txn):
    """Commit ``txn`` through ``other`` (another connection) right after ``ms`` has read the
    write-id records of a snapshot and before it reads anything else."""
    engine = ms._get_engine()
    fired = []

    def after(conn, cursor, statement, *args):
        if not fired and "acidorc_txn_write_ids" in statement:
            fired.append(True)
            other.commit(txn)

    event.listen(engine, "after_cursor_execute", after)
    return lambda: event.remove(engine, "after_cursor_execute", after)


def test_snapshot_reads_both_lists_at_one_instant(ms, tid, db_url):
    other = Metastore(db_url)
    txn, w = _writer(ms, tid)
    stop = _commit_between_statements(ms, other, txn)
    try:
        write_ids, txns = ms.snapshot(tid)
    finally:
        stop()
    assert other.txn_state(txn) == "committed"  # the commit happened while the snapshot was read
    assert not write_ids.is_write_id_valid(w) and not txns.is_txn_valid(txn)  # both: before it
    write_ids, txns = ms.snapshot(tid)
    assert write_ids.is_write_id_valid(w) and txns.is_txn_valid(txn)  # both: after it

    # the two separate calls are exposed to exactly this: the lists disagree
    txn2, w2 = _writer(ms, tid)
    stop = _commit_between_statements(ms, other, txn2)
    try:
        write_ids, txns = ms.valid_write_ids(tid), ms.valid_txns()
    finally:
        stop()
    assert not write_ids.is_write_id_valid(w2) and txns.is_txn_valid(txn2)


def test_snapshot_for_a_transaction_sees_its_own_writes(ms, tid):
    txn, w = _writer(ms, tid)
    write_ids, txns = ms.snapshot(tid, for_txn=txn)
    assert write_ids.is_write_id_valid(w) and txns.is_txn_valid(txn)
    assert (write_ids, txns) == (ms.valid_write_ids(tid, for_txn=txn), ms.valid_txns(for_txn=txn))
    with pytest.raises(InvalidArgumentError, match="argument 'for_txn'"):
        ms.snapshot(tid, for_txn="1")


# ---------------------------------------------------------------------------------------------
# time travel, by write id
# ---------------------------------------------------------------------------------------------
def test_snapshot_as_of_gives_the_table_as_it_was(ms, tid, tmp_path):
    root = tmp_path / "t"
    dirs = []
    a, w1 = _writer(ms, tid)                         # w1: committed first
    ms.commit(a)
    live = {w1: ms.snapshot(tid)}
    b, w2 = _writer(ms, tid)                         # w2: a long insert, committed later
    d, w3 = _writer(ms, tid)                         # w3: a writer that crashes (aborted later)
    c, w4 = _writer(ms, tid)                         # w4: committed while w2, w3 are open
    ms.commit(c)
    live[w4] = ms.snapshot(tid)
    ms.commit(b)
    live[w2] = ms.snapshot(tid)
    comp = ms.open_transaction()                     # compacts write ids 1..4 into base_4_v<comp>
    ms.abort(d, "crashed")
    ms.commit(comp, touched={tid: [""]}, operation="compaction")
    f, w5 = _writer(ms, tid)                         # w5: INSERT OVERWRITE
    ms.commit(f, operation="insert_overwrite")
    live[w5] = ms.snapshot(tid)
    g, w6 = _writer(ms, tid)                         # w6: still open
    assert (w1, w2, w3, w4, w5, w6) == (1, 2, 3, 4, 5, 6)

    for name in (delta_dir_name(1, 1, 0), delta_dir_name(2, 2, 0), delta_dir_name(3, 3, 0),
                 delta_dir_name(4, 4, 0), base_dir_name(4, comp), base_dir_name(5), delta_dir_name(6, 6, 0)):
        (root / name).mkdir(parents=True)
        dirs.append(name)

    expected = {
        1: [delta_dir_name(1, 1, 0)],
        4: [delta_dir_name(1, 1, 0), delta_dir_name(4, 4, 0)],
        2: [delta_dir_name(1, 1, 0), delta_dir_name(2, 2, 0), delta_dir_name(4, 4, 0)],
        5: [base_dir_name(5)],
    }
    for w, dirs_then in expected.items():
        then = ms.snapshot_as_of(tid, w)
        assert _visible(root, then) == dirs_then, w
        assert _visible(root, live[w]) == dirs_then, w  # what a reader saw at that moment
    assert _visible(root, ms.snapshot(tid)) == [base_dir_name(5)]

    write_ids, txns = ms.snapshot_as_of(tid, w4)
    assert write_ids.high_watermark == 4 and write_ids.min_open_id == 2
    assert not write_ids.is_write_id_valid(2) and not write_ids.is_write_id_aborted(2)  # open then
    assert write_ids.is_write_id_aborted(3)  # open then, aborted now: listed as aborted
    assert not txns.is_txn_valid(b) and not txns.is_txn_valid(comp) and not txns.is_txn_valid(g)
    assert txns.is_txn_aborted(d) and txns.is_txn_valid(a) and txns.is_txn_valid(c)

    after_compaction = ms.snapshot_as_of(tid, w5)[1]
    assert after_compaction.is_txn_valid(comp) and not after_compaction.is_txn_valid(g)


def test_versions_that_do_not_exist(ms, tid, tmp_path):
    a, w1 = _writer(ms, tid)
    ms.commit(a)
    b, w2 = _writer(ms, tid)
    c, w3 = _writer(ms, tid)
    ms.abort(c)
    for w, why in ((w2, f"belongs to open transaction {b}"), (w3, f"belongs to aborted transaction {c}"),
                   (9, "was never allocated")):
        with pytest.raises(VersionNotFoundError, match=why) as info:
            ms.snapshot_as_of(tid, w)
        assert info.value.write_id == w and info.value.table_id == tid
        assert isinstance(info.value, LookupError)
        copy = pickle.loads(pickle.dumps(info.value))
        assert str(copy) == str(info.value) and copy.write_id == w

    other = ms.create_table(tmp_path / "other", SCHEMA).table_id
    with pytest.raises(VersionNotFoundError):  # write id 1 of another table is not this table's
        ms.snapshot_as_of(other, 1)

    write_ids, txns = ms.snapshot_as_of(tid, 0)  # before the first commit: nothing is visible
    assert write_ids.high_watermark == 0 and not write_ids.is_write_id_valid(1)
    assert write_ids.table_name == "default.t"
    assert not txns.is_txn_valid(a)
    with pytest.raises(InvalidArgumentError, match="argument 'write_id'"):
        ms.snapshot_as_of(tid, -1)
    with pytest.raises(InvalidArgumentError, match="argument 'write_id'"):
        ms.snapshot_as_of(tid, 1.0)


# ---------------------------------------------------------------------------------------------
# time travel, by time
# ---------------------------------------------------------------------------------------------
def test_write_id_as_of_time(ms, tid, clock, tmp_path):
    other = ms.create_table(tmp_path / "other", SCHEMA).table_id
    with pytest.raises(VersionNotFoundError, match="no committed version yet"):
        ms.write_id_as_of_time(tid, clock.now)

    t0 = clock.now
    a, w1 = _writer(ms, tid)
    clock.now = t0 + 100
    ms.commit(a)
    b, w2 = _writer(ms, tid)
    clock.now = t0 + 150
    ms.abort(b)
    x, _ = _writer(ms, other)  # another table's commit is no version of this one
    clock.now = t0 + 175
    ms.commit(x)
    c, w3 = _writer(ms, tid)
    clock.now = t0 + 200
    ms.commit(c)
    clock.now = t0 + 250
    ms.commit(ms.open_transaction(), touched={tid: [""]}, operation="compaction")  # no write id

    assert ms.write_id_as_of_time(tid, t0 + 100) == w1
    assert ms.write_id_as_of_time(tid, t0 + 199.5) == w1
    assert ms.write_id_as_of_time(tid, t0 + 200) == w3
    assert ms.write_id_as_of_time(tid, t0 + 10_000) == w3
    with pytest.raises(VersionNotFoundError, match=r"earliest commit was at 2023-11-14T22:15:00\+00:00") as info:
        ms.write_id_as_of_time(tid, t0 + 99)
    assert info.value.earliest_commit_time == t0 + 100 and info.value.timestamp == t0 + 99
    for bad in ("2024-01-01", float("nan"), True, None):
        with pytest.raises(InvalidArgumentError, match="argument 'timestamp'"):
            ms.write_id_as_of_time(tid, bad)


# ---------------------------------------------------------------------------------------------
# random histories: as-of snapshots agree with the snapshots readers took at the time
# ---------------------------------------------------------------------------------------------
STEPS = st.lists(st.tuples(st.sampled_from(["insert", "overwrite", "commit", "abort", "compact"]),
                           st.integers(0, 7)), min_size=1, max_size=18)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_random_histories(steps):
    with tempfile.TemporaryDirectory(prefix="acidorc-tt-") as tmp:
        root = Path(tmp) / "t"
        root.mkdir()
        with Metastore(Path(tmp) / "m.db") as ms:
            _check_history(ms, ms.create_table(root, SCHEMA).table_id, root, steps)


def _check_history(ms, tid, root, steps):
    open_: list[tuple[int, int, str]] = []  # (txn, write id, operation)
    state: dict[int, str] = {}  # write id -> state now
    committed_txns: list[int] = []  # in commit order
    versions: list[tuple[int, tuple, list[int], set[int]]] = []  # (write id, live snapshot, txns, ids)
    started_after: dict[int, int] = {}  # write id -> number of write commits before it started
    commits: list[tuple[int, str]] = []  # (write id, operation) of committed writes, in commit order
    for action, k in steps:
        if action in ("insert", "overwrite"):
            txn, w = _writer(ms, tid)
            op = "insert" if action == "insert" else "insert_overwrite"
            open_.append((txn, w, op))
            state[w] = "open"
            started_after[w] = len(commits)
            (root / (delta_dir_name(w, w, 0) if op == "insert" else base_dir_name(w))).mkdir()
        elif action in ("commit", "abort") and open_:
            txn, w, op = open_.pop(k % len(open_))
            # the write-id order rule: an overwrite must not commit below a concurrent higher
            # write id, nothing below a concurrent overwrite's higher base
            refused = any(w2 > w and "insert_overwrite" in (op, op2) for w2, op2 in commits[started_after[w]:])
            if action == "commit" and refused:
                with pytest.raises(ConflictError, match="higher write id"):
                    ms.commit(txn, touched={tid: [""]}, operation=op)
                state[w] = "aborted"
            elif action == "commit":
                ms.commit(txn, touched={tid: [""]}, operation=op)
                state[w] = "committed"
                commits.append((w, op))
                committed_txns.append(txn)
                versions.append((w, ms.snapshot(tid), list(committed_txns),
                                 {v for v, s in state.items() if s == "committed"}))
            else:
                ms.abort(txn)
                state[w] = "aborted"
        elif action == "compact":
            upto = min((w for _, w, _ in open_), default=max(state, default=0) + 1) - 1
            if any(s == "committed" for w, s in state.items() if w <= upto):
                comp = ms.open_transaction()
                ms.commit(comp, touched={tid: [""]}, operation="compaction")
                committed_txns.append(comp)
                (root / base_dir_name(upto, comp)).mkdir()

    for w, live, txns_then, valid_then in versions:
        write_ids, txns = ms.snapshot_as_of(tid, w)
        assert _visible(root, (write_ids, txns)) == _visible(root, live)
        for v in range(1, max(state) + 2):
            assert write_ids.is_write_id_valid(v) == (v in valid_then), (w, v)
            if state.get(v) == "aborted" and v <= write_ids.high_watermark:
                assert write_ids.is_write_id_aborted(v)
        for t in range(1, max(committed_txns) + 3):
            assert txns.is_txn_valid(t) == (t in txns_then), (w, t)
