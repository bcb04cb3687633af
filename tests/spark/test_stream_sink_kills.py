"""A streaming query into an acidorc table, killed with SIGKILL and restarted from its
checkpoint several times, writes every input row exactly once.

The query runs in a separate Python process with its own local SparkSession (this file run as
a script), reading a directory of JSON files one file per micro-batch until the input is done
(``Trigger.AvailableNow``). Rounds: a kill at a random moment from start-up (planning, a
replay, the commit); a deterministic crash of Spark's commit process right after the store committed
the batch and before Spark's commit log recorded it (the ``commit.after_store`` crash point),
after which Spark replays the batch with new files that must be aborted, not committed. Three
Spark applications start one after the other (about 10 s each on an idle 2-core machine)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acid_source import faults

pytestmark = pytest.mark.spark

SCHEMA_DDL = "id BIGINT, grp STRING"
FILES, ROWS_PER_FILE = 3, 20


def child_main(src: str, checkpoint: str, path: str, started: str, java_options: str) -> None:
    """The streaming application: process every input file, one per micro-batch, then exit."""
    import acid_source

    spark = acid_source.get_or_create_session(
        appName="acidorc-stream-kills", master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
              "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC",
              "spark.driver.extraJavaOptions": java_options})
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.readStream.schema(SCHEMA_DDL).option("maxFilesPerTrigger", 1).json(src)
    query = (df.writeStream.format("acidorc").option("checkpointLocation", checkpoint)
             .option("partitionColumns", "grp").trigger(availableNow=True).start(path))
    tmp = started + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(query.id))
    os.rename(tmp, started)
    query.awaitTermination()
    spark.stop()


class Child:
    def __init__(self, tmp: Path, round_no: int, env: dict[str, str] | None = None):
        from servers.jvm import QUICK_JVM_OPTIONS  # the child's JVM flags (tests/ is not on its path)

        self.started = tmp / f"started-{round_no}"
        self.log = open(tmp / f"child-{round_no}.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(tmp / "in"), str(tmp / "ck"), str(tmp / "t"), str(self.started),
             QUICK_JVM_OPTIONS],
            env={**os.environ, **(env or {})}, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)  # its own process group: the JVM and its Python workers die with it

    def wait_started(self, deadline: float) -> str:
        while not self.started.exists():
            assert self.proc.poll() is None, f"the streaming process ended early ({self.proc.returncode})"
            assert time.monotonic() < deadline, "the streaming query did not start"
            time.sleep(0.05)  # polling a condition
        return self.started.read_text()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)
        self.log.close()

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        self.log.close()
        return code


def committed_batches(sink: str | None) -> int:
    """How many micro-batches of the sink the store has committed (-1 before the first)."""
    from acid_source.metastore import Metastore

    if sink is None:
        return -1
    last = Metastore().last_sink_batch(sink)
    return -1 if last is None else last


def wait_for(condition, deadline: float, what: str, child: Child) -> None:
    while not condition():
        assert child.proc.poll() is None, f"the streaming process ended while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)  # polling a condition


def test_killed_and_restarted_query_writes_every_row_once(tmp_path):
    from acid_source import AcidTable
    from acid_source.spark.stream_writer import sink_id_for_query

    seed = int(os.environ.get("ACIDORC_KILL_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    src = tmp_path / "in"
    src.mkdir()
    for f in range(FILES):
        ids = range(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE)
        (src / f"f{f:02d}.json").write_text("".join(json.dumps({"id": i, "grp": f"g{i % 3}"}) + "\n" for i in ids))
    t0 = time.monotonic()
    deadline = t0 + 240
    kills: list[tuple] = [("ACIDORC_KILL_SEED", seed, 0)]  # every failure message says how to replay it

    # 2: Spark's commit process dies right after the store committed the batch: Spark's commit
    # log never hears of it, and the restart replays the batch with new files
    child = Child(tmp_path, 2, {faults.ENV: "commit.after_store"})
    sink = sink_id_for_query(child.wait_started(deadline))
    assert child.wait(120) != 0  # the query fails: its commit process was killed
    assert committed_batches(sink) == 0  # batch 0 is in the store, not in Spark's commit log
    kills.append(("commit.after_store", committed_batches(sink), round(time.monotonic() - t0, 1)))

    # 3: killed at a random moment from the start: during the replay, the planning, a commit
    # (the kill point, chosen at random: ACIDORC_KILL_SEED replays one)
    child = Child(tmp_path, 3)
    child.wait_started(deadline)
    time.sleep(rng.uniform(0, 3.0))  # the kill point, chosen at random
    child.kill()
    kills.append(("random from start", committed_batches(sink), round(time.monotonic() - t0, 1)))

    # 4: the final run, to the end of the input
    final = Child(tmp_path, 4)
    assert final.wait(180) == 0, (tmp_path / "child-4.log").read_text()[-3000:]
    kills.append(("final run", committed_batches(sink), round(time.monotonic() - t0, 1)))
    print("rounds (what, last committed batch, seconds since start):", kills)

    ids = sorted(AcidTable.load(str(tmp_path / "t")).toArrow().column("id").to_pylist())
    assert ids == list(range(FILES * ROWS_PER_FILE)), kills
    # one commit per micro-batch of Spark's commit log, none twice (a batch may hold two files:
    # after a kill, files the source had logged but no batch had taken go into the next one)
    spark_batches = sorted(int(p.name) for p in (tmp_path / "ck" / "commits").iterdir() if p.name.isdigit())
    assert spark_batches == list(range(len(spark_batches))), kills
    assert committed_batches(sink) == spark_batches[-1], kills
    history = AcidTable.load(str(tmp_path / "t")).history()
    assert len(history) == len(spark_batches), kills
    # the batch committed before the commit process died was replayed after the restart, and
    # the replay's transaction aborted (the only aborts of this history: no batch is empty)
    from acid_source.metastore import Metastore

    table = Metastore().find_table(AcidTable.load(str(tmp_path / "t")).location)
    assert Metastore().write_ids_of(table.table_id, "aborted"), kills


if __name__ == "__main__":
    child_main(*sys.argv[1:6])
