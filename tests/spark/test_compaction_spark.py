"""Compaction as a Spark job: ``AcidTable.forPath(spark, ...).compact(...)`` and
``optimize().where(...).executeCompaction()`` run one Spark task per (data object, writer id),
Spark reads the table identically before and after (at every version), and a task's typed
error reaches the driver as itself, with nothing left behind."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from hivegen import Event, HiveTable, bucket_property

from acid_source import create_table
from acid_source.errors import CorruptFileError
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])


def spark_rows(spark, path, version=None) -> list[tuple]:
    reader = spark.read.format("acidorc").option("includeRowId", "true")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted((r.id, r.v, r.p, tuple(r.ROW__ID)) for r in reader.load(path).collect())


def every_version(spark, path) -> dict:
    """Spark's read now and at the first version; every version engine-free (cheaper: the
    engine-free reads are compared version by version in tests/maintenance/test_compaction.py)."""
    t = AcidTable.load(path)
    versions = sorted(h["version"] for h in t.history() if h["version"] is not None)
    seen: dict = {v: sorted(map(str, t.scan(versionAsOf=v).toArrow().to_pylist())) for v in versions}
    return seen | {"spark": spark_rows(spark, path), "spark first": spark_rows(spark, path, versions[0])}


def spark_tasks_of(spark, group: str) -> list[int]:
    """The number of tasks of each stage of the jobs run under ``group``."""
    tracker = spark.sparkContext.statusTracker()
    counts = []
    for job in tracker.getJobIdsForGroup(group):
        for stage in tracker.getJobInfo(job).stageIds:
            counts.append(tracker.getStageInfo(stage).numTasks)
    return counts


@pytest.fixture
def path(tmp_path):
    p = str(tmp_path / "t")
    create_table(p, SCHEMA, partitionColumns=["p"], bucketColumns=["id"], numBuckets=2)
    t = AcidTable.load(p)
    for w in range(3):
        ids = list(range(w * 10, w * 10 + 10))
        t.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"w{w}"] * 10,
                           "p": ["a" if i % 3 else "b" for i in ids]}))
    t.delete("id % 4 = 1")
    t.update("id % 5 = 0", {"v": "'upd'"})
    return p


def test_minor_and_major_as_spark_jobs(spark, path):
    before = every_version(spark, path)
    t = AcidTable.forPath(spark, path)
    group = f"compaction-{uuid.uuid4().hex}"
    spark.sparkContext.setJobGroup(group, "minor compaction under test")
    try:
        minor = t.compact("minor")
    finally:
        spark.sparkContext.setJobGroup("", "")
    # two partitions, two hash buckets in each: four Spark tasks, one per (partition, bucket)
    assert spark_tasks_of(spark, group) == [4]
    t_id = minor["txnId"]
    assert sorted(minor["outputDirs"]) == sorted(
        f"p={p}/{k}_0000001_0000005_v{t_id:07d}" for p in "ab" for k in ("delta", "delete_delta"))
    written = [f for d in minor["outputDirs"] for f in (Path(path) / d).iterdir() if f.name.startswith("bucket_")]
    assert minor["numDataObjectsCompacted"] == 2 and minor["numOutputFiles"] == len(written) >= 6
    assert every_version(spark, path) == before

    major = t.optimize().where("p = 'a'").executeCompaction()
    assert major["partitions"] == ["p=a"] and major["outputDirs"] == [f"p=a/base_0000005_v{major['txnId']:07d}"]
    assert sorted(f.name for f in (Path(path) / major["outputDirs"][0]).iterdir()) == [
        "_orc_acid_version", "bucket_00000", "bucket_00001"]
    assert every_version(spark, path) == before
    assert t.compact("major")["partitions"] == ["p=b"]
    assert every_version(spark, path) == before
    ids = [r[0] for r in before["spark"]]
    assert ids == sorted(i for i in range(30) if i % 4 != 1)


def test_a_task_error_reaches_the_driver_typed_and_nothing_stays(spark, tmp_path):
    p = str(tmp_path / "t")
    create_table(p, pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t = AcidTable.forPath(spark, p)
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
    t.append(pa.table({"id": pa.array([4], pa.int64()), "v": ["d"]}))
    [delta] = [d for d in Path(p).iterdir() if d.name.startswith("delta_0000001")]
    b0 = bucket_property(0)
    HiveTable(p, [("id", "bigint"), ("v", "string")]).write_events(  # out of ROW__ID order: corrupt
        delta / "bucket_00000", [Event(0, 1, b0, r, 1, (r, "x")) for r in (2, 0, 1)], sort=False)
    listing = sorted(str(x) for x in Path(p).rglob("*"))
    with pytest.raises(CorruptFileError, match="ROW__ID order") as info:
        t.compact("minor")
    assert info.value.path == str(delta / "bucket_00000")
    assert sorted(str(x) for x in Path(p).rglob("*")) == listing
    assert [h["operation"] for h in AcidTable.load(p).history()] == ["insert", "insert"]
