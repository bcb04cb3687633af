"""Planning benchmark: how long a read takes to plan (resolve, list, choose directories, one
split per bucket) for a table of 1,000 and 10,000 partitions, on local disk and on an
S3-compatible server (SeaweedFS, started here on loopback), with the directory listings in
threads (``Storage.LIST_THREADS``) and, for comparison, one at a time.

    python benchmarks/planning.py [--partitions 1000 10000] [--no-s3]

Each partition holds one delta directory of one small bucket file. The table is not
registered (the snapshot is "everything on disk"), so only listing and planning are timed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import bench_common as bc  # noqa: E402
import pyarrow as pa  # noqa: E402
from bench_common import log  # noqa: E402

from acid_source import storage as storage_module  # noqa: E402
from acid_source.resolve import scan_for  # noqa: E402
from acid_source.spark.options import read_spec  # noqa: E402


def one_bucket_file(work: Path) -> bytes:
    """The bytes of a one-row ACID bucket file acidorc wrote."""
    from acid_source import AcidTable, create_table

    root = work / "seed"
    url = f"sqlite:///{work}/seed.db"
    create_table(str(root), pa.schema([("id", pa.int64()), ("v", pa.string())]), metastoreUrl=url)
    AcidTable.load(str(root), metastoreUrl=url).append(pa.table({"id": [1], "v": ["x"]}))
    (path,) = root.glob("delta_*/bucket_00000")
    return path.read_bytes()


def build(root: Path, partitions: int, data: bytes) -> None:
    for i in range(partitions):
        d = root / f"p={i}" / "delta_0000001_0000001_0000"
        d.mkdir(parents=True)
        (d / "bucket_00000").write_bytes(data)
        (d / "_orc_acid_version").write_text("2")


def plan_seconds(path: str, options: dict, threads: int, repeat: int) -> tuple[float, int]:
    """Best planning time of ``repeat`` runs with ``threads`` listing threads, and the splits."""
    storage_module.LIST_THREADS = threads
    best, splits = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        scan = scan_for(read_spec({"path": path, **options}))
        _, planned = scan.plan(scan.infer_schema())
        best = min(best, time.perf_counter() - t0)
        splits = len(planned)
    return best, splits


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-s3", action="store_true", help="local disk only")
    ap.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    stamp = bc.timestamp()
    threads = storage_module.LIST_THREADS
    work = Path(tempfile.mkdtemp(prefix="acidorc-planning-"))
    results: dict = {}
    server = None
    try:
        data = one_bucket_file(work)
        targets = [("local", None)]
        if not args.no_s3:
            from servers.s3 import start_s3_server

            server = start_s3_server(work / "s3")
            os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
            targets.append(("s3", server))
        for n in args.partitions:
            local = work / f"t{n}"
            build(local, n, data)
            for name, srv in targets:
                if srv is None:
                    path, options = str(local), {}
                else:
                    bucket = srv.new_bucket("planning")
                    t0 = time.perf_counter()
                    srv.filesystem().put(str(local), f"{bucket}/t{n}", recursive=True)
                    log(f"uploaded {n} partitions in {time.perf_counter() - t0:.1f}s")
                    path = f"s3://{bucket}/t{n}"
                    options = {"fs.key": srv.storage_options["key"], "fs.secret": srv.storage_options["secret"],
                               "fs.client_kwargs.endpoint_url": srv.endpoint}
                for label, k in (("threads", threads), ("sequential", 1)):
                    seconds, splits = plan_seconds(path, options, k, args.repeat)
                    results[f"{name} {n} {label}"] = round(seconds, 3)
                    log(f"{name}, {n:,} partitions, listings {label} ({k}): {seconds:.2f}s, {splits:,} splits")
                    if splits != n:
                        raise SystemExit(f"planned {splits} splits, expected {n}")
    finally:
        storage_module.LIST_THREADS = threads
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    lines = [bc.header_line("planning", stamp, f"{args.partitions} partitions, best of {args.repeat}")]
    lines += [f"  {k:32s} {v:7.2f}s" for k, v in results.items()]
    first, last = min(args.partitions), max(args.partitions)
    for name in ("local", "s3"):
        a, b = results.get(f"{name} {first} threads"), results.get(f"{name} {last} threads")
        if a and b:
            lines.append(f"  {name}: {last // first}x the partitions took {b / a:.1f}x the time")
    report = bc.print_report(lines)
    bc.write_results(args.results_dir, "planning", stamp, bc.machine_info("-", [bc.load_average()], None),
                     {"seconds": results, "report": report})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
