"""Write benchmark: an append of 5M rows through ``acidorc`` versus Spark's native ORC writer
(``df.write.orc``), from the same cached DataFrame, in one SparkSession.

    python benchmarks/write_benchmark.py [--rows N] [--repeat K] [--partitions P] [--tasks T]

See benchmarks/README.md for what is measured and how to read the table.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_common as bc  # noqa: E402
import pyarrow as pa  # noqa: E402
from bench_common import cumtime, log  # noqa: E402

TARGET_RATIO = 1.5
DAY0 = "2026-01-01"


# --- the data ---------------------------------------------------------------------------------------
def make_frame(spark, rows: int, tasks: int, days: int):
    """id bigint, name string (1% null), amount double, day date (``days`` distinct values),
    price decimal(12,2): every value a hash of the id, so columns do not compress to nothing and
    every batch holds every day (the hard case for routing rows to partitions)."""
    from bench_table import NAMES  # the read benchmark's 1024 names
    from pyspark.sql import functions as F

    h = F.xxhash64("id")
    names = F.array(*[F.lit(n) for n in NAMES])
    return spark.range(0, rows, 1, tasks).select(
        F.col("id"),
        F.when(F.pmod(h, F.lit(100)) == 0, F.lit(None).cast("string"))
         .otherwise(F.element_at(names, (F.pmod(h, F.lit(1024)) + 1).cast("int"))).alias("name"),
        F.round(F.pmod(F.shiftright(h, 11), F.lit(10_000_000)) / 100.0, 2).alias("amount"),
        F.date_add(F.lit(DAY0).cast("date"), F.pmod(F.shiftright(h, 20), F.lit(days)).cast("int")).alias("day"),
        (F.pmod(F.shiftright(h, 32), F.lit(100_000_000)) / 100).cast("decimal(12,2)").alias("price"),
    )


COLUMNS = ("id", "name", "amount", "day", "price")


def fingerprint(df, id_col: str = "id", columns=COLUMNS, days: bool = False) -> dict:
    """Row count, sum of ids and a sum of per-row hashes over the data columns (by name, so a
    partition column moved to the end does not matter); with ``days``, distinct days too."""
    from pyspark.sql import functions as F

    extra = [F.countDistinct("day").alias("partitions")] if days else []
    row = df.agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum(id_col).alias("sum_id"),
        F.sum(F.xxhash64(*columns).cast("decimal(38,0)")).alias("hash"),
        *extra,
    ).first()
    out = {"rows": int(row["rows"]), "sum_id": int(row["sum_id"] or 0), "hash": str(row["hash"])}
    if days:
        out["partitions"] = int(row["partitions"])
    return out


def quick_check(df, id_col: str = "id") -> dict:
    from pyspark.sql import functions as F

    row = df.agg(F.count(F.lit(1)).alias("rows"), F.sum(id_col).alias("sum_id")).first()
    return {"rows": int(row["rows"]), "sum_id": int(row["sum_id"] or 0)}


# --- Python data sources that isolate the cost of Spark's Arrow path --------------------------------
# (classes made inside functions: cloudpickle ships them to the Python workers by value)
def _floor_sources():
    """``arrowdiscard``: a Python Arrow writer that only counts rows - what Spark's Python data
    source write path itself costs (rows -> Arrow in the JVM, the transfer, the worker).
    ``arrowplainorc``: the same with each task's batches written as plain ORC by pyarrow (same
    codec and stripe size as acidorc, no ACID columns, no footer patch, no routing).
    Both leave ``_tasks.json`` (rows and batch sizes per task) in the output directory; the plain
    writer also leaves its files there. With option ``capture``, ``arrowdiscard`` stores each
    task's batches as an Arrow IPC file instead, for replaying them in-process."""
    from pyspark.sql.datasource import DataSource

    CountingWriter = _counting_writer_class()

    class Discard(DataSource):
        @classmethod
        def name(cls):
            return "arrowdiscard"

        def writer(self, schema, overwrite):
            return CountingWriter(self.options)

    class PlainOrc(DataSource):
        @classmethod
        def name(cls):
            return "arrowplainorc"

        def writer(self, schema, overwrite):
            return CountingWriter({**self.options, "plain_orc": "true"})

    return Discard, PlainOrc


def _task_stats_class():
    """The commit message of a floor writer's task: its rows and batch sizes."""
    from pyspark.sql.datasource import WriterCommitMessage

    class TaskStats(WriterCommitMessage):
        def __init__(self, task, rows, batches, smallest, largest, schema):
            self.info = {"task": task, "rows": rows, "batches": batches, "smallest_batch": smallest,
                         "largest_batch": largest, "schema": schema}

    return TaskStats


def _sink_opener():
    """Where a floor writer's task puts its batches: (put, close) of a plain ORC file or an Arrow
    IPC capture file, or (None, None) when it only counts them."""

    def open_sink(writer, task, schema):
        import os

        import pyarrow as pa
        import pyarrow.orc as po

        os.makedirs(writer.path, exist_ok=True)
        if writer.plain_orc:
            w = po.ORCWriter(os.path.join(writer.path, f"part-{task:05d}.orc"), stripe_size=writer.stripe_size,
                             compression=writer.compression)
            return (lambda b: w.write(pa.Table.from_batches([b]))), w.close
        if writer.capture:
            w = pa.ipc.new_file(os.path.join(writer.path, f"task-{task:05d}.arrow"), schema)
            return w.write_batch, w.close
        return None, None

    return open_sink


def _counting_writer_class():
    """The floor sources' writer: counts each task's rows and batches; writes them as plain ORC
    (option ``plain_orc``) or captures them as Arrow IPC (option ``capture``) if asked."""
    from pyspark.sql.datasource import DataSourceArrowWriter

    TaskStats, open_sink = _task_stats_class(), _sink_opener()

    class CountingWriter(DataSourceArrowWriter):
        def __init__(self, options):
            self.path = options["path"]
            self.capture = options.get("capture", "false") == "true"
            self.compression = options.get("compression", "zlib")
            self.stripe_size = int(options.get("stripe_size", 8 * 1024 * 1024))
            self.plain_orc = options.get("plain_orc", "false") == "true"

        def _sink(self, task, schema):
            return open_sink(self, task, schema)

        def write(self, iterator):
            from pyspark import TaskContext

            ctx = TaskContext.get()
            task = ctx.partitionId() if ctx else 0
            rows = batches = 0
            smallest, largest, schema = None, 0, None
            put = close = None
            for batch in iterator:
                if put is None and (self.capture or self.plain_orc):
                    put, close = self._sink(task, batch.schema)
                if put is not None:
                    put(batch)
                n = batch.num_rows
                rows += n
                batches += 1
                smallest = n if smallest is None else min(smallest, n)
                largest = max(largest, n)
                schema = schema or str(batch.schema)
            if close is not None:
                close()
            return TaskStats(task, rows, batches, smallest, largest, schema)

        def commit(self, messages):
            import json
            import os

            os.makedirs(self.path, exist_ok=True)
            with open(os.path.join(self.path, "_tasks.json"), "w") as f:
                json.dump([m.info for m in messages if m is not None], f)

        def abort(self, messages):
            pass

    return CountingWriter


def task_stats(path: str) -> list[dict]:
    return json.loads((Path(path) / "_tasks.json").read_text())


# --- in-process: TaskWriter over the batches Spark handed to the tasks ------------------------------
def load_capture(capture_dir: Path) -> list[tuple[int, list[pa.RecordBatch]]]:
    """The captured batches of every task (memory-mapped, zero-copy), so that reading them is
    not part of any measurement."""
    tasks = []
    for f in sorted(capture_dir.glob("task-*.arrow")):
        reader = pa.ipc.open_file(pa.memory_map(str(f)))
        tasks.append((int(f.stem.split("-")[1]), [reader.get_batch(i) for i in range(reader.num_record_batches)]))
    return tasks


def replay_tasks(tasks, table: str, metastore_url: str, options: dict | None = None,
                 profile: cProfile.Profile | None = None) -> dict:
    """Write the tasks' batches through the staged write the Spark writer runs (one task writer per
    task), sequentially in this process (one thread), and commit - what the Spark tasks do, without
    Spark."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    from acid_source.spark.options import write_spec
    from acid_source.writes import stage_write

    # the schema and options the Spark writer stages the write with (AcidOrcDataSource.writer)
    spark_schema = to_arrow_schema(from_arrow_schema(tasks[0][1][0].schema), timezone="UTC")
    spec = write_spec({"path": table, "metastoreUrl": metastore_url, **(options or {})})
    with stage_write(spec, overwrite=False, data_schema=spark_schema) as staged:
        results = []
        t0, c0 = time.perf_counter(), time.process_time()
        if profile:
            profile.enable()
        for task_id, batches in tasks:
            task = staged.writer(task_id)
            for batch in batches:
                task.write(batch)
            results.append(task.close())
        if profile:
            profile.disable()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        staged.commit(results)
    return {"rows": sum(r.rows for r in results), "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
            "files": sum(len(r.files) for r in results), "batches": sum(len(b) for _, b in tasks),
            "bytes": sum(os.path.getsize(f.path) for r in results for f in r.files)}


def replay_plain_orc(tasks, out_dir: Path, compression: str) -> dict:
    """The same batches written as plain rows by pyarrow's ORC writer, with acidorc's stripe size
    and codec: the ORC encoding cost without the five ACID columns, the row struct and the footer
    patch."""
    import pyarrow.orc as po

    from acid_source.orc.writer import DELTA_STRIPE_SIZE

    out_dir.mkdir(parents=True, exist_ok=True)
    t0, c0 = time.perf_counter(), time.process_time()
    size = 0
    for task_id, batches in tasks:
        path = out_dir / f"part-{task_id:05d}.orc"
        writer = po.ORCWriter(str(path), stripe_size=DELTA_STRIPE_SIZE, compression=compression)
        for batch in batches:
            writer.write(pa.Table.from_batches([batch]))
        writer.close()
        size += path.stat().st_size
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"rows": sum(b.num_rows for _, bs in tasks for b in bs), "seconds": round(seconds, 3),
            "cpu_seconds": round(cpu, 3), "files": len(tasks), "batches": sum(len(b) for _, b in tasks),
            "bytes": size}


def profile_stages(stats: pstats.Stats) -> tuple[dict, float]:
    """Seconds of a TaskWriter profile per stage of the write path. Cython calls (pa.array,
    StructArray.from_arrays, ...) are not seen by cProfile: they count in their caller."""
    task, rows_py, writer = "write/task.py", "write/rows.py", "orc/writer.py"
    total = sum(v[2] for v in stats.stats.values())
    orc_write = cumtime(stats, "write", "pyarrow/orc.py", ("write",))
    orc_close = cumtime(stats, "close", "pyarrow/orc.py", ("close",))
    insert_write = cumtime(stats, "write", writer, ("write",))
    insert_close = cumtime(stats, "close", writer, ("close",))
    stripe_counts = cumtime(stats, "_stripe_row_counts", writer)
    patch = cumtime(stats, "append_user_metadata", writer)
    key_index = cumtime(stats, "format_key_index", "orc/files.py")
    new_writer = cumtime(stats, "_writer", task)
    close_task = cumtime(stats, "close", task)
    stages = {
        "intake: _data_columns (column lookup, casts, RecordBatch.from_arrays)": cumtime(stats, "_data_columns", task),
        "routing: group_rows (sort + take by partition key), partition_path":
            cumtime(stats, "group_rows", rows_py) + cumtime(stats, "partition_path", rows_py)
            + cumtime(stats, "_with_keys", task),
        "ACID event columns (np.full/arange, pa.array, StructArray, RecordBatch, Table)": insert_write - orc_write,
        "ORC encoding: pyarrow ORCWriter.write (Arrow -> ORC, RLE, codec)": orc_write,
        "ORC encoding: ORCWriter.close (last stripe, file footer)": orc_close,
        "footer patch: stripe row counts (_stripe_row_counts: pyorc re-opens the file)": stripe_counts,
        "footer patch: key index, append_user_metadata": patch + key_index
            + max(0.0, insert_close - orc_close - stripe_counts - patch - key_index),
        "files: open writers (ORCWriter, make_dirs, _orc_acid_version), move": new_writer + (close_task - insert_close),
    }
    stages["other (TaskWriter.write loop, select, small helpers)"] = max(0.0, total - sum(stages.values()))
    return stages, total


def profile_replay(tasks, work: Path, metastore_url: str, label: str, options: dict,
                   out_dir: Path, stamp: str, tag: str) -> dict:
    plain = replay_tasks(tasks, str(work / f"replay-{tag}"), metastore_url, options)
    prof = cProfile.Profile()
    profiled = replay_tasks(tasks, str(work / f"replay-{tag}-prof"), metastore_url, options, prof)
    stats = pstats.Stats(prof)
    stages, total = profile_stages(stats)
    prof_path = out_dir / f"write_{stamp}_{tag}.prof"
    prof.dump_stats(str(prof_path))
    for t in (f"replay-{tag}", f"replay-{tag}-prof"):
        shutil.rmtree(work / t, ignore_errors=True)
    return {
        "label": label,
        **plain,
        "rows_per_second": round(plain["rows"] / plain["seconds"]),
        "seconds_under_profiler": profiled["seconds"],
        "profile_file": bc.rel_path(prof_path),
        "total_seconds": round(total, 3),
        "stages": {k: round(v, 3) for k, v in stages.items()},
        "top_functions": bc.top_functions(stats),
    }


# --- main -------------------------------------------------------------------------------------------
NO_BYTE_LIMIT = {"spark.sql.execution.arrow.maxBytesPerBatch": "2147483647"}

DEFAULT_SCENARIOS = ("acidorc", "native_orc", "acidorc_nolimit", "acidorc_nolimit_zstd", "discard_ds",
                     "acidorc_partitioned", "native_orc_partitioned")
OPTIONAL_SCENARIOS = ("native_orc_zlib", "plain_orc_ds")


@dataclass
class Scenario:
    label: str
    write: Callable[[str], None]
    quick: Callable[[str], dict]  # count and sum(id) of the output, after every timed run
    full: Callable[[str], dict]  # + hash of all columns, after the warm-up run
    conf: dict = field(default_factory=dict)  # session settings during the write
    reference: str = "native_orc"
    acid: bool = False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000, help="rows appended per write (default 5M)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per scenario, after one warm-up")
    ap.add_argument("--partitions", type=int, default=30,
                    help="distinct days = table partitions of the partitioned variant (0: skip it)")
    ap.add_argument("--tasks", type=int, default=4, help="input partitions of the DataFrame = write tasks")
    ap.add_argument("--scenarios", default="default",
                    help="comma-separated scenario names, 'default' or 'all' "
                         f"(default: {','.join(DEFAULT_SCENARIOS)}; optional: {','.join(OPTIONAL_SCENARIOS)})")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--profile", choices=("auto", "always", "never"), default="auto",
                    help="cProfile TaskWriter in-process over the tasks' batches (auto: when the ratio exceeds 1.5)")
    ap.add_argument("--work-dir", type=Path, default=None,
                    help="where the tables are written (default: a fresh temp dir, removed at the end)")
    ap.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.rows < 1000 or args.tasks < 1 or args.partitions < 0:
        ap.error("--rows must be at least 1000, --tasks at least 1, --partitions at least 0")
    if args.scenarios in ("default", "all"):
        chosen = list(DEFAULT_SCENARIOS) + (list(OPTIONAL_SCENARIOS) if args.scenarios == "all" else [])
    else:
        chosen = [n.strip() for n in args.scenarios.split(",") if n.strip()]
        unknown = set(chosen) - set(DEFAULT_SCENARIOS) - set(OPTIONAL_SCENARIOS)
        if unknown:
            ap.error(f"unknown scenario(s) {', '.join(sorted(unknown))}")
        chosen = list(dict.fromkeys(["acidorc", "native_orc"] + chosen))  # the ratio needs both
    if not args.partitions:
        chosen = [n for n in chosen if not n.endswith("_partitioned")]

    stamp = bc.timestamp()
    with bc.scratch_dir(args.work_dir, "write") as (work, metastore_url):
        return run(args, chosen, stamp, work, metastore_url)


def run(args, chosen: list[str], stamp: str, work: Path, metastore_url: str) -> int:
    t_start = time.perf_counter()
    bench = WriteRun(args, work, metastore_url)
    bench.make_input()
    bench.define_scenarios(chosen)
    bench.warm_up_and_verify()
    bench.timed_runs()
    bench.replay_in_process(stamp)
    report = bc.print_report(report_lines(bench, stamp, t_start))
    bc.write_results(args.results_dir, "write", stamp,
                     bc.machine_info(args.driver_memory, bench.loads, bench.contention),
                     result_record(bench, chosen, report))
    return 0


class WriteRun:
    """One run's Spark session, input, scenarios and measurements; its methods are the run's
    phases, in the order ``run`` calls them."""

    acid_codec = "zlib"  # acidorc's default (Hive's)

    def __init__(self, args, work: Path, metastore_url: str):
        self.args, self.work, self.metastore_url = args, work, metastore_url
        log(f"work dir {work}, metastore {metastore_url}")
        spark = self.spark = bc.start_spark("acidorc-write-benchmark", args.driver_memory, work / "spark-warehouse")
        for floor in _floor_sources():
            spark.dataSource.register(floor)
        self.native_codec = spark.conf.get("spark.sql.orc.compression.codec")
        self.byte_limit = spark.conf.get("spark.sql.execution.arrow.maxBytesPerBatch")
        self.counter = 0
        self.in_process, self.profiles = {}, []

    # 1. the input, cached and materialized before anything is timed
    def make_input(self) -> None:
        args = self.args
        t0 = time.perf_counter()
        df = self.df = make_frame(self.spark, args.rows, args.tasks, args.partitions or 30).cache()
        df.write.format("noop").mode("overwrite").save()
        self.gen_s = time.perf_counter() - t0
        source = self.source = fingerprint(df, days=True)
        self.expected_sum = args.rows * (args.rows - 1) // 2
        if (source["rows"], source["sum_id"]) != (args.rows, self.expected_sum):
            raise SystemExit(f"the generated DataFrame holds {source}, expected {args.rows} rows / "
                             f"sum {self.expected_sum}")
        self.n_days = source.pop("partitions")
        self.input_tasks = df.rdd.getNumPartitions()
        log(f"input: {args.rows:,} rows in {self.input_tasks} partitions, {self.n_days} distinct days, cached "
            f"({self.gen_s:.1f}s); schema {df.schema.simpleString()}")

    def fresh(self, name: str) -> str:
        self.counter += 1
        return str(self.work / f"{self.counter:03d}-{name}")

    def acid_read(self, path):
        return self.spark.read.format("acidorc").load(path)

    def java_orc_check(self, path) -> dict:
        """The ACID event files through Spark's (Java) ORC reader: only possible with all six
        event columns requested - ORC's SchemaEvolution wraps any other reader schema of an
        ACID file into the event struct once more (and then fails) - so nested schema pruning is
        switched off for this query."""
        from pyspark.sql import functions as F

        spark = self.spark
        key = "spark.sql.optimizer.nestedSchemaPruning.enabled"
        before = spark.conf.get(key)
        spark.conf.set(key, "false")
        try:
            events = spark.read.option("recursiveFileLookup", "true").orc(path)
            row = events.agg(
                F.count(F.lit(1)).alias("rows"), F.sum("row.id").alias("sum_id"),
                F.min("operation").alias("min_op"), F.max("operation").alias("max_op"),
                F.min("originalTransaction").alias("min_otxn"), F.max("currentTransaction").alias("max_ctxn"),
                F.min("rowId").alias("min_row_id"), F.max("rowId").alias("max_row_id"),
                F.countDistinct("bucket").alias("bucket_values"),
            ).first().asDict()
        finally:
            spark.conf.set(key, before)
        return {k: int(v) for k, v in row.items()}

    # 2. the scenarios
    def acidorc(self, options: dict, conf: dict, label: str, partitioned=False) -> Scenario:
        def write(p):
            w = self.df.write.format("acidorc").mode("append")
            for k, v in options.items():
                w = w.option(k, v)
            w.save(p)
        return Scenario(label, write, lambda p: quick_check(self.acid_read(p)),
                        lambda p: fingerprint(self.acid_read(p), days=partitioned), conf,
                        "native_orc_partitioned" if partitioned else "native_orc", acid=True)

    def native(self, label: str, codec: str | None = None, partitioned=False) -> Scenario:
        spark = self.spark

        def write(p):
            w = self.df.write
            if codec:
                w = w.option("compression", codec)
            (w.partitionBy("day") if partitioned else w).orc(p)
        return Scenario(label, write, lambda p: quick_check(spark.read.orc(p)),
                        lambda p: fingerprint(spark.read.orc(p), days=partitioned),
                        reference="native_orc_partitioned" if partitioned else "native_orc")

    def counted(self, p):
        return {"rows": sum(t["rows"] for t in task_stats(p)), "sum_id": self.expected_sum}

    def define_scenarios(self, chosen: list[str]) -> None:
        spark, df, acid_codec, acidorc = self.spark, self.df, self.acid_codec, self.acidorc
        available = {
            "acidorc": lambda: acidorc({}, {}, "acidorc append (defaults: zlib)"),
            "native_orc": lambda: self.native(f"Spark native ORC ({self.native_codec})"),
            "acidorc_nolimit": lambda: acidorc({}, NO_BYTE_LIMIT, "acidorc, maxBytesPerBatch=INT_MAX"),
            "acidorc_nolimit_zstd": lambda: acidorc({"compression": "zstd"}, NO_BYTE_LIMIT,
                                                    "acidorc, INT_MAX + compression=zstd"),
            "native_orc_zlib": lambda: self.native("Spark native ORC (zlib)", "zlib"),
            "discard_ds": lambda: Scenario(
                "Python DS, discard batches (floor)",
                lambda p: df.write.format("arrowdiscard").mode("append").save(p),
                self.counted, lambda p: {**self.counted(p), "hash": self.source["hash"]}),
            "plain_orc_ds": lambda: Scenario(
                f"pyarrow plain ORC ({acid_codec}) in a Python DS",
                lambda p: df.write.format("arrowplainorc").option("compression", acid_codec).mode("append").save(p),
                lambda p: quick_check(spark.read.orc(p + "/*.orc")),
                lambda p: fingerprint(spark.read.orc(p + "/*.orc"))),
            "acidorc_partitioned": lambda: acidorc({"partitionColumns": "day"}, {},
                                                   "acidorc, partitionColumns=day", partitioned=True),
            "native_orc_partitioned": lambda: self.native("Spark native ORC, partitionBy(day)", partitioned=True),
        }
        self.scenarios = {n: available[n]() for n in chosen}
        self.meter = bc.CpuMeter(bc.jvm_pid(spark))

    def write_with_conf(self, sc: Scenario, path: str) -> None:
        for k, v in sc.conf.items():
            self.spark.conf.set(k, v)
        try:
            sc.write(path)
        finally:
            for k in sc.conf:
                self.spark.conf.unset(k)

    # 3. warm-up of each scenario, fully verified (hash of all columns read back)
    def warm_up_and_verify(self) -> None:
        args = self.args
        self.verification, self.outputs = {}, {}
        for name, sc in self.scenarios.items():
            path = self.fresh(name)
            t0 = time.perf_counter()
            self.write_with_conf(sc, path)
            wall = time.perf_counter() - t0
            fp = sc.full(path)
            out = self.outputs[name] = output_info(path)
            if sc.acid:
                fp["java_orc_reader"] = self.java_orc_check(path)
            if name == "discard_ds":
                out["task_batches"] = task_stats(path)
            self.verification[name] = fp
            problems = self.output_problems(fp)
            if problems:
                raise SystemExit(f"{name}: output differs from the input in {problems}: {fp} vs {self.source}")
            log(f"  warm-up {name}: {wall:.2f}s, {out['files']} files, "
                f"{out['bytes'] / 2**20:.0f} MiB, verified ({time.perf_counter() - t0:.1f}s with checks)")
            shutil.rmtree(path, ignore_errors=True)
        log(f"verified: every scenario wrote {args.rows:,} rows, sum(id) {self.expected_sum:,} and the input's hash "
            f"of all columns; acidorc's files also read by Spark's Java ORC reader (all inserts, one write id)")
        self.batch_info = self.outputs.get("discard_ds", {}).get("task_batches")

    def output_problems(self, fp: dict) -> list[str]:
        """What a written output's fingerprint gets wrong against the input."""
        problems = [k for k in ("rows", "sum_id", "hash") if fp[k] != self.source[k]]
        if "partitions" in fp and fp["partitions"] != self.n_days:
            problems.append("partitions")
        java = fp.get("java_orc_reader")
        if java and ((java["rows"], java["sum_id"], java["min_op"], java["max_op"], java["min_row_id"])
                     != (self.args.rows, self.expected_sum, 0, 0, 0) or java["min_otxn"] != java["max_ctxn"]):
            problems.append("java_orc_reader")
        return problems

    # 4. timed runs, round-robin so that drifting machine load hits every scenario alike
    def timed_run(self, name: str, rep: int) -> dict:
        sc, path = self.scenarios[name], self.fresh(name)
        r = self.meter.run(lambda: self.write_with_conf(sc, path))
        check = sc.quick(path)
        if check != {"rows": self.args.rows, "sum_id": self.expected_sum}:
            raise SystemExit(f"{name} run {rep + 1}: read back {check}")
        shutil.rmtree(path, ignore_errors=True)
        return r

    def timed_runs(self) -> None:
        runs, self.loads, self.contention = bc.round_robin(self.scenarios, self.args.repeat, self.timed_run,
                                                           self.meter)
        self.times = {n: [r["wall"] for r in rs] for n, rs in runs.items()}
        self.cpu = {n: [(r["jvm"], r["py"]) for r in rs] for n, rs in runs.items()}
        self.median = {n: bc.median(t) for n, t in self.times.items()}
        self.cpu_median = bc.cpu_medians(runs)
        self.ratio, self.cpu_ratio = self.ratio_of("acidorc"), self.cpu_ratio_of("acidorc")

    def ratio_of(self, name):
        ref = self.scenarios[name].reference
        return self.median[name] / self.median[ref] if ref in self.median else None

    def cpu_ratio_of(self, name):
        ref = self.scenarios[name].reference
        if name in self.cpu_median and ref in self.cpu_median:
            return sum(self.cpu_median[name]) / max(1e-9, sum(self.cpu_median[ref]))
        return None

    # 5. in-process TaskWriter over the very batches Spark hands the tasks (profiled if needed)
    def replay_in_process(self, stamp: str) -> None:
        args, work, url = self.args, self.work, self.metastore_url
        if not (args.profile == "always" or (args.profile == "auto" and self.ratio > TARGET_RATIO)):
            bc.stop_spark(self.spark)
            return
        log("capturing the tasks' Arrow batches, then replaying them through TaskWriter in-process ...")
        capture = Path(self.fresh("capture"))
        self.df.write.format("arrowdiscard").option("capture", "true").mode("append").save(str(capture))
        bc.stop_spark(self.spark)  # give the in-process replay the whole machine
        tasks = load_capture(capture)
        args.results_dir.mkdir(parents=True, exist_ok=True)
        in_process, profiles = self.in_process, self.profiles
        keys = ("rows", "seconds", "cpu_seconds", "files", "batches", "bytes")
        profiles.append(profile_replay(tasks, work, url, "acidorc, zlib", {}, args.results_dir, stamp, "plain"))
        in_process["acidorc, zlib"] = {k: profiles[-1][k] for k in keys}
        in_process["acidorc, zstd"] = replay_tasks(tasks, str(work / "replay-zstd"), url, {"compression": "zstd"})
        in_process[f"pyarrow ORCWriter, plain rows, {self.acid_codec}"] = replay_plain_orc(
            tasks, work / "replay-plain-orc", self.acid_codec)
        if args.partitions:
            profiles.append(profile_replay(tasks, work, url, "acidorc, zlib, partitionColumns=day",
                                           {"partitionColumns": "day"}, args.results_dir, stamp, "partitioned"))
            in_process["acidorc, zlib, partitionColumns=day"] = {k: profiles[-1][k] for k in keys}
        del tasks
        for d in (capture, work / "replay-zstd", work / "replay-plain-orc"):
            shutil.rmtree(d, ignore_errors=True)


def output_info(path: str) -> dict:
    files = bc.data_files(path)
    return {"files": len(files), "bytes": sum(f.stat().st_size for f in files)}


# --- 6. report ------------------------------------------------------------------------------------------
def report_lines(bench: WriteRun, stamp: str, t_start: float) -> list[str]:
    lines = scenario_table_lines(bench, stamp) + ratio_lines(bench)
    if bench.in_process:
        lines.append("")
        lines.append(f"{'in-process, same batches, 1 thread, Spark stopped':<52}{'files':>6}{'MiB':>5}{'wall s':>8}"
                     f"{'CPU s':>7}{'rows/s':>12}")
        for label, r in bench.in_process.items():
            lines.append(f"  {label:<50}{r['files']:>6}{r['bytes'] / 2**20:>5.0f}{r['seconds']:>8.2f}"
                         f"{r['cpu_seconds']:>7.2f}{r['rows'] / r['seconds']:>12,.0f}")
    for p in bench.profiles:
        lines.append("")
        lines.append(f"where TaskWriter's time goes ({p['label']}; cProfile: {p['seconds_under_profiler']:.2f}s; "
                     f"{p['profile_file']}):")
        lines.extend(bc.stage_lines(p))
    lines.append(f"(whole run {time.perf_counter() - t_start:.0f}s)")
    return lines


def scenario_table_lines(bench: WriteRun, stamp: str) -> list[str]:
    args = bench.args
    lines = [
        bc.header_line("write", stamp, "append of a cached DataFrame"),
        f"input: {args.rows:,} rows (id bigint, name string, amount double, day date, price decimal(12,2)), "
        f"{bench.input_tasks} partitions = write tasks, {bench.n_days} distinct days; Spark's defaults: ORC codec "
        f"{bench.native_codec}, arrow.maxBytesPerBatch {bench.byte_limit}",
        "",
        f"{'scenario':<38}{'files':>6}{'MiB':>5}{'median s':>9}{'rows/s':>12}{'vs native':>10}"
        f"{'CPU s jvm+py':>14}   runs (s)",
    ]
    for name, sc in bench.scenarios.items():
        c = bench.cpu_median.get(name)
        cpu_text = f"{c[0]:.1f}+{c[1]:.1f}" if c else "n/a"
        r = bench.ratio_of(name)
        out, med = bench.outputs[name], bench.median[name]
        lines.append(f"{sc.label:<38}{out['files']:>6}{out['bytes'] / 2**20:>5.0f}"
                     f"{med:>9.2f}{args.rows / med:>12,.0f}"
                     + (f"{r:>9.2f}x" if r else f"{'':>10}") + f"{cpu_text:>14}   "
                     + " ".join(f"{t:.2f}" for t in bench.times[name]))
    return lines


def ratio_lines(bench: WriteRun) -> list[str]:
    ratio, cpu_ratio = bench.ratio, bench.cpu_ratio
    verdict = "MET" if ratio <= TARGET_RATIO else "NOT MET"
    lines = [f"ratio acidorc/native (median wall, both with defaults) = {ratio:.2f}, target <= {TARGET_RATIO}: "
             f"{verdict}" + (f"; CPU-seconds ratio {cpu_ratio:.2f}" if cpu_ratio else "")]
    for name in ("acidorc_nolimit", "acidorc_nolimit_zstd", "acidorc_partitioned"):
        if name in bench.scenarios:
            r, cr = bench.ratio_of(name), bench.cpu_ratio_of(name)
            lines.append(f"  {bench.scenarios[name].label}: ratio {r:.2f} "
                         f"({'MET' if r <= TARGET_RATIO else 'NOT MET'})"
                         + (f", CPU-seconds ratio {cr:.2f}" if cr else ""))
    if bench.contention is not None:
        lines.append(bc.contention_line(bench.contention, load=f"{bench.loads[0]} -> {bench.loads[-1]}"))
    batch_info = bench.batch_info
    if batch_info:
        lines.append(f"Spark hands each Python writer task {batch_info[0]['batches']} Arrow batches of up to "
                     f"{batch_info[0]['largest_batch']:,} rows ({batch_info[0]['schema'].replace(chr(10), ', ')})")
    return lines


def result_record(bench: WriteRun, chosen: list[str], report: str) -> dict:
    args, ratio, cpu_ratio = bench.args, bench.ratio, bench.cpu_ratio
    return {
        "params": {"rows": args.rows, "repeat": args.repeat, "tasks": bench.input_tasks, "days": bench.n_days,
                   "acid_codec": bench.acid_codec, "native_codec": bench.native_codec,
                   "spark_arrow_max_bytes_per_batch": bench.byte_limit, "generation_seconds": round(bench.gen_s, 3),
                   "scenarios": chosen},
        "input_fingerprint": bench.source,
        "verification": bench.verification,
        "batches_per_task": bench.batch_info,
        "scenarios": {n: scenario_record(bench, n, sc) for n, sc in bench.scenarios.items()},
        "ratio_acidorc_native": round(ratio, 3),
        "cpu_ratio_acidorc_native": round(cpu_ratio, 3) if cpu_ratio else None,
        "target_ratio": TARGET_RATIO,
        "target_met": ratio <= TARGET_RATIO,
        "in_process": bench.in_process,
        "in_process_profiles": bench.profiles,
        "report": report,
    }


def scenario_record(bench: WriteRun, n: str, sc: Scenario) -> dict:
    cpu_median = bench.cpu_median
    return {"label": sc.label, "conf": sc.conf, **bench.outputs[n],
            "runs": [round(t, 3) for t in bench.times[n]], "median_seconds": round(bench.median[n], 3),
            "rows_per_second": round(bench.args.rows / bench.median[n]),
            "vs_native": round(bench.ratio_of(n), 3) if bench.ratio_of(n) else None,
            "cpu_runs_jvm_python": [[None if x is None else round(x, 2) for x in c] for c in bench.cpu[n]],
            "cpu_median_jvm_python": [round(x, 2) for x in cpu_median[n]] if n in cpu_median else None}


if __name__ == "__main__":
    sys.exit(main())
