"""The cleaner (``vacuum``): exactly the obsolete and aborted directories no reader can need go;
what a live lease's snapshot, an open transaction or a recent snapshot reads stays; a reader
whose lease expired and whose files are gone gets SnapshotFilesRemovedError, never fewer rows.

Tables are built with the independent Hive-layout generator (tests/hivegen.py) under real
store transactions (a compaction is a committed transaction T whose output is named ``_vT``);
expected rows are plain Python lists; real processes synchronize through pipes.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from hivegen import INSERT, Event, HiveTable, base_name, bucket_property, delta_name
from servers.hive_metastore import wait_for

from acid_source import create_table
from acid_source.errors import (
    InvalidArgumentError,
    SnapshotFilesRemovedError,
    TableNotRegisteredError,
)
from acid_source.maintenance.cleaner import REMOVING_PREFIX, vacuum, vacuum_after_compaction
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

COLS = [("id", "int")]
SCHEMA = pa.schema([("id", pa.int32())])


class Table:
    """A registered table whose directories the test writes with hivegen, each write in its own
    store transaction (so the store's view and the directories agree)."""

    def __init__(self, tmp_path: Path, name: str = "t"):
        self.url = f"sqlite:///{tmp_path / 'store.db'}"
        self.root = tmp_path / name
        create_table(str(self.root), SCHEMA, metastoreUrl=self.url)
        self.store = Metastore(self.url)
        self.tid = self.store.get_table(str(self.root)).table_id
        self.hive = HiveTable(self.root, COLS)
        self.events: dict[int, list[Event]] = {}  # live insert events by bucket
        self.compactions: list[int] = []  # committed compaction transactions

    def insert(self, ids_by_bucket: dict[int, list[int]], *, commit: bool = True) -> tuple[int, int]:
        txn = self.store.open_transaction()
        wid = self.store.allocate_write_id(txn, self.tid)
        written = self.hive.insert(wid, {b: [(i,) for i in ids] for b, ids in ids_by_bucket.items()})
        if commit:
            self.store.commit(txn, touched={self.tid: [""]})
            for b, events in written.items():
                self.events.setdefault(b, []).extend(events)
        return txn, wid

    def delete(self, ids: list[int]) -> int:
        txn = self.store.open_transaction()
        wid = self.store.allocate_write_id(txn, self.tid)
        gone = [e for evs in self.events.values() for e in evs if e.row[0] in ids]
        self.hive.delete(wid, [e.key for e in gone])
        self.store.commit(txn, touched={self.tid: [""]}, operation="delete")
        for b in self.events:
            self.events[b] = [e for e in self.events[b] if e.row[0] not in ids]
        return wid

    def major(self, write_id: int, *, commit: bool = True) -> int:
        """A major compaction's ``base_N_vT`` holding the live rows, row ids kept."""
        txn = self.store.open_transaction()
        self.hive.base(write_id, {b: list(evs) for b, evs in self.events.items() if evs}, visibility=txn)
        if commit:
            self.store.commit(txn, touched={self.tid: [""]}, operation="compaction")
            self.compactions.append(txn)
        return txn

    def ids(self) -> list[int]:
        return sorted(e.row[0] for evs in self.events.values() for e in evs)

    def read(self) -> list[int]:
        return sorted(AcidTable.load(str(self.root), metastoreUrl=self.url).toArrow().column("id").to_pylist())

    def dirs(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir())

    def vacuum(self, **kw) -> dict:
        kw.setdefault("retentionSeconds", 0)
        return vacuum(str(self.root), metastoreUrl=self.url, **kw)


def names(report: dict) -> list[str]:
    return sorted(Path(p).name for p in report["removedPaths"])


def tree_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def three_writes_and_a_major_compaction(tmp_path) -> Table:
    t = Table(tmp_path)
    t.insert({0: [1, 2], 1: [3]})
    t.insert({0: [4], 1: [5, 6]})
    t.delete([2, 5])
    t.major(3)
    return t


OBSOLETE = sorted([delta_name(1, 1), delta_name(2, 2), delta_name(3, 3, delete=True)])


def test_vacuum_removes_what_a_major_compaction_made_obsolete(tmp_path):
    t = three_writes_and_a_major_compaction(tmp_path)
    before = t.read()
    assert before == [1, 3, 4, 6] == t.ids()
    size = sum(tree_size(t.root / n) for n in OBSOLETE)
    report = t.vacuum()
    assert names(report) == OBSOLETE
    assert report["removedBytes"] == size > 0 and report["numRemovedPaths"] == 3 and not report["dryRun"]
    assert t.dirs() == [base_name(3, t.compactions[-1])] and t.read() == before
    again = t.vacuum()  # idempotent
    assert again["removedPaths"] == [] and t.read() == before


def test_dry_run_removes_nothing_and_names_what_a_run_removes(tmp_path):
    t = three_writes_and_a_major_compaction(tmp_path)
    listed = t.dirs()
    dry = t.vacuum(dryRun=True)
    assert dry["dryRun"] and names(dry) == OBSOLETE and dry["removedBytes"] > 0
    assert t.dirs() == listed
    assert names(t.vacuum()) == names(dry)


def test_minor_compaction_and_superseded_bases(tmp_path):
    t = Table(tmp_path)
    t.insert({0: [1]})
    t.insert({0: [2]})
    # a minor compaction of write ids 1-2: one delta holding both, its inputs obsolete
    txn = t.store.open_transaction()
    t.hive.raw_dir(delta_name(1, 2, None, visibility=txn), {0: list(t.events[0])})
    t.store.commit(txn, touched={t.tid: [""]}, operation="compaction")
    t.insert({0: [3]})
    assert names(t.vacuum()) == [delta_name(1, 1), delta_name(2, 2)]
    assert t.read() == [1, 2, 3]
    first = t.major(3)
    t.insert({0: [4]})
    second = t.major(4)  # supersedes the first base
    assert names(t.vacuum()) == sorted([base_name(3, first), delta_name(1, 2, None, visibility=txn),
                                        delta_name(3, 3), delta_name(4, 4)])
    assert t.dirs() == [base_name(4, second)] and t.read() == [1, 2, 3, 4]


def test_aborted_writes_and_compactions_go_once_retention_seconds_old(tmp_path):
    t = Table(tmp_path)
    t.insert({0: [1]})
    dead, _ = t.insert({0: [99]}, commit=False)
    t.store.abort(dead)  # through the store: its files stay, as after a crashed writer
    failed = t.major(2, commit=False)
    t.store.abort(failed)
    aborted = sorted([delta_name(2, 2), base_name(2, failed)])
    assert set(aborted) <= set(t.dirs())
    young = t.vacuum(retentionSeconds=3600)  # just aborted: the writer may still be cleaning up
    assert young["removedPaths"] == [] and young["numKeptForRecentSnapshots"] == 2
    assert names(t.vacuum()) == aborted
    assert t.dirs() == [delta_name(1, 1)] and t.read() == [1]


def test_directories_of_open_transactions_are_never_touched(tmp_path):
    t = three_writes_and_a_major_compaction(tmp_path)
    _, open_wid = t.insert({0: [7]}, commit=False)  # a writer still running (write id 4)
    running = t.store.open_transaction()  # a compaction still running: its _vT is invisible
    t.hive.raw_dir(delta_name(4, 4, None, visibility=running), {0: []})
    report = t.vacuum()
    assert names(report) == OBSOLETE
    assert delta_name(open_wid, open_wid) in t.dirs() and delta_name(4, 4, None, visibility=running) in t.dirs()
    assert t.read() == [1, 3, 4, 6]


def test_an_open_transaction_keeps_the_snapshot_it_may_be_reading(tmp_path):
    t = Table(tmp_path)
    t.insert({0: [1]})
    t.insert({0: [2]})
    dml = t.store.open_transaction()  # e.g. a DELETE that took its snapshot before the compaction
    t.store.allocate_write_id(dml, t.tid)
    t.major(2)
    report = t.vacuum()
    assert report["removedPaths"] == [] and report["numKeptForRecentSnapshots"] == 2
    t.store.abort(dml)
    assert names(t.vacuum()) == [delta_name(1, 1), delta_name(2, 2)]


def test_a_snapshot_taken_within_the_retention_is_protected_without_a_lease(tmp_path):
    t = Table(tmp_path)
    t.insert({0: [1]})
    t.major(1)
    report = t.vacuum(retentionSeconds=3600)
    assert report["removedPaths"] == [] and report["numKeptForRecentSnapshots"] == 1
    later = Metastore(t.url, clock=lambda: time.time() + 3601)  # an hour later
    assert names(vacuum(str(t.root), metastore=later, retentionSeconds=3600)) == [delta_name(1, 1)]


def test_originals_go_once_a_base_holds_their_rows(tmp_path):
    t = Table(tmp_path)
    t.hive.original("000000_0", [(10,), (11,)])  # pre-ACID rows (a table converted to ACID)
    t.events[0] = [Event(INSERT, 0, bucket_property(0), i, 0, (v,)) for i, v in enumerate([10, 11])]
    t.insert({0: [1]})
    assert t.read() == [1, 10, 11]
    t.major(1)
    assert names(t.vacuum()) == ["000000_0", delta_name(1, 1)]
    assert t.read() == [1, 10, 11]


def test_partitions_are_cleaned_one_by_one(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    root = tmp_path / "p"
    create_table(str(root), "id int, day string", partitionColumns=["day"], metastoreUrl=url)
    table = AcidTable.load(str(root), metastoreUrl=url)
    for day in ("a", "b"):
        for i in range(2):
            table.append(pa.table({"id": pa.array([i], pa.int32()), "day": [day]}))
    store = Metastore(url)
    tid = store.get_table(str(root)).table_id
    hive = HiveTable(root, COLS)
    events = [Event(INSERT, w, bucket_property(0), 0, w, (i,)) for w, i in ((1, 0), (2, 1))]
    txn = store.open_transaction()
    hive.base(2, {0: events}, visibility=txn, partition="day=a")
    store.commit(txn, touched={tid: ["day=a"]}, operation="compaction")
    report = vacuum(str(root), metastoreUrl=url, retentionSeconds=0)
    assert [str(Path(p).relative_to(root)) for p in report["removedPaths"]] == \
        ["day=a/delta_0000001_0000001_0000", "day=a/delta_0000002_0000002_0000"]
    assert sorted((r["day"], r["id"]) for r in table.toArrow().to_pylist()) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]


def test_a_live_lease_keeps_its_snapshot_and_an_iterator_reads_it_to_the_end(tmp_path):
    t = Table(tmp_path)
    t.insert({0: [1, 2], 1: [3]})
    t.insert({0: [4], 1: [5]})
    scan = AcidTable.load(str(t.root), metastoreUrl=t.url).scan()
    it = scan.toBatches()
    got = next(it).column("id").to_pylist()  # the lease is taken and the directories listed
    t.delete([1])
    t.major(3)
    report = t.vacuum()  # the delete delta is not the lease's to keep: its snapshot does not read it
    assert names(report) == [delta_name(3, 3, delete=True)]
    assert report["numKeptForLeases"] == 2 and report["numLiveLeases"] == 1
    got += [v for b in it for v in b.column("id").to_pylist()]
    assert sorted(got) == [1, 2, 3, 4, 5]  # the snapshot before the delete, to the end
    assert len(t.store.live_leases(t.tid)) == 1  # the scan's, until it is closed
    scan.close()
    assert t.store.live_leases(t.tid) == []
    assert names(t.vacuum()) == [delta_name(1, 1), delta_name(2, 2)]
    assert t.read() == [2, 3, 4, 5]


def test_a_scans_lease_is_released_when_it_is_closed_or_collected(tmp_path):
    t = Table(tmp_path)
    t.insert({0: [1], 1: [2]})
    it = AcidTable.load(str(t.root), metastoreUrl=t.url).scan().toBatches()  # only the iterator holds the scan
    next(it)
    assert len(t.store.live_leases(t.tid)) == 1
    it.close()  # the scan goes with its iterator; its lease is released by acidorc's releasing thread
    wait_for(lambda: t.store.live_leases(t.tid) == [], timeout=30, what="the collected scan's lease released")
    with AcidTable.load(str(t.root), metastoreUrl=t.url).scan() as scan:
        assert len(t.store.live_leases(t.tid)) == 1
        assert sorted(scan.toArrow().column("id").to_pylist()) == [1, 2]
        assert scan.count() == 2 and len(t.store.live_leases(t.tid)) == 1  # one lease, however often read
    assert t.store.live_leases(t.tid) == []
    assert AcidTable.load(str(t.root), metastoreUrl=t.url).scan(leaseSeconds=0).count() == 2
    assert t.store.live_leases(t.tid) == []  # none taken


def test_an_expired_lease_protects_nothing_and_its_reader_gets_a_typed_error(tmp_path):
    t = Table(tmp_path)
    t.insert({0: [1, 2], 1: [3]})
    t.insert({0: [4], 1: [5]})
    it = AcidTable.load(str(t.root), metastoreUrl=t.url).scan(leaseSeconds=60).toBatches()
    next(it)  # bucket 0 is being read; bucket 1's files are opened later
    t.major(2)
    later = Metastore(t.url, clock=lambda: time.time() + 120)  # the reader stalled past its lease
    report = vacuum(str(t.root), metastore=later, retentionSeconds=0)
    assert names(report) == [delta_name(1, 1), delta_name(2, 2)] and report["numLiveLeases"] == 0
    with pytest.raises(SnapshotFilesRemovedError, match="delta_0000001_0000001_0000/bucket_00001") as info:
        list(it)
    assert "lease expired" in str(info.value) and "Re-read" in str(info.value)
    assert t.read() == [1, 2, 3, 4, 5]  # a new read takes the current snapshot


def test_a_scan_holds_its_snapshot_from_the_moment_it_is_made(tmp_path):
    """The lease is taken with the snapshot, not at the first batch: a compaction and a vacuum
    between ``scan()`` and its first read leave it its files."""
    t = Table(tmp_path)
    t.insert({0: [1]})
    t.insert({0: [2]})
    scan = AcidTable.load(str(t.root), metastoreUrl=t.url).scan()  # the snapshot now, nothing read
    t.delete([1])
    t.major(3)
    report = vacuum(str(t.root), metastoreUrl=t.url, retentionSeconds=0)
    assert report["numKeptForLeases"] == 2
    assert sorted(scan.toArrow().column("id").to_pylist()) == [1, 2]  # its snapshot, before the delete
    scan.close()
    assert names(vacuum(str(t.root), metastoreUrl=t.url, retentionSeconds=0)) == [delta_name(1, 1), delta_name(2, 2)]
    closed = AcidTable.load(str(t.root), metastoreUrl=t.url).scan()
    closed.close()  # no lease: what a vacuum removes meanwhile is a typed error, never fewer rows
    t.insert({0: [5]})  # write id 4
    t.major(4)
    vacuum(str(t.root), metastoreUrl=t.url, retentionSeconds=0)
    with pytest.raises(SnapshotFilesRemovedError, match=base_name(3)):
        closed.toArrow()


def _hold_a_scan(root: str, url: str, to_parent, from_parent) -> None:
    """Child process: start a scan, report, wait for the parent's word, read to the end."""
    it = AcidTable.load(root, metastoreUrl=url).scan().toBatches()
    got = next(it).column("id").to_pylist()
    to_parent.send("reading")
    assert from_parent.recv() == "go on"
    got += [v for b in it for v in b.column("id").to_pylist()]
    to_parent.send(sorted(got))


def test_a_reader_in_another_process_reads_its_snapshot_through_compaction_and_vacuum(tmp_path):
    t = Table(tmp_path)
    t.insert({0: [1, 2], 1: [3]})
    t.insert({0: [4], 1: [5, 6]})
    ctx = multiprocessing.get_context("spawn")
    child_in, parent_out = ctx.Pipe(duplex=False)
    parent_in, child_out = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_hold_a_scan, args=(str(t.root), t.url, child_out, child_in))
    child.start()
    try:
        assert parent_in.poll(120), "the reader did not start"
        assert parent_in.recv() == "reading"
        t.delete([1, 6])
        t.major(3)
        report = t.vacuum()
        assert names(report) == [delta_name(3, 3, delete=True)] and report["numKeptForLeases"] == 2
        assert t.read() == [2, 3, 4, 5]
        parent_out.send("go on")
        assert parent_in.poll(120), "the reader did not finish"
        assert parent_in.recv() == [1, 2, 3, 4, 5, 6]
        child.join(60)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
    assert names(t.vacuum()) == [delta_name(1, 1), delta_name(2, 2)]


def test_what_a_crashed_vacuum_left_and_what_another_vacuum_removed_first(tmp_path):
    t = three_writes_and_a_major_compaction(tmp_path)
    # a vacuum that died after renaming a directory away, before deleting it
    leftover = t.root / f"{REMOVING_PREFIX}0123456789ab-{OBSOLETE[0]}"
    (t.root / OBSOLETE[0]).rename(leftover)
    assert t.read() == [1, 3, 4, 6]  # hidden: no reader sees it
    report = t.vacuum()
    assert names(report) == sorted([leftover.name] + OBSOLETE[1:])
    assert not leftover.exists() and len(t.dirs()) == 1


def test_a_directory_removed_by_another_vacuum_meanwhile_is_skipped(tmp_path):
    from acid_source.maintenance.cleaner import _remove
    from acid_source.storage import FileEntry, Storage

    storage = Storage(str(tmp_path))
    missing = FileEntry(str(tmp_path / delta_name(1, 1)), delta_name(1, 1), 0, True)
    assert _remove(storage, missing) is False
    present = tmp_path / delta_name(2, 2)
    present.mkdir()
    (present / "bucket_00000").write_bytes(b"x")
    assert _remove(storage, FileEntry(str(present), present.name, 0, True)) is True
    assert os.listdir(tmp_path) == []


def test_refuses_a_table_the_store_does_not_know_and_bad_arguments(tmp_path):
    t = Table(tmp_path)
    HiveTable(tmp_path / "unknown", COLS).insert(1, {0: [(1,)]})
    with pytest.raises(TableNotRegisteredError):
        vacuum(str(tmp_path / "unknown"), metastoreUrl=t.url)
    with pytest.raises(InvalidArgumentError, match="retentionSeconds"):
        t.vacuum(retentionSeconds=-1)
    with pytest.raises(InvalidArgumentError, match="dryRun"):
        t.vacuum(dryRun="yes")
    with pytest.raises(InvalidArgumentError, match="dryRun"):
        AcidTable.load(str(t.root), metastoreUrl=t.url).vacuum(dryRun="no")


def test_acid_table_vacuum_and_the_after_compaction_switch(tmp_path, monkeypatch):
    t = three_writes_and_a_major_compaction(tmp_path)
    table = AcidTable.load(str(t.root), metastoreUrl=t.url)
    assert names(table.vacuum(dryRun=True, retentionSeconds=0)) == OBSOLETE
    monkeypatch.setenv("ACIDORC_VACUUM_AFTER_COMPACTION", "false")
    assert vacuum_after_compaction(str(t.root), metastore_url=t.url) is None
    monkeypatch.setenv("ACIDORC_VACUUM_RETENTION_SECONDS", "0")
    assert names(vacuum_after_compaction(str(t.root), metastore_url=t.url, enabled=True)) == OBSOLETE
    assert t.read() == [1, 3, 4, 6]


_DYING_COMPACTOR = """
import os, signal, sys
from acid_source.maintenance.compaction_tasks import run_tasks
from acid_source.maintenance.compactor import compact_table

def die_before_the_commit(tasks):
    run_tasks(tasks)  # the outputs are written; the commit never comes
    os.kill(os.getpid(), signal.SIGKILL)

compact_table(sys.argv[1], "minor", metastore_url=sys.argv[2], run_tasks=die_before_the_commit)
"""


def test_a_vacuum_aborts_a_dead_compactor_and_then_removes_its_outputs(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    root = tmp_path / "t"
    create_table(str(root), SCHEMA, metastoreUrl=url)
    table = AcidTable.load(str(root), metastoreUrl=url)
    for ids in ([1, 2], [3]):
        table.append(pa.table({"id": pa.array(ids, pa.int32())}))
    died = subprocess.run([sys.executable, "-c", _DYING_COMPACTOR, str(root), url], capture_output=True, text=True)
    assert died.returncode == -9, died.stderr
    compactor = 3  # the transactions: two appends, then the compaction
    outputs = sorted(p.name for p in root.iterdir() if "_v" in p.name)
    assert outputs == ["delta_0000001_0000002_v0000003"]

    report = table.vacuum(retentionSeconds=0)  # its heartbeat is recent: it may be alive
    assert report["expiredTransactions"] == [] and Metastore(url).txn_state(compactor) == "open"
    assert all((root / name).exists() for name in outputs)

    later = Metastore(url, clock=lambda: time.time() + 3600)  # an hour without a heartbeat
    report = vacuum(str(root), metastore=later, retentionSeconds=0)
    assert report["expiredTransactions"] == [compactor]
    assert Metastore(url).txn_state(compactor) == "aborted"
    assert sorted(Path(p).name for p in report["removedPaths"]) == outputs
    assert sorted(table.scan().toArrow().column("id").to_pylist()) == [1, 2, 3]
