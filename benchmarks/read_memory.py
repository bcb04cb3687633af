"""Read memory benchmark: the peak memory of one read task (acidorc's merge of the largest
bucket) against the size of the table, on the read benchmark's tables (stripes of 1M rows, ~10%
of rows deleted by 3 delete deltas).

    python benchmarks/read_memory.py [--rows 2500000 10000000]

Each measurement runs in a fresh process: plan the scan, then read every batch of the largest
split and drop it, as a Spark task does. Reported: the process's peak RSS above what it held
after planning, beside the bucket's size, one decoded stripe and the bucket's delete events.
A task's memory must be bounded by a stripe plus one bucket's delete events, not by the table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_common as bc  # noqa: E402
import bench_table as bt  # noqa: E402
from bench_common import log  # noqa: E402


def measure(table: str) -> dict:
    """In this process: the peak RSS of reading the largest split of ``table``."""
    import resource

    import pyarrow as pa

    from acid_source.orc.files import OrcFile
    from acid_source.resolve import scan_for
    from acid_source.scan.reader import ScanMetrics, read_split
    from acid_source.spark.options import read_spec

    scan = scan_for(read_spec({"path": table}))
    ctx, splits = scan.plan(scan.infer_schema())
    split = max(splits, key=lambda s: sum(f.size for f in s.inserts))
    first = OrcFile(ctx.storage, split.inserts[0].path)
    stripe_bytes = first.read_stripe(0).nbytes
    pa.default_memory_pool().release_unused()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    metrics = ScanMetrics()
    rows = 0
    for batch in read_split(split, ctx, metrics):
        rows += batch.num_rows
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"rows_read": rows, "bucket_bytes_on_disk": sum(f.size for f in split.inserts),
            "stripe_decoded_bytes": stripe_bytes, "delete_events": metrics.delete_events_loaded,
            "peak_rss_above_planning_mib": round((peak - before) / 1024, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[2_500_000, 10_000_000])
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--results-dir", type=Path, default=HERE / "results")
    ap.add_argument("--measure", help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return 0
    stamp = bc.timestamp()
    results = {}
    for rows in args.rows:
        params = bt.Params(rows=rows, buckets=4, stripe_rows=1_000_000, delete_stripe_rows=25_000)
        root, _ = bt.ensure(params, args.data_dir, log=log)
        out = subprocess.run([sys.executable, __file__, "--measure", str(root / "table")], check=True,
                             capture_output=True, text=True).stdout
        results[rows] = json.loads(out.strip().splitlines()[-1])
        log(f"{rows:,} rows: {results[rows]}")
    lines = [bc.header_line("read memory", stamp, "one task: the largest bucket")]
    for rows, r in results.items():
        lines.append(f"  table of {rows:>11,} rows: bucket {r['bucket_bytes_on_disk'] / 2**20:6.1f} MiB on disk, "
                     f"{r['rows_read']:,} rows read; one stripe decoded {r['stripe_decoded_bytes'] / 2**20:.1f} MiB, "
                     f"{r['delete_events']:,} delete events; peak RSS +{r['peak_rss_above_planning_mib']} MiB")
    report = bc.print_report(lines)
    bc.write_results(args.results_dir, "read_memory", stamp, bc.machine_info("-", [bc.load_average()], None),
                     {"results": results, "report": report})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
