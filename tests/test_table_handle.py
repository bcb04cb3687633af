"""The table handle: ``AcidTable.create`` returns a table; ``schema``, ``partitionColumns`` and
``version`` answer from what the handle last saw (its load, its refresh, its own commits) and
never touch the store or storage; ``append`` / ``overwrite`` take any Arrow stream."""

from __future__ import annotations

import shutil

import duckdb
import polars
import pyarrow as pa
import pytest

from acid_source import AcidTable, InvalidArgumentError, TableLocationNotFoundError

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())])


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/store.db"


def _ids(t: AcidTable) -> list[int]:
    return sorted(t.toArrow().column("id").to_pylist())


def test_create_returns_the_table(tmp_path, url):
    t = AcidTable.create(tmp_path / "t", "id bigint, name string, day string", partitionColumns=["day"],
                         metastoreUrl=url)
    assert (t.location, t.schema, t.partitionColumns, t.version) == (str(tmp_path / "t"), SCHEMA, ["day"], 0)
    with pytest.raises(InvalidArgumentError, match="conflictDetection"):
        AcidTable.create(tmp_path / "u", SCHEMA, metastoreUrl=url, conflictDetection="sometimes")
    assert not (tmp_path / "u").exists()  # a bad argument created nothing


def test_attributes_answer_from_the_last_resolution_and_refresh_asks_again(tmp_path, url):
    t = AcidTable.create(tmp_path / "t", SCHEMA, partitionColumns=["day"], metastoreUrl=url)
    other = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url)
    other.append(pa.table({"id": [1], "name": ["a"], "day": ["d1"]}))
    assert (other.version, t.version) == (1, 0)  # its own commit moves the writer's handle only
    assert t.refresh() is t and t.version == 1
    # no I/O: the store and the table's files can be gone, the attributes still answer
    shutil.move(str(tmp_path / "t"), str(tmp_path / "moved"))
    (tmp_path / "store.db").rename(tmp_path / "elsewhere.db")
    assert (t.schema, t.partitionColumns, t.version) == (SCHEMA, ["day"], 1)
    with pytest.raises(TableLocationNotFoundError):
        AcidTable(str(tmp_path / "t")).refresh()


def test_each_commit_of_the_handle_moves_its_version(tmp_path, url):
    t = AcidTable.create(tmp_path / "t", SCHEMA, partitionColumns=["day"], metastoreUrl=url)
    t.append(pa.table({"id": [1, 2], "name": ["a", "b"], "day": ["d1", "d2"]}))
    t.delete("id = 1")
    t.update("id = 2", {"name": "'z'"})
    with t.newWrite(mode="overwrite", partition={"day": "d3"}) as staged:
        writer = staged.writer(0)
        writer.write(pa.record_batch({"id": [3], "name": ["c"]}))
        staged.commit([writer.close()])
    assert t.version == 4
    t.compact("major")  # a compaction changes files, not the version
    t.delete("id = 99")  # matched nothing: nothing committed
    assert t.version == 4 == t.refresh().version
    assert _ids(t) == [2, 3]


def test_append_and_overwrite_take_any_arrow_stream(tmp_path, url):
    t = AcidTable.create(tmp_path / "t", SCHEMA, partitionColumns=["day"], metastoreUrl=url)
    t.append(polars.DataFrame({"id": [1, 2], "name": ["a", "b"], "day": ["d1", "d1"]}))
    t.append(duckdb.sql("select 3::bigint as id, 'c' as name, 'd2' as day"))
    copy = AcidTable.create(tmp_path / "copy", SCHEMA, partitionColumns=["day"], metastoreUrl=url)
    copy.append(t.scan(rowFilter="id > 1"))  # one table's scan into another
    assert _ids(copy) == [2, 3] and _ids(t) == [1, 2, 3]

    class OneBatch:  # the Arrow array interface of a record batch, and nothing else
        def __init__(self, batch):
            self._batch = batch

        def __arrow_c_array__(self, requested_schema=None):
            return self._batch.__arrow_c_array__(requested_schema)

    t.overwrite(OneBatch(pa.record_batch({"id": [9], "name": ["z"]})), partition={"day": "d1"})
    assert _ids(t) == [3, 9]
    with pytest.raises(InvalidArgumentError, match="Arrow stream"):
        t.append({"id": [1]})
