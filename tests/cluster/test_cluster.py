"""acidorc on a real Spark standalone cluster, a table on S3 and the transaction store on
PostgreSQL: a driver in client deploy mode (``cluster_app.py``, a subprocess: this process
already hosts the local SparkContext) writes, reads, updates, deletes, merges, compacts and
vacuums one partitioned table; every result is checked against a plain Python model of the
rows, computed here. The executors run in a clean environment (``tests/servers/spark_cluster.py``):
they never had the store's URL, and every read and write still worked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from servers.jvm import QUICK_JVM_OPTIONS

pytestmark = pytest.mark.cluster

APP = Path(__file__).with_name("cluster_app.py")
DAYS = ("2026-11-20", "2026-11-21", "2026-11-22")


def row(i: int, kind: str | None = None, amount: int | None = None) -> dict:
    return {"id": i, "kind": kind if kind is not None else f"k{i % 4}",
            "amount": amount if amount is not None else i * 10, "day": DAYS[i % 3]}


STEPS = {
    "first": [row(i) for i in range(24)],
    "second": [row(i) for i in range(24, 36)],
    "update": {"condition": "id % 5 = 0", "set": {"amount": "amount + 1000"}},
    "delete": f"day = '{DAYS[1]}' AND id > 20",
    # 5..9 exist (matched), 22 was deleted and 100..103 never existed (inserted)
    "merge": [row(i, "merged", i * 100) for i in (5, 6, 7, 8, 9, 22, 100, 101, 102, 103)],
    "partition_filter": f"day = '{DAYS[0]}'",
}


class Model:
    """The table's rows by id, changed the way each operation is specified to change them."""

    def __init__(self):
        self.rows: dict[int, dict] = {}

    def append(self, rows):
        for r in rows:
            self.rows[r["id"]] = dict(r)

    def update_multiples_of_five(self) -> int:
        hit = [r for r in self.rows.values() if r["id"] % 5 == 0]
        for r in hit:
            r["amount"] += 1000
        return len(hit)

    def delete_day_above(self, day: str, above: int) -> int:
        gone = [i for i, r in self.rows.items() if r["day"] == day and i > above]
        for i in gone:
            del self.rows[i]
        return len(gone)

    def merge(self, source) -> tuple[int, int]:
        updated = inserted = 0
        for s in source:
            if s["id"] in self.rows:
                self.rows[s["id"]].update(amount=s["amount"], kind=s["kind"])
                updated += 1
            else:
                self.rows[s["id"]] = dict(s)
                inserted += 1
        return updated, inserted

    def sorted(self, day: str | None = None) -> list[dict]:
        return [dict(self.rows[i]) for i in sorted(self.rows) if day is None or self.rows[i]["day"] == day]


def driver_environment(home: Path) -> dict[str, str]:
    """The driver's environment: this one without acidorc's, AWS's or Spark's settings (the app
    configures everything itself) and with its own HOME."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACIDORC_", "AWS_", "SPARK_", "PYSPARK_"))}
    env["HOME"] = str(home)
    env["AWS_EC2_METADATA_DISABLED"] = "true"  # never ask a cloud for credentials
    return env


def run_driver(settings: dict, *, env: dict, cwd: Path, timeout: float = 600) -> tuple[int, str, str]:
    """Run ``cluster_app.py`` as the driver; on a timeout kill its whole process group (the
    driver's JVM included), so that nothing outlives the test."""
    app = subprocess.Popen([sys.executable, str(APP)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, start_new_session=True)
    try:
        stdout, stderr = app.communicate(json.dumps(settings), timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(app.pid, signal.SIGKILL)
        stdout, stderr = app.communicate()
        pytest.fail(f"the driver did not finish within {timeout:.0f}s:\n{stderr[-8000:]}")
    return app.returncode, stdout, stderr


def test_write_read_dml_compact_vacuum_on_a_cluster(spark_cluster, s3_server, s3_table_url, pg_store_url, tmp_path):
    work = tmp_path
    (work / "home").mkdir()
    output = work / "result.json"
    settings = {
        "master_url": spark_cluster.master_url,
        "table_url": s3_table_url,
        "store_url": pg_store_url,
        "storage_options": s3_server.storage_options,
        "steps": STEPS,
        "output": str(output),
        "java_options": QUICK_JVM_OPTIONS,
    }
    started = time.monotonic()
    returncode, stdout, stderr = run_driver(settings, env=driver_environment(work / "home"), cwd=work)
    elapsed = time.monotonic() - started
    assert returncode == 0, f"the driver failed ({returncode}):\n{stderr[-8000:]}\n{stdout[-2000:]}"
    got = json.loads(output.read_text())
    vacuum = got["vacuum"]
    print(f"\ncluster app: {elapsed:.1f}s; vacuum removed {len(vacuum['removedPaths'])} paths, kept "
          f"{vacuum['numKeptForLeases']} for leases; " + ", ".join(f"{k} {v:.1f}s" for k, v in got["timings"].items()))

    model = Model()
    model.append(STEPS["first"])
    model.append(STEPS["second"])
    assert got["after_writes"] == model.sorted()

    updated = model.update_multiples_of_five()
    assert got["update"]["numUpdatedRows"] == updated
    assert got["after_update"] == model.sorted()

    deleted = model.delete_day_above(DAYS[1], 20)
    assert got["delete"]["numDeletedRows"] == deleted
    assert got["after_delete"] == model.sorted()

    merged_updates, merged_inserts = model.merge(STEPS["merge"])
    assert (got["merge"]["numUpdatedRows"], got["merge"]["numInsertedRows"]) == (merged_updates, merged_inserts)
    assert got["after_merge"] == model.sorted()

    # compaction and vacuum change files, never rows: the rows after the minor compaction went
    # through the major one (a Spark job reading them on the executors) into the bases read here
    # after the vacuum; that each compaction keeps the rows is proven on every kind of history by
    # the engine-free and local-Spark suites, which read after each one
    assert got["after_vacuum"] == model.sorted()
    assert got["minor"]["numDataObjectsCompacted"] == got["major"]["numDataObjectsCompacted"] == len(DAYS)
    assert got["vacuum"]["removedPaths"], "vacuum after a major compaction removed nothing"
    assert got["after_vacuum_partition"] == model.sorted(DAYS[0])
    assert got["after_vacuum_toDF"] == model.sorted()
    # newest first; compactions (explicit, or automatic after a commit) keep the writes' order
    assert [op for op in got["history"] if op != "compaction"] == ["merge", "delete", "update", "insert", "insert"]
    assert got["history"][:2] == ["compaction", "compaction"]

    # the executors never had, nor needed, the store: no store URL in their environment, no
    # default store created in their HOME, and yet every read and write above ran on them
    executor = got["executor"]
    assert executor["home"] == str(spark_cluster.worker_home)
    assert not [k for k in executor["env"] if k.startswith(("ACIDORC", "AWS"))], executor["env"]
    assert executor["values_with_store"] == []
    assert not executor["store_dir_exists"]
    assert not (spark_cluster.worker_home / ".acidorc").exists()
