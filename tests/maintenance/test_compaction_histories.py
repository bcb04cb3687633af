"""Property test: random histories interleaved with minor / major compactions and vacuums.

Each example builds one partitioned (``p``), bucketed (``id``, 2 buckets) table and runs a
random program on it, engine-free: appends, DELETEs and UPDATEs (``AcidTable.load(p)``; an
UPDATE may move rows to the other partition), writes whose transaction is aborted after their
files are written (a crashed writer), a write left open for a while and committed later,
pre-ACID original files in the partition directories before the first commit, minor and major
compactions (of the whole table or of one partition) and ``vacuum(retentionSeconds=0)``.

The model is a plain-Python dict id -> (v, p), and a copy of it at every committed version
(the table right after that write id's commit, in commit order: an open write committed late
joins every later snapshot). After every step:

* the latest read equals the model, and carries the ROW__IDs the last committed version had
  when it was first read;
* every committed version (``versionAsOf``) reads exactly its model rows, with the ROW__IDs it
  was first read with - compaction keeps row ids, vacuum removes nothing a reader may use;
* the only acceptable failures are NotEnoughHistoryError and SnapshotFilesRemovedError, and
  only for a version older than a compaction that a vacuum followed (the directories that
  version reads were compacted and then removed).

Version 0 (only the original files) is covered by its own test below. Set
ACIDORC_PROPERTY_EXAMPLES to run more examples than the CI default.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from core_read import read_with_row_ids as read  # every row (id, v, p, (writeId, bucketId, rowId)), sorted
from core_write import unfinished_write
from hivegen import HiveTable
from hypothesis import HealthCheck, Phase, given, note
from hypothesis import strategies as st
from properties import examples

from acid_source import create_table
from acid_source.errors import NotEnoughHistoryError, SnapshotFilesRemovedError
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
DATA_COLS = [("id", "bigint"), ("v", "string")]  # what original (pre-ACID) files hold
PARTS = ("a", "b")
GONE = (NotEnoughHistoryError, SnapshotFilesRemovedError)


@pytest.fixture(autouse=True)
def private_store(monkeypatch):
    """One store per example (each example creates its own table), never the session's."""
    root = tempfile.mkdtemp(prefix="acidorc-comphist-ms-")
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{root}/store.db")
    yield
    shutil.rmtree(root, ignore_errors=True)


def values(rows: list[tuple]) -> list[tuple]:
    return sorted(r[:3] for r in rows)


# --- the program ------------------------------------------------------------------------------
ops = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 12)),
    st.tuples(st.just("delete"), st.integers(2, 5), st.integers(0, 4)),
    st.tuples(st.just("update"), st.integers(2, 5), st.integers(0, 4)),
    st.tuples(st.just("move"), st.integers(2, 4), st.integers(0, 3)),  # UPDATE of the partition column
    st.tuples(st.just("aborted"), st.integers(1, 6)),
    st.tuples(st.just("open"), st.integers(1, 6)),
    st.tuples(st.just("commit_open")),
    st.tuples(st.just("minor"), st.sampled_from([None, "a", "b"])),
    st.tuples(st.just("major"), st.sampled_from([None, "a", "b"])),
    st.tuples(st.just("vacuum")),
)


@dataclass
class Run:
    location: str
    table: AcidTable
    model: dict[int, tuple[str, str]] = field(default_factory=dict)  # id -> (v, p)
    snapshots: dict[int, list[tuple]] = field(default_factory=dict)  # version -> model rows
    first_read: dict[int, list[tuple]] = field(default_factory=dict)  # version -> rows with ROW__IDs
    committed_at: dict[int, int] = field(default_factory=dict)  # version -> step of its commit
    compactions: list[int] = field(default_factory=list)  # steps of committed compactions
    vacuums: list[int] = field(default_factory=list)  # steps of vacuums
    last_version: int | None = None  # the write id committed last (commit order)
    next_id: int = 1000
    opened: tuple | None = None  # (job, txn, task result, rows) of the write left open
    step: int = 0

    def fresh(self, n: int, rng_part: int) -> tuple[list[int], list[str]]:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return ids, [PARTS[(i + rng_part) % 2] for i in ids]

    def committed(self, version: int) -> None:
        self.snapshots[version] = self.rows()
        self.committed_at[version] = self.step
        self.last_version = version
        self.first_read[version] = read(self.location, version)

    def rows(self) -> list[tuple]:
        return sorted((i, v, p) for i, (v, p) in self.model.items())

    def may_be_gone(self, version: int) -> bool:
        """A compaction committed after ``version`` and a vacuum after that compaction."""
        at = self.committed_at[version]
        return any(c > at and any(v > c for v in self.vacuums) for c in self.compactions)


def table_data(ids: list[int], v: str, parts: list[str]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids), "p": parts})


def apply(run: Run, op: tuple) -> None:
    kind = op[0]
    t = run.table
    if kind == "append":
        ids, parts = run.fresh(op[1], run.step)
        m = t.append(table_data(ids, f"a{ids[0]}", parts))
        run.model.update({i: (f"a{ids[0]}", p) for i, p in zip(ids, parts)})
        run.committed(m["writeId"])
    elif kind in ("delete", "update", "move"):
        k, r = op[1], op[2]
        cond = f"id % {k} = {r}" + (" AND p = 'a'" if kind == "move" else "")
        hit = [i for i, (_, p) in run.model.items() if i % k == r and (kind != "move" or p == "a")]
        if kind == "delete":
            m = t.delete(cond)
            for i in hit:
                del run.model[i]
        elif kind == "update":
            tag = f"u{run.step}"
            m = t.update(cond, {"v": f"'{tag}'"})
            for i in hit:
                run.model[i] = (tag, run.model[i][1])
        else:
            m = t.update(cond, {"p": "'b'"})
            for i in hit:
                run.model[i] = (run.model[i][0], "b")
        if hit:
            run.committed(m["writeId"])
        else:  # nothing matched: nothing committed
            assert m.get("writeId") is None or m["writeId"] not in run.committed_at
    elif kind == "aborted":
        ids, parts = run.fresh(op[1], run.step)
        staged, _ = unfinished_write(run.location, table_data(ids, "aborted", parts))
        staged.transaction.metastore.abort(staged.txnId, "writer died")  # its files stay, as after a crash
    elif kind == "open" and run.opened is None:
        ids, parts = run.fresh(op[1], run.step)
        staged, result = unfinished_write(run.location, table_data(ids, "open", parts))
        run.opened = (staged, result, {i: ("open", p) for i, p in zip(ids, parts)})
    elif kind == "commit_open" and run.opened is not None:
        staged, result, rows = run.opened
        staged.commit([result])
        run.opened = None
        run.model.update(rows)
        run.committed(staged.writeId)
    elif kind in ("minor", "major"):
        part = op[1]
        m = t.compact(kind, partitionFilter=None if part is None else f"p = '{part}'")
        if m["numDataObjectsCompacted"]:
            run.compactions.append(run.step)
        if run.opened is not None:  # never past the open write id
            assert m["writeIdHighWatermark"] < run.opened[0].writeId
    elif kind == "vacuum":
        t.vacuum(retentionSeconds=0)
        run.vacuums.append(run.step)


def check(run: Run) -> None:
    latest = read(run.location)
    assert values(latest) == run.rows(), "the latest read differs from the model"
    if run.last_version is not None:
        assert latest == run.first_read[run.last_version], "the latest ROW__IDs changed"
    for version, expected in run.snapshots.items():
        try:
            got = read(run.location, version)
        except GONE as exc:
            assert run.may_be_gone(version), f"version {version} unreadable, but nothing removed it: {exc!r}"
            continue
        assert values(got) == expected, f"version {version} differs from its model"
        assert got == run.first_read[version], f"version {version}: ROW__IDs changed"


def originals(run: Run, rows_per_file: list[int]) -> None:
    """Pre-ACID files (a table converted to ACID): 00000N_0 in partition p=a (N: the bucket)."""
    gen = HiveTable(run.location, DATA_COLS)
    for bucket, n in enumerate(rows_per_file):
        if n:
            ids, _ = run.fresh(n, 0)
            gen.original(f"{bucket:06d}_0", [(i, "orig") for i in ids], partition="p=a")
            run.model.update({i: ("orig", "a") for i in ids})


# 5 examples by default (the same 5 every run, derandomized): between them every kind of step -
# aborted and open writes, moves, deletes, updates, minor and major compactions of the whole table
# and of each partition (of the one holding original files too), vacuums - and original files in
# both buckets; ACIDORC_PROPERTY_EXAMPLES runs more (each example reads every version after every step)
@examples(5, suppress=[HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.generate])  # no shrinking: each example is slow; note() shows the steps
@given(program=st.lists(ops, min_size=6, max_size=16),
       with_originals=st.lists(st.integers(0, 4), min_size=2, max_size=2))
def test_random_histories_read_the_same_at_every_version_through_compaction_and_vacuum(program,
                                                                                        with_originals):
    root = tempfile.mkdtemp(prefix="acidorc-comphist-")
    try:
        location = os.path.join(root, "t")
        create_table(location, SCHEMA, partitionColumns=["p"], bucketColumns=["id"], numBuckets=2)
        run = Run(location, AcidTable.load(location))
        originals(run, with_originals)
        # every program starts with data, and ends with a major compaction and a vacuum
        for op in [("append", 5), *program, ("major", None), ("vacuum",)]:
            run.step += 1
            note(f"step {run.step}: {op}")
            apply(run, op)
            check(run)
        if run.opened is not None:  # the write left open commits; its rows are compacted too
            for op in [("commit_open",), ("major", None), ("vacuum",)]:
                run.step += 1
                note(f"step {run.step}: {op}")
                apply(run, op)
                check(run)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_version_zero_after_the_originals_were_compacted_and_cleaned(tmp_path):
    """Version 0 is the table before its first commit: only its original files. Once a base
    holds their rows and vacuum removed them, version 0 cannot be read - a typed error, never
    an empty table."""
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, partitionColumns=["p"])
    HiveTable(location, DATA_COLS).original("000000_0", [(1, "orig"), (2, "orig")], partition="p=a")
    t = AcidTable.load(location)
    t.append(table_data([3], "w1", ["a"]))
    assert values(read(location, 0)) == [(1, "orig", "a"), (2, "orig", "a")]
    t.compact("major")
    assert values(read(location, 0)) == [(1, "orig", "a"), (2, "orig", "a")]  # nothing removed yet
    assert sorted(p.rsplit("/", 1)[1] for p in t.vacuum(retentionSeconds=0)["removedPaths"]) == \
        ["000000_0", "delta_0000001_0000001_0000"]
    try:
        rows = read(location, 0)
    except GONE:
        return
    assert values(rows) == [(1, "orig", "a"), (2, "orig", "a")], "version 0 read wrong rows"


def test_a_minor_compaction_of_an_already_compacted_range_does_not_duplicate_rows(tmp_path):
    """An aborted write makes a minor compaction worthwhile (its directory is dropped) even
    when the live deltas are one delta a minor compaction already wrote: the new output then
    covers the same write ids as the old one. Readers must use one of the two, never both, and
    a major compaction must still be possible."""
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, partitionColumns=["p"])
    t = AcidTable.load(location)
    t.append(table_data([1], "w1", ["a"]))
    t.append(table_data([2], "w2", ["a"]))
    first = t.compact("minor")
    assert first["outputDirs"] == [f"p=a/delta_0000001_0000002_v{first['txnId']:07d}"]
    staged, _ = unfinished_write(location, table_data([3], "dead", ["a"]))
    staged.transaction.metastore.abort(staged.txnId, "writer died")
    t.compact("minor")
    expected = [(1, "w1", "a"), (2, "w2", "a")]
    assert values(read(location)) == expected
    t.vacuum(retentionSeconds=0)
    assert values(read(location)) == expected
    t.compact("major")
    assert values(read(location)) == expected


def test_the_table_version_stays_the_last_write_id_after_a_compaction(tmp_path):
    """A compaction adds no version (it has no write id): ``version`` - the latest committed
    write id - must not become None when the last commit is a compaction."""
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, partitionColumns=["p"])
    t = AcidTable.load(location)
    t.append(table_data([1], "w1", ["a"]))
    t.append(table_data([2], "w2", ["a"]))
    assert (t.version, t.scan().version) == (2, 2)
    t.compact("minor")
    assert (t.version, t.scan().version) == (2, 2)
