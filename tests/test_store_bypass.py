"""Reads of a registered table always go through the store, however the location is
spelled; a store that is named but missing is an error, never "no store" (which would show a
dead writer's rows as committed)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from core_read import read_rows

from acid_source import create_table
from acid_source.errors import MetastoreError, MetastoreNotFoundError
from acid_source.resolve import resolve_table
from acid_source.specs import WriteSpec
from acid_source.table import AcidTable
from acid_source.writes import stage_write

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def table_with_dead_writer(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/store.db"
    monkeypatch.setenv("ACIDORC_METASTORE_URL", url)
    path = str(tmp_path / "t")
    create_table(path, SCHEMA)
    AcidTable.load(path).append(pa.table({"id": pa.array([1], pa.int64())}))
    staged = stage_write(WriteSpec(path=path), overwrite=False, data_schema=SCHEMA, heartbeat="none")
    task = staged.writer(0)
    task.write(pa.record_batch({"id": pa.array([666], pa.int64())}))
    task.close()  # files of write id 2 on disk; its driver "died": never committed
    return tmp_path, path, url


def test_double_slash_and_symlink_spellings_find_the_table(table_with_dead_writer):
    tmp_path, path, _ = table_with_dead_writer
    link = tmp_path / "alias"
    os.symlink(path, link)
    for spelling in ("/" + path, str(link), path + "/", str(tmp_path / "x" / ".." / "t")):
        assert [r["id"] for r in read_rows(spelling)] == [1], spelling
        assert resolve_table(spelling).registered


def test_a_named_store_that_does_not_exist_is_an_error(table_with_dead_writer):
    tmp_path, path, _ = table_with_dead_writer
    with pytest.raises(MetastoreNotFoundError):
        read_rows(path, metastoreUrl=f"sqlite:///{tmp_path}/typo.db")
    assert not (tmp_path / "typo.db").exists()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "::::"])
def test_unshareable_or_malformed_store_urls_are_refused(table_with_dead_writer, url):
    tmp_path, path, _ = table_with_dead_writer
    before = set(os.listdir(os.getcwd()))
    with pytest.raises(MetastoreError):
        read_rows(path, metastoreUrl=url)
    with pytest.raises(MetastoreError):
        stage_write(WriteSpec(path=path, metastore_url=url), overwrite=False, data_schema=SCHEMA)
    assert set(os.listdir(os.getcwd())) == before  # no stray SQLite file
