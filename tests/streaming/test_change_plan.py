"""The change feed's planner: explicit sets of write ids (what the streaming source asks for),
ranges of versions and times, which write ids deleted rows, and the history compaction and the
cleaner removed (a HistoryUnavailableError, never fewer changes)."""

from __future__ import annotations

import datetime as dt
import pickle

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.errors import (
    HistoryUnavailableError,
    InvalidArgumentError,
    TableNotRegisteredError,
    UnsupportedOperationError,
    VersionNotFoundError,
)
from acid_source.streaming.change_plan import plan_change_range, plan_changes
from acid_source.streaming.change_reader import read_change_split
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])


@pytest.fixture
def table(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    create_table(str(tmp_path / "t"), SCHEMA, partitionColumns=["p"], bucketColumns=["id"], numBuckets=2,
                 metastoreUrl=url)
    return AcidTable.load(str(tmp_path / "t"), metastoreUrl=url), url


def rows(ids, p="x"):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids], "p": [p] * len(ids)})


def changes(plan) -> list[tuple]:
    """(version, change, id, v, p) of every change row, sorted."""
    batches = [b for s in plan.splits for b in read_change_split(pickle.loads(pickle.dumps(s)),
                                                                 pickle.loads(pickle.dumps(plan.context)))]
    t = pa.Table.from_batches(batches, schema=plan.schema)
    return sorted(zip(t.column("_commit_version").to_pylist(), t.column("_change_type").to_pylist(),
                      t.column("id").to_pylist(), t.column("v").to_pylist(), t.column("p").to_pylist()))


def test_an_explicit_set_of_write_ids_need_not_be_contiguous(table):
    t, url = table
    t.append(rows([1, 2]))                        # 1
    t.append(rows([3], "y"))                      # 2
    t.update("id = 1", {"v": "'new'", "p": "'y'"})  # 3: moves the row to another partition
    t.delete("id = 3")                            # 4
    plan = plan_changes(t.location, [4, 1], metastore_url=url)
    assert plan.write_ids == (1, 4) and plan.dml_write_ids == (4,) and plan.has_deletes
    assert changes(plan) == [(1, "insert", 1, "v1", "x"), (1, "insert", 2, "v2", "x"), (4, "delete", 3, "v3", "y")]
    update = plan_changes(t.location, {3}, metastore_url=url)
    assert update.dml_write_ids == (3,)
    assert changes(update) == [(3, "delete", 1, "v1", "x"), (3, "insert", 1, "new", "y")]
    appends = plan_changes(t.location, [2], metastore_url=url)
    assert appends.dml_write_ids == () and not appends.has_deletes
    assert plan.schema.names == ["id", "v", "p", "_change_type", "_commit_version", "_commit_timestamp"]


def test_open_and_aborted_write_ids_never_appear(table):
    t, url = table
    t.append(rows([1]))                                               # 1

    def failing():
        yield rows([2]).to_batches()[0]
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        t.append(failing())                                           # 2: aborted
    with t.newWrite() as staged:                                      # 3: stays open
        writer = staged.writer(0)
        writer.write(rows([3]).to_batches()[0])
        result = writer.close()
        t.append(rows([4]))                                           # 4
        plan = plan_changes(t.location, [1, 2, 3, 4], metastore_url=url)
        assert plan.write_ids == (1, 4)
        assert [c[2] for c in changes(plan)] == [1, 4]
        assert [c[2] for c in changes(plan_change_range(t.location, starting_version=1, metastore_url=url))] == [1, 4]
        staged.commit([result])
    assert [c[:3] for c in changes(plan_changes(t.location, [3], metastore_url=url))] == [(3, "insert", 3)]


def test_compacted_deltas_serve_until_a_major_compaction_is_cleaned(table):
    t, url = table
    t.append(rows([1, 2, 3]))          # 1
    t.delete("id = 2")                 # 2
    t.update("id = 3", {"v": "'w'"})   # 3
    expected = changes(plan_changes(t.location, [1, 2, 3], metastore_url=url))
    t.compact("minor")
    assert changes(plan_changes(t.location, [1, 2, 3], metastore_url=url)) == expected
    t.vacuum(retentionSeconds=0)       # the minor compaction's outputs hold every event
    assert changes(plan_changes(t.location, [1, 2, 3], metastore_url=url)) == expected
    t.compact("major")                 # compacted, not cleaned: the deltas are still there
    assert changes(plan_changes(t.location, [1, 2, 3], metastore_url=url)) == expected
    t.vacuum(retentionSeconds=0)
    t.append(rows([4]))                # 5 (4 was the compaction's transaction, no write id)
    t.delete("id = 3")                 # 6: deletes a row the base holds
    with pytest.raises(HistoryUnavailableError) as caught:
        plan_change_range(t.location, starting_version=2, ending_version=5, metastore_url=url)
    assert caught.value.write_id == 2 and caught.value.location == t.location
    assert caught.value.options == "startingVersion=2, endingVersion=5" and caught.value.partition == "p=x"
    assert "base_0000003" in str(caught.value)
    later = [w for w in plan_change_range(t.location, starting_version=4, metastore_url=url).write_ids]
    assert changes(plan_changes(t.location, later, metastore_url=url)) == [
        (later[0], "insert", 4, "v4", "x"), (later[1], "delete", 3, "w", "x")]


def test_ranges_of_versions_and_times(table):
    t, url = table
    for i in range(1, 4):
        t.append(rows([i]))
    history = {h["version"]: h["timestamp"] for h in t.history()}
    assert t.changes(startingVersion=2).writeIds == [2, 3]
    assert t.changes(startingVersion=1, endingVersion=2).writeIds == [1, 2]
    assert t.changes(startingVersion=0, endingVersion=99).writeIds == [1, 2, 3]
    assert t.changes(startingTimestamp=history[2]).writeIds == [2, 3]
    assert t.changes(startingTimestamp=history[1], endingTimestamp=history[2]).writeIds == [1, 2]
    assert t.changes(startingTimestamp=history[2].isoformat(), endingVersion=2).writeIds == [2]
    assert t.changes(startingTimestamp=history[3] + dt.timedelta(seconds=5)).writeIds == []
    got = t.changes(startingVersion=3).toArrow()
    assert got.column("_commit_timestamp").to_pylist() == [history[3]]
    assert got.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize("kwargs, argument", [
    ({}, "startingVersion"),
    ({"endingVersion": 2}, "startingVersion"),
    ({"startingVersion": 3, "endingVersion": 2}, "endingVersion"),
    ({"startingVersion": "x"}, "startingVersion"),
    ({"startingVersion": 1.5}, "startingVersion"),
    ({"startingVersion": True}, "startingVersion"),
    ({"startingVersion": -1}, "startingVersion"),
    ({"startingVersion": 1, "startingTimestamp": 0}, "startingTimestamp"),
    ({"startingVersion": 1, "endingVersion": 2, "endingTimestamp": 0}, "endingTimestamp"),
    ({"startingTimestamp": "2026-11-27T10:00:00", "endingTimestamp": "2026-11-27T09:00:00"}, "endingTimestamp"),
    ({"startingTimestamp": "yesterday"}, "startingTimestamp"),
])
def test_bad_arguments_are_typed_errors_naming_them(table, kwargs, argument):
    t, _ = table
    t.append(rows([1]))
    with pytest.raises(InvalidArgumentError) as caught:
        t.changes(**kwargs)
    assert caught.value.argument == argument


def test_a_start_after_the_latest_version_is_version_not_found(table):
    t, _ = table
    t.append(rows([1]))
    with pytest.raises(VersionNotFoundError, match="latest version 1"):
        t.changes(startingVersion=2)


def test_overwrites_and_unregistered_tables_are_refused(table, tmp_path):
    t, url = table
    t.append(rows([1]))
    t.overwrite(rows([2]))
    with pytest.raises(UnsupportedOperationError, match="write id 2 .* overwrote"):
        t.changes(startingVersion=1)
    t.append(rows([3]))
    assert [c[2] for c in changes(plan_change_range(t.location, starting_version=3, metastore_url=url))] == [3]
    with pytest.raises(TableNotRegisteredError, match="commit history"):
        plan_changes(str(tmp_path / "nowhere"), [1], metastore_url=url)
    with pytest.raises(InvalidArgumentError):
        plan_changes(t.location, [True], metastore_url=url)


def test_a_cleaner_half_way_through_a_bases_obsolete_directories_is_removed_history(table, tmp_path):
    """The cleaner removes a base's obsolete directories one at a time, by name: older bases,
    delete deltas, deltas. A write id that still has one of its directories may have lost the
    other, so once the cleaner has visibly started (a directory renamed aside, an older base
    gone), everything up to that base counts as removed."""
    t, url = table
    root = tmp_path / "t" / "p=x"
    t.append(rows([1, 2]))             # 1
    t.compact("major")
    t.vacuum(retentionSeconds=0)       # base_1 alone
    t.append(rows([3]))                # 2 (a compaction takes no write id)
    t.update("id = 3", {"v": "'w'"})   # 3: a delete delta and a delta
    expected = changes(plan_changes(t.location, [2, 3], metastore_url=url))
    assert [c[:2] for c in expected] == [(2, "insert"), (3, "delete"), (3, "insert")]
    t.compact("major")                 # base_3: 2 and 3 obsolete, not removed
    assert changes(plan_changes(t.location, [2, 3], metastore_url=url)) == expected
    old_base = next(root.glob("base_0000001*"))
    hidden = root / f".acidorc-vacuum-0123456789ab-{old_base.name}"
    old_base.rename(hidden)            # the cleaner's first step: renamed aside, then removed
    with pytest.raises(HistoryUnavailableError) as caught:
        plan_changes(t.location, [3], metastore_url=url)
    assert caught.value.write_id == 3 and "base_0000003" in str(caught.value)
    import shutil

    shutil.rmtree(hidden)              # the old base gone: write id 1 has lost every directory
    with pytest.raises(HistoryUnavailableError) as caught:
        plan_changes(t.location, [2, 3], metastore_url=url)
    assert caught.value.write_id == 2


def test_an_insert_only_tables_appends_until_compaction_and_the_cleaner_fold_them(tmp_path):
    """Rows of an insert-only table carry no write id: each append's own delta says whose they
    are; once a compaction's output (which mixes write ids) is all that is left, they are gone."""
    url = f"sqlite:///{tmp_path}/store.db"
    create_table(str(tmp_path / "io"), SCHEMA, partitionColumns=["p"], insertOnly=True, metastoreUrl=url)
    t = AcidTable.load(str(tmp_path / "io"), metastoreUrl=url)
    t.append(rows([1, 2]))      # 1
    t.append(rows([3], "y"))    # 2
    t.append(rows([5]))         # 3
    expected = [(1, "insert", 1, "v1", "x"), (1, "insert", 2, "v2", "x"), (2, "insert", 3, "v3", "y"),
                (3, "insert", 5, "v5", "x")]
    assert changes(plan_change_range(t.location, starting_version=1, metastore_url=url)) == expected
    t.compact("minor")          # p=x: delta_1_3_v..., its inputs still there
    assert changes(plan_change_range(t.location, starting_version=1, metastore_url=url)) == expected
    t.append(rows([4]))         # 4
    t.vacuum(retentionSeconds=0)
    assert changes(plan_changes(t.location, [2, 4], metastore_url=url)) == [
        (2, "insert", 3, "v3", "y"), (4, "insert", 4, "v4", "x")]
    with pytest.raises(HistoryUnavailableError, match="delta_0000001_0000003_v") as caught:
        plan_changes(t.location, [3], metastore_url=url)
    assert caught.value.write_id == 3 and caught.value.partition == "p=x"
    t.compact("major")
    t.vacuum(retentionSeconds=0)
    with pytest.raises(HistoryUnavailableError) as caught:
        plan_changes(t.location, [4], metastore_url=url)
    assert caught.value.write_id == 4


def test_adopted_history_has_no_changes_to_show(tmp_path):
    """A table whose history was adopted from storage (create_table(adopt=True)) records one
    entry for all of it: the feed starts after it."""
    from acid_source import drop_table

    url = f"sqlite:///{tmp_path}/store.db"
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, partitionColumns=["p"], metastoreUrl=url)
    AcidTable.load(path, metastoreUrl=url).append(rows([1]))
    AcidTable.load(path, metastoreUrl=url).append(rows([2]))
    drop_table(path, metastoreUrl=url)
    create_table(path, SCHEMA, partitionColumns=["p"], metastoreUrl=url, adopt=True)
    t = AcidTable.load(path, metastoreUrl=url)
    t.append(rows([3]))
    with pytest.raises(UnsupportedOperationError, match="adopted .* startingVersion=3"):
        t.changes(startingVersion=1)
    assert [c[:3] for c in changes(plan_change_range(path, starting_version=3, metastore_url=url))] == [
        (3, "insert", 3)]


_CLEANER = """
import sys
from acid_source.maintenance.cleaner import vacuum
vacuum(sys.argv[1], metastoreUrl=sys.argv[2], retentionSeconds=0)
"""


def test_a_cleaner_killed_after_an_updates_delete_delta_leaves_no_history_to_misread(table, tmp_path):
    """The cleaner removes by name, so an UPDATE's delete delta goes before its delta. A cleaner
    killed between them (a real process, held after its first removal) left a write id that
    looks held by its delta alone - its update would read as an insert. Its cleaning marker
    says otherwise until a later cleaner has removed the rest."""
    import os
    import signal
    import subprocess
    import sys

    from acid_source.faults import PauseGate

    t, url = table
    root = tmp_path / "t" / "p=x"
    t.append(rows([3]))                # 1
    t.update("id = 3", {"v": "'w'"})   # 2: delete_delta_2 and delta_2
    assert [c[:2] for c in changes(plan_changes(t.location, [2], metastore_url=url))] == [
        (2, "delete"), (2, "insert")]
    t.compact("major")                 # base_2: delta_1, delete_delta_2 and delta_2 obsolete
    with PauseGate(tmp_path / "gate", "vacuum.after_removal") as gate:
        cleaner = subprocess.Popen([sys.executable, "-c", _CLEANER, t.location, url], env={**os.environ, **gate.env()})
        try:
            gate.wait_reached()
            os.kill(cleaner.pid, signal.SIGKILL)
        finally:
            cleaner.wait(timeout=60)
    left = sorted(p.name for p in root.iterdir())
    assert not any(n.startswith("delete_delta") for n in left) and "delta_0000002_0000002_0000" in left, left
    with pytest.raises(HistoryUnavailableError) as caught:
        plan_changes(t.location, [2], metastore_url=url)
    assert caught.value.write_id == 2
    assert sorted(r["v"] for r in t.toArrow().to_pylist()) == ["w"]  # readers never mind the marker
    t.vacuum(retentionSeconds=0)       # the rest goes, and the marker with it
    assert sorted(p.name for p in root.iterdir()) == [next(n for n in left if n.startswith("base_"))]
    with pytest.raises(HistoryUnavailableError):
        plan_changes(t.location, [2], metastore_url=url)
