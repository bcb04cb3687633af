"""Compaction benchmark: how a full scan slows down as small appends and deletes pile up as
deltas (after 10, 50 and 200 steps), what minor and major compaction give back, and what a
compaction costs - in-process and as a Spark job - against a native Spark rewrite of the same
rows (``spark.read.orc`` + ``write.orc``), all in one run.

    python benchmarks/compaction_benchmark.py [--rows N] [--steps 10,50,200] [--repeat K]

See benchmarks/README.md for what is measured and how to read the table.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sqlite3
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_common as bc  # noqa: E402
import numpy as np  # noqa: E402
from bench_common import cumtime, log, median  # noqa: E402
from bench_table import ARROW_SCHEMA, columns_for  # noqa: E402
from dml_benchmark import DmlMeter, arrow_rows, ensure_plain, fingerprint  # noqa: E402
from read_benchmark import core_scan  # noqa: E402

import acid_source  # noqa: E402
from acid_source.storage import Storage  # noqa: E402

SEED = 20261124
#: the per-delta read overhead at the last checkpoint may be at most this multiple of the one
#: at the checkpoint before it; a quadratic cost would make it grow like the number of deltas
LINEAR_TOLERANCE = 1.5


# --- the history's expected state, kept with numpy --------------------------------------------------
class Expected:
    """Which ids are visible: the base ids 0..rows-1, plus every appended id, minus every
    deleted id. Values are functions of the id (bench_table.columns_for), so count, sum(id) and
    sum(price) follow from this alone, never from reading the table."""

    def __init__(self, rows: int, capacity: int):
        self.alive = np.zeros(capacity, dtype=bool)
        self.alive[:rows] = True
        self.next_id = rows
        self.rng = np.random.default_rng(SEED)

    def append(self, k: int) -> np.ndarray:
        ids = np.arange(self.next_id, self.next_id + k, dtype=np.int64)
        self.alive[ids] = True
        self.next_id += k
        return ids

    def pick_deletes(self, d: int) -> np.ndarray:
        """``d`` distinct visible ids, anywhere in the table (base and appended rows)."""
        candidates = np.flatnonzero(self.alive)
        ids = np.sort(self.rng.choice(candidates, size=min(d, len(candidates)), replace=False))
        self.alive[ids] = False
        return ids.astype(np.int64)

    def summary(self) -> dict:
        ids = np.flatnonzero(self.alive).astype(np.int64)
        return {"rows": int(len(ids)), "sum_id": int(ids.sum()),
                "sum_price_cents": int(columns_for(ids)["price"].sum()) if len(ids) else 0}


# --- layout and read-cost counters ---------------------------------------------------------------------
def layout_of(table: Path) -> dict:
    """Directories by kind, data files and bytes (hidden files such as _orc_acid_version aside)."""
    kinds = {"base": 0, "delta": 0, "delete_delta": 0}
    files = size = 0
    for d in table.iterdir():
        if not d.is_dir() or d.name.startswith(("_", ".")):
            continue
        kind = "delete_delta" if d.name.startswith("delete_delta_") else d.name.split("_", 1)[0]
        if kind in kinds:
            kinds[kind] += 1
        for f in d.iterdir():
            if f.is_file() and not f.name.startswith(("_", ".")):
                files += 1
                size += f.stat().st_size
    return {"dirs": kinds, "delta_dirs": kinds["delta"] + kinds["delete_delta"], "files": files, "bytes": size}


def counted_core_scan(table: str, url: str) -> dict:
    """One in-process plan + read of every split (read_benchmark.core_scan: acidorc's
    ScanMetrics) with every Storage.open_input (a file opened, footers included) and
    Storage.list_dir (a directory listed) counted."""
    counts = {"open_input": 0, "list_dir": 0}
    paths: set[str] = set()
    real_open, real_list = Storage.open_input, Storage.list_dir

    def open_input(self, path, length=None):
        counts["open_input"] += 1
        paths.add(path)
        return real_open(self, path, length)

    def list_dir(self, path):
        counts["list_dir"] += 1
        return real_list(self, path)

    Storage.open_input, Storage.list_dir = open_input, list_dir
    try:
        result = core_scan(table, {"metastoreUrl": url, "readLeaseSeconds": "0"}, checksum=True)
    finally:
        Storage.open_input, Storage.list_dir = real_open, real_list
    result.update({"files_opened": counts["open_input"], "distinct_files_opened": len(paths),
                   "dirs_listed": counts["list_dir"]})
    return result


def call_counts(fn) -> dict[str, int]:
    """How often each function ran during ``fn()`` (cProfile; deterministic, unlike time): a
    cost quadratic in the deltas shows as a function whose calls grow with their square."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        fn()
    finally:
        prof.disable()
    counts = {}
    for (file, line, func), (_cc, nc, _tt, _ct, _) in pstats.Stats(prof).stats.items():
        if "acid_source" in Path(file).parts:
            where = "acid_source/" + "/".join(Path(file).parts[Path(file).parts.index("acid_source") + 1:])
        else:
            where = f"{Path(file).parent.name}/{Path(file).name}"
        name = f"{where}:{line}({func})" if line else func
        counts[name] = counts.get(name, 0) + nc
    return counts


def best_scan(table: str, url: str, repeat: int) -> tuple[float, float]:
    """Best wall and CPU seconds (this process, all threads) of ``repeat`` engine-free scans
    (AcidTable.load(p).scan().count()): the least disturbed by a busy machine."""
    from acid_source.table import AcidTable

    walls, cpus = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        AcidTable.load(table, metastoreUrl=url).scan().count()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)


def fit_growth(points: list[tuple[int, float]]) -> dict | None:
    """Least squares of extra = c*D + q*D^2 (no intercept: no deltas, no extra cost) over
    (delta dirs D, extra cost) points; with the quadratic term's share of the extra at the
    largest D (a cost linear in the deltas leaves q ~ 0)."""
    pts = [(d, e) for d, e in points if d > 0]
    if len(pts) < 3:
        return None
    d = np.array([p[0] for p in pts], dtype=float)
    e = np.array([p[1] for p in pts], dtype=float)
    (c, q), *_ = np.linalg.lstsq(np.stack([d, d * d], axis=1), e, rcond=None)
    dmax = float(d.max())
    total = c * dmax + q * dmax * dmax
    return {"c": float(c), "q": float(q), "max_deltas": int(dmax), "extra_at_max": float(total),
            "quadratic_share_at_max": round(float(q * dmax * dmax / total), 3) if total > 0 else None}


def superlinear_calls(first: dict, last: dict, d_first: int, d_last: int, min_calls: int = 2000) -> list[dict]:
    """Functions whose call count grew more than LINEAR_TOLERANCE times faster than the deltas
    between two states (and ran at least ``min_calls`` times at the last one)."""
    growth = d_last / d_first
    found = []
    for name, n in last.items():
        n0 = first.get(name, 0)
        if n >= min_calls and n0 > 0 and n / n0 > LINEAR_TOLERANCE * growth:
            found.append({"function": name, "calls": [n0, n], "growth": round(n / n0, 1),
                          "deltas_growth": round(growth, 1)})
    return sorted(found, key=lambda f: (not f["function"].startswith("acid_source/"), -f["calls"][1]))


# --- profiles -------------------------------------------------------------------------------------------
def profile_call(fn, out: Path) -> dict:
    """cProfile ``fn()`` in this process: where its time goes, by a few of acidorc's stages and
    by the functions with the most own time."""
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    try:
        fn()
    finally:
        prof.disable()
    seconds = time.perf_counter() - t0
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values())
    files, visibility = "acid_source/orc/files.py", "scan/visibility.py"
    stages = {
        "planning (TableScan.plan: snapshot, listing, acid state, splits)": cumtime(stats, "plan", "scan/planner.py"),
        "directory listings (Storage.list_dir)": cumtime(stats, "list_dir", "acid_source/storage.py"),
        "file opens + footers (OrcFile._orc)": cumtime(stats, "_orc", files),
        "ACID v1 check of every delta file (needs_collapse)": cumtime(stats, "needs_collapse", ""),
        "delete events (_load_deletes: read delete stripes, KeySet sort)": cumtime(stats, "_load_deletes", visibility),
        "ORC stripe decode (OrcFile.read_stripe)": cumtime(stats, "read_stripe", files),
        "anti-join probe (KeySet.contains)": cumtime(stats, "contains", visibility),
        "k-way merge of minor compaction (merge_by_row_id)": cumtime(stats, "merge_by_row_id", "compaction_tasks"),
        "event writer (KeyedEventWriter.write_*)": cumtime(stats, "write_events", "orc/writer.py")
        + cumtime(stats, "write_rows", "orc/writer.py"),
        "transaction store (SQLAlchemy execute)": cumtime(stats, "execute", "sqlalchemy/engine/base.py"),
    }
    prof.dump_stats(str(out))
    return {"seconds_under_profiler": round(seconds, 3), "total_seconds": round(total, 3),
            "profile_file": bc.rel_path(out), "stages": {k: round(v, 3) for k, v in stages.items() if v > 0},
            "top_functions": bc.top_functions(stats)}


def profile_lines(p: dict) -> list[str]:
    total = p["total_seconds"] or 1.0
    out = [f"    {label:<70}{secs:>7.2f}s {100 * secs / total:>5.1f}%  (cumulative; stages overlap)"
           for label, secs in p["stages"].items()]
    out.append("    most own time:")
    out += [f"      {f['tottime']:>6.2f}s own {f['cumtime']:>6.2f}s cum {f['calls']:>8} calls  {f['function']}"
            for f in p["top_functions"][:8]]
    return out


# --- copies of a table state (files + transaction store) ---------------------------------------------
def copy_store(src_db: Path, dst_db: Path) -> None:
    """A consistent copy of a SQLite transaction store (SQLite's online backup)."""
    src, dst = sqlite3.connect(str(src_db)), sqlite3.connect(str(dst_db))
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def link_tree(src: Path, dst: Path) -> None:
    """``dst`` as a copy of ``src`` made of hard links: acidorc never changes a written file, it
    only adds directories and the cleaner removes whole ones, so the links stay a frozen copy."""
    shutil.copytree(src, dst, copy_function=os.link)


# --- main -------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows of the base (default 2M)")
    ap.add_argument("--steps", default="10,50,200", help="checkpoints: scans after this many steps (default 10,50,200)")
    ap.add_argument("--append-rows", type=int, default=1000, help="rows appended by every step (default 1000)")
    ap.add_argument("--delete-every", type=int, default=2, help="every Nth step also deletes rows (default 2)")
    ap.add_argument("--delete-rows", type=int, default=5, help="rows deleted by a deleting step (default 5)")
    ap.add_argument("--repeat", type=int, default=3, help="timed scans per scenario and checkpoint, after a warm-up")
    ap.add_argument("--light-every", type=int, default=25,
                    help="also an in-process scan (best of --light-repeat, files opened, call counts) every N steps "
                         "(default 25; 0: only at the checkpoints)")
    ap.add_argument("--light-repeat", type=int, default=3, help="engine-free scans per in-process point (best of)")
    ap.add_argument("--rewrite-repeat", type=int, default=3, help="timed native rewrites (default 3)")
    ap.add_argument("--direct-major", choices=("yes", "no"), default="yes",
                    help="also time a major compaction straight from the last checkpoint (no minor first)")
    ap.add_argument("--compaction-probes", choices=("yes", "no"), default="yes",
                    help="at every checkpoint, time an in-process minor and major compaction on a copy (and count "
                         "the minor one's calls), to see how compaction cost grows with the deltas")
    ap.add_argument("--profile", choices=("auto", "always", "never"), default="auto",
                    help="cProfile the in-process scan at the last checkpoint and an in-process minor and major "
                         "compaction (auto: when the read cost grows faster than linearly in the deltas)")
    ap.add_argument("--tasks", type=int, default=2, help="files of the plain base = bucket files of the table")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--data-dir", type=Path, default=HERE / "data", help="cache of the plain base (git-ignored)")
    ap.add_argument("--work-dir", type=Path, default=None, help="where tables go (default: a fresh temp dir)")
    ap.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    try:
        steps = sorted({int(s) for s in args.steps.split(",") if s.strip()})
    except ValueError:
        ap.error("--steps: comma-separated step counts, e.g. 10,50,200")
    if not steps or steps[0] < 1:
        ap.error("--steps: at least one positive step count")
    if (args.rows < 10_000 or args.append_rows < 1 or args.delete_every < 1 or args.delete_rows < 1
            or args.repeat < 1 or args.rewrite_repeat < 1 or args.tasks < 1 or args.light_every < 0
            or args.light_repeat < 1):
        ap.error("--rows >= 10000; --append-rows, --delete-every, --delete-rows, --repeat, --tasks >= 1")
    args.steps_list = steps

    stamp = bc.timestamp()
    # our own transaction store (every call passes its URL too); no automatic compaction: the
    # deltas must pile up
    with bc.scratch_dir(args.work_dir, "compaction", store="store-main.db") as (work, _url):
        os.environ["ACIDORC_AUTO_COMPACT"] = "false"
        return run(args, stamp, work)


def run(args, stamp: str, work: Path) -> int:
    t_start = time.perf_counter()
    bench = CompactionRun(args, work)
    base = bench.build_base()
    bench.run_history()
    bench.freeze_last_state()
    bench.time_native_rewrite()
    bench.warm_up_compactions()
    bench.run_compactions()
    analysis = {**read_cost_growth(bench.light_points), "spark_growth": spark_read_growth(bench.checkpoints),
                "minor_quadratic": minor_superlinear(bench.probes)}
    profiles = bench.profile_last_state(stamp, analysis)
    bc.stop_spark(bench.spark)
    report_and_save(bench, stamp, base, analysis, profiles, t_start)
    return 0


class CompactionRun:
    """One run's table, Spark session, expected state and everything measured so far; its
    methods are the run's phases, in the order ``run`` calls them."""

    def __init__(self, args, work: Path):
        self.args, self.work = args, work
        self.steps = args.steps_list
        self.n_last = self.steps[-1]
        self.table = work / "table"  # one location; each chain of compactions gets its own store
        self.store_main = work / "store-main.db"
        self.url_main = f"sqlite:///{self.store_main}"
        log(f"work dir {work}, store {self.url_main}")
        self.spark = bc.start_spark("acidorc-compaction-benchmark", args.driver_memory, work / "spark-warehouse")
        self.native_codec = self.spark.conf.get("spark.sql.orc.compression.codec")
        self.meter = DmlMeter(self.spark)
        self.expected = Expected(args.rows, args.rows + self.n_last * args.append_rows)
        self.checkpoints: list[dict] = []
        self.step_log: list[dict] = []
        self.light_points: list[dict] = []
        self.probes: list[dict] = []
        self.compactions: list[dict] = []

    def acid_df(self, url):
        # a new DataFrame per query: planning (snapshot, listing every delta) is part of the cost.
        # No read lease: the benchmark never cleans while it reads, and a Spark read's lease
        # outlives the query (readLeaseSeconds) - it would keep vacuum from removing anything
        return (self.spark.read.format("acidorc").option("metastoreUrl", url).option("readLeaseSeconds", "0")
                .load(str(self.table)))

    def verify_acid(self, url: str, want: dict, what: str) -> dict:
        fp = fingerprint(self.acid_df(url))
        bad = [k for k in ("rows", "sum_id", "sum_price_cents") if fp[k] != want[k]]
        if bad:
            raise SystemExit(f"{what}: acidorc reads {fp}, expected {want} (differs in {bad})")
        return fp

    # 1. the base: plain ORC (cached), appended through Spark, major-compacted into a base
    def build_base(self) -> dict:
        from acid_source.table import AcidTable

        args, table, url_main = self.args, self.table, self.url_main
        t0 = time.perf_counter()
        plain, manifest = ensure_plain(self.spark, args.rows, args.tasks, args.data_dir, self.work)
        log(f"plain base {plain}: {len(manifest['files'])} files ({'cached' if manifest['cached'] else 'built'}, "
            f"{time.perf_counter() - t0:.1f}s)")
        t0 = time.perf_counter()
        acid_source.create_table(str(table), ARROW_SCHEMA, metastoreUrl=url_main)
        self.spark.read.orc(str(plain)).write.format("acidorc").option("metastoreUrl", url_main).mode("append") \
            .save(str(table))
        append_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        base_major = AcidTable.load(str(table), metastoreUrl=url_main).compact("major")
        base_major_s = time.perf_counter() - t0
        AcidTable.load(str(table), metastoreUrl=url_main).vacuum(retentionSeconds=0)
        log(f"acidorc table: Spark append {append_s:.1f}s, then major compaction in-process {base_major_s:.1f}s -> "
            f"{', '.join(base_major['outputDirs'])} ({base_major['numOutputFiles']} files)")
        return {"spark_append_seconds": round(append_s, 2), "major_seconds": round(base_major_s, 2),
                "major_metrics": {k: v for k, v in base_major.items() if k != "vacuum"}}

    def light(self, label: str, url: str, steps_done: int) -> dict:
        """The in-process view of one state, cheap enough for many points of the history: best
        of ``--light-repeat`` engine-free scans, files opened and directories listed, and how
        often each function ran (cProfile call counts)."""
        from acid_source.table import AcidTable

        table = self.table
        want = self.expected.summary()
        counted = counted_core_scan(str(table), url)
        if (counted["rows"], counted["sum_id"]) != (want["rows"], want["sum_id"]):
            raise SystemExit(f"{label}: in-process read returned {counted['rows']} rows / {counted['sum_id']}, "
                             f"expected {want['rows']} / {want['sum_id']}")
        wall, cpu = best_scan(str(table), url, self.args.light_repeat)
        calls = call_counts(lambda: AcidTable.load(str(table), metastoreUrl=url).scan().count())
        point = {"label": label, "steps": steps_done, "layout": layout_of(table), "rows": want["rows"],
                 "engine_free_best_s": round(wall, 4), "engine_free_best_cpu_s": round(cpu, 4),
                 "python_calls": sum(calls.values()),
                 "calls": {k: v for k, v in sorted(calls.items(), key=lambda kv: -kv[1]) if v >= 200},
                 **{k: counted[k] for k in ("splits", "plan_seconds", "read_seconds", "files_opened",
                                            "distinct_files_opened", "dirs_listed", "metrics")}}
        self.light_points.append(point)
        return point

    def compaction_probe(self, steps_done: int) -> dict:
        """Minor and major compaction in-process of the current state, each on a copy of the
        store, the files put back afterwards (hard links): their time and CPU, and the minor
        one's call counts (a third run, under cProfile), so that a cost quadratic in the
        deltas shows across the checkpoints. The main history never sees these compactions."""
        from acid_source.table import AcidTable

        table, work = self.table, self.work
        frozen_now = work / "probe-frozen"
        link_tree(table, frozen_now)
        probe = {"steps": steps_done, "delta_dirs": layout_of(table)["delta_dirs"]}
        try:
            for name, kind in (("minor", "minor"), ("minor_calls", "minor"), ("major", "major")):
                db = work / f"store-probe-{name}.db"
                copy_store(self.store_main, db)
                target = AcidTable.load(str(table), metastoreUrl=f"sqlite:///{db}")
                if name == "minor_calls":
                    calls = call_counts(lambda: target.compact(kind))
                    probe["minor_python_calls"] = sum(calls.values())
                    probe["minor_calls"] = {k: v for k, v in sorted(calls.items(), key=lambda kv: -kv[1]) if v >= 200}
                else:
                    c0, t0 = time.process_time(), time.perf_counter()
                    m = target.compact(kind)
                    probe[f"{name}_s"] = round(time.perf_counter() - t0, 3)
                    probe[f"{name}_cpu_s"] = round(time.process_time() - c0, 3)
                    probe[f"{name}_input_files"] = m["numInputFiles"]
                shutil.rmtree(table)
                link_tree(frozen_now, table)
                db.unlink()
        finally:
            if not table.exists():
                link_tree(frozen_now, table)
            shutil.rmtree(frozen_now)
        self.probes.append(probe)
        log(f"  compaction probe at {steps_done} steps (in-process, on a copy): minor {probe['minor_s']:.2f}s "
            f"({probe['minor_python_calls']:,} Python calls), major {probe['major_s']:.2f}s")
        return probe

    def measure(self, label: str, url: str, native: Path | None, deltas_written: int) -> dict:
        """Scan times at one state of the table, verified; native copy written if not given."""
        want = self.expected.summary()
        lay = layout_of(self.table)
        fp = self.verify_acid(url, want, label)
        if native is None:
            native = self.work / f"native-{len(self.checkpoints):02d}"
            self.acid_df(url).write.orc(str(native))
        nfp = fingerprint(self.spark.read.orc(str(native)))
        if nfp != fp:
            raise SystemExit(f"{label}: the native copy reads {nfp}, acidorc {fp}")
        counted = self.light(label, url, deltas_written)
        runs = self.time_scans(label, url, native, want)
        med = {k: median([r["wall"] for r in v]) for k, v in runs.items()}
        cpu = {k: round(sum(median([r[x] or 0.0 for r in v]) for x in ("jvm", "py", "driver")), 2)
               for k, v in runs.items()}
        cp = {"label": label, "steps": deltas_written, "layout": lay, "expected": want, "fingerprint": fp,
              "native_dir": str(native), "median_seconds": {k: round(v, 3) for k, v in med.items()},
              "cpu_seconds_median": cpu,
              "runs": {k: [round(r["wall"], 3) for r in v] for k, v in runs.items()},
              "others_cpu": sum(r["others"] or 0.0 for v in runs.values() for r in v),
              "timed_wall": sum(r["wall"] for v in runs.values() for r in v),
              "load_average": bc.load_average(),
              "in_process": {k: counted[k] for k in ("splits", "plan_seconds", "read_seconds", "files_opened",
                                                        "distinct_files_opened", "dirs_listed", "metrics",
                                                        "engine_free_best_s", "python_calls")}}
        self.checkpoints.append(cp)
        log(f"  {label}: {lay['delta_dirs']} delta dirs, {lay['files']} files, {want['rows']:,} rows; "
            f"Spark acidorc {med['spark_acidorc']:.2f}s, native {med['spark_native']:.2f}s, "
            f"engine-free {med['engine_free']:.2f}s; files opened {counted['files_opened']} "
            f"(load {cp['load_average']})")
        return cp

    def time_scans(self, label: str, url: str, native: Path, want: dict) -> dict[str, list[dict]]:
        """The three scans of one state, after a warm-up, round-robin ``--repeat`` times."""
        from acid_source.table import AcidTable

        def engine_free():
            n = AcidTable.load(str(self.table), metastoreUrl=url).scan().count()
            if n != want["rows"]:
                raise SystemExit(f"{label}: AcidTable.scan().count() = {n}, expected {want['rows']}")

        scenarios = {
            "spark_acidorc": lambda: self.acid_df(url).write.format("noop").mode("overwrite").save(),
            "spark_native": lambda: self.spark.read.orc(str(native)).write.format("noop").mode("overwrite").save(),
            "engine_free": engine_free,
        }
        runs: dict[str, list[dict]] = {k: [] for k in scenarios}
        for _ in range(1 if self.checkpoints else 3):  # warm-up (the first checkpoint also warms the JVM up)
            for fn in scenarios.values():
                self.meter.run(fn)
        for _ in range(self.args.repeat):  # round-robin: drifting load hits every scenario alike
            for k, fn in scenarios.items():
                r = self.meter.run(fn)
                runs[k].append({x: r[x] for x in ("wall", "jvm", "py", "driver", "others")})
        return runs

    # 2. the history: small appends and deletes, scans at every checkpoint
    def run_history(self) -> None:
        args, steps = self.args, self.steps
        log("checkpoint 0 (base only) ...")
        self.measure("base only", self.url_main, None, 0)
        t_hist = time.perf_counter()
        for step in range(1, self.n_last + 1):
            self.step_log.append(self.history_step(step))
            if step not in steps and args.light_every and step % args.light_every == 0:
                p = self.light(f"{step} steps", self.url_main, step)
                log(f"  {step} steps: {p['layout']['delta_dirs']} delta dirs; engine-free best "
                    f"{p['engine_free_best_s']:.2f}s, {p['files_opened']} files opened, "
                    f"{p['python_calls']:,} Python calls")
            if step in steps:
                log(f"checkpoint {step} steps ({time.perf_counter() - t_hist:.0f}s since the first step) ...")
                self.measure(f"{step} steps", self.url_main, None, step)
                if args.compaction_probes == "yes":
                    self.compaction_probe(step)
        last = self.checkpoints[-1]
        self.native_last = Path(last["native_dir"])
        self.final_fp = last["fingerprint"]

    def history_step(self, step: int) -> dict:
        """One step: an engine-free append, and every ``--delete-every`` steps a delete."""
        from acid_source.table import AcidTable

        args = self.args
        tbl = AcidTable.load(str(self.table), metastoreUrl=self.url_main)
        ids = self.expected.append(args.append_rows)
        t0 = time.perf_counter()
        m = tbl.append(arrow_rows(ids))
        entry = {"step": step, "append_s": round(time.perf_counter() - t0, 4), "delete_s": None}
        if m["numOutputRows"] != args.append_rows:
            raise SystemExit(f"step {step}: appended {m['numOutputRows']} rows, expected {args.append_rows}")
        if step % args.delete_every == 0:
            gone = self.expected.pick_deletes(args.delete_rows)
            t0 = time.perf_counter()
            m = tbl.delete(f"id IN ({', '.join(str(int(i)) for i in gone)})")
            entry["delete_s"] = round(time.perf_counter() - t0, 4)
            if m.get("numDeletedRows") != len(gone):
                raise SystemExit(f"step {step}: deleted {m.get('numDeletedRows')} rows, expected {len(gone)}")
        return entry

    # 3. the last state, frozen: its files (hard links) and copies of its store, one per chain
    def freeze_last_state(self) -> None:
        self.frozen = self.work / "table-frozen"
        link_tree(self.table, self.frozen)
        chains = ["spark"] + (["direct-inprocess", "direct-spark"] if self.args.direct_major == "yes" else [])
        if self.args.profile != "never":
            chains += ["profile", "profile2"]
        self.stores = {}
        for name in chains:
            self.stores[name] = self.work / f"store-{name}.db"
            copy_store(self.store_main, self.stores[name])

    def restore(self, name: str) -> str:
        """The table as it was at the last checkpoint, with its own copy of the store."""
        shutil.rmtree(self.table)
        link_tree(self.frozen, self.table)
        return f"sqlite:///{self.stores[name]}"

    # 4. the native rewrite of the same rows
    def time_native_rewrite(self) -> None:
        spark = self.spark
        rewrites = []
        for i in range(self.args.rewrite_repeat + 1):
            out = self.work / f"rewrite-{i}"
            r = self.meter.run(lambda: spark.read.orc(str(self.native_last)).write.orc(str(out)))
            if i == 0:  # warm-up, verified
                if fingerprint(spark.read.orc(str(out))) != self.final_fp:
                    raise SystemExit("the native rewrite does not hold the table's rows")
            else:
                rewrites.append(r)
            shutil.rmtree(out, ignore_errors=True)
        self.rewrites = rewrites
        self.rewrite_med = median([r["wall"] for r in rewrites])
        self.rewrite_cpu = sum(median([r[x] or 0.0 for r in rewrites]) for x in ("jvm", "py", "driver"))
        log(f"native rewrite (spark.read.orc + write.orc): median {self.rewrite_med:.2f}s "
            f"({', '.join('%.2f' % r['wall'] for r in rewrites)})")

    # 5. compactions, after one untimed run of each path on a tiny table of its own: the first
    # compaction of a session imports the compactor and starts Spark's Python workers for it.
    # The tiny table has two writer ids (a 2-task Spark append), so its Spark jobs run two tasks,
    # as the timed ones do, and both Python workers are warm
    def warm_up_compactions(self) -> None:
        from acid_source.table import AcidTable

        t0 = time.perf_counter()
        warm_db = self.work / "store-warmup.db"
        warm_url, warm = f"sqlite:///{warm_db}", self.work / "warmup-table"
        acid_source.create_table(str(warm), ARROW_SCHEMA, metastoreUrl=warm_url)
        for engine in ("in-process", "spark", "spark"):
            for kind in ("minor", "major"):
                self.spark.createDataFrame(arrow_rows(np.arange(0, 1000, dtype=np.int64))).repartition(2).write \
                    .format("acidorc").option("metastoreUrl", warm_url).mode("append").save(str(warm))
                w = AcidTable.load(str(warm), metastoreUrl=warm_url)
                w.append(arrow_rows(np.arange(1000, 1100, dtype=np.int64)))
                w.delete("id < 10 OR id >= 1090")
                if engine == "spark":
                    w = AcidTable.forPath(self.spark, str(warm), metastoreUrl=warm_url)
                w.compact(kind)
        log(f"compaction warm-up (tiny table, 2 writer ids; each kind in-process once, as a Spark job twice): "
            f"{time.perf_counter() - t0:.1f}s")

    def compact(self, label: str, kind: str, engine: str, url: str) -> dict:
        from acid_source.table import AcidTable

        table = self.table
        if engine == "spark":
            target = AcidTable.forPath(self.spark, str(table), metastoreUrl=url)
        else:
            target = AcidTable.load(str(table), metastoreUrl=url)
        before = layout_of(table)
        r = self.meter.run(lambda: target.compact(kind))
        metrics = r["result"]
        t0 = time.perf_counter()
        vac = AcidTable.load(str(table), metastoreUrl=url).vacuum(retentionSeconds=0)
        vacuum_s = time.perf_counter() - t0
        after = layout_of(table)
        fp = self.verify_acid(url, self.expected.summary(), label)
        if fp["hash"] != self.final_fp["hash"]:
            raise SystemExit(f"{label}: the compacted table reads {fp}, before it {self.final_fp}")
        entry = {"label": label, "kind": kind, "engine": engine, "wall": round(r["wall"], 3),
                 "cpu_jvm_py_driver": [round(r[x] or 0.0, 2) for x in ("jvm", "py", "driver")],
                 "vs_native_rewrite": round(r["wall"] / self.rewrite_med, 3), "layout_before": before,
                 "layout_after": after, "vacuum_seconds": round(vacuum_s, 3),
                 "vacuum_removed_paths": vac["numRemovedPaths"], "vacuum_removed_bytes": vac["removedBytes"],
                 "stages": r["stages"],
                 "metrics": {k: v for k, v in metrics.items() if k not in ("vacuum", "partitions")}}
        self.compactions.append(entry)
        log(f"  {label}: {r['wall']:.2f}s ({entry['vs_native_rewrite']:.2f}x the native rewrite), "
            f"{metrics['numInputFiles']} files / {metrics['numInputRows']:,} rows in -> "
            f"{', '.join(metrics['outputDirs'])}; vacuum {vacuum_s:.2f}s removed {vac['numRemovedPaths']} dirs; "
            "verified")
        return entry

    def run_compactions(self) -> None:
        n_last, url_main, native_last = self.n_last, self.url_main, self.native_last
        log(f"compaction in-process of the {n_last}-step table, scans after each ...")
        self.compact(f"minor, in-process ({n_last} steps)", "minor", "in-process", url_main)
        self.measure("after minor", url_main, native_last, n_last)
        self.compact("major, in-process (after minor)", "major", "in-process", url_main)
        self.measure("after major", url_main, native_last, n_last)

        log("compaction as a Spark job, from the same state ...")
        url = self.restore("spark")
        self.compact(f"minor, Spark job ({n_last} steps)", "minor", "spark", url)
        self.compact("major, Spark job (after minor)", "major", "spark", url)
        if self.args.direct_major == "yes":
            self.compact(f"major, in-process ({n_last} steps, no minor)", "major", "in-process",
                         self.restore("direct-inprocess"))
            self.compact(f"major, Spark job ({n_last} steps, no minor)", "major", "spark", self.restore("direct-spark"))

    # 7. profiles (in this process, Spark idle)
    def profile_last_state(self, stamp: str, analysis: dict) -> dict:
        from acid_source.table import AcidTable

        args, table = self.args, self.table
        profiles = {}
        if not (args.profile == "always" or (args.profile == "auto" and (
                analysis["superlinear"] or analysis["last_scan_overhead"] > 0.5 or analysis["minor_quadratic"]))):
            return profiles
        args.results_dir.mkdir(parents=True, exist_ok=True)
        url = self.restore("profile")
        log("profiling (cProfile) the in-process scan, major and minor compaction of the last state ...")
        profiles["scan"] = profile_call(
            lambda: AcidTable.load(str(table), metastoreUrl=url).scan().count(),
            args.results_dir / f"compaction_{stamp}_scan.prof")
        profiles["major"] = profile_call(lambda: AcidTable.load(str(table), metastoreUrl=url).compact("major"),
                                         args.results_dir / f"compaction_{stamp}_major.prof")
        url = self.restore("profile2")
        profiles["minor"] = profile_call(lambda: AcidTable.load(str(table), metastoreUrl=url).compact("minor"),
                                         args.results_dir / f"compaction_{stamp}_minor.prof")
        return profiles


# --- 6. is the read cost linear in the deltas? ------------------------------------------------------
def read_cost_growth(light_points: list[dict]) -> dict:
    """Beyond the data's own growth (the base-only cost scaled by rows), per delta directory:
    in-process best-of times, files opened, call counts."""
    hist_pts = [p for p in light_points if not p["label"].startswith("after")]
    p0 = hist_pts[0]
    series = []
    for p in hist_pts[1:]:
        d = p["layout"]["delta_dirs"]
        scale = p["rows"] / p0["rows"]
        series.append({
            "steps": p["steps"], "delta_dirs": d,
            "extra_wall_s": p["engine_free_best_s"] - p0["engine_free_best_s"] * scale,
            "extra_cpu_s": p["engine_free_best_cpu_s"] - p0["engine_free_best_cpu_s"] * scale,
            "files_opened_per_delta": round((p["files_opened"] - p0["files_opened"]) / d, 3),
            "calls_per_delta": round((p["python_calls"] - p0["python_calls"]) / d, 1),
            "plan_ms_per_delta": round(1000 * (p["plan_seconds"] - p0["plan_seconds"]) / d, 3),
        })
    for row in series:
        row["extra_wall_ms_per_delta"] = round(1000 * row["extra_wall_s"] / row["delta_dirs"], 3)
        row["extra_cpu_ms_per_delta"] = round(1000 * row["extra_cpu_s"] / row["delta_dirs"], 3)
    fits = {
        "engine_free_wall": fit_growth([(r["delta_dirs"], r["extra_wall_s"]) for r in series]),
        "engine_free_cpu": fit_growth([(r["delta_dirs"], r["extra_cpu_s"]) for r in series]),
        "python_calls": fit_growth([(r["delta_dirs"], r["calls_per_delta"] * r["delta_dirs"]) for r in series]),
    }
    quadratic_calls = superlinear_scan_calls(hist_pts) if series else []
    files_per_delta = [r["files_opened_per_delta"] for r in series]
    files_linear = not files_per_delta or max(files_per_delta) <= LINEAR_TOLERANCE * max(1e-9, min(files_per_delta))
    cpu_fit = fits["engine_free_cpu"]
    time_quadratic = bool(cpu_fit and (cpu_fit["quadratic_share_at_max"] or 0) > 0.25)
    superlinear = bool(quadratic_calls) or time_quadratic or not files_linear
    last_scan_overhead = (series[-1]["extra_cpu_s"] / max(1e-9, p0["engine_free_best_cpu_s"] * hist_pts[-1]["rows"]
                                                            / p0["rows"])) if series else 0.0
    return {"hist_pts": hist_pts, "p0": p0, "series": series, "fits": fits, "quadratic_calls": quadratic_calls,
            "files_per_delta": files_per_delta, "files_linear": files_linear, "superlinear": superlinear,
            "last_scan_overhead": last_scan_overhead}


def superlinear_scan_calls(hist_pts: list[dict]) -> list[dict]:
    """The scan's functions whose call counts grow faster than the deltas, from the point nearest
    a quarter of the last one's deltas to the last one."""
    last_pt = hist_pts[-1]
    d_last = last_pt["layout"]["delta_dirs"]
    earlier = [p for p in hist_pts[1:-1] if p["layout"]["delta_dirs"] > 0]
    if not earlier:
        return []
    first_pt = min(earlier, key=lambda p: abs(p["layout"]["delta_dirs"] - d_last / 4))
    found = superlinear_calls(first_pt["calls"], last_pt["calls"], first_pt["layout"]["delta_dirs"], d_last)
    return [dict(f, steps=[first_pt["steps"], last_pt["steps"]]) for f in found]


def spark_read_growth(checkpoints: list[dict]) -> list[dict]:
    """The Spark scans at the checkpoints, per delta (medians: noisier than the in-process best-of)."""
    base_cp = checkpoints[0]
    spark_growth = []
    for cp in checkpoints[1:]:
        if cp["label"].startswith("after"):
            continue
        d = cp["layout"]["delta_dirs"]
        scale = cp["expected"]["rows"] / base_cp["expected"]["rows"]
        row = {"steps": cp["steps"], "delta_dirs": d}
        for k in ("spark_acidorc", "spark_native", "engine_free"):
            row[f"{k}_wall_ms_per_delta"] = round(
                1000 * (cp["median_seconds"][k] - base_cp["median_seconds"][k] * scale) / d, 2)
            row[f"{k}_cpu_ms_per_delta"] = round(
                1000 * (cp["cpu_seconds_median"][k] - base_cp["cpu_seconds_median"][k] * scale) / d, 2)
        spark_growth.append(row)
    return spark_growth


def minor_superlinear(probes: list[dict]) -> list[dict]:
    """How compaction cost grows with the deltas (the probes): minor compaction's functions whose
    call counts grew faster than the deltas between the last two probes."""
    if len(probes) < 2:
        return []
    a, b = probes[-2], probes[-1]
    if not (a["delta_dirs"] and b["delta_dirs"] > a["delta_dirs"]):
        return []
    return [dict(f, steps=[a["steps"], b["steps"]]) for f in superlinear_calls(
        a["minor_calls"], b["minor_calls"], a["delta_dirs"], b["delta_dirs"])]


# --- 8. report ----------------------------------------------------------------------------------------
def history_intervals(steps: list[int], step_log: list[dict]) -> list[dict]:
    """Append and delete times of the history, per interval between checkpoints."""
    hist = []
    bounds = [0] + steps
    for lo, hi in zip(bounds, bounds[1:]):
        part = [s for s in step_log if lo < s["step"] <= hi]
        dels = [s["delete_s"] for s in part if s["delete_s"] is not None]
        hist.append({"steps": f"{lo + 1}-{hi}",
                     "append_ms_median": round(1000 * median([s["append_s"] for s in part]), 1),
                     "delete_ms_median": round(1000 * median(dels), 1) if dels else None,
                     "seconds": round(sum(s["append_s"] + (s["delete_s"] or 0) for s in part), 1)})
    return hist


def checkpoint_lines(bench: CompactionRun, stamp: str) -> list[str]:
    args = bench.args
    lines = [
        bc.header_line("compaction", stamp),
        f"table: {args.rows:,} rows (id bigint, name string, amount double, day date, price decimal(12,2)), "
        f"unpartitioned, zlib; base = Spark append ({args.tasks} tasks) + major compaction; every step appends "
        f"{args.append_rows:,} rows (engine-free, one delta), every {args.delete_every} steps one also deletes "
        f"{args.delete_rows} random rows (engine-free, one delete delta); native copies: plain ORC written by Spark "
        f"({bench.native_codec}) from each state",
        f"scans: Spark = a new DataFrame + noop write of all 5 columns; engine-free = "
        f"AcidTable.load(p).scan().count() (all columns, in this process); median of {args.repeat}",
        "",
        f"{'state':<14}{'deltas':>7}{'files':>6}{'rows':>11}{'Spark acidorc':>14}{'native':>8}{'ratio':>7}"
        f"{'engine-free':>12}{'ef/native':>10}{'opened':>7}{'plan ms':>8}   CPU s acid/native/ef",
    ]
    for cp in bench.checkpoints:
        m, c = cp["median_seconds"], cp["cpu_seconds_median"]
        lines.append(
            f"{cp['label']:<14}{cp['layout']['delta_dirs']:>7}{cp['layout']['files']:>6}{cp['expected']['rows']:>11,}"
            f"{m['spark_acidorc']:>13.2f}s{m['spark_native']:>7.2f}s{m['spark_acidorc'] / m['spark_native']:>6.2f}x"
            f"{m['engine_free']:>11.2f}s{m['engine_free'] / m['spark_native']:>9.2f}x"
            f"{cp['in_process']['files_opened']:>7}{1000 * cp['in_process']['plan_seconds']:>8.0f}"
            f"   {c['spark_acidorc']:.1f}/{c['spark_native']:.1f}/{c['engine_free']:.1f}")
    return lines


def read_cost_lines(analysis: dict, light_repeat: int) -> list[str]:
    series, p0, fits = analysis["series"], analysis["p0"], analysis["fits"]
    quadratic_calls = analysis["quadratic_calls"]
    lines = ["read cost per delta directory beyond the data's own growth (the base-only cost scaled by rows), "
             f"in-process: best of {light_repeat} engine-free scans; files opened; Python function calls"]
    lines.append(f"  {'steps':>6}{'deltas':>8}{'best s':>8}{'ms/delta':>10}{'CPU ms/delta':>14}"
                 f"{'files opened/delta':>20}{'calls/delta':>13}{'plan ms/delta':>15}")
    lines.append(f"  {0:>6}{0:>8}{p0['engine_free_best_s']:>8.3f}")
    for r, p in zip(series, analysis["hist_pts"][1:]):
        lines.append(f"  {r['steps']:>6}{r['delta_dirs']:>8}{p['engine_free_best_s']:>8.3f}"
                     f"{r['extra_wall_ms_per_delta']:>10.2f}{r['extra_cpu_ms_per_delta']:>14.2f}"
                     f"{r['files_opened_per_delta']:>20.2f}{r['calls_per_delta']:>13.0f}{r['plan_ms_per_delta']:>15.2f}")
    for name, label, unit, factor in (("engine_free_cpu", "engine-free CPU", "ms", 1000),
                                      ("engine_free_wall", "engine-free wall", "ms", 1000),
                                      ("python_calls", "Python calls", "calls", 1)):
        f = fits[name]
        if f:
            share = f["quadratic_share_at_max"]
            lines.append(f"  fit {label}: extra = {factor * f['c']:.3g} {unit} x D + {factor * f['q']:.3g} {unit} "
                         f"x D^2; at D = {f['max_deltas']}: {factor * f['extra_at_max']:,.0f} {unit}, quadratic share "
                         + (f"{100 * share:.0f}%" if share is not None else "n/a"))
    lines.append(f"  files opened per delta dir: {', '.join(f'{x:.2f}' for x in analysis['files_per_delta'])} -> "
                 + ("linear" if analysis["files_linear"] else "NOT linear"))
    if quadratic_calls:
        lines.append(f"  call counts growing faster than the deltas (x{quadratic_calls[0]['deltas_growth']} deltas "
                     f"from step {quadratic_calls[0]['steps'][0]} to {quadratic_calls[0]['steps'][1]}):")
        for f in quadratic_calls[:6]:
            lines.append(f"    {f['function']}: {f['calls'][0]:,} -> {f['calls'][1]:,} calls (x{f['growth']})")
    else:
        lines.append("  no function's call count grows faster than the number of deltas")
    lines.append("  verdict: read cost " + ("GROWS FASTER THAN LINEARLY in the number of deltas"
                                          if analysis["superlinear"]
                                          else "grows linearly with the data and the number of deltas"))
    return lines


def spark_growth_and_history_lines(spark_growth: list[dict], hist: list[dict]) -> list[str]:
    lines = ["Spark scans at the checkpoints, per delta dir beyond the data's growth (medians; wall / CPU ms):"]
    for g in spark_growth:
        cells = [f"{label} {g[f'{k}_wall_ms_per_delta']:>6.1f} / {g[f'{k}_cpu_ms_per_delta']:>5.1f}"
                 for k, label in (("spark_acidorc", "Spark acidorc"), ("spark_native", "native"),
                                  ("engine_free", "engine-free"))]
        lines.append(f"  {g['steps']:>6} steps {g['delta_dirs']:>5} deltas: " + ", ".join(cells))
    lines.append("")
    lines.append("the history itself (engine-free statements; a DELETE reads the table, so it slows like a scan):")
    for h in hist:
        lines.append(f"  steps {h['steps']:>8}: append {h['append_ms_median']:>6.1f} ms, delete "
                     + (f"{h['delete_ms_median']:>6.1f} ms" if h["delete_ms_median"] is not None else "     -")
                     + f" (median); {h['seconds']:.1f}s in all")
    return lines


def compaction_lines(bench: CompactionRun, minor_quadratic: list[dict]) -> list[str]:
    lines = [f"compaction of the {bench.n_last}-step state vs a native rewrite of the same rows "
             f"(spark.read.orc + write.orc, median {bench.rewrite_med:.2f}s, CPU {bench.rewrite_cpu:.1f}s)"]
    lines.append(f"  {'compaction':<42}{'wall s':>7}{'vs native':>10}{'CPU s jvm+py+drv':>18}{'in files':>9}"
                 f"{'in rows':>11}{'out':>5}{'vacuum':>8}")
    for c in bench.compactions:
        m, cpu = c["metrics"], c["cpu_jvm_py_driver"]
        lines.append(f"  {c['label']:<42}{c['wall']:>7.2f}{c['vs_native_rewrite']:>9.2f}x"
                     f"{f'{cpu[0]:.1f}+{cpu[1]:.1f}+{cpu[2]:.1f}':>18}{m['numInputFiles']:>9}{m['numInputRows']:>11,}"
                     f"{m['numOutputFiles']:>5}{c['vacuum_seconds']:>7.2f}s")
    probes = bench.probes
    if probes:
        lines.append("")
        lines.append("compaction as the deltas pile up (in-process, on a copy at each checkpoint; wall s / CPU s):")
        lines.append(f"  {'steps':>6}{'deltas':>8}{'minor':>14}{'minor calls':>13}{'calls/delta':>13}{'major':>14}")
        for pr in probes:
            lines.append(f"  {pr['steps']:>6}{pr['delta_dirs']:>8}{pr['minor_s']:>7.2f}/{pr['minor_cpu_s']:<6.2f}"
                         f"{pr['minor_python_calls']:>13,}{pr['minor_python_calls'] / max(1, pr['delta_dirs']):>13.0f}"
                         f"{pr['major_s']:>7.2f}/{pr['major_cpu_s']:<6.2f}")
        if minor_quadratic:
            lines.append(f"  minor compaction: call counts growing faster than the deltas "
                         f"(x{minor_quadratic[0]['deltas_growth']} deltas from step {minor_quadratic[0]['steps'][0]} "
                         f"to {minor_quadratic[0]['steps'][1]}):")
            for f in minor_quadratic[:6]:
                lines.append(f"    {f['function']}: {f['calls'][0]:,} -> {f['calls'][1]:,} calls (x{f['growth']})")
        elif len(probes) >= 2:
            lines.append("  minor compaction: no function's call count grows faster than the number of deltas")
    return lines


def report_and_save(bench: CompactionRun, stamp: str, base: dict, analysis: dict, profiles: dict,
                    t_start: float) -> None:
    args, checkpoints = bench.args, bench.checkpoints
    timed = sum(cp["timed_wall"] for cp in checkpoints)
    others = sum(cp["others_cpu"] for cp in checkpoints)
    contention = bc.contention_share(others, timed, bench.meter)
    loads = [cp["load_average"] for cp in checkpoints]
    hist = history_intervals(bench.steps, bench.step_log)
    lines = checkpoint_lines(bench, stamp) + [""] + read_cost_lines(analysis, args.light_repeat) + [""]
    lines += spark_growth_and_history_lines(analysis["spark_growth"], hist) + [""]
    lines += compaction_lines(bench, analysis["minor_quadratic"])
    if contention is not None:
        lines.append("")
        load_range = f"{min(x or 0 for x in loads)} .. {max(x or 0 for x in loads)}"
        lines.append(bc.contention_line(contention, "scans", load_range))
    for name, p in profiles.items():
        lines.append("")
        lines.append(f"where the in-process {name} of the {bench.n_last}-step state spends its time (cProfile: "
                     f"{p['seconds_under_profiler']:.2f}s; {p['profile_file']}):")
        lines.extend(profile_lines(p))
    lines.append(f"(whole run {time.perf_counter() - t_start:.0f}s)")
    report = bc.print_report(lines)
    bc.write_results(args.results_dir, "compaction", stamp, bc.machine_info(args.driver_memory, loads, contention),
                     result_record(bench, base, analysis, hist, profiles, report))


def result_record(bench: CompactionRun, base: dict, analysis: dict, hist: list[dict], profiles: dict,
                  report: str) -> dict:
    args = bench.args
    return {
        "params": {"rows": args.rows, "steps": bench.steps, "append_rows": args.append_rows,
                   "delete_every": args.delete_every, "delete_rows": args.delete_rows, "repeat": args.repeat,
                   "rewrite_repeat": args.rewrite_repeat, "tasks": args.tasks, "acid_compression": "zlib",
                   "native_codec": bench.native_codec, "seed": SEED},
        "base": base,
        "checkpoints": [{k: v for k, v in cp.items() if k != "native_dir"} for cp in bench.checkpoints],
        "in_process_points": bench.light_points,
        "read_cost_per_delta": analysis["series"],
        "fits": analysis["fits"],
        "superlinear_call_counts": analysis["quadratic_calls"],
        "files_opened_linear": analysis["files_linear"],
        "read_cost_superlinear": analysis["superlinear"],
        "spark_read_cost_per_delta": analysis["spark_growth"],
        "history": {"per_interval": hist, "steps": bench.step_log},
        "native_rewrite": {"runs": [round(r["wall"], 3) for r in bench.rewrites],
                           "median_seconds": round(bench.rewrite_med, 3),
                           "cpu_seconds_median": round(bench.rewrite_cpu, 2)},
        "compactions": bench.compactions,
        "compaction_probes": bench.probes,
        "minor_superlinear_call_counts": analysis["minor_quadratic"],
        "profiles": profiles,
        "report": report,
    }


if __name__ == "__main__":
    sys.exit(main())
