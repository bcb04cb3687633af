"""Errors about a table on a real S3 server (SeaweedFS, tests/servers/s3.py) name their path as
the URL the user gave (``s3://bucket/...``), never as the file system's native path
(``bucket/...``): a corrupt file, a file or directory lost from storage, time travel below a
vacuumed compaction, a directory of original files the cleaner is removing. Also: a table whose
first write aborts still exists on S3 (its marker), and opens empty."""

from __future__ import annotations

import io
import pickle
import uuid

import pyarrow as pa
import pyarrow.orc as paorc
import pytest

from acid_source import AcidTable, create_table
from acid_source.errors import (
    CorruptFileError,
    MissingDataError,
    NotEnoughHistoryError,
    SnapshotFilesRemovedError,
)
from acid_source.layout.table_dirs import REMOVING_MARKER
from acid_source.resolve import resolve_table
from acid_source.scan.planner import TableScan
from acid_source.scan.reader import read_split
from acid_source.spark.options import spark_storage_options, write_spec
from acid_source.storage import TABLE_MARKER, Storage, option_pairs
from acid_source.writes import stage_write

SCHEMA = "id bigint, v string, p string"


@pytest.fixture(scope="module")
def shared_bucket(s3_server) -> str:
    """One bucket for the module's tables: SeaweedFS gives every bucket volumes of its own, and
    a test session has room for only so many (``-volume.max``)."""
    return s3_server.new_bucket()


@pytest.fixture
def s3_table_url(shared_bucket) -> str:
    """A table location of its own, in the module's bucket."""
    return f"s3://{shared_bucket}/warehouse/t-{uuid.uuid4().hex[:12]}"


def table_with_rows(s3_server, url: str, *batches: tuple[list[int], str]) -> AcidTable:
    create_table(url, SCHEMA, partitionColumns=["p"], storageOptions=s3_server.storage_options)
    t = AcidTable.load(url, storageOptions=s3_server.storage_options)
    for ids, p in batches:
        t.append(pa.table({"id": ids, "v": [f"v{i}" for i in ids], "p": [p] * len(ids)}))
    return t


def native(url: str) -> str:
    return url.removeprefix("s3://")


def data_objects(s3_server, url: str, directory_prefix: str) -> list[str]:
    """Native paths of the bucket files below ``url`` in directories named ``directory_prefix*``."""
    return sorted(p for p in s3_server.filesystem().find(native(url))
                  if p.rsplit("/", 2)[-2].startswith(directory_prefix) and p.rsplit("/", 1)[-1].startswith("bucket_"))


def assert_names_url(error, expected: str) -> None:
    """The error's path is ``expected`` (an s3:// URL), and so is what its message names."""
    assert expected.startswith("s3://")
    assert error.path == expected
    assert expected in str(error)
    assert native(expected) not in str(error).replace(expected, "")  # never also without its scheme
    assert pickle.loads(pickle.dumps(error)).path == expected


def test_a_truncated_data_file_is_a_corrupt_file_named_by_its_s3_url(s3_server, s3_table_url):
    t = table_with_rows(s3_server, s3_table_url, ([1, 2, 3], "a"))
    [path] = data_objects(s3_server, s3_table_url, "delta_")
    fs = s3_server.filesystem()
    fs.pipe_file(path, fs.cat_file(path)[:40])
    with pytest.raises(CorruptFileError) as info:
        t.toArrow()
    assert_names_url(info.value, f"s3://{path}")
    assert str(info.value).startswith(f"cannot read s3://{path}: ")


def test_a_data_file_corrupted_after_planning_is_named_by_its_s3_url_in_the_read_task(s3_server, s3_table_url):
    table_with_rows(s3_server, s3_table_url, ([1, 2, 3], "a"))
    resolved = resolve_table(s3_table_url, storage_options=option_pairs(s3_server.storage_options))
    ctx, splits = TableScan(resolved).plan(resolved.schema())
    [path] = data_objects(s3_server, s3_table_url, "delta_")
    fs = s3_server.filesystem()
    good = fs.cat_file(path)
    fs.pipe_file(path, good[:3] + b"\xff" * (len(good) - 3))  # same size, garbage after "ORC"
    with pytest.raises(CorruptFileError) as info:
        [batch for split in splits for batch in read_split(split, ctx)]
    assert_names_url(info.value, f"s3://{path}")


def test_a_directory_removed_after_planning_is_named_by_its_s3_url_in_the_read_task(s3_server, s3_table_url):
    table_with_rows(s3_server, s3_table_url, ([1, 2, 3], "a"))
    resolved = resolve_table(s3_table_url, storage_options=option_pairs(s3_server.storage_options))
    ctx, splits = TableScan(resolved).plan(resolved.schema())
    [path] = data_objects(s3_server, s3_table_url, "delta_")
    fs = s3_server.filesystem()
    fs.rm(fs.find(path.rsplit("/", 1)[0]))  # the whole delta directory, as a cleaner would
    with pytest.raises(SnapshotFilesRemovedError) as info:
        [batch for split in splits for batch in read_split(split, ctx)]
    assert_names_url(info.value, f"s3://{path}")
    assert str(info.value).startswith(f"s3://{path} is gone")


def test_a_directory_lost_from_s3_is_missing_data_named_by_its_s3_url(s3_server, s3_table_url):
    t = table_with_rows(s3_server, s3_table_url, ([1, 2], "a"), ([3], "a"))
    lost = data_objects(s3_server, s3_table_url, "delta_")[0].rsplit("/", 1)[0]
    fs = s3_server.filesystem()
    fs.rm(fs.find(lost))
    storage = Storage(s3_table_url, option_pairs(s3_server.storage_options))
    storage.remove_folders(lost)  # the folder object SeaweedFS keeps for an emptied prefix
    assert not s3_server.filesystem().exists(lost)
    with pytest.raises(MissingDataError) as info:
        t.toArrow()
    assert_names_url(info.value, f"{s3_table_url}/p=a")
    assert info.value.write_ids == [1]


def test_time_travel_below_a_vacuumed_compaction_names_the_s3_url(s3_server, s3_table_url):
    t = table_with_rows(s3_server, s3_table_url, ([1, 2], "a"), ([3], "a"), ([4], "b"))
    assert t.compact("major")["partitions"]
    assert t.vacuum(retentionSeconds=0)["numRemovedPaths"] > 0
    assert sorted(t.toArrow()["id"].to_pylist()) == [1, 2, 3, 4]
    with pytest.raises(NotEnoughHistoryError) as info:
        t.scan(versionAsOf=1).toArrow()
    assert_names_url(info.value, f"{s3_table_url}/p=a")
    assert str(info.value).startswith(f"{s3_table_url}/p=a: the snapshot ")


def put_original(s3_server, path: str, ids: list[int]) -> None:
    """A pre-ACID ORC file (plain columns, no ACID events) at the native ``path``."""
    buffer = io.BytesIO()
    paorc.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"o{i}" for i in ids]}), buffer)
    s3_server.filesystem().pipe_file(path, buffer.getvalue())


def test_a_union_subdirectory_of_originals_being_removed_is_refused_by_its_s3_url(s3_server, s3_table_url):
    options = s3_server.storage_options
    create_table(s3_table_url, "id bigint, v string", storageOptions=options)
    union = f"{native(s3_table_url)}/HIVE_UNION_SUBDIR_1"
    put_original(s3_server, f"{native(s3_table_url)}/000000_0", [1])
    put_original(s3_server, f"{union}/000000_0", [2, 3])
    t = AcidTable.load(s3_table_url, storageOptions=options)
    assert sorted(t.toArrow()["id"].to_pylist()) == [1, 2, 3]

    s3_server.filesystem().pipe_file(f"{union}/{REMOVING_MARKER}", b"")  # the cleaner's first step
    with pytest.raises(SnapshotFilesRemovedError) as info:
        t.toArrow()
    assert_names_url(info.value, f"s3://{union}")

    s3_server.filesystem().rm_file(f"{union}/000000_0")  # its second: the files go, the marker stays
    with pytest.raises(SnapshotFilesRemovedError) as info:
        t.toArrow()
    assert_names_url(info.value, f"s3://{union}")


def test_a_table_whose_first_write_aborts_exists_on_s3_and_opens_empty(s3_server, s3_table_url):
    storage = spark_storage_options(option_pairs(s3_server.storage_options))
    options = {"path": s3_table_url, "partitionColumns": "p", **storage}
    data = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
    staged = stage_write(write_spec(options), overwrite=False, data_schema=data)
    assert s3_server.filesystem().exists(f"{native(s3_table_url)}/{TABLE_MARKER}")
    staged.abort(reason="the test's first write fails")
    t = AcidTable.load(s3_table_url, storageOptions=s3_server.storage_options)
    assert t.toArrow().num_rows == 0 and t.version == 0
    t.append(pa.table({"id": [1], "v": ["x"], "p": ["a"]}))
    assert t.toArrow()["id"].to_pylist() == [1]
