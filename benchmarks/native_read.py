"""Native-route read benchmark: ``acid_source.read`` (Spark's ORC reader for the files that
need no merge, acidorc's merge for the rest) beside Spark's native ORC scan of the same visible
rows stored as plain ORC, in one Spark session, timed round-robin.

    python benchmarks/native_read.py [--rows N] [--repeat K]

The read benchmark's table (10 deltas, ~10% of rows deleted by 3 delete deltas in every
bucket) and the same rows after a major compaction (an acidorc table appended from the plain
copy and major-compacted). Scenarios, each a noop write of every column (full) or of ``id``
alone (narrow):

* ``native_orc`` / ``native_orc_narrow``: ``spark.read.orc`` of the plain copy - the yardstick;
* ``major_read`` / ``major_read_narrow``: ``acid_source.read`` after the major compaction (all native);
* ``major_source``: ``spark.read.format("acidorc")`` after it (the Python source);
* ``deletes_read`` / ``deletes_read_narrow``: ``acid_source.read`` of the table with deletes
  (every bucket has delete events: all merged by acidorc);
* ``deletes_read_narrow_schema``: ``acid_source.read(schema="id bigint")`` of it: the merge
  decodes only that column;
* ``floor``: the plain copy through a Python data source that only yields pyarrow's batches
  (what any Python source costs in pyspark 4.x).

Then, without Spark, one DuckDB query over the compacted table's ``AcidTable.scan()`` (an
Arrow stream) and over the plain copy as a pyarrow dataset. Ratios are of median wall times;
the results go to benchmarks/results/native_read_*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_common as bc  # noqa: E402
import bench_table as bt  # noqa: E402
from bench_common import log  # noqa: E402
from read_benchmark import _floor_source, fingerprint, timed_noop  # noqa: E402

TARGETS = {"major_read": 1.2, "deletes_read": 1.5, "major_read_narrow": 1.5, "deletes_read_narrow": 1.5,
           "deletes_read_narrow_schema": 1.5}
DUCK_QUERY = "SELECT count(*), sum(id), sum(amount), count(name), count(day), sum(price) FROM scan"


def duckdb_scans(major: str, url: str, plain: str, repeat: int) -> dict[str, float]:
    """Median seconds of one DuckDB query over the compacted table's engine-free scan (an Arrow
    stream) and over the plain ORC copy as a pyarrow dataset (DuckDB has no ORC reader)."""
    import duckdb
    import pyarrow.dataset as ds

    from acid_source import AcidTable

    def over_acidorc():
        scan = AcidTable.load(major, metastoreUrl=url).scan()  # noqa: F841 - DuckDB finds it by name
        return duckdb.sql(DUCK_QUERY).fetchall()

    def over_plain():
        scan = ds.dataset(plain, format="orc", schema=bt.ARROW_SCHEMA)  # noqa: F841
        return duckdb.sql(DUCK_QUERY).fetchall()

    if over_acidorc() != over_plain():
        raise SystemExit("DuckDB reads different rows through acidorc and from the plain copy")
    times: dict[str, list[float]] = {"acidorc": [], "plain": []}
    for _ in range(repeat):
        for name, fn in (("acidorc", over_acidorc), ("plain", over_plain)):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {n: bc.median(t) for n, t in times.items()}


def compacted_copy(plain: Path, data_dir: Path, rows: int) -> tuple[str, str]:
    """The plain copy's rows as an acidorc table after a major compaction (cached with its
    store): the table's location and the store URL."""
    import pyarrow.dataset as ds

    import acid_source
    from acid_source import AcidTable

    root = data_dir / f"native_major_{rows}"
    url = f"sqlite:///{root}/metastore.db"
    table = root / "table"
    if (root / "done").exists():
        return str(table), url
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    acid_source.create_table(str(table), bt.ARROW_SCHEMA, metastoreUrl=url)
    t = AcidTable.load(str(table), metastoreUrl=url)
    t.append(ds.dataset(str(plain), format="orc", schema=bt.ARROW_SCHEMA).to_table())
    t.compact("major")
    t.vacuum(retentionSeconds=0)
    (root / "done").write_text("")
    log(f"major-compacted copy built in {time.perf_counter() - t0:.1f}s: {table}")
    return str(table), url


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    stamp = bc.timestamp()
    os.environ.setdefault("ACIDORC_AUTO_COMPACT", "false")
    params = bt.Params(rows=args.rows, buckets=args.buckets, stripe_rows=1_000_000, delete_stripe_rows=25_000)
    root, manifest = bt.ensure(params, args.data_dir, log=log)
    table, plain = str(root / "table"), str(root / "plain")
    major, url = compacted_copy(Path(plain), args.data_dir, args.rows)

    import acid_source

    spark = bc.start_spark("acidorc-native-read-benchmark", args.driver_memory, args.data_dir / "spark-warehouse")
    spark.dataSource.register(_floor_source())
    t0 = time.perf_counter()
    frames = {
        "native_orc": spark.read.orc(plain),
        "major_read": acid_source.read(spark, major, metastoreUrl=url),
        "major_source": spark.read.format("acidorc").option("metastoreUrl", url).load(major),
        "deletes_read": acid_source.read(spark, table),
        "floor": spark.read.format("arrowfloor").load(plain),
    }
    plan_s = time.perf_counter() - t0
    for name in ("native_orc", "major_read", "deletes_read"):
        frames[name + "_narrow"] = frames[name].select("id")
    # the merge decodes only the columns of a narrower schema (Spark cannot push a select into it)
    frames["deletes_read_narrow_schema"] = acid_source.read(spark, table, schema="id bigint")
    prints = {n: fingerprint(df) for n, df in frames.items() if "narrow" not in n}
    wrong = {n: p for n, p in prints.items() if p != prints["native_orc"]}
    narrow = fingerprint(frames["deletes_read_narrow_schema"])
    if (narrow["rows"], narrow["sum_id"]) != (prints["native_orc"]["rows"], prints["native_orc"]["sum_id"]):
        wrong["deletes_read_narrow_schema"] = narrow
    if wrong:
        raise SystemExit(f"results differ from the plain copy: {wrong} vs {prints['native_orc']}")
    log(f"verified: every scenario reads {prints['native_orc']}")
    meter = bc.CpuMeter(bc.jvm_pid(spark))
    for df in frames.values():
        timed_noop(df, meter)  # warm-up
    runs, loads, contention = bc.round_robin(frames, args.repeat, lambda n, _: timed_noop(frames[n], meter), meter)
    bc.stop_spark(spark)
    median = {n: bc.median([r["wall"] for r in rs]) for n, rs in runs.items()}
    ratios = {
        "major_read": median["major_read"] / median["native_orc"],
        "major_source": median["major_source"] / median["native_orc"],
        "deletes_read": median["deletes_read"] / median["native_orc"],
        "floor": median["floor"] / median["native_orc"],
        "deletes_read_over_floor": median["deletes_read"] / median["floor"],
        "major_read_narrow": median["major_read_narrow"] / median["native_orc_narrow"],
        "deletes_read_narrow": median["deletes_read_narrow"] / median["native_orc_narrow"],
        "deletes_read_narrow_schema": median["deletes_read_narrow_schema"] / median["native_orc_narrow"],
    }
    duck = duckdb_scans(major, url, plain, args.repeat)
    ratios["duckdb_over_acidorc"] = duck["acidorc"] / duck["plain"]
    lines = [bc.header_line("native read", stamp, f"{args.rows:,} rows inserted, {prints['native_orc']['rows']:,} "
                                                  f"visible, {args.buckets} buckets")]
    lines += [f"  {n:22s} median {median[n]:6.2f}s" for n in frames]
    for n, r in ratios.items():
        target = TARGETS.get(n)
        verdict = "" if target is None else f"  (target <= {target}: {'MET' if r <= target else 'NOT MET'})"
        lines.append(f"  ratio {n:24s} {r:5.2f}{verdict}")
    lines.append(f"  duckdb (no Spark), sum over every column: plain ORC dataset {duck['plain']:.2f}s, "
                 f"AcidTable.scan() of the compacted table {duck['acidorc']:.2f}s")
    lines.append(f"  planning all five DataFrames: {plan_s:.2f}s; load average {loads}")
    if contention:
        lines.append(bc.contention_line(contention))
    report = bc.print_report(lines)
    record = {"rows": args.rows, "median_seconds": {n: round(v, 3) for n, v in median.items()},
              "ratios": {n: round(v, 3) for n, v in ratios.items()}, "targets": TARGETS, "report": report}
    bc.write_results(args.results_dir, "native_read", stamp,
                     bc.machine_info(args.driver_memory, loads, contention), record)
    print(json.dumps(record["ratios"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
