"""The benchmark's table: a large full-ACID table in Hive's layout, plus the same visible rows
stored as plain ORC (the expected result).

Layout (``--rows N``, ``--buckets B``)::

    base_0000001/bucket_0000b                 80% of the rows, multi-stripe (``stripe_rows``)
    delta_000000W_000000W_0000/bucket_0000b   W = 2..11, 2% of the rows each
    delete_delta_00000DD_00000DD_0000/...     DD = 12..14, together ~10% of all rows

Every value is a pure function of the row's global ``id`` (0..N-1), and whether a row is
deleted (and by which delete delta) is a hash of its id, so the expected result - the visible
rows - is computed straight from the parameters, never by reading the ACID files back.

The ACID files are byte-for-byte what ``tests/hivegen.py`` writes for the same events (same
event struct, pyorc writer settings, stripe cuts, ``hive.acid.key.index`` / ``hive.acid.stats``
/ ``hive.acid.version`` footers, ``_orc_acid_version`` files). hivegen builds one Python
``Event`` per row and converts dates and decimals in Python (12-20 us/row measured on the 2-core
VM, i.e. 2-3.5 minutes for 10M rows on one core); here rows are streamed into pyorc's C++
``writerows`` from columns built with numpy, with pass-through converters for dates and
decimals (pyorc hands the ORC writer the same day number / unscaled integer either way), one
process per file, two at a time: 10M rows plus the plain copy in ~16s (30s of work).
:func:`self_check` writes a small table both ways and compares every byte.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from itertools import islice, repeat
from multiprocessing import get_context
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc
import pyorc
from pyorc.converters import ORCConverter

TESTS = Path(__file__).resolve().parent.parent / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from hivegen import DELETE, INSERT, HiveTable, base_name, bucket_property, delta_name  # noqa: E402

GENERATOR_VERSION = 1  # bump when the data or layout changes: it is part of the cache key

COLUMNS = [("id", "bigint"), ("name", "string"), ("amount", "double"), ("day", "date"),
           ("price", "decimal(12,2)")]
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()),
                          ("day", pa.date32()), ("price", pa.decimal128(12, 2))])
BASE_WRITE_ID = 1
FIRST_DELTA, N_DELTAS = 2, 10  # delta_0000002 .. delta_0000011
FIRST_DELETE, N_DELETE_DELTAS = 12, 3  # delete_delta_0000012 .. delete_delta_0000014
DELETE_PERCENT = 10
EPOCH_DAY_2015 = (dt.date(2015, 1, 1) - dt.date(1970, 1, 1)).days

_FIRST = ["Ada", "Alan", "Barbara", "Brian", "Carol", "Claude", "Dana", "Dennis", "Edsger", "Ellen",
          "Frances", "Fred", "Grace", "Guido", "Hedy", "Ivan", "Jean", "John", "Ken", "Kristen",
          "Leslie", "Linus", "Margaret", "Niklaus", "Ole", "Radia", "Rob", "Shafi", "Sophie", "Tim",
          "Whitfield", "Yukihiro"]
_LAST = ["Lovelace", "Turing", "Liskov", "Kernighan", "Shaw", "Shannon", "Scott", "Ritchie",
         "Dijkstra", "Ullman", "Allen", "Brooks", "Hopper", "van Rossum", "Lamarr", "Sutherland",
         "Sammet", "Backus", "Thompson", "Nygaard", "Lamport", "Torvalds", "Hamilton", "Wirth",
         "Dahl", "Perlman", "Pike", "Goldwasser", "Wilson", "Berners-Lee", "Diffie", "Matsumoto"]
NAMES = np.array([f"{first} {last}" for first in _FIRST for last in _LAST], dtype=object)  # 1024 names


@dataclass(frozen=True)
class Params:
    rows: int = 10_000_000
    buckets: int = 4
    stripe_rows: int = 1_000_000  # base / delta files: rows per stripe
    delete_stripe_rows: int = 25_000  # delete_delta files: events per stripe (see README)

    @property
    def delta_rows(self) -> int:  # rows of each of the ten insert deltas
        return self.rows // 50

    @property
    def base_rows(self) -> int:
        return self.rows - N_DELTAS * self.delta_rows

    @property
    def key(self) -> str:
        return (f"acid_r{self.rows}_b{self.buckets}_s{self.stripe_rows}_d{self.delete_stripe_rows}"
                f"_g{GENERATOR_VERSION}")


# --- the data, as functions of the global row id ------------------------------------------------
def _mix64(x: np.ndarray, salt: int) -> np.ndarray:
    """splitmix64 finalizer: a well-mixed uint64 per id."""
    z = x.astype(np.uint64) + np.uint64((0x9E3779B97F4A7C15 * (salt + 1)) & 0xFFFFFFFFFFFFFFFF)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def columns_for(ids: np.ndarray) -> dict[str, np.ndarray]:
    """name / amount / day (days since epoch) / price (unscaled cents) of each id."""
    h = _mix64(ids, 1)
    return {
        "id": ids.astype(np.int64),
        "name": NAMES[(h & np.uint64(1023)).astype(np.int64)],
        "amount": np.round(((h >> np.uint64(11)).astype(np.float64) / 2.0**53) * 100_000.0, 2),
        "day": (EPOCH_DAY_2015 + ((h >> np.uint64(20)) % np.uint64(3650)).astype(np.int64)).astype(np.int32),
        "price": ((h >> np.uint64(32)) % np.uint64(100_000_000)).astype(np.int64),  # < 1e6 with scale 2
    }


def delete_delta_of(ids: np.ndarray) -> np.ndarray:
    """-1 for a row that stays visible, else the index (0..2) of the delete delta removing it."""
    h = _mix64(ids, 2)
    out = np.full(len(ids), -1, dtype=np.int8)
    gone = (h % np.uint64(100)) < np.uint64(DELETE_PERCENT)
    out[gone] = ((h[gone] // np.uint64(100)) % np.uint64(N_DELETE_DELTAS)).astype(np.int8)
    return out


def insert_write_ids() -> list[int]:
    return [BASE_WRITE_ID] + list(range(FIRST_DELTA, FIRST_DELTA + N_DELTAS))


def id_range(p: Params, write_id: int, bucket: int) -> tuple[int, int]:
    """Global ids [lo, hi) of insert file (write_id, bucket); rowId = id - lo."""
    if write_id == BASE_WRITE_ID:
        start, total = 0, p.base_rows
    else:
        start, total = p.base_rows + (write_id - FIRST_DELTA) * p.delta_rows, p.delta_rows
    per, extra = divmod(total, p.buckets)
    lo = start + bucket * per + min(bucket, extra)
    return lo, lo + per + (1 if bucket < extra else 0)


def insert_dir(write_id: int) -> str:
    return base_name(write_id) if write_id == BASE_WRITE_ID else delta_name(write_id, write_id, 0)


def expected_summary(p: Params) -> dict:
    """Row count and sum of ids of the visible rows, from the parameters alone."""
    count = total = 0
    step = 1 << 22
    for lo in range(0, p.rows, step):
        ids = np.arange(lo, min(p.rows, lo + step), dtype=np.int64)
        keep = ids[delete_delta_of(ids) < 0]
        count += len(keep)
        total += int(keep.sum())
    return {"rows": count, "sum_id": total, "deleted": p.rows - count}


# --- writing ACID files exactly as tests/hivegen.py does ---------------------------------------
class _PassThrough(ORCConverter):
    """Dates as day numbers and decimals as unscaled integers: what pyorc's default converters
    compute from ``datetime.date`` / ``Decimal`` before handing values to the ORC writer."""

    @staticmethod
    def from_orc(*args):
        return args[-1]

    @staticmethod
    def to_orc(*args):
        return args[-1]


_CONVERTERS = {pyorc.TypeKind.DATE: _PassThrough, pyorc.TypeKind.DECIMAL: _PassThrough}


def _event_type() -> str:
    """hivegen's ACID event struct type for COLUMNS (HiveTable.event_type without a table dir)."""
    row_type = HiveTable.row_type.fget(SimpleNamespace(columns=COLUMNS))
    return HiveTable.event_type.fget(SimpleNamespace(row_type=row_type, lowercase_event_columns=False))


def _write_events(path: Path, n: int, events, last_keys_of, stripe_rows: int, stats: tuple[int, int, int]):
    """HiveTable.write_events for ``n`` already sorted event tuples: same writer settings,
    stripe cuts (an intermediate footer after every ``stripe_rows`` events but the last),
    and user metadata in the same order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        writer = pyorc.Writer(out, _event_type(), stripe_size=1 << 30, compression=pyorc.CompressionKind.ZLIB,
                              batch_size=stripe_rows, struct_repr=pyorc.StructRepr.TUPLE,
                              converters=_CONVERTERS)
        last_keys = []
        written = 0
        while written < n:
            take = min(stripe_rows, n - written)
            writer.writerows(islice(events, take))
            written += take
            last_keys.append(last_keys_of(written - 1))
            if written < n:
                writer.write_intermediate_footer()
        writer.set_user_metadata(**{
            "hive.acid.key.index": "".join(f"{w},{b},{r};" for w, b, r in last_keys).encode(),
            "hive.acid.stats": "{},{},{}".format(*stats).encode(),
            "hive.acid.version": b"2",
        })
        writer.close()


def _acid_dir(root: Path, name: str) -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "_orc_acid_version").write_bytes(b"2")
    return d


def write_insert_file(p: Params, root: str, write_id: int, bucket: int) -> dict:
    t0 = time.perf_counter()
    lo, hi = id_range(p, write_id, bucket)
    n = hi - lo
    cols = columns_for(np.arange(lo, hi, dtype=np.int64))
    rows = zip(cols["id"].tolist(), cols["name"].tolist(), cols["amount"].tolist(), cols["day"].tolist(),
               cols["price"].tolist())
    prop = bucket_property(bucket)
    events = zip(repeat(INSERT), repeat(write_id), repeat(prop), range(n), repeat(write_id), rows)
    path = _acid_dir(Path(root), insert_dir(write_id)) / f"bucket_{bucket:05d}"
    _write_events(path, n, events, lambda i: (write_id, prop, i), p.stripe_rows, (n, 0, 0))
    return {"path": str(path), "rows": n, "bytes": path.stat().st_size, "seconds": time.perf_counter() - t0}


def delete_keys(p: Params, delete_index: int, bucket: int) -> tuple[np.ndarray, np.ndarray]:
    """(originalTransaction, rowId) of the rows of ``bucket`` removed by a delete delta, in key order."""
    ws, rs = [], []
    for w in insert_write_ids():
        lo, hi = id_range(p, w, bucket)
        ids = np.arange(lo, hi, dtype=np.int64)
        hit = np.flatnonzero(delete_delta_of(ids) == delete_index)
        ws.append(np.full(len(hit), w, dtype=np.int64))
        rs.append(hit.astype(np.int64))
    return np.concatenate(ws), np.concatenate(rs)


def write_delete_file(p: Params, root: str, delete_index: int, bucket: int) -> dict:
    t0 = time.perf_counter()
    write_id = FIRST_DELETE + delete_index
    ws, rs = delete_keys(p, delete_index, bucket)
    n = len(ws)
    if n == 0:
        return {"path": None, "rows": 0, "bytes": 0, "seconds": 0.0}
    prop = bucket_property(bucket)
    w_list, r_list = ws.tolist(), rs.tolist()
    events = zip(repeat(DELETE), w_list, repeat(prop), r_list, repeat(write_id), repeat(None))
    path = _acid_dir(Path(root), delta_name(write_id, write_id, 0, delete=True)) / f"bucket_{bucket:05d}"
    _write_events(path, n, events, lambda i: (w_list[i], prop, r_list[i]), p.delete_stripe_rows, (0, 0, n))
    return {"path": str(path), "rows": n, "bytes": path.stat().st_size, "seconds": time.perf_counter() - t0}


# --- the expected result as plain ORC ----------------------------------------------------------
def visible_table(p: Params, bucket: int) -> pa.Table:
    """Visible rows of one bucket, computed from the parameters (base first, then the deltas)."""
    parts = []
    for w in insert_write_ids():
        lo, hi = id_range(p, w, bucket)
        ids = np.arange(lo, hi, dtype=np.int64)
        ids = ids[delete_delta_of(ids) < 0]
        parts.append(ids)
    ids = np.concatenate(parts)
    c = columns_for(ids)
    price = np.empty((len(ids), 2), dtype=np.int64)  # decimal128: little-endian low, high words
    price[:, 0] = c["price"]
    price[:, 1] = c["price"] >> 63
    arrays = [
        pa.array(c["id"]),
        pa.array(c["name"].tolist(), pa.string()),
        pa.array(c["amount"]),
        pa.array(c["day"], pa.int32()).cast(pa.date32()),
        pa.Array.from_buffers(pa.decimal128(12, 2), len(ids), [None, pa.py_buffer(price)]),
    ]
    return pa.Table.from_arrays(arrays, schema=ARROW_SCHEMA)


def write_plain_file(p: Params, root: str, bucket: int) -> dict:
    t0 = time.perf_counter()
    table = visible_table(p, bucket)
    path = Path(root) / f"part-{bucket:05d}.orc"
    path.parent.mkdir(parents=True, exist_ok=True)
    paorc.write_table(table, str(path), compression="zlib")
    return {"path": str(path), "rows": table.num_rows, "bytes": path.stat().st_size,
            "seconds": time.perf_counter() - t0}


# --- building (cached) -----------------------------------------------------------------------
def _call(job):
    fn, args = job
    return fn(*args)


def build(p: Params, root: Path, workers: int = 2, log=print) -> dict:
    """Write table/ and plain/ under ``root`` (replacing anything there) and a manifest."""
    if root.exists():
        shutil.rmtree(root)
    table, plain = root / "table", root / "plain"
    table.mkdir(parents=True)
    jobs = [(write_insert_file, (p, str(table), w, b)) for w in insert_write_ids() for b in range(p.buckets)]
    jobs += [(write_delete_file, (p, str(table), d, b)) for d in range(N_DELETE_DELTAS) for b in range(p.buckets)]
    jobs += [(write_plain_file, (p, str(plain), b)) for b in range(p.buckets)]
    jobs.sort(key=lambda j: 0 if j[1][2] == BASE_WRITE_ID and j[0] is write_insert_file else 1)  # big first
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        results = list(pool.map(_call, jobs))
    seconds = time.perf_counter() - t0
    files = [r for r in results if r["path"]]
    acid = [r for r in files if r["path"].startswith(str(table))]
    manifest = {
        "params": asdict(p),
        "key": p.key,
        "expected": expected_summary(p),
        "build_seconds": round(seconds, 1),
        "build_cpu_seconds": round(sum(r["seconds"] for r in results), 1),
        "acid_files": len(acid),
        "acid_bytes": sum(r["bytes"] for r in acid),
        "acid_events": sum(r["rows"] for r in acid),
        "plain_bytes": sum(r["bytes"] for r in files if r not in acid),
        "files": {os.path.relpath(r["path"], root): {"rows": r["rows"], "bytes": r["bytes"]} for r in files},
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def ensure(p: Params, data_dir: Path, log=print) -> tuple[Path, dict]:
    """The cached copy for ``p`` under ``data_dir``, built if missing or incomplete."""
    root = data_dir / p.key
    manifest_path = root / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("key") == p.key and all((root / f).exists() for f in manifest["files"]):
            manifest["cached"] = True
            return root, manifest
    log(f"building {root} (once; cached for later runs) ...")
    manifest = build(p, root, log=log)
    manifest["cached"] = False
    log(f"built {manifest['acid_files']} ACID files ({manifest['acid_bytes'] / 2**20:.0f} MiB) and the plain "
        f"copy in {manifest['build_seconds']}s ({manifest['build_cpu_seconds']}s of work in 2 processes)")
    return root, manifest


# --- exactness check against tests/hivegen.py ---------------------------------------------------
def self_check(workdir: Path) -> dict:
    """Write a small table with this module and with tests/hivegen.py; compare every byte.

    Also reports hivegen's per-row cost on this machine (what the 10M-row table would cost
    with it)."""
    p = Params(rows=60_000, buckets=3, stripe_rows=12_000, delete_stripe_rows=200)
    if workdir.exists():
        shutil.rmtree(workdir)
    fast_root, slow_root = workdir / "fast", workdir / "hivegen"
    fast_root.mkdir(parents=True)
    for w in insert_write_ids():
        for b in range(p.buckets):
            write_insert_file(p, str(fast_root), w, b)
    for d in range(N_DELETE_DELTAS):
        for b in range(p.buckets):
            write_delete_file(p, str(fast_root), d, b)
    slow_seconds, events_written = _write_with_hivegen(p, slow_root)
    files_compared = _compare_trees(fast_root, slow_root)
    shutil.rmtree(workdir)
    return {"files_compared": files_compared, "identical": True,
            "hivegen_us_per_row": round(slow_seconds / events_written * 1e6, 2)}


def _write_with_hivegen(p: Params, slow_root: Path) -> tuple[float, int]:
    """The same table through tests/hivegen.py, one Python Event per row: (seconds the insert
    files took, events written)."""
    from decimal import Decimal

    from hivegen import Event

    t0 = time.perf_counter()
    t = HiveTable(slow_root, COLUMNS, stripe_rows=p.stripe_rows)
    epoch = dt.date(1970, 1, 1)
    events_written = 0
    for w in insert_write_ids():
        rows_by_bucket = {}
        for b in range(p.buckets):
            lo, hi = id_range(p, w, b)
            c = columns_for(np.arange(lo, hi, dtype=np.int64))
            rows_by_bucket[b] = [
                (i, name, amount, epoch + dt.timedelta(days=day), Decimal(price).scaleb(-2))
                for i, name, amount, day, price in zip(c["id"].tolist(), c["name"].tolist(), c["amount"].tolist(),
                                                       c["day"].tolist(), c["price"].tolist())
            ]
            events_written += hi - lo
        if w == BASE_WRITE_ID:
            t.base(w, {b: [Event(INSERT, w, bucket_property(b), i, w, row) for i, row in enumerate(rows)]
                       for b, rows in rows_by_bucket.items()})
        else:
            t.insert(w, rows_by_bucket)
    slow_seconds = time.perf_counter() - t0
    t.stripe_rows = p.delete_stripe_rows
    for d in range(N_DELETE_DELTAS):
        keys = []
        for b in range(p.buckets):
            ws, rs = delete_keys(p, d, b)
            keys += [(w, bucket_property(b), r) for w, r in zip(ws.tolist(), rs.tolist())]
        t.delete(FIRST_DELETE + d, keys)
    return slow_seconds, events_written


def _compare_trees(fast_root: Path, slow_root: Path) -> int:
    """The number of files, after checking that both trees hold the same files, byte for byte."""
    fast = {str(f.relative_to(fast_root)): f for f in fast_root.rglob("*") if f.is_file()}
    slow = {str(f.relative_to(slow_root)): f for f in slow_root.rglob("*") if f.is_file()}
    if sorted(fast) != sorted(slow):
        raise AssertionError(f"file sets differ: only fast {sorted(set(fast) - set(slow))}, "
                             f"only hivegen {sorted(set(slow) - set(fast))}")
    differing = [name for name in fast if fast[name].read_bytes() != slow[name].read_bytes()]
    if differing:
        raise AssertionError(f"files differ from tests/hivegen.py output: {differing}")
    return len(fast)

