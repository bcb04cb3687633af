"""acidorc's transaction store on a real Hive 4.1 metastore (tests/servers/hive_metastore.py):
tables by name, Hive's snapshot strings, and the typed errors of an unreachable metastore, a
table that is not transactional, a lock that is not granted and a transaction the metastore
aborted. (Hive 4's own reader and writer on the same tables: tests/interop/test_hive4_through_hms.py.)"""

from __future__ import annotations

import os
import threading
import uuid

import pyarrow as pa
import pytest
from pymetastore.hive_metastore import ttypes as tt
from servers.hive_metastore import wait_for
from servers.ports import free_ports

from acid_source import (
    AcidTable,
    LockTimeoutError,
    MetastoreUnreachableError,
    NotAnAcidTableError,
    TransactionStateError,
    UnsupportedOperationError,
    create_table,
)
from acid_source.metastore import connect
from acid_source.metastore.hive import HiveMetastore
from acid_source.storage import Storage
from acid_source.txn import Transaction

pytestmark = pytest.mark.hms

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("day", pa.string())])


@pytest.fixture
def table(hive_metastore, tmp_path):
    """A new partitioned table in the HMS: (uri, name, location)."""
    db = hive_metastore.database("acidorc_store")
    name = f"{db}.t_{uuid.uuid4().hex[:8]}"
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, name=name, partitionColumns=["day"], metastoreUrl=hive_metastore.uri)
    return hive_metastore.uri, name, location


def rows(t: AcidTable) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.scan().toArrow().to_pylist())


def test_tables_writes_and_partitions_live_in_the_hms(table, hive_metastore):
    uri, name, location = table
    t = AcidTable.load(name, metastoreUrl=uri)
    t.append(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "day": ["d1", "d1", "d2"]}))
    t.delete("id = 2")
    t.update("id = 3", {"v": "'C'"})
    assert rows(t) == [(1, "a", "d1"), (3, "C", "d2")]
    db, tbl = name.split(".")
    with hive_metastore.client() as client:
        assert sorted(client.get_partition_names(db, tbl, -1)) == ["day=d1", "day=d2"]
        table = client.get_table_req(tt.GetTableRequest(dbName=db, tblName=tbl)).table
    assert table.parameters["transactional"] == "true" and table.sd.location == f"file:{location}"
    store = HiveMetastore(uri)
    info = store.get_table(name=name)
    assert (info.location, info.partition_columns, info.schema) == (location, ("day",), SCHEMA)
    assert store.find_table(location) == info  # by location too
    # three commits, write ids 1..3, nothing open or aborted: Hive's string, exactly
    assert str(store.snapshot(info.table_id)[0]) == f"{name}:3:9223372036854775807::"


def test_an_aborted_write_is_hidden_by_the_hms_snapshot(table):
    uri, name, location = table
    t = AcidTable.load(name, metastoreUrl=uri)
    t.append(pa.table({"id": [1], "v": ["a"], "day": ["d1"]}))
    store = connect(uri)
    info = store.get_table(name=name)
    storage = Storage(location)
    with pytest.raises(RuntimeError, match="writer died"):
        with Transaction.begin(store, heartbeat="none") as txn:
            txn.allocate_write_id(info.table_id, storage, operation="insert")
            raise RuntimeError("writer died")
    write_ids, txns = store.snapshot(info.table_id)
    assert str(write_ids) == f"{name}:2:9223372036854775807::2"
    assert txns.is_valid(txn.txn_id) is False
    assert rows(t) == [(1, "a", "d1")]


def test_an_unreachable_metastore_is_a_typed_error_naming_it():
    (port,) = free_ports(1)
    url = f"thrift://127.0.0.1:{port}"
    with pytest.raises(MetastoreUnreachableError, match=f"127.0.0.1:{port}") as caught:
        AcidTable.load("db.t", metastoreUrl=url)
    assert caught.value.url == url


class _GappedSequenceConnection:
    """What Hive 4 answers while its transaction sequence has a recent gap: ``get_open_txns``
    lists the gap as open, ``get_open_txns_info`` cannot be sent (the server drops the
    connection; CI saw it in tests/metastore/test_store_contract.py)."""

    address = "thrift://gapped:9083"

    def call(self, method, *args):
        if method == "get_open_txns":  # 4 open, 5 the gap, 6 aborted, 7 open; hwm 7
            return tt.GetOpenTxnsResponse(txn_high_water_mark=7, open_txns=[4, 5, 6, 7], min_open_txn=4,
                                          abortedBits=bytes([0b100]))
        assert method == "get_open_txns_info", method
        raise MetastoreUnreachableError("stopped answering during get_open_txns_info", url=self.address)


def test_transaction_states_do_not_depend_on_the_listing_hive_4_cannot_send_during_a_gap():
    store = HiveMetastore("thrift://gapped:9083")
    store._connection = _GappedSequenceConnection()
    assert [store.txn_state(t) for t in (3, 4, 5, 6, 7)] == ["committed", "open", "open", "aborted", "open"]
    assert store.txn_info(6) == {"txn_id": 6, "state": "aborted"}
    assert store.txn_info(3) == {"txn_id": 3, "state": "committed"}
    with pytest.raises(TransactionStateError, match="8"):
        store.txn_info(8)


def test_a_table_that_is_not_transactional_is_refused_by_name(hive_metastore, tmp_path):
    db = hive_metastore.database("acidorc_store")
    sd = tt.StorageDescriptor(cols=[tt.FieldSchema(name="id", type="bigint")], location=f"file:{tmp_path}/plain",
                              inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
                              outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
                              serdeInfo=tt.SerDeInfo(serializationLib="org.apache.hadoop.hive.ql.io.orc.OrcSerde",
                                                     parameters={}),
                              bucketCols=[], sortCols=[], parameters={}, numBuckets=-1)
    with hive_metastore.client() as client:
        client.create_table(tt.Table(tableName="plain", dbName=db, sd=sd, partitionKeys=[], parameters={},
                                     tableType="EXTERNAL_TABLE"))
    with pytest.raises(NotAnAcidTableError, match=f"{db}.plain as a table that is not transactional") as caught:
        AcidTable.load(f"{db}.plain", metastoreUrl=hive_metastore.uri)
    assert hive_metastore.uri in str(caught.value)


def test_a_lock_that_is_not_granted_times_out_and_writes_nothing(table, hive_metastore):
    uri, name, location = table
    db, tbl = name.split(".")
    with hive_metastore.client() as client:
        holder = client.open_txns(tt.OpenTxnRequest(num_txns=1, user="hive", hostname="h")).txn_ids[0]
        lock = tt.LockComponent(type=tt.LockType.EXCLUSIVE, level=tt.LockLevel.TABLE, dbname=db, tablename=tbl,
                                operationType=tt.DataOperationType.INSERT, isTransactional=True)
        granted = client.lock(tt.LockRequest(component=[lock], txnid=holder, user="hive", hostname="h"))
        assert granted.state == tt.LockState.ACQUIRED
        try:
            t = AcidTable.load(name, metastoreUrl=f"{uri}?lockTimeout=0.5")
            with pytest.raises(LockTimeoutError, match=f"insert on {name}: .* shared-read lock within 0.5s") as caught:
                t.append(pa.table({"id": [1], "v": ["a"], "day": ["d1"]}))
            assert caught.value.table == name and uri in caught.value.url
        finally:
            client.abort_txn(tt.AbortTxnRequest(txnid=holder))
    assert not os.path.exists(location) or not any(e.startswith("day=") for e in os.listdir(location))
    store = HiveMetastore(uri)
    assert store.snapshot(store.get_table(name=name).table_id)[0].high_watermark == 0  # no write id allocated
    assert rows(AcidTable.load(name, metastoreUrl=uri)) == []


def test_a_transaction_the_metastore_aborted_fails_its_commit_and_leaves_nothing(hive_metastore_short_timeout,
                                                                                  tmp_path):
    server = hive_metastore_short_timeout
    db = server.database("acidorc_store")
    name = f"{db}.silent_{uuid.uuid4().hex[:8]}"
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, name=name, partitionColumns=["day"], metastoreUrl=server.uri)
    store = connect(server.uri)
    info = store.get_table(name=name)
    storage = Storage(location)
    with pytest.raises(TransactionStateError, match=f"insert on {name}.*{server.uri}.*hive.txn.timeout") as caught:
        with Transaction.begin(store, heartbeat="none") as txn:
            write_id = txn.allocate_write_id(info.table_id, storage, operation="insert")
            directory = f"{location}/day=d1/delta_{write_id:07d}_{write_id:07d}_0000"
            os.makedirs(directory)
            txn.record_written(info.table_id, [directory])
            wait_for(lambda: store.txn_state(txn.txn_id) == "aborted", timeout=server.txn_timeout_seconds + 30,
                     what=f"the metastore aborting silent transaction {txn.txn_id}")
            txn.set_commit("insert", {info.table_id: ["day=d1"]})
    assert caught.value.txn_id == txn.txn_id
    assert not os.path.exists(directory)
    assert rows(AcidTable.load(name, metastoreUrl=server.uri)) == []


def test_what_the_hms_does_not_keep_is_refused_by_name(table):
    uri, name, _ = table
    t = AcidTable.load(name, metastoreUrl=uri)
    t.append(pa.table({"id": [1], "v": ["a"], "day": ["d1"]}))
    with pytest.raises(UnsupportedOperationError, match=f"keeps no commit history of {name}"):
        t.history()
    with pytest.raises(UnsupportedOperationError, match="time travel"):
        t.scan(versionAsOf=1).toArrow()


@pytest.mark.spark
def test_spark_reads_a_table_by_name_through_the_hms(table, spark):
    uri, name, _ = table
    AcidTable.load(name, metastoreUrl=uri).append(pa.table({"id": [1, 2], "v": ["a", "b"], "day": ["d1", "d2"]}))
    df = spark.read.format("acidorc").option("metastoreUrl", uri).load(name)
    assert sorted(tuple(r) for r in df.collect()) == [(1, "a", "d1"), (2, "b", "d2")]


def test_a_dml_waits_for_hives_exclusive_write_lock_and_then_reads_what_committed_meanwhile(table, hive_metastore):
    """Hive 4 keeps two UPDATE / DELETE / MERGE of a table apart with its exclusive-write lock
    (its write-set check is off by default), and takes the lock before the snapshot. So an
    acidorc UPDATE queued behind another writer's lock must see rows committed while it waited
    (an insert, which that lock does not block): with the snapshot taken first it would miss them."""
    uri, name, _ = table
    db, tbl = name.split(".")
    t = AcidTable.load(name, metastoreUrl=uri)
    t.append(pa.table({"id": [1], "v": ["a"], "day": ["d1"]}))
    with hive_metastore.client() as client:
        holder = client.open_txns(tt.OpenTxnRequest(num_txns=1, user="hive", hostname="h")).txn_ids[0]
        lock = tt.LockComponent(type=4, level=tt.LockLevel.TABLE, dbname=db, tablename=tbl,  # EXCL_WRITE (Hive 4)
                                operationType=tt.DataOperationType.UPDATE, isTransactional=True)
        assert client.lock(tt.LockRequest(component=[lock], txnid=holder, user="hive", hostname="h")).state \
            == tt.LockState.ACQUIRED
        outcome: dict = {}

        def update():
            try:
                outcome["metrics"] = AcidTable.load(name, metastoreUrl=uri).update("id = 5", {"v": "'five'"})
            except BaseException as exc:  # reported by the assertion below
                outcome["error"] = exc

        worker = threading.Thread(target=update)
        worker.start()

        def waiting() -> bool:
            locks = client.show_locks(tt.ShowLocksRequest(dbname=db, tablename=tbl)).locks or []
            return any(lk.state == tt.LockState.WAITING for lk in locks)

        wait_for(waiting, timeout=60, what="acidorc's UPDATE queued behind the exclusive-write lock")
        t.append(pa.table({"id": [5], "v": ["e"], "day": ["d2"]}))  # an insert is not blocked by that lock
        client.commit_txn(tt.CommitTxnRequest(txnid=holder))
        worker.join(timeout=120)
    assert "error" not in outcome, outcome.get("error")
    assert rows(AcidTable.load(name, metastoreUrl=uri)) == [(1, "a", "d1"), (5, "five", "d2")]


@pytest.mark.spark
def test_spark_writes_to_hms_tables_and_creates_them_where_hive_would(table, hive_metastore, spark):
    import acid_source

    uri, name, _ = table
    df = spark.createDataFrame([(1, "a", "d1"), (2, "b", "d2")], "id bigint, v string, day string")
    df.write.format("acidorc").option("metastoreUrl", uri).mode("append").save(name)
    df.where("id = 2").write.format("acidorc").option("metastoreUrl", uri).mode("overwrite").save(name)
    acid_source.sql(spark, f"UPDATE {name} SET v = 'B' WHERE id = 2", metastoreUrl=uri)
    assert rows(AcidTable.load(name, metastoreUrl=uri)) == [(2, "B", "d2")]  # the overwrite replaced the table
    created = f"{name}_new"  # a new table by name: managed, under the database's location
    (df.write.format("acidorc").option("metastoreUrl", uri).option("partitionColumns", "day")
     .mode("append").save(created))
    info = HiveMetastore(uri).get_table(name=created)
    assert info.location == f"{hive_metastore.warehouse}/{created.split('.')[0]}.db/{created.split('.')[1]}"
    assert info.partition_columns == ("day",)
    assert rows(AcidTable.load(created, metastoreUrl=uri)) == [(1, "a", "d1"), (2, "b", "d2")]


def test_a_table_hive_created_is_read_with_its_layout_and_properties(hive_metastore, tmp_path, monkeypatch):
    """A bucketed table as Hive's DDL creates it (CLUSTERED BY (id) INTO 2 BUCKETS,
    TBLPROPERTIES NO_AUTO_COMPACTION and a per-table compactor threshold): acidorc takes its
    layout and properties from the HMS, routes rows to Hive's buckets, and leaves it
    uncompacted although its threshold is passed."""
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "true")
    db = hive_metastore.database("acidorc_store")
    name = f"{db}.hive_made_{uuid.uuid4().hex[:6]}"
    location = tmp_path / "hive_made"
    serde = tt.SerDeInfo(serializationLib="org.apache.hadoop.hive.ql.io.orc.OrcSerde", parameters={})
    cols = [tt.FieldSchema(name="ID", type="int"), tt.FieldSchema(name="note", type="varchar(8)")]
    sd = tt.StorageDescriptor(cols=cols, location=f"file:{location}",
                              inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
                              outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat", serdeInfo=serde,
                              bucketCols=["id"], numBuckets=2, sortCols=[], parameters={})
    params = {"transactional": "true", "bucketing_version": "2", "NO_AUTO_COMPACTION": "true",
              "compactorthreshold.hive.compactor.delta.num.threshold": "1", "orc.compress": "SNAPPY"}
    with hive_metastore.client() as client:
        client.create_table(tt.Table(tableName=name.split(".")[1], dbName=db, sd=sd, partitionKeys=[],
                                     parameters=params, tableType="MANAGED_TABLE"))
    info = HiveMetastore(hive_metastore.uri).get_table(name=name)
    assert (info.schema, info.bucket_columns, info.num_buckets, info.bucketing_version, info.compression) == (
        pa.schema([("id", pa.int32()), ("note", pa.string())]), ("id",), 2, 2, "snappy")
    t = AcidTable.load(name, metastoreUrl=hive_metastore.uri)
    for i in range(3):
        t.append(pa.table({"id": pa.array([1, 2, 3, 4], pa.int32()), "note": [f"n{i}"] * 4}))
    assert sorted(os.listdir(location)) == [f"delta_000000{w}_000000{w}_0000" for w in (1, 2, 3)]  # not compacted
    assert sorted(os.listdir(location / "delta_0000001_0000001_0000")) == [
        "_orc_acid_version", "bucket_00000", "bucket_00001"]
    assert len(rows(t)) == 12


def test_a_live_writer_beats_faster_than_a_short_hive_txn_timeout(hive_metastore_short_timeout):
    """The heartbeat interval follows the metastore's hive.txn.timeout (6 s here, below the
    default 30 s interval): a live transaction outlives several timeouts."""
    server = hive_metastore_short_timeout
    store = connect(server.uri)
    assert store.txn_timeout_seconds() == server.txn_timeout_seconds
    with Transaction.begin(store) as txn:
        def times():  # (started, last heartbeat), or None while Hive cannot list them (a gap)
            info = store.txn_info(txn.txn_id)
            return (info["started_at"], info["last_heartbeat"]) if "started_at" in info else None

        started, _ = wait_for(times, timeout=30, what=f"the times of transaction {txn.txn_id}")
        wait_for(lambda: (now := times()) and now[1] - started > 1.5 * server.txn_timeout_seconds,
                 timeout=server.txn_timeout_seconds * 4, what=f"heartbeats of transaction {txn.txn_id}")
        assert store.txn_state(txn.txn_id) == "open"
        txn.set_commit("insert", {})
    assert store.txn_state(txn.txn_id) == "committed"
