"""DML benchmark: DELETE of 1% of a 10M-row table, UPDATE of 1%, and a MERGE upsert of 1M rows
(half matching), through ``acidorc`` versus what a Spark user would otherwise run - rewriting
the whole table with Spark's native ORC reader and writer - in one SparkSession.

    python benchmarks/dml_benchmark.py [--rows N] [--merge-rows M] [--repeat K]

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
from decimal import Decimal
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_common as bc  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.orc as paorc  # noqa: E402
from bench_common import cumtime, log  # noqa: E402
from bench_table import ARROW_SCHEMA, columns_for  # noqa: E402

import acid_source  # noqa: E402

TARGET_DELETE_RATIO = 0.3
GENERATOR_VERSION = 1  # part of the cache key of the plain copy: bump when the data changes

COLUMNS = tuple(ARROW_SCHEMA.names)  # id, name, amount, day, price
# amount is uniform in [0, 100000) (cents), so each range below holds 1% of the rows, spread
# evenly over every file: the DML must look at the whole table, as a real "delete the small
# orders" would.
DELETE_CONDITION = "amount < 1000"
UPDATE_CONDITION = "amount >= 50000 AND amount < 51000"
UPDATE_SET = {"price": "price * 2", "name": "'updated'"}
MERGE_CONDITION = "t.id = s.id"
VALUE_SALT = 1 << 40  # source rows take their values from id + salt: every column changes


# --- the data: every value a function of the id (bench_table.columns_for) ---------------------------
def arrow_rows(ids: np.ndarray, value_ids: np.ndarray | None = None) -> pa.Table:
    """Rows with ids ``ids`` and the values bench_table gives ``value_ids`` (default: ids)."""
    c = columns_for(ids if value_ids is None else value_ids)
    n = len(ids)
    price = np.empty((n, 2), dtype=np.int64)  # decimal128 as (low, high) little-endian words
    price[:, 0] = c["price"]
    price[:, 1] = c["price"] >> 63
    arrays = [
        pa.array(ids.astype(np.int64)),
        pa.array(c["name"], pa.string()),
        pa.array(c["amount"]),
        pa.array(c["day"], pa.int32()).cast(pa.date32()),
        pa.Array.from_buffers(pa.decimal128(12, 2), n, [None, pa.py_buffer(price)]),
    ]
    return pa.Table.from_arrays(arrays, schema=ARROW_SCHEMA)


def source_ids(rows: int, merge_rows: int) -> np.ndarray:
    """MERGE source ids: every even k matches an existing id (spread over the whole table),
    every odd k is a new id above the table's."""
    k = np.arange(merge_rows, dtype=np.int64)
    return np.where(k % 2 == 0, (k * rows) // merge_rows, rows + k)


def expectations(rows: int, merge_rows: int, chunk: int = 1 << 21) -> dict:
    """What each statement must leave, computed with numpy from the generator alone: row count,
    sum of ids, sum of prices (in cents, exact), rows named 'updated', rows each changes."""
    n = sum_id = cents = 0
    del_n = del_id = del_cents = upd_n = upd_cents = 0
    for lo in range(0, rows, chunk):
        ids = np.arange(lo, min(rows, lo + chunk), dtype=np.int64)
        c = columns_for(ids)
        amount, price = c["amount"], c["price"]
        n += len(ids)
        sum_id += int(ids.sum())
        cents += int(price.sum())
        gone = amount < 1000
        del_n += int(gone.sum())
        del_id += int(ids[gone].sum())
        del_cents += int(price[gone].sum())
        hit = (amount >= 50000) & (amount < 51000)
        upd_n += int(hit.sum())
        upd_cents += int(price[hit].sum())
    sids = source_ids(rows, merge_rows)
    matched = sids < rows
    new_cents = int(columns_for(sids + VALUE_SALT)["price"].sum())
    old_cents = int(columns_for(sids[matched])["price"].sum())
    table = {"rows": n, "sum_id": sum_id, "sum_price_cents": cents, "named_updated": 0}
    return {
        "table": table,
        "delete": {"rows": n - del_n, "sum_id": sum_id - del_id, "sum_price_cents": cents - del_cents,
                   "named_updated": 0, "changed": {"numDeletedRows": del_n}},
        "update": {"rows": n, "sum_id": sum_id, "sum_price_cents": cents + upd_cents, "named_updated": upd_n,
                   "changed": {"numUpdatedRows": upd_n}},
        "merge": {"rows": n + int((~matched).sum()), "sum_id": sum_id + int(sids[~matched].sum()),
                  "sum_price_cents": cents - old_cents + new_cents, "named_updated": 0,
                  "changed": {"numUpdatedRows": int(matched.sum()), "numInsertedRows": int((~matched).sum())}},
    }


def write_staging(path: Path, ids_chunks, value_salt: int = 0) -> None:
    """Plain ORC files (pyarrow) of the given id ranges: only the input for Spark, which writes
    the native table and the acidorc table from them."""
    path.mkdir(parents=True, exist_ok=True)
    for i, ids in enumerate(ids_chunks):
        rows = arrow_rows(ids, ids + value_salt if value_salt else None)
        paorc.write_table(rows, str(path / f"part-{i:05d}.orc"), compression="zlib")


def ensure_plain(spark, rows: int, tasks: int, data_dir: Path, work: Path) -> tuple[Path, dict]:
    """The native side's table: the rows as plain ORC written by Spark itself (its defaults),
    ``tasks`` files; cached under ``data_dir`` (git-ignored) by parameters."""
    root = data_dir / f"dml_r{rows}_t{tasks}_g{GENERATOR_VERSION}"
    manifest_path = root / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if all((root / f).exists() for f in manifest["files"]):
            manifest["cached"] = True
            return root / "plain", manifest
    if root.exists():
        shutil.rmtree(root)
    t0 = time.perf_counter()
    staging = work / "staging-table"
    per = -(-rows // tasks)
    write_staging(staging, (np.arange(lo, min(rows, lo + per), dtype=np.int64) for lo in range(0, rows, per)))
    gen_s = time.perf_counter() - t0
    # one task per staging file, in id order: the native table's files are what a Spark job writes
    df = spark.read.orc(str(staging))
    if df.rdd.getNumPartitions() != tasks:
        df = df.repartitionByRange(tasks, "id")
    df.write.orc(str(root / "plain"))
    shutil.rmtree(staging, ignore_errors=True)
    files = sorted(str(f.relative_to(root)) for f in (root / "plain").rglob("*.orc"))
    manifest = {"rows": rows, "tasks": tasks, "generator_version": GENERATOR_VERSION, "files": files,
                "bytes": sum((root / f).stat().st_size for f in files),
                "generate_seconds": round(gen_s, 1), "build_seconds": round(time.perf_counter() - t0, 1)}
    manifest_path.write_text(json.dumps(manifest, indent=1))
    manifest["cached"] = False
    return root / "plain", manifest


# --- verification ---------------------------------------------------------------------------------
def fingerprint(df) -> dict:
    """Count, sum(id), sum(price) in cents, rows named 'updated', and a sum of xxhash64 over all
    five columns (by name, so column order does not matter)."""
    from pyspark.sql import functions as F

    row = df.agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum("id").alias("sum_id"),
        F.sum("price").alias("sum_price"),
        F.sum(F.when(F.col("name") == "updated", 1).otherwise(0)).alias("named_updated"),
        F.sum(F.xxhash64(*COLUMNS).cast("decimal(38,0)")).alias("hash"),
    ).first()
    return {"rows": int(row["rows"]), "sum_id": int(row["sum_id"] or 0),
            "sum_price_cents": int((row["sum_price"] or Decimal(0)) * 100),
            "named_updated": int(row["named_updated"] or 0), "hash": str(row["hash"])}


def quick_check(df) -> dict:
    from pyspark.sql import functions as F

    row = df.agg(F.count(F.lit(1)).alias("rows"), F.sum("id").alias("sum_id")).first()
    return {"rows": int(row["rows"]), "sum_id": int(row["sum_id"] or 0)}


def _same(fp: dict, expected: dict, keys=("rows", "sum_id", "sum_price_cents", "named_updated")) -> list[str]:
    return [k for k in keys if fp[k] != expected[k]]


# --- the acidorc tables ---------------------------------------------------------------------------
def clone_table(pristine: Path, dest: Path, compression: str) -> None:
    """A new registered table at ``dest`` holding exactly the pristine table's files (hard links),
    committed as its write id 1 - what the same Spark append into a fresh table writes, without
    writing 10M rows again before every timed statement. The pristine table must hold exactly
    one committed write, id 1 (checked by the caller)."""
    from acid_source.resolve import open_store
    from acid_source.storage import Storage
    from acid_source.txn import Transaction

    info = acid_source.create_table(str(dest), ARROW_SCHEMA, compression=compression)
    # the one commit path's model: the block commits what set_commit names, or aborts on an error
    with Transaction.begin(open_store(None), description=f"benchmark: clone of {pristine.name}",
                           heartbeat="none") as txn:
        write_id = txn.allocate_write_id(info.table_id, Storage(str(dest)))
        if write_id != 1:
            raise RuntimeError(f"a fresh table got write id {write_id}, expected 1")
        dirs = []
        for d in sorted(pristine.iterdir()):
            if not d.is_dir():
                continue
            (dest / d.name).mkdir()
            for f in d.iterdir():
                os.link(f, dest / d.name / f.name)
            dirs.append(str(dest / d.name))
        txn.record_written(info.table_id, dirs)
        txn.set_commit("insert", {info.table_id: [""]})


# --- timing ---------------------------------------------------------------------------------------
class DmlMeter(bc.CpuMeter):
    """CpuMeter plus the driver's own CPU (the engine-free statements run there; the sampler
    thread's CPU is left out) and the Spark stages a statement ran, from Spark's status store
    (kept with the UI off): per stage its span, task time, rows in and out."""

    def __init__(self, spark):
        super().__init__(bc.jvm_pid(spark))
        self.spark = spark

    def _stages(self):
        store = self.spark.sparkContext._jsc.sc().statusStore()
        gw = self.spark.sparkContext._gateway
        seq = store.stageList(None, False, False, gw.new_array(gw.jvm.double, 0), None)
        return [seq.apply(i) for i in range(seq.size())]

    def _stage_ids(self) -> int:
        return max((s.stageId() for s in self._stages()), default=-1)

    def stages_since(self, first_id: int) -> list[dict]:
        found = []
        for s in self._stages():
            if s.stageId() <= first_id or s.status().toString() != "COMPLETE":
                continue
            sub, comp = s.submissionTime(), s.completionTime()
            found.append({
                "stage": s.stageId(), "tasks": s.numTasks(),
                "start_ms": sub.get().getTime() if sub.isDefined() else None,
                "end_ms": comp.get().getTime() if comp.isDefined() else None,
                "task_run_s": s.executorRunTime() / 1000, "jvm_cpu_s": s.executorCpuTime() / 1e9,
                "input_rows": s.inputRecords(), "output_rows": s.outputRecords(),
                "shuffle_read_rows": s.shuffleReadRecords(), "shuffle_write_rows": s.shuffleWriteRecords(),
                "shuffle_write_bytes": s.shuffleWriteBytes(),
            })
        return sorted(found, key=lambda s: s["stage"])

    def run(self, action) -> dict:
        first = self._stage_ids()
        driver0 = time.process_time()
        sampler0 = self.sampler_cpu
        box = {}
        wall, jvm, py, others = self.measure(lambda: box.setdefault("result", action()))
        driver = time.process_time() - driver0 - (self.sampler_cpu - sampler0)
        stages = self.stages_since(first)
        return {"wall": wall, "jvm": jvm, "py": py, "driver": driver, "others": others, "stages": stages,
                "result": box.get("result")}


def phase_lines(run: dict) -> list[str]:
    """One statement's Spark stages and its driver-only time (resolve, transaction, planning,
    commit: wall minus the span of its stages)."""
    stages = [s for s in run["stages"] if s["start_ms"] and s["end_ms"]]
    if not stages:
        return [f"    no Spark stages (driver only): {run['wall']:.2f}s wall, {run['driver']:.2f} CPU-s in the driver"]
    span = (max(s["end_ms"] for s in stages) - min(s["start_ms"] for s in stages)) / 1000
    lines = []
    for s in stages:
        lines.append(f"    stage {s['stage']:>4}: {s['tasks']:>3} tasks {(s['end_ms'] - s['start_ms']) / 1000:>6.2f}s "
                     f"(task time {s['task_run_s']:>6.2f}s, JVM CPU {s['jvm_cpu_s']:>5.2f}s)"
                     f"  rows in {s['input_rows']:>11,}"
                     f"  shuffle read {s['shuffle_read_rows']:>11,}  shuffle write {s['shuffle_write_rows']:>11,}"
                     f" ({s['shuffle_write_bytes'] / 2**20:.0f} MiB)")
    lines.append(f"    driver only (outside Spark stages: resolve, transaction, planning, commit): "
                 f"{max(0.0, run['wall'] - span):.2f}s of {run['wall']:.2f}s")
    return lines


# --- profile of the engine-free path --------------------------------------------------------------
def profile_engine_free(op: str, path: Path, out_dir: Path, stamp: str) -> dict:
    """cProfile one engine-free statement (all of it runs in this process) and attribute its time
    to the stages of the DML path."""
    from acid_source.table import AcidTable

    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    table = AcidTable.load(str(path))
    metrics = table.delete(DELETE_CONDITION) if op == "delete" else table.update(UPDATE_CONDITION, UPDATE_SET)
    prof.disable()
    seconds = time.perf_counter() - t0
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values())
    reader, events, changes = "scan/reader.py", "dml/events.py", "dml/arrow_changes.py"
    read = cumtime(stats, "read_split", reader)
    filt = cumtime(stats, "change_rows", changes) - read  # generator body: filter + change batches
    inserts = cumtime(stats, "write", "write/task.py", ("_write",)) + cumtime(stats, "close", "write/task.py",
                                                                             ("_close",))
    deletes = cumtime(stats, "_write_delete_file", events)
    collect = cumtime(stats, "_collect_deletes", events)
    take = cumtime(stats, "_write", events, ("write",))
    stages = {
        "read the target (read_split: ORC decode, visibility, ROW__IDs)": read,
        "condition + change batches (filter, SET values, _change_batch)": max(0.0, filt - take),
        "collect delete keys (group by partition, writer id)": collect,
        "delete files (sort keys, DeleteFileWriter, copy into the table)": deletes,
        "insert files (new row versions: TaskWriter)": inserts,
        "ChangeWriter._write other (op counts, split by op)": max(0.0, take - collect - cumtime(
            stats, "write", "write/task.py", ("_write",))),
        "transaction, snapshot, commit (run_dml minus the producer)": max(
            0.0, cumtime(stats, "run_dml", "dml/execution.py") - cumtime(stats, "arrow_changes", changes)),
    }
    stages["other"] = max(0.0, total - sum(stages.values()))
    prof_path = out_dir / f"dml_{stamp}_{op}_engine_free.prof"
    prof.dump_stats(str(prof_path))
    return {"label": f"engine-free {op.upper()}", "seconds_under_profiler": round(seconds, 3),
            "metrics": metrics, "profile_file": bc.rel_path(prof_path), "total_seconds": round(total, 3),
            "stages": {k: round(v, 3) for k, v in stages.items()}, "top_functions": bc.top_functions(stats)}


# --- main -----------------------------------------------------------------------------------------
@dataclass
class Scenario:
    op: str  # delete / update / merge
    engine: str  # spark / python / native
    label: str
    run: Callable[[str], dict | None]  # the statement, on the prepared path
    result: Callable[[str], object]  # the result as a DataFrame
    acid: bool = True
    runs: list = field(default_factory=list)


OPS = ("delete", "update", "merge")
ENGINES = ("spark", "python", "native")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows of the table (default 10M)")
    ap.add_argument("--merge-rows", type=int, default=None, help="rows of the MERGE source (default rows/10)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per scenario, after one warm-up")
    ap.add_argument("--tasks", type=int, default=4, help="files of each table = read tasks (default 4)")
    ap.add_argument("--ops", default="delete,update,merge", help="statements to run (default all three)")
    ap.add_argument("--engines", default="spark,python,native",
                    help="spark (AcidTable.forPath), python (engine-free AcidTable.load; no MERGE), native")
    ap.add_argument("--compression", default="zlib", help="acidorc table's codec (default zlib, Hive's)")
    ap.add_argument("--profile", choices=("auto", "always", "never"), default="auto",
                    help="cProfile the engine-free DELETE/UPDATE (auto: when the DELETE ratio misses 0.3)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--data-dir", type=Path, default=HERE / "data", help="cache of the plain copy")
    ap.add_argument("--work-dir", type=Path, default=None, help="where tables go (default: a fresh temp dir)")
    ap.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    args.merge_rows = args.merge_rows or max(2, args.rows // 10)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if args.repeat < 1 or args.rows < 10_000 or args.tasks < 1 or not 2 <= args.merge_rows <= args.rows:
        ap.error("--repeat >= 1, --rows >= 10000, --tasks >= 1, 2 <= --merge-rows <= --rows")
    if set(ops) - set(OPS) or set(engines) - set(ENGINES) or not ops or "native" not in engines:
        ap.error(f"--ops from {OPS}, --engines from {ENGINES} (native is needed for the ratios)")

    stamp = bc.timestamp()
    with bc.scratch_dir(args.work_dir, "dml") as (work, _url):
        return run(args, ops, engines, stamp, work)


def run(args, ops: list[str], engines: list[str], stamp: str, work: Path) -> int:
    t_start = time.perf_counter()
    bench = DmlRun(args, ops, engines, work)
    bench.build_native_table()
    bench.build_acid_table()
    bench.build_merge_source()
    bench.define_scenarios()
    bench.warm_up_and_verify()
    bench.timed_runs()
    bench.profile_engine_free_paths(stamp)
    bc.stop_spark(bench.spark)
    report = bc.print_report(report_lines(bench, stamp, t_start))
    bc.write_results(args.results_dir, "dml", stamp,
                     bc.machine_info(args.driver_memory, bench.loads, bench.contention), result_record(bench, report))
    return 0


class DmlRun:
    """One run's tables, Spark session, scenarios and measurements; its methods are the run's
    phases, in the order ``run`` calls them."""

    def __init__(self, args, ops: list[str], engines: list[str], work: Path):
        self.args, self.ops, self.engines, self.work = args, ops, engines, work
        log(f"work dir {work}, metastore {os.environ['ACIDORC_METASTORE_URL']}")
        t0 = time.perf_counter()
        expected = self.expected = expectations(args.rows, args.merge_rows)
        log(f"expected results computed with numpy ({time.perf_counter() - t0:.1f}s): DELETE removes "
            f"{expected['delete']['changed']['numDeletedRows']:,} rows, UPDATE changes "
            f"{expected['update']['changed']['numUpdatedRows']:,}, MERGE updates "
            f"{expected['merge']['changed']['numUpdatedRows']:,} and inserts "
            f"{expected['merge']['changed']['numInsertedRows']:,}")
        self.spark = bc.start_spark("acidorc-dml-benchmark", args.driver_memory, work / "spark-warehouse")
        self.native_codec = self.spark.conf.get("spark.sql.orc.compression.codec")
        self.counter = 0
        self.meter = DmlMeter(self.spark)
        self.outputs: dict = {}
        self.verification: dict = {}

    # 1. the native table (plain ORC, cached), the pristine acidorc table, the MERGE source
    def build_native_table(self) -> None:
        args = self.args
        t0 = time.perf_counter()
        self.plain, manifest = ensure_plain(self.spark, args.rows, args.tasks, args.data_dir, self.work)
        self.manifest = manifest
        log(f"native table {self.plain}: {len(manifest['files'])} files, {manifest['bytes'] / 2**20:.0f} MiB "
            f"({'cached' if manifest['cached'] else f'built in {time.perf_counter() - t0:.1f}s'})")
        self.native_fp = fingerprint(self.spark.read.orc(str(self.plain)))
        if _same(self.native_fp, self.expected["table"]):
            raise SystemExit(f"the plain copy holds {self.native_fp}, expected {self.expected['table']}")

    def build_acid_table(self) -> None:
        args, spark, work = self.args, self.spark, self.work
        pristine = self.pristine = work / "pristine"
        t0 = time.perf_counter()
        acid_source.create_table(str(pristine), ARROW_SCHEMA, compression=args.compression)
        spark.read.orc(str(self.plain)).write.format("acidorc").mode("append").save(str(pristine))
        self.build_s = time.perf_counter() - t0
        layout = self.layout = sorted(str(f.relative_to(pristine)) for f in pristine.rglob("*") if f.is_file())
        if {p.split("/")[0] for p in layout} != {"delta_0000001_0000001_0000"}:
            raise SystemExit(f"the pristine table should hold one insert delta of write id 1, holds {layout}")
        self.acid_bytes = sum((pristine / f).stat().st_size for f in layout)
        self.acid_files = [f for f in layout if "/bucket_" in f]
        log(f"acidorc table (Spark append, {args.compression}): {len(self.acid_files)} bucket files, "
            f"{self.acid_bytes / 2**20:.0f} MiB ({self.build_s:.1f}s)")
        probe = work / "clone-check"
        clone_table(pristine, probe, args.compression)
        acid_fp = fingerprint(spark.read.format("acidorc").load(str(probe)))
        if acid_fp != self.native_fp:
            raise SystemExit(f"a clone of the acidorc table reads {acid_fp}, the native table {self.native_fp}")
        shutil.rmtree(probe)
        log("verified: the acidorc table (through a clone) and the native table hold the same rows "
            "(hash of all columns)")

    def build_merge_source(self) -> None:
        args = self.args
        staging = self.work / "staging-source"
        write_staging(staging, [source_ids(args.rows, args.merge_rows)], value_salt=VALUE_SALT)
        self.source = self.spark.read.orc(str(staging)).cache()
        source_rows = self.source.count()
        log(f"MERGE source: {source_rows:,} rows, cached "
            f"({self.expected['merge']['changed']['numUpdatedRows']:,} match)")

    # 2. the scenarios
    def fresh(self, name: str) -> Path:
        self.counter += 1
        return self.work / f"{self.counter:03d}-{name}"

    def acid_df(self, p):
        return self.spark.read.format("acidorc").load(str(p))

    def native_df(self, p):
        return self.spark.read.orc(str(p))

    def native_delete(self, out):
        from pyspark.sql import functions as F

        cond = F.expr(DELETE_CONDITION)
        self.spark.read.orc(str(self.plain)).where(~cond | cond.isNull()).write.orc(str(out))

    def native_update(self, out):
        from pyspark.sql import functions as F

        cond = F.expr(UPDATE_CONDITION)
        t = self.spark.read.orc(str(self.plain))
        sets = {c: F.expr(e).cast(t.schema[c].dataType) for c, e in UPDATE_SET.items()}
        t.select(*[F.when(cond, sets[c]).otherwise(F.col(c)).alias(c) if c in sets else F.col(c)
                   for c in t.columns]).write.orc(str(out))

    def native_merge(self, out):
        from pyspark.sql import functions as F

        t, s = self.spark.read.orc(str(self.plain)).alias("t"), self.source.alias("s")
        j = t.join(s, F.col("t.id") == F.col("s.id"), "full_outer")
        hit = F.col("s.id").isNotNull()
        j.select(*[F.when(hit, F.col(f"s.{c}")).otherwise(F.col(f"t.{c}")).alias(c) for c in COLUMNS]) \
            .write.orc(str(out))

    def spark_merge(self, p):
        from acid_source.table import AcidTable

        return (AcidTable.forPath(self.spark, str(p)).alias("t").merge(self.source.alias("s"), MERGE_CONDITION)
                .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

    def define_scenarios(self) -> None:
        from acid_source.table import AcidTable

        spark = self.spark
        available = {
            ("delete", "spark"): ("acidorc AcidTable.forPath(spark).delete",
                                  lambda p: AcidTable.forPath(spark, str(p)).delete(DELETE_CONDITION)),
            ("delete", "python"): ("acidorc engine-free AcidTable.load().delete",
                                   lambda p: AcidTable.load(str(p)).delete(DELETE_CONDITION)),
            ("delete", "native"): ("native rewrite: read + filter + write", self.native_delete),
            ("update", "spark"): ("acidorc AcidTable.forPath(spark).update",
                                  lambda p: AcidTable.forPath(spark, str(p)).update(UPDATE_CONDITION, UPDATE_SET)),
            ("update", "python"): ("acidorc engine-free AcidTable.load().update",
                                   lambda p: AcidTable.load(str(p)).update(UPDATE_CONDITION, UPDATE_SET)),
            ("update", "native"): ("native rewrite: read + when() + write", self.native_update),
            ("merge", "spark"): ("acidorc merge ... whenMatchedUpdateAll().whenNotMatchedInsertAll()",
                                 self.spark_merge),
            ("merge", "native"): ("native rewrite: read + full outer join + write", self.native_merge),
        }
        self.scenarios = {}
        for op in self.ops:
            for engine in self.engines:
                if (op, engine) in available:
                    label, fn = available[(op, engine)]
                    native = engine == "native"
                    self.scenarios[(op, engine)] = Scenario(op, engine, label, fn,
                                                            self.native_df if native else self.acid_df,
                                                            acid=not native)

    def prepare(self, sc: Scenario) -> Path:
        path = self.fresh(f"{sc.op}-{sc.engine}")
        if sc.acid:
            clone_table(self.pristine, path, self.args.compression)
        return path

    def check_metrics(self, sc: Scenario, metrics) -> list[str]:
        if not sc.acid:
            return []
        return [k for k, v in self.expected[sc.op]["changed"].items() if metrics.get(k) != v]

    # 3. warm-up of each scenario, fully verified
    def warm_up_and_verify(self) -> None:
        expected = self.expected
        for key, sc in self.scenarios.items():
            path = self.prepare(sc)
            r = self.meter.run(lambda: sc.run(path))
            fp = fingerprint(sc.result(path))
            problems = _same(fp, expected[sc.op]) + self.check_metrics(sc, r["result"] or {})
            self.verification[f"{sc.op}/{sc.engine}"] = {**fp, "metrics": r["result"]}
            if problems:
                raise SystemExit(f"{sc.op}/{sc.engine}: result differs from the expected in {problems}: {fp}, "
                                 f"metrics {r['result']}; expected {expected[sc.op]}")
            files = bc.data_files(path)
            self.outputs[key] = {"files_after": len(files), "bytes_after": sum(f.stat().st_size for f in files)}
            log(f"  warm-up {sc.op} / {sc.engine}: {r['wall']:.2f}s, verified (count, sum(id), sum(price), "
                f"'updated' rows" + (", DML metrics" if sc.acid else "") + ")")
            shutil.rmtree(path, ignore_errors=True)
        for op in self.ops:  # every engine must leave the very same rows
            hashes = {k: v["hash"] for k, v in self.verification.items() if k.startswith(op + "/")}
            if len(set(hashes.values())) != 1:
                raise SystemExit(f"{op}: the engines' results differ in their hash of all columns: {hashes}")
        log("verified: per statement, every engine leaves the same rows (hash of all columns), and count, "
            "sum(id), sum(price) and the changed rows match numpy's expectation")

    # 4. timed runs, round-robin so that drifting machine load hits every scenario alike
    def timed_run(self, key, rep: int) -> dict:
        sc = self.scenarios[key]
        path = self.prepare(sc)
        r = self.meter.run(lambda: sc.run(path))
        check = quick_check(sc.result(path))
        want = {k: self.expected[sc.op][k] for k in ("rows", "sum_id")}
        if check != want or self.check_metrics(sc, r["result"] or {}):
            raise SystemExit(f"{sc.op}/{sc.engine} run {rep + 1}: read back {check}, metrics {r['result']}")
        shutil.rmtree(path, ignore_errors=True)
        return r

    def timed_runs(self) -> None:
        scenarios = self.scenarios
        runs, self.loads, self.contention = bc.round_robin(scenarios, self.args.repeat, self.timed_run, self.meter,
                                                           name=lambda k: f"{k[0]}/{k[1]}")
        for key, sc in scenarios.items():
            sc.runs = runs[key]
        self.median = {k: bc.median(r["wall"] for r in sc.runs) for k, sc in scenarios.items()}
        cpu_medians = bc.cpu_medians(runs, ("jvm", "py", "driver"))
        self.cpu_total = {k: cpu_medians.get(k) for k in scenarios}
        spark_delete = ("delete", "spark")
        self.delete_ratio = self.ratio(spark_delete) if spark_delete in scenarios else None

    def ratio(self, key):
        ref = (key[0], "native")
        return self.median[key] / self.median[ref] if ref in self.median and key != ref else None

    def cpu_ratio(self, key):
        ref = (key[0], "native")
        cpu_total = self.cpu_total
        if key == ref or cpu_total.get(key) is None or cpu_total.get(ref) is None:
            return None
        return sum(cpu_total[key]) / max(1e-9, sum(cpu_total[ref]))

    # 5. profile of the engine-free path, in this process, Spark idle
    def profile_engine_free_paths(self, stamp: str) -> None:
        args = self.args
        self.profiles = []
        delete_ratio = self.delete_ratio
        want_profile = args.profile == "always" or (args.profile == "auto" and delete_ratio is not None
                                                    and delete_ratio > TARGET_DELETE_RATIO)
        if not want_profile:
            return
        args.results_dir.mkdir(parents=True, exist_ok=True)
        for op in ("delete", "update"):
            if op in self.ops:
                path = self.fresh(f"profile-{op}")
                clone_table(self.pristine, path, args.compression)
                log(f"profiling the engine-free {op.upper()} (cProfile) ...")
                self.profiles.append(profile_engine_free(op, path, args.results_dir, stamp))
                shutil.rmtree(path, ignore_errors=True)


def median_run(sc: Scenario) -> dict:
    """The run whose wall time is the median, for its stages."""
    return sorted(sc.runs, key=lambda r: r["wall"])[len(sc.runs) // 2]


# --- 6. report ------------------------------------------------------------------------------------------
def report_lines(bench: DmlRun, stamp: str, t_start: float) -> list[str]:
    lines = scenario_table_lines(bench, stamp) + [""] + ratio_lines(bench)
    lines.append("")
    lines.append("where the time goes: the Spark stages of each statement's median run (Spark's status store)")
    for sc in bench.scenarios.values():
        m = median_run(sc)
        extra = ""
        if sc.acid and isinstance(m["result"], dict):
            added = m["result"]
            extra = f"; {added.get('numFilesAdded')} files, {added.get('numBytesAdded', 0) / 2**20:.1f} MiB added"
        lines.append(f"  {sc.op.upper()} {sc.engine} ({m['wall']:.2f}s{extra})")
        lines.extend(phase_lines(m))
    for p in bench.profiles:
        lines.append("")
        lines.append(f"where the {p['label']} spends its time (cProfile, in-process, 1 thread: "
                     f"{p['seconds_under_profiler']:.2f}s; {p['profile_file']}):")
        lines.extend(bc.stage_lines(p))
    lines.append(f"(whole run {time.perf_counter() - t_start:.0f}s)")
    return lines


def scenario_table_lines(bench: DmlRun, stamp: str) -> list[str]:
    args, expected, manifest = bench.args, bench.expected, bench.manifest
    lines = [
        bc.header_line("DML", stamp),
        f"table: {args.rows:,} rows (id bigint, name string, amount double, day date, price decimal(12,2)), "
        f"unpartitioned; acidorc: one insert delta, {len(bench.acid_files)} bucket files ({args.compression}, "
        f"{bench.acid_bytes / 2**20:.0f} MiB); native: plain ORC written by Spark, {len(manifest['files'])} files "
        f"({bench.native_codec}, {manifest['bytes'] / 2**20:.0f} MiB)",
        f"DELETE WHERE {DELETE_CONDITION} ({expected['delete']['changed']['numDeletedRows']:,} rows); "
        f"UPDATE SET {', '.join(f'{k} = {v}' for k, v in UPDATE_SET.items())} WHERE {UPDATE_CONDITION} "
        f"({expected['update']['changed']['numUpdatedRows']:,} rows); MERGE of {args.merge_rows:,} source rows ON id "
        f"({expected['merge']['changed']['numUpdatedRows']:,} matched -> update, "
        f"{expected['merge']['changed']['numInsertedRows']:,} -> insert)",
        "",
        f"{'':<8}{'scenario':<70}{'median s':>9}{'vs native':>10}{'CPU s jvm+py+drv':>19}   runs (s)",
    ]
    for key, sc in bench.scenarios.items():
        c = bench.cpu_total[key]
        cpu_text = f"{c[0]:.1f}+{c[1]:.1f}+{c[2]:.1f}" if c else "n/a"
        r = bench.ratio(key)
        lines.append(f"{sc.op.upper():<8}{sc.label:<70}{bench.median[key]:>9.2f}"
                     + (f"{r:>9.2f}x" if r else f"{'1.00x':>10}") + f"{cpu_text:>19}   "
                     + " ".join(f"{x['wall']:.2f}" for x in sc.runs))
    return lines


def ratio_lines(bench: DmlRun) -> list[str]:
    lines = []
    for key in bench.scenarios:
        if key[1] == "native":
            continue
        r, cr = bench.ratio(key), bench.cpu_ratio(key)
        target = f", target <= {TARGET_DELETE_RATIO}: {'MET' if r <= TARGET_DELETE_RATIO else 'NOT MET'}" \
            if key == ("delete", "spark") else ""
        lines.append(f"ratio {key[0].upper()} {key[1]:<6} acidorc/native (median wall) = {r:.2f}{target}"
                     + (f"; CPU-seconds ratio {cr:.2f}" if cr else ""))
    if bench.contention is not None:
        lines.append(bc.contention_line(bench.contention, load=f"{bench.loads[0]} -> {bench.loads[-1]}"))
    return lines


def result_record(bench: DmlRun, report: str) -> dict:
    args, delete_ratio = bench.args, bench.delete_ratio
    return {
        "params": {"rows": args.rows, "merge_rows": args.merge_rows, "repeat": args.repeat, "tasks": args.tasks,
                   "partitioned": False, "acid_compression": args.compression, "native_codec": bench.native_codec,
                   "ops": bench.ops, "engines": bench.engines, "delete_condition": DELETE_CONDITION,
                   "update_condition": UPDATE_CONDITION, "update_set": UPDATE_SET,
                   "merge_condition": MERGE_CONDITION},
        "data": {"native_table": {k: bench.manifest[k] for k in ("bytes", "cached", "files")},
                 "acid_table": {"files": bench.layout, "bytes": bench.acid_bytes,
                                "build_seconds": round(bench.build_s, 2)}},
        "expected": bench.expected,
        "verification": bench.verification,
        "scenarios": {f"{k[0]}/{k[1]}": scenario_record(bench, k, sc) for k, sc in bench.scenarios.items()},
        "ratio_delete_acidorc_native": round(delete_ratio, 3) if delete_ratio else None,
        "target_delete_ratio": TARGET_DELETE_RATIO,
        "target_met": delete_ratio <= TARGET_DELETE_RATIO if delete_ratio else None,
        "engine_free_profiles": bench.profiles,
        "report": report,
    }


def scenario_record(bench: DmlRun, k, sc: Scenario) -> dict:
    ratio, cpu_ratio, cpu_total = bench.ratio(k), bench.cpu_ratio(k), bench.cpu_total[k]
    return {
        "label": sc.label, **bench.outputs[k],
        "runs": [round(r["wall"], 3) for r in sc.runs], "median_seconds": round(bench.median[k], 3),
        "vs_native": round(ratio, 3) if ratio else None,
        "cpu_vs_native": round(cpu_ratio, 3) if cpu_ratio else None,
        "cpu_runs_jvm_python_driver": [[None if r[x] is None else round(r[x], 2) for x in ("jvm", "py", "driver")]
                                       for r in sc.runs],
        "cpu_median_jvm_python_driver": [round(x, 2) for x in cpu_total] if cpu_total else None,
        "dml_metrics": [r["result"] for r in sc.runs] if sc.acid else None,
        "median_run_stages": median_run(sc)["stages"]}


if __name__ == "__main__":
    sys.exit(main())
