"""Compaction and vacuum against readers and writers running in other processes.

Real processes (forked from the forkserver of ``worker_context``), synchronized through pipes
and the pause-point FIFOs of :class:`acid_source.faults.PauseGate` - no sleeps; every wait is
bounded and watches the other process's sentinel. Expected rows come from a plain-Python
model; ROW__IDs from a read taken before the concurrent work (rows nobody changed must keep
them).

* A reader that started iterating ``AcidTable.scan().toBatches()`` before a minor and a major
  compaction and two ``vacuum(retentionSeconds=0)`` (all in another process) reads its snapshot
  to the end, exactly; the vacuums keep precisely the directories its snapshot reads (its
  lease), and remove them once it is done.
* A compaction held between its tasks and its commit while an UPDATE, a DELETE or an INSERT
  commits in another process: both succeed, and the table has the DML's rows and ROW__IDs;
  an overwrite of its partition committed meanwhile fails the compaction, which leaves nothing.
* The other order: an UPDATE held before its commit (its snapshot and delete events taken before
  the compaction) while a major compaction and a vacuum run and commit: both succeed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import compaction_workers
import pyarrow as pa
import pytest
import worker_context
from process_workers import WAIT, Pool

from acid_source import create_table
from acid_source.errors import ConflictError
from acid_source.faults import PauseGate
from acid_source.metastore import Metastore
from acid_source.resolve import resolve_table
from acid_source.scan.planner import TableScan
from acid_source.scan.reader import read_split
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
PARTS = ("a", "b")


# --- worker processes (process_workers: two workers serving compaction_workers) -----------------
@pytest.fixture(scope="module")
def pool():
    p = Pool(compaction_workers.serve)
    yield p
    p.close()


@pytest.fixture
def workers(pool):
    return pool.healthy()


# --- the table ----------------------------------------------------------------------------------
class Table:
    """A partitioned (``p``), bucketed (``id``, 2 buckets) table and its model id -> (v, p)."""

    def __init__(self, tmp_path: Path, url: str):
        self.url = url  # a fresh store of the test's backend (``store_url``: SQLite, PostgreSQL)
        self.location = create_table(str(tmp_path / "t"), SCHEMA, partitionColumns=["p"], bucketColumns=["id"],
                                     numBuckets=2, metastoreUrl=self.url).location
        self.handle = AcidTable.load(self.location, metastoreUrl=self.url)
        self.model: dict[int, tuple[str, str]] = {}
        self.next_id = 0

    def append(self, n: int, v: str) -> int:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        parts = [PARTS[i % 2] for i in ids]
        m = self.handle.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * n, "p": parts}))
        self.model.update({i: (v, p) for i, p in zip(ids, parts)})
        return m["writeId"]

    def rows(self) -> list[tuple]:
        return sorted((i, v, p) for i, (v, p) in self.model.items())

    def read(self) -> dict[int, tuple]:
        """id -> (v, p, (writeId, bucketId, rowId)) of the latest snapshot (ids are unique)."""
        resolved = resolve_table(self.location, metastore_url=self.url)
        scan = TableScan(resolved, include_row_id=True)
        ctx, splits = scan.plan(resolved.schema(include_row_id=True))
        out = {}
        for split in splits:
            for batch in read_split(split, ctx):
                cols = batch.to_pydict()
                for i, v, p, r in zip(cols["id"], cols["v"], cols["p"], cols["ROW__ID"]):
                    assert i not in out, f"id {i} read twice"
                    out[i] = (v, p, (r["writeId"], r["bucketId"], r["rowId"]))
        return out

    def dirs(self, *, hidden: bool = False) -> dict[str, set[str]]:
        """Each partition's entries; ``hidden``: the cleaner's markers too (_acidorc_cleaning
        stays while obsolete directories are kept for a lease)."""
        return {p: {d.name for d in (Path(self.location) / f"p={p}").iterdir()
                    if hidden or not d.name.startswith("_")} for p in PARTS}


def four_writes(t: Table) -> None:
    """Three appends of rows in both partitions and both buckets, and a DELETE (write 4)."""
    for w in range(3):
        t.append(24, f"w{w + 1}")
    t.handle.delete("id % 5 = 0")
    t.model = {i: row for i, row in t.model.items() if i % 5 != 0}


def write_id_dirs(write_ids: range) -> set[str]:
    """What the writes of ``write_ids`` created in each partition: a delta each, and a delete
    delta for the DELETE (write 4); statement id 0, no visibility suffix."""
    out = {f"delta_{w:07d}_{w:07d}_0000" for w in write_ids if w != 4}
    return out | {f"delete_delta_{w:07d}_{w:07d}_0000" for w in write_ids if w == 4}


# ---------------------------------------------------------------------------------------------
# a reader through compaction and vacuum
# ---------------------------------------------------------------------------------------------
def test_a_reader_reads_its_snapshot_to_the_end_through_compactions_and_vacuums(tmp_path, store_url, workers):
    w, _ = workers
    t = Table(tmp_path, store_url)
    four_writes(t)
    snapshot_rows = t.rows()
    assert t.dirs() == {p: write_id_dirs(range(1, 5)) for p in PARTS}

    ctx = worker_context.forkserver()
    reader_in, test_out = ctx.Pipe(duplex=False)
    test_in, reader_out = ctx.Pipe(duplex=False)
    reader = ctx.Process(target=compaction_workers.hold_a_scan, args=(t.location, t.url, reader_out, reader_in),
                         daemon=True)
    reader.start()
    try:
        assert test_in.poll(WAIT), "the reader did not start"
        status, first = test_in.recv()
        assert status == "reading", first
        assert 0 < len(first) < len(snapshot_rows)  # one split of four: most files are still to be opened

        # meanwhile, in another process: an UPDATE (write 5), a minor compaction, a vacuum ...
        w.call("dml", location=t.location, url=t.url, kind="update", condition="id % 3 = 0", set={"v": "'u5'"})
        t.model = {i: ("u5", p) if i % 3 == 0 else (v, p) for i, (v, p) in t.model.items()}
        minor = w.call("compact", location=t.location, url=t.url, kind="minor")
        mv = f"_v{minor['txnId']:07d}"
        assert sorted(minor["outputDirs"]) == sorted(f"p={p}/{k}delta_0000001_0000005{mv}" for p in PARTS
                                                     for k in ("", "delete_"))
        report = w.call("vacuum", location=t.location, url=t.url)
        assert report["numLiveLeases"] == 1 and report["numKeptForLeases"] == 2 * len(write_id_dirs(range(1, 5)))
        # ... the reader's snapshot reads writes 1-4: only write 5's directories went
        assert sorted(Path(x).relative_to(t.location).as_posix() for x in report["removedPaths"]) == sorted(
            f"p={p}/{d}" for p in PARTS for d in ("delta_0000005_0000005_0000", "delete_delta_0000005_0000005_0000"))
        # ... then a major compaction and another vacuum
        major = w.call("compact", location=t.location, url=t.url, kind="major")
        base = f"base_0000005_v{major['txnId']:07d}"
        assert sorted(major["outputDirs"]) == [f"p={p}/{base}" for p in PARTS]
        report = w.call("vacuum", location=t.location, url=t.url)
        assert report["numLiveLeases"] == 1
        assert t.dirs() == {p: write_id_dirs(range(1, 5)) | {base} for p in PARTS}  # the lease's, and the base
        assert sorted((i, v, p) for i, (v, p, _) in t.read().items()) == t.rows()

        test_out.send("go on")
        assert test_in.poll(WAIT), "the reader did not finish"
        status, rows = test_in.recv()
        assert status == "done", rows
        assert rows == snapshot_rows  # its whole snapshot: before the UPDATE, every row once
        reader.join(WAIT)
        assert reader.exitcode == 0
    finally:
        if reader.is_alive():
            reader.kill()
    assert Metastore(t.url).live_leases(Metastore(t.url).get_table(t.location).table_id) == []
    report = w.call("vacuum", location=t.location, url=t.url)  # the lease is gone: so are its directories
    assert report["numLiveLeases"] == 0 and report["numKeptForLeases"] == 0
    assert t.dirs(hidden=True) == {p: {base} for p in PARTS}  # the cleaning markers gone with the rest
    assert sorted((i, v, p) for i, (v, p, _) in t.read().items()) == t.rows()


# ---------------------------------------------------------------------------------------------
# writers committing while a compaction runs
# ---------------------------------------------------------------------------------------------
MEANWHILE = {
    "update": ("dml", {"kind": "update", "condition": "id % 3 = 0", "set": {"v": "'upd'"}}),
    "delete": ("dml", {"kind": "delete", "condition": "id % 3 = 0"}),
    "insert": ("write", {"rows": {"id": [1000, 1001, 1002, 1003], "v": ["ins"] * 4, "p": ["a", "b", "a", "b"]}}),
    "overwrite": ("write", {"rows": {"id": [2000], "v": ["ow"]}, "overwrite": True, "partition": {"p": "a"}}),
}


def apply(model: dict, job: str) -> dict:
    if job == "update":
        return {i: ("upd", p) if i % 3 == 0 else (v, p) for i, (v, p) in model.items()}
    if job == "delete":
        return {i: row for i, row in model.items() if i % 3 != 0}
    if job == "insert":
        return model | {1000: ("ins", "a"), 1001: ("ins", "b"), 1002: ("ins", "a"), 1003: ("ins", "b")}
    return {i: row for i, row in model.items() if row[1] != "a"} | {2000: ("ow", "a")}


@pytest.mark.parametrize("job", list(MEANWHILE))
def test_a_commit_while_a_compaction_is_held_before_its_commit(tmp_path, store_url, workers, job):
    compactor, writer = workers
    t = Table(tmp_path, store_url)
    four_writes(t)
    before = t.read()
    compactor.send("compact", location=t.location, url=t.url, kind="major", hold=True)
    status, outputs = compactor.receive()
    assert status == "held", outputs
    assert outputs and all(re.fullmatch(r"base_0000004_v\d{7}", os.path.basename(d)) for d in outputs)

    name, kwargs = MEANWHILE[job]
    m = writer.call(name, location=t.location, url=t.url, **kwargs)  # commits while the compaction is open
    assert m["writeId"] == 5
    compactor.conn.send("go")
    status, value = compactor.answer()
    t.model = apply(t.model, job)

    after = t.read()
    assert sorted((i, v, p) for i, (v, p, _) in after.items()) == t.rows()
    history = [h["operation"] for h in t.handle.history()]
    if job == "overwrite":
        assert status == "error" and isinstance(value, ConflictError), value
        assert value.partition == "p=a" and value.committed_write_id == 5
        assert Metastore(t.url).txn_state(value.txn_id) == "aborted"
        assert not any(os.path.exists(d) for d in outputs)  # the aborted compaction left nothing
        assert history[0] == "insert_overwrite" and "compaction" not in history
        assert {i: r for i, r in after.items() if r[1] == "b"} == {i: r for i, r in before.items() if r[1] == "b"}
        return
    assert status == "ok", value
    assert history[:2] == ["compaction", {"update": "update", "delete": "delete", "insert": "insert"}[job]]
    for p in PARTS:
        assert any(d.startswith("base_0000004_v") for d in t.dirs()[p])
    for i, (v, p, rid) in after.items():  # rows the DML did not write keep their ROW__IDs
        if rid[0] == 5:
            assert job in ("update", "insert") and (v == "upd" or v == "ins")
        else:
            assert before[i] == (v, p, rid)
    if job == "update":
        assert sorted(i for i, r in after.items() if r[2][0] == 5) == sorted(i for i in before if i % 3 == 0)
    # a later compaction composes the DML's deltas with the held compaction's base
    again = t.handle.compact("major")
    assert again["outputDirs"] == [f"p={p}/base_0000005_v{again['txnId']:07d}" for p in PARTS]
    assert t.read() == after


def test_an_update_held_before_its_commit_while_a_compaction_and_a_vacuum_commit(tmp_path, store_url, workers):
    """The UPDATE took its snapshot and wrote its delete events (ROW__IDs of writes 1-3) before
    the compaction started; they still find their rows in the compaction's base."""
    dml_worker, compactor = workers
    t = Table(tmp_path, store_url)
    four_writes(t)
    before = t.read()
    with PauseGate(tmp_path / "gate", "dml.before_commit") as gate:
        dml_worker.send("dml", env=gate.env(), location=t.location, url=t.url, kind="update",
                        condition="id % 3 = 0", set={"v": "'upd'"})
        try:
            gate.wait_reached(WAIT, sentinels=(dml_worker.process.sentinel,))
        except (TimeoutError, RuntimeError):
            pytest.fail(f"the UPDATE did not reach its pause point: {dml_worker.answer()}")
        major = compactor.call("compact", location=t.location, url=t.url, kind="major")
        assert major["outputDirs"] == [f"p={p}/base_0000004_v{major['txnId']:07d}" for p in PARTS]
        vacuum = compactor.call("vacuum", location=t.location, url=t.url)
        # the open UPDATE may still read its snapshot: nothing it reads goes
        assert vacuum["removedPaths"] == [] and vacuum["numKeptForRecentSnapshots"] > 0
        gate.release()
        status, m = dml_worker.answer()
    assert status == "ok", m
    assert m["writeId"] == 5 and m["numUpdatedRows"] == sum(1 for i in t.model if i % 3 == 0)
    t.model = apply(t.model, "update")
    after = t.read()
    assert sorted((i, v, p) for i, (v, p, _) in after.items()) == t.rows()
    for i, (v, p, rid) in after.items():
        assert (rid[0] == 5) if i % 3 == 0 else (before[i] == (v, p, rid))
    assert [h["operation"] for h in t.handle.history()][:2] == ["update", "compaction"]
    vacuum = t.handle.vacuum(retentionSeconds=0)  # the UPDATE is done: the compacted inputs go now
    assert vacuum["numRemovedPaths"] > 0
    assert t.read() == after
