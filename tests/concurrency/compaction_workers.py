"""Process bodies for tests/concurrency/test_compaction_readers.py (module level: a new process
unpickles them by name).

``serve`` runs the ``COMMANDS`` the test sends over a pipe (:mod:`process_workers`: one at a
time, a pause point's arming for that command only, ("ok", value) or ("error", exception)). A
command may talk to the test before it answers (``compact`` with ``hold``: ("held", output
dirs), then it waits for the test's "go").

``hold_a_scan`` is a reader: it starts iterating ``AcidScan.toBatches()``, reports its first
batch, waits for the test's word and reads on to the end.
"""

from __future__ import annotations

import os

import process_workers
import pyarrow as pa


def _table(location: str, url: str):
    from acid_source.table import AcidTable

    return AcidTable.load(location, metastoreUrl=url)


def rows_of(batch) -> list[tuple]:
    cols = batch.to_pydict()
    return list(zip(cols["id"], cols["v"], cols["p"]))


def hold_a_scan(location: str, url: str, to_test, from_test) -> None:
    """Start a scan, send ("reading", first batch's rows), wait for "go on", read to the end,
    send ("done", every row) - or ("error", exception)."""
    try:
        it = _table(location, url).scan().toBatches()
        rows = rows_of(next(it))
        to_test.send(("reading", list(rows)))
        assert from_test.recv() == "go on"
        for batch in it:
            rows += rows_of(batch)
        to_test.send(("done", sorted(rows)))
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        to_test.send(("error", process_workers.picklable(exc)))


# --- commands ---------------------------------------------------------------------------------
def compact(conn, location: str, url: str, kind: str, hold: bool = False) -> dict:
    """``compact_table`` run engine-free; with ``hold``, the tasks run, then the test hears
    ("held", output directories) and the commit waits for its "go"."""
    from acid_source.maintenance.compaction_tasks import run_tasks
    from acid_source.maintenance.compactor import compact_table

    def held(tasks):
        results = run_tasks(tasks)
        outputs = sorted({os.path.dirname(f.path) for r in results for f in r.files})
        conn.send(("held", outputs))
        assert conn.recv() == "go"
        return results

    return compact_table(location, kind, metastoreUrl=url, runTasks=held if hold else None)


def vacuum(_conn, location: str, url: str, retention_seconds: float = 0) -> dict:
    return _table(location, url).vacuum(retentionSeconds=retention_seconds)


def dml(_conn, location: str, url: str, kind: str, condition: str, set: dict | None = None) -> dict:
    """An engine-free UPDATE or DELETE (it pauses at dml.before_commit when armed)."""
    table = _table(location, url)
    return table.delete(condition) if kind == "delete" else table.update(condition, set)


def write(_conn, location: str, url: str, rows: dict, overwrite: bool = False, partition: dict | None = None) -> dict:
    table = _table(location, url)
    data = pa.table(rows)
    return table.overwrite(data, partition=partition) if overwrite else table.append(data)


COMMANDS = {"compact": compact, "vacuum": vacuum, "dml": dml, "write": write}


def serve(conn) -> None:
    import acid_source.table  # noqa: F401 - pay the imports before the first command

    process_workers.serve(conn, COMMANDS)
