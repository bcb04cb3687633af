"""Read benchmark: a full scan of a 10M-row Hive ACID table through ``acidorc`` versus Spark's
native ORC reader on the same visible rows stored as plain ORC.

    python benchmarks/read_benchmark.py [--rows N] [--data-dir DIR] [--repeat K]

See benchmarks/README.md for what is measured and how to read the table.
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_common as bc  # noqa: E402
import bench_table as bt  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from bench_common import cumtime, log  # noqa: E402

from acid_source.orc.files import OrcFile  # noqa: E402
from acid_source.resolve import scan_for  # noqa: E402
from acid_source.scan.reader import ScanMetrics, read_split  # noqa: E402
from acid_source.spark.options import read_spec  # noqa: E402
from acid_source.storage import Storage  # noqa: E402

TARGET_RATIO = 1.5


# --- core (no Spark) ---------------------------------------------------------------------------
def core_scan(table: str, options: dict | None = None, profile: cProfile.Profile | None = None,
              checksum: bool = True) -> dict:
    """Plan and read every split in this process, with acidorc's ScanMetrics."""
    opts = {"path": table, **(options or {})}
    t0 = time.perf_counter()
    scan = scan_for(read_spec(opts))
    ctx, splits = scan.plan(scan.infer_schema())
    plan_s = time.perf_counter() - t0
    metrics = ScanMetrics()
    rows = sum_id = 0
    t1 = time.perf_counter()
    if profile:
        profile.enable()
    for split in splits:
        for batch in read_split(split, ctx, metrics):
            rows += batch.num_rows
            if checksum:
                sum_id += int(pc.sum(batch.column(0)).as_py() or 0)
    if profile:
        profile.disable()
    read_s = time.perf_counter() - t1
    return {
        "options": options or {},
        "splits": len(splits),
        "sliced_splits": sum(s.sliced for s in splits),
        "plan_seconds": round(plan_s, 3),
        "read_seconds": round(read_s, 3),
        "rows": rows,
        "sum_id": sum_id,
        "metrics": {k: getattr(metrics, k) for k in metrics.__dataclass_fields__},
    }


def auto_split_bytes(table: Path) -> int:
    """The largest stripe of the base files, rounded up to a MiB: every base stripe becomes a
    split of its own, the small delta files of a bucket share one."""
    storage = Storage(str(table))
    largest = 0
    for f in sorted((table / bt.base_name(bt.BASE_WRITE_ID)).glob("bucket_*")):
        largest = max([largest] + [s.length for s in OrcFile(storage, str(f)).stripes])
    return max(1, math.ceil(largest / 2**20)) * 2**20


# --- a pyarrow-ORC Python data source: the floor for any Python source --------------------------
def _floor_source():
    """``arrowfloor``: plain ORC files read with pyarrow in a Python data source, stripe by
    stripe, sliced like acidorc's batches. No ACID logic at all, so (its time - native time) is
    what Spark's Python data source path itself costs (worker, Arrow transfer, row conversion)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from pyspark.sql.pandas.types import from_arrow_schema

    spark_schema = from_arrow_schema(bt.ARROW_SCHEMA)  # captured by value: workers cannot import bt

    class FilePartition(InputPartition):
        def __init__(self, path):
            super().__init__(path)
            self.path = path

    class FloorReader(DataSourceReader):
        def __init__(self, path):
            self.path = path

        def partitions(self):
            return [FilePartition(str(p)) for p in sorted(Path(self.path).glob("*.orc"))]

        def read(self, partition):
            import pyarrow.orc as po

            f = po.ORCFile(partition.path)
            for i in range(f.nstripes):
                batch = f.read_stripe(i)
                for off in range(0, batch.num_rows, 1 << 17):
                    yield batch.slice(off, 1 << 17)

    class FloorSource(DataSource):
        @classmethod
        def name(cls):
            return "arrowfloor"

        def schema(self):
            return spark_schema

        def reader(self, schema):
            return FloorReader(self.options["path"])

    return FloorSource


# --- Spark ----------------------------------------------------------------------------------------
def fingerprint(df) -> dict:
    """Row count, sum of ids and a sum of per-row hashes over all columns (decimal, no overflow)."""
    from pyspark.sql import functions as F

    row = df.agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum("id").alias("sum_id"),
        F.sum(F.xxhash64(*df.columns).cast("decimal(38,0)")).alias("hash"),
    ).first()
    return {"rows": int(row["rows"]), "sum_id": int(row["sum_id"] or 0), "hash": str(row["hash"])}


def timed_noop(df, meter: bc.CpuMeter) -> dict:
    """A noop write of ``df`` (every column of every row), measured: ``CpuMeter.run``'s record."""
    return meter.run(lambda: df.write.format("noop").mode("overwrite").save())


# --- profiling ----------------------------------------------------------------------------------
def profile_core(table: str, out_dir: Path, stamp: str) -> dict:
    """cProfile of the default plan's read_split, attributed to the reader's stages."""
    prof = cProfile.Profile()
    result = core_scan(table, profile=prof, checksum=False)
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values())
    reader, visibility, files = "scan/reader.py", "scan/visibility.py", "acid_source/orc/files.py"
    decode = cumtime(stats, "read_stripe", files, ("_acid_rows", "_original_rows", "_insert_only"))
    visible = cumtime(stats, "_visible", visibility)
    shape = cumtime(stats, "_shape", reader)
    columns = cumtime(stats, "_columns_of", reader, ("_shape",))
    output = cumtime(stats, "_output", reader, ("_shape",))
    stages = {
        "ORC decode of insert stripes (pyarrow read_stripe, all 6 ACID columns)": decode,
        "anti-join probe (KeySet.contains: searchsorted per stripe)":
            cumtime(stats, "contains", visibility, ("_acid_rows",)),
        "visibility masks (_visible: write-id mask, key masks)": visible,
        "delete events (read delete stripes, key ranges, KeySet sort)": cumtime(stats, "_load_deletes", visibility),
        "write-id validity + key arrays (to_numpy)":
            cumtime(stats, "valid_write_id_mask", visibility, ("_acid_rows",))
            + cumtime(stats, "key_arrays", visibility, ("_acid_rows",)),
        "column extraction / casts / filtering hidden rows (_columns_of)": columns,
        "output batches (_output, 128k-row slices)": output,
        "shaping, other (_shape minus the above)": max(0.0, shape - columns - output),
    }
    stages["other (planning helpers, file opens, generators)"] = max(0.0, total - sum(stages.values()))
    prof_path = out_dir / f"read_{stamp}.prof"
    prof.dump_stats(str(prof_path))
    return {
        "read_seconds_under_profiler": result["read_seconds"],
        "profile_file": bc.rel_path(prof_path),
        "stages": {k: round(v, 3) for k, v in stages.items()},
        "total_seconds": round(total, 3),
        "top_functions": bc.top_functions(stats),
    }


# --- main -------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    args = parse_args(argv)
    stamp = bc.timestamp()
    bench = ReadRun(args)
    bench.prepare_table()
    bench.core_reads()
    bench.spark_scans()
    bench.profile_if_needed(stamp)
    report = bc.print_report(report_lines(bench, stamp))
    bc.write_results(args.results_dir, "read", stamp,
                     bc.machine_info(args.driver_memory, bench.loads, bench.contention), result_record(bench, report))
    return 0


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows inserted in total (default 10M)")
    ap.add_argument("--data-dir", type=Path, default=HERE / "data", help="cache of generated tables")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per scenario, after one warm-up")
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--stripe-rows", type=int, default=1_000_000, help="rows per stripe of base/delta files")
    ap.add_argument("--delete-stripe-rows", type=int, default=25_000, help="events per stripe of delete files")
    ap.add_argument("--split-bytes", default="auto",
                    help="maxSplitBytes of the split scenario (default: the largest base stripe)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--profile", choices=("auto", "always", "never"), default="auto",
                    help="cProfile acidorc's read_split in-process (auto: when the ratio exceeds 1.5)")
    ap.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.rows < 1000 or args.buckets < 1 or args.stripe_rows < 1 or args.delete_stripe_rows < 1:
        ap.error("--rows must be at least 1000; --buckets and the stripe sizes at least 1")
    return args


class ReadRun:
    """One run's table, measurements and results; its methods are the run's phases, in the
    order ``main`` calls them."""

    def __init__(self, args):
        self.args = args
        self.params = bt.Params(rows=args.rows, buckets=args.buckets, stripe_rows=args.stripe_rows,
                                delete_stripe_rows=args.delete_stripe_rows)
        self.profile = None

    # 1. data (cached), and a byte-for-byte check of the generator against tests/hivegen.py
    def prepare_table(self) -> None:
        args, params = self.args, self.params
        t0 = time.perf_counter()
        check = self.check = bt.self_check(args.data_dir / "_selfcheck")
        log(f"generator check: {check['files_compared']} files byte-identical to tests/hivegen.py "
            f"({time.perf_counter() - t0:.1f}s; hivegen itself costs {check['hivegen_us_per_row']} us/row)")
        root, manifest = bt.ensure(params, args.data_dir, log=log)
        self.manifest = manifest
        self.table, self.plain = str(root / "table"), str(root / "plain")
        expected = self.expected = manifest["expected"]
        log(f"table: {self.table}\n  {params.rows:,} rows inserted ({params.base_rows:,} in base_0000001, "
            f"10 deltas of {params.delta_rows:,}), {expected['deleted']:,} deleted by 3 delete deltas -> "
            f"{expected['rows']:,} visible; {manifest['acid_files']} files, {manifest['acid_bytes'] / 2**20:.0f} MiB "
            f"({'cached' if manifest['cached'] else 'built in ' + str(manifest['build_seconds']) + 's'})")
        self.split_bytes = auto_split_bytes(root / "table") if args.split_bytes == "auto" else \
            read_spec({"path": "x", "maxSplitBytes": args.split_bytes}).max_split_bytes
        self.split_label = f"maxSplitBytes={self.split_bytes / 2**20:.0f}m"

    # 2. core in-process: skip counters for the default plan and the split plan
    def core_reads(self) -> None:
        table, expected = self.table, self.expected
        log("core read in-process (1 thread, no Spark) for the key-index counters ...")
        core_scan(table)  # warm-up: page cache, imports

        def best_of_two(options=None):
            runs = [core_scan(table, options) for _ in range(2)]
            return min(runs, key=lambda r: r["read_seconds"])

        self.core = {"default": best_of_two(), "split": best_of_two({"maxSplitBytes": str(self.split_bytes)})}
        for name, c in self.core.items():
            if (c["rows"], c["sum_id"]) != (expected["rows"], expected["sum_id"]):
                raise SystemExit(f"core read ({name}) returned {c['rows']} rows / sum {c['sum_id']}, "
                                 f"expected {expected['rows']} / {expected['sum_id']}")

    # 3. Spark: the same session for all scenarios
    def spark_scans(self) -> None:
        table, plain, split_bytes = self.table, self.plain, self.split_bytes
        spark = bc.start_spark("acidorc-read-benchmark", self.args.driver_memory, HERE / "data" / "spark-warehouse")
        spark.dataSource.register(_floor_source())
        self.scenarios = {
            "acidorc": lambda: spark.read.format("acidorc").load(table),
            "native_orc": lambda: spark.read.orc(plain),
            "acidorc_split": lambda: spark.read.format("acidorc").option("maxSplitBytes", str(split_bytes))
            .load(table),
            "pyarrow_python_ds": lambda: spark.read.format("arrowfloor").load(plain),
        }
        frames = self.load_and_verify()
        meter = bc.CpuMeter(bc.jvm_pid(spark))
        for name, df in frames.items():  # warm-up (JIT, page cache, Python workers)
            timed_noop(df, meter)
        runs, self.loads, self.contention = bc.round_robin(self.scenarios, self.args.repeat,
                                                           lambda n, _: timed_noop(frames[n], meter), meter)
        bc.stop_spark(spark)
        self.times = {n: [r["wall"] for r in rs] for n, rs in runs.items()}
        self.cpu = {n: [(r["jvm"], r["py"]) for r in rs] for n, rs in runs.items()}
        self.median = {n: bc.median(t) for n, t in self.times.items()}
        self.cpu_median = bc.cpu_medians(runs)
        self.ratio = self.median["acidorc"] / self.median["native_orc"]
        self.cpu_ratio = None
        if "acidorc" in self.cpu_median and "native_orc" in self.cpu_median:
            self.cpu_ratio = sum(self.cpu_median["acidorc"]) / max(1e-9, sum(self.cpu_median["native_orc"]))

    def load_and_verify(self) -> dict:
        """Every scenario's DataFrame, its load time, tasks and fingerprint; all must read the
        plain copy's rows."""
        expected = self.expected
        frames, self.load_s, self.partitions, prints = {}, {}, {}, {}
        for name, make in self.scenarios.items():
            t0 = time.perf_counter()
            frames[name] = make()
            self.load_s[name] = time.perf_counter() - t0
            self.partitions[name] = frames[name].rdd.getNumPartitions()
            prints[name] = fingerprint(frames[name])
            log(f"  {name}: {self.partitions[name]} tasks, fingerprint {prints[name]}  "
                f"({time.perf_counter() - t0:.1f}s)")
        reference = prints["native_orc"]
        if (reference["rows"], reference["sum_id"]) != (expected["rows"], expected["sum_id"]):
            raise SystemExit(f"the plain copy holds {reference}, expected {expected}")
        mismatched = [n for n, fp in prints.items() if fp != reference]
        if mismatched:
            raise SystemExit(f"results differ from the plain copy: {({n: prints[n] for n in mismatched})} "
                             f"vs {reference}")
        log(f"verified: every scenario returns {reference['rows']:,} rows, sum(id) {reference['sum_id']:,}, "
            f"same hash of all columns")
        self.prints = prints
        return frames

    # 4. profile acidorc's side when it misses the target
    def profile_if_needed(self, stamp: str) -> None:
        args = self.args
        if args.profile == "always" or (args.profile == "auto" and self.ratio > TARGET_RATIO):
            log("profiling read_split in-process (cProfile) ...")
            args.results_dir.mkdir(parents=True, exist_ok=True)
            self.profile = profile_core(self.table, args.results_dir, stamp)

    def labels(self) -> dict[str, str]:
        return {
            "acidorc": "acidorc, default plan",
            "native_orc": "Spark native ORC, plain copy",
            "acidorc_split": f"acidorc, {self.split_label}",
            "pyarrow_python_ds": "pyarrow ORC in a Python DS (floor)",
        }


# --- 5. report ----------------------------------------------------------------------------------------
def report_lines(bench: ReadRun, stamp: str) -> list[str]:
    params, manifest, rows = bench.params, bench.manifest, bench.expected["rows"]
    median, labels = bench.median, bench.labels()
    lines = [
        bc.header_line("read", stamp, "noop write of every column"),
        f"table: {params.rows:,} rows inserted, {rows:,} visible (base + 10 deltas + 3 delete deltas, "
        f"{params.buckets} buckets, {manifest['acid_bytes'] / 2**20:.0f} MiB); plain copy "
        f"{manifest['plain_bytes'] / 2**20:.0f} MiB",
        "",
        f"{'scenario':<35}{'tasks':>6}{'median s':>9}{'rows/s':>12}{'vs native':>10}"
        f"{'CPU s jvm+py':>15}   runs (s)",
    ]
    for name in bench.scenarios:
        c = bench.cpu_median.get(name)
        cpu_text = f"{c[0]:.1f}+{c[1]:.1f}" if c else "n/a"
        lines.append(f"{labels[name]:<35}{bench.partitions[name]:>6}{median[name]:>9.2f}{rows / median[name]:>12,.0f}"
                     f"{median[name] / median['native_orc']:>9.2f}x{cpu_text:>15}   "
                     + " ".join(f"{t:.2f}" for t in bench.times[name]))
    verdict = "MET" if bench.ratio <= TARGET_RATIO else "NOT MET"
    lines.append(f"ratio acidorc/native (median wall) = {bench.ratio:.2f}, target <= {TARGET_RATIO}: {verdict}"
                 + (f"; CPU-seconds ratio {bench.cpu_ratio:.2f}" if bench.cpu_ratio else ""))
    if bench.contention is not None:
        lines.append(bc.contention_line(bench.contention))
    lines.append("")
    lines += core_lines(bench)
    if bench.profile:
        lines.append("")
        lines.append(f"where read_split's time goes (default plan, cProfile: "
                     f"{bench.profile['read_seconds_under_profiler']:.2f}s; {bench.profile['profile_file']}):")
        lines.extend(bc.stage_lines(bench.profile))
    return lines


def core_lines(bench: ReadRun) -> list[str]:
    lines = [f"{'acidorc core in-process (1 thread, best of 2)':<46}{'splits':>7}{'read s':>8}{'rows/s':>12}"
             f"{'delete stripes read':>21}{'skipped':>9}{'events loaded':>15}"]
    for name, c in bench.core.items():
        label = "default plan" if name == "default" else bench.split_label
        m = c["metrics"]
        lines.append(f"  {label:<44}{c['splits']:>7}{c['read_seconds']:>8.2f}{c['rows'] / c['read_seconds']:>12,.0f}"
                     f"{m['delete_stripes_read']:>21}{m['delete_stripes_skipped']:>9}{m['delete_events_loaded']:>15,}")
    return lines


def result_record(bench: ReadRun, report: str) -> dict:
    manifest, ratio, cpu_ratio = bench.manifest, bench.ratio, bench.cpu_ratio
    return {
        "params": {**manifest["params"], "repeat": bench.args.repeat, "split_bytes": bench.split_bytes},
        "data": {k: manifest[k] for k in ("key", "expected", "build_seconds", "build_cpu_seconds", "acid_files",
                                            "acid_bytes", "acid_events", "plain_bytes", "cached")},
        "generator_check": bench.check,
        "verification": bench.prints,
        "scenarios": {n: scenario_record(bench, n) for n in bench.scenarios},
        "ratio_acidorc_native": round(ratio, 3),
        "cpu_ratio_acidorc_native": round(cpu_ratio, 3) if cpu_ratio else None,
        "target_ratio": TARGET_RATIO,
        "target_met": ratio <= TARGET_RATIO,
        "core_in_process": bench.core,
        "profile": bench.profile,
        "report": report,
    }


def scenario_record(bench: ReadRun, n: str) -> dict:
    median, cpu_median, rows = bench.median, bench.cpu_median, bench.expected["rows"]
    return {"label": bench.labels()[n], "tasks": bench.partitions[n], "load_seconds": round(bench.load_s[n], 3),
            "runs": [round(t, 3) for t in bench.times[n]], "median_seconds": round(median[n], 3),
            "rows_per_second": round(rows / median[n]),
            "vs_native": round(median[n] / median["native_orc"], 3),
            "cpu_runs_jvm_python": [[None if x is None else round(x, 2) for x in c] for c in bench.cpu[n]],
            "cpu_median_jvm_python": [round(x, 2) for x in cpu_median[n]] if n in cpu_median else None}


if __name__ == "__main__":
    sys.exit(main())
