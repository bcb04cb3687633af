"""Property tests: acid_source's reader against the literal reference reader (tests/reference.py)
on random histories of a Hive ACID table.

A hypothesis strategy simulates a table over time (inserts, deletes, split-updates,
multi-statement, aborted, still-open and long-running transactions, streaming batches with
``_flush_length`` files, pre-ACID original files, minor and major compactions with their own
visibility txn ids that may commit, abort or still run). The simulator keeps a model of the
committed rows at every moment; snapshots (ValidWriteIdList + ValidTxnList) are taken at
random moments. For each snapshot:

* the reference must equal the model (this checks the reference and the generator);
* acid_source must return the same multiset of (row, ROW__ID) as the reference, both with one
  split per bucket and with stripe-range splits (``maxSplitBytes=1``);
* if the reference raises ACID_NOT_ENOUGH_HISTORY, acid_source raises NotEnoughHistoryError.

A second property covers ACID v1 (Hive 1/2) layouts: base + delta dirs holding op=1 UPDATE
and op=2 DELETE events, V0 or V1 bucket values, no delete_delta, no ``_orc_acid_version``.

Set ACIDORC_PROPERTY_EXAMPLES to run more examples than the CI default.
"""

from __future__ import annotations

import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis  # noqa: E402,F401
import pytest
from hypothesis import event, given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# tests/ holds the shared test helpers (hivegen, reference, properties); make them importable however
# pytest was started, without relying on a conftest.
_TESTS_DIR = str(Path(__file__).resolve().parents[1])
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

import pyarrow as pa  # noqa: E402
from hivegen import DELETE, INSERT, UPDATE, Event, HiveTable, bucket_property, delta_name  # noqa: E402
from properties import examples  # noqa: E402
from reference import (  # noqa: E402
    LONG_MAX,
    IdList,
    NotEnoughHistory,
    choose_directories,
    merge_events,
    parse_dir_name,
    reference_read,
)
from reference import Ev as RefEv  # noqa: E402

from acid_source.errors import NotEnoughHistoryError  # noqa: E402
from acid_source.resolve import scan_for  # noqa: E402
from acid_source.scan.reader import ScanMetrics, read_split  # noqa: E402
from acid_source.scan.splits import ROW_ID_COLUMN, ROW_ID_TYPE  # noqa: E402
from acid_source.spark.options import read_spec  # noqa: E402

TABLE = "default.t"
COLUMNS = [("a", "int"), ("b", "string")]
DATA_SCHEMA = pa.schema([("a", pa.int32()), ("b", pa.string())])
SCHEMA = DATA_SCHEMA.append(pa.field(ROW_ID_COLUMN, ROW_ID_TYPE))
WRITERS = (0, 1, 2)
LABELS = ("x", "y", None)


def writer_of(bucket_prop: int) -> int:
    return (bucket_prop >> 16) & 0xFFF if (bucket_prop >> 29) else bucket_prop


def ids(values) -> str:
    return ",".join(str(v) for v in sorted(values))


def compressed_ids(values) -> str:
    """Hive 4's ValidReadTxnList form: runs of >= 5 consecutive ids written ``lo-hi``."""
    out, run = [], []
    for v in sorted(values):
        if run and v == run[-1] + 1:
            run.append(v)
            continue
        if run:
            out.append(run)
        run = [v]
    if run:
        out.append(run)
    parts = []
    for r in out:
        parts.extend([f"{r[0]}-{r[-1]}"] if len(r) >= 5 else [str(v) for v in r])
    return ",".join(parts)


# ---------------------------------------------------------------------------------------------
# the history model
# ---------------------------------------------------------------------------------------------
@dataclass
class FilePlan:
    events: list[Event] = field(default_factory=list)
    flush_at: list[int] | None = None  # streaming: event counts at each flush (side file)

    @property
    def committed_events(self) -> list[Event]:
        if self.flush_at is None:
            return self.events
        return self.events[: self.flush_at[-1]] if self.flush_at else []


@dataclass(frozen=True)
class Moment:
    """The metastore state right after a step: which txns / write ids exist and their status."""

    txn_hwm: int
    open_txns: frozenset
    aborted_txns: frozenset
    wid_hwm: int
    open_wids: frozenset
    aborted_wids: frozenset
    visible: tuple  # the model: committed (row, ROW__ID) pairs, sorted

    def write_id_list(self, trim: bool = False) -> str:
        """``trim`` drops trailing empty fields, as Java's split(":") would see them (§2.1)."""
        min_open = min(self.open_wids) if self.open_wids else LONG_MAX
        text = f"{TABLE}:{self.wid_hwm}:{min_open}:{ids(self.open_wids)}:{ids(self.aborted_wids)}"
        return text.rstrip(":") if trim else text

    def txn_list(self, compress: bool = False, trim: bool = False) -> str:
        fmt = compressed_ids if compress else ids
        min_open = min(self.open_txns) if self.open_txns else LONG_MAX
        text = f"{self.txn_hwm}:{min_open}:{fmt(self.open_txns)}:{fmt(self.aborted_txns)}"
        return text.rstrip(":") if trim else text


@dataclass
class History:
    stripe_rows: int
    version_files: bool = True
    originals: list[tuple[str, str | None, list[tuple]]] = field(default_factory=list)  # (name, subdir, rows)
    dirs: dict[str, dict[int, FilePlan]] = field(default_factory=dict)
    moments: list[Moment] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    uncommitted_compaction: bool = False
    metadata_compacted: set[str] = field(default_factory=set)  # bases with _metadata_acid

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        lines = [f"History(stripe_rows={self.stripe_rows})"] + [f"  {line}" for line in self.log]
        for name, files in self.dirs.items():
            for writer, plan in files.items():
                evs = " ".join(f"{e.operation}/{e.original_write_id},{e.bucket},{e.row_id}/{e.current_write_id}"
                               for e in plan.events)
                flush = f" flush_at={plan.flush_at}" if plan.flush_at is not None else ""
                lines.append(f"  {name}/bucket_{writer:05d}{flush}: {evs}")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


@dataclass
class Pending:
    txn: int
    wid: int
    start_keys: frozenset
    final_view: dict


class Simulator:
    """Plays a random history of one unpartitioned table without touching the disk."""

    def __init__(self, draw, stripe_rows: int, first_txn: int):
        self.draw = draw
        self.h = History(stripe_rows)
        self.next_txn = first_txn
        self.next_wid = 1
        self.txn_status: dict[int, str] = {}
        self.wid_txn: dict[int, int] = {}
        self.committed: dict[tuple, tuple] = {}
        self.pending: list[Pending] = []
        self.values = iter(range(1, 10**9))

    # --- bookkeeping ---------------------------------------------------------------------
    def txn(self, status: str = "open") -> int:
        t = self.next_txn
        self.next_txn += 1
        self.txn_status[t] = status
        return t

    def write_id(self, t: int) -> int:
        w = self.next_wid
        self.next_wid += 1
        self.wid_txn[w] = t
        return w

    def wid_status(self, w: int) -> str:
        return self.txn_status[self.wid_txn[w]]

    def moment(self) -> None:
        status = self.txn_status
        self.h.moments.append(Moment(
            txn_hwm=self.next_txn - 1,
            open_txns=frozenset(t for t, s in status.items() if s == "open"),
            aborted_txns=frozenset(t for t, s in status.items() if s == "aborted"),
            wid_hwm=self.next_wid - 1,
            open_wids=frozenset(w for w in self.wid_txn if self.wid_status(w) == "open"),
            aborted_wids=frozenset(w for w in self.wid_txn if self.wid_status(w) == "aborted"),
            visible=tuple(sorted(((row, key) for key, row in self.committed.items()), key=repr)),
        ))

    def add_events(self, dir_name: str, writer: int, events: list[Event]) -> None:
        self.h.dirs.setdefault(dir_name, {}).setdefault(writer, FilePlan()).events.extend(events)

    def new_row(self, label=None) -> tuple:
        return (next(self.values), label if label is not None else self.draw(st.sampled_from(LABELS)))

    # --- steps -----------------------------------------------------------------------------
    def originals(self) -> None:
        names = self.draw(st.lists(st.sampled_from(
            ["000000_0", "000001_0", "000000_0_copy_1", "000000_0_copy_2", "000000_0_copy_10",
             "HIVE_UNION_SUBDIR_1/000001_0"]), min_size=1, max_size=3, unique=True))
        for full in names:
            subdir, _, name = full.rpartition("/")
            rows = [self.new_row() for _ in range(self.draw(st.integers(1, 4)))]
            self.h.originals.append((name, subdir or None, rows))
        self.committed.update(self._original_keys())
        self.h.log.append(f"originals {sorted(names)}")

    def write_txn(self) -> None:
        draw = self.draw
        outcome = draw(st.sampled_from(["commit"] * 6 + ["abort", "open", "long", "long"]))
        t = self.txn()
        w = self.write_id(t)
        view = dict(self.committed)
        stmts = draw(st.sampled_from([1, 1, 2]))
        what = []
        for s in range(stmts):
            counters: dict[int, int] = defaultdict(int)
            inserts: dict[int, list[Event]] = defaultdict(list)
            deletes: dict[int, list[Event]] = defaultdict(list)
            keys = sorted(view)
            targets = draw(st.lists(st.sampled_from(keys), unique=True, max_size=4)) if keys else []
            n_updates = draw(st.integers(0, len(targets)))
            for i, k in enumerate(targets):
                old = view.pop(k)
                deletes[writer_of(k[1])].append(Event(DELETE, k[0], k[1], k[2], w, None))
                if i < n_updates:  # split update: delete + insert of the new version
                    n = draw(st.sampled_from(WRITERS))
                    key = (w, bucket_property(n, s), counters[n])
                    counters[n] += 1
                    new = (old[0], f"u{w}.{s}")
                    inserts[n].append(Event(INSERT, *key, w, new))
                    view[key] = new
            for n in draw(st.lists(st.sampled_from(WRITERS), unique=True, max_size=3)):
                for _ in range(draw(st.integers(0, 6))):
                    key = (w, bucket_property(n, s), counters[n])
                    counters[n] += 1
                    row = self.new_row()
                    inserts[n].append(Event(INSERT, *key, w, row))
                    view[key] = row
                inserts.setdefault(n, [])  # may stay empty: an empty bucket file
            for n, evs in inserts.items():
                self.add_events(delta_name(w, w, s), n, evs)
            for n, evs in deletes.items():
                self.add_events(delta_name(w, w, s, delete=True), n, evs)
            what.append(f"stmt{s}: +{sum(map(len, inserts.values()))} -{len(targets)} (upd {n_updates})")
        if outcome == "commit":
            self.txn_status[t] = "committed"
            self.committed = view
        elif outcome == "abort":
            self.txn_status[t] = "aborted"
        elif outcome == "long":
            self.pending.append(Pending(t, w, frozenset(self.committed), view))
        self.h.log.append(f"txn {t} write {w} {outcome}: {'; '.join(what)}")

    def insert_overwrite(self) -> None:
        """INSERT OVERWRITE: a plain ``base_W`` (no ``_v``) replacing every row. Only committed
        or aborted (an open IOW base at the min open write id would be valid by §1.2 step 5's
        ``<=``; acid_source deliberately refuses it), and never while a long-running txn is
        pending: Hive's IOW takes an exclusive lock, and a lower write id committing after
        base_W would be hidden under it."""
        if self.pending:
            return self.write_txn()
        outcome = self.draw(st.sampled_from(["committed", "committed", "aborted"]))
        t = self.txn(outcome)
        w = self.write_id(t)
        name = f"base_{w:07d}"
        self.h.dirs[name] = {}
        new = {}
        for n in self.draw(st.lists(st.sampled_from(WRITERS), unique=True, min_size=1, max_size=2)):
            evs = []
            for r in range(self.draw(st.integers(0, 5))):
                row = self.new_row()
                evs.append(Event(INSERT, w, bucket_property(n, 0), r, w, row))
                new[evs[-1].key] = row
            self.add_events(name, n, evs)  # possibly an empty file: the overwrite still counts
        if outcome == "committed":
            self.committed = new
        self.h.log.append(f"txn {t} write {w} insert overwrite {name} ({len(new)} rows) {outcome}")

    def resolve_long(self) -> None:
        if not self.pending:
            return self.write_txn()
        p = self.pending.pop(self.draw(st.integers(0, len(self.pending) - 1)))
        wants = self.draw(st.sampled_from(["commit", "commit", "abort"]))
        deleted = p.start_keys - set(p.final_view)
        if wants == "commit" and deleted - set(self.committed):
            wants = "abort (conflict)"  # a txn committed meanwhile changed a row it deleted
        if wants == "commit":
            self.txn_status[p.txn] = "committed"
            for k in deleted:
                del self.committed[k]
            for k, row in p.final_view.items():
                if k not in p.start_keys:
                    self.committed[k] = row
        else:
            self.txn_status[p.txn] = "aborted"
        self.h.log.append(f"txn {p.txn} write {p.wid} (long-running) -> {wants}")

    def other_tables(self) -> None:
        statuses = [self.draw(st.sampled_from(["committed", "committed", "aborted", "open"]))
                    for _ in range(self.draw(st.integers(1, 6)))]
        first = self.next_txn
        for s in statuses:
            self.txn(s)
        self.h.log.append(f"txns {first}..{self.next_txn - 1} on other tables: {statuses}")

    def streaming(self) -> None:
        draw = self.draw
        n = draw(st.integers(2, 3))
        txns = [self.txn() for _ in range(n)]
        wids = [self.write_id(t) for t in txns]
        name = delta_name(wids[0], wids[-1], stmt=None)
        writers = draw(st.lists(st.sampled_from(WRITERS), unique=True, min_size=1, max_size=2))
        files = {k: FilePlan(flush_at=[]) for k in writers}
        self.h.dirs.setdefault(name, {})
        in_progress = draw(st.booleans())
        stop = draw(st.integers(0, n - 1)) if in_progress else n
        outcomes = []
        for i, (t, w) in enumerate(zip(txns, wids)):
            if i > stop:
                break  # the rest of the batch stays open and never writes
            new = {}
            for k in writers:
                for r in range(draw(st.integers(0, 3))):
                    key = (w, bucket_property(k, 0), r)
                    row = self.new_row()
                    files[k].events.append(Event(INSERT, *key, w, row))
                    new[key] = row
            if i == stop:
                outcomes.append("writing")
                break  # written, not flushed, still open
            outcome = draw(st.sampled_from(["committed", "committed", "committed", "aborted"]))
            self.txn_status[t] = outcome
            outcomes.append(outcome)
            if outcome == "committed":
                self.committed.update(new)
            for plan in files.values():
                if plan.events and (not plan.flush_at or plan.flush_at[-1] != len(plan.events)):
                    plan.flush_at.append(len(plan.events))
            if i < n - 1:
                self.moment()
        for k, plan in files.items():
            if not in_progress:
                plan.flush_at = None  # closed cleanly: the side file is deleted
            if plan.events:
                self.h.dirs[name][k] = plan
        self.h.log.append(f"streaming {name} txns {txns} {outcomes}"
                          + (" (in progress)" if in_progress else ""))

    def _compactor_view(self):
        open_wids = [w for w in self.wid_txn if self.wid_status(w) == "open"]
        hwm = (min(open_wids) if open_wids else self.next_wid) - 1
        write_ids = IdList(hwm=hwm, aborted=frozenset(
            w for w in self.wid_txn if w <= hwm and self.wid_status(w) == "aborted"))
        m = self.h.moments[-1]
        txns = IdList(m.txn_hwm, min(m.open_txns) if m.open_txns else LONG_MAX, m.open_txns, m.aborted_txns)
        sel = choose_directories(list(self.h.dirs), write_ids, txns, self.h.metadata_compacted.__contains__)
        deltas = []
        for d in sel.deltas:  # never cross an open write id (§2.4)
            if d.max > hwm:
                break
            deltas.append(d)
        return write_ids, sel, deltas

    def _finish_compaction(self, what: str, dir_names: list[str]) -> None:
        outcome = self.draw(st.sampled_from(["committed"] * 5 + ["aborted", "open"]))
        t = int(dir_names[0].rsplit("_v", 1)[1])
        self.txn_status[t] = outcome
        if outcome != "committed":
            self.h.uncommitted_compaction = True
        self.h.log.append(f"{what} -> {dir_names} txn {t} {outcome}")

    def minor_compaction(self) -> None:
        write_ids, sel, deltas = self._compactor_view()
        if not deltas:
            return self.write_txn()
        lo, hi = min(d.min for d in deltas), max(d.max for d in deltas)
        # Hive needs more than one delta to run a minor compaction, and its output must not
        # have the exact range of a delta without statement id (a streaming delta or an
        # earlier compaction): findBestWorkingDeltas would keep both as "twins" (§1.4).
        same_range = [n for n in self.h.dirs if (p := parse_dir_name(n)) and p.kind != "base"
                      and (p.min, p.max, p.stmt) == (lo, hi, -1)]
        if len(deltas) < 2 or same_range:
            return self.write_txn()
        t = self.txn()
        names = [delta_name(lo, hi, stmt=None, visibility=t), delta_name(lo, hi, stmt=None, visibility=t, delete=True)]
        for name in names:
            self.h.dirs.setdefault(name, {})
        for d in deltas:
            target = names[1] if d.kind == "delete_delta" else names[0]
            for writer, plan in self.h.dirs[d.name].items():
                kept = [e for e in plan.committed_events if write_ids.is_valid(e.current_write_id)]
                self.add_events(target, writer, kept)
        self._finish_compaction(f"minor compaction of {[d.name for d in deltas]}", names)

    def major_compaction(self) -> None:
        write_ids, sel, deltas = self._compactor_view()
        if not deltas:
            return self.write_txn()
        hi = max(d.max for d in deltas)
        events: list[RefEv] = []
        sources = ([sel.base.name] if sel.base else []) + [d.name for d in deltas]
        for name in sources:
            for plan in self.h.dirs[name].values():
                events.extend(RefEv(*e.as_tuple()) for e in plan.committed_events)
        if sel.use_originals:
            for key, row in self._original_keys().items():
                events.append(RefEv(INSERT, *key, 0, row))
        what = f"major compaction of {sources}{' + originals' if sel.use_originals else ''}"
        if self.draw(st.integers(0, 3)) == 0 and f"base_{hi:07d}" not in self.h.dirs:
            # Hive 3.0 style: no _vN suffix (visible at once, no txn) but _metadata_acid
            # saying dataFormat=compacted (§3.3)
            name = f"base_{hi:07d}"
            self.h.metadata_compacted.add(name)
            self.h.log.append(f"{what} -> {name} with _metadata_acid")
        else:
            t = self.txn()
            name = f"base_{hi:07d}_v{t:07d}"
            self._finish_compaction(what, [name])
        self.h.dirs[name] = {}
        for e in merge_events(events, write_ids):
            self.add_events(name, writer_of(e.bucket), [Event(e.operation, *e.key, e.current_write_id, e.row)])

    def _original_keys(self) -> dict:
        """§3.5: synthetic ROW__IDs in full-path order, row offsets counted per bucket id."""
        offset: dict[int, int] = defaultdict(int)
        out = {}
        for name, subdir, rows in sorted(self.h.originals, key=lambda o: f"{o[1]}/{o[0]}" if o[1] else o[0]):
            bucket = int(name.split("_")[0])
            for i, row in enumerate(rows):
                out[(0, bucket_property(bucket, 0), offset[bucket] + i)] = row
            offset[bucket] += len(rows)
        return out


STEPS = ["write"] * 5 + ["long", "other", "streaming", "overwrite"] + ["minor"] * 4 + ["major"] * 2


@st.composite
def histories(draw) -> History:
    sim = Simulator(draw, stripe_rows=draw(st.sampled_from([2, 3])), first_txn=draw(st.integers(1, 30)))
    if draw(st.integers(0, 3)) == 0:
        sim.originals()
    sim.moment()
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(STEPS))
        {"write": sim.write_txn, "long": sim.resolve_long, "other": sim.other_tables,
         "streaming": sim.streaming, "overwrite": sim.insert_overwrite, "minor": sim.minor_compaction,
         "major": sim.major_compaction}[kind]()
        sim.moment()
    return sim.h


@dataclass(frozen=True)
class Snapshot:
    mode: str  # "consistent" | "no txn list" | "none"
    write_ids: str | None
    txns: str | None
    model: tuple | None  # expected rows when the model applies

    def __repr__(self):
        return f"Snapshot({self.mode}, validWriteIds={self.write_ids!r}, validTxns={self.txns!r})"

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


@st.composite
def snapshots(draw, history: History, moments: list[Moment] | None = None) -> Snapshot:
    moments = moments or history.moments
    modes = ["consistent", "consistent"]
    if not history.uncommitted_compaction:
        # With no ValidTxnList every _vN dir counts as committed; an aborted or running
        # compaction's output would then be read as if it had committed (not a reader bug).
        modes += ["no txn list", "no txn list", "none"]
    mode = draw(st.sampled_from(modes))
    if mode == "none":
        return Snapshot(mode, None, None, None)
    i = draw(st.integers(0, len(moments) - 1))
    if mode == "no txn list" and draw(st.booleans()):
        i //= 2  # older snapshots meet compactions they predate: ACID_NOT_ENOUGH_HISTORY
    m = moments[i]
    trim = draw(st.booleans())
    txns = m.txn_list(compress=draw(st.booleans()), trim=trim) if mode == "consistent" else None
    model = m.visible
    compacted_ids = {p.max for n in history.dirs if (p := parse_dir_name(n)) and p.kind == "base"
                     and (p.visibility or n in history.metadata_compacted)}
    if min(m.open_wids, default=None) in compacted_ids:
        # §1.2 step 5 accepts a compacted base whose write id *equals* the min open write id
        # ("code uses <="). A base without _vN, or a _vN base read without a ValidTxnList, is
        # then visible to this older snapshot and already has that (then open) write id's
        # deletes applied: both readers agree, but the model of the moment does not apply.
        model = None
    return Snapshot(mode, m.write_id_list(trim), txns, model)


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------
def materialize(history: History, root: Path) -> Path:
    table = HiveTable(root, COLUMNS, stripe_rows=history.stripe_rows, acid_version_file=history.version_files)
    for name, subdir, rows in history.originals:
        table.original(name, rows, subdir=subdir)
    for name, files in history.dirs.items():
        d = table.dir(name)
        if name in history.metadata_compacted:
            (d / "_metadata_acid").write_text('{"thisFileVersion":"0","dataFormat":"compacted"}')
        for writer, plan in files.items():
            table.write_events(d / f"bucket_{writer:05d}", plan.events, flush_at=plan.flush_at)
    return root


def acid_read(root: Path, write_ids: str | None, txns: str | None, max_split_bytes: str | None = None,
              row_id: bool = True):
    """acid_source's rows as ``(data tuple, ROW__ID tuple)`` (ROW__ID None when not asked for),
    with the scan metrics and the splits."""
    opts = {"path": str(root), "includeRowId": str(row_id).lower(), "tableType": "full"}
    if write_ids is not None:
        opts["validWriteIds"] = write_ids
    if txns is not None:
        opts["validTxns"] = txns
    if max_split_bytes is not None:
        opts["maxSplitBytes"] = max_split_bytes
    scan = scan_for(read_spec(opts))
    ctx, splits = scan.plan(SCHEMA if row_id else DATA_SCHEMA)
    metrics = ScanMetrics()
    rows = []
    for split in splits:
        for batch in read_split(split, ctx, metrics):
            for r in batch.to_pylist():
                rid = r.get(ROW_ID_COLUMN)
                rows.append(((r["a"], r["b"]), (rid["writeId"], rid["bucketId"], rid["rowId"]) if rid else None))
    return rows, metrics, splits


def canon(rows) -> list:
    return sorted(rows, key=repr)


def check_snapshot(root: Path, snap: Snapshot, sliced: bool = True) -> None:
    try:
        expected = reference_read(root, snap.write_ids, snap.txns)
    except NotEnoughHistory:
        event("snapshot: ACID_NOT_ENOUGH_HISTORY")
        with pytest.raises(NotEnoughHistoryError):
            acid_read(root, snap.write_ids, snap.txns)
        return
    event(f"snapshot: {snap.mode}")
    if snap.model is not None:
        assert canon(expected) == canon(snap.model), f"reference disagrees with the history model for {snap}"
    got, _, _ = acid_read(root, snap.write_ids, snap.txns)
    assert canon(got) == canon(expected), f"acid_source disagrees with the reference for {snap}"
    if sliced:
        got, _, splits = acid_read(root, snap.write_ids, snap.txns, max_split_bytes="1")
        if any(s.sliced for s in splits):
            event("stripe-range splits used")
        assert canon(got) == canon(expected), f"acid_source with maxSplitBytes=1 disagrees for {snap}"
    # without ROW__ID the reader may take shortcuts (no keys unless deletes need them)
    got, _, _ = acid_read(root, snap.write_ids, snap.txns, row_id=False)
    assert canon(r for r, _ in got) == canon(r for r, _ in expected), \
        f"acid_source without ROW__ID disagrees for {snap}"


@st.composite
def histories_and_snapshots(draw):
    history = draw(histories())
    return history, draw(st.lists(snapshots(history), min_size=1, max_size=3))


@examples(120)
@given(case=histories_and_snapshots())
def test_reader_matches_reference_on_random_histories(case):
    history, snaps = case
    text = "\n".join(history.log)
    for marker in ["originals [", "minor compaction", "major compaction", "with _metadata_acid",
                   "insert overwrite", "long-running", "streaming", "(in progress)", "stmt1"]:
        if marker in text:
            event(f"history: {marker}")
    if history.uncommitted_compaction:
        event("history: aborted or running compaction")
    with tempfile.TemporaryDirectory() as tmp:
        root = materialize(history, Path(tmp) / "t")
        for snap in snaps:
            note(repr(snap))
            check_snapshot(root, snap)


# ---------------------------------------------------------------------------------------------
# ACID v1 (Hive 1/2): op=1 UPDATE and op=2 DELETE events inside delta_ dirs
# ---------------------------------------------------------------------------------------------
@st.composite
def v1_tables(draw):
    """Write ids 1..M; write ids <= N were major-compacted (Hive 2 style) into ``base_N``; every
    later write id has its own delta holding inserts, updates and deletes; an optional Hive 2
    minor compaction ``delta_a_b`` (no ``_v``) sits next to the deltas it covers."""
    v0 = draw(st.booleans())
    enc = (lambda n: n) if v0 else (lambda n: bucket_property(n, 0))
    h = History(stripe_rows=draw(st.sampled_from([2, 3])), version_files=False)
    M = draw(st.integers(2, 7))
    N = draw(st.integers(0, M - 1))
    status, resolve_at, events_of = {}, {}, {}
    state: dict[tuple, tuple] = {}  # rows of the committed write ids so far (in write id order)
    values = iter(range(1, 10**9))
    for w in range(1, M + 1):
        if w <= N:  # compacted into the base: resolved (and N itself committed) by then
            status[w] = "committed" if w == N else draw(st.sampled_from(["committed", "committed", "aborted"]))
            resolve_at[w] = w
        else:
            status[w] = draw(st.sampled_from(["committed"] * 4 + ["aborted", "open"]))
            resolve_at[w] = w + draw(st.integers(0, 2)) if status[w] != "open" else LONG_MAX
        evs, view = [], dict(state)
        keys = sorted(state)
        targets = draw(st.lists(st.sampled_from(keys), unique=True, max_size=3)) if keys else []
        n_updates = draw(st.integers(0, len(targets)))
        for i, k in enumerate(targets):
            if i < n_updates:
                new = (state[k][0], f"u{w}")
                evs.append(Event(UPDATE, *k, w, new))
                view[k] = new
            else:
                evs.append(Event(DELETE, *k, w, None))
                del view[k]
        for n in draw(st.lists(st.sampled_from(WRITERS), unique=True, max_size=2)):
            for r in range(draw(st.integers(0, 4))):
                row = (next(values), draw(st.sampled_from(LABELS)))
                evs.append(Event(INSERT, w, enc(n), r, w, row))
                view[(w, enc(n), r)] = row
        events_of[w] = evs
        if status[w] == "committed":
            state = view
    stmt = draw(st.sampled_from([None, 0]))  # Hive 1.x names vs Hive 2 names with a stmt id

    def add(name, evs):
        h.dirs.setdefault(name, {})
        for e in evs:
            h.dirs[name].setdefault(writer_of(e.bucket), FilePlan()).events.append(e)

    def fold(valid) -> dict:
        rows: dict = {}
        for w in sorted(events_of):
            if not valid(w):
                continue
            for e in events_of[w]:
                if e.operation == DELETE:
                    rows.pop(e.key, None)
                else:
                    rows[e.key] = e.row
        return rows

    if N:
        # Hive 2's major compaction keeps the winning event per ROW__ID (an UPDATE stays op=1)
        winners: dict[tuple, Event] = {}
        for w in range(1, N + 1):
            if status[w] != "committed":
                continue
            for e in events_of[w]:
                winners[e.key] = e
        add(f"base_{N:07d}", [e for e in winners.values() if e.operation != DELETE])
        h.log.append(f"base_{N:07d} ({'V0' if v0 else 'V1'} buckets)")
    for w in range(1, M + 1):
        if w > N or draw(st.integers(0, 3)) == 0:  # some deltas below the base were not cleaned yet
            add(delta_name(w, w, stmt), events_of[w])
        h.log.append(f"write {w}: {status[w]} (resolved at {resolve_at[w]}), {len(events_of[w])} events")
    resolved = [w for w in range(N + 1, M + 1) if status[w] != "open"]
    if len(resolved) >= 2 and draw(st.booleans()):
        a = draw(st.sampled_from(resolved))
        b = draw(st.sampled_from([w for w in resolved if w > a] or [a]))
        if b > a and all(status[w] != "open" for w in range(a, b + 1)):
            add(delta_name(a, b, None), [e for w in range(a, b + 1) if status[w] == "committed" for e in events_of[w]])
            h.log.append(f"Hive 2 minor compaction delta_{a:07d}_{b:07d}")
    for k in range(max(N, 1), M + 1):
        at = {w: (status[w] if resolve_at[w] <= k else "open") for w in range(1, k + 1)}
        open_w = frozenset(w for w, s in at.items() if s == "open")
        aborted_w = frozenset(w for w, s in at.items() if s == "aborted")
        visible = fold(lambda w, at=at: at.get(w) == "committed")
        h.moments.append(Moment(0, frozenset(), frozenset(), k, open_w, aborted_w,
                                tuple(sorted(((row, key) for key, row in visible.items()), key=repr))))
    return h


@st.composite
def v1_tables_and_snapshots(draw):
    h = draw(v1_tables())
    snaps = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 4)) == 0:
            snaps.append(Snapshot("none", None, None, None))
        else:
            m = draw(st.sampled_from(h.moments))
            snaps.append(Snapshot("consistent", m.write_id_list(draw(st.booleans())), None, m.visible))
    return h, snaps


@examples(90)
@given(case=v1_tables_and_snapshots())
def test_acid_v1_reader_matches_reference(case):
    history, snaps = case
    with tempfile.TemporaryDirectory() as tmp:
        root = materialize(history, Path(tmp) / "t")
        for snap in snaps:
            note(repr(snap))
            check_snapshot(root, snap)


# ---------------------------------------------------------------------------------------------
# deterministic examples
# ---------------------------------------------------------------------------------------------
def test_delete_stripes_are_skipped_for_stripe_range_splits(tmp_path):
    """A 12-stripe base and a delete delta whose 6 stripes each hit a different part of it:
    a split covering one base stripe needs at most two delete stripes."""
    table = HiveTable(tmp_path / "t", COLUMNS, stripe_rows=4)
    prop = bucket_property(0)
    base_events = [Event(INSERT, 1, prop, i, 1, (i, f"r{i}")) for i in range(48)]
    table.base(1, {0: base_events}, visibility=5)
    table.delete(2, [(1, prop, i) for i in range(0, 48, 4)], stmt=0)  # 12 events -> 3 stripes of 4
    table.insert(3, {0: [(100, "new")]})
    write_ids, txns = f"{TABLE}:3:{LONG_MAX}::", f"10:{LONG_MAX}::"
    expected = reference_read(table.root, write_ids, txns)
    assert len(expected) == 48 - 12 + 1
    got, metrics, splits = acid_read(table.root, write_ids, txns, max_split_bytes="1")
    assert sum(s.sliced for s in splits) >= 12
    assert canon(got) == canon(expected)
    assert metrics.delete_stripes_skipped > 0
    assert metrics.delete_stripes_read < metrics.delete_stripes_read + metrics.delete_stripes_skipped


def test_flush_length_hides_unflushed_tail(tmp_path):
    """A streaming delta whose side file commits only the first flush: with every write id
    valid (no snapshot), rows past the committed length must stay invisible."""
    table = HiveTable(tmp_path / "t", COLUMNS)
    prop = bucket_property(0)
    events = [Event(INSERT, 1, prop, 0, 1, (1, "a")), Event(INSERT, 1, prop, 1, 1, (2, "b")),
              Event(INSERT, 2, prop, 0, 2, (3, "c"))]
    d = table.dir(delta_name(1, 2, stmt=None))
    table.write_events(d / "bucket_00000", events, flush_at=[2])
    expected = reference_read(table.root, None, None)
    assert canon(expected) == canon([((1, "a"), (1, prop, 0)), ((2, "b"), (1, prop, 1))])
    got, _, _ = acid_read(table.root, None, None)
    assert canon(got) == canon(expected)


def test_not_enough_history_agrees(tmp_path):
    """A snapshot older than the only (compacted) base: Hive's ACID_NOT_ENOUGH_HISTORY."""
    table = HiveTable(tmp_path / "t", COLUMNS)
    ev = table.insert(1, {0: [(1, "a")]})
    table.insert(2, {0: [(2, "b")]})
    table.base(2, {0: ev[0]}, visibility=7)
    with pytest.raises(NotEnoughHistory):
        reference_read(table.root, f"{TABLE}:1:{LONG_MAX}::", None)
    with pytest.raises(NotEnoughHistoryError):
        acid_read(table.root, f"{TABLE}:1:{LONG_MAX}::", None)


@pytest.mark.parametrize("layout", ["_metadata_acid", "_vN without validTxns"])
def test_compacted_base_at_the_min_open_write_id_hides_that_write_ids_rows(tmp_path, layout):
    """§1.2 step 5 accepts a compacted base whose write id *equals* the snapshot's min open
    write id (``writeId <= minOpenWriteId``). Its events of that still-open write id must stay
    hidden (§5.1 step 2, §5.2): the snapshot says write id 3 is not committed.

    Found by the history property (a Hive 3.0 style base_N + _metadata_acid written after a
    streaming batch committed, read with a snapshot taken while its last txn was open)."""
    table = HiveTable(tmp_path / "t", COLUMNS)
    prop = bucket_property(0)
    events = [Event(INSERT, 2, prop, 0, 2, (1, "committed")), Event(INSERT, 3, prop, 0, 3, (2, "open"))]
    if layout == "_metadata_acid":
        d = table.base(3, {0: events})
        (d / "_metadata_acid").write_text('{"thisFileVersion":"0","dataFormat":"compacted"}')
    else:
        table.base(3, {0: events}, visibility=10)
    write_ids = f"{TABLE}:3:3:3:"  # hwm 3, write id 3 still open
    expected = reference_read(table.root, write_ids, None)
    assert expected == [((1, "committed"), (2, prop, 0))]
    got, _, _ = acid_read(table.root, write_ids, None)
    assert canon(got) == canon(expected)
