"""The after-commit trigger wired into the write paths: an append or a DML whose commit takes
a data object over a threshold compacts it in the same call, reports it in the metrics, and
the table reads the same."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


@pytest.fixture(autouse=True)
def switched_on(tmp_path, monkeypatch):
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{tmp_path}/store.db")
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "true")
    monkeypatch.setenv("ACIDORC_COMPACTOR_DELTA_NUM_THRESHOLD", "3")
    monkeypatch.setenv("ACIDORC_COMPACTOR_CHECK_INTERVAL", "0")


def rows(ids, p):
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [p] * len(ids)})


def acid_dirs(path):
    return sorted(d for _, dirs, _ in os.walk(path) for d in dirs if d.startswith(("base_", "delta_", "delete_")))


def test_appends_over_the_threshold_compact_in_the_same_call(tmp_path):
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, partitionColumns=["p"])
    t = AcidTable.load(path)
    for i in range(3):
        assert "autoCompaction" not in t.append(rows([i], "a"))  # 1..3 deltas: not more than 3
    t.append(rows([9], "b"))  # another partition: p=a still has 3
    m = t.append(rows([3], "a"))  # 4 deltas in p=a, no base: major
    [entry] = m["autoCompaction"]
    assert entry["status"] == "compacted" and entry["kind"] == "major" and entry["partition"] == "p=a"
    assert any(d.startswith("base_0000005_v") for d in acid_dirs(os.path.join(path, "p=a")))
    assert sorted(t.toArrow().column("id").to_pylist()) == [0, 1, 2, 3, 9]


def test_a_dml_commit_triggers_too_and_the_switch_turns_it_off(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    create_table(path, SCHEMA)
    t = AcidTable.load(path)
    for i in range(3):
        t.append(rows([i, i + 10], ""))
    m = t.delete("id = 10")  # the fourth delta directory (a delete delta)
    assert m["autoCompaction"][0]["status"] == "compacted"
    assert sorted(t.toArrow().column("id").to_pylist()) == [0, 1, 2, 11, 12]
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "false")
    for i in range(5):
        assert "autoCompaction" not in t.append(rows([100 + i], ""))
