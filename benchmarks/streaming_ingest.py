"""Streaming ingest throughput: small transactions (100 rows each) into one table.

Each producer is its own process with a streaming connection (``transactionsPerBatch`` write
ids per batch, one growing file per bucket, an intermediate footer + ``_flush_length`` entry
and a store commit per transaction), next to the same transactions as plain appends (one
``delta_w_w`` directory and file per transaction). One producer, then four at once on the same
table; commits/s and rows/s over all producers, and the ratio to plain appends in the same run.
The transaction store is SQLite (default) or ``--store-url`` (e.g. the PostgreSQL of the tests).

    .venv/bin/python benchmarks/streaming_ingest.py              # prints a table; --json for the record
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import tempfile
import time

import pyarrow as pa


def _batch(producer: int, n: int, rows: int) -> pa.Table:
    start = (producer * 1_000_000 + n) * rows
    return pa.table({"id": pa.array(range(start, start + rows), pa.int64()),
                     "name": [f"event {i}" for i in range(rows)],
                     "value": pa.array([float(i) for i in range(rows)], pa.float64())})


def _produce(path: str, store_url: str, producer: int, transactions: int, rows: int, per_batch: int, mode: str,
             ready, start, done) -> None:
    os.environ["ACIDORC_METASTORE_URL"] = store_url
    from acid_source import AcidTable

    table = AcidTable.load(path)
    batches = [_batch(producer, n, rows) for n in range(transactions)]
    ready.put(producer)
    start.wait()
    began = time.perf_counter()
    if mode == "streaming":
        with table.streamingConnection(transactionsPerBatch=per_batch) as conn:
            for batch in batches:
                conn.beginTransaction()
                conn.write(batch)
                conn.commitTransaction()
    else:
        for batch in batches:
            table.append(batch)
    done.put(time.perf_counter() - began)


def run(mode: str, producers: int, transactions: int, rows: int, per_batch: int, store_url: str | None) -> dict:
    from acid_source import create_table

    root = tempfile.mkdtemp(prefix="acidorc-ingest-bench-")
    url = store_url or f"sqlite:///{root}/store.db"
    path = f"{root}/t"
    create_table(path, "id bigint, name string, value double", metastoreUrl=url)
    ctx = mp.get_context("forkserver")
    ready, start, done = ctx.Queue(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_produce, args=(path, url, p, transactions, rows, per_batch, mode, ready, start,
                                                done)) for p in range(producers)]
    for p in procs:
        p.start()
    for _ in procs:  # every producer has imported acidorc and built its batches
        ready.get(timeout=120)
    began = time.perf_counter()
    start.set()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a producer failed (exit code {p.exitcode})")
    wall = time.perf_counter() - began
    commits = producers * transactions
    os.environ["ACIDORC_METASTORE_URL"] = url
    from acid_source import AcidTable

    assert AcidTable.load(path).scan().count() == commits * rows
    files = sum(len(fs) for _, _, fs in os.walk(path))
    return {"mode": mode, "producers": producers, "transactions": commits, "rows_per_transaction": rows,
            "transactionsPerBatch": per_batch if mode == "streaming" else None, "wall_s": round(wall, 2),
            "commits_per_s": round(commits / wall, 1), "rows_per_s": round(commits * rows / wall),
            "files": files}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transactions", type=int, default=200, help="transactions per producer")
    parser.add_argument("--rows", type=int, default=100, help="rows per transaction")
    parser.add_argument("--per-batch", type=int, default=10, help="transactionsPerBatch")
    parser.add_argument("--store-url", default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    for producers in (1, 4):
        for mode in ("streaming", "append"):
            results.append(run(mode, producers, args.transactions, args.rows, args.per_batch, args.store_url))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'mode':<10} {'producers':>9} {'commits':>8} {'wall s':>7} {'commits/s':>10} {'rows/s':>9} {'files':>6}")
    for r in results:
        print(f"{r['mode']:<10} {r['producers']:>9} {r['transactions']:>8} {r['wall_s']:>7} {r['commits_per_s']:>10} "
              f"{r['rows_per_s']:>9} {r['files']:>6}")
    for producers in (1, 4):
        s, a = (next(r for r in results if r["mode"] == m and r["producers"] == producers)
                for m in ("streaming", "append"))
        print(f"{producers} producer(s): streaming ingest commits {s['commits_per_s'] / a['commits_per_s']:.2f}x "
              f"as many transactions per second as plain appends, in {s['files']} files instead of {a['files']}")


if __name__ == "__main__":
    main()
