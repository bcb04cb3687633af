"""Clean-up of failed writes: only the named table's silent transactions are aborted, and
only directories of write ids the store says are aborted are removed."""

from __future__ import annotations

import pyarrow as pa

from acid_source import clean_aborted_writes, create_table
from acid_source.metastore import Metastore
from acid_source.specs import WriteSpec
from acid_source.writes import stage_write

SCHEMA = pa.schema([("id", pa.int64())])


def _orphan(path, url):
    """Files of a write whose driver died before the commit (no heartbeat, no commit)."""
    staged = stage_write(WriteSpec(path=path, metastore_url=url), overwrite=False, data_schema=SCHEMA,
                         heartbeat="none")
    task = staged.writer(0)
    task.write(pa.record_batch({"id": pa.array([1], pa.int64())}))
    task.close()
    return staged.txnId


def test_clean_up_of_one_table_leaves_other_tables_transactions_alone(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for path in (a, b):
        create_table(path, SCHEMA, metastoreUrl=url)
    dead_a, dead_b = _orphan(a, url), _orphan(b, url)
    report = clean_aborted_writes(a, metastoreUrl=url, expireAfterSeconds=0)
    store = Metastore(url)
    assert report.expiredTransactions == [dead_a]
    assert (store.txn_state(dead_a), store.txn_state(dead_b)) == ("aborted", "open")
    assert [p.rsplit("/", 1)[-1] for p in report.removed] == ["delta_0000001_0000001_0000"]
    assert (tmp_path / "b" / "delta_0000001_0000001_0000").exists()


def test_dry_run_changes_nothing(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    a = str(tmp_path / "a")
    create_table(a, SCHEMA, metastoreUrl=url)
    dead = _orphan(a, url)
    report = clean_aborted_writes(a, metastoreUrl=url, expireAfterSeconds=0, dryRun=True)
    assert report.removed == [] and Metastore(url).txn_state(dead) == "open"


def test_clean_up_of_one_table_aborts_silent_transactions_holding_no_write_id(tmp_path):
    """A compaction writes under its txn id alone (``_vT``): a dead compactor holds no write id
    on its table, so the table's clean-up must still be able to expire it."""
    url = f"sqlite:///{tmp_path}/store.db"
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for path in (a, b):
        create_table(path, SCHEMA, metastoreUrl=url)
    store = Metastore(url)
    no_write_id = store.open_transaction(description="minor compaction")
    dead_b = _orphan(b, url)
    report = clean_aborted_writes(a, metastoreUrl=url, expireAfterSeconds=0)
    assert report.expiredTransactions == [no_write_id]
    assert (store.txn_state(no_write_id), store.txn_state(dead_b)) == ("aborted", "open")
