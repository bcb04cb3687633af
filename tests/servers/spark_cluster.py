"""A real Spark standalone cluster for the tests: one Master and one Worker (1 core, 1 GiB),
started from pyspark's own ``bin/spark-class`` (the pip package has no start scripts) on random
loopback ports.

``spark_cluster`` (session) starts it on first use, in about 10 s, and waits until the worker
has registered with the master; applications connect to ``spark_cluster.master_url``. The
worker -- and so every executor it launches -- runs in a clean environment: its own fresh
HOME, no ``ACIDORC_*``, ``AWS_*`` or other ``SPARK_*`` / ``PYSPARK_*`` variables, only what
running Java and this environment's Python needs (``PATH``, ``JAVA_HOME`` if set,
``SPARK_HOME``, ``PYSPARK_PYTHON``). So whatever an executor knows about the transaction store
or the object store reached it through the application, never through the machine. Both
process groups are killed when the run ends. A missing Java or pyspark fails the tests that
need the cluster, never skips them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from .jvm import QUICK_JVM_OPTIONS
from .ports import free_ports, wait_until

#: environment variables the master and worker may inherit from the test process (nothing else)
_PASSED_THROUGH = ("JAVA_HOME", "LANG", "LC_ALL", "TZ")


def spark_home() -> Path:
    """pyspark's installation directory: it holds ``bin/spark-class`` and ``jars/``."""
    try:
        import pyspark
    except ImportError:
        raise RuntimeError("the cluster tests need pyspark in this environment (part of acidorc's test extra; "
                           "./scripts/run-tests installs it)") from None
    home = Path(pyspark.__file__).parent
    if not (home / "bin" / "spark-class").exists():
        raise RuntimeError(f"pyspark at {home} has no bin/spark-class; reinstall pyspark")
    return home


def java_bin_dir() -> str:
    java = Path(os.environ["JAVA_HOME"]) / "bin" / "java" if os.environ.get("JAVA_HOME") else None
    if java is None or not java.exists():
        found = shutil.which("java")
        if found is None:
            raise RuntimeError("the cluster tests need Java 17+ (`java` on PATH or JAVA_HOME)")
        java = Path(found)
    return str(java.parent)


def clean_environment(home: Path) -> dict[str, str]:
    """The whole environment of a cluster daemon: ``home`` as HOME, a minimal PATH, Spark's and
    this environment's Python; nothing of acidorc's, AWS's or the test process's Spark."""
    env = {key: os.environ[key] for key in _PASSED_THROUGH if os.environ.get(key)}
    env.update({
        "HOME": str(home),
        "PATH": os.pathsep.join(dict.fromkeys([java_bin_dir(), "/usr/local/bin", "/usr/bin", "/bin"])),
        "SPARK_HOME": str(spark_home()),
        # executors start Python workers with the driver's choice; this is the same interpreter
        # (acidorc is installed in it), for anything the worker starts on its own
        "PYSPARK_PYTHON": sys.executable,
        # the master's and worker's own JVMs (spark-class reads it for daemons): C1, serial GC
        "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM_OPTIONS,
    })
    return env


@dataclass
class SparkCluster:
    master_url: str
    master_ui: str
    workdir: Path
    worker_home: Path  # the worker's (and its executors') HOME
    processes: list[subprocess.Popen]
    logs: list[Path]

    def state(self) -> dict:
        """The master's view of the cluster (its web UI's JSON)."""
        with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=5) as response:
            return json.load(response)

    def alive_workers(self) -> int:
        try:
            return int(self.state().get("aliveworkers", 0))
        except Exception:  # noqa: BLE001 - not up yet: connection refused, ...
            return 0

    def log_tail(self, lines: int = 60) -> str:
        out = []
        for log in self.logs:
            try:
                text = log.read_text(errors="replace").splitlines()[-lines:]
            except OSError as exc:
                text = [f"(cannot read: {exc})"]
            out.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(out)

    def stop(self) -> None:
        for process in reversed(self.processes):  # the worker (and its executors) first
            _kill_group(process, signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
            _kill_group(process, signal.SIGKILL)  # anything of the group still left
            process.wait(timeout=30)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)  # started with start_new_session: its pid is the group id
    except ProcessLookupError:
        pass


def _start(args: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd,
                                env=env, start_new_session=True)


def start_spark_cluster(workdir: Path | None = None) -> SparkCluster:
    # under /tmp, not pytest's base directory: short paths, and the worker's HOME is nobody else's
    workdir = Path(workdir or tempfile.mkdtemp(prefix="acidorc-spark-cluster-"))
    spark_class = str(spark_home() / "bin" / "spark-class")
    master_port, master_ui_port, worker_port, worker_ui_port = free_ports(4)
    homes = {name: workdir / f"{name}-home" for name in ("master", "worker")}
    for home in homes.values():
        home.mkdir(parents=True)
    (workdir / "worker-work").mkdir()
    master_url = f"spark://127.0.0.1:{master_port}"
    cluster = SparkCluster(master_url, f"http://127.0.0.1:{master_ui_port}", workdir, homes["worker"], [], [])
    try:
        cluster.logs.append(workdir / "master.log")
        cluster.processes.append(_start(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(master_port), "--webui-port", str(master_ui_port)],
            clean_environment(homes["master"]), homes["master"], cluster.logs[-1]))
        cluster.logs.append(workdir / "worker.log")
        cluster.processes.append(_start(
            [spark_class, "org.apache.spark.deploy.worker.Worker", master_url, "--cores", "1", "--memory", "1g",
             "--host", "127.0.0.1", "--port", str(worker_port), "--webui-port", str(worker_ui_port),
             "--work-dir", str(workdir / "worker-work")],
            clean_environment(homes["worker"]), homes["worker"], cluster.logs[-1]))
        wait_until(lambda: cluster.alive_workers() >= 1, timeout=90,
                   what=f"Spark standalone master {master_url} with one registered worker",
                   alive=lambda: all(p.poll() is None for p in cluster.processes))
    except BaseException as exc:
        tail = cluster.log_tail()
        cluster.stop()
        if isinstance(exc, RuntimeError):
            raise RuntimeError(f"{exc}\n{tail}") from None
        raise
    return cluster


@pytest.fixture(scope="session")
def spark_cluster():
    cluster = start_spark_cluster()
    yield cluster
    cluster.stop()
