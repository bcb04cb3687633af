"""DELETE and UPDATE without Spark (AcidTable.load(...).delete / .update): results, the
split-update layout on disk, metrics, NULL rules and typed errors that leave the table as it was."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.errors import InvalidArgumentError, SchemaError, TableNotRegisteredError, UnsupportedOperationError
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int32()), ("p", pa.string())])


@pytest.fixture(autouse=True)
def private_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{tmp_path}/store.db")
    Metastore(f"sqlite:///{tmp_path}/store.db").list_tables()  # a named store must exist for reads


def listing(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def rows_of(table: AcidTable) -> list[tuple]:
    return sorted((r["id"], r["v"], r["n"], r["p"]) for r in table.toArrow().to_pylist())


@pytest.fixture
def table(tmp_path):
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, partitionColumns=["p"])
    t = AcidTable.load(path)
    t.append(pa.table({"id": pa.array(range(8), pa.int64()), "v": [f"v{i}" for i in range(8)],
                       "n": pa.array([0, 1, None, 3, 4, None, 6, 7], pa.int32()),
                       "p": ["a", "a", "a", "a", "b", "b", "b", None]}))
    return t


def test_delete_writes_delete_events_only_where_rows_matched(table):
    metrics = table.delete("n >= 3")
    assert rows_of(table) == [(0, "v0", 0, "a"), (1, "v1", 1, "a"), (2, "v2", None, "a"), (5, "v5", None, "b")]
    assert metrics["numDeletedRows"] == 4 and metrics["numUpdatedRows"] == 0 and metrics["numInsertedRows"] == 0
    assert metrics["partitions"] == ["p=__HIVE_DEFAULT_PARTITION__", "p=a", "p=b"]
    wid = metrics["writeId"]
    names = listing(table.location)
    deletes = [n for n in names if f"delete_delta_{wid:07d}_{wid:07d}" in n and "bucket_" in n]
    assert len(deletes) == 3  # one per partition holding a matched row
    assert not any(f"/delta_{wid:07d}" in "/" + n for n in names)  # a DELETE writes no insert events
    assert table.history(limit=1)[0]["operation"] == "delete"


def test_a_null_condition_matches_nothing(table):
    before = rows_of(table)
    metrics = table.delete("n <> 1 AND n IS NULL")  # NULL <> 1 is NULL: never true
    assert metrics["numDeletedRows"] == 0 and metrics["writeId"] is None
    assert rows_of(table) == before
    table.delete("NOT (n = 3)")  # NOT NULL is NULL: the NULL rows stay
    assert sorted(r[0] for r in rows_of(table)) == [2, 3, 5]


def test_no_match_commits_nothing_and_writes_nothing(table):
    files, version = listing(table.location), table.version
    metrics = table.update("id > 100", {"v": "'x'"})
    assert metrics["writeId"] is None and metrics["numAffectedRows"] == 0
    assert listing(table.location) == files
    assert table.version == version
    assert [h["operation"] for h in table.history()] == ["insert"]


def test_delete_without_condition_deletes_everything(table):
    assert table.delete()["numDeletedRows"] == 8
    assert table.toArrow().num_rows == 0


def test_update_evaluates_on_the_old_row_and_moves_partitions(table):
    metrics = table.update("id IN (1, 4)", {"n": "n * 10 + id", "v": "upper(v)",
                                             "p": "'c'"})
    assert metrics["numUpdatedRows"] == 2
    assert metrics["partitions"] == ["p=a", "p=b", "p=c"]
    assert rows_of(table) == [(0, "v0", 0, "a"), (1, "V1", 11, "c"), (2, "v2", None, "a"), (3, "v3", 3, "a"),
                              (4, "V4", 44, "c"), (5, "v5", None, "b"), (6, "v6", 6, "b"), (7, "v7", 7, None)]
    # a second update sees the first one's new versions (their ROW__IDs carry the new write id)
    table.update("p = 'c'", {"n": "0"})
    assert sorted(r for r in rows_of(table) if r[3] == "c") == [(1, "V1", 0, "c"), (4, "V4", 0, "c")]


def test_update_to_null_partition_and_back(table):
    table.update("id = 0", {"p": "NULL"})
    table.update("p IS NULL", {"p": "'z'"})
    assert sorted(r[0] for r in rows_of(table) if r[3] == "z") == [0, 7]


def test_delete_goes_to_the_directory_the_row_came_from(tmp_path):
    """A partition directory named p=01 holds value 1; formatting 1 gives p=1, which would be a
    new directory whose delete events no reader of p=01 would apply."""
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("p", pa.int32())]), partitionColumns=["p"])
    t = AcidTable.load(path)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "p": pa.array([1, 1], pa.int32())}))
    os.rename(os.path.join(path, "p=1"), os.path.join(path, "p=01"))
    t.delete("id = 1")
    assert sorted(os.listdir(path)) == ["p=01"]
    assert t.toArrow().column("id").to_pylist() == [2]


def test_bad_input_is_typed_and_leaves_the_table_alone(table):
    files = listing(table.location)
    with pytest.raises(SchemaError, match="no column 'nope'"):
        table.update("id = 1", {"nope": "1"})
    with pytest.raises(InvalidArgumentError, match="condition"):
        table.delete("id = = 1")
    with pytest.raises(InvalidArgumentError, match="condition"):
        table.delete("nope = 1")
    with pytest.raises(InvalidArgumentError, match="set"):
        table.update("id = 1", {})
    with pytest.raises(InvalidArgumentError, match="set"):
        table.update("id = 1")
    with pytest.raises(SchemaError, match="cannot be stored"):
        table.update("id = 1", {"n": "DATE '2024-01-01'"})
    with pytest.raises(UnsupportedOperationError, match="SparkSession"):
        table.merge(None, "a = b")
    assert listing(table.location) == files
    assert [h["operation"] for h in table.history()] == ["insert"]


def test_insert_only_tables_refuse_dml(tmp_path):
    path = str(tmp_path / "io")
    create_table(path, pa.schema([("id", pa.int64())]), insertOnly=True)
    t = AcidTable.load(path)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(UnsupportedOperationError, match="insert-only"):
        t.delete("id = 1")
    assert t.toArrow().num_rows == 1


def test_tables_the_store_does_not_know_are_read_only(tmp_path):
    from hivegen import HiveTable

    hive = HiveTable(tmp_path / "hive", [("id", "bigint")])
    hive.insert(1, {0: [(1,)]})
    t = AcidTable.load(str(tmp_path / "hive"))
    with pytest.raises(TableNotRegisteredError, match="not registered"):
        t.delete("id = 1")
    assert t.toArrow().num_rows == 1
