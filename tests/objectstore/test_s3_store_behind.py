"""Issue 18 on S3 (SeaweedFS): a store restored from an older copy is found by the next write
through one recursive listing of the table's prefix, the write is refused before any object is
written, and drop_table + create_table(adopt=True) recovers the table."""

from __future__ import annotations

import sqlite3

import pyarrow as pa
import pytest

from acid_source import AcidTable, create_table, drop_table
from acid_source.errors import StoreBehindStorageError
from acid_source.layout.ids_on_storage import list_ids_on_storage
from acid_source.storage import Storage, option_pairs


def _copy(src: str, dst: str) -> None:
    a, b = sqlite3.connect(src), sqlite3.connect(dst)
    a.backup(b)
    a.close(), b.close()


def test_a_restored_store_is_refused_on_s3_and_adopt_recovers(s3_server, s3_table_url, tmp_path):
    options = s3_server.storage_options
    db = str(tmp_path / "store.db")
    url = f"sqlite:///{db}"
    create_table(s3_table_url, "id bigint, p string", partitionColumns=["p"], metastoreUrl=url,
                 storageOptions=options)
    t = AcidTable.load(s3_table_url, metastoreUrl=url, storageOptions=options)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["a", "a"]}))
    _copy(db, str(tmp_path / "older.db"))
    t.append(pa.table({"id": pa.array([3], pa.int64()), "p": ["b"]}))  # write id 2, lost
    t.delete("id = 1")  # write id 3, lost
    _copy(str(tmp_path / "older.db"), db)
    fs = s3_server.filesystem()
    prefix = s3_table_url.removeprefix("s3://")
    before = sorted(fs.find(prefix))

    ids = list_ids_on_storage(Storage(s3_table_url, option_pairs(options)))
    assert ids.write_id == 3 and all(d.startswith("s3://") for d in ids.above(1, 10**9))
    with pytest.raises(StoreBehindStorageError) as caught:
        t.append(pa.table({"id": pa.array([9], pa.int64()), "p": ["a"]}))
    assert caught.value.write_id == 2 and any("p=b/delta_0000002_0000002_0000" in d for d in caught.value.directories)
    with pytest.raises(StoreBehindStorageError):
        t.delete("id = 2")
    assert sorted(fs.find(prefix)) == before

    drop_table(s3_table_url, metastoreUrl=url, storageOptions=options)
    create_table(s3_table_url, "id bigint, p string", partitionColumns=["p"], adopt=True, metastoreUrl=url,
                 storageOptions=options)
    t = AcidTable.load(s3_table_url, metastoreUrl=url, storageOptions=options)
    assert t.append(pa.table({"id": pa.array([4], pa.int64()), "p": ["a"]}))["writeId"] == 4
    assert sorted(t.toArrow().column("id").to_pylist()) == [2, 3, 4]
