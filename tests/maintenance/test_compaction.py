"""Minor and major compaction without Spark (``AcidTable.compact`` / ``optimize()`` and
``compact_table``), on real ORC files and a real SQLite store.

Random histories of appends, deletes, updates, aborted and open writes over partitions and
buckets: every version that is still readable reads the same rows, with the same ROW__IDs,
before and after a minor and after a major compaction; the latest rows also match a model kept
here in plain Python. Output names are checked against names derived here from the history
(Hive's: ``delta_MIN_MAX_vT``, ``delete_delta_MIN_MAX_vT``, ``base_N_vT``), files against Hive's
format rules (key index, order, writer ids, version file). Also: pre-ACID originals get their
synthetic ROW__IDs for good, readers that planned before the commit keep their rows, concurrent
commits (a DML in another process, an overwrite), failures that leave nothing, insert-only
tables, and the errors of bad arguments.
"""

from __future__ import annotations

import os
import pickle
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from core_read import read_with_row_ids as read  # every row with its ROW__ID, sorted
from core_write import unfinished_write
from hivegen import Event, HiveTable, bucket_property

from acid_source import create_table
from acid_source.errors import (
    ConflictError,
    CorruptFileError,
    InvalidArgumentError,
    TableNotRegisteredError,
)
from acid_source.layout import bucket_codec
from acid_source.layout.writeids import ValidWriteIdList
from acid_source.maintenance import compaction_plan
from acid_source.maintenance.compaction_plan import compactor_write_ids
from acid_source.maintenance.compaction_tasks import run_tasks as run_in_process
from acid_source.maintenance.compactor import compact_table
from acid_source.metastore import Metastore
from acid_source.orc.files import OrcFile, parse_key_index
from acid_source.storage import Storage
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
FLAT = pa.schema([("id", pa.int64()), ("v", pa.string())])
V = "_v"  # visibility suffix


@pytest.fixture(autouse=True)
def private_store(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/store.db"
    monkeypatch.setenv("ACIDORC_METASTORE_URL", url)
    return url


# --- reading ---------------------------------------------------------------------------------
def versions(location: str) -> list[int]:
    return sorted(h["version"] for h in AcidTable.load(location).history() if h["version"] is not None)


def everything(location: str, extra: tuple = ()) -> dict:
    """The table at every committed version, and now."""
    return {v: read(location, v) for v in [*extra, *versions(location)]} | {None: read(location)}


def dirs(path) -> list[str]:
    return sorted(d.name for d in Path(path).iterdir() if d.is_dir())


def files(directory) -> list[str]:
    return sorted(f.name for f in Path(directory).iterdir())


def check_acid_file(path: Path, bucket: int, *, unique: bool, inserts_only: bool) -> list[tuple]:
    """A compacted bucket file as Hive requires it; returns its events."""
    f = OrcFile(Storage(str(path.parent)), str(path))
    assert f.is_acid and f.user_metadata["hive.acid.version"] == "2"
    batches = [f.read_stripe(i) for i in range(f.num_stripes)]
    keys = parse_key_index(f.user_metadata["hive.acid.key.index"])
    assert len(keys) == f.num_stripes
    events = []
    for batch, last in zip(batches, keys):
        cols = {c: batch.column(c).to_pylist() for c in ("operation", "originalTransaction", "bucket", "rowId",
                                                          "currentTransaction")}
        stripe = list(zip(cols["operation"], cols["originalTransaction"], cols["bucket"], cols["rowId"],
                          cols["currentTransaction"]))
        assert (stripe[-1][1], stripe[-1][2], stripe[-1][3]) == last  # the key index names each stripe's last key
        events += stripe
    ins = sum(e[0] == 0 for e in events)
    dels = sum(e[0] == 2 for e in events)
    assert f.user_metadata["hive.acid.stats"] == f"{ins},{len(events) - ins - dels},{dels}"
    key = [(o, b, r) for _, o, b, r, _ in events]
    assert key == sorted(key) and (not unique or len(set(key)) == len(key))
    assert all(bucket_codec.decode_writer_id(b) == bucket for _, _, b, _, _ in events)
    if inserts_only:
        assert all(op == 0 and c == o for op, o, _, _, c in events)  # ROW__IDs kept, as inserts
    return events


# --- writing histories ----------------------------------------------------------------------
def batch(ids, v, parts=None, schema=SCHEMA) -> pa.Table:
    data = {"id": pa.array(ids, pa.int64()), "v": [v] * len(ids)}
    if "p" in schema.names:
        data["p"] = parts
    return pa.table(data)


class History:
    """A table written by a random history, and a model of its rows (id -> (v, p))."""

    def __init__(self, location: str, rng: random.Random, parts=("a", "b")):
        self.location, self.rng, self.parts = location, rng, parts
        self.t = AcidTable.load(location)
        self.model: dict[int, tuple] = {}
        self.next_id = 0
        self.open = None  # (job, txn, result, rows) of the one write left open
        self.aborted: list[int] = []

    def _new(self, n: int):
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        parts = [self.rng.choice(self.parts) for _ in ids] if self.parts else None
        return ids, parts

    def step(self, op: str) -> None:
        if op == "append":
            ids, parts = self._new(self.rng.randint(1, 30))
            self.t.append(batch(ids, f"a{ids[0]}", parts, self.t.schema))
            self.model.update({i: (f"a{ids[0]}", p) for i, p in zip(ids, parts or [None] * len(ids))})
        elif op in ("delete", "update"):
            k, r = self.rng.randint(2, 5), self.rng.randint(0, 4)
            cond = f"id % {k} = {r}"
            hit = [i for i in self.model if i % k == r]
            if op == "delete":
                self.t.delete(cond)
                for i in hit:
                    del self.model[i]
            else:
                self.t.update(cond, {"v": f"'u{self.next_id}'"})
                for i in hit:
                    self.model[i] = (f"u{self.next_id}", self.model[i][1])
                self.next_id += 1
        elif op == "aborted":  # a writer that died: the store aborted it, its files stayed
            ids, parts = self._new(5)
            staged, _ = unfinished_write(self.location, batch(ids, "aborted", parts, self.t.schema))
            staged.transaction.metastore.abort(staged.txnId, "died")
            self.aborted.append(staged.txnId)
        elif op == "open" and self.open is None:
            ids, parts = self._new(4)
            staged, result = unfinished_write(self.location, batch(ids, "open", parts, self.t.schema))
            self.open = (staged, result, {i: ("open", p) for i, p in zip(ids, parts or [None] * len(ids))})

    def commit_open(self) -> None:
        staged, result, rows = self.open
        staged.commit([result])
        self.model.update(rows)
        self.open = None

    def latest(self) -> list[tuple]:
        return sorted((i, v, p) for i, (v, p) in self.model.items())


def data_rows(rows: list[tuple], partitioned: bool = True) -> list[tuple]:
    return sorted(r[:3] if partitioned else r[:2] + (None,) for r in rows)


def expected_names(location: str, kind: str, txn_id: int, store: Metastore, parts: list[str]) -> set[str]:
    """The output directories of a compaction of every partition in ``parts``, derived from
    the store's records: committed write ids below the lowest open one, per partition."""
    info = store.find_table(location)
    snapshot = store.valid_write_ids(info.table_id)
    bound = (snapshot.min_open_id - 1) if snapshot.min_open_id is not None else snapshot.high_watermark
    names = set()
    for part in parts:
        touched = [h for h in store.history(info.table_id) if part in h["touched"] and h["write_id"] is not None
                   and h["write_id"] <= bound]
        prefix = f"{part}/" if part else ""
        if kind == "major":
            names.add(f"{prefix}base_{bound:07d}_v{txn_id:07d}")
            continue
        lo, hi = min(h["write_id"] for h in touched), max(h["write_id"] for h in touched)
        names.add(f"{prefix}delta_{lo:07d}_{hi:07d}_v{txn_id:07d}")
        if any(h["operation"] in ("delete", "update") for h in touched):
            names.add(f"{prefix}delete_delta_{lo:07d}_{hi:07d}_v{txn_id:07d}")
    return names


# ---------------------------------------------------------------------------------------------
# random histories
# ---------------------------------------------------------------------------------------------
OPS = ["append", "append", "append", "delete", "update", "aborted", "open"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_partitioned_history_reads_the_same_before_and_after_minor_and_major(tmp_path, seed):
    rng = random.Random(seed)
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, partitionColumns=["p"])
    h = History(location, rng)
    h.step("append")
    for _ in range(9):
        h.step(rng.choice(OPS))
    h.step("delete")
    h.step("append")
    store = Metastore()
    before = everything(location)
    assert data_rows(before[None]) == h.latest()

    minor = h.t.compact("minor")
    parts = sorted(p.name for p in Path(location).iterdir() if p.is_dir())
    outputs = {n for n in minor["outputDirs"]}
    assert outputs == expected_names(location, "minor", minor["txnId"], store, parts)
    assert minor["partitions"] == parts and minor["numDataObjectsCompacted"] == len(parts)
    assert minor["numOutputRows"] + minor["numRowsDroppedAborted"] == minor["numInputRows"]
    assert everything(location) == before  # every version, same rows, same ROW__IDs

    major = h.t.compact("major")
    assert set(major["outputDirs"]) == expected_names(location, "major", major["txnId"], store, parts)
    if h.open is None:  # otherwise rows above the open write id stay in their deltas
        assert major["numOutputRows"] == len(before[None])
    after = everything(location)
    assert after == before
    for part in parts:
        base = [d for d in dirs(Path(location) / part) if d.startswith("base_")]
        assert base == [f"base_{int(major['outputDirs'][0].split('_')[1]):07d}_v{major['txnId']:07d}"]
        for f in files(Path(location) / part / base[0]):
            if f.startswith("bucket_"):
                check_acid_file(Path(location) / part / base[0] / f, int(f[7:]), unique=True, inserts_only=True)
            else:
                assert f == "_orc_acid_version" and (Path(location) / part / base[0] / f).read_bytes() == b"2"

    if h.open is not None:  # its rows were never compacted: they become visible when it commits
        w = h.open[0].writeId
        assert major["writeIdHighWatermark"] == w - 1
        h.commit_open()
    h.step("delete")
    h.step("append")
    assert data_rows(read(location)) == h.latest()
    again = h.t.compact("major")
    assert data_rows(read(location)) == h.latest()
    assert again["numRowsDroppedDeleted"] > 0 or again["numOutputRows"] == len(h.model)


@pytest.mark.parametrize("seed", [4, 5])
def test_random_bucketed_history(tmp_path, seed):
    """A bucketed table: each writer id (hash bucket) compacts into its own file, whatever
    statements and write ids wrote it."""
    rng = random.Random(seed)
    location = str(tmp_path / "t")
    create_table(location, FLAT, bucketColumns=["id"], numBuckets=3)
    h = History(location, rng, parts=())
    for op in ["append", "append", "delete", "aborted", "append", "update", "append", "delete"]:
        h.step(op)
    before = everything(location)
    assert data_rows(before[None], partitioned=False) == h.latest()
    minor = h.t.compact("minor")
    assert everything(location) == before
    for name in minor["outputDirs"]:
        for f in files(Path(location) / name):
            if f.startswith("bucket_"):
                check_acid_file(Path(location) / name / f, int(f[7:]), unique=not name.startswith("delete"),
                                inserts_only=False)
    major = h.t.compact("major")
    assert everything(location) == before
    base = Path(location) / major["outputDirs"][0]
    buckets = [f for f in files(base) if f.startswith("bucket_")]
    assert buckets == [f"bucket_{b:05d}" for b in range(3)]  # 60+ rows hash into every bucket
    for f in buckets:
        check_acid_file(base / f, int(f[7:]), unique=True, inserts_only=True)


# ---------------------------------------------------------------------------------------------
# what the outputs hold
# ---------------------------------------------------------------------------------------------
def test_minor_keeps_every_event_and_major_applies_the_deletes(tmp_path):
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch(range(10), "w1", schema=FLAT))
    t.append(batch(range(10, 20), "w2", schema=FLAT))
    t.delete("id IN (2, 15)")      # write id 3: deletes rows of write ids 1 and 2
    t.delete("id = 1")             # write id 4: an older row than the previous delete's last
    t.update("id = 12", {"v": "'w5'"})
    minor = t.compact("minor")
    assert minor["outputDirs"] == [f"delta_0000001_0000005_v{minor['txnId']:07d}",
                                   f"delete_delta_0000001_0000005_v{minor['txnId']:07d}"]
    inserts = check_acid_file(Path(location) / minor["outputDirs"][0] / "bucket_00000", 0, unique=True,
                              inserts_only=True)
    deletes = check_acid_file(Path(location) / minor["outputDirs"][1] / "bucket_00000", 0, unique=True,
                              inserts_only=False)
    b0 = bucket_property(0)
    assert [(o, r) for _, o, _, r, _ in inserts] == [(1, i) for i in range(10)] + [(2, i) for i in range(10)] + [(5, 0)]
    # delete events unchanged, in ROW__ID order across the two delete deltas
    assert deletes == [(2, 1, b0, 1, 4), (2, 1, b0, 2, 3), (2, 2, b0, 2, 5), (2, 2, b0, 5, 3)]
    assert minor["numInputDirs"] == 6 and minor["numOutputFiles"] == 2 and minor["numOutputRows"] == 25

    major = t.compact("major")
    assert major["outputDirs"] == [f"base_0000005_v{major['txnId']:07d}"]
    events = check_acid_file(Path(location) / major["outputDirs"][0] / "bucket_00000", 0, unique=True,
                             inserts_only=True)
    assert [(o, r) for _, o, _, r, _ in events] == (
        [(1, i) for i in range(10) if i not in (1, 2)] + [(2, i) for i in range(10) if i not in (2, 5)] + [(5, 0)])
    assert major["numRowsDroppedDeleted"] == 4 and major["numOutputRows"] == 17
    assert sorted(r[:2] for r in read(location)) == sorted(
        [(i, "w1") for i in range(10) if i not in (1, 2)] + [(i, "w2") for i in range(10, 20) if i not in (12, 15)]
        + [(12, "w5")])


def test_major_folds_original_files_in_with_hive_row_ids(tmp_path):
    """Pre-ACID files at the table root (a table converted to ACID): their rows get the
    synthetic ROW__IDs Hive reads them with (writeId 0, bucket V1(N), offsets per bucket in
    path order), written down for good in the base."""
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    gen = HiveTable(location, [("id", "bigint"), ("v", "string")])
    gen.original("000000_0", [(i, "o0") for i in range(3)])
    gen.original("000000_0_copy_1", [(i, "o0c") for i in range(3, 5)])
    gen.original("000001_0", [(i, "o1") for i in range(5, 9)])
    t = AcidTable.load(location)
    t.append(batch([100, 101], "w1", schema=FLAT))
    t.delete("id IN (1, 6)")
    b0, b1 = bucket_property(0), bucket_property(1)
    expected_ids = {0: (0, b0, 0), 2: (0, b0, 2), 3: (0, b0, 3), 4: (0, b0, 4), 5: (0, b1, 0), 7: (0, b1, 2),
                    8: (0, b1, 3), 100: (1, b0, 0), 101: (1, b0, 1)}
    before = everything(location, extra=(0,))  # version 0: the originals alone
    assert {r[0]: r[2] for r in before[None]} == expected_ids
    assert len(before[0]) == 9
    t.compact("minor")
    major = t.compact("major")
    assert major["numInputFiles"] == 3 + 1 + 1 + 1  # three originals, delta, delete delta (bucket 0 and 1)
    base = Path(location) / major["outputDirs"][0]
    assert files(base) == ["_orc_acid_version", "bucket_00000", "bucket_00001"]
    events = check_acid_file(base / "bucket_00000", 0, unique=True, inserts_only=True)
    assert [(o, b, r) for _, o, b, r, _ in events] == [(0, b0, 0), (0, b0, 2), (0, b0, 3), (0, b0, 4),
                                                      (1, b0, 0), (1, b0, 1)]
    events = check_acid_file(base / "bucket_00001", 1, unique=True, inserts_only=True)
    assert [(o, b, r) for _, o, b, r, _ in events] == [(0, b1, 0), (0, b1, 2), (0, b1, 3)]
    assert everything(location, extra=(0,)) == before  # version 0 still reads the originals
    # the originals are obsolete now: deleting one takes the new base's (same) ROW__ID
    t.delete("id = 7")
    assert {r[0]: r[2] for r in read(location)} == {k: v for k, v in expected_ids.items() if k != 7}


def test_a_plain_file_with_positional_column_names_in_a_delta_keeps_its_values(tmp_path):
    """A plain ORC file loaded into a delta (LOAD DATA) whose columns are named ``_col0``,
    ``_col1`` (older Hive writers) is read by position; compaction must carry the same values
    into its output, not nulls."""
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch([1], "w1", schema=FLAT))
    w = store_write(location)
    HiveTable(location, [("id", "bigint"), ("v", "string")]).write_plain(
        Path(location) / f"delta_{w:07d}_{w:07d}_0000" / "000000_0", [(2, "raw2"), (3, "raw3")],
        row_type="struct<_col0:bigint,_col1:string>")
    expected = [(1, "w1"), (2, "raw2"), (3, "raw3")]
    assert sorted(r[:2] for r in read(location)) == expected
    t.compact("minor")
    assert sorted(r[:2] for r in read(location)) == expected
    t.compact("major")
    assert sorted(r[:2] for r in read(location)) == expected


def test_empty_outputs_still_take_effect(tmp_path):
    """Everything deleted: the base holds no file, only ``_orc_acid_version``, and still hides
    the deltas it replaces (as Hive's compactor creates empty outputs)."""
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch([1, 2], "w1", schema=FLAT))
    t.delete("id > 0")
    t.delete("id > 0")  # matches nothing: no commit
    major = t.compact("major")
    assert files(Path(location) / major["outputDirs"][0]) == ["_orc_acid_version"]
    assert major["numOutputFiles"] == 0 and major["numRowsDroppedDeleted"] == 2
    assert read(location) == [] and len(read(location, 1)) == 2
    flat = str(tmp_path / "mm")
    create_table(flat, FLAT, insertOnly=True)
    mm = AcidTable.load(flat)
    mm.append(batch([1], "w1", schema=FLAT))
    mm.overwrite(batch([], "none", schema=FLAT))  # base_2 with an empty file
    w = store_write(flat)
    HiveTable(flat, [("id", "bigint"), ("v", "string")]).write_plain(
        Path(flat) / f"delta_{w:07d}_{w:07d}_0000" / "000000_0", [])
    major = mm.compact("major")
    assert files(Path(flat) / major["outputDirs"][0]) == ["000000_0"] and mm.toArrow().num_rows == 0


def test_key_index_over_many_stripes(tmp_path, monkeypatch):
    monkeypatch.setattr(compaction_plan, "BASE_STRIPE_SIZE", 4096)
    monkeypatch.setattr(compaction_plan, "DELTA_STRIPE_SIZE", 4096)
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    rng = np.random.default_rng(7)
    for w in range(3):
        ids = rng.integers(0, 1 << 60, 20000)
        t.append(pa.table({"id": pa.array(ids), "v": pa.array([f"{x:x}" for x in ids])}))
    t.delete("id % 3 = 0")
    before = read(location)
    minor = t.compact("minor")
    events = check_acid_file(Path(location) / minor["outputDirs"][0] / "bucket_00000", 0, unique=True,
                             inserts_only=True)
    assert len(events) == 60000
    assert OrcFile(Storage(location), f"{location}/{minor['outputDirs'][0]}/bucket_00000").num_stripes > 3
    major = t.compact("major")
    path = f"{location}/{major['outputDirs'][0]}/bucket_00000"
    assert OrcFile(Storage(location), path).num_stripes > 3
    check_acid_file(Path(path), 0, unique=True, inserts_only=True)
    assert read(location) == before


def store_write(location: str, commit: bool = True) -> int:
    """A write id allocated (and committed) in the store, for files a test writes itself."""
    store = Metastore()
    info = store.find_table(location)
    txn = store.open_transaction()
    write_id = store.allocate_write_id(txn, info.table_id)
    if commit:
        store.commit(txn, touched={info.table_id: [""]})
    return write_id


def test_acid_v1_updates_are_compacted_in_row_id_order(tmp_path):
    """Hive 1/2 deltas carry UPDATE events under the row's original ROW__ID: the surviving
    versions are not in file order, so the major compaction sorts them; a minor one keeps both
    events, the newer first (Hive's merge order)."""
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch([0, 1, 2], "w1", schema=FLAT))
    b0 = bucket_property(0)
    w = store_write(location)
    HiveTable(location, [("id", "bigint"), ("v", "string")]).raw_dir(
        f"delta_{w:07d}_{w:07d}", {0: [Event(1, 1, b0, 1, w, (1, "w2 update")), Event(0, w, b0, 0, w, (9, "w2"))]})
    t.append(batch([3], "w3", schema=FLAT))
    before = everything(location)
    assert [r[:2] for r in before[None]] == [(0, "w1"), (1, "w2 update"), (2, "w1"), (3, "w3"), (9, "w2")]
    minor = t.compact("minor")
    events = check_acid_file(Path(location) / minor["outputDirs"][0] / "bucket_00000", 0, unique=False,
                             inserts_only=False)
    assert [(op, o, r, c) for op, o, _, r, c in events] == [(0, 1, 0, 1), (1, 1, 1, 2), (0, 1, 1, 1), (0, 1, 2, 1),
                                                           (0, 2, 0, 2), (0, 3, 0, 3)]
    assert everything(location) == before
    major = t.compact("major")
    events = check_acid_file(Path(location) / major["outputDirs"][0] / "bucket_00000", 0, unique=True,
                             inserts_only=True)
    assert [(o, r) for _, o, _, r, _ in events] == [(1, 0), (1, 1), (1, 2), (2, 0), (3, 0)]
    assert everything(location) == before


def test_a_streaming_delta_across_an_open_write_id_is_left_alone(tmp_path):
    """A streaming delta (one file, several write ids) holding write ids on both sides of an
    open one cannot be compacted without dropping the later ones' events: the data object is
    skipped, and says why."""
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch([0], "w1", schema=FLAT))
    t.append(batch([1], "w2", schema=FLAT))
    lo = store_write(location)
    store_write(location, commit=False)  # still open
    hi = store_write(location)
    b0 = bucket_property(0)
    HiveTable(location, [("id", "bigint"), ("v", "string")]).raw_dir(
        f"delta_{lo:07d}_{hi:07d}", {0: [Event(0, w, b0, 0, w, (10 + w, "stream")) for w in range(lo, hi + 1)]})
    before = everything(location)
    assert [r[0] for r in before[None]] == [0, 1, 10 + lo, 10 + hi]
    for kind in ("minor", "major"):
        m = t.compact(kind)
        assert m["numDataObjectsCompacted"] == 0
        assert m["skipped"] == {"": f"delta_{lo:07d}_{hi:07d} spans write ids above {lo}, the lowest open write id "
                                    "minus one"}
    assert everything(location) == before


# ---------------------------------------------------------------------------------------------
# snapshots: open writers, readers, aborted data
# ---------------------------------------------------------------------------------------------
def test_the_compactor_snapshot(tmp_path):
    """Hive's compactor list: below the lowest open write id, aborted ids its only exceptions."""
    given = ValidWriteIdList.parse("default.t:12:5:5,9:3,7,11")
    bounded = compactor_write_ids(given)
    assert str(bounded) == "default.t:4:9223372036854775807::3"
    assert str(compactor_write_ids(ValidWriteIdList.parse("t:8:9223372036854775807::2,3"))) == \
        "t:8:9223372036854775807::2,3"


def test_an_open_write_bounds_the_compaction(tmp_path):
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch([1, 2], "w1", schema=FLAT))
    staged, result = unfinished_write(location, batch([3], "w2 open", schema=FLAT))
    t.append(batch([4], "w3", schema=FLAT))
    t.delete("id = 1")  # w4
    t.append(batch([5], "w5", schema=FLAT))
    minor = t.compact("minor")
    assert minor["skipped"] == {"": "fewer than two deltas of a kind"}
    assert minor["numDataObjectsCompacted"] == 0 and not any(V in d for d in dirs(location))
    t.append(batch([6], "w6", schema=FLAT))  # another delta, still above the open write id
    assert t.compact("minor")["numDataObjectsCompacted"] == 0
    major = t.compact("major")
    assert major["outputDirs"] == [f"base_0000001_v{major['txnId']:07d}"] and major["writeIdHighWatermark"] == 1
    staged.commit([result])
    assert sorted(r[:2] for r in read(location)) == [(2, "w1"), (3, "w2 open"), (4, "w3"), (5, "w5"), (6, "w6")]
    major = t.compact("major")
    assert major["outputDirs"] == [f"base_0000006_v{major['txnId']:07d}"]
    assert sorted(r[:2] for r in read(location)) == [(2, "w1"), (3, "w2 open"), (4, "w3"), (5, "w5"), (6, "w6")]


def test_aborted_data_is_dropped_and_one_delta_is_not_worth_a_minor(tmp_path):
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch([1], "w1", schema=FLAT))
    staged, _ = unfinished_write(location, batch([2, 3], "dead", schema=FLAT))
    staged.transaction.metastore.abort(staged.txnId, "died")
    before = everything(location)
    minor = t.compact("minor")  # one current delta: nothing to merge (Hive skips it too; the
    assert minor["skipped"] == {"": "fewer than two deltas of a kind"}  # aborted dir is the cleaner's)
    assert everything(location) == before
    major = t.compact("major")
    assert major["outputDirs"] == [f"base_0000002_v{major['txnId']:07d}"]  # N: the hwm, an aborted id
    assert everything(location) == before
    assert t.compact("major")["skipped"] == {"": "nothing but a base"}


def test_a_reader_planned_before_the_commit_keeps_its_rows(tmp_path):
    """Outputs are invisible until the compaction commits, and a reader whose snapshot predates
    the commit keeps reading the old directories, during and after the commit."""
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, partitionColumns=["p"])
    t = AcidTable.load(location)
    for w in range(3):
        t.append(batch(range(w * 5, w * 5 + 5), f"w{w}", ["a", "b", "a", "b", "a"]))
    t.delete("id % 4 = 1")
    expected = sorted(t.toArrow().to_pylist(), key=lambda r: r["id"])
    early = t.scan()  # snapshot before the compaction started
    seen = {}

    def tasks_then_read(tasks):
        results = run_in_process(tasks)
        assert any(d.startswith("base_") and V in d for d in os.listdir(f"{location}/p=a"))
        seen["during"] = t.scan()  # snapshot while the compaction is open, outputs on disk
        seen["during rows"] = sorted(seen["during"].toArrow().to_pylist(), key=lambda r: r["id"])
        return results

    compact_table(location, "major", runTasks=tasks_then_read)
    assert seen["during rows"] == expected
    for scan in (early, seen["during"], t.scan()):
        assert sorted(scan.toArrow().to_pylist(), key=lambda r: r["id"]) == expected


# ---------------------------------------------------------------------------------------------
# commits while a compaction runs
# ---------------------------------------------------------------------------------------------
CHILD_DELETE = """
import sys
from acid_source.table import AcidTable
print(AcidTable.load(sys.argv[1]).delete("id IN (1, 7)")["writeId"])
"""


def test_a_delete_committed_by_another_process_during_a_compaction(tmp_path, private_store):
    """Both commit (the compaction keeps ROW__IDs, so the delete's events find their rows in the
    new base), and the rows are right."""
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch(range(5), "w1", schema=FLAT))
    t.append(batch(range(5, 10), "w2", schema=FLAT))

    def tasks_then_delete(tasks):
        results = run_in_process(tasks)
        env = dict(os.environ, ACIDORC_METASTORE_URL=private_store)
        out = subprocess.run([sys.executable, "-c", CHILD_DELETE, location], env=env, capture_output=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr.decode()[-2000:]
        return results

    major = compact_table(location, "major", runTasks=tasks_then_delete)
    assert major["outputDirs"] == [f"base_0000002_v{major['txnId']:07d}"]
    assert [r[0] for r in read(location)] == [0, 2, 3, 4, 5, 6, 8, 9]
    assert [h["operation"] for h in t.history()][:2] == ["compaction", "delete"]


def test_an_overwrite_committed_during_a_compaction_fails_it(tmp_path):
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch(range(5), "w1", schema=FLAT))
    t.append(batch(range(5, 10), "w2", schema=FLAT))
    made = []

    def tasks_then_overwrite(tasks):
        results = run_in_process(tasks)
        made.extend(r.files[0].path.rsplit("/", 1)[0] for r in results)
        t.overwrite(batch([42], "ow", schema=FLAT))
        return results

    with pytest.raises(ConflictError) as info:
        compact_table(location, "major", runTasks=tasks_then_overwrite)
    assert info.value.committed_write_id == 3 and "compaction must be retried" in str(info.value)
    assert made and not any(os.path.exists(d) for d in made)  # the aborted compaction left nothing
    assert [r[:2] for r in read(location)] == [(42, "ow")]
    assert Metastore().txn_state(info.value.txn_id) == "aborted"


def test_a_failing_task_aborts_and_removes_every_output(tmp_path):
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, partitionColumns=["p"])
    t = AcidTable.load(location)
    t.append(batch(range(4), "w1", ["a", "b", "a", "b"]))
    t.append(batch(range(4, 8), "w2", ["a", "b", "a", "b"]))
    before = everything(location)
    listing = sorted(str(p) for p in Path(location).rglob("*"))

    def half_then_fail(tasks):
        run_in_process(tasks[:1])
        raise RuntimeError("executor lost")

    with pytest.raises(RuntimeError, match="executor lost"):
        compact_table(location, "minor", runTasks=half_then_fail)
    assert sorted(str(p) for p in Path(location).rglob("*")) == listing
    assert everything(location) == before
    with pytest.raises(RuntimeError):
        compact_table(location, "major", runTasks=half_then_fail)
    assert sorted(str(p) for p in Path(location).rglob("*")) == listing
    assert [h["operation"] for h in t.history()] == ["insert", "insert"]


def test_inputs_out_of_row_id_order_fail_loudly(tmp_path):
    """A delta file whose events are not in ROW__ID order breaks every reader's merge; the
    compaction refuses it (naming the file) instead of writing a base in the wrong order."""
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch([1, 2, 3], "w1", schema=FLAT))
    t.append(batch([4], "w2", schema=FLAT))
    [delta] = [d for d in dirs(location) if d.startswith("delta_0000001")]
    gen = HiveTable(location, [("id", "bigint"), ("v", "string")])
    b0 = bucket_property(0)
    gen.write_events(Path(location) / delta / "bucket_00000",
                     [Event(0, 1, b0, r, 1, (i, "w1")) for r, i in ((2, 3), (0, 1), (1, 2))], sort=False)
    for kind in ("minor", "major"):
        with pytest.raises(CorruptFileError, match="ROW__ID order"):
            t.compact(kind)
    assert not any(V in d for d in dirs(location))


# ---------------------------------------------------------------------------------------------
# partitions, insert-only tables, the API
# ---------------------------------------------------------------------------------------------
def test_partition_filter_and_optimize(tmp_path):
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, partitionColumns=["p"])
    t = AcidTable.load(location)
    for w in range(3):
        t.append(batch(range(w * 3, w * 3 + 3), f"w{w}", ["a", "b", "c"]))
    before = everything(location)
    minor = t.compact("minor", partitionFilter="p = 'b'")
    assert minor["partitions"] == ["p=b"]
    assert minor["outputDirs"] == [f"p=b/delta_0000001_0000003_v{minor['txnId']:07d}"]
    major = t.optimize().where("p <> 'b'").where("p < 'c'").executeCompaction()
    assert major["kind"] == "major" and major["outputDirs"] == [f"p=a/base_0000003_v{major['txnId']:07d}"]
    assert [h["partitions"] for h in t.history()][:2] == [["p=a"], ["p=b"]]
    assert everything(location) == before
    assert not any(V in d for d in dirs(f"{location}/p=c"))
    assert t.optimize().executeCompaction(kind="minor")["partitions"] == ["p=c"]  # a: a base; b: one delta
    assert everything(location) == before


def test_insert_only_tables(tmp_path):
    location = str(tmp_path / "t")
    create_table(location, FLAT, insertOnly=True, partitionColumns=[])
    t = AcidTable.load(location)
    t.append(batch([1, 2], "w1", schema=FLAT))
    t.append(batch([3], "w2", schema=FLAT))
    staged, _ = unfinished_write(location, batch([9], "dead", schema=FLAT))
    staged.transaction.metastore.abort(staged.txnId, "died")
    t.append(batch([4], "w4", schema=FLAT))
    before = {v: sorted(t.scan(versionAsOf=v).toArrow().to_pylist(), key=str) for v in versions(location)}
    minor = t.compact("minor")
    assert minor["outputDirs"] == [f"delta_0000001_0000004_v{minor['txnId']:07d}"]
    assert files(Path(location) / minor["outputDirs"][0]) == ["000000_0"]
    assert not OrcFile(Storage(location), f"{location}/{minor['outputDirs'][0]}/000000_0").is_acid
    assert {v: sorted(t.scan(versionAsOf=v).toArrow().to_pylist(), key=str) for v in versions(location)} == before
    t.overwrite(batch([5], "w5", schema=FLAT))
    t.append(batch([6], "w6", schema=FLAT))
    before = {v: sorted(t.scan(versionAsOf=v).toArrow().to_pylist(), key=str) for v in versions(location)}
    major = t.compact("major")
    assert major["outputDirs"] == [f"base_0000006_v{major['txnId']:07d}"]
    assert files(Path(location) / major["outputDirs"][0]) == ["000000_0"]
    assert sorted(r["id"] for r in t.toArrow().to_pylist()) == [5, 6]
    assert {v: sorted(t.scan(versionAsOf=v).toArrow().to_pylist(), key=str) for v in versions(location)} == before


def test_arguments_and_tables_that_cannot_be_compacted(tmp_path):
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch([1], "w1", schema=FLAT))
    with pytest.raises(InvalidArgumentError, match="'kind'"):
        t.compact("medium")
    with pytest.raises(InvalidArgumentError, match="partitionFilter"):
        t.compact("major", partitionFilter="p = 1")  # not partitioned
    with pytest.raises(InvalidArgumentError, match="partitionFilter"):
        t.optimize().where("")
    hive = tmp_path / "hive"
    HiveTable(hive, [("id", "bigint")]).insert(1, {0: [(1,)]})
    with pytest.raises(TableNotRegisteredError):
        compact_table(str(hive), "major")
    with pytest.raises(TableNotRegisteredError):
        AcidTable.load(str(hive)).compact("minor")
    empty = str(tmp_path / "empty")
    create_table(empty, SCHEMA, partitionColumns=["p"])
    with pytest.raises(InvalidArgumentError, match="partitionFilter"):
        AcidTable.load(empty).compact("major", partitionFilter="q = 1")
    nothing = AcidTable.load(empty).compact("major")
    assert nothing["numDataObjectsCompacted"] == 0 and nothing["numOutputFiles"] == 0
    assert AcidTable.load(empty).history() == []  # nothing to compact: nothing committed


DRIVER_SIDE = ("sqlalchemy", "acid_source.metastore", "acid_source.resolve", "acid_source.scan.planner",
               "acid_source.txn", "acid_source.writes", "acid_source.table", "sqlglot",
               "acid_source.maintenance.compaction_plan", "acid_source.maintenance.compactor")

CHILD_TASK = """
import pickle, sys
from acid_source.maintenance.compaction_tasks import run_task
result = run_task(pickle.loads(sys.stdin.buffer.read()))
print(result.rows, [m for m in {modules!r} if m in sys.modules])
"""


def test_a_task_runs_without_driver_side_modules(tmp_path):
    location = str(tmp_path / "t")
    create_table(location, FLAT)
    t = AcidTable.load(location)
    t.append(batch([1, 2], "w1", schema=FLAT))
    t.delete("id = 1")
    captured = []

    def ship(tasks):
        captured.extend(tasks)
        out = subprocess.run([sys.executable, "-c", CHILD_TASK.format(modules=DRIVER_SIDE)],
                             input=pickle.dumps(tasks[0]), capture_output=True, timeout=120)
        assert out.returncode == 0, out.stderr.decode()[-2000:]
        assert out.stdout.decode().split(None, 1) == ["1", "[]\n"]
        return run_in_process(tasks)

    compact_table(location, "major", runTasks=ship)
    assert len(captured) == 1 and re.fullmatch(r"base_0000002_v\d{7}", captured[0].output_dir.rsplit("/", 1)[1])
