"""Reads and compactions refuse a table whose storage lacks a committed write: data missing
from storage is corruption (MissingDataError, naming the write ids and the path), never fewer
rows, and a compaction never writes an output that would shadow rows it did not read."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

from acid_source import compact_table, create_table
from acid_source.errors import MissingDataError, NotEnoughHistoryError
from acid_source.table import AcidTable


def rows(ids, p):
    return pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([p] * len(ids), pa.int32())})


@pytest.fixture
def table(tmp_path):
    path = str(tmp_path / "t")
    create_table(path, "id bigint, p int", partitionColumns=["p"])
    t = AcidTable.load(path)
    for i in range(3):
        t.append(rows([10 * i + 1, 10 * i + 2], 1))  # write ids 1-3
    t.append(rows([99], 2))  # write id 4
    return t


def listing(path):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs + ["/"])


def test_a_lost_delta_is_refused_by_reads_and_compaction(table):
    shutil.rmtree(os.path.join(table.location, "p=1", "delta_0000002_0000002_0000"))
    before = listing(table.location)
    with pytest.raises(MissingDataError, match=r"write id\(s\) 2 ") as raised:
        table.toArrow()
    assert raised.value.path == os.path.join(table.location, "p=1") and raised.value.write_ids == [2]
    with pytest.raises(MissingDataError):
        table.scan(rowFilter="p = 2").count()  # the whole table's listing is checked
    for kind in ("minor", "major"):
        with pytest.raises(MissingDataError, match="refusing to compact"):
            compact_table(table.location, kind)
    assert listing(table.location) == before
    assert [h["operation"] for h in table.history()] == ["insert"] * 4  # the store's history needs no listing


def test_a_lost_partition_is_refused(table):
    shutil.rmtree(os.path.join(table.location, "p=2"))
    with pytest.raises(MissingDataError, match="the directory itself is missing"):
        table.toArrow()


def test_what_compaction_and_the_cleaner_removed_is_not_missing(table):
    table.delete("id = 11")
    table.compact("major")
    table.vacuum(retentionSeconds=0)
    assert sorted(table.toArrow().column("id").to_pylist()) == [1, 2, 12, 21, 22, 99]
    with pytest.raises(NotEnoughHistoryError):  # history the cleaner removed is not "missing data"
        table.scan(versionAsOf=4).toArrow()


def test_a_partition_directory_spelled_another_way_is_the_one_the_store_knows(table):
    """Another engine may name the directory of the int 1 ``p=01``; the store recorded ``p=1``."""
    os.rename(os.path.join(table.location, "p=1"), os.path.join(table.location, "p=01"))
    assert sorted(table.toArrow().column("id").to_pylist()) == [1, 2, 11, 12, 21, 22, 99]
    shutil.rmtree(os.path.join(table.location, "p=01", "delta_0000001_0000001_0000"))
    with pytest.raises(MissingDataError) as raised:
        table.toArrow()
    assert raised.value.path == os.path.join(table.location, "p=01") and raised.value.write_ids == [1]
    with pytest.raises(NotEnoughHistoryError, match="p=01"):
        table.scan(versionAsOf=2).toArrow()
