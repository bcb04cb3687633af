"""A read task imports nothing driver-side: what Spark ships to a task (the pickled reader
and one input partition) is unpickled and read in a fresh interpreter, which must not load
the transaction store, SQLAlchemy, the resolver or the planner."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pyarrow as pa

from acid_source import create_table
from acid_source.spark.datasource import AcidOrcDataSource

DRIVER_SIDE = ("sqlalchemy", "acid_source.metastore", "acid_source.resolve", "acid_source.scan.planner",
               "acid_source.txn", "acid_source.writes", "acid_source.table", "sqlglot")

CHILD = """
import pickle, sys
reader, partition = pickle.loads(sys.stdin.buffer.read())
rows = sum(b.num_rows for b in reader.read(partition))
loaded = [m for m in {modules!r} if m in sys.modules]
print(rows, loaded)
"""


def test_read_task_imports_no_driver_side_module(tmp_path, monkeypatch):
    from pyspark.sql.types import LongType, StructField, StructType

    url = f"sqlite:///{tmp_path}/store.db"
    monkeypatch.setenv("ACIDORC_METASTORE_URL", url)
    create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), metastore_url=url)
    from acid_source.table import AcidTable

    AcidTable.load(str(tmp_path / "t")).append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    source = AcidOrcDataSource({"path": str(tmp_path / "t")})
    reader = source.reader(StructType([StructField("id", LongType())]))
    (partition,) = reader.partitions()
    payload = pickle.dumps((reader, partition))
    out = subprocess.run([sys.executable, "-c", CHILD.format(modules=DRIVER_SIDE)], input=payload,
                         capture_output=True, check=True, timeout=120)
    assert out.stdout.decode().split(None, 1) == ["3", "[]\n"], out.stderr.decode()[-2000:]
