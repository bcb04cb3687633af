"""Hive 2.3's own reader reads tables compacted by acidorc exactly as acidorc reads them.

A partitioned, bucketed table gets a history (pre-ACID original files, appends, a DELETE, an
UPDATE, an aborted write, a write left open), then a major or a minor compaction. Hive 2.3's
OrcInputFormat (through py4j) reads every partition directory and must return exactly the rows
and ROW__IDs acidorc returned *before* the compaction, and the values of a plain-Python model.

Hive 2.3 cannot parse the ``_vT`` visibility suffix of the directories Hive 3.1+ compactors
(and acidorc's) write - ``base_0000006_v0000012`` is not a base to it - so it reads a **copy of
the table with the suffix removed** from every directory name (``base_0000006``,
``delta_0000001_0000006``): the same files, named as Hive 2.3's own compactor names its outputs.
That is faithful once the compaction committed (the suffix only hides outputs of transactions
that are not committed). The copy keeps the compaction's inputs next to its outputs (as before
the cleaner runs), so Hive must pick the outputs itself; after ``vacuum`` the copy is made
again. Hive speaks transaction ids: its snapshot is built here from the write ids the test
aborted and left open (write id == transaction id for Hive 2.3).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from core_read import read_rows
from hivegen import HiveTable

from acid_source import create_table
from acid_source.specs import WriteSpec
from acid_source.table import AcidTable
from acid_source.writes import stage_write
from interop.hive_reader import make_valid_txns

pytestmark = pytest.mark.interop

COLS = [("id", "bigint"), ("v", "string")]  # data columns; the partition value is the directory name
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
BUCKETS = 2
SUFFIX = re.compile(r"^((?:base|delta|delete_delta)_\d+(?:_\d+)*)_v\d+$")


class History:
    """The table, its model (id -> (v, p)) and what Hive must be told: aborted and open ids."""

    def __init__(self, path: str):
        self.path = path
        create_table(path, SCHEMA, partitionColumns=["p"], bucketColumns=["id"], numBuckets=BUCKETS)
        self.t = AcidTable.load(path)
        self.model: dict[int, tuple[str, str]] = {}
        self.aborted: list[int] = []
        self.open = None  # (job, txn, result, rows)
        self.next_id = 0
        self.max_write_id = 0  # the highest write id allocated (committed, aborted or open)

    def wrote(self, write_id: int) -> int:
        self.max_write_id = max(self.max_write_id, write_id)
        return write_id

    def ids(self, n: int) -> list[int]:
        out = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return out

    def originals(self, per_file: int) -> None:
        """Pre-ACID files in p=a, one per bucket (Hive's 00000N_0 names)."""
        gen = HiveTable(self.path, COLS)
        for bucket in range(BUCKETS):
            ids = self.ids(per_file)
            gen.original(f"{bucket:06d}_0", [(i, "orig") for i in ids], partition="p=a")
            self.model.update({i: ("orig", "a") for i in ids})

    def data(self, ids: list[int], v: str) -> pa.Table:
        return pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids), "p": ["ab"[i % 2] for i in ids]})

    def append(self, n: int, v: str) -> int:
        ids = self.ids(n)
        w = self.wrote(self.t.append(self.data(ids, v))["writeId"])
        self.model.update({i: (v, "ab"[i % 2]) for i in ids})
        return w

    def delete(self, condition: str, matches) -> int:
        w = self.wrote(self.t.delete(condition)["writeId"])
        self.model = {i: r for i, r in self.model.items() if not matches(i)}
        return w

    def update(self, condition: str, matches, v: str) -> int:
        w = self.wrote(self.t.update(condition, {"v": f"'{v}'"})["writeId"])
        self.model = {i: ((v, r[1]) if matches(i) else r) for i, r in self.model.items()}
        return w

    def _unfinished(self, n: int, v: str):
        ids = self.ids(n)
        data = self.data(ids, v)
        staged = stage_write(WriteSpec(path=self.path), overwrite=False, data_schema=data.schema, heartbeat="none")
        self.wrote(staged.writeId)
        task = staged.writer(0)
        for b in data.to_batches():
            task.write(b)
        return staged, staged.transaction, task.close(), {i: (v, "ab"[i % 2]) for i in ids}

    def aborted_write(self, n: int) -> None:
        """A writer that died after writing its files: the store aborted its transaction."""
        staged, txn, _, _ = self._unfinished(n, "aborted")
        txn.metastore.abort(txn.txn_id, "writer died")
        self.aborted.append(staged.writeId)

    def open_write(self, n: int) -> int:
        self.open = self._unfinished(n, "open")
        return self.open[0].writeId

    def commit_open(self) -> None:
        staged, _, result, rows = self.open
        staged.commit([result])
        self.model.update(rows)
        self.open = None

    def hive_snapshot(self, high_watermark: int | None = None) -> str:
        """Hive 2.3's transaction list: everything up to ``high_watermark`` (default: every
        write id allocated) except the aborted and open ones."""
        hwm = self.max_write_id if high_watermark is None else high_watermark
        open_ids = [self.open[0].writeId] if self.open is not None else []
        return make_valid_txns(hwm, open=[w for w in open_ids if w <= hwm],
                               aborted=[w for w in self.aborted if w <= hwm])

    def rows(self) -> list[tuple]:
        return sorted((i, v, p) for i, (v, p) in self.model.items())


def rid(r: dict) -> tuple[int, int, int]:
    return r["ROW__ID"]["writeId"], r["ROW__ID"]["bucketId"], r["ROW__ID"]["rowId"]


def acidorc_rows(path: str, **options) -> list[tuple]:
    """``((writeId, bucketId, rowId), id, v, p)`` of every row acidorc reads, sorted."""
    return sorted((rid(r), r["id"], r["v"], r["p"]) for r in read_rows(path, includeRowId="true", **options))


def hive_copy(path: str, dest: Path) -> Path:
    """The table with the ``_vT`` suffix removed from every directory name (see the module
    docstring); fails if two directories would get one name."""
    shutil.copytree(path, dest)
    renamed = 0
    for part in dest.iterdir():
        for d in sorted(part.iterdir()):
            m = SUFFIX.match(d.name)
            if d.is_dir() and m:
                assert not (part / m.group(1)).exists(), f"{part.name}/{d.name}: {m.group(1)} exists already"
                d.rename(part / m.group(1))
                renamed += 1
    assert renamed, "no compacted directory in the table"
    return dest


def hive_rows(hive, table: Path, valid_txns: str) -> list[tuple]:
    """What Hive 2.3 reads from every partition directory, as ``(ROW__ID, id, v, p)``."""
    out = []
    for part in sorted(table.glob("p=*")):
        value = part.name.split("=", 1)[1]
        out += [(tuple(r[0]), r[1], r[2], value)
                for r in hive.read(str(part), COLS, valid_txns=valid_txns, with_row_id=True, bucket_count=BUCKETS)]
    return sorted(out)


def values(rows: list[tuple]) -> list[tuple]:
    return sorted(r[1:] for r in rows)


def dirs(path: str, part: str) -> list[str]:
    return sorted(d.name for d in (Path(path) / part).iterdir() if d.is_dir())


def test_hive_reads_a_major_compacted_table(hive, tmp_path):
    h = History(str(tmp_path / "t"))
    h.originals(5)                                             # version 0: pre-ACID files in p=a
    h.append(16, "w1")                                         # 1
    h.append(12, "w2")                                         # 2
    h.delete("id % 4 = 1", lambda i: i % 4 == 1)               # 3: rows of originals and of 1, 2
    h.update("id % 3 = 0", lambda i: i % 3 == 0, "u4")         # 4: new versions in the hash bucket
    h.aborted_write(6)                                         # 5
    h.append(8, "w6")                                          # 6
    open_id = h.open_write(4)                                  # 7: open, its files on disk
    h.append(6, "w8")                                          # 8
    before = acidorc_rows(h.path)
    assert values(before) == h.rows()
    assert {r[0][0] for r in before} >= {0, 1, 2, 4, 6, 8}     # originals' synthetic ROW__IDs among them

    major = h.t.compact("major")
    assert major["writeIdHighWatermark"] == open_id - 1 == 6   # never past the open write
    base = f"base_0000006_v{major['txnId']:07d}"
    assert sorted(major["outputDirs"]) == [f"p=a/{base}", f"p=b/{base}"]
    assert acidorc_rows(h.path) == before
    copy = hive_copy(h.path, tmp_path / "hive1")
    assert "base_0000006" in dirs(str(copy), "p=a") and "000000_0" in {f.name for f in (copy / "p=a").iterdir()}
    assert hive_rows(hive, copy, h.hive_snapshot()) == before  # base + the deltas above it; inputs ignored

    h.commit_open()
    h.t.vacuum(retentionSeconds=0)
    h.t.vacuum(retentionSeconds=0)  # the first one ran while write 7 was open (its snapshot was protected)
    assert dirs(h.path, "p=a") == [base, "delta_0000007_0000007_0000", "delta_0000008_0000008_0000"]
    assert not any(f.is_file() for f in (Path(h.path) / "p=a").iterdir())  # the originals are in the base
    after = acidorc_rows(h.path)
    assert values(after) == h.rows()
    assert [r for r in after if r[0][0] != open_id] == before  # the open write's rows joined, nothing else moved
    copy = hive_copy(h.path, tmp_path / "hive2")
    assert hive_rows(hive, copy, h.hive_snapshot()) == after


def test_hive_reads_a_minor_compacted_table(hive, tmp_path):
    h = History(str(tmp_path / "t"))
    h.append(16, "w1")                                         # 1
    h.append(12, "w2")                                         # 2
    h.delete("id % 4 = 1", lambda i: i % 4 == 1)               # 3
    h.update("id % 3 = 0", lambda i: i % 3 == 0, "u4")         # 4
    h.aborted_write(6)                                         # 5
    h.append(8, "w6")                                          # 6
    h.delete("id % 7 = 2", lambda i: i % 7 == 2)               # 7
    before = acidorc_rows(h.path)
    at_3 = acidorc_rows(h.path, versionAsOf=3)
    assert values(before) == h.rows()

    minor = h.t.compact("minor")
    v = f"_v{minor['txnId']:07d}"
    assert sorted(minor["outputDirs"]) == sorted(f"p={p}/{k}delta_0000001_0000007{v}" for p in "ab"
                                                 for k in ("", "delete_"))
    assert acidorc_rows(h.path) == before
    copy = hive_copy(h.path, tmp_path / "hive1")
    assert hive_rows(hive, copy, h.hive_snapshot()) == before
    # an older snapshot: Hive filters the compacted events by write id, acidorc reads version 3
    assert hive_rows(hive, copy, h.hive_snapshot(3)) == at_3

    h.t.vacuum(retentionSeconds=0)
    assert dirs(h.path, "p=b") == [f"delete_delta_0000001_0000007{v}", f"delta_0000001_0000007{v}"]
    assert acidorc_rows(h.path) == before
    copy = hive_copy(h.path, tmp_path / "hive2")
    assert hive_rows(hive, copy, h.hive_snapshot()) == before
