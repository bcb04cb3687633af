"""Metastore URLs: bare paths, in-memory databases, and opening a store that must exist."""

from __future__ import annotations

import pickle
import sqlite3

import pyarrow as pa
import pytest

from acid_source.errors import MetastoreError, MetastoreNotFoundError
from acid_source.metastore import Metastore, check_shareable
from acid_source.metastore.urls import sqlite_store_missing

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.mark.parametrize("url", ["::::", "sqlite:", "metastore.db", "./m.db", "dir/m.db", "c:/m.db",
                                 "/tmp/a:b.db"])
def test_a_bare_path_must_be_absolute_and_without_colons(tmp_path, monkeypatch, url):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MetastoreError, match="neither a URL") as info:
        Metastore(url).list_tables()
    assert repr(url) in str(info.value) and info.value.url == url
    assert list(tmp_path.iterdir()) == []  # nothing created in the working directory


def test_a_relative_path_object_is_refused_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MetastoreError, match="'m.db'"):
        Metastore(tmp_path.joinpath("m.db").relative_to(tmp_path))


def test_absolute_and_home_paths_are_sqlite_files(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Metastore("~/m.db").url == f"sqlite:///{tmp_path / 'm.db'}"
    assert Metastore(str(tmp_path / "x.db")).url == f"sqlite:///{tmp_path / 'x.db'}"


# ---------------------------------------------------------------------------------------------
# in-memory databases
# ---------------------------------------------------------------------------------------------
def test_in_memory_store_works_within_one_object():
    ms = Metastore("sqlite://")
    t = ms.create_table("/nowhere/t", SCHEMA)
    txn = ms.open_transaction()
    ms.allocate_write_id(txn, t.table_id)
    ms.commit(txn)
    assert ms.valid_write_ids(t.table_id).is_write_id_valid(1)


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite:///file::memory:?cache=shared&uri=true",
                                 "sqlite:///file:mem1?mode=memory&cache=shared&uri=true"])
def test_in_memory_urls_are_not_shareable(url):
    with pytest.raises(MetastoreError, match="in-memory database, private to one process"):
        check_shareable(url)


def test_shareable_urls(tmp_path):
    check_shareable(tmp_path / "m.db")
    check_shareable(f"sqlite:///{tmp_path / 'm.db'}")
    check_shareable("postgresql://user:secret@db.example/acid")
    check_shareable(None)  # the default store is a file
    with pytest.raises(MetastoreError, match="neither a URL"):
        check_shareable("::::")


# ---------------------------------------------------------------------------------------------
# stores that must exist
# ---------------------------------------------------------------------------------------------
def test_existing_refuses_a_missing_sqlite_file_and_creates_nothing(tmp_path):
    path = tmp_path / "missing.db"
    with pytest.raises(MetastoreNotFoundError, match=f"does not exist \\(no file {path}\\)") as info:
        Metastore.existing(path)
    assert isinstance(info.value, MetastoreError) and info.value.url == f"sqlite:///{path}"
    assert not path.exists()
    assert sqlite_store_missing(path)  # a default store that does not exist: simply no tables


def test_existing_opens_a_store_made_by_a_writer(tmp_path):
    path = tmp_path / "m.db"
    made = Metastore(path).create_table(tmp_path / "t", SCHEMA)
    assert not sqlite_store_missing(path)
    reader = Metastore.existing(f"sqlite:///{path}", busy_timeout=1.0)
    assert reader.list_tables() == [made] and reader.busy_timeout == 1.0


def test_existing_refuses_a_database_without_the_store(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE unrelated (x)")
    reader = Metastore.existing(path)  # the file exists: its tables are checked on first use
    with pytest.raises(MetastoreNotFoundError, match="holds no acidorc metastore"):
        reader.list_tables()
    with sqlite3.connect(path) as con:
        assert [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["unrelated"]


def test_existing_refuses_in_memory():
    with pytest.raises(MetastoreNotFoundError, match="in-memory"):
        Metastore.existing("sqlite://")


def test_an_existing_store_stays_one_when_pickled(tmp_path):
    path = tmp_path / "m.db"
    Metastore(path).list_tables()
    reader = pickle.loads(pickle.dumps(Metastore.existing(path)))
    path.unlink()
    (tmp_path / "m.db-wal").unlink(missing_ok=True)
    (tmp_path / "m.db-shm").unlink(missing_ok=True)
    with pytest.raises(MetastoreNotFoundError):
        reader.list_tables()
    assert not path.exists()
