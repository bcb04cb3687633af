"""The detached heartbeat process that keeps a Spark write's transaction alive: it beats
while the process it watches (the Spark driver) lives and the transaction is open, and stops
when either ends, so a dead driver's transaction still expires."""

from __future__ import annotations

import subprocess
import sys

from acid_source.heartbeat import spawn_heartbeat_process
from acid_source.metastore import Metastore


def _beat_seen(store, txn_id, first) -> bool:
    for _ in range(100000):  # bounded wait for the other process
        if store.txn_info(txn_id)["last_heartbeat"] > first:
            return True
    return False


def test_beats_while_the_driver_lives_and_stops_when_it_dies(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    store = Metastore(url)
    txn = store.open_transaction()
    driver = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    beater = spawn_heartbeat_process(url, txn, watch_pid=driver.pid, interval=0.05)
    assert _beat_seen(store, txn, store.txn_info(txn)["last_heartbeat"])
    driver.kill()
    driver.wait()
    assert beater.wait(timeout=30) == 0  # the driver is gone: no more beats
    assert store.txn_state(txn) == "open"  # ... and expiry will abort it
    assert store.abort_expired(0) == [txn]


def test_stops_once_the_transaction_ends(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    store = Metastore(url)
    txn = store.open_transaction()
    driver = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        beater = spawn_heartbeat_process(url, txn, watch_pid=driver.pid, interval=0.05)
        store.commit(txn)
        assert beater.wait(timeout=30) == 0
    finally:
        driver.kill()
        driver.wait()
