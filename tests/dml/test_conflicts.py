"""The conflict table of DESIGN.md ("Concurrency rules"), cell by cell, with real processes.

Every cell is two jobs on one data object (partition ``p=a``) of a partitioned table. The job
that commits later ("L") runs in a worker process and is held at a pause point
(:class:`acid_source.faults.PauseGate`: FIFOs, no sleeps) after its snapshot and its files,
before its commit; the earlier job ("E") then runs to its commit in another worker process (a
compaction: a store-level transaction of operation "compaction" in the test process, as there
is no compactor yet); then L is released. Checked for each cell and each conflict mode
(``object``, Hive's rule, and ``row``): which side fails, with a :class:`ConflictError` naming
the data object and the winner's write id; that the table reads back exactly as the winner's
result, computed here by hand on plain tuples; that the loser left no directory of its write
id and is aborted in the store.

The same job kinds are used throughout: E's UPDATE sets row 1, L's DELETE removes rows 1 and
3, so in row mode the two DMLs share row 1 (disjoint rows have their own tests).

As L starts first, it holds the lower write id; readers order directories by write id, not by
commit order, so where an overwrite is involved (L's overwrite would not replace E's rows, or
E's base would hide L's) L fails too (the write-id order rule), and its retry succeeds.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import conflict_workers
import pyarrow as pa
import pytest
from process_workers import WAIT, Pool, Worker
from servers.postgres import BACKENDS

from acid_source import create_table
from acid_source.errors import ConflictError
from acid_source.faults import PauseGate
from acid_source.layout.names import parse_dir_name
from acid_source.metastore import Metastore
from acid_source.table import AcidTable
from acid_source.txn import Transaction

SCHEMA = "id bigint, v string, p string"
BASE = [(1, "a1", "a"), (2, "a2", "a"), (3, "a3", "a"), (10, "b10", "b"), (11, "b11", "b")]
OPS = ("overwrite", "insert", "dml", "compaction")
MODES = ("object", "row")
BUCKET_0 = 1 << 29  # ROW__ID bucket of writer 0, statement 0 (bucketing version 1 encoding)

# What E and L do (E's rows end in "e_...", L's in "l_...").
E_JOBS = {
    "overwrite": ("write", {"rows": {"id": [100], "v": ["e_ow"]}, "overwrite": True, "partition": {"p": "a"}}),
    "insert": ("write", {"rows": {"id": [200], "v": ["e_ins"], "p": ["a"]}}),
    "dml": ("dml", {"kind": "update", "condition": "id = 1", "set": {"v": "'e_upd'"}}),
}
L_JOBS = {
    "overwrite": ("held_write", {"rows": {"id": [101], "v": ["l_ow"]}, "overwrite": True, "partition": "p=a"}),
    "insert": ("held_write", {"rows": {"id": [201], "v": ["l_ins"], "p": ["a"]}}),
    "dml": ("dml", {"kind": "delete", "condition": "id IN (1, 3)"}),
}


def apply(rows: set, job: str, who: str) -> set:
    """The table after ``who``'s ``job`` (plain Python: the model the table must match)."""
    rows = set(rows)
    if job == "overwrite":
        return {r for r in rows if r[2] != "a"} | {(100 if who == "E" else 101, f"{who.lower()}_ow", "a")}
    if job == "insert":
        return rows | {(200 if who == "E" else 201, f"{who.lower()}_ins", "a")}
    if job == "dml" and who == "E":
        return {(i, "e_upd", p) if (i, p) == (1, "a") else (i, v, p) for i, v, p in rows}
    if job == "dml":
        return {r for r in rows if not (r[2] == "a" and r[0] in (1, 3))}
    return rows  # a compaction changes no row


def later_fails(earlier: str, later: str, mode: str) -> bool:
    """DESIGN.md's table, plus: a compaction never fails a DML and is failed only by an
    overwrite or another compaction (it keeps row ids); in row mode a DML fails only on a common
    row (here row 1, when E is a DML) or an overwrite; and the write-id order rule (L holds the
    lower write id here)."""
    if later == "compaction":
        return earlier in ("overwrite", "compaction")
    if later == "dml":
        return earlier in ("overwrite", "dml") if mode == "row" else earlier != "compaction"
    return (earlier, later) in WRITE_ID_ORDER


# Cells DESIGN.md has both succeed but where L, holding the lower write id, fails: its overwrite's
# base would not hide E's higher write id, or E's overwrite's higher base would hide L's insert.
WRITE_ID_ORDER = {("overwrite", "overwrite"), ("insert", "overwrite"), ("dml", "overwrite"),
                  ("overwrite", "insert")}


# ---------------------------------------------------------------------------------------------
# worker processes (process_workers: two workers serving conflict_workers)
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pool():
    p = Pool(conflict_workers.serve)
    yield p
    p.close()


@pytest.fixture(scope="module")
def store_url(request, tmp_path_factory):
    """One store per backend for the module: a SQLite file, a store on the PostgreSQL server
    (parameters: :func:`pytest_generate_tests`)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('conflicts') / 'store.db'}"
        return
    server = request.getfixturevalue("postgres_server")
    url = server.create_store()
    yield url
    server.drop_store(url)


@pytest.fixture
def workers(pool):
    return pool.healthy()


# ---------------------------------------------------------------------------------------------
# the table of one cell
# ---------------------------------------------------------------------------------------------
class Table:
    def __init__(self, tmp_path: Path, url: str):
        self.url = url
        self.location = str(tmp_path / "table")
        self.info = create_table(self.location, SCHEMA, partitionColumns=["p"], metastoreUrl=url)
        self.location = self.info.location
        self.store = Metastore(url)
        ids, vs, ps = zip(*BASE)
        self.setup_write_id = self.handle().append(pa.table({"id": list(ids), "v": list(vs), "p": list(ps)}))["writeId"]

    def handle(self, mode: str | None = None) -> AcidTable:
        return AcidTable.load(self.location, metastoreUrl=self.url, conflictDetection=mode)

    def rows(self) -> set:
        data = self.handle().toArrow()
        rows = list(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), data.column("p").to_pylist()))
        assert len(rows) == len(set(rows)), f"duplicate rows: {sorted(rows)}"
        return set(rows)

    def dirs_of(self, write_id: int) -> list[str]:
        """Every directory of the table whose name says it holds write id ``write_id`` alone."""
        found = []
        for root, dirs, _ in os.walk(self.location):
            for d in dirs:
                parsed = parse_dir_name(d)
                if parsed is not None and parsed.min_write_id == parsed.max_write_id == write_id:
                    found.append(os.path.join(root, d))
        return found

    def compaction(self) -> Transaction:
        """A compaction's transaction (no compactor yet: it commits no files)."""
        return Transaction.begin(self.store, description="compaction (test)", heartbeat="none")

    def check_loser(self, err: ConflictError) -> None:
        """The losing transaction is aborted and left nothing behind."""
        assert self.store.txn_state(err.txn_id) == "aborted"
        write_id = self.store.txn_info(err.txn_id)["write_ids"].get(self.info.table_id)
        if write_id is not None:
            assert self.dirs_of(write_id) == [], f"the loser's write id {write_id} left directories"
        assert err.txn_id not in [h["txn_id"] for h in self.store.history(self.info.table_id)]


def hold(worker: Worker, gate: PauseGate, name: str, **kwargs) -> None:
    """Start a job in ``worker`` and wait until it is held at ``gate``."""
    worker.send(name, env=gate.env(), **kwargs)
    try:
        gate.wait_reached(WAIT, sentinels=(worker.process.sentinel,))
    except (TimeoutError, RuntimeError):
        status, value = worker.answer() if worker.conn.poll(1) else ("?", None)
        pytest.fail(f"the held job did not reach its pause point ({status}: {value!r})")


def finish(worker: Worker, gate: PauseGate) -> tuple:
    gate.release()
    return worker.answer()


def l_step(later: str) -> str:
    return "dml.before_commit" if later == "dml" else conflict_workers.HELD_WRITE


# ---------------------------------------------------------------------------------------------
# the table, cell by cell
# ---------------------------------------------------------------------------------------------
CELLS = [(e, later, m) for m in MODES for e in OPS for later in OPS]
#: The cells run with the store on PostgreSQL too: the row mode's, which use every store call the
#: object mode's do (the object rule for overwrites, compactions and the write-id order) and the
#: row rule's besides. The object mode's conflict decisions run on PostgreSQL in
#: tests/metastore (test_object_rule_table), and everything here runs on SQLite.
PG_CELLS = [cell for cell in CELLS if cell[2] == "row"]


def pytest_generate_tests(metafunc):
    """Every test on each backend (``store_url``), but test_conflict_table on PostgreSQL only in
    ``PG_CELLS``."""
    if metafunc.function.__name__ == "test_conflict_table":
        params = [pytest.param(*cell, backend, id=f"{backend}-{cell[2]}-{cell[0]}-then-{cell[1]}")
                  for backend in BACKENDS for cell in CELLS if backend == "sqlite" or cell in PG_CELLS]
        metafunc.parametrize("earlier, later, mode, store_url", params, indirect=["store_url"], scope="module")
    elif "store_url" in metafunc.fixturenames:
        metafunc.parametrize("store_url", BACKENDS, indirect=True, scope="module")


def test_conflict_table(tmp_path, store_url, workers, earlier, later, mode):
    """L starts first (it has the older snapshot and the lower write id), E commits, then L."""
    a, b = workers
    t = Table(tmp_path, store_url)
    tid = t.info.table_id
    gate = None
    try:
        # L: open, snapshot, files; held before its commit
        if later == "compaction":
            compaction = t.compaction()
        else:
            gate = PauseGate(tmp_path / "gate", l_step(later))
            name, kwargs = L_JOBS[later]
            extra = {"mode": mode} if later == "dml" else {}
            hold(a, gate, name, location=t.location, url=store_url, **kwargs, **extra)
        # E: runs and commits while L is open
        if earlier == "compaction":
            winner = t.compaction()
            winner.commit("compaction", {tid: ["p=a"]})
            e_txn, e_write_id = winner.txn_id, None
        else:
            name, kwargs = E_JOBS[earlier]
            extra = {"mode": mode} if earlier == "dml" else {}
            e = b.call(name, location=t.location, url=store_url, **kwargs, **extra)
            e_txn, e_write_id = e["txnId"], e["writeId"]
        # L commits (or fails)
        if later == "compaction":
            try:
                compaction.commit("compaction", {tid: ["p=a"]})
                outcome = ("ok", None)
            except ConflictError as exc:
                outcome = ("error", exc)
        else:
            assert gate is not None
            outcome = finish(a, gate)
            gate.close()
            gate = None
    finally:
        if gate is not None:
            gate.close()

    expected = apply(set(BASE), earlier, "E")
    status, value = outcome
    if later_fails(earlier, later, mode):
        assert status == "error" and isinstance(value, ConflictError), f"L should have failed, got {outcome}"
        assert (value.location, value.partition) == (t.location, "p=a")
        assert (value.committed_txn_id, value.committed_write_id) == (e_txn, e_write_id)
        label = f"{t.location}/p=a committed by [txnid:{e_txn}]"
        assert label in str(value) and (e_write_id is None or f"write id {e_write_id}" in str(value))
        if mode == "row" and (earlier, later) == ("dml", "dml"):
            # row 1 is the first row the setup wrote into p=a: (setup write id, bucket 0, row 0)
            assert value.row_id == (t.setup_write_id, BUCKET_0, 0)
        t.check_loser(value)
        if (earlier, later) in WRITE_ID_ORDER:
            l_write_id = t.store.txn_info(value.txn_id)["write_ids"][tid]
            assert l_write_id < e_write_id
            assert f"the higher write id {e_write_id} (this transaction has {l_write_id})" in str(value)
            assert t.rows() == expected  # exactly E's result: nothing of L
            # what the message promises: the same job again (a new, higher write id) succeeds
            name, kwargs = L_JOBS[later]
            kwargs = dict(kwargs, partition={"p": "a"} if kwargs.get("partition") else None)
            b.call("write", location=t.location, url=store_url, **kwargs)
            expected = apply(expected, later, "L")
    else:
        assert status == "ok", f"L should have committed, got {value!r}"
        expected = apply(expected, later, "L")
    assert t.rows() == expected


@pytest.mark.parametrize("earlier", ["overwrite", "insert", "dml"])
@pytest.mark.parametrize("later", ["overwrite", "insert"])
def test_overwrite_and_insert_cells_when_the_earlier_committer_started_first(tmp_path, store_url, workers,
                                                                             earlier, later):
    """The write-id order cells with the other start order (E opens first, then L; E commits,
    then L): here write-id order agrees with commit order, and every cell gives DESIGN.md's
    result (both succeed)."""
    a, b = workers
    t = Table(tmp_path, store_url)
    e_gate = PauseGate(tmp_path / "e-gate", "dml.before_commit" if earlier == "dml" else conflict_workers.HELD_WRITE)
    l_gate = PauseGate(tmp_path / "l-gate", l_step(later))
    with e_gate, l_gate:
        name, kwargs = E_JOBS[earlier]
        if name == "write":  # held: E must be open while L starts
            kwargs = dict(kwargs, partition="p=a" if kwargs.get("partition") else None)
            name = "held_write"
        hold(b, e_gate, name, location=t.location, url=store_url, **kwargs,
             **({"mode": "object"} if earlier == "dml" else {}))
        name, kwargs = L_JOBS[later]
        hold(a, l_gate, name, location=t.location, url=store_url, **kwargs)
        e_status, e = finish(b, e_gate)
        assert e_status == "ok", e
        l_status, value = finish(a, l_gate)
        assert l_status == "ok", value
    assert t.rows() == apply(apply(set(BASE), earlier, "E"), later, "L")


# ---------------------------------------------------------------------------------------------
# beyond the table
# ---------------------------------------------------------------------------------------------
def run_pair(t: Table, workers, mode: str, e_job: tuple, l_job: tuple, step: str = "dml.before_commit",
             gate_dir: Path | None = None):
    """L (a DML in ``mode``) held at ``step``; E runs and commits; L released: (E metrics, L outcome)."""
    a, b = workers
    with PauseGate(gate_dir or Path(t.location).parent / "gate", step) as gate:
        hold(a, gate, "dml", location=t.location, url=t.url, mode=mode, **l_job[1])
        e = b.call(e_job[0], location=t.location, url=t.url, **e_job[1])
        return e, finish(a, gate)


@pytest.mark.parametrize("mode", MODES)
def test_disjoint_rows_of_one_partition(tmp_path, store_url, workers, mode):
    """Row mode: both commit and the table has both changes; object mode: the later fails."""
    t = Table(tmp_path, store_url)
    e, (status, value) = run_pair(t, workers, mode,
                                  ("dml", {"mode": mode, "kind": "update", "condition": "id = 2", "set": {"v": "'e'"}}),
                                  ("dml", {"kind": "delete", "condition": "id IN (1, 3)"}))
    after_e = {(i, "e" if i == 2 else v, p) for i, v, p in BASE}
    if mode == "row":
        assert status == "ok", value
        assert t.rows() == {r for r in after_e if r[0] not in (1, 3)}
    else:
        assert isinstance(value, ConflictError) and value.committed_write_id == e["writeId"]
        t.check_loser(value)
        assert t.rows() == after_e


def test_row_mode_prevents_a_lost_update(tmp_path, store_url, workers):
    """Two concurrent UPDATEs of one row: the later fails, the earlier's value stays."""
    t = Table(tmp_path, store_url)
    e, (status, value) = run_pair(t, workers, "row",
                                  ("dml", {"mode": "row", "kind": "update", "condition": "id = 1",
                                           "set": {"v": "'first'"}}),
                                  ("dml", {"kind": "update", "condition": "id = 1", "set": {"v": "concat(v, '+1')"}}))
    assert isinstance(value, ConflictError), value
    assert (value.committed_write_id, value.partition, value.row_id) == (e["writeId"], "p=a",
                                                                         (t.setup_write_id, BUCKET_0, 0))
    assert "rowId 0" in str(value)
    t.check_loser(value)
    assert t.rows() == {(i, "first" if i == 1 else v, p) for i, v, p in BASE}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("earlier", ["update", "overwrite"])
def test_different_partitions_never_conflict(tmp_path, store_url, workers, mode, earlier):
    t = Table(tmp_path, store_url)
    if earlier == "update":
        e_job = ("dml", {"mode": mode, "kind": "update", "condition": "id = 10", "set": {"v": "'e'"}})
        after_e = {(i, "e" if i == 10 else v, p) for i, v, p in BASE}
    else:
        e_job = ("write", {"rows": {"id": [100], "v": ["e_ow"]}, "overwrite": True, "partition": {"p": "b"}})
        after_e = {r for r in BASE if r[2] != "b"} | {(100, "e_ow", "b")}
    _, (status, value) = run_pair(t, workers, mode, e_job, ("dml", {"kind": "delete", "condition": "id IN (1, 3)"}))
    assert status == "ok", value
    assert t.rows() == {r for r in after_e if r[0] not in (1, 3)}


# --- row mode: the store's atomic re-check --------------------------------------------------
ROW_STEP = "dml.row_conflicts.before_store"


def test_row_mode_rechecks_a_dml_that_commits_after_the_check_same_row(tmp_path, store_url, workers):
    """L has checked its rows and is about to commit when E commits an UPDATE of the same row:
    the store refuses L's commit (it saw only commits up to its check), L checks E and fails."""
    t = Table(tmp_path, store_url)
    e, (status, value) = run_pair(t, workers, "row",
                                  ("dml", {"mode": "row", "kind": "update", "condition": "id = 3",
                                           "set": {"v": "'e'"}}),
                                  ("dml", {"kind": "delete", "condition": "id IN (1, 3)"}), step=ROW_STEP)
    assert isinstance(value, ConflictError), value
    assert value.committed_write_id == e["writeId"] and value.row_id == (t.setup_write_id, BUCKET_0, 2)
    t.check_loser(value)
    assert t.rows() == {(i, "e" if i == 3 else v, p) for i, v, p in BASE}


def test_row_mode_rechecks_a_dml_that_commits_after_the_check_disjoint(tmp_path, store_url, workers):
    """The same with a disjoint row: L is held at its check a second time (the store refused
    its first commit and it checked E), then commits."""
    a, b = workers
    t = Table(tmp_path, store_url)
    with PauseGate(tmp_path / "gate", ROW_STEP) as gate:
        hold(a, gate, "dml", location=t.location, url=store_url, mode="row", kind="delete", condition="id IN (1, 3)")
        b.call("dml", location=t.location, url=store_url, mode="row", kind="update", condition="id = 2",
               set={"v": "'e'"})
        gate.release()
        gate.wait_reached(WAIT, sentinels=(a.process.sentinel,))  # the re-check after the refusal
        status, value = finish(a, gate)
    assert status == "ok", value
    assert t.rows() == {(i, "e" if i == 2 else v, p) for i, v, p in BASE if i not in (1, 3)}


def test_row_mode_overwrite_after_the_check_aborts_in_the_store(tmp_path, store_url, workers):
    t = Table(tmp_path, store_url)
    e, (status, value) = run_pair(t, workers, "row",
                                  ("write", {"rows": {"id": [100], "v": ["e_ow"]}, "overwrite": True,
                                             "partition": {"p": "a"}}),
                                  ("dml", {"kind": "delete", "condition": "id IN (1, 3)"}), step=ROW_STEP)
    assert isinstance(value, ConflictError), value
    assert (value.committed_write_id, value.partition) == (e["writeId"], "p=a")
    assert "insert_overwrite" in str(value)
    t.check_loser(value)
    assert t.rows() == {r for r in BASE if r[2] != "a"} | {(100, "e_ow", "a")}


def test_row_mode_finds_rows_in_a_minor_compacted_delete_delta(tmp_path, store_url, workers):
    """E's deltas were rewritten by a (committed) minor compaction into delta_<E>_<E>_v<T> and
    delete_delta_<E>_<E>_v<T> and E's own directories are gone: L still finds the common row."""
    a, b = workers
    t = Table(tmp_path, store_url)
    with PauseGate(tmp_path / "gate", "dml.before_commit") as gate:
        hold(a, gate, "dml", location=t.location, url=store_url, mode="row", kind="delete", condition="id IN (1, 3)")
        e = b.call("dml", location=t.location, url=store_url, mode="row", kind="update", condition="id = 1",
                   set={"v": "'e'"})
        w = e["writeId"]
        part = Path(t.location) / "p=a"
        compaction = t.compaction()
        for kind in ("delta", "delete_delta"):  # what a minor compaction and a cleaner leave (same events)
            [own] = [d for d in part.iterdir() if d.name.startswith(f"{kind}_{w:07d}_{w:07d}_")]
            own.rename(part / f"{kind}_{w:07d}_{w:07d}_v{compaction.txn_id:07d}")
        compaction.commit("compaction", {t.info.table_id: ["p=a"]})
        assert not any(d.name.endswith(f"{w:07d}_0000") for d in part.iterdir())
        status, value = finish(a, gate)
    assert isinstance(value, ConflictError), value
    assert value.committed_write_id == w and value.row_id == (t.setup_write_id, BUCKET_0, 0)
    t.check_loser(value)
    assert t.rows() == {(i, "e" if i == 1 else v, p) for i, v, p in BASE}


# ---------------------------------------------------------------------------------------------
# Spark
# ---------------------------------------------------------------------------------------------
@pytest.mark.spark
def test_a_spark_merge_loses_to_a_commit_of_another_process(spark, tmp_path, store_url, workers, monkeypatch):
    """A Spark MERGE (object mode), held before its commit in this process, while a worker
    process commits an UPDATE of the same partition: the MERGE fails and leaves nothing."""
    a, _ = workers
    t = Table(tmp_path, store_url)
    source = spark.createDataFrame([(1, "m", "a"), (300, "new", "a")], "id bigint, v string, p string")
    outcome: dict = {}

    def merge():
        try:
            target = AcidTable.forPath(spark, t.location, metastoreUrl=store_url)
            outcome["ok"] = (target.alias("t").merge(source.alias("s"), "t.id = s.id")
                             .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll().execute())
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread
            outcome["error"] = exc

    gate = PauseGate(tmp_path / "gate", "dml.before_commit")
    for k, v in {**gate.env(), "ACIDORC_PAUSE_TIMEOUT": str(WAIT)}.items():
        monkeypatch.setenv(k, v)  # this process is the Spark driver: run_dml pauses in the MERGE's thread
    thread = threading.Thread(target=merge, daemon=True)
    try:
        thread.start()
        assert gate.wait_reached(240) == os.getpid()  # the MERGE's Spark jobs run before it gets there
        e = a.call("dml", location=t.location, url=store_url, mode="object", kind="update", condition="id = 2",
                   set={"v": "'e'"})
        gate.release()
    finally:
        thread.join(WAIT + 30)
        gate.close()
    assert not thread.is_alive()
    err = outcome.get("error")
    assert isinstance(err, ConflictError), outcome
    assert (err.location, err.partition, err.committed_write_id) == (t.location, "p=a", e["writeId"])
    t.check_loser(err)
    assert t.rows() == {(i, "e" if i == 2 else v, p) for i, v, p in BASE}
