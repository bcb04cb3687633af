"""Issue 18: one partition value, two directories (Hive's ``p=01`` next to ``p=1``; an older
acidorc's ``d=1.50`` next to Hive's spelling ``d=1.5``). Hive pairs delete events with the rows
of their own directory, so a delete event must land in the directory its row was read from;
new rows (appends, the new version of an updated row) go to one existing directory of their
value (Hive's spelling when it exists, else the first by name), never to a third one."""

from __future__ import annotations

import decimal
import os

import pyarrow as pa
import pytest
from hivegen import HiveTable

from acid_source import create_table
from acid_source.metastore import Metastore
from acid_source.table import AcidTable


@pytest.fixture(autouse=True)
def private_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{tmp_path}/store.db")
    Metastore(f"sqlite:///{tmp_path}/store.db").list_tables()


def partitions(root) -> list[str]:
    return sorted(d for d in os.listdir(root) if "=" in d)


def two_dirs(tmp_path, column: str = "p", orc_type: str = "int", spellings=("01", "1"),
             ddl: str = "id int, p int") -> str:
    """A Hive-written table whose one value has two directories: ids 1, 2 in the first spelling
    (write id 1), ids 3, 4 in the second (write id 2), id 5 in a third value (write id 3)."""
    root = tmp_path / "t"
    hive = HiveTable(root, [("id", "int")])
    hive.insert(1, {0: [(1,), (2,)]}, partition=f"{column}={spellings[0]}")
    hive.insert(2, {0: [(3,), (4,)]}, partition=f"{column}={spellings[1]}")
    hive.insert(3, {0: [(5,)]}, partition=f"{column}=7")
    create_table(str(root), ddl, partitionColumns=[column], adopt=True)
    return str(root)


def ids(path) -> list[int]:
    return sorted(AcidTable.load(path).toArrow().column("id").to_pylist())


def _dir_ids(path, directory: str) -> list[int]:
    from acid_source.resolve import resolve_table
    from acid_source.scan.planner import TableScan
    from acid_source.scan.reader import read_split

    resolved = resolve_table(path)
    schema = resolved.schema()
    ctx, splits = TableScan(resolved).plan(schema)
    found = []
    for split in splits:
        if split.partition_path.rstrip("/").endswith("/" + directory):
            for batch in read_split(split, ctx):
                found += batch.column(batch.schema.get_field_index("id")).to_pylist()
    return sorted(found)


def test_delete_reaches_rows_of_both_directories(tmp_path):
    path = two_dirs(tmp_path)
    metrics = AcidTable.load(path).delete("p = 1")
    assert metrics["numDeletedRows"] == 4
    assert ids(path) == [5]
    assert _dir_ids(path, "p=01") == [] and _dir_ids(path, "p=1") == []
    assert partitions(path) == ["p=01", "p=1", "p=7"]  # no third directory for value 1


def test_delete_of_some_rows_in_each_directory(tmp_path):
    path = two_dirs(tmp_path)
    metrics = AcidTable.load(path).delete("id IN (2, 3)")
    assert metrics["numDeletedRows"] == 2
    assert ids(path) == [1, 4, 5]
    assert _dir_ids(path, "p=01") == [1] and _dir_ids(path, "p=1") == [4]


def test_update_keeps_both_directories_consistent(tmp_path):
    path = two_dirs(tmp_path)
    table = AcidTable.load(path)
    metrics = table.update("id IN (1, 4)", {"id": "id * 10"})
    assert metrics["numUpdatedRows"] == 2
    assert ids(path) == [2, 3, 5, 10, 40]
    # new versions go to one existing directory of the value: Hive's spelling p=1
    assert _dir_ids(path, "p=01") == [2] and _dir_ids(path, "p=1") == [3, 10, 40]
    assert partitions(path) == ["p=01", "p=1", "p=7"]
    # and the updated rows can be deleted again (their delete events follow them)
    assert table.delete("id >= 10")["numDeletedRows"] == 2
    assert ids(path) == [2, 3, 5]


def test_update_moving_rows_to_a_value_with_two_directories(tmp_path):
    path = two_dirs(tmp_path)
    AcidTable.load(path).update("id = 5", {"p": "1"})
    assert ids(path) == [1, 2, 3, 4, 5]
    assert _dir_ids(path, "p=1") == [3, 4, 5] and _dir_ids(path, "p=7") == []
    assert partitions(path) == ["p=01", "p=1", "p=7"]


def test_append_reuses_an_existing_directory_of_the_value(tmp_path):
    root = tmp_path / "t"
    hive = HiveTable(root, [("id", "int")])
    hive.insert(1, {0: [(1,)]}, partition="p=01")
    create_table(str(root), "id int, p int", partitionColumns=["p"], adopt=True)
    table = AcidTable.load(str(root))
    table.append(pa.table({"id": pa.array([2], pa.int32()), "p": pa.array([1], pa.int32())}))
    assert partitions(root) == ["p=01"]
    assert _dir_ids(str(root), "p=01") == [1, 2]
    assert table.delete("p = 1")["numDeletedRows"] == 2
    assert ids(str(root)) == []


def test_static_overwrite_replaces_every_directory_of_the_value(tmp_path):
    path = two_dirs(tmp_path)
    table = AcidTable.load(path)
    table.overwrite(pa.table({"id": pa.array([9], pa.int32())}), partition={"p": "1"})
    assert ids(path) == [5, 9]
    assert partitions(path) == ["p=01", "p=1", "p=7"]


def test_decimal_partition_spelled_by_an_older_acidorc(tmp_path):
    """An older acidorc named decimal(3,2) value 1.5 ``d=1.50``; now it is ``d=1.5``."""
    root = tmp_path / "t"
    hive = HiveTable(root, [("id", "int")])
    hive.insert(1, {0: [(1,)]}, partition="d=1.50")
    create_table(str(root), "id int, d decimal(3,2)", partitionColumns=["d"], adopt=True)
    table = AcidTable.load(str(root))
    table.append(pa.table({"id": pa.array([2], pa.int32()), "d": pa.array([decimal.Decimal("1.50")],
                                                                          pa.decimal128(3, 2))}))
    assert partitions(root) == ["d=1.50"]
    metrics = table.delete("d = 1.5")
    assert metrics["numDeletedRows"] == 2
    assert ids(str(root)) == []


def test_decimal_two_directories_delete(tmp_path):
    path = two_dirs(tmp_path, "d", spellings=("1.50", "1.5"), ddl="id int, d decimal(3,2)")
    metrics = AcidTable.load(path).delete("d = 1.5")
    assert metrics["numDeletedRows"] == 4
    assert ids(path) == [5]


def test_float_static_partition_is_named_as_a_float(tmp_path):
    path = str(tmp_path / "t")
    create_table(path, "id int, f float", partitionColumns=["f"])
    table = AcidTable.load(path)
    table.overwrite(pa.table({"id": pa.array([1], pa.int32())}), partition={"f": "1.100000023841858"})
    table.append(pa.table({"id": pa.array([2], pa.int32()), "f": pa.array([1.1], pa.float32())}))
    assert partitions(path) == ["f=1.1"]
    assert AcidTable.load(path).delete("f = cast(1.1 as float)")["numDeletedRows"] == 2
    assert ids(path) == []


@pytest.mark.parametrize("kind", ["minor", "major"])
def test_compaction_keeps_each_directory(tmp_path, kind):
    path = two_dirs(tmp_path)
    table = AcidTable.load(path)
    table.delete("id IN (2, 3)")
    table.compact(kind)
    assert ids(path) == [1, 4, 5]
    assert _dir_ids(path, "p=01") == [1] and _dir_ids(path, "p=1") == [4]
    assert table.delete("p = 1")["numDeletedRows"] == 2
    assert ids(path) == [5]
