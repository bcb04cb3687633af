"""Hive's own readers on acidorc's streaming ingest, while the transaction batch is still open:
Hive 4.1's OrcRawRecordMerger honours ``_flush_length`` and the snapshot (committed, aborted
and open write ids of the batch), and so does Hive 2.3's reader; both return exactly the
committed transactions with the ROW__IDs acidorc's reader gives."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.metastore import Metastore
from acid_source.table import AcidTable
from interop.hive_reader import HiveAcidReader, make_valid_txns

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
COLS = [("id", "bigint"), ("name", "string")]
B0 = 536870912  # bucket 0, statement 0, V1


@pytest.fixture(scope="module")
def hive23():
    with HiveAcidReader() as reader:
        yield reader


def rows(ids):
    return pa.record_batch({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]}, schema=SCHEMA)


def acidorc_rows(location: str) -> list[tuple]:
    got = AcidTable.load(location).scan(includeRowId=True).toArrow()
    return sorted(((r["writeId"], r["bucketId"], r["rowId"]), i, n) for r, i, n in zip(
        got["ROW__ID"].to_pylist(), got["id"].to_pylist(), got["name"].to_pylist()))


def snapshot(location: str):
    store = Metastore(os.environ["ACIDORC_METASTORE_URL"])
    return store.valid_write_ids(store.get_table(location).table_id)


def hive_reads(hive4, hive23, location: str) -> tuple[list, list]:
    ids = snapshot(location)
    open_ids, aborted = list(ids.open_ids), list(ids.aborted_ids)
    four = hive4.read(location, hive4.valid_txns(1 << 40),
                      hive4.valid_write_ids("default.t", ids.high_watermark, open=open_ids, aborted=aborted),
                      columns=COLS)
    # Hive 2.3 knows transaction ids only: a write id plays its transaction here
    # (its split-update reader takes bucket_N_flush_length for a bucket file: its legacy ACID
    # reader is the one that honours the side file)
    legacy = {"transactional_properties": "legacy", "hive.txn.operational.properties": "0"}
    two = hive23.read(location, COLS, valid_txns=make_valid_txns(ids.high_watermark, open=open_ids, aborted=aborted),
                      with_row_id=True, conf=legacy)
    return sorted(four), sorted(two)


def test_hive_reads_an_open_batch_exactly_up_to_its_committed_transactions(hive4, hive23, tmp_path):
    location = str(tmp_path / "t")
    create_table(location, SCHEMA)
    conn = AcidTable.load(location).streamingConnection(transactionsPerBatch=5)
    expected: list[tuple] = []
    for n, ids in enumerate([[1, 2, 3], [4], [5, 6], [7]]):
        write_id = conn.beginTransaction()
        conn.write(rows(ids))
        if n == 1:
            conn.abortTransaction()
        else:
            conn.commitTransaction()
            expected += [((write_id, B0, r), i, f"n{i}") for r, i in enumerate(ids)]
        # the batch is open (write id 5 never begun; with n == 3 write id 4's rows are committed)
        assert acidorc_rows(location) == sorted(expected)
        four, two = hive_reads(hive4, hive23, location)
        assert four == sorted(expected), f"Hive 4 after transaction {n}"
        assert two == sorted(expected), f"Hive 2.3 after transaction {n}"
    open_txn = conn.beginTransaction()  # write id 5: rows written, not committed
    conn.write(rows([8, 9]))
    four, two = hive_reads(hive4, hive23, location)
    assert four == two == sorted(expected) and open_txn == 5
    conn.close()  # aborts write id 5, final footers, side files removed
    assert not any(p.endswith("_flush_length") for p in os.listdir(tmp_path / "t" / "delta_0000001_0000005"))
    four, two = hive_reads(hive4, hive23, location)
    assert four == two == acidorc_rows(location) == sorted(expected)
