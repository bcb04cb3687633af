"""A streaming producer SIGKILLed at random moments, round after round on one table: every
committed transaction stays readable (its rows lie below a recorded flush length) and nothing
else ever shows - not the open transaction's rows, not a half-written footer or side-file
entry. Once the dead batches' transactions time out, the clean-up and a major compaction keep
exactly those rows."""

from __future__ import annotations

import os
import random
import signal

import pyarrow as pa
import worker_context
from stream_producers import ids_of, produce_forever

from acid_source import create_table
from acid_source.maintenance.aborted import clean_aborted_writes
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64())])


def committed_rows(store: Metastore, table_id: int) -> list[int]:
    return sorted(i for w in store.write_ids_of(table_id, "committed") for i in ids_of(w))


def test_killed_producers_leave_exactly_their_committed_transactions(tmp_path):
    path = str(tmp_path / "t")
    url = f"sqlite:///{tmp_path}/store.db"
    create_table(path, SCHEMA, metastoreUrl=url)
    store = Metastore(url)
    table_id = store.get_table(path).table_id
    table = AcidTable.load(path, metastoreUrl=url)
    ctx = worker_context.forkserver()
    rng = random.Random(16)
    for round_ in range(4):
        ready = ctx.Event()
        p = ctx.Process(target=produce_forever, args=(path, url, rng.choice([3, 10, 50]), ready))
        p.start()
        assert ready.wait(60), "the producer never committed"
        # let it run a little: the kill lands anywhere in begin / write / footer / side file / commit
        p.join(rng.uniform(0.0, 0.5))
        os.kill(p.pid, signal.SIGKILL)
        p.join(30)
        expected = committed_rows(store, table_id)
        assert expected, f"round {round_}: nothing committed"
        got = table.toArrow()["id"].to_pylist()
        assert sorted(got) == expected, f"round {round_}"
    # the dead producers' open transactions expire; nothing of theirs appears
    store.abort_expired(0, table_id=table_id)
    clean_aborted_writes(path, metastoreUrl=url, expireAfterSeconds=0)
    assert sorted(table.toArrow()["id"].to_pylist()) == committed_rows(store, table_id)
    table.compact("major")
    assert sorted(table.toArrow()["id"].to_pylist()) == committed_rows(store, table_id)
    assert [d for d in os.listdir(path) if d.startswith("base_")], "the major compaction took the dead batches"
