"""The Hive 4.1 metastore fixtures (tests/servers/hive_metastore.py) against the real server:
an ACID table, transactions and write ids through pymetastore's thrift bindings, and the
housekeeper aborting a transaction nobody heartbeats."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.hms

LONG_MAX = 2**63 - 1  # Java's Long.MAX_VALUE: "no open transaction / write id" in Hive's strings
ORC = ("org.apache.hadoop.hive.ql.io.orc.OrcSerde", "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
       "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat")


def _bit(bits: bytes, i: int) -> bool:
    """Bit ``i`` of a Java ``BitSet.toByteArray()`` (little-endian)."""
    return i // 8 < len(bits) and bool(bits[i // 8] >> (i % 8) & 1)


def valid_txn_list(response) -> str:
    """Hive's ValidReadTxnList string (``hwm:minOpen:open,...:aborted,...``) of a
    ``GetOpenTxnsResponse``, as a Hive client sends it to ``get_valid_write_ids``."""
    ids = response.open_txns
    aborted = [t for i, t in enumerate(ids) if _bit(response.abortedBits, i)]
    still_open = [t for i, t in enumerate(ids) if not _bit(response.abortedBits, i)]
    min_open = response.min_open_txn if response.min_open_txn is not None else LONG_MAX
    return (f"{response.txn_high_water_mark}:{min_open}:{','.join(map(str, still_open))}:"
            f"{','.join(map(str, aborted))}")


def valid_write_id_list(table) -> str:
    """Hive's ValidReaderWriteIdList string (``db.table:hwm:minOpen:open,...:aborted,...``) of
    a ``TableValidWriteIds``."""
    ids = table.invalidWriteIds
    aborted = [w for i, w in enumerate(ids) if _bit(table.abortedBits, i)]
    still_open = [w for i, w in enumerate(ids) if not _bit(table.abortedBits, i)]
    min_open = table.minOpenWriteId if table.minOpenWriteId is not None else LONG_MAX
    return (f"{table.fullTableName}:{table.writeIdHighWaterMark}:{min_open}:{','.join(map(str, still_open))}:"
            f"{','.join(map(str, aborted))}")


def acid_orc_table(db: str, name: str, location: str):
    from pymetastore.hive_metastore.ttypes import FieldSchema, SerDeInfo, StorageDescriptor, Table

    serde, input_format, output_format = ORC
    sd = StorageDescriptor(cols=[FieldSchema("id", "bigint", ""), FieldSchema("name", "string", "")],
                           location=location, inputFormat=input_format, outputFormat=output_format,
                           compressed=False, numBuckets=-1,
                           serdeInfo=SerDeInfo(name=name, serializationLib=serde, parameters={}),
                           bucketCols=[], sortCols=[], parameters={})
    return Table(tableName=name, dbName=db, owner="acidorc", createTime=int(time.time()), lastAccessTime=0,
                 retention=0, sd=sd, partitionKeys=[], tableType="MANAGED_TABLE",
                 parameters={"transactional": "true", "orc.compress": "ZLIB"})


def test_acid_table_transactions_and_write_ids(hive_metastore):
    from pymetastore.hive_metastore.ttypes import (
        AbortTxnRequest,
        AllocateTableWriteIdsRequest,
        CommitTxnRequest,
        Database,
        GetTableRequest,
        GetValidWriteIdsRequest,
        NoSuchObjectException,
        OpenTxnRequest,
    )

    db, name = "acidorc_hms_smoke", "orders"
    location = (hive_metastore.warehouse / f"{db}.db" / name).as_uri()
    with hive_metastore.client() as c:
        assert c.get_config_value("metastore.txn.timeout", "") == "300000ms"
        try:  # the session's server: a second run of this test in it starts afresh
            c.drop_database(db, True, True)
        except NoSuchObjectException:
            pass
        c.create_database(Database(name=db, description="acidorc smoke test",
                                   locationUri=(hive_metastore.warehouse / f"{db}.db").as_uri(), parameters={}))
        c.create_table(acid_orc_table(db, name, location))
        table = c.get_table_req(GetTableRequest(dbName=db, tblName=name)).table
        assert table.parameters["transactional"] == "true"
        assert table.sd.location == f"file:{hive_metastore.warehouse}/{db}.db/{name}"  # Hadoop's Path: file:/...
        assert table.sd.serdeInfo.serializationLib == ORC[0]

        committed = c.open_txns(OpenTxnRequest(num_txns=1, user="acidorc", hostname="localhost")).txn_ids[0]
        aborted = c.open_txns(OpenTxnRequest(num_txns=1, user="acidorc", hostname="localhost")).txn_ids[0]
        assert aborted > committed
        write_ids = []
        for txn in (committed, aborted):
            response = c.allocate_table_write_ids(AllocateTableWriteIdsRequest(dbName=db, tableName=name,
                                                                               txnIds=[txn]))
            write_ids += [(w.txnId, w.writeId) for w in response.txnToWriteIds]
        assert write_ids == [(committed, 1), (aborted, 2)]
        c.commit_txn(CommitTxnRequest(txnid=committed))
        c.abort_txn(AbortTxnRequest(txnid=aborted))

        open_txns = c.get_open_txns()
        assert committed not in open_txns.open_txns
        assert _bit(open_txns.abortedBits, open_txns.open_txns.index(aborted))  # listed, as aborted
        response = c.get_valid_write_ids(GetValidWriteIdsRequest(fullTableNames=[f"{db}.{name}"],
                                                                 validTxnList=valid_txn_list(open_txns)))
        assert [valid_write_id_list(t) for t in response.tblValidWriteIds] == [
            "acidorc_hms_smoke.orders:2:9223372036854775807::2"]
        c.drop_database(db, True, True)
