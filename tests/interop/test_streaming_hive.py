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
from interop.hive_reader import make_valid_txns

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
COLS = [("id", "bigint"), ("name", "string")]
B0 = 536870912  # bucket 0, statement 0, V1


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


@pytest.mark.parametrize("seed", [1, 2])
def test_random_producer_histories_read_alike_by_acidorc_hive4_and_hive23(hive4, hive23, tmp_path, seed):
    """Random histories on a partitioned, bucketed table: two producers interleaving commits,
    aborts and closes over several batches; after every step (batches open or not) Hive 4 and
    Hive 2.3 return exactly the committed rows with acidorc's ROW__IDs."""
    import random

    rng = random.Random(seed)
    location = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())])
    create_table(location, schema, partitionColumns=["day"], bucketColumns=["id"], numBuckets=2)
    table = AcidTable.load(location)
    conns = [table.streamingConnection(transactionsPerBatch=rng.choice([1, 2, 4])) for _ in range(2)]
    committed: list[tuple[int, str, str]] = []
    pending: list[list] = [[], []]
    next_id = iter(range(1, 10**6))

    def hive_rows(reader: str) -> list[tuple]:
        ids = snapshot(location)
        open_ids, aborted = list(ids.open_ids), list(ids.aborted_ids)
        found = []
        for day in sorted(os.listdir(location)):
            if not day.startswith("day="):
                continue
            where = os.path.join(location, day)
            if reader == "4":
                got = hive4.read(where, hive4.valid_txns(1 << 40), hive4.valid_write_ids(
                    "default.t", ids.high_watermark, open=open_ids, aborted=aborted), columns=COLS, bucket_count=2)
            else:
                got = hive23.read(where, COLS, bucket_count=2, with_row_id=True, valid_txns=make_valid_txns(
                    ids.high_watermark, open=open_ids, aborted=aborted),
                    conf={"transactional_properties": "legacy", "hive.txn.operational.properties": "0"})
            found += [r + (day[4:],) for r in got]
        return sorted(found)

    for step in range(14):
        n = rng.randrange(2)
        conn = conns[n]
        if conn.currentTransactionId is None:
            conn.beginTransaction()
            batch = [(next(next_id), rng.choice("ab")) for _ in range(rng.randint(1, 5))]
            conn.write(pa.table({"id": pa.array([i for i, _ in batch], pa.int64()),
                                 "name": [f"n{i}" for i, _ in batch], "day": [d for _, d in batch]}))
            pending[n] = batch
        elif rng.random() < 0.75:
            conn.commitTransaction()
            committed += [(i, f"n{i}", d) for i, d in pending[n]]
        else:
            conn.abortTransaction()
        got = table.scan(includeRowId=True).toArrow()
        ours = sorted(((r["writeId"], r["bucketId"], r["rowId"]), i, n_, d) for r, i, n_, d in zip(
            got["ROW__ID"].to_pylist(), got["id"].to_pylist(), got["name"].to_pylist(), got["day"].to_pylist()))
        assert sorted(r[1:] for r in ours) == sorted(committed), f"seed {seed} step {step}: acidorc"
        assert hive_rows("4") == ours, f"seed {seed} step {step}: Hive 4"
        assert hive_rows("2.3") == ours, f"seed {seed} step {step}: Hive 2.3"
    for conn in conns:
        conn.close()
    assert hive_rows("4") == hive_rows("2.3")
