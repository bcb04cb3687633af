"""The automatic initiator: Hive's thresholds judged on real tables (real ORC files, a real
SQLite store), per-table properties and environment overrides, the switches, dry runs, and
that it compacts exactly the data objects over a threshold, which then read the same.

Expected directory counts and byte sizes are computed here from the files on disk (os.scandir),
expected rows from the rows the test wrote."""

from __future__ import annotations

import json
import logging
import os

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from acid_source import AcidTable, create_table
from acid_source.errors import InvalidOptionError, MetastoreNotFoundError, TableNotRegisteredError
from acid_source.maintenance import initiator, thresholds
from acid_source.maintenance.auto_compact import maybe_compact_after_commit
from acid_source.maintenance.compactor import compact_table, run_in_process
from acid_source.maintenance.initiator import run_initiator
from acid_source.maintenance.thresholds import assess, compaction_needed, data_objects, table_settings
from acid_source.metastore import Metastore
from acid_source.resolve import resolve_table
from acid_source.storage import Storage
from acid_source.txn import Transaction

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])
PART_SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("p", pa.string())])
PCT = "compactorthreshold.hive.compactor.delta.pct.threshold"
NUM = "compactorthreshold.hive.compactor.delta.num.threshold"
ABORTED = "compactorthreshold.hive.compactor.abortedtxn.threshold"
ENV_VARS = ("ACIDORC_AUTO_COMPACT", "ACIDORC_AUTO_COMPACT_MAX_BYTES", "ACIDORC_COMPACTOR_DELTA_NUM_THRESHOLD",
            "ACIDORC_COMPACTOR_DELTA_PCT_THRESHOLD", "ACIDORC_COMPACTOR_ABORTEDTXN_THRESHOLD",
            "ACIDORC_COMPACTOR_INITIATOR_FAILED_COMPACTS_THRESHOLD", "ACIDORC_COMPACTOR_CHECK_INTERVAL")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    # the writes that build a table must not trigger compactions themselves; tests of the
    # trigger switch it on (its default for users) right before they call it
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "false")


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path}/store.db"


def _table(path, url, *, schema=SCHEMA, properties=None, partition_columns=(), insert_only=False) -> str:
    """A registered, empty table; properties go through the store (create_table takes none)."""
    if properties is None:
        create_table(str(path), schema, metastoreUrl=url, partitionColumns=partition_columns,
                     insertOnly=insert_only)
    else:
        Metastore(url).create_table(str(path), schema, partition_columns=partition_columns, insert_only=insert_only,
                                    properties=properties)
        os.makedirs(path, exist_ok=True)
    return str(path)


def _rows(ids, s="x", **extra):
    cols = {"id": pa.array(list(ids), pa.int64()), "s": [s] * len(ids)}
    cols.update({k: [v] * len(ids) for k, v in extra.items()})
    return pa.table(cols)


def _appends(t: AcidTable, n: int, start: int = 0, **extra) -> list[int]:
    """``n`` one-row commits; returns the ids written."""
    for i in range(start, start + n):
        t.append(_rows([i], **extra))
    return list(range(start, start + n))


def _acid_dirs(directory) -> list[str]:
    return sorted(e.name for e in os.scandir(directory) if e.is_dir() and e.name.startswith(("base_", "delta_",
                                                                                            "delete_delta_")))


def _dir_bytes(directory) -> int:
    """Hive's sumDirSize, computed independently: direct files not starting with _ or ."""
    return sum(e.stat().st_size for e in os.scandir(directory) if e.is_file() and not e.name.startswith(("_", ".")))


def _decide(path, url):
    table = resolve_table(path, metastore_url=url)
    settings = table_settings(table.info.properties)
    decisions = {}
    for obj in data_objects(table):
        decisions[obj.partition] = assess(table, obj, thresholds.aborted_count(obj), settings)
        assert compaction_needed(table, obj, thresholds.aborted_count(obj), settings) == decisions[obj.partition].kind
    return decisions


def _ids(path, url) -> list[int]:
    return sorted(AcidTable.load(path, metastoreUrl=url).toArrow().column("id").to_pylist())


# --- the count rule -------------------------------------------------------------------------
def test_more_than_ten_deltas_without_a_base_need_a_major_compaction(tmp_path, url):
    path = _table(tmp_path / "t", url)
    t = AcidTable.load(path, metastoreUrl=url)
    _appends(t, 10)
    d = _decide(path, url)[""]
    assert (d.kind, d.deltas) == (None, 10)
    _appends(t, 1, start=10)
    d = _decide(path, url)[""]
    assert len(_acid_dirs(path)) == 11
    assert (d.kind, d.deltas, d.base_bytes) == ("major", 11, 0)
    assert d.delta_bytes == sum(_dir_bytes(os.path.join(path, n)) for n in _acid_dirs(path))
    assert "no base" in d.reason


def test_delete_deltas_count_and_a_base_makes_it_minor(tmp_path, url):
    path = _table(tmp_path / "t", url, properties={PCT: "1000"})  # the size rule out of the way
    t = AcidTable.load(path, metastoreUrl=url)
    t.overwrite(_rows(range(100)))
    _appends(t, 6, start=100)
    for i in range(4):
        AcidTable.load(path, metastoreUrl=url).delete(f"id = {i}")
    names = _acid_dirs(path)
    assert sum(n.startswith("delete_delta_") for n in names) == 4 and len(names) == 11  # base + 10
    assert _decide(path, url)[""].kind is None
    AcidTable.load(path, metastoreUrl=url).delete("id = 4")
    d = _decide(path, url)[""]
    assert (d.kind, d.deltas) == ("minor", 11)
    base = next(n for n in _acid_dirs(path) if n.startswith("base_"))
    assert d.base_bytes == _dir_bytes(os.path.join(path, base)) > 0
    assert d.delta_bytes == sum(_dir_bytes(os.path.join(path, n)) for n in _acid_dirs(path) if n != base)


def test_insert_only_tables_get_a_major_compaction_when_the_count_fires(tmp_path, url):
    path = _table(tmp_path / "t", url, properties={PCT: "1000"}, insert_only=True)
    t = AcidTable.load(path, metastoreUrl=url)
    t.overwrite(_rows(range(100)))
    _appends(t, 11, start=100)
    d = _decide(path, url)[""]
    assert (d.kind, d.deltas) == ("major", 11) and d.base_bytes > 0 and "insert-only" in d.reason


def test_original_files_count_as_base_bytes(tmp_path, url):
    path = _table(tmp_path / "t", url, properties={PCT: "1000"})
    original = os.path.join(path, "000000_0")
    orc.write_table(pa.table({"id": pa.array(range(1000), pa.int64()), "s": ["pre-acid"] * 1000}), original)
    _appends(AcidTable.load(path, metastoreUrl=url), 11)
    d = _decide(path, url)[""]
    assert (d.kind, d.base_bytes) == ("minor", os.path.getsize(original))  # a base: minor, not major


# --- the size rule --------------------------------------------------------------------------
def test_delta_to_base_size_ratio(tmp_path, url):
    path = _table(tmp_path / "t", url)
    t = AcidTable.load(path, metastoreUrl=url)
    t.overwrite(pa.table({"id": pa.array(range(20_000), pa.int64()), "s": [f"row {i}" for i in range(20_000)]}))
    t.append(_rows([1]))
    base = os.path.join(path, next(n for n in _acid_dirs(path) if n.startswith("base_")))
    deltas = [os.path.join(path, n) for n in _acid_dirs(path) if n.startswith("delta_")]
    d = _decide(path, url)[""]
    expected = sum(map(_dir_bytes, deltas)) / _dir_bytes(base)
    assert (d.base_bytes, d.delta_bytes) == (_dir_bytes(base), sum(map(_dir_bytes, deltas)))
    assert expected < 0.1 and d.kind is None
    t.append(pa.table({"id": pa.array(range(20_000, 30_000), pa.int64()), "s": [f"n {i}" for i in range(10_000)]}))
    deltas = [os.path.join(path, n) for n in _acid_dirs(path) if n.startswith("delta_")]
    expected = sum(map(_dir_bytes, deltas)) / _dir_bytes(base)
    d = _decide(path, url)[""]
    assert expected > 0.1 and d.kind == "major" and "delta bytes / base bytes" in d.reason


# --- aborted write ids and open transactions ----------------------------------------------------
def _orphan(path, url) -> int:
    """Files of a write whose driver died before its commit; the store then aborts it."""
    staged = AcidTable.load(path, metastoreUrl=url).newWrite()
    writer = staged.writer(0)
    writer.write(pa.record_batch({"id": pa.array([-1], pa.int64()), "s": ["lost"]}))
    writer.close()
    Metastore(url).abort(staged.txnId, "the driver died")
    return staged.txnId


def test_aborted_write_ids_left_on_disk_trigger_a_major_compaction(tmp_path, url):
    path = _table(tmp_path / "t", url, properties={ABORTED: "2"})
    store = Metastore(url)
    info = store.get_table(path)
    t = AcidTable.load(path, metastoreUrl=url)
    t.append(_rows([1]))
    for _ in range(5):  # aborted cleanly: their files are gone, nothing for a compaction to drop
        with pytest.raises(RuntimeError):
            with Transaction.begin(store, heartbeat="none") as txn:
                txn.allocate_write_id(info.table_id, Storage(path))
                raise RuntimeError("the write failed")
    assert len(store.write_ids_of(info.table_id, "aborted")) == 5
    _orphan(path, url)
    _orphan(path, url)
    d = _decide(path, url)[""]
    assert (d.kind, d.aborted) == (None, 2)  # Hive: more than the threshold
    _orphan(path, url)
    d = _decide(path, url)[""]
    assert (d.kind, d.aborted) == ("major", 3)
    assert run_initiator(path, metastoreUrl=url)[0]["status"] == "compacted"
    assert _decide(path, url)[""].aborted == 0  # still on disk, but below the new base
    assert _ids(path, url) == [1]


def test_a_compaction_the_compactor_finds_nothing_for_is_not_reported_as_done(tmp_path, url):
    path = _table(tmp_path / "t", url, properties={ABORTED: "2"})
    AcidTable.load(path, metastoreUrl=url).overwrite(_rows([1]))
    for _ in range(3):
        _orphan(path, url)  # a base, and nothing but aborted directories above it
    [entry] = run_initiator(path, metastoreUrl=url)
    assert entry["kind"] == "major" and entry["abortedWriteIds"] == 3
    did_nothing = "" in entry["metrics"]["skipped"]
    assert entry["status"] == ("skipped" if did_nothing else "compacted")
    assert any("_v" in n for n in _acid_dirs(path)) != did_nothing
    assert _ids(path, url) == [1]


def test_aborted_directories_inside_a_minor_compaction_no_longer_count(tmp_path, url):
    path = _table(tmp_path / "t", url)
    t = AcidTable.load(path, metastoreUrl=url)
    t.append(_rows([1]))
    _orphan(path, url)
    t.append(_rows([3]))
    _orphan(path, url)
    t.append(_rows([5]))
    assert _decide(path, url)[""].aborted == 2
    compact_table(path, "minor", metastoreUrl=url)
    assert [n.split("_v")[0] for n in _acid_dirs(path) if "_v" in n] == ["delta_0000001_0000005"]
    assert len(_acid_dirs(path)) == 6  # the aborted directories are still there, until the cleaner runs
    assert _decide(path, url)[""].aborted == 0
    assert _ids(path, url) == [1, 3, 5]


def test_deltas_at_or_above_the_lowest_open_write_id_do_not_count(tmp_path, url):
    path = _table(tmp_path / "t", url)
    t = AcidTable.load(path, metastoreUrl=url)
    _appends(t, 5)
    store = Metastore(url)
    txn = Transaction.begin(store, heartbeat="none")
    txn.allocate_write_id(store.get_table(path).table_id, Storage(path))  # write id 6 stays open
    _appends(t, 6, start=5)
    d = _decide(path, url)[""]
    assert (d.kind, d.deltas) == (None, 5)
    txn.abort("done")
    d = _decide(path, url)[""]
    assert (d.kind, d.deltas) == ("major", 11)


# --- settings ---------------------------------------------------------------------------------
def test_settings_table_property_over_environment_over_hive_default():
    assert table_settings({}, env={}) == thresholds.CompactorSettings(10, 0.1, 1000, 2, 300.0)
    env = {"ACIDORC_COMPACTOR_DELTA_NUM_THRESHOLD": "4", "ACIDORC_COMPACTOR_DELTA_PCT_THRESHOLD": "0.5",
           "ACIDORC_COMPACTOR_ABORTEDTXN_THRESHOLD": "7",
           "ACIDORC_COMPACTOR_INITIATOR_FAILED_COMPACTS_THRESHOLD": "3", "ACIDORC_COMPACTOR_CHECK_INTERVAL": "5m"}
    assert table_settings({}, env=env) == thresholds.CompactorSettings(4, 0.5, 7, 3, 300.0)
    props = {NUM: "20", "COMPACTORTHRESHOLD.hive.compactor.delta.pct.threshold": "0.25"}
    assert table_settings(props, env=env) == thresholds.CompactorSettings(20, 0.25, 7, 3, 300.0)
    assert table_settings({}, env={"ACIDORC_COMPACTOR_CHECK_INTERVAL": "500ms"}).check_interval == 0.5
    with pytest.raises(InvalidOptionError, match=NUM):
        table_settings({NUM: "ten"}, env={})
    with pytest.raises(InvalidOptionError, match=NUM):
        table_settings({NUM: "-1"}, env={})
    with pytest.raises(InvalidOptionError, match="ACIDORC_COMPACTOR_DELTA_PCT_THRESHOLD"):
        table_settings({}, env={"ACIDORC_COMPACTOR_DELTA_PCT_THRESHOLD": "nan"})
    with pytest.raises(InvalidOptionError, match="ACIDORC_AUTO_COMPACT"):
        thresholds.after_commit_enabled({"ACIDORC_AUTO_COMPACT": "maybe"})
    assert thresholds.auto_compaction_disabled({"NO_AUTO_COMPACTION": "TRUE"})
    assert not thresholds.auto_compaction_disabled({"no_auto_compaction": "false"})


def test_environment_threshold_applies_to_real_tables(tmp_path, url, monkeypatch):
    path = _table(tmp_path / "t", url)
    _appends(AcidTable.load(path, metastoreUrl=url), 4)
    assert run_initiator(path, metastoreUrl=url, dryRun=True) == []
    monkeypatch.setenv("ACIDORC_COMPACTOR_DELTA_NUM_THRESHOLD", "3")
    [entry] = run_initiator(path, metastoreUrl=url, dryRun=True)
    assert (entry["kind"], entry["status"], entry["deltas"]) == ("major", "dry_run", 4)
    monkeypatch.setenv("ACIDORC_COMPACTOR_DELTA_NUM_THRESHOLD", "three")
    with pytest.raises(InvalidOptionError, match="ACIDORC_COMPACTOR_DELTA_NUM_THRESHOLD"):
        run_initiator(path, metastoreUrl=url)


def test_a_bad_table_property_is_reported_and_other_tables_still_compacted(tmp_path, url):
    bad = _table(tmp_path / "bad", url, properties={NUM: "many"})
    good = _table(tmp_path / "good", url, properties={NUM: "2"})
    for path in (bad, good):
        _appends(AcidTable.load(path, metastoreUrl=url), 3)
    by_location = {e["location"]: e for e in run_initiator(metastoreUrl=url)}
    assert by_location[bad]["status"] == "error" and NUM in by_location[bad]["error"]
    assert by_location[good]["status"] == "compacted"


# --- switches, dry run ------------------------------------------------------------------------
def test_no_auto_compaction_keeps_the_initiator_away(tmp_path, url, monkeypatch):
    path = _table(tmp_path / "t", url, properties={"no_auto_compaction": "true", NUM: "1"})
    _appends(AcidTable.load(path, metastoreUrl=url), 3)
    before = _acid_dirs(path)
    [entry] = run_initiator(path, metastoreUrl=url)
    assert entry["status"] == "disabled" and "no_auto_compaction" in entry["reason"]
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "true")  # on for this call (off while building the table)
    assert maybe_compact_after_commit(path, url, [""]) == []
    assert _acid_dirs(path) == before


def test_dry_run_reports_and_changes_nothing(tmp_path, url):
    path = _table(tmp_path / "t", url)
    _appends(AcidTable.load(path, metastoreUrl=url), 11)
    before, history = _acid_dirs(path), Metastore(url).history(Metastore(url).get_table(path).table_id)
    [entry] = run_initiator(path, metastoreUrl=url, dryRun=True)
    assert (entry["status"], entry["kind"], entry["partition"]) == ("dry_run", "major", "")
    assert _acid_dirs(path) == before
    assert Metastore(url).history(Metastore(url).get_table(path).table_id) == history


def test_the_environment_switch_turns_the_after_commit_trigger_off(tmp_path, url, monkeypatch):
    path = _table(tmp_path / "t", url)
    _appends(AcidTable.load(path, metastoreUrl=url), 11)
    before = _acid_dirs(path)
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "false")
    assert maybe_compact_after_commit(path, url, [""]) == []
    assert _acid_dirs(path) == before
    [entry] = run_initiator(path, metastoreUrl=url)  # an explicit pass still runs
    assert entry["status"] == "compacted"


# --- naming data objects: typed paths, not SQL built from values ------------------------------
def test_compaction_of_named_partitions_selects_exactly_them(tmp_path, url):
    """The initiator names the data objects it compacts by their paths (as on storage), so
    values that would need quoting in SQL select exactly their partition."""
    path = _table(tmp_path / "t", url, schema=PART_SCHEMA, partition_columns=["p"])
    t = AcidTable.load(path, metastoreUrl=url)
    values = ["it's", "a\\b", "a\\'b", "' OR 1=1 --", "ü€", "x y", None]
    for i, value in enumerate(values):
        t.append(pa.table({"id": pa.array([i], pa.int64()), "s": ["x"], "p": pa.array([value], pa.string())}))
    rels = sorted(e.name for e in os.scandir(path) if e.is_dir() and e.name.startswith("p="))
    assert len(rels) == len(values)
    for rel in rels:
        metrics = compact_table(path, "major", partitions=[rel], metastoreUrl=url)
        assert metrics["partitions"] == [rel]
    assert sorted(r["id"] for r in t.toArrow().to_pylist()) == list(range(len(values)))


def test_named_partitions_match_by_value(tmp_path, url):
    """``p=01`` names the partition of the int 1, wherever it is spelled ``p=1`` (as the
    completeness check matches data objects)."""
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("p", pa.int32())])
    path = _table(tmp_path / "t", url, schema=schema, partition_columns=["p"])
    t = AcidTable.load(path, metastoreUrl=url)
    for p in (1, 1, 2, 2):
        t.append(pa.table({"id": pa.array([p], pa.int64()), "s": ["x"], "p": pa.array([p], pa.int32())}))
    metrics = compact_table(path, "minor", partitions=["p=01"], metastoreUrl=url)
    assert metrics["partitions"] == ["p=1"]
    assert compact_table(path, "minor", partitions=[], metastoreUrl=url)["partitions"] == []


# --- compacting: exactly the objects over a threshold ---------------------------------------------
def test_run_initiator_compacts_exactly_the_objects_over_threshold(tmp_path, url):
    path = _table(tmp_path / "t", url, schema=PART_SCHEMA, partition_columns=["p"], properties={PCT: "1000"})
    t = AcidTable.load(path, metastoreUrl=url)
    expected = _appends(t, 11, p="a")  # no base, 11 deltas: major
    t.overwrite(_rows(range(100, 150)), partition={"p": "b's"})  # a base and 11 deltas: minor
    expected += list(range(100, 150)) + _appends(t, 11, start=200, p="b's")
    expected += _appends(t, 3, start=300, p="c")  # under every threshold
    AcidTable.load(path, metastoreUrl=url).delete("id = 300")
    expected.remove(300)
    dirs = {p: _acid_dirs(os.path.join(path, p)) for p in ("p=a", "p=b%27s", "p=c")}
    entries = run_initiator(path, metastoreUrl=url)
    assert sorted((e["partition"], e["kind"], e["status"]) for e in entries) == [
        ("p=a", "major", "compacted"), ("p=b%27s", "minor", "compacted")]
    new = {p: sorted(set(_acid_dirs(os.path.join(path, p))) - set(before)) for p, before in dirs.items()}
    assert [n.split("_v")[0] for n in new["p=a"]] == ["base_0000027"]  # N: the table's write id bound
    assert [n.split("_v")[0] for n in new["p=b%27s"]] == ["delta_0000013_0000023"]
    assert new["p=c"] == []
    assert _ids(path, url) == sorted(expected)
    assert run_initiator(path, metastoreUrl=url) == []  # nothing left over a threshold


def test_failed_compactions_stop_after_the_threshold(tmp_path, url):
    path = _table(tmp_path / "t", url, properties={NUM: "2"})
    _appends(AcidTable.load(path, metastoreUrl=url), 3)

    def broken(tasks):
        raise OSError("disk full")

    for _ in range(2):
        [entry] = run_initiator(path, metastoreUrl=url, runTasks=broken)
        assert entry["status"] == "failed" and "disk full" in entry["error"]
    [entry] = run_initiator(path, metastoreUrl=url, runTasks=broken)
    assert entry["status"] == "skipped" and "last 2 compactions failed" in entry["reason"]
    assert not [n for n in _acid_dirs(path) if "_v" in n]  # aborted outputs were removed
    assert _ids(path, url) == [0, 1, 2]


def test_a_concurrent_overwrite_wins_and_is_no_failure(tmp_path, url):
    path = _table(tmp_path / "t", url, properties={NUM: "2"})
    t = AcidTable.load(path, metastoreUrl=url)
    _appends(t, 3)

    def overwrite_meanwhile(tasks):
        t.overwrite(_rows([42]))  # commits while the compaction runs
        return run_in_process(tasks)

    for _ in range(3):  # never counted as a failure, so never skipped
        [entry] = run_initiator(path, metastoreUrl=url, runTasks=overwrite_meanwhile)
        assert entry["status"] == "conflict"
        _appends(t, 3)
    assert _ids(path, url) == [0, 1, 2, 42]


def test_a_running_compaction_is_left_alone(tmp_path, url):
    path = _table(tmp_path / "t", url)
    _appends(AcidTable.load(path, metastoreUrl=url), 11)
    store = Metastore(url)
    running = store.open_transaction(description="a compaction elsewhere")
    os.makedirs(os.path.join(path, f"base_0000011_v{running:07d}"))  # what it writes first
    [entry] = run_initiator(path, metastoreUrl=url)
    assert entry["status"] == "skipped" and f"transaction {running}" in entry["reason"]
    store.abort(running, "it failed")
    [entry] = run_initiator(path, metastoreUrl=url)
    assert entry["status"] == "compacted"


# --- after commits ------------------------------------------------------------------------------
def test_after_commit_compacts_only_touched_objects_over_threshold(tmp_path, url, monkeypatch):
    path = _table(tmp_path / "t", url, schema=PART_SCHEMA, partition_columns=["p"])
    t = AcidTable.load(path, metastoreUrl=url)
    expected = _appends(t, 11, p="a") + _appends(t, 11, start=100, p="b")  # both over the threshold
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "true")  # on for this call (off while building the table)
    assert maybe_compact_after_commit(path, url, ["p=zz", "not-a-partition", "p=a/q=1", ""]) == []
    [entry] = maybe_compact_after_commit(path, Metastore(url), ["p=a"])  # the commit touched p=a only
    assert (entry["partition"], entry["status"]) == ("p=a", "compacted")
    assert [n for n in _acid_dirs(os.path.join(path, "p=a")) if n.startswith("base_")]
    assert not [n for n in _acid_dirs(os.path.join(path, "p=b")) if n.startswith("base_")]
    _appends(t, 11, start=200, p="a")  # over again at once: checked again only after the interval
    assert maybe_compact_after_commit(path, url, ["p=a"]) == []
    monkeypatch.setenv("ACIDORC_COMPACTOR_CHECK_INTERVAL", "0")
    [entry] = maybe_compact_after_commit(path, url, ["p=a"])
    assert entry["status"] == "compacted"
    assert _ids(path, url) == sorted(expected + list(range(200, 211)))


def test_after_commit_leaves_big_in_process_compactions_to_an_explicit_pass(tmp_path, url, monkeypatch, caplog):
    path = _table(tmp_path / "t", url)
    _appends(AcidTable.load(path, metastoreUrl=url), 11)
    total = sum(_dir_bytes(os.path.join(path, n)) for n in _acid_dirs(path))  # what a major compaction reads
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT_MAX_BYTES", str(total - 1))
    caplog.set_level(logging.INFO, logger="acidorc.initiator")
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "true")  # on for this call (off while building the table)
    [entry] = maybe_compact_after_commit(path, url, [""])
    assert entry["status"] == "skipped" and f"would read {total} bytes" in entry["reason"]
    assert "ACIDORC_AUTO_COMPACT_MAX_BYTES" in caplog.text
    assert not [n for n in _acid_dirs(path) if n.startswith("base_")]
    [entry] = maybe_compact_after_commit(path, url, [""], run_tasks=run_in_process)  # a runner: no bound
    assert entry["status"] == "compacted"
    _appends(AcidTable.load(path, metastoreUrl=url), 11, start=11)
    [entry] = run_initiator(path, metastoreUrl=url)  # nor for an explicit pass
    assert entry["status"] == "compacted"
    assert _ids(path, url) == list(range(22))


def test_after_commit_under_the_thresholds_does_nothing(tmp_path, url, monkeypatch):
    path = _table(tmp_path / "t", url)
    _appends(AcidTable.load(path, metastoreUrl=url), 10)
    before = _acid_dirs(path)
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "true")  # on for this call (off while building the table)
    assert maybe_compact_after_commit(path, url, [""]) == []
    assert _acid_dirs(path) == before


def test_after_commit_never_raises(tmp_path, url, caplog, monkeypatch):
    path = _table(tmp_path / "t", url)
    _appends(AcidTable.load(path, metastoreUrl=url), 11)
    caplog.set_level(logging.INFO, logger="acidorc.initiator")
    missing = f"sqlite:///{tmp_path}/no-such-store.db"
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "true")  # on for this call (off while building the table)
    assert maybe_compact_after_commit(path, missing, [""]) == []
    assert "failed" in caplog.text and "no-such-store" in caplog.text
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "sometimes")
    assert maybe_compact_after_commit(path, url, [""]) == []
    assert "ACIDORC_AUTO_COMPACT" in caplog.text
    monkeypatch.delenv("ACIDORC_AUTO_COMPACT")

    def broken(tasks):
        raise RuntimeError("executor lost")

    [entry] = maybe_compact_after_commit(path, url, [""], run_tasks=broken)
    assert entry["status"] == "failed" and "executor lost" in caplog.text
    assert _ids(path, url) == list(range(11))


def test_unknown_tables_and_stores(tmp_path, url, monkeypatch):
    missing = f"sqlite:///{tmp_path}/no-such-store.db"
    with pytest.raises(MetastoreNotFoundError):
        run_initiator(metastoreUrl=missing)
    path = _table(tmp_path / "t", url)
    _appends(AcidTable.load(path, metastoreUrl=url), 2)
    with pytest.raises(TableNotRegisteredError):
        run_initiator(str(tmp_path / "nowhere"), metastoreUrl=url)
    with pytest.raises(TableNotRegisteredError):
        run_initiator("db.nothing", metastoreUrl=url)
    assert run_initiator(metastoreUrl=url) == []
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "true")  # on for this call (off while building the table)
    assert maybe_compact_after_commit(str(tmp_path / "nowhere"), url, [""]) == []


def test_command_line_dry_run(tmp_path, url, capsys):
    path = _table(tmp_path / "t", url, properties={NUM: "1"})
    _appends(AcidTable.load(path, metastoreUrl=url), 2)
    assert initiator.main([path, "--dry-run", "--metastore-url", url]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line)["status"] == "dry_run"
