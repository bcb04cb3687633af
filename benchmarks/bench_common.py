"""What every benchmark does around its own measurements: the timestamped log, the Spark session,
a scratch directory with its own transaction store, CPU metering and round-robin timing, cProfile
helpers, the machine record, and the report and results file.

Kept apart from bench_table.py, which builds the read benchmark's table: that module is imported
by its spawned generator processes and knows nothing of Spark, timing or reports.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shutil
import statistics
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

HERE = Path(__file__).resolve().parent
MASTER = "local[2]"

_T0 = time.perf_counter()


# --- log, paths, stamps -------------------------------------------------------------------------------
def log(msg: str) -> None:
    """A progress line, prefixed with the seconds since the benchmark started."""
    print(f"[{time.perf_counter() - _T0:6.1f}s] {msg}", flush=True)


def timestamp() -> str:
    """The run's name in results files: local time, ``YYYYmmdd-HHMMSS``."""
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def rel_path(path: Path) -> str:
    """``path`` relative to the repository root when inside it (as results files cite it)."""
    try:
        return str(path.resolve().relative_to(HERE.parent))
    except ValueError:
        return str(path)


def data_files(path: Path | str) -> list[Path]:
    """The files a write left under ``path``: Spark's and acidorc's markers (``_*``, ``.*``)
    and Hadoop's ``.crc`` checksums aside."""
    return [f for f in Path(path).rglob("*") if f.is_file() and not f.name.startswith(("_", "."))
            and not f.name.endswith(".crc")]


# --- the machine --------------------------------------------------------------------------------------
def spark_version() -> str:
    import pyspark

    return pyspark.__version__


def load_average() -> float | None:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return None


def machine_info(driver_memory: str, loads, contention) -> dict:
    """The ``machine`` record of a results file."""
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "spark": spark_version(), "pyarrow": pa.__version__, "master": MASTER,
            "driver_memory": driver_memory, "load_average_per_round": loads,
            "others_cpu_share_during_runs": round(contention, 3) if contention is not None else None}


# --- Spark and the scratch directory -------------------------------------------------------------------
def start_spark(app_name: str, driver_memory: str, warehouse: Path):
    """The session every benchmark times in: local[2], UI off, 2 shuffle partitions, UTC."""
    import acid_source

    log(f"starting Spark ({MASTER}) ...")
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.memory": driver_memory,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": str(warehouse),
    }
    spark = acid_source.get_or_create_session(appName=app_name, master=MASTER, conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_spark(spark) -> None:
    spark.stop()
    log("Spark stopped")


@contextmanager
def scratch_dir(parent: Path | None, name: str, store: str = "metastore.db"):
    """A fresh temp directory for the benchmark's tables (removed at the end), under ``parent``
    if given, and the URL of a SQLite transaction store in it. ``ACIDORC_METASTORE_URL`` is set
    to it before Spark starts, so that Spark's Python workers inherit it and nothing touches
    ``~/.acidorc``. Yields (directory, store URL)."""
    if parent:
        parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"acidorc-{name}-bench-", dir=parent))
    url = f"sqlite:///{work / store}"
    os.environ["ACIDORC_METASTORE_URL"] = url
    try:
        yield work, url
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- CPU and timing -----------------------------------------------------------------------------------
def jvm_pid(spark) -> int | None:
    return getattr(getattr(spark.sparkContext._gateway, "proc", None), "pid", None)


class CpuMeter:
    """CPU seconds used by Spark's JVM and by its Python workers (every process below the JVM:
    pyspark daemons and the workers they fork), sampled from /proc every 0.1s while a query
    runs. The daemons ignore SIGCHLD, so a finished worker's time never reaches any parent's
    cutime: each worker is tracked by pid and counted up to its last sample. On a shared
    machine CPU seconds are steadier than wall time, which the neighbours' load inflates."""

    def __init__(self, jvm_pid: int | None):
        self.jvm_pid = jvm_pid
        self.hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.available = jvm_pid is not None and Path(f"/proc/{jvm_pid}/stat").exists()
        self.sampler_cpu = 0.0  # CPU seconds of the sampler thread so far (part of this process's)

    def _sample(self) -> tuple[int, dict[int, int]] | None:
        own, children = {}, {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2:].split()
            own[int(entry)] = int(fields[11]) + int(fields[12])  # utime + stime
            children.setdefault(int(fields[1]), []).append(int(entry))
        if self.jvm_pid not in own:
            return None
        below, stack = {}, list(children.get(self.jvm_pid, []))
        while stack:
            pid = stack.pop()
            below[pid] = own[pid]
            stack.extend(children.get(pid, []))
        return own[self.jvm_pid], below

    @staticmethod
    def _machine_busy() -> int:
        """Busy jiffies of the whole machine (all CPUs) from /proc/stat."""
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # minus idle, iowait

    def measure(self, action):
        """Run ``action()``; return (wall seconds, JVM CPU s, Python-worker CPU s, CPU s used by
        other processes of the machine meanwhile - the neighbours' share). The sampler thread's
        own CPU is added to ``sampler_cpu``, for callers that count this process's CPU."""
        first = self._sample() if self.available else None
        if first is None:
            t0 = time.perf_counter()
            action()
            return time.perf_counter() - t0, None, None, None
        busy0, driver0 = self._machine_busy(), sum(os.times()[:2])
        last = {"jvm": first[0], "py": dict(first[1])}
        done = threading.Event()
        spent = {"cpu": 0.0}

        def sampler():
            t0 = time.thread_time()
            while not done.wait(0.1):
                snap = self._sample()
                if snap:
                    last["jvm"] = snap[0]
                    last["py"].update(snap[1])
            spent["cpu"] = time.thread_time() - t0

        thread = threading.Thread(target=sampler, daemon=True)
        thread.start()
        t0 = time.perf_counter()
        try:
            action()
        finally:
            wall = time.perf_counter() - t0
            done.set()
            thread.join()
        self.sampler_cpu += spent["cpu"]
        snap = self._sample()
        if snap:
            last["jvm"] = snap[0]
            last["py"].update(snap[1])
        jvm = (last["jvm"] - first[0]) / self.hz
        python = sum(t - first[1].get(pid, 0) for pid, t in last["py"].items()) / self.hz
        machine = (self._machine_busy() - busy0) / self.hz
        others = max(0.0, machine - jvm - python - (sum(os.times()[:2]) - driver0))
        return wall, jvm, python, others

    def run(self, action) -> dict:
        """:meth:`measure` as a run record: ``wall``, ``jvm``, ``py``, ``others``."""
        wall, jvm, py, others = self.measure(action)
        return {"wall": wall, "jvm": jvm, "py": py, "others": others}


def median(values):
    """The median, or None for no values or when any is None (no CPU figures without /proc)."""
    values = list(values)
    return None if not values or any(v is None for v in values) else statistics.median(values)


def cpu_medians(runs: dict, parts: tuple[str, ...] = ("jvm", "py")) -> dict:
    """Per key, the median over its runs of each CPU part; keys without CPU figures left out."""
    out = {}
    for key, rs in runs.items():
        values = tuple(median(r[part] for r in rs) for part in parts)
        if None not in values:
            out[key] = values
    return out


def contention_share(others_cpu: float, timed_wall: float, meter: CpuMeter) -> float | None:
    """Share of the machine's CPU that other processes took while we timed."""
    return others_cpu / (timed_wall * (os.cpu_count() or 1)) if timed_wall and meter.available else None


def round_robin(keys, repeat: int, run_one, meter: CpuMeter, name=str) -> tuple[dict, list, float | None]:
    """``repeat`` rounds of ``run_one(key, round)`` over every key in turn, so that drifting
    machine load hits every scenario alike; a log line per round. ``run_one`` returns a run
    record with at least ``wall`` and ``others`` (:meth:`CpuMeter.run`). Returns the runs per
    key, the load averages (before the first round and after each) and the other processes'
    share of the CPU during the runs (:func:`contention_share`)."""
    runs: dict = {k: [] for k in keys}
    loads = [load_average()]
    others_cpu = timed_wall = 0.0
    for rep in range(repeat):
        for key in runs:
            r = run_one(key, rep)
            runs[key].append(r)
            timed_wall += r["wall"]
            others_cpu += r["others"] or 0.0
        loads.append(load_average())
        log(f"run {rep + 1}/{repeat}: " + ", ".join(f"{name(k)} {v[-1]['wall']:.2f}s" for k, v in runs.items())
            + f"  (load average {loads[-1]})")
    return runs, loads, contention_share(others_cpu, timed_wall, meter)


# --- cProfile -----------------------------------------------------------------------------------------
def cumtime(stats, name: str, file_part: str, callers: tuple[str, ...] = ()) -> float:
    """Cumulative seconds in function ``name`` (defined in a file containing ``file_part``);
    with ``callers``, only the calls made by functions of those names."""
    total = 0.0
    for (file, _line, func), (_cc, _nc, _tt, ct, by_caller) in stats.stats.items():
        if func != name or file_part not in file:
            continue
        if not callers:
            total += ct
            continue
        for (_cf, _cl, caller), value in by_caller.items():
            if caller in callers:
                total += value[3]
    return total


def top_functions(stats, n: int = 15) -> list[dict]:
    """The ``n`` functions with the most own time of a ``pstats.Stats``."""
    top = sorted(((tt, ct, nc, f"{Path(file).name}:{line}({func})" if line else func)
                  for (file, line, func), (cc, nc, tt, ct, _) in stats.stats.items()), reverse=True)
    return [{"tottime": round(tt, 3), "cumtime": round(ct, 3), "calls": nc, "function": fn}
            for tt, ct, nc, fn in top[:n]]


# --- the report and the results file -------------------------------------------------------------------
def header_line(kind: str, stamp: str, what: str = "") -> str:
    """The report's first line: which benchmark, when, on what."""
    return (f"acidorc {kind} benchmark {stamp}: {MASTER}, {os.cpu_count()} cores, Spark {spark_version()}, "
            f"pyarrow {pa.__version__}" + (f", {what}" if what else ""))


def contention_line(share: float, timed: str = "runs", load: str = "") -> str:
    return (f"other processes used {100 * share:.0f}% of the machine's CPU during the timed {timed}"
            + (" - wall times are inflated; compare CPU seconds" if share > 0.1 else "")
            + (f"; load average {load}" if load else ""))


def stage_lines(profile: dict) -> list[str]:
    """A profile's time per stage, one line each, with its share of the total."""
    total = profile["total_seconds"] or 1.0
    return [f"  {label:<78}{secs:>6.2f}s {100 * secs / total:>5.1f}%" for label, secs in profile["stages"].items()]


def print_report(lines: list[str]) -> str:
    report = "\n".join(lines)
    print("\n" + report, flush=True)
    return report


def write_results(results_dir: Path, kind: str, stamp: str, machine: dict, record: dict) -> Path:
    """``<results_dir>/<kind>_<stamp>.json``: the timestamp, the machine, then ``record``."""
    results_dir.mkdir(parents=True, exist_ok=True)
    out = results_dir / f"{kind}_{stamp}.json"
    out.write_text(json.dumps({"timestamp": stamp, "machine": machine, **record}, indent=1, default=str))
    log(f"\nwrote {rel_path(out)}")
    return out
