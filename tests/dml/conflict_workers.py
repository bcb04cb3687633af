"""Process bodies for the conflict tests (module level: a new process unpickles
them by name).

``serve`` runs the ``COMMANDS`` the test sends over a pipe (:mod:`process_workers`), so that one
process runs many cells (starting a process costs more than a whole cell): one at a time, a
pause point's arming for that command only, the answer ("ok", metrics) or ("error", the
exception). Commands get the pipe first and do not use it (``_conn``).
"""

from __future__ import annotations

import process_workers
import pyarrow as pa

HELD_WRITE = "test.write.before_commit"  # where held_write waits (a pause step of this suite)


def _table(location: str, url: str, mode: str | None = None):
    from acid_source.table import AcidTable

    return AcidTable.load(location, metastoreUrl=url, conflictDetection=mode)


def dml(_conn, location: str, url: str, mode: str, kind: str, condition: str, set: dict | None = None) -> dict:
    """An engine-free DELETE or UPDATE (it pauses at dml.before_commit when armed)."""
    table = _table(location, url, mode)
    if kind == "delete":
        return table.delete(condition)
    return table.update(condition, set)


def write(_conn, location: str, url: str, rows: dict, overwrite: bool = False, partition: dict | None = None) -> dict:
    table = _table(location, url)
    data = pa.table(rows)
    return table.overwrite(data, partition=partition) if overwrite else table.append(data)


def held_write(_conn, location: str, url: str, rows: dict, overwrite: bool = False,
               partition: str | None = None) -> dict:
    """What ``AcidTable.append`` / ``overwrite`` do, with a pause point between the finished
    task and the commit, so a test can commit another job while this one is open."""
    from acid_source.faults import pause_point
    from acid_source.table import AcidTable

    data = pa.table(rows)
    with AcidTable(location, metastoreUrl=url).newWrite("overwrite" if overwrite else "append", partition) as staged:
        task = staged.writer(0)
        for batch in data.to_batches():
            task.write(batch)
        result = task.close()
        pause_point(HELD_WRITE)
        metrics = staged.commit([result])
    return {k: metrics[k] for k in ("operation", "writeId", "txnId")}


COMMANDS = {"dml": dml, "write": write, "held_write": held_write}


def serve(conn) -> None:
    process_workers.serve(conn, COMMANDS)
