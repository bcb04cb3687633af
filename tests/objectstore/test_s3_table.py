"""Every verb of AcidTable on a real S3 server (SeaweedFS), engine-free, each result checked
against a plain Python model: create (empty), append, overwrite, scan, update / delete, minor
and major compaction, time travel (also below a compaction, before and after the vacuum),
vacuum, history, drop(purge)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from acid_source import AcidTable, create_table, drop_table
from acid_source.errors import NotEnoughHistoryError, TableLocationNotFoundError


def rows(t: AcidTable, **scan) -> dict:
    table = t.scan(**scan).toArrow()
    return dict(zip(table["id"].to_pylist(), zip(table["v"].to_pylist(), table["p"].to_pylist())))


def test_a_table_on_s3_through_every_verb(s3_server, s3_table_url):
    options = s3_server.storage_options
    create_table(s3_table_url, "id bigint, v string, p string", partitionColumns=["p"], storageOptions=options)
    t = AcidTable.load(s3_table_url, storageOptions=options)
    assert rows(t) == {} and t.version == 0
    versions: dict[int, dict] = {}

    def append(ids, p):
        nonlocal model
        metrics = t.append(pa.table({"id": ids, "v": [f"v{i}" for i in ids], "p": [p] * len(ids)}))
        model = {**model, **{i: (f"v{i}", p) for i in ids}}
        versions[metrics["writeId"]] = dict(model)

    model: dict = {}
    append([1, 2, 3], "a")
    append([4, 5], "b")
    append([6], "a")
    metrics = t.overwrite(pa.table({"id": [7, 8], "v": ["v7", "v8"]}), partition={"p": "b"})
    model = {k: v for k, v in model.items() if v[1] != "b"} | {7: ("v7", "b"), 8: ("v8", "b")}
    versions[metrics["writeId"]] = dict(model)
    metrics = t.delete("id = 2")
    del model[2]
    versions[metrics["writeId"]] = dict(model)
    metrics = t.update("p = 'a' AND id > 3", {"v": "'changed'"})
    model[6] = ("changed", "a")
    versions[metrics["writeId"]] = dict(model)
    assert rows(t) == model

    assert t.compact("minor")["numOutputDirs"] >= 1
    assert rows(t) == model
    for version, expected in versions.items():  # time travel below a minor compaction
        assert rows(t, versionAsOf=version) == expected, version
    append([9], "a")
    major = t.compact("major")
    assert "p=a" in major["partitions"]
    assert rows(t) == model
    for version, expected in versions.items():  # below a major compaction, its inputs still there
        assert rows(t, versionAsOf=version) == expected, version

    history = t.history()
    assert [h["version"] for h in history if h["version"] is not None] == sorted(versions, reverse=True)
    assert [h["operation"] for h in history].count("compaction") == 2

    removed = t.vacuum(retentionSeconds=0)
    assert removed["numRemovedPaths"] > 0
    assert all(p.startswith(s3_table_url + "/p=") for p in removed["removedPaths"])
    fs = s3_server.filesystem()
    for path in removed["removedPaths"]:  # gone entirely: no object, no folder left listed
        assert not fs.exists(path.removeprefix("s3://"))
    assert rows(t) == model
    with pytest.raises(NotEnoughHistoryError):  # as on a local disk: an error, never fewer rows
        rows(t, versionAsOf=min(versions))

    assert drop_table(s3_table_url, purge=True, storageOptions=options) is not None
    assert fs.find(s3_table_url.removeprefix("s3://")) == []
    with pytest.raises(TableLocationNotFoundError, match=s3_table_url):
        AcidTable.load(s3_table_url, storageOptions=options)


def test_one_recursive_listing_lists_every_directory_as_listing_each_does(s3_server, s3_table_url):
    """Storage.list_tree (what discovery and large scans use on object storage) against a
    list_dir of every directory, with a folder object ("p=x/") beside a table's directories."""
    from acid_source.storage import Storage, option_pairs

    options = s3_server.storage_options
    create_table(s3_table_url, "id bigint, p string", partitionColumns=["p"], storageOptions=options)
    t = AcidTable.load(s3_table_url, storageOptions=options)
    for p in ("a", "b"):
        t.append(pa.table({"id": [1, 2], "p": [p, p]}))
    t.delete("id = 1")
    root = s3_table_url.removeprefix("s3://")
    s3_server.filesystem().pipe(f"{root}/p=c/", b"")  # a folder object, as some tools write them
    storage = Storage(s3_table_url, option_pairs(options))
    tree = storage.list_tree(storage.root)
    assert len(tree) >= 7  # the root, three partitions, their delta and delete_delta directories
    for directory, entries in tree.items():
        assert entries == storage.list_dir(directory), directory
    assert [e.name for e in tree[storage.root.rstrip("/")] if e.is_dir] == ["p=a", "p=b", "p=c"]
