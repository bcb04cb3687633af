"""A Spark driver killed (SIGKILL, JVM included) in the middle of a write: readers see exactly
the committed data, and clean-up removes what the dead write left."""

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from core_read import data, read_rows
from servers.jvm import QUICK_JVM_OPTIONS
from writers import rows, write

from acid_source import clean_aborted_writes

pytestmark = pytest.mark.spark


def _wait_for_signal(fifo, proc, deadline_seconds=240) -> str:
    """Read the app's message from the FIFO; give up if the app dies first."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        received = b""
        for _ in range(deadline_seconds):
            ready, _, _ = select.select([fd], [], [], 1.0)
            if ready:
                chunk = os.read(fd, 1024)
                received += chunk
                if received.endswith(b"\n"):
                    return received.decode()
            if proc.poll() is not None:
                return f"the Spark application exited with {proc.returncode}"
        return "no signal from the Spark application"
    finally:
        os.close(fd)


def test_killed_driver(tmp_path):
    t = tmp_path / "t"
    write(t, [[rows([1, 2])]])
    fifo = tmp_path / "signal"
    os.mkfifo(fifo)
    app = Path(__file__).with_name("spark_writer_app.py")
    log = open(tmp_path / "driver.log", "wb")
    proc = subprocess.Popen([sys.executable, str(app), str(t), str(fifo), os.environ["ACIDORC_METASTORE_URL"],
                             QUICK_JVM_OPTIONS],
                            start_new_session=True, stdout=log, stderr=log)
    try:
        assert _wait_for_signal(fifo, proc) == "files written\n", (tmp_path / "driver.log").read_text()[-3000:]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM and Python workers
        proc.wait(60)
    orphans = list((t / "delta_0000002_0000002_0000").glob("bucket_*"))
    assert orphans, "the killed write should have left partition 0's file"
    assert data(read_rows(t), "id") == [(1,), (2,)]
    report = clean_aborted_writes(str(t), expireAfterSeconds=0)
    assert [Path(p).name for p in report.removed] == ["delta_0000002_0000002_0000"]
    assert sorted(p.name for p in t.iterdir()) == ["delta_0000001_0000001_0000"]
    assert data(read_rows(t), "id") == [(1,), (2,)]
