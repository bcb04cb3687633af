"""The change feed's executor side: deleted rows' values looked up by ROW__ID wherever their
insert event lives now (its delta, a minor compaction's delta, a base, a pre-ACID file with
synthetic row ids), and a split read in a fresh interpreter that loads nothing driver-side."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pyarrow as pa
import pyarrow.orc as paorc
from hivegen import HiveTable
from test_task_imports import NOT_SPARK

from acid_source import create_table
from acid_source.streaming.change_plan import plan_changes
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]})


def deleted(t) -> list[tuple]:
    """The delete rows of the latest version."""
    got = t.changes(startingVersion=t.version).toArrow()
    return sorted((v, i, s) for v, c, i, s in zip(got.column("_commit_version").to_pylist(),
                                                  got.column("_change_type").to_pylist(),
                                                  got.column("id").to_pylist(), got.column("v").to_pylist())
                  if c == "delete")


def test_deleted_rows_come_from_their_insert_events_wherever_they_are(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    create_table(str(tmp_path / "t"), SCHEMA, bucketColumns=["id"], numBuckets=2, metastoreUrl=url)
    # pre-ACID files (bucket 0): rows with synthetic ROW__IDs (write id 0), the second file's
    # row ids counting on from the first's
    paorc.write_table(rows([1, 2]), str(tmp_path / "t" / "000000_0"))
    paorc.write_table(rows([3, 4]), str(tmp_path / "t" / "000000_0_copy_1"))
    t = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url)
    t.append(rows(list(range(10, 30))))   # 1
    t.append(rows(list(range(30, 40))))   # 2
    t.delete("id in (2, 4, 11)")          # 3: originals and a delta
    assert deleted(t) == [(3, 2, "v2"), (3, 4, "v4"), (3, 11, "v11")]
    t.compact("minor")
    t.vacuum(retentionSeconds=0)
    t.delete("id in (12, 31)")            # 4: rows in the minor compaction's delta
    assert deleted(t) == [(4, 12, "v12"), (4, 31, "v31")]
    t.compact("major")
    t.vacuum(retentionSeconds=0)
    t.delete("id in (1, 3, 13, 32)")      # 5: rows the base holds (pre-ACID ones with write id 0)
    assert deleted(t) == [(5, 1, "v1"), (5, 3, "v3"), (5, 13, "v13"), (5, 32, "v32")]


def test_a_deleted_row_of_a_raw_file_loaded_into_a_delta_counts_its_row_id_on_from_the_earlier_files(tmp_path):
    """Hive's LOAD DATA into a full-ACID table leaves plain files in a delta (``000000_0``,
    ``000000_0_copy_1``): their rows' synthetic row ids count on across the bucket's files, in
    the change feed's lookup as in the reader (one slicer: scan/slicing.py)."""
    url = f"sqlite:///{tmp_path}/store.db"
    delta = tmp_path / "t" / "delta_0000001_0000001_0000"
    delta.mkdir(parents=True)
    paorc.write_table(rows([1, 2]), str(delta / "000000_0"))
    paorc.write_table(rows([3, 4]), str(delta / "000000_0_copy_1"))
    HiveTable(tmp_path / "t", [("id", "bigint"), ("v", "string")]).insert(2, {0: [(5, "v5")]})  # a Hive INSERT
    create_table(str(tmp_path / "t"), SCHEMA, adopt=True, metastoreUrl=url)  # write ids 1, 2 as Hive left them
    t = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url)
    t.delete("id in (2, 4)")  # 3: one row of each raw file
    assert sorted(t.toArrow().column("id").to_pylist()) == [1, 3, 5]
    assert deleted(t) == [(3, 2, "v2"), (3, 4, "v4")]


CHILD = """
import pickle, sys
from acid_source.streaming.change_reader import read_change_split
splits, ctx = pickle.loads(sys.stdin.buffer.read())
ids = sorted(i for s in splits for b in read_change_split(s, ctx) for i in b.column("id").to_pylist())
loaded = [m for m in sys.modules if m.startswith({modules!r})]
sys.stdout.buffer.write(pickle.dumps((ids, loaded)))
"""


def test_splits_are_read_in_a_fresh_interpreter_that_loads_nothing_driver_side(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    create_table(str(tmp_path / "t"), SCHEMA, metastoreUrl=url)
    t = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url)
    t.append(rows([1, 2, 3]))
    t.delete("id = 2")
    plan = plan_changes(t.location, [1, 2], metastore_url=url)
    out = subprocess.run([sys.executable, "-c", CHILD.format(modules=NOT_SPARK)],
                         input=pickle.dumps((plan.splits, plan.context)), capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    ids, loaded = pickle.loads(out.stdout)
    assert loaded == [] and ids == [1, 2, 2, 3]


def test_a_lookup_reads_only_the_stripes_holding_deleted_keys(tmp_path, monkeypatch):
    """The key index skips the stripes of the insert files that hold none of the deleted keys."""
    from acid_source.orc import files

    url = f"sqlite:///{tmp_path}/store.db"
    create_table(str(tmp_path / "t"), SCHEMA, metastoreUrl=url)
    t = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url)
    n = 400_000
    noise = os.urandom(n * 24).hex()  # barely compressible: the 8 MB delta stripes fill up
    values = [noise[i * 48:(i + 1) * 48] for i in range(n)]
    t.append(pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array(values)}))
    t.delete(f"id = {n - 5}")
    inserts = next((tmp_path / "t").glob("delta_0000001_*/bucket_*"))
    stripes = files.OrcFile(t.scan()._table.storage, str(inserts)).num_stripes
    read = []
    original = files.OrcFile.read_stripe

    def counting(self, index, columns=None):
        read.append((self.path, index))
        return original(self, index, columns)

    monkeypatch.setattr(files.OrcFile, "read_stripe", counting)
    got = t.changes(startingVersion=2).toArrow()
    assert got.column("id").to_pylist() == [n - 5] and got.column("v").to_pylist() == [values[n - 5]]
    assert stripes > 1 and {i for p, i in read if p == str(inserts)} == {stripes - 1}, (stripes, read)


def test_a_streamed_transaction_batch_is_read_up_to_its_committed_transactions(tmp_path):
    """Streaming ingest's delta_x_y holds several write ids in growing files: the feed reads each
    committed transaction's rows (cut at the _flush_length side file while the batch is open),
    never an aborted or still open one's, and finds a row deleted from it by ROW__ID."""
    url = f"sqlite:///{tmp_path}/store.db"
    create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("p", pa.string())]), partitionColumns=["p"],
                 metastoreUrl=url)
    t = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url)
    t.append(pa.table({"id": pa.array([0], pa.int64()), "p": ["a"]}))                # 1
    conn = t.streamingConnection(transactionsPerBatch=5)                               # 2..6
    for i in range(1, 5):
        conn.beginTransaction()
        conn.write(pa.table({"id": pa.array([i, 10 + i], pa.int64()), "p": ["a", "b"]}))
        conn.commitTransaction() if i != 2 else conn.abortTransaction()
    assert any(p.name.endswith("_flush_length") for p in (tmp_path / "t" / "p=a").rglob("*"))
    t.delete("id = 3")                                                                 # 7, the batch still open
    got = t.changes(startingVersion=1).toArrow()
    assert sorted(zip(got.column("_commit_version").to_pylist(), got.column("_change_type").to_pylist(),
                      got.column("id").to_pylist())) == [
        (1, "insert", 0), (2, "insert", 1), (2, "insert", 11), (4, "insert", 3), (4, "insert", 13),
        (5, "insert", 4), (5, "insert", 14), (7, "delete", 3)]
    assert plan_changes(t.location, [3, 6], metastore_url=url).write_ids == ()  # aborted, open
    conn.close()
    assert t.changes(startingVersion=1).count() == 8
