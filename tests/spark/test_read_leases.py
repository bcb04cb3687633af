"""Spark reads and the cleaner: a read takes a lease on its snapshot when Spark plans it, for
``readLeaseSeconds``. Spark reuses a DataFrame's planned partitions for later queries, so a
DataFrame queried again reads the same files: while the lease lives the cleaner keeps them;
after it expired and the cleaner removed them the query fails with SnapshotFilesRemovedError,
never returning fewer rows."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest
from hivegen import HiveTable, delta_name

from acid_source import create_table
from acid_source.maintenance.cleaner import vacuum
from acid_source.metastore import Metastore

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int32())])


class Table:
    """A registered table in the session's store, written with the Hive-layout generator
    under real store transactions."""

    def __init__(self, tmp_path):
        self.url = os.environ["ACIDORC_METASTORE_URL"]  # the store Spark's workers use too
        self.root = tmp_path / "t"
        create_table(str(self.root), SCHEMA)
        self.store = Metastore(self.url)
        self.tid = self.store.get_table(str(self.root)).table_id
        self.hive = HiveTable(self.root, [("id", "int")])
        self.events: dict[int, list] = {}  # insert events by bucket

    def insert(self, ids):
        txn = self.store.open_transaction()
        wid = self.store.allocate_write_id(txn, self.tid)
        written = self.hive.insert(wid, {0: [(i,) for i in ids[: len(ids) // 2]],
                                         1: [(i,) for i in ids[len(ids) // 2:]]})
        for bucket, events in written.items():
            self.events.setdefault(bucket, []).extend(events)
        self.store.commit(txn, touched={self.tid: [""]})
        return wid

    def major(self, write_id):
        txn = self.store.open_transaction()
        self.hive.base(write_id, self.events, visibility=txn)
        self.store.commit(txn, touched={self.tid: [""]}, operation="compaction")


def _ids(df) -> list[int]:
    return sorted(r.id for r in df.collect())


def _table(tmp_path) -> Table:
    t = Table(tmp_path)
    t.insert([1, 2])
    t.insert([3, 4])
    return t


def test_a_planned_dataframe_keeps_its_files_while_its_lease_lives(spark, tmp_path):
    t = _table(tmp_path)
    df = spark.read.format("acidorc").load(str(t.root))
    assert _ids(df) == [1, 2, 3, 4]
    (lease,) = t.store.live_leases(t.tid)  # taken when Spark planned the query
    assert lease.write_ids.high_watermark == 2 and "Spark read" in lease.holder
    assert 3599 <= lease.ttl_seconds <= 3600
    t.major(2)
    report = vacuum(str(t.root), metastoreUrl=t.url, retentionSeconds=0)
    assert report["removedPaths"] == [] and report["numKeptForLeases"] == 2
    assert _ids(df) == [1, 2, 3, 4] and df.count() == 4  # the planned partitions, their files still there
    assert [x.lease_id for x in t.store.live_leases(t.tid)] == [lease.lease_id]  # reused, not planned again


def test_after_its_lease_expired_and_a_vacuum_a_dataframe_fails_with_a_typed_error(spark, tmp_path):
    t = _table(tmp_path)
    df = spark.read.format("acidorc").option("readLeaseSeconds", "60").load(str(t.root))
    assert df.count() == 4
    (lease,) = t.store.live_leases(t.tid)
    assert lease.ttl_seconds == 60
    t.major(2)
    an_hour_later = Metastore(t.url, clock=lambda: time.time() + 3600)
    report = vacuum(str(t.root), metastore=an_hour_later, retentionSeconds=0)
    assert sorted(os.path.basename(p) for p in report["removedPaths"]) == [delta_name(1, 1), delta_name(2, 2)]
    with pytest.raises(Exception, match="SnapshotFilesRemovedError") as info:
        df.collect()
    assert "Re-read the table" in str(info.value)
    assert _ids(spark.read.format("acidorc").load(str(t.root))) == [1, 2, 3, 4]  # a new read works


def test_an_expired_lease_whose_files_are_still_there_reads_correctly(spark, tmp_path):
    t = _table(tmp_path)
    df = spark.read.format("acidorc").option("readLeaseSeconds", "60").load(str(t.root))
    assert df.count() == 4
    an_hour_later = Metastore(t.url, clock=lambda: time.time() + 3600)
    assert an_hour_later.live_leases(t.tid) == []
    assert vacuum(str(t.root), metastore=an_hour_later, retentionSeconds=0)["removedPaths"] == []
    assert _ids(df) == [1, 2, 3, 4]


def test_read_lease_seconds_zero_takes_no_lease_and_bad_values_name_the_option(spark, tmp_path):
    t = _table(tmp_path)
    assert spark.read.format("acidorc").option("readLeaseSeconds", "0").load(str(t.root)).count() == 4
    assert t.store.live_leases(t.tid) == []
    with pytest.raises(Exception, match="readLeaseSeconds"):
        spark.read.format("acidorc").option("readLeaseSeconds", "-5").load(str(t.root)).count()


def test_a_spark_dml_leaves_no_lease_behind(spark, tmp_path):
    """The DML's own read needs no lease (its open transaction holds the cleaner's floor), and a
    lease taken for it would outlive the statement by readLeaseSeconds: after a DML and a
    compaction, vacuum removes the compaction's inputs at once."""
    from acid_source.table import AcidTable

    path = str(tmp_path / "dml")
    spark.range(10).write.format("acidorc").mode("append").save(path)
    t = AcidTable.forPath(spark, path)
    t.delete("id < 3")
    t.compact("major")
    report = t.vacuum(retentionSeconds=0)
    assert report["numLiveLeases"] == 0
    assert _ids(t.toDF()) == list(range(3, 10))
    assert [d for d in os.listdir(path) if not d.startswith("base_")] == []  # the inputs are gone


def test_an_aborted_spark_dml_leaves_no_lease_behind(spark, tmp_path):
    """A statement's lease ends with the statement, aborted too: an UPDATE that fails after it
    read its target (a SET value that raises for every matched row) leaves no lease, so after a
    compaction vacuum removes the compaction's inputs at once."""
    from acid_source.table import AcidTable

    path = str(tmp_path / "dml")
    spark.range(10).write.format("acidorc").mode("append").save(path)
    spark.range(10, 12).write.format("acidorc").mode("append").save(path)
    t = AcidTable.forPath(spark, path)
    with pytest.raises(Exception, match="bad SET value"):
        t.update("id < 3", {"id": "CAST(raise_error('bad SET value') AS BIGINT)"})
    t.compact("major")
    report = t.vacuum(retentionSeconds=0)
    assert report["numLiveLeases"] == 0 and report["numKeptForLeases"] == 0
    assert _ids(t.toDF()) == list(range(12))
    assert [d for d in os.listdir(path) if not d.startswith("base_")] == []  # the inputs are gone
