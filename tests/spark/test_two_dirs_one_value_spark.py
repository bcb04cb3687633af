"""Issue 18 on the Spark path: one partition value with two directories (Hive's ``p=01`` next
to ``p=1``). Spark's DELETE and MERGE send each delete event to the directory its row was read
from, and new row versions to one existing directory of their value."""

from __future__ import annotations

import os

import pytest
from hivegen import HiveTable

from acid_source import create_table
from acid_source.table import AcidTable

pytestmark = pytest.mark.spark


def test_spark_delete_and_merge_with_two_directories_of_one_value(spark, tmp_path):
    root = tmp_path / "t"
    hive = HiveTable(root, [("id", "int"), ("v", "string")])
    hive.insert(1, {0: [(1, "a"), (2, "b")]}, partition="p=01")
    hive.insert(2, {0: [(3, "c"), (4, "d")]}, partition="p=1")
    create_table(str(root), "id int, v string, p int", partitionColumns=["p"], adopt=True)
    table = AcidTable.forPath(spark, str(root))

    assert table.delete("id IN (2, 3)")["numDeletedRows"] == 2
    assert sorted(tuple(r) for r in table.toDF().select("id", "v", "p").collect()) == [(1, "a", 1), (4, "d", 1)]

    source = spark.createDataFrame([(1, "A", 1), (4, "D", 1), (5, "E", 1)], "id int, v string, p int")
    metrics = (table.alias("t").merge(source.alias("s"), "t.id = s.id")
               .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll().execute())
    assert (metrics["numUpdatedRows"], metrics["numInsertedRows"]) == (2, 1)
    assert sorted(tuple(r) for r in table.toDF().select("id", "v", "p").collect()) == [
        (1, "A", 1), (4, "D", 1), (5, "E", 1)]
    assert sorted(d for d in os.listdir(root) if "=" in d) == ["p=01", "p=1"]
    assert AcidTable.load(str(root)).delete("p = 1")["numDeletedRows"] == 3
    assert AcidTable.load(str(root)).toArrow().num_rows == 0
