"""Issue 18, defects 2 and 3: a write never writes into a directory that already exists.

A transaction store that is behind the table's storage (restored from an older copy; a table
dropped without purge and created again) would hand out write ids whose directories are
already there: a lost append's rows would come back, a lost delete would remove a live row.
Every kind of write refuses with StoreBehindStorageError before any file is written, and
create_table(adopt=True) registers the history on disk so that new writes go above it.
"""

from __future__ import annotations

import os
import pickle
import sqlite3

import pyarrow as pa
import pytest
import sqlalchemy as sa
from write.writers import write

from acid_source import create_table, drop_table
from acid_source.errors import MetastoreError, StoreBehindStorageError
from acid_source.maintenance.aborted import clean_aborted_writes
from acid_source.maintenance.cleaner import vacuum
from acid_source.metastore import Metastore
from acid_source.metastore.sql.schema import metadata
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
PSCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("p", pa.string())])


def _batch(ids, name="x", p=None):
    cols = {"id": pa.array(ids, pa.int64()), "name": [name] * len(ids)}
    if p is not None:
        cols["p"] = [p] * len(ids)
    return pa.table(cols)


def _files(root) -> dict[str, int]:
    """Every file under the table root with its size and modification time (the table 'as it
    was')."""
    found = {}
    for d, _, names in os.walk(root):
        for n in names:
            st = os.stat(os.path.join(d, n))
            found[os.path.relpath(os.path.join(d, n), root)] = (st.st_size, st.st_mtime_ns)
    return found


def _rows(path, url) -> list[tuple]:
    t = AcidTable.load(path, metastoreUrl=url).toArrow()
    return sorted(zip(t.column("id").to_pylist(), t.column("name").to_pylist()))


# --- restoring a store: the SQLite file from an older copy (SQLite's backup API, which is
# --- safe while connections are open), or a logical copy of every row (any backend) ---------

class StoreCopy:
    def __init__(self, url: str, tmp_path):
        self.url, self.tmp = url, tmp_path
        self.sqlite = url.startswith("sqlite")
        self.rows: dict[str, list[dict]] = {}

    def take(self) -> None:
        if self.sqlite:
            src = sqlite3.connect(self.url.removeprefix("sqlite:///"))
            dst = sqlite3.connect(str(self.tmp / "older-copy.db"))
            src.backup(dst)
            src.close(), dst.close()
            return
        engine = sa.create_engine(self.url)
        with engine.connect() as conn:
            for table in metadata.sorted_tables:
                self.rows[table.name] = [dict(r._mapping) for r in conn.execute(sa.select(table))]
        engine.dispose()

    def restore(self) -> None:
        if self.sqlite:
            src = sqlite3.connect(str(self.tmp / "older-copy.db"))
            dst = sqlite3.connect(self.url.removeprefix("sqlite:///"))
            src.backup(dst)
            src.close(), dst.close()
            return
        engine = sa.create_engine(self.url)
        with engine.begin() as conn:
            for table in reversed(metadata.sorted_tables):
                conn.execute(sa.delete(table))
            for table in metadata.sorted_tables:
                if self.rows.get(table.name):
                    conn.execute(sa.insert(table), self.rows[table.name])
        engine.dispose()


def _behind(tmp_path, url, partitioned=False):
    """A table whose store was restored from a copy taken after its first append: storage holds
    the lost append (write id 2) and the lost delete (write id 3)."""
    path = str(tmp_path / "t")
    create_table(path, PSCHEMA if partitioned else SCHEMA, partitionColumns=["p"] if partitioned else (),
                 metastoreUrl=url)
    table = AcidTable.load(path, metastoreUrl=url)
    p = {"p": "a"} if partitioned else {}
    table.append(_batch([1, 2], "first", **p))
    copy = StoreCopy(url, tmp_path)
    copy.take()
    table.append(_batch([3], "lost append", **({"p": "b"} if partitioned else {})))  # write id 2
    table.delete("id = 1")  # write id 3: a lost delete
    assert _rows(path, url) == [(2, "first"), (3, "lost append")]
    copy.restore()
    assert _rows(path, url) == [(1, "first"), (2, "first")]  # the store knows write id 1 only
    return path


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path}/store.db"


# --- defect 2: a store behind the disk ----------------------------------------------------

def test_append_with_a_restored_store_is_refused_and_writes_nothing(tmp_path, sqlite_url):
    path = _behind(tmp_path, sqlite_url)
    before = _files(path)
    with pytest.raises(StoreBehindStorageError) as caught:
        AcidTable.load(path, metastoreUrl=sqlite_url).append(_batch([9], "new"))
    err = caught.value
    assert err.location == path and err.write_id == 2
    assert any(d.endswith("delta_0000002_0000002_0000") for d in err.directories)
    assert "behind" in str(err) and "adopt=True" in str(err) and path in str(err)
    assert _files(path) == before
    assert _rows(path, sqlite_url) == [(1, "first"), (2, "first")]
    # nothing is left in the store either: no write id was handed out (an aborted one would let
    # the clean-up of aborted writes remove the lost history's directories)
    info = Metastore(sqlite_url).get_table(path)
    assert Metastore(sqlite_url).write_ids_of(info.table_id, "aborted") == []
    assert Metastore(sqlite_url).valid_write_ids(info.table_id).high_watermark == 1


def test_delete_with_a_restored_store_is_refused_and_writes_nothing(tmp_path, sqlite_url):
    path = _behind(tmp_path, sqlite_url)
    before = _files(path)
    with pytest.raises(StoreBehindStorageError):
        AcidTable.load(path, metastoreUrl=sqlite_url).delete("id = 2")
    with pytest.raises(StoreBehindStorageError):
        AcidTable.load(path, metastoreUrl=sqlite_url).update("id = 2", {"name": "'changed'"})
    assert _files(path) == before
    assert _rows(path, sqlite_url) == [(1, "first"), (2, "first")]


def test_overwrite_and_compaction_with_a_restored_store_are_refused(tmp_path, sqlite_url):
    path = _behind(tmp_path, sqlite_url)
    before = _files(path)
    table = AcidTable.load(path, metastoreUrl=sqlite_url)
    with pytest.raises(StoreBehindStorageError):
        table.overwrite(_batch([7], "over"))
    for kind in ("minor", "major"):
        with pytest.raises(StoreBehindStorageError):
            table.compact(kind)
    assert _files(path) == before


def test_every_partition_counts(tmp_path, sqlite_url):
    """The lost write went to partition b; a write to partition a only is refused too (its
    commit would make b's directories of the same write id visible)."""
    path = _behind(tmp_path, sqlite_url, partitioned=True)
    before = _files(path)
    with pytest.raises(StoreBehindStorageError) as caught:
        AcidTable.load(path, metastoreUrl=sqlite_url).newWrite(mode="append", partition="p=a")
    assert any("p=b" in d for d in caught.value.directories)
    assert _files(path) == before


def test_restored_store_on_every_backend(tmp_path, store_url):
    """The same refusal on SQLite and PostgreSQL (a logical restore of every row there)."""
    path = _behind(tmp_path, store_url)
    before = _files(path)
    with pytest.raises(StoreBehindStorageError):
        AcidTable.load(path, metastoreUrl=store_url).append(_batch([9], "new"))
    with pytest.raises(StoreBehindStorageError):
        AcidTable.load(path, metastoreUrl=store_url).delete("id = 2")
    assert _files(path) == before


def test_recovery_drop_then_adopt(tmp_path, store_url):
    """The way back from a store behind the disk: forget the table (files stay), register it
    again with the history on disk; rows read as storage has them, new writes go above."""
    path = _behind(tmp_path, store_url)
    drop_table(path, metastoreUrl=store_url)
    info = create_table(path, SCHEMA, adopt=True, metastoreUrl=store_url)
    assert _rows(path, store_url) == [(2, "first"), (3, "lost append")]
    table = AcidTable.load(path, metastoreUrl=store_url)
    metrics = table.append(_batch([4], "after"))
    assert metrics["writeId"] == 4
    table.delete("id = 2")
    assert _rows(path, store_url) == [(3, "lost append"), (4, "after")]
    history = AcidTable.load(path, metastoreUrl=store_url).history()
    assert history[-1]["operation"] == "adopt" and history[-1]["version"] == 3
    # the adopted version reads as the table was on disk; earlier versions are not recorded
    v3 = AcidTable.load(path, metastoreUrl=store_url).scan(versionAsOf=3).toArrow()
    assert sorted(v3.column("id").to_pylist()) == [2, 3]
    table.compact("major")
    assert _rows(path, store_url) == [(3, "lost append"), (4, "after")]
    assert info.location == path


def test_error_pickles(tmp_path):
    err = StoreBehindStorageError("msg", location="/t", write_id=2, directories=("/t/delta_2",), url="sqlite:///x")
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, MetastoreError) and str(back) == "msg"
    assert (back.location, back.write_id, back.directories, back.url) == ("/t", 2, ("/t/delta_2",), "sqlite:///x")


# --- defect 3: re-creating a forgotten table -------------------------------------------------

def _dropped_with_history(tmp_path, url) -> str:
    """A table with an append and a delete, dropped from the store without purge: its
    directories stay."""
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, metastoreUrl=url)
    table = AcidTable.load(path, metastoreUrl=url)
    table.append(_batch([1, 2], "old"))
    table.delete("id = 1")
    drop_table(path, metastoreUrl=url)
    return path


def test_create_table_refuses_a_location_with_acid_history(tmp_path, sqlite_url):
    path = _dropped_with_history(tmp_path, sqlite_url)
    before = _files(path)
    with pytest.raises(StoreBehindStorageError) as caught:
        create_table(path, SCHEMA, metastoreUrl=sqlite_url)
    assert "adopt=True" in str(caught.value) and caught.value.location == path
    assert Metastore(sqlite_url).find_table(path) is None
    assert _files(path) == before
    # a write that would create the table (the Spark writer's path) refuses it too
    with pytest.raises(StoreBehindStorageError):
        write(path, [[pa.record_batch({"id": pa.array([5], pa.int64()), "name": ["n"]})]], metastore_url=sqlite_url)
    assert _files(path) == before


def test_recreate_with_adopt_keeps_deleted_rows_deleted(tmp_path, sqlite_url):
    path = _dropped_with_history(tmp_path, sqlite_url)
    create_table(path, SCHEMA, adopt=True, metastoreUrl=sqlite_url)
    AcidTable.load(path, metastoreUrl=sqlite_url).append(_batch([3], "new"))
    assert _rows(path, sqlite_url) == [(2, "old"), (3, "new")]  # row 1 stays deleted


def test_adopt_checks_the_layout(tmp_path, sqlite_url):
    from acid_source.errors import SchemaError

    path = str(tmp_path / "t")
    create_table(path, PSCHEMA, partitionColumns=["p"], metastoreUrl=sqlite_url)
    AcidTable.load(path, metastoreUrl=sqlite_url).append(_batch([1], "a", p="x"))
    drop_table(path, metastoreUrl=sqlite_url)
    with pytest.raises(SchemaError, match="partition"):
        create_table(path, PSCHEMA, adopt=True, metastoreUrl=sqlite_url)  # not partitioned by p
    with pytest.raises(SchemaError, match="insert-only|insertOnly"):
        create_table(path, PSCHEMA, partitionColumns=["p"], insertOnly=True, adopt=True, metastoreUrl=sqlite_url)
    assert Metastore(sqlite_url).find_table(path) is None
    create_table(path, PSCHEMA, partitionColumns=["p"], adopt=True, metastoreUrl=sqlite_url)
    assert AcidTable.load(path, metastoreUrl=sqlite_url).toArrow().num_rows == 1


def test_adopt_of_an_empty_location_creates_a_table(tmp_path, sqlite_url):
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, adopt=True, metastoreUrl=sqlite_url)
    assert AcidTable.load(path, metastoreUrl=sqlite_url).append(_batch([1]))["writeId"] == 1
    assert AcidTable.load(path, metastoreUrl=sqlite_url).history()[-1]["operation"] == "insert"


def test_compaction_refuses_an_output_directory_that_exists(tmp_path, sqlite_url):
    """A store restored to before a compaction hands the compaction's transaction id out again:
    the next compaction would write into the lost one's ``delta_1_2_vT``."""
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, metastoreUrl=sqlite_url)
    table = AcidTable.load(path, metastoreUrl=sqlite_url)
    table.append(_batch([1], "a"))
    table.append(_batch([2], "b"))
    copy = StoreCopy(sqlite_url, tmp_path)
    copy.take()
    lost = table.compact("minor")
    copy.restore()
    before = _files(path)
    with pytest.raises(StoreBehindStorageError, match="already exist") as caught:
        AcidTable.load(path, metastoreUrl=sqlite_url).compact("minor")
    names = [d.rsplit("/", 1)[-1] for d in caught.value.directories]
    assert names == [d.rsplit("/", 1)[-1] for d in lost["outputDirs"]]
    assert _files(path) == before
    assert _rows(path, sqlite_url) == [(1, "a"), (2, "b")]


@pytest.mark.spark
def test_spark_writer_dml_and_compaction_refuse_a_restored_store(spark, tmp_path, sqlite_url):
    path = _behind(tmp_path, sqlite_url)
    before = _files(path)
    df = spark.createDataFrame([(9, "new")], "id bigint, name string")
    with pytest.raises(Exception, match="StoreBehindStorageError.*behind the storage"):
        df.write.format("acidorc").option("metastoreUrl", sqlite_url).mode("append").save(path)
    table = AcidTable.forPath(spark, path, metastoreUrl=sqlite_url)
    with pytest.raises(StoreBehindStorageError):
        table.delete("id = 2")
    with pytest.raises(StoreBehindStorageError):
        table.compact("major")
    assert _files(path) == before  # (the recovery is the engine-free one: test_recovery_drop_then_adopt)


def test_adopt_refuses_compaction_outputs_whose_transaction_is_not_committed(tmp_path, sqlite_url):
    """A store restored while a compaction ran records its transaction as open (then aborted);
    every reader would ignore that compaction's output, whose inputs the cleaner may have
    removed: adopting such a history into that store is refused, into a new store it works."""
    from acid_source.metastore.sql.schema import txns

    path = str(tmp_path / "t")
    create_table(path, SCHEMA, metastoreUrl=sqlite_url)
    table = AcidTable.load(path, metastoreUrl=sqlite_url)
    table.append(_batch([1], "a"))
    table.append(_batch([2], "b"))
    txn_id = table.compact("minor")["txnId"]
    drop_table(path, metastoreUrl=sqlite_url)
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as conn:  # what the restored copy says of that transaction
        conn.execute(sa.update(txns).where(txns.c.txn_id == txn_id).values(state="aborted"))
    engine.dispose()
    with pytest.raises(StoreBehindStorageError, match=f"transaction {txn_id} is aborted") as caught:
        create_table(path, SCHEMA, adopt=True, metastoreUrl=sqlite_url)
    assert caught.value.directories and all(f"_v{txn_id:07d}" in d for d in caught.value.directories)
    assert Metastore(sqlite_url).find_table(path) is None
    fresh = f"sqlite:///{tmp_path}/fresh.db"
    create_table(path, SCHEMA, adopt=True, metastoreUrl=fresh)
    AcidTable.load(path, metastoreUrl=fresh).append(_batch([3], "c"))
    assert _rows(path, fresh) == [(1, "a"), (2, "b"), (3, "c")]
    assert Metastore(fresh).valid_txns().high_watermark > txn_id


# --- clean-up with a store behind its storage: it would take a lost commit for an abort -----

def _committed_after_the_copy(tmp_path, url):
    """A store copied while write id 2 was still open; 2 then committed and 3 appended; the
    copy restored. The store now says 2 is open (and, once silent, aborted) though it
    committed, and does not know 3."""
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, metastoreUrl=url)
    table = AcidTable.load(path, metastoreUrl=url)
    table.append(_batch([1], "first"))
    copy = StoreCopy(url, tmp_path)
    with table.newWrite(mode="append") as staged:
        writer = staged.writer(0)
        writer.write(_batch([2], "open at the copy"))
        result = writer.close()
        copy.take()
        staged.commit([result])
    table.append(_batch([3], "after the copy"))
    copy.restore()
    return path


def test_clean_aborted_writes_refuses_a_restored_store(tmp_path, sqlite_url):
    path = _committed_after_the_copy(tmp_path, sqlite_url)
    before = _files(path)
    with pytest.raises(StoreBehindStorageError):
        clean_aborted_writes(path, metastoreUrl=sqlite_url, expireAfterSeconds=0)
    assert _files(path) == before  # write id 2's committed directory is still there


def test_vacuum_refuses_a_restored_store(tmp_path, sqlite_url):
    path = _committed_after_the_copy(tmp_path, sqlite_url)
    store = Metastore(sqlite_url)
    store.abort_expired(0, table_id=store.get_table(path).table_id)  # write id 2 now reads as aborted
    before = _files(path)
    with pytest.raises(StoreBehindStorageError):
        vacuum(path, metastoreUrl=sqlite_url, retentionSeconds=0)
    assert _files(path) == before
