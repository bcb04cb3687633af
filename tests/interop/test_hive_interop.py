"""Hive 2.3's own ACID reader and acidorc must return the same rows on the same tables.

Every table is written with ``tests/hivegen.py`` (independent of ``acid_source``), read with
Hive 2.3.10's ``OrcInputFormat`` through py4j (``hive_reader.HiveAcidReader``: Hive picks the
directories with ``AcidUtils.getAcidState`` and applies deletes in ``OrcRawRecordMerger``) and
with acidorc's core (``core_read.read_rows``; for one table also through Spark), and the two
results are compared value by value together with their ROW__IDs.  Each test also checks the
rows against a small Python model of the writes, so two readers that agree on a wrong (e.g.
empty) answer still fail.

Mapping between the two worlds:

* Hive 2.3 speaks transaction ids, acidorc write ids; here write id == txn id.  A
  :class:`Snapshot` renders both Hive 2.3's ``ValidReadTxnList`` (``make_valid_txns``) and the
  Hive 3 ``ValidWriteIdList`` string acidorc's ``validWriteIds`` option takes.
* Layouts stay inside what Hive 2.3 understands: no ``_vN`` directory suffixes, no
  ``bucket_N_attempt`` names, no ``_flush_length`` side files, no ``_copy_N`` originals.
* Values are normalised before comparing (:func:`_norm`): maps become sorted pairs, structs
  tuples, NaN a marker, pandas timestamps naive ``datetime`` floored to microseconds (Hive's
  harness already returns floats as exact 32-bit values, ``char(n)`` padded and timestamps as
  naive UTC wall clock, which is also what the files hold).
"""

from __future__ import annotations

import datetime as dt
import math
import random
import struct
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import py4j  # noqa: E402,F401
import pyorc  # noqa: E402,F401  (interop tests fail, never skip, without their parts)
import pytest
from core_read import read_rows  # noqa: E402
from hivegen import DELETE, INSERT, Event, HiveTable, bucket_property, delta_name  # noqa: E402

from .hive_reader import LONG_MAX, HiveAcidReader, HiveReadError, make_valid_txns, parse_hive_type  # noqa: E402

pytestmark = [
    pytest.mark.interop,
]

B = [bucket_property(n) for n in range(4)]  # V1 bucket properties of writers 0..3, statement 0


# --------------------------------------------------------------------------------------------
# snapshots
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """A reader snapshot: write ids above ``hwm``, ``open`` and ``aborted`` are invisible."""

    hwm: int
    open: tuple[int, ...] = ()
    aborted: tuple[int, ...] = ()

    def hive(self) -> str:
        """Hive 2.3's ValidReadTxnList (write id == txn id)."""
        return make_valid_txns(self.hwm, open=self.open, aborted=self.aborted)

    def acid(self) -> str:
        """Hive 3's ValidReaderWriteIdList, acidorc's ``validWriteIds``."""
        min_open = min(self.open) if self.open else LONG_MAX
        return (f"default.t:{self.hwm}:{min_open}:{','.join(map(str, sorted(self.open)))}:"
                f"{','.join(map(str, sorted(self.aborted)))}")

    def visible(self, write_id: int) -> bool:
        return write_id <= self.hwm and write_id not in self.open and write_id not in self.aborted

    def __str__(self) -> str:
        text = f"hwm{self.hwm}"
        if self.open:
            text += "-open" + ",".join(map(str, self.open))
        if self.aborted:
            text += "-aborted" + ",".join(map(str, self.aborted))
        return text


EVERYTHING = None  # no snapshot: both readers treat everything on disk as committed


# --------------------------------------------------------------------------------------------
# a table plus a model of what it must contain
# --------------------------------------------------------------------------------------------

@dataclass
class Table:
    """A hivegen table plus the model of its writes: insert events by ROW__ID and the delete
    events (ROW__ID, deleting write id).  Columns are ``(name, Hive type)`` pairs; the same
    type strings are the ORC types hivegen writes."""

    root: Path
    columns: list[tuple[str, str]]
    stripe_rows: int | None = None
    buckets: int = 1
    gen: HiveTable = field(init=False)
    inserted: dict = field(init=False, default_factory=dict)  # key -> (write id, row)
    deleted: list = field(init=False, default_factory=list)  # (key, write id)
    _statements: set = field(init=False, default_factory=set)

    def __post_init__(self):
        self.gen = HiveTable(self.root, self.columns, stripe_rows=self.stripe_rows)

    @property
    def path(self) -> str:
        return str(self.root)

    def write(self, write_id, *, inserts=None, deletes=(), updates=(), stmt=0, partition=None):
        """One statement of ``write_id``: deletes (by ROW__ID), updates (``(old V1 ROW__ID, new
        row)``, done as Hive 3's split update: a delete event for the old ROW__ID plus an insert
        of the new version in the old row's bucket) and inserts (``{bucket: rows}``).  Each
        statement writes at most one delete_delta and one delta directory, so it must be
        described in one call.  Returns the insert events by bucket."""
        deletes = list(deletes) + [k for k, _ in updates]
        rows = {b: list(rs) for b, rs in (inserts or {}).items()}
        for (_, prop, _), row in updates:
            rows.setdefault((prop >> 16) & 0xFFF, []).append(row)
        for kind, todo in (("delete", deletes), ("insert", rows)):
            if todo:
                statement = (partition, kind, write_id, stmt)
                assert statement not in self._statements, f"{statement} written twice"
                self._statements.add(statement)
        if deletes:
            self.gen.delete(write_id, deletes, stmt=stmt, partition=partition)
            self.deleted.extend(((partition, k), write_id) for k in deletes)
        if not rows:
            return {}
        events = self.gen.insert(write_id, rows, stmt=stmt, partition=partition)
        for evs in events.values():
            for e in evs:
                self.inserted[(partition, e.key)] = (write_id, e.row)
        return events

    def base(self, write_id, rows_by_bucket, *, partition=None):
        """``base_W`` holding ``{bucket: rows}`` written by ``write_id`` (an INSERT OVERWRITE,
        or a major compaction of that history)."""
        events = {b: [Event(INSERT, write_id, B[b], i, write_id, row) for i, row in enumerate(rows)]
                  for b, rows in rows_by_bucket.items()}
        self.gen.base(write_id, events, partition=partition)
        for evs in events.values():
            for e in evs:
                self.inserted[(partition, e.key)] = (write_id, e.row)
        return events

    def insert(self, write_id, rows_by_bucket, **kw):
        return self.write(write_id, inserts=rows_by_bucket, **kw)

    def delete(self, write_id, keys, **kw):
        self.write(write_id, deletes=keys, **kw)

    def update(self, write_id, changes, **kw):
        return self.write(write_id, updates=changes, **kw)

    def expected(self, snap: Snapshot | None, partition=None) -> list[tuple]:
        """``(ROW__ID, *values)`` rows the snapshot must see, sorted by ROW__ID."""
        vis = (lambda w: True) if snap is None else snap.visible
        gone = {k for k, w in self.deleted if vis(w)}
        return by_row_id((k[1],) + tuple(row) for k, (w, row) in self.inserted.items()
                         if k[0] == partition and vis(w) and k not in gone)


# --------------------------------------------------------------------------------------------
# reading and normalising
# --------------------------------------------------------------------------------------------

NAN = "<NaN>"


def by_row_id(rows) -> list[tuple]:
    """Sorted by ROW__ID (first element); repr breaks ties without comparing None to values."""
    return sorted(rows, key=lambda r: (r[0], repr(r)))


def _norm(t: tuple, v):
    """One value in a reader-independent form, by its parsed Hive type."""
    if v is None:
        return None
    k = t[0]
    if k in ("float", "double"):
        return NAN if math.isnan(v) else float(v)
    if k == "timestamp":
        if hasattr(v, "floor") and hasattr(v, "to_pydatetime"):  # pandas.Timestamp (ns)
            v = v.floor("us").to_pydatetime()
        assert isinstance(v, dt.datetime) and v.tzinfo is None, f"not a naive timestamp: {v!r}"
        return v
    if k == "binary":
        return bytes(v)
    if k == "array":
        return [_norm(t[1], x) for x in v]
    if k == "map":
        pairs = v.items() if isinstance(v, dict) else v
        return sorted(((_norm(t[1], a), _norm(t[2], b)) for a, b in pairs), key=repr)
    if k == "struct":
        if isinstance(v, dict):
            v = [v[name] for name, _ in t[1]]
        return tuple(_norm(ft, x) for (_, ft), x in zip(t[1], v))
    return v


def _types(columns):
    return [parse_hive_type(ty) for _, ty in columns]


def norm_row(types, row) -> tuple:
    return tuple(_norm(t, v) for t, v in zip(types, row))


def hive_read(hive: HiveAcidReader, table: Table, snap: Snapshot | None, *, path: str | None = None,
              conf: dict | None = None) -> list[tuple]:
    """Hive 2.3's rows as ``(ROW__ID, *values)``, normalised, sorted by ROW__ID."""
    rows = hive.read(path or table.path, table.columns, valid_txns=snap and snap.hive(),
                     bucket_count=table.buckets, with_row_id=True, conf=conf)
    types = _types(table.columns)
    return by_row_id((tuple(r[0]),) + norm_row(types, r[1:]) for r in rows)


def acid_read(table: Table, snap: Snapshot | None, *, partition_columns=(), **options) -> list[tuple]:
    """acidorc's core rows as ``(ROW__ID, *values[, *partition values])``, normalised, sorted."""
    if snap is not None:
        options["validWriteIds"] = snap.acid()
    rows = read_rows(table.root, includeRowId="true", **options)
    types = _types(table.columns)
    names = [n for n, _ in table.columns]
    out = []
    for r in rows:
        rid = r["ROW__ID"]
        assert set(r) == {*names, *partition_columns, "ROW__ID"}, sorted(r)
        out.append(((rid["writeId"], rid["bucketId"], rid["rowId"]),)
                   + norm_row(types, [r[n] for n in names])
                   + tuple(r[c] for c in partition_columns))
    return by_row_id(out)


def spark_read(spark, table: Table, snap: Snapshot | None) -> list[tuple]:
    """The full Spark path: ``spark.read.format("acidorc")``, normalised, sorted by ROW__ID."""
    reader = spark.read.format("acidorc").option("includeRowId", "true")
    if snap is not None:
        reader = reader.option("validWriteIds", snap.acid())
    df = reader.load(table.path)
    names = [n for n, _ in table.columns]
    assert df.columns == names + ["ROW__ID"]
    types = _types(table.columns)
    out = []
    for r in df.collect():
        rid = r["ROW__ID"]
        out.append(((rid["writeId"], rid["bucketId"], rid["rowId"]),) + norm_row(types, [r[n] for n in names]))
    return by_row_id(out)


def model(table: Table, snap: Snapshot | None, partition=None) -> list[tuple]:
    """The model's rows in normalised form, stored as ORC stores them: ``char(n)`` values
    padded to n, ``float`` values rounded to 32 bits."""
    types = _types(table.columns)

    def pad(t, v):
        if v is None:
            return v
        if t[0] == "char":
            return v.ljust(t[1])
        if t[0] == "float":
            return struct.unpack("<f", struct.pack("<f", v))[0]
        return v

    return [(r[0],) + norm_row(types, [pad(t, v) for t, v in zip(types, r[1:])])
            for r in table.expected(snap, partition)]


def _short(v, limit=80) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_rows(actual: list[tuple], expected: list[tuple], columns, what: str) -> None:
    """``actual == expected`` for ``(ROW__ID, *values)`` rows, else a failure that names the
    ROW__IDs found on one side only and, per shared ROW__ID, the columns that differ."""
    if actual == expected:
        return
    names = ["ROW__ID"] + [n for n, _ in columns]
    lines = [f"{what}: {len(actual)} rows vs {len(expected)} expected"]
    got = {r[0]: r for r in actual}
    want = {r[0]: r for r in expected}
    if len(got) != len(actual) or len(want) != len(expected):
        lines.append("  duplicate ROW__IDs")
    for label, keys in (("unexpected", sorted(set(got) - set(want))), ("missing", sorted(set(want) - set(got)))):
        for k in keys[:5]:
            lines.append(f"  {label} {_short((got if label == 'unexpected' else want)[k], 200)}")
        if len(keys) > 5:
            lines.append(f"  ... {len(keys) - 5} more {label}")
    shown = 0
    for k in sorted(set(got) & set(want)):
        if got[k] != want[k] and shown < 5:
            shown += 1
            cols = [f"{n}: {_short(a)} != {_short(b)}" for n, a, b in zip(names, got[k], want[k]) if a != b]
            lines.append(f"  {k}: " + "; ".join(cols))
    pytest.fail("\n".join(lines))


def assert_same(hive, table: Table, snap: Snapshot | None, *, min_rows: int = 1, hive_conf=None,
                **acid_options) -> list[tuple]:
    """Hive 2.3 == model and acidorc == Hive 2.3, ROW__IDs included; returns the rows."""
    expected = model(table, snap)
    assert len(expected) >= min_rows, "the scenario must leave rows to compare"
    from_hive = hive_read(hive, table, snap, conf=hive_conf)
    label = snap or "everything committed"
    check_rows(from_hive, expected, table.columns, f"Hive 2.3 vs the model of the writes, {label}")
    from_acid = acid_read(table, snap, **acid_options)
    check_rows(from_acid, from_hive, table.columns, f"acidorc vs Hive 2.3, {label}")
    return from_hive


# Hive's ETL split strategy with a tiny max split size: one OrcSplit per stripe.
TINY_HIVE_SPLITS = {"hive.exec.orc.split.strategy": "ETL", "mapred.max.split.size": "300",
                    "mapred.min.split.size": "1"}


# --------------------------------------------------------------------------------------------
# base + append deltas + delete deltas, 3 buckets, multi-stripe files, several snapshots
# --------------------------------------------------------------------------------------------

COLS = [("id", "int"), ("name", "string")]


@pytest.fixture(scope="module")
def layered(tmp_path_factory) -> Table:
    """base_1 (3 buckets x 30 rows) + 6 more write ids of inserts and deletes; 7 rows per
    stripe, so most files have several stripes and the key index matters."""
    t = Table(tmp_path_factory.mktemp("layered"), COLS, stripe_rows=7, buckets=3)
    t.base(1, {b: [(b * 1000 + i, f"base-{b}-{i}") for i in range(30)] for b in range(3)})
    t.insert(2, {b: [(2000 + 100 * b + i, f"w2-{b}-{i}") for i in range(20)] for b in range(3)})
    t.delete(3, [(1, B[0], i) for i in range(0, 30, 3)] + [(1, B[2], i) for i in range(5, 25)]
             + [(2, B[1], i) for i in range(0, 20, 2)])
    t.insert(4, {0: [(4000 + i, "w4-0") for i in range(15)], 2: [(4200 + i, "w4-2") for i in range(9)]})
    t.delete(5, [(4, B[0], i) for i in range(3, 12)] + [(1, B[1], i) for i in range(10)]
             + [(2, B[2], 19)])
    t.insert(6, {1: [(6000 + i, "w6-1") for i in range(11)]})
    # write 7 deletes rows of writes 1, 2, 4 and 6 and inserts into bucket 0
    t.write(7, deletes=[(1, B[0], 29), (2, B[0], 0), (4, B[2], 8), (6, B[1], 10)], inserts={0: [(7000, "w7")]})
    return t


def test_layered_table_everything_committed(hive, layered):
    rows = assert_same(hive, layered, EVERYTHING, min_rows=100)
    assert {rid[1] for rid, *_ in rows} == set(B[:3])  # all three buckets contribute
    assert len(assert_same(hive, layered, Snapshot(7), min_rows=100)) == len(rows)


def test_layered_table_stripe_splits(hive, layered):
    """Both readers cut the files into stripe-sized splits: Hive with its ETL split strategy
    and a tiny max split size (one OrcSplit per stripe, delete events bounded by the key
    index), acidorc with ``maxSplitBytes=1`` (one split per stripe range)."""
    for snap in (EVERYTHING, Snapshot(5, aborted=(3,))):
        assert_same(hive, layered, snap, hive_conf=TINY_HIVE_SPLITS, maxSplitBytes="1")


@pytest.mark.parametrize("snap", [
    Snapshot(7, aborted=(3,)),            # an aborted delete: its rows come back
    Snapshot(7, aborted=(2, 5)),          # an aborted insert and an aborted delete
    Snapshot(7, open=(4,)),               # open insert (min open 4) below committed writes
    Snapshot(7, open=(5, 7)),             # open deletes: nothing they delete is hidden
    Snapshot(7, open=(6,), aborted=(3,)),
    Snapshot(4),                          # historical high watermarks
    Snapshot(2),
    Snapshot(1),
    Snapshot(5, open=(4,), aborted=(2,)),
], ids=str)
def test_layered_table_snapshots(hive, layered, snap):
    assert_same(hive, layered, snap)


# --------------------------------------------------------------------------------------------
# multi-statement transaction
# --------------------------------------------------------------------------------------------

def test_multi_statement_transaction(hive, tmp_path):
    """Write id 2 runs three statements: delta_2_2_0000, then statement 1 deletes rows of
    write 1 and of its own statement 0 (delete_delta_2_2_0001) and inserts (delta_2_2_0001),
    then statement 2 updates a row of statement 1.  Statement ids live in the ROW__ID bucket
    property, so rows of different statements never collide."""
    t = Table(tmp_path / "t", COLS, stripe_rows=4, buckets=2)
    t.insert(1, {0: [(i, f"w1-{i}") for i in range(10)], 1: [(100 + i, f"w1b1-{i}") for i in range(6)]})
    t.insert(2, {0: [(200 + i, f"s0-{i}") for i in range(5)], 1: [(300, "s0b1")]}, stmt=0)
    t.delete(2, [(1, B[0], 3), (1, B[1], 5), (2, B[0], 1), (2, B[0], 4)], stmt=1)
    s1 = t.insert(2, {1: [(400 + i, f"s1-{i}") for i in range(4)]}, stmt=1)
    t.update(2, [(s1[1][2].key, (402, "s1-2 updated by s2"))], stmt=2)
    t.insert(3, {0: [(500, "w3")]})
    t.delete(4, [(2, bucket_property(1, 1), 0)])
    assert {p.name for p in t.root.iterdir()} >= {
        "delta_0000002_0000002_0000", "delta_0000002_0000002_0001", "delete_delta_0000002_0000002_0001",
        "delta_0000002_0000002_0002", "delete_delta_0000002_0000002_0002"}
    rows = assert_same(hive, t, EVERYTHING)
    assert {rid[1] for rid, *_ in rows if rid[0] == 2} == {B[0], B[1], bucket_property(1, 1),
                                                          bucket_property(1, 2)}
    for snap in (Snapshot(3, aborted=(2,)), Snapshot(4, open=(2,)), Snapshot(2), Snapshot(4, aborted=(4,))):
        assert_same(hive, t, snap)


# --------------------------------------------------------------------------------------------
# minor compaction (Hive 2.3 names: delta_a_b / delete_delta_a_b, no _v suffix)
# --------------------------------------------------------------------------------------------

def test_minor_compacted_deltas(hive, tmp_path):
    """Write ids 2..4 were minor-compacted into delta_2_4 + delete_delta_2_4 (same events, no
    statement id), but the per-statement deltas they cover are still on disk, as before the
    Cleaner runs.  Readers must use the compacted pair and ignore the covered dirs (reading
    both would duplicate rows), and still filter its events per write id for snapshots whose
    high watermark or exceptions fall inside the compacted range."""
    t = Table(tmp_path / "t", COLS, stripe_rows=5, buckets=2)
    t.insert(1, {0: [(i, f"w1-{i}") for i in range(12)], 1: [(100 + i, f"w1b1-{i}") for i in range(8)]})
    e2 = t.insert(2, {0: [(200 + i, "w2") for i in range(6)], 1: [(250 + i, "w2b1") for i in range(3)]})
    t.delete(3, [(1, B[0], 0), (1, B[0], 7), (2, B[1], 2), (1, B[1], 4)])
    e4 = t.insert(4, {1: [(400 + i, "w4") for i in range(7)]})
    t.delete(4, [(2, B[0], 5)])
    inserts = {0: e2[0], 1: e2[1] + e4[1]}
    deletes = {0: [Event(DELETE, 1, B[0], 0, 3, None), Event(DELETE, 1, B[0], 7, 3, None),
                   Event(DELETE, 2, B[0], 5, 4, None)],
               1: [Event(DELETE, 2, B[1], 2, 3, None), Event(DELETE, 1, B[1], 4, 3, None)]}
    t.gen.raw_dir(delta_name(2, 4, None), inserts)
    t.gen.raw_dir(delta_name(2, 4, None, delete=True), deletes)
    t.insert(5, {0: [(500, "w5")]})
    t.delete(6, [(4, B[1], 6), (1, B[0], 11)])
    assert (t.root / "delta_0000002_0000004").is_dir() and (t.root / "delta_0000002_0000002_0000").is_dir()
    for snap in (EVERYTHING, Snapshot(6), Snapshot(3), Snapshot(6, aborted=(3,)),
                 Snapshot(6, open=(4,)), Snapshot(4, open=(2,))):
        assert_same(hive, t, snap)


def test_major_compacted_base_next_to_covered_deltas(hive, tmp_path):
    """Hive 2.3's major compaction writes ``base_3`` (no ``_v`` suffix, no ``_metadata_acid``)
    holding the surviving rows of writes 1..3 with their original ROW__IDs; the deltas it
    covers stay until the Cleaner runs.  Readers must take the base, skip the covered deltas
    and apply only later deltas.

    Snapshots that see write 3 agree.  For snapshots below the base or with an open write id
    under it, Hive 2.3 refuses ("Not enough history": its ``isValidBase`` needs every write id
    up to the base committed), while acidorc, like Hive 3, treats a base without a compaction
    marker as INSERT OVERWRITE output, valid once its own write id is committed."""
    t = Table(tmp_path / "t", COLS, stripe_rows=3, buckets=2)
    e1 = t.insert(1, {0: [(i, f"w1-{i}") for i in range(7)], 1: [(10, "w1b1"), (11, "w1b1")]})
    t.delete(2, [(1, B[0], 1), (1, B[0], 5), (1, B[1], 0)])
    e3 = t.insert(3, {0: [(30, "w3")]})
    t.gen.base(3, {0: [e for e in e1[0] if e.row_id not in (1, 5)] + e3[0], 1: [e1[1][1]]})
    t.write(4, inserts={1: [(40, "w4")]}, deletes=[(1, B[0], 2), (3, B[0], 0)])
    t.insert(5, {0: [(50, "w5")]})
    for snap in (EVERYTHING, Snapshot(5), Snapshot(3), Snapshot(5, aborted=(4,)), Snapshot(5, open=(4,))):
        assert_same(hive, t, snap)
    with pytest.raises(HiveReadError, match="Not enough history"):
        hive_read(hive, t, Snapshot(5, open=(2,)))


def test_wide_write_ids_and_bucket_numbers(hive, tmp_path):
    """Write ids wider than the 7 digits of ``%07d`` and a bucket number above 9."""
    t = Table(tmp_path / "t", COLS, buckets=14)
    t.insert(12_345_678, {0: [(1, "a"), (2, "b")], 13: [(3, "c"), (4, "d")]})
    t.delete(12_345_679, [(12_345_678, B[0], 0), (12_345_678, bucket_property(13), 1)])
    t.insert(12_345_680, {13: [(5, "e")]})
    assert (t.root / "delta_12345678_12345678_0000").is_dir()
    assert_same(hive, t, EVERYTHING)
    assert_same(hive, t, Snapshot(12_345_680, aborted=(12_345_679,)))


# --------------------------------------------------------------------------------------------
# UPDATE as split update
# --------------------------------------------------------------------------------------------

def test_update_as_split_update(hive, tmp_path):
    """UPDATE by write id 2 (and again by 3): a delete event for the old ROW__ID and an insert
    of the new version with a fresh ROW__ID in the same write id, in both buckets.  Old
    snapshots, or the update's write id aborted, must show the old versions."""
    t = Table(tmp_path / "t", COLS, stripe_rows=3, buckets=2)
    t.insert(1, {0: [(i, f"v1-{i}") for i in range(8)], 1: [(10 + i, f"v1-{10 + i}") for i in range(5)]})
    new = t.update(2, [((1, B[0], 2), (2, "v2-2")), ((1, B[0], 6), (6, "v2-6")),
                       ((1, B[1], 0), (10, "v2-10"))])
    t.update(3, [(new[0][0].key, (2, "v3-2")), ((1, B[1], 4), (14, "v3-14"))])
    rows = assert_same(hive, t, EVERYTHING)
    assert sorted(r[1:] for r in rows if r[1] in (2, 6, 10, 14)) == [
        (2, "v3-2"), (6, "v2-6"), (10, "v2-10"), (14, "v3-14")]
    for snap in (Snapshot(2), Snapshot(1), Snapshot(3, aborted=(2,)), Snapshot(3, open=(3,))):
        assert_same(hive, t, snap)


# --------------------------------------------------------------------------------------------
# column types
# --------------------------------------------------------------------------------------------

TYPE_COLS = [
    ("i", "int"), ("bi", "bigint"), ("si", "smallint"), ("ti", "tinyint"), ("b", "boolean"),
    ("f", "float"), ("d", "double"), ("s", "string"), ("vc", "varchar(10)"), ("c", "char(5)"),
    ("dec", "decimal(10,2)"), ("wide", "decimal(38,18)"), ("dt", "date"), ("ts", "timestamp"),
    ("bin", "binary"), ("arr", "array<int>"), ("m", "map<string,int>"),
    ("mk", "map<int,decimal(5,1)>"),
    ("st", "struct<a:int,b:string,c:array<timestamp>>"),
    ("nest", "array<struct<x:bigint,y:map<string,string>>>"),
]
# Not in here: timestamps strictly between 1969-12-31 23:59:59 and the epoch.  ORC stores
# seconds and nanos separately and that one-second range is ambiguous in the encoding; pyorc's
# writer turns 23:59:59.999999 into a file that every reader (Hive 2.3's Java ORC, pyorc, pyarrow)
# reads back as 1970-01-01 00:00:00.999999.
TYPE_ROWS = [
    (1, 2**40, -3, 7, True, 1.1, 2.2, 'héllo\n"x" 💡', "vc", "ab", Decimal("12.50"),
     Decimal("12345678901234567890.123456789012345678"), dt.date(2020, 2, 29),
     dt.datetime(2021, 3, 4, 5, 6, 7, 123456), b"\x00\xff\x10", [1, None, 3], {"k": 1, "z": None},
     {5: Decimal("0.5"), -1: None}, (9, "nine", [dt.datetime(1960, 1, 1, 0, 0, 0, 1), None]),
     [(1, {"a": "b"}), None, (None, {}), (2, None)]),
    (2,) + (None,) * (len(TYPE_COLS) - 1),
    (3, -(2**63), -(2**15), -128, False, -0.25, float("-inf"), "", "", "", Decimal("-0.01"),
     Decimal("-0.000000000000000001"), dt.date(1, 1, 1), dt.datetime(1677, 9, 22, 23, 59, 59, 999999),
     b"", [], {}, {}, (None, None, None), []),
    (4, 2**63 - 1, 2**15 - 1, 127, True, float("nan"), float("nan"), "x" * 1000, "abcdefghij", "abcde",
     Decimal("99999999.99"), Decimal("-99999999999999999999.999999999999999999"), dt.date(9999, 12, 31),
     dt.datetime(1969, 12, 31, 23, 59, 58, 999999), bytes(range(256)), [-(2**31), 2**31 - 1],
     {"": 0}, {0: Decimal("-9999.9")}, (-1, "", []), [(None, {"k": None})]),
    (5, 0, 0, 0, False, float("inf"), -0.0, " pad ", " ", " a", Decimal("0.00"), Decimal("0E-18"),
     dt.date(1970, 1, 1), dt.datetime(1970, 1, 1), b"\x00", [None], {"n": None}, {1: None},
     (0, None, [None]), [None]),
]


@pytest.fixture(scope="module")
def typed(tmp_path_factory) -> Table:
    """Every type above, with nulls at every level, in two buckets of 2-row stripes; write 2
    deletes one row and updates two (new versions with other values), write 3 inserts a row."""
    t = Table(tmp_path_factory.mktemp("typed"), TYPE_COLS, stripe_rows=2, buckets=2)
    t.insert(1, {0: TYPE_ROWS[:3], 1: TYPE_ROWS[3:]})
    changed = list(TYPE_ROWS[0])
    changed[0], changed[5], changed[13] = 6, -3.4028234663852886e38, dt.datetime(2038, 1, 19, 3, 14, 8)
    changed[16] = {"k": 2}
    t.write(2, updates=[((1, B[0], 0), tuple(changed)), ((1, B[1], 1), (7,) + TYPE_ROWS[4][1:])],
            deletes=[(1, B[0], 1)])
    t.insert(3, {1: [(8,) + TYPE_ROWS[3][1:]]})
    return t


def test_all_column_types(hive, typed):
    rows = assert_same(hive, typed, EVERYTHING)
    assert sorted(r[1] for r in rows) == [3, 4, 6, 7, 8]
    # the normalised values still are the exact Python values written
    by_id = {r[1]: r[1:] for r in rows}
    assert by_id[6][5] == -3.4028234663852886e38 and by_id[4][5] == NAN and by_id[7][6] == 0.0
    assert by_id[3][9] == "     " and by_id[7][9] == " a   "  # char(5) padded by both
    assert by_id[3][13] == dt.datetime(1677, 9, 22, 23, 59, 59, 999999)
    assert by_id[4][11] == Decimal("-99999999999999999999.999999999999999999")
    assert_same(hive, typed, Snapshot(1))


def test_timestamps_outside_the_nanosecond_range(hive, tmp_path):
    """Hive timestamps span years 0001..9999 (Spark's too, at microsecond precision); Hive 2.3
    reads all of these, including pre-Gregorian ones (1500-03-01).  (Not 9999-12-31
    23:59:59.999999: Hive 2.3's ``TimestampWritable.toString`` renders it as
    '10000-01-01 00:00:000.999999', which the harness cannot parse.)"""
    cols = [("id", "int"), ("ts", "timestamp"), ("st", "struct<t:timestamp>")]
    t = Table(tmp_path / "t", cols)
    values = [dt.datetime(1, 1, 2), dt.datetime(1500, 3, 1, 23, 59, 59, 999999),
              dt.datetime(1677, 9, 21), dt.datetime(2262, 4, 12), dt.datetime(9999, 12, 31, 23, 59, 59)]
    t.insert(1, {0: [(i, v, (v,)) for i, v in enumerate(values)] + [(99, dt.datetime(2000, 1, 1), None)]})
    t.delete(2, [(1, B[0], 5)])
    assert_same(hive, t, EVERYTHING, min_rows=len(values))


def test_added_column(hive, tmp_path):
    """ALTER TABLE ADD COLUMNS: write 1's files lack the column the later files have; both
    readers match file columns by name and return nulls for it in the old rows."""
    old = Table(tmp_path / "t", COLS, buckets=2)
    old.insert(1, {0: [(1, "a"), (2, "b")], 1: [(3, "c")]})
    t = Table(tmp_path / "t", COLS + [("extra", "map<string,bigint>")], buckets=2)
    t.inserted = {k: (w, row + (None,)) for k, (w, row) in old.inserted.items()}
    t.write(2, inserts={1: [(4, "d", {"x": 1})]}, deletes=[(1, B[0], 0)])
    assert_same(hive, t, EVERYTHING)
    # Under a snapshot older than the column, acidorc infers the schema from the newest file
    # that snapshot sees, i.e. without ``extra`` (Hive takes the metastore's current schema and
    # would add extra = NULL): compare on the columns of that time.
    assert_same(hive, old, Snapshot(1), min_rows=3)


# --------------------------------------------------------------------------------------------
# partitioned table, one partition directory at a time for Hive
# --------------------------------------------------------------------------------------------

def test_partitioned_table(hive, tmp_path):
    """Three partitions ``ds=.../region=...`` with their own write histories (a write id may
    touch several partitions; ROW__IDs repeat across partitions).  Hive reads each partition
    directory; acidorc reads the table root and adds the partition columns."""
    t = Table(tmp_path / "t", COLS, stripe_rows=4, buckets=2)
    parts = ["ds=2024-01-01/region=eu", "ds=2024-01-01/region=us", "ds=2024-01-02/region=eu"]
    t.insert(1, {0: [(i, f"p0-{i}") for i in range(9)], 1: [(20 + i, "p0b1") for i in range(3)]}, partition=parts[0])
    t.insert(1, {0: [(100 + i, f"p1-{i}") for i in range(5)]}, partition=parts[1])
    t.delete(2, [(1, B[0], 2), (1, B[0], 8), (1, B[1], 0)], partition=parts[0])
    t.insert(2, {1: [(200 + i, "p2") for i in range(6)]}, partition=parts[2])
    t.update(3, [((1, B[0], 0), (100, "p1-0 v3"))], partition=parts[1])
    t.delete(3, [(2, B[1], 5)], partition=parts[2])
    t.insert(4, {0: [(300, "p0 w4")]}, partition=parts[0])
    for snap in (EVERYTHING, Snapshot(4, aborted=(2,)), Snapshot(3, open=(3,))):
        acid = acid_read(t, snap, partition_columns=("ds", "region"))
        seen = 0
        for part in parts:
            from_hive = hive_read(hive, t, snap, path=str(t.root / part))
            check_rows(from_hive, model(t, snap, part), t.columns, f"Hive 2.3 vs the model, {part}, {snap}")
            ds, region = (kv.split("=")[1] for kv in part.split("/"))
            mine = by_row_id(r[:-2] for r in acid if (r[-2], r[-1]) == (dt.date.fromisoformat(ds), region))
            check_rows(mine, from_hive, t.columns, f"acidorc vs Hive 2.3, {part}, {snap}")
            seen += len(mine)
        assert seen == len(acid) > 0


# --------------------------------------------------------------------------------------------
# pre-ACID original files
# --------------------------------------------------------------------------------------------

def test_original_files_with_delete_delta(hive, tmp_path):
    """Original files at the table root (a table converted to ACID) plus deltas.

    The synthetic ROW__IDs differ by design: Hive 2.3 keys original rows ``(0, N, rowId)``
    with the plain bucket number (BucketCodec V0), Hive 3 and acidorc ``(0, V1(N), rowId)``
    (HIVE_ACID_FORMAT.md section 3.5, e.g. 536870912 for bucket 0).  A delete event therefore
    only hits an original row for the reader whose convention wrote it, so the delete delta
    here carries both keys for each deleted original row; each reader applies the one in its
    own convention.  The comparison is on data, plus the row ids once Hive's V0 bucket is
    re-encoded as V1 (same writer and row numbers, including across stripes, and with both
    readers cutting the files into per-stripe splits).
    Not covered: ``000000_0_copy_1`` files, which Hive 2.3 cannot parse (bucket -1)."""
    t = Table(tmp_path / "t", COLS, stripe_rows=3, buckets=3)
    originals = {0: [(i, f"o0-{i}") for i in range(10)], 1: [(100 + i, f"o1-{i}") for i in range(4)],
                 2: [(200, "o2")]}
    for bucket, rows in originals.items():
        t.gen.original(f"{bucket:06d}_0", rows)
        for i, row in enumerate(rows):
            t.inserted[(None, (0, B[bucket], i))] = (0, row)  # acidorc's (Hive 3) row ids

    def both(w, b, r):  # the V0 key Hive 2.3 matches and the V1 key acidorc matches
        return [(w, b, r), (w, B[b], r)]

    t.delete(1, both(0, 0, 4) + both(0, 0, 9) + both(0, 1, 0))
    t.insert(2, {1: [(300 + i, "w2") for i in range(5)]})
    # updates of an original row (by hand, to delete both keys) and of a write-2 row
    t.write(3, deletes=both(0, 0, 6), inserts={0: [(6, "o0-6 v3")]}, updates=[((2, B[1], 1), (301, "w2 v3"))])

    def v1(rid):
        w, b, r = rid
        return (w, B[b], r) if w == 0 else rid

    cases = [(EVERYTHING, {}, {}), (Snapshot(3, aborted=(1,)), {}, {}), (Snapshot(2), {}, {}),
             (Snapshot(3, open=(3,)), {}, {}), (EVERYTHING, TINY_HIVE_SPLITS, {"maxSplitBytes": "1"})]
    for snap, hive_conf, acid_options in cases:
        expected = model(t, snap)
        from_hive = hive_read(hive, t, snap, conf=hive_conf)
        from_acid = acid_read(t, snap, **acid_options)
        assert sorted(r[1:] for r in from_acid) == sorted(r[1:] for r in from_hive) \
            == sorted(r[1:] for r in expected), f"data differs under {snap}"
        assert {r[0][1] for r in from_hive if r[0][0] == 0} <= {0, 1, 2}  # V0 in Hive 2.3
        assert sorted(v1(r[0]) for r in from_hive) == [r[0] for r in from_acid] == [r[0] for r in expected]


# --------------------------------------------------------------------------------------------
# random tables
# --------------------------------------------------------------------------------------------

RANDOM_COLS = [("id", "bigint"), ("s", "string"), ("amount", "decimal(12,3)"), ("ts", "timestamp"),
               ("tags", "array<string>")]


def _random_row(rng: random.Random, next_id: int) -> tuple:
    def maybe(v):
        return None if rng.random() < 0.15 else v

    return (next_id, maybe(rng.choice(["", "a", "béta", "x" * rng.randint(1, 40)])),
            maybe(Decimal(rng.randint(-10**9, 10**9)).scaleb(-3)),
            maybe(dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=rng.randint(-9 * 10**14, 9 * 10**14))),
            maybe([rng.choice(["t1", "t2", None]) for _ in range(rng.randint(0, 3))]))


def build_random_table(root: Path, seed: int) -> tuple[Table, Snapshot]:
    """A few hundred rows over 8 write ids: inserts, deletes and updates into 3 buckets, some
    writes in two statements, some aborted or still open at the snapshot.  Writes only touch
    rows committed before them (as Hive's would); the snapshot is taken after write 8 or at a
    random historical high watermark."""
    rng = random.Random(seed)
    t = Table(root, RANDOM_COLS, stripe_rows=rng.choice([4, 9, 25]), buckets=3)
    next_id = 0
    status = {1: "committed"}
    for w in range(2, 9):
        status[w] = rng.choices(["committed", "aborted", "open"], [5, 1, 1])[0]
    if all(v == "committed" for v in status.values()):
        status[rng.randint(2, 8)] = rng.choice(["aborted", "open"])
    hwm = rng.choice([8, rng.randint(3, 7)])

    live: set = set()  # ROW__IDs of rows committed and not deleted by a committed write
    for w in range(1, 9):
        seen = set(live)  # what write w's statements see: committed rows plus their own changes
        for stmt in range(rng.choice([1, 1, 2]) if w > 1 else 1):
            rows = {}
            for b in rng.sample(range(3), rng.randint(1, 3)):
                n = rng.randint(6, 30)
                rows[b] = [_random_row(rng, next_id + i) for i in range(n)]
                next_id += n
            if w == 1:  # write 1 is a base, as if an INSERT OVERWRITE or major compaction
                created = t.base(1, rows)
            else:
                victims = rng.sample(sorted(seen), min(len(seen), rng.randint(0, 15)))
                split = rng.randint(0, len(victims))
                updates = []
                for k in victims[split:]:
                    updates.append((k, _random_row(rng, next_id)))
                    next_id += 1
                created = t.write(w, deletes=victims[:split], updates=updates,
                                  inserts=rows if rng.random() < 0.8 else None, stmt=stmt)
                seen.difference_update(victims)
            for evs in created.values():
                seen.update(e.key for e in evs)
        if status[w] == "committed":
            live = seen
    snap = Snapshot(hwm, open=tuple(w for w in range(2, hwm + 1) if status[w] == "open"),
                    aborted=tuple(w for w in range(2, hwm + 1) if status[w] == "aborted"))
    return t, snap


@pytest.mark.parametrize("seed", [3, 17, 2024, 31337, 99991])
def test_random_table(hive, tmp_path, seed):
    t, snap = build_random_table(tmp_path / "t", seed)
    assert len(t.inserted) >= 150, "the generator should write a few hundred rows"
    assert_same(hive, t, snap, min_rows=20)
    assert_same(hive, t, EVERYTHING, min_rows=20)


# --------------------------------------------------------------------------------------------
# the full Spark path
# --------------------------------------------------------------------------------------------

@pytest.mark.spark
def test_spark_reads_what_hive_reads(hive, spark, typed):
    """``spark.read.format("acidorc")`` end to end (options, schema inference and planning on
    the driver, Arrow batches from Python workers, Spark's own type conversion) on the typed
    table under a snapshot that sees write 2's update and delete but not write 3."""
    snap = Snapshot(2)
    from_hive = hive_read(hive, typed, snap)
    check_rows(from_hive, model(typed, snap), typed.columns, "Hive 2.3 vs the model of the writes")
    assert len(from_hive) == 4
    check_rows(spark_read(spark, typed, snap), from_hive, typed.columns, "acidorc through Spark vs Hive 2.3")
