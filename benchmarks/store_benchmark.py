"""Transaction store benchmark: commits per second with 1, 4 and 16 writer processes, each
committing to its own table, on SQLite and on PostgreSQL - what the store-wide commit lock costs
when many tables are written at once.

    python benchmarks/store_benchmark.py [--writers 1,4,16] [--seconds S] [--kinds store,append]
                                         [--backends sqlite,postgresql] [--pg-url URL] [--pg-fast]

Two kinds of writer:

* ``store``: store-level commits only - open a transaction, allocate a write id on the writer's
  table, commit it with the touched data object (what every write does in the store, no files);
* ``append``: ``AcidTable.load(...).append(10 rows)`` - a real small append (files, listing,
  snapshot, store calls), each time through a new ``AcidTable`` as a user's script would.

PostgreSQL is a throw-away cluster (tests/servers/postgres.py) with its durability defaults
(fsync, synchronous_commit on: like SQLite's ``synchronous=FULL``), unless ``--pg-fast`` or
``--pg-url``. See benchmarks/README.md for how to read the table.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # servers.postgres: the throw-away PostgreSQL

import bench_common as bc  # noqa: E402
import pyarrow as pa  # noqa: E402
from bench_common import log  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
ROWS = pa.table({"id": pa.array(range(10), pa.int64()), "v": ["x"] * 10}, schema=SCHEMA)


# --- one writer process -----------------------------------------------------------------------------
def writer(kind: str, url: str, location: str, table_id: int, seconds: float, start, out) -> None:
    """Commit to one table for ``seconds`` after the common start (``start``: a barrier of all
    writers and the parent); report the count, the elapsed time and each commit's latency."""
    from acid_source.metastore import Metastore
    from acid_source.table import AcidTable

    store = Metastore(url)
    store.valid_txns()  # connect before the clock starts (both kinds: a process's first call)
    if kind == "append":
        AcidTable.load(location, metastoreUrl=url)
    latencies = []
    write_ids = []
    start.wait()
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while time.perf_counter() < deadline:
        t = time.perf_counter()
        if kind == "store":
            txn = store.open_transaction(description="store benchmark")
            write_ids.append(store.allocate_write_id(txn, table_id))
            store.commit(txn, touched={table_id: [""]}, operation="insert")
        else:
            write_ids.append(AcidTable.load(location, metastoreUrl=url).append(ROWS)["writeId"])
        latencies.append(time.perf_counter() - t)
    out.put({"commits": len(latencies), "elapsed": time.perf_counter() - t0, "latencies": latencies,
             "write_ids": write_ids})


class LockSampler:
    """PostgreSQL only: every 20 ms, how many of the database's sessions are waiting for a lock
    (``wait_event_type = 'Lock'``: on this workload the store's counter rows - commit_seq,
    txn_id - held until their transaction's COMMIT) and how many are running a statement."""

    def __init__(self, url: str):
        import threading

        from sqlalchemy.engine import make_url

        u = make_url(url)
        self.conninfo = dict(host=u.host, port=u.port, user=u.username, password=u.password, dbname=u.database)
        self.samples: list[tuple[int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(autocommit=True, **{k: v for k, v in self.conninfo.items() if v is not None}) as c:
            while not self._stop.wait(0.02):
                self.samples.append(c.execute(
                    "SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'), count(*) FILTER (WHERE state = 'active')"
                    " FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchone())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict:
        if not self.samples:
            return {}
        return {"lock_waiting_sessions_mean": round(statistics.mean(w for w, _ in self.samples), 2),
                "active_sessions_mean": round(statistics.mean(a for _, a in self.samples), 2)}


def run(kind: str, url: str, tables: list[tuple[str, int]], seconds: float) -> dict:
    """``len(tables)`` writers at once, one per table; checks every commit is in the store."""
    from acid_source.metastore import Metastore

    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(len(tables) + 1), ctx.Queue()
    procs = [ctx.Process(target=writer, args=(kind, url, loc, tid, seconds, start, out)) for loc, tid in tables]
    for p in procs:
        p.start()
    start.wait(timeout=300)  # every writer has imported acidorc and connected
    cpu0 = os.times()
    sampler = LockSampler(url) if url.startswith("postgresql") else None
    if sampler is not None:
        with sampler:
            reports = [out.get(timeout=seconds + 600) for _ in procs]
    else:
        reports = [out.get(timeout=seconds + 600) for _ in procs]
    for p in procs:
        p.join()
    store = Metastore(url)
    committed = sum(len(store.history(tid)) for _, tid in tables)
    made = sum(r["commits"] for r in reports)
    assert committed >= made, f"{made} commits reported, {committed} in the store's history"
    assert all(len(set(r["write_ids"])) == len(r["write_ids"]) for r in reports), "a write id was handed out twice"
    latencies = [x for r in reports for x in r["latencies"]]
    rate = sum(r["commits"] / r["elapsed"] for r in reports)
    cpu1 = os.times()
    return {**(sampler.summary() if sampler is not None else {}),
            "writers": len(tables), "commits": made, "commits_per_second": round(rate, 1),
            # fairness: a lock that is polled for (SQLite's busy handler) lets one writer win often
            "commits_per_writer_min": min(r["commits"] for r in reports),
            "commits_per_writer_max": max(r["commits"] for r in reports),
            "latency_ms_median": round(1000 * statistics.median(latencies), 1),
            "latency_ms_p95": round(1000 * sorted(latencies)[int(0.95 * (len(latencies) - 1))], 1),
            "children_cpu_seconds": round((cpu1.children_user + cpu1.children_system)
                                          - (cpu0.children_user + cpu0.children_system), 1)}


def make_tables(url: str, work: Path, n: int, tag: str) -> list[tuple[str, int]]:
    from acid_source import create_table

    tables = []
    for i in range(n):
        info = create_table(str(work / f"{tag}_t{i}"), SCHEMA, metastoreUrl=url)
        tables.append((info.location, info.table_id))
    return tables


def main() -> int:
    args = parse_args()
    stamp = bc.timestamp()
    os.environ.setdefault("ACIDORC_AUTO_COMPACT", "false")  # measure commits, not compactions

    server, pg_version = start_server(args)
    work = Path(tempfile.mkdtemp(prefix="acidorc-store-bench-"))
    try:
        results = run_all(args, server, work)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    lines = report_lines(args, stamp, pg_version, results)
    bc.print_report(lines)
    import sqlalchemy

    machine = {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
               "sqlalchemy": sqlalchemy.__version__, "postgresql": pg_version, "pg_fast": args.pg_fast,
               "load_average_after": bc.load_average()}
    bc.write_results(args.results_dir, "store", stamp, machine,
                     {"seconds_per_run": args.seconds, "runs": results, "report": "\n".join(lines)})
    return 0


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writers", default="1,4,16")
    ap.add_argument("--seconds", type=float, default=10.0, help="timed seconds per run")
    ap.add_argument("--kinds", default="store,append")
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--pg-url", default=None, help="an existing PostgreSQL database (one store per run)")
    ap.add_argument("--pg-fast", action="store_true", help="the test cluster's settings: fsync etc. off")
    ap.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = ap.parse_args()
    args.writers = [int(w) for w in args.writers.split(",")]
    args.kinds = args.kinds.split(",")
    args.backends = args.backends.split(",")
    return args


def start_server(args):
    """A throw-away PostgreSQL cluster when PostgreSQL is measured without ``--pg-url``: (server,
    its version), or (None, None)."""
    if "postgresql" not in args.backends or args.pg_url is not None:
        return None, None
    from servers.postgres import start_postgres_server

    log(f"starting PostgreSQL ({'fsync off' if args.pg_fast else 'durable defaults'}) ...")
    server = start_postgres_server(durable=not args.pg_fast)
    return server, server.bindir.parent.name


def run_all(args, server, work: Path) -> list[dict]:
    """One run per backend, kind and number of writers, each on a fresh store."""
    results = []
    for backend in args.backends:
        for kind in args.kinds:
            for n in args.writers:
                tag = f"{backend}_{kind}_{n}"
                if backend == "sqlite":
                    url = f"sqlite:///{work / (tag + '.db')}"
                else:
                    url = args.pg_url or server.create_database(f"bench_{tag}")
                tables = make_tables(url, work, n, tag)
                log(f"{backend:<10} {kind:<6} {n:>2} writer(s) for {args.seconds:g}s ...")
                r = run(kind, url, tables, args.seconds)
                r.update(backend=backend, kind=kind)
                log(f"  {r['commits_per_second']:>7.1f} commits/s, median {r['latency_ms_median']} ms, "
                    f"p95 {r['latency_ms_p95']} ms ({r['commits']} commits)")
                results.append(r)
    return results


def report_lines(args, stamp: str, pg_version, results: list[dict]) -> list[str]:
    lines = [f"acidorc store benchmark {stamp}: {os.cpu_count()} cores, {args.seconds:g}s per run, PostgreSQL "
             f"{pg_version or args.pg_url} ({'fsync off' if args.pg_fast else 'durable'}), SQLite WAL synchronous=FULL",
             "", f"{'backend':<11}{'kind':<8}{'writers':>8}{'commits/s':>11}{'median ms':>11}{'p95 ms':>9}"
             f"{'waiting on a lock':>19}{'per writer min-max':>20}"]
    for r in results:
        waiting = r.get("lock_waiting_sessions_mean")
        lines.append(f"{r['backend']:<11}{r['kind']:<8}{r['writers']:>8}{r['commits_per_second']:>11.1f}"
                     f"{r['latency_ms_median']:>11.1f}{r['latency_ms_p95']:>9.1f}"
                     + (f"{waiting:>19.2f}" if waiting is not None else f"{'-':>19}")
                     + f"{str(r['commits_per_writer_min']) + '-' + str(r['commits_per_writer_max']):>20}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
