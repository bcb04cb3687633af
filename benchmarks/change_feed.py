"""Change feed benchmark: the changes of 1% of a 10M-row table (0.5% updated, 0.5% deleted, in
two write ids) read with ``AcidTable.changes`` versus what one would otherwise run - a diff of
full scans of the two versions - in one process, engine-free (pyarrow only).

    python benchmarks/change_feed.py [--rows N] [--repeat K] [--buckets B]

The table: ``bench_table``'s columns (id, name, amount, day, price; every value a function of
the id), appended in 1M-row chunks, the first 80% major compacted into one base, the rest left
in deltas. Then two change sets, each an UPDATE of 0.5% of the rows and a DELETE of 0.5%:

* ``spread``: chosen by value (``amount`` ranges), so every file holds changed rows;
* ``recent``: the newest 1% of the ids, as a feed of recent corrections sees them.

Built once per parameter set under ``--data-dir`` (table and store together).

Timed, round-robin after one warm-up of each, median of K:

* ``change feed``: ``t.changes(startingVersion=a + 1, endingVersion=b).toArrow()``: the two
  write ids' delta and delete-delta files, the deleted rows looked up in the base by ROW__ID;
* ``full-scan diff``: ``t.scan(versionAsOf=a, includeRowId=True)`` and the same at ``b``, both
  whole, then the rows whose ROW__ID is in one and not the other (two anti-joins): the
  cheapest diff there is (comparing values would cost more), which gives the same rows.

Both must give the same inserts and deletes (counted, and the ids summed); the target is a
ratio of at most 0.1. CPU seconds (this process) are reported next to wall seconds: the
machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_common as bc  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from bench_common import log  # noqa: E402
from dml_benchmark import arrow_rows  # noqa: E402

TARGET_RATIO = 0.1
CHUNK = 1_000_000
BASE_SHARE = 0.8  # of the rows, major compacted into the base; the rest stay in 1M-row deltas


def spread_changes(rows: int) -> list[tuple[str, str]]:
    """0.5% updated, 0.5% deleted, chosen by value: spread evenly over every file."""
    return [("update", "amount >= 50000 AND amount < 50500"), ("delete", "amount < 500")]


def recent_changes(rows: int) -> list[tuple[str, str]]:
    """0.5% updated, 0.5% deleted, the newest rows (ids at the top): what a feed of recent
    corrections sees."""
    one = rows // 100
    return [("update", f"id >= {rows - one} AND id < {rows - one // 2}"), ("delete", f"id >= {rows - one // 2}")]


SHAPES = {"spread": spread_changes, "recent": recent_changes}


def build(path: Path, url: str, rows: int, buckets: int) -> list[int]:
    """The table at ``path`` (store ``url``); the versions before, between and after the two
    change sets."""
    from acid_source import create_table
    from acid_source.table import AcidTable

    if path.parent.exists():
        shutil.rmtree(path.parent)
    path.parent.mkdir(parents=True)
    create_table(str(path), "id bigint, name string, amount double, day date, price decimal(12,2)",
                 bucketColumns=["id"], numBuckets=buckets, metastoreUrl=url)
    t = AcidTable.load(str(path), metastoreUrl=url)
    base_rows = int(rows * BASE_SHARE)
    for lo in range(0, rows, CHUNK):
        t.append(arrow_rows(np.arange(lo, min(rows, lo + CHUNK), dtype=np.int64)))
        log(f"appended {min(rows, lo + CHUNK):,} rows")
        if lo < base_rows <= lo + CHUNK:
            t.compact("major")
            t.vacuum(retentionSeconds=0)
            log("major compaction done")
    versions = [t.version]
    for shape in SHAPES.values():
        for op, condition in shape(rows):
            if op == "update":
                done = t.update(condition, {"price": "price * 2", "name": "concat(name, '*')"})["numUpdatedRows"]
            else:
                done = t.delete(condition)["numDeletedRows"]
            log(f"{op} {condition}: {done:,} rows")
        versions.append(t.version)
    (path.parent / "versions").write_text(" ".join(map(str, versions)))
    return versions


def ensure_table(data_dir: Path, rows: int, buckets: int) -> tuple[Path, str, list[int]]:
    key = data_dir / f"change_feed_{rows}_{buckets}"
    path, url = key / "t", f"sqlite:///{key}/store.db"
    versions = key / "versions"
    if versions.exists() and path.exists():
        found = [int(x) for x in versions.read_text().split()]
        log(f"reusing {bc.rel_path(key)} (versions {found})")
        return path, url, found
    log(f"building {bc.rel_path(key)}: {rows:,} rows, {buckets} buckets")
    return path, url, build(path, url, rows, buckets)


def change_feed(t, a: int, b: int) -> dict:
    got = t.changes(startingVersion=a + 1, endingVersion=b).toArrow()
    kind = got.column("_change_type")
    ins, dels = pc.equal(kind, "insert"), pc.equal(kind, "delete")
    return {"inserts": pc.sum(ins.cast(pa.int64())).as_py(), "deletes": pc.sum(dels.cast(pa.int64())).as_py(),
            "insert_ids": pc.sum(got.column("id").filter(ins)).as_py(),
            "delete_ids": pc.sum(got.column("id").filter(dels)).as_py()}


def _keyed(table: pa.Table) -> pa.Table:
    row_id = table.column("ROW__ID").combine_chunks()
    return table.drop_columns(["ROW__ID"]).append_column("w", row_id.field("writeId")) \
        .append_column("b", row_id.field("bucketId")).append_column("r", row_id.field("rowId"))


def full_scan_diff(t, a: int, b: int) -> dict:
    before = _keyed(t.scan(versionAsOf=a, includeRowId=True).toArrow())
    after = _keyed(t.scan(versionAsOf=b, includeRowId=True).toArrow())
    keys = ["w", "b", "r"]
    deleted = before.join(after.select(keys), keys=keys, join_type="left anti")
    inserted = after.join(before.select(keys), keys=keys, join_type="left anti")
    return {"inserts": inserted.num_rows, "deletes": deleted.num_rows,
            "insert_ids": pc.sum(inserted.column("id")).as_py(), "delete_ids": pc.sum(deleted.column("id")).as_py()}


def timed(fn) -> tuple[float, float, dict]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    os.environ.setdefault("ACIDORC_AUTO_COMPACT", "false")
    stamp = bc.timestamp()
    path, url, versions = ensure_table(args.data_dir, args.rows, args.buckets)
    from acid_source.table import AcidTable

    t = AcidTable.load(str(path), metastoreUrl=url)
    scenarios = {}
    for k, shape in enumerate(SHAPES):
        a, b = versions[k], versions[k + 1]
        scenarios[f"{shape}: change feed"] = lambda a=a, b=b: change_feed(t, a, b)
        scenarios[f"{shape}: full-scan diff"] = lambda a=a, b=b: full_scan_diff(t, a, b)
    results: dict[str, dict] = {}
    for name, fn in scenarios.items():  # warm-up, and each pair must agree
        results[name] = timed(fn)[2]
        log(f"warm-up {name}: {results[name]}")
    for shape in SHAPES:
        if results[f"{shape}: change feed"] != results[f"{shape}: full-scan diff"]:
            log(f"MISMATCH ({shape}): {results}")
            return 1
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in scenarios}
    loads = []
    for _ in range(args.repeat):
        for name, fn in scenarios.items():
            wall, cpu, _ = timed(fn)
            runs[name].append((wall, cpu))
        loads.append(bc.load_average())
    median = {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
              for name, r in runs.items()}
    ratios = {shape: (median[f"{shape}: change feed"][0] / median[f"{shape}: full-scan diff"][0],
                      median[f"{shape}: change feed"][1] / median[f"{shape}: full-scan diff"][1]) for shape in SHAPES}
    lines = [
        f"acidorc change feed benchmark {stamp}: {os.cpu_count()} cores, pyarrow {pa.__version__}, "
        f"{args.rows:,} rows in {args.buckets} buckets ({BASE_SHARE:.0%} in a base, the rest in 1M-row deltas); "
        f"versions {versions}; median of {args.repeat}",
        f"  {'scenario':<26}{'wall s':>9}{'cpu s':>9}   changes",
        *[f"  {name:<26}{w:>9.2f}{c:>9.2f}   {results[name]['inserts']:,} inserts, {results[name]['deletes']:,} deletes"
          for name, (w, c) in median.items()],
        *[f"  {shape}: ratio change feed / full-scan diff {wall:.3f} wall, {cpu:.3f} cpu (target <= {TARGET_RATIO})"
          + ("" if wall <= TARGET_RATIO else "  MISSED") for shape, (wall, cpu) in ratios.items()],
        f"  load average per round: {loads}",
    ]
    report = bc.print_report(lines)
    bc.write_results(args.results_dir, "change_feed", stamp,
                     {"cpus": os.cpu_count(), "pyarrow": pa.__version__, "load_average_per_round": loads},
                     {"rows": args.rows, "buckets": args.buckets, "versions": versions, "changes": results,
                      "median_wall_cpu": median, "runs": runs, "ratios_wall_cpu": ratios, "target": TARGET_RATIO,
                      "report": report})
    return 0 if all(wall <= TARGET_RATIO for wall, _ in ratios.values()) else 2


if __name__ == "__main__":
    sys.exit(main())
