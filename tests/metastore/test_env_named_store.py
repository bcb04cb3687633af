"""A store named by ``$ACIDORC_METASTORE_URL`` is as explicit as one named by ``metastoreUrl=``:
when its SQLite file is missing, reads, DML and history raise MetastoreNotFoundError instead of
reading the table as unregistered (which would count a dead writer's files as committed). Only
the built-in default store (no URL anywhere) may be absent (issue 18, defect 4)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.errors import MetastoreError, MetastoreNotFoundError
from acid_source.metastore.urls import url_for_workers
from acid_source.table import AcidTable

# the scenario: a table with one committed row, then a writer that writes its files and
# dies (os._exit) before it commits, in a process of its own
_DEAD_WRITER = textwrap.dedent("""
    import os, sys
    import pyarrow as pa
    from acid_source import create_table
    from acid_source.table import AcidTable

    path = sys.argv[1]
    create_table(path, pa.schema([("id", pa.int64())]))
    table = AcidTable.load(path)
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    staged = table.newWrite()
    writer = staged.writer(0)
    writer.write(pa.record_batch({"id": pa.array([666], pa.int64())}))
    writer.close()
    os._exit(0)  # the process dies: no commit, no abort
""")


@pytest.fixture(scope="module")
def _dead_writer_table(tmp_path_factory):
    """Made once per module (a process of its own costs seconds); no test changes it."""
    tmp_path = tmp_path_factory.mktemp("dead-writer")
    store = tmp_path / "store.db"
    url = f"sqlite:///{store}"
    path = str(tmp_path / "t")
    env = {**os.environ, "ACIDORC_METASTORE_URL": url}
    subprocess.run([sys.executable, "-c", _DEAD_WRITER, path], env=env, check=True, timeout=120)
    assert store.exists() and any(p.name.startswith("delta_0000002") for p in (tmp_path / "t").iterdir())
    for leftover in tmp_path.glob("store.db*"):  # the database and its WAL / shared-memory files
        leftover.unlink()
    return tmp_path, path, url


@pytest.fixture
def dead_writer_then_store_deleted(_dead_writer_table, monkeypatch):
    """The table at ``path`` after a writer died uncommitted; then its store file was deleted.
    The environment still names that store."""
    tmp_path, path, url = _dead_writer_table
    monkeypatch.setenv("ACIDORC_METASTORE_URL", url)
    return tmp_path, path, url


def test_a_read_through_a_deleted_env_store_is_an_error(dead_writer_then_store_deleted):
    tmp_path, path, url = dead_writer_then_store_deleted
    with pytest.raises(MetastoreNotFoundError) as env_route:
        AcidTable.load(path).scan().toArrow()
    with pytest.raises(MetastoreNotFoundError) as argument_route:
        AcidTable.load(path, metastoreUrl=url).scan().toArrow()
    assert env_route.value.url == argument_route.value.url == url
    assert not (tmp_path / "store.db").exists()  # a reader never creates the store


def test_dml_and_history_through_a_deleted_env_store_are_errors(dead_writer_then_store_deleted):
    tmp_path, path, _ = dead_writer_then_store_deleted
    table = AcidTable(path)
    for action in (lambda: table.delete("id = 666"), lambda: table.history(),
                   lambda: table.scan(versionAsOf=1).toArrow()):
        with pytest.raises(MetastoreNotFoundError):
            action()
    assert not (tmp_path / "store.db").exists()


def test_the_spark_read_planner_refuses_a_deleted_env_store(dead_writer_then_store_deleted):
    """What ``spark.read.format("acidorc").load(p)`` runs in its planning worker (which reads the
    environment it inherited), and the URL handed to workers with reads the driver starts."""
    from acid_source.spark.datasource import AcidOrcDataSource

    tmp_path, path, url = dead_writer_then_store_deleted
    with pytest.raises(MetastoreNotFoundError):
        AcidOrcDataSource({"path": path}).schema()
    assert url_for_workers(None) == url  # workers must refuse it too, not find "no store"
    assert not (tmp_path / "store.db").exists()


def test_only_the_built_in_default_store_may_be_absent(tmp_path, monkeypatch):
    """No URL anywhere and no ~/.acidorc/metastore.db: the table is one no store knows (written by
    another engine), read with every write id on disk counted as committed."""
    monkeypatch.delenv("ACIDORC_METASTORE_URL")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = str(tmp_path / "t")
    other = f"sqlite:///{tmp_path}/writer.db"
    create_table(path, pa.schema([("id", pa.int64())]), metastoreUrl=other)
    AcidTable.load(path, metastoreUrl=other).append(pa.table({"id": pa.array([7], pa.int64())}))
    assert AcidTable.load(path).scan().toArrow().column("id").to_pylist() == [7]
    assert url_for_workers(None) is None
    assert not (tmp_path / "home" / ".acidorc" / "metastore.db").exists()


@pytest.mark.spark
def test_the_store_a_running_session_is_given_is_the_one_its_workers_ask(spark, tmp_path, monkeypatch):
    """``get_or_create_session(metastore_url=...)`` on a session whose JVM already runs: the
    Python workers that plan ``spark.read.format("acidorc").load(p)`` must ask that store, not
    the JVM's, which does not know the table (and would read it as another engine's: every write
    id on disk committed, a dead writer's included); and once that store's file is deleted, they
    must refuse it, as for ``metastoreUrl=``. Planning alone shows which store they asked: only
    the table's own store has the history versionAsOf needs."""
    from acid_source import get_or_create_session

    original = os.environ["ACIDORC_METASTORE_URL"]
    monkeypatch.setenv("ACIDORC_METASTORE_URL", original)  # restored after the test
    store = tmp_path / "own.db"
    url = f"sqlite:///{store}"
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64())]), metastoreUrl=url)
    AcidTable.load(path, metastoreUrl=url).append(pa.table({"id": pa.array([1], pa.int64())}))

    def plan():
        return spark.read.format("acidorc").option("versionAsOf", 1).load(path).columns

    try:
        assert get_or_create_session(metastoreUrl=url) is spark
        assert plan() == ["id"]
        for leftover in tmp_path.glob("own.db*"):
            leftover.unlink()
        with pytest.raises(Exception, match="MetastoreNotFoundError") as info:
            plan()
        assert url in str(info.value) and not store.exists()
    finally:
        get_or_create_session(metastoreUrl=original)
    assert spark.sparkContext.environment.get("ACIDORC_METASTORE_URL") is None
    with pytest.raises(Exception, match="is not registered in"):  # the JVM's store again
        plan()
    # a URL with a password is never handed to Spark: an error naming the variable, no password
    with pytest.raises(MetastoreError, match=r"\$ACIDORC_METASTORE_URL before the first SparkSession") as info:
        get_or_create_session(metastoreUrl="postgresql://acidorc:secret@db.internal/acidorc")
    assert "secret" not in str(info.value)
    assert spark.sparkContext.environment.get("ACIDORC_METASTORE_URL") is None
