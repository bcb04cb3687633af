"""Hive Metastore round trips per acidorc operation, and their latency.

Each engine-free operation (a read, an append, an UPDATE, a compaction) runs against a Hive
Metastore with every thrift call counted and timed where acidorc sends it
(``Connection.call``), next to the same operation on acidorc's own SQLite store. The metastore
is ``--uri`` or, by default, the test suite's own real Hive 4.1 metastore started here
(tests/servers/hive_metastore.py: Derby, loopback).

    .venv/bin/python benchmarks/hms_round_trips.py            # prints a table; --json for the record
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from acid_source import AcidTable, create_table  # noqa: E402
from acid_source.metastore.hive import connection as hms_connection  # noqa: E402

CALLS: list[tuple[str, float]] = []
_original_call = hms_connection.Connection.call


def _counted_call(self, method, *args):
    start = time.perf_counter()
    try:
        return _original_call(self, method, *args)
    finally:
        CALLS.append((method, time.perf_counter() - start))


def _measure(what: str, fn, repeat: int) -> dict:
    counts, walls, per_method = [], [], defaultdict(list)
    for _ in range(repeat):
        CALLS.clear()
        start = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - start)
        counts.append(len(CALLS))
        for method, seconds in CALLS:
            per_method[method].append(seconds)
    methods = Counter(m for m, _ in CALLS)  # of the last run
    return {"operation": what, "round_trips": counts[-1], "methods": dict(sorted(methods.items())),
            "wall_ms": round(statistics.median(walls) * 1000, 1),
            "hms_ms": round(sum(s for _, s in CALLS) * 1000, 1),
            "call_ms_median": round(statistics.median(s for _, s in CALLS) * 1000, 2) if CALLS else None}


def run(uri: str, repeat: int) -> list[dict]:
    hms_connection.Connection.call = _counted_call  # type: ignore[method-assign]
    from pymetastore.hive_metastore import ttypes as tt

    from acid_source.metastore import connect

    db = "bench_round_trips"
    store = connect(uri)
    try:
        store._call("create_database", tt.Database(name=db, locationUri=f"file:{tempfile.mkdtemp()}", parameters={}))
    except tt.AlreadyExistsException:
        pass
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("day", pa.string())])
    results = []
    for store_url, label in ((uri, "hms"), (f"sqlite:///{tempfile.mkdtemp()}/m.db", "sqlite")):
        name = f"{db}.t_{uuid.uuid4().hex[:8]}"
        location = f"{tempfile.mkdtemp()}/t"
        create_table(location, schema, name=name, partitionColumns=["day"], metastoreUrl=store_url)
        key = name if label == "hms" else location
        table = AcidTable.load(key, metastoreUrl=store_url)
        batch = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "day": ["d1", "d1", "d2"]})
        counter = iter(range(10**6))
        steps = [
            ("append (2 partitions)", lambda: table.append(batch)),
            ("read (scan().toArrow())", lambda: AcidTable.load(key, metastoreUrl=store_url).scan().toArrow()),
            ("UPDATE (1 row)", lambda: table.update(f"id = 1 AND v <> 'x{next(counter)}'", {"v": "'x'"})),
            ("minor compaction", lambda: table.compact("minor")),
        ]
        for what, fn in steps:
            result = _measure(what, fn, repeat)
            result["store"] = label
            if label != "hms":
                result.pop("methods"), result.pop("round_trips"), result.pop("hms_ms"), result.pop("call_ms_median")
            results.append(result)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uri", help="a Hive Metastore (thrift://host:port); default: start the tests' own")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    server = None
    if args.uri is None:
        from servers.hive_metastore import start_hive_metastore

        server = start_hive_metastore()
    try:
        results = run(args.uri or server.uri, args.repeat)
    finally:
        if server is not None:
            server.stop()
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print(f"{'operation':28} {'store':7} {'wall ms':>8} {'trips':>6} {'in HMS ms':>10} {'per call ms':>12}  calls")
    for r in results:
        print(f"{r['operation']:28} {r['store']:7} {r['wall_ms']:8.1f} {r.get('round_trips', ''):>6} "
              f"{r.get('hms_ms', ''):>10} {r.get('call_ms_median', '') or '':>12}  "
              f"{', '.join(f'{m} {n}' for m, n in r.get('methods', {}).items())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
