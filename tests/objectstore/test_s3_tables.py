"""Creating, opening and dropping tables on a real S3 server (SeaweedFS, tests/servers/s3.py):
storage is written before the store, storage failures are typed errors naming the s3:// URL, an
empty table exists by its marker object, and a purge leaves no object behind."""

from __future__ import annotations

import json
import pickle

import pyarrow as pa
import pytest

from acid_source import AcidTable, create_table, drop_table
from acid_source.errors import (
    InvalidArgumentError,
    StorageError,
    TableExistsError,
    TableLocationNotFoundError,
)
from acid_source.metastore import Metastore
from acid_source.storage import TABLE_MARKER

SCHEMA = "id bigint, v string"


def objects(s3_server, url: str) -> list[str]:
    return sorted(s3_server.filesystem().find(url.removeprefix("s3://")))


def delete_prefix(s3_server, url: str) -> None:
    """Every object under ``url``, as ``aws s3 rm --recursive`` deletes them; then the folder
    objects SeaweedFS keeps for emptied prefixes (AWS S3 keeps none), deepest first."""
    fs = s3_server.filesystem()
    prefix = url.removeprefix("s3://")
    fs.rm(fs.find(prefix))
    folders, todo = [], [prefix]
    while todo:
        folder = todo.pop()
        folders.append(folder)
        todo += [e["name"].rstrip("/") for e in fs.ls(folder, detail=True)
                 if e["type"] == "directory" and e["name"].rstrip("/") != folder]
    for folder in sorted(folders, key=len, reverse=True):
        fs.rm(folder, recursive=True)
    assert not s3_server.filesystem().exists(prefix)


def registered(url: str) -> bool:
    with Metastore(None) as store:
        return store.find_table(url) is not None


def test_create_without_credentials_is_a_storage_error_and_registers_nothing(s3_server, s3_table_url, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    endpoint_only = {"client_kwargs": {"endpoint_url": s3_server.endpoint}}
    with pytest.raises(StorageError) as info:
        create_table(s3_table_url, SCHEMA, storageOptions=endpoint_only)
    assert s3_table_url in str(info.value) and "NoCredentialsError" in str(info.value)
    assert info.value.path.startswith("s3://")
    assert pickle.loads(pickle.dumps(info.value)).args == info.value.args
    assert not registered(s3_table_url)
    assert objects(s3_server, s3_table_url) == []


def test_create_with_a_wrong_secret_names_the_url_and_leaves_the_store_alone(s3_server, s3_table_url):
    wrong = {**s3_server.storage_options, "secret": "not-the-secret"}
    with pytest.raises(StorageError) as info:
        create_table(s3_table_url, SCHEMA, storageOptions=wrong)
    assert s3_table_url in str(info.value) and "not-the-secret" not in str(info.value)
    assert not registered(s3_table_url)
    assert objects(s3_server, s3_table_url) == []


def test_an_empty_table_exists_by_its_marker_and_opens(s3_server, s3_table_url):
    info = create_table(s3_table_url, SCHEMA, storageOptions=s3_server.storage_options)
    assert info.location == s3_table_url
    bucket_path = s3_table_url.removeprefix("s3://")
    assert objects(s3_server, s3_table_url) == [f"{bucket_path}/{TABLE_MARKER}"]
    marker = json.loads(s3_server.filesystem().cat_file(f"{bucket_path}/{TABLE_MARKER}"))
    assert marker == {"format": "acidorc table", "formatVersion": 1, "location": s3_table_url}
    t = AcidTable.load(s3_table_url, storageOptions=s3_server.storage_options)
    assert t.scan().count() == 0 and t.version == 0
    assert t.schema.names == ["id", "v"]
    assert t.history() == []


def test_create_if_not_exists_and_a_second_create(s3_server, s3_table_url):
    options = s3_server.storage_options
    first = create_table(s3_table_url, SCHEMA, storageOptions=options)
    assert create_table(s3_table_url, SCHEMA, storageOptions=options, ifNotExists=True) == first
    with pytest.raises(TableExistsError):
        create_table(s3_table_url, SCHEMA, storageOptions=options)
    assert len(objects(s3_server, s3_table_url)) == 1


def test_a_failed_registration_takes_its_marker_back(s3_server, s3_table_url):
    with pytest.raises(Exception) as info:
        create_table(s3_table_url, SCHEMA, partitionColumns=["nope"], storageOptions=s3_server.storage_options)
    assert "nope" in str(info.value)
    assert not registered(s3_table_url)
    assert objects(s3_server, s3_table_url) == []
    with pytest.raises(TableLocationNotFoundError):  # nothing left that looks like a table
        AcidTable.load(s3_table_url, storageOptions=s3_server.storage_options)


def test_a_table_deleted_by_hand_is_location_not_found_with_its_url(s3_server, s3_table_url):
    options = s3_server.storage_options
    create_table(s3_table_url, SCHEMA, storageOptions=options)
    AcidTable.load(s3_table_url, storageOptions=options).append(pa.table({"id": [1], "v": ["a"]}))
    delete_prefix(s3_server, s3_table_url)
    with pytest.raises(TableLocationNotFoundError) as info:
        AcidTable.load(s3_table_url, storageOptions=options)
    assert str(info.value) == f"table path does not exist: {s3_table_url}"


def test_drop_purge_removes_every_object(s3_server, s3_table_url):
    options = s3_server.storage_options
    create_table(s3_table_url, "id bigint, p string", partitionColumns=["p"], storageOptions=options)
    t = AcidTable.load(s3_table_url, storageOptions=options)
    t.append(pa.table({"id": [1, 2], "p": ["a", "b"]}))
    t.delete("id = 1")
    assert len(objects(s3_server, s3_table_url)) > 4
    dropped = drop_table(s3_table_url, purge=True, storageOptions=options)
    assert dropped.location == s3_table_url
    assert objects(s3_server, s3_table_url) == []
    assert not registered(s3_table_url)
    with pytest.raises(TableLocationNotFoundError):
        AcidTable.load(s3_table_url, storageOptions=options)


def test_drop_purge_without_access_keeps_the_table_registered(s3_server, s3_table_url):
    options = s3_server.storage_options
    create_table(s3_table_url, SCHEMA, storageOptions=options)
    wrong = {**options, "secret": "not-the-secret"}
    with pytest.raises(StorageError, match=s3_table_url):
        drop_table(s3_table_url, purge=True, storageOptions=wrong)
    assert registered(s3_table_url)
    assert len(objects(s3_server, s3_table_url)) == 1


def test_storage_options_must_be_a_dict(s3_table_url):
    with pytest.raises(InvalidArgumentError, match="storageOptions"):
        create_table(s3_table_url, SCHEMA, storageOptions="key=secret")
    with pytest.raises(InvalidArgumentError, match="storageOptions"):
        AcidTable(s3_table_url, storageOptions=[("key",)])


_LOSING_CREATOR = """
import json, sys
from acid_source import create_table
from acid_source.errors import AcidError
url, options = sys.argv[1], json.loads(sys.argv[2])
try:
    create_table(url, "id bigint, v string", storageOptions=options)
    print("created")
except AcidError as exc:
    print(type(exc).__name__)
"""


@pytest.mark.parametrize("winner_writes", [False, True])
def test_two_creators_of_one_new_table_leave_the_winners_marker(s3_server, s3_table_url, tmp_path, winner_writes):
    """Both see no marker and both write it; the one whose registration loses takes back what
    it wrote only if nobody registered the table: the winner's table keeps its marker."""
    import os
    import subprocess
    import sys

    from acid_source.faults import PauseGate

    options = s3_server.storage_options
    with PauseGate(tmp_path / "gate", "create.marker_absent") as gate:
        loser = subprocess.Popen([sys.executable, "-c", _LOSING_CREATOR, s3_table_url, json.dumps(options)],
                                 env={**os.environ, **gate.env()}, stdout=subprocess.PIPE, text=True)
        try:
            gate.wait_reached()  # the loser saw no marker and has written none yet
            if winner_writes:  # the winner's table gets rows before the loser goes on
                AcidTable.create(s3_table_url, SCHEMA, storageOptions=options, ifNotExists=True).append(
                    pa.table({"id": [1], "v": ["a"]}))
            else:
                create_table(s3_table_url, SCHEMA, storageOptions=options)
            gate.release()
            out, _ = loser.communicate(timeout=120)
        finally:
            if loser.poll() is None:
                loser.kill()
    assert out.strip() == "TableExistsError"
    assert s3_table_url.removeprefix("s3://") + "/" + TABLE_MARKER in objects(s3_server, s3_table_url)
    rows = AcidTable.load(s3_table_url, storageOptions=options).toArrow().to_pylist()
    assert rows == ([{"id": 1, "v": "a"}] if winner_writes else [])
