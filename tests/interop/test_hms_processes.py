"""acidorc writers as real processes on a real Hive 4.1 metastore (issue 15): a driver killed
with SIGKILL between writing its files and committing, and a two-partition append held before
its commit. Each step is checked by acidorc's reader and by Hive 4's own reader, at the snapshot
Hive's client takes from the HMS (tests/interop/hive4.py), against literal rows with ROW__IDs.

The writer is a ``spawn`` child process running a staged write (``AcidTable.newWrite``): it
writes its files, tells the parent through a pipe, and waits; the parent then SIGKILLs it, or
tells it to commit. No sleeps: the parent waits on the pipe, and polls the HMS (``wait_for``)
for what the metastore decides on its own clock (the timeout of a silent transaction).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
from pathlib import Path

import pyarrow as pa
import pytest
from servers.hive_metastore import wait_for

import acid_source
from acid_source import AcidTable, clean_aborted_writes
from acid_source.metastore.hive import HiveMetastore

pytestmark = [pytest.mark.interop, pytest.mark.hms]

DB = "acidorc_hms_processes"
SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string())])
PSCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string()), ("day", pa.string())])
B0 = 536870912  # BucketCodec V1 of writer (bucket) 0
NO_OPEN = 9223372036854775807  # Hive's minOpenWriteId when no write id is open
_names = itertools.count()


def _create(server, prefix: str, schema: pa.Schema, partition_columns=()) -> tuple[str, str, Path]:
    """A new table in ``server``'s HMS: (table name without the database, db.table, location)."""
    server.database(DB)
    name = f"{prefix}_{os.getpid()}_{next(_names)}"
    location = server.warehouse / f"{DB}.db" / name
    acid_source.create_table(str(location), schema, name=f"{DB}.{name}", partitionColumns=list(partition_columns),
                             metastoreUrl=server.uri)
    return name, f"{DB}.{name}", location


def _rows(schema: pa.Schema, *values: tuple) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(schema.names, v)) for v in values], schema=schema)


def acid_rows(uri: str, full_name: str) -> list[tuple]:
    """acidorc's read through the HMS: ``((writeId, bucketId, rowId), cols...)``, sorted."""
    out = []
    for r in AcidTable.load(full_name, metastoreUrl=uri).scan(includeRowId=True).toArrow().to_pylist():
        rid = r.pop("ROW__ID")
        out.append(((rid["writeId"], rid["bucketId"], rid["rowId"]),) + tuple(r.values()))
    return sorted(out)


def _receive(conn, proc, timeout: float = 90.0):
    """The child's next message; fails at once if the child ends first."""
    from multiprocessing.connection import wait

    ready = wait([conn, proc.sentinel], timeout)
    if conn in ready:
        return conn.recv()
    if proc.sentinel in ready:
        raise AssertionError(f"the writer process ended (exit code {proc.exitcode}) before answering")
    raise AssertionError(f"the writer process did not answer within {timeout:.0f}s")


def _children_of(pid: int) -> list[tuple[int, str]]:
    """Processes whose parent is ``pid``: (pid, command line)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    found.append((int(entry), f.read().replace(b"\0", b" ").decode(errors="replace")))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _writer(uri: str, full_name: str, values: list[tuple], schema_names: list[str], conn,
            heartbeat_seconds: str | None) -> None:
    """The child: a staged append of ``values`` (one task), its files written and closed; sends
    ``(writeId, txnId, pid)``, then commits when the parent sends ``"commit"`` (and sends the
    metrics), or waits to be killed. Never aborts on its own: a dead driver does not either."""
    if heartbeat_seconds is not None:
        os.environ["ACIDORC_HEARTBEAT_SECONDS"] = heartbeat_seconds
    staged = AcidTable.load(full_name, metastoreUrl=uri).newWrite()
    task = staged.writer(0)
    batch = pa.Table.from_pylist([dict(zip(schema_names, v)) for v in values], schema=staged.schema)
    task.write(batch.to_batches()[0])
    result = task.close()
    conn.send((staged.writeId, staged.txnId, os.getpid()))
    if conn.poll(120) and conn.recv() == "commit":
        metrics = staged.commit([result])
        conn.send({k: metrics[k] for k in ("writeId", "txnId", "numOutputRows", "partitions")})
    conn.close()
    os._exit(0)  # leave the transaction as it is (no context manager, no abort)


def _start_writer(uri: str, full_name: str, values: list[tuple], names: list[str], *,
                  heartbeat_seconds: str | None = None):
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_writer, args=(uri, full_name, values, names, child, heartbeat_seconds), daemon=True)
    proc.start()
    child.close()
    return proc, parent


def _stop(proc) -> None:
    if proc.is_alive():
        proc.kill()
    proc.join(30)


# --- 1. a killed acidorc driver --------------------------------------------------------------

def test_a_killed_driver_is_aborted_by_the_hms_hidden_from_both_engines_and_cleaned(
        hive4, hive_metastore_short_timeout):
    server = hive_metastore_short_timeout
    uri = server.uri
    name, full, location = _create(server, "killed", SCHEMA)
    assert AcidTable.load(full, metastoreUrl=uri).append(_rows(SCHEMA, (1, "a"), (2, "b")))["writeId"] == 1
    committed = [((1, B0, 0), 1, "a"), ((1, B0, 1), 2, "b")]
    store = HiveMetastore(uri)

    # heartbeats every second, well inside the server's 6 s timeout: alive, the write stays open
    proc, conn = _start_writer(uri, full, [(3, "killed"), (4, "killed")], ["id", "v"], heartbeat_seconds="1")
    try:
        write_id, txn, pid = _receive(conn, proc)
        assert (write_id, pid) == (2, proc.pid)
        delta = location / "delta_0000002_0000002_0000"
        assert sorted(p.name for p in delta.iterdir() if p.name.startswith("bucket_")) == ["bucket_00000"]
        assert store.txn_state(txn) == "open"
        # the child's heartbeat thread is beating: the HMS saw a heartbeat after the open
        started = store.txn_info(txn)["started_at"]
        wait_for(lambda: store.txn_info(txn).get("last_heartbeat", 0) > started, timeout=30,
                 what=f"a heartbeat of transaction {txn} from the writer process")
        # the heartbeat is a thread of the writer, not a detached process that would outlive it
        assert _children_of(proc.pid) == []
        assert sorted(hive4.read_via_hms(uri, DB, name).rows) == committed
        assert acid_rows(uri, full) == committed
        # acidorc's clean-up leaves an open write alone, even told to expire silent ones at once:
        # on an HMS only the metastore times transactions out
        report = clean_aborted_writes(str(location), metastoreUrl=uri, expireAfterSeconds=0)
        assert (report.expiredTransactions, report.removed) == ([], [])
        assert delta.is_dir() and store.txn_state(txn) == "open"
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
        assert proc.exitcode == -signal.SIGKILL
    finally:
        conn.close()
        _stop(proc)

    # nobody aborts it but the metastore's housekeeper, once its heartbeats are 6 s late
    assert store.txn_state(txn) == "open"
    wait_for(lambda: store.txn_state(txn) == "aborted", timeout=server.txn_timeout_seconds + 30,
             what=f"the metastore aborting the killed writer's transaction {txn}")

    got = hive4.read_via_hms(uri, DB, name)
    assert sorted(got.rows) == committed
    assert got.valid_write_ids == f"{full}:2:{NO_OPEN}::2"
    assert acid_rows(uri, full) == committed
    assert delta.is_dir()  # still on storage: hidden by the snapshot, not yet removed

    report = clean_aborted_writes(str(location), metastoreUrl=uri)
    assert [Path(p).name for p in report.removed] == ["delta_0000002_0000002_0000"]
    assert report.expiredTransactions == []  # the HMS expires transactions itself
    assert not delta.exists()
    assert sorted(p.name for p in location.iterdir()) == ["delta_0000001_0000001_0000"]
    assert sorted(hive4.read_via_hms(uri, DB, name).rows) == committed
    assert acid_rows(uri, full) == committed


# --- 2. no partial commit is ever visible ----------------------------------------------------

def test_a_two_partition_append_in_another_process_is_visible_all_or_nothing(hive4, hive_metastore):
    uri = hive_metastore.uri
    name, full, location = _create(hive_metastore, "two_parts", PSCHEMA, ["day"])
    t = AcidTable.load(full, metastoreUrl=uri)
    assert t.append(_rows(PSCHEMA, (1, "a", "d1"), (2, "b", "d2")))["writeId"] == 1
    before = [((1, B0, 0), 1, "a", "d1"), ((1, B0, 0), 2, "b", "d2")]
    after = sorted(before + [((2, B0, 0), 10, "x", "d1"), ((2, B0, 1), 11, "y", "d1"),
                             ((2, B0, 0), 20, "z", "d2")])

    def both(expected: list[tuple]) -> None:
        assert acid_rows(uri, full) == expected, "acidorc"
        assert sorted(hive4.read_via_hms(uri, DB, name).rows) == expected, "Hive 4"

    proc, conn = _start_writer(uri, full, [(10, "x", "d1"), (11, "y", "d1"), (20, "z", "d2")],
                               ["id", "v", "day"])
    try:
        write_id, txn, _ = _receive(conn, proc)
        assert write_id == 2
        # both partitions' files are written, the transaction is open
        for day in ("d1", "d2"):
            delta = location / f"day={day}" / "delta_0000002_0000002_0000"
            assert sorted(p.name for p in delta.iterdir() if p.name.startswith("bucket_")) == ["bucket_00000"]
        assert HiveMetastore(uri).txn_state(txn) == "open"
        got = hive4.read_via_hms(uri, DB, name)
        assert sorted(got.rows) == before
        assert got.valid_write_ids == f"{full}:2:2:2:"  # write id 2 open in Hive's snapshot
        both(before)

        conn.send("commit")
        # while the child commits: every read shows it whole or not at all
        seen = []
        while not conn.poll(0):
            seen.append(acid_rows(uri, full))
            seen.append(sorted(hive4.read_via_hms(uri, DB, name).rows))
            assert seen[-2] in (before, after) and seen[-1] in (before, after), seen[-2:]
        metrics = _receive(conn, proc)
        assert metrics == {"writeId": 2, "txnId": txn, "numOutputRows": 3, "partitions": ["day=d1", "day=d2"]}
        proc.join(30)
        assert proc.exitcode == 0
    finally:
        conn.close()
        _stop(proc)
    assert HiveMetastore(uri).txn_state(txn) == "committed"
    both(after)
