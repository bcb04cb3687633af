"""Tasks import nothing driver-side. What would be shipped to an executor (a read task's
pickled reader and partition, a write task's staged write (``AcidTable.newWrite``), a DML task's ``ChangePlan`` and
change rows, a ``CompactionTask``) is unpickled and run in a fresh interpreter, which must not
load the transaction store, SQLAlchemy, the resolver, the planner, transactions or the SQL
parser. The parent then commits what the child wrote, so the child did the real work.

(The static side of the same rule, transitively over the import graph, is tests/test_layering.py.)
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import pyarrow as pa
import pytest

from acid_source import create_table

DRIVER_SIDE = ("sqlalchemy", "sqlglot", "acid_source.metastore", "acid_source.resolve", "acid_source.scan.planner",
               "acid_source.txn", "acid_source.writes", "acid_source.table", "acid_source.tables",
               "acid_source.heartbeat", "acid_source.completeness", "acid_source.maintenance.compactor",
               "acid_source.maintenance.initiator", "acid_source.maintenance.cleaner", "acid_source.dml.execution")
# write, DML and compaction tasks need no Spark either (a Spark read task is a pyspark object)
NOT_SPARK = DRIVER_SIDE + ("pyspark",)

# The child: unpickle (kind, payload), run it as an executor would, answer (result, loaded modules).
CHILD = """
import pickle, sys
kind, payload = pickle.loads(sys.stdin.buffer.read())
if kind == "read":
    reader, partition = payload
    result = sum(b.num_rows for b in reader.read(partition))
elif kind == "write":  # the staged write Spark ships to its tasks; each asks it for its writer
    staged, task_id, batches = payload
    task = staged.writer(task_id)
    for batch in batches:
        task.write(batch)
    result = task.close()
else:  # a module-level function and its arguments, as Spark pickles them
    function, args = payload
    result = function(*args)
loaded = [m for m in sys.modules if m.startswith({modules!r})]
sys.stdout.buffer.write(pickle.dumps((result, loaded)))
"""


def run_in_fresh_interpreter(kind, payload, modules=NOT_SPARK):
    """Run one task in a new Python process; its result, after checking what it imported."""
    out = subprocess.run([sys.executable, "-c", CHILD.format(modules=modules)],
                         input=pickle.dumps((kind, payload)), capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    result, loaded = pickle.loads(out.stdout)
    assert loaded == [], f"a {kind} task imported driver-side modules: {loaded}"
    return result


@pytest.fixture
def table(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/store.db"
    monkeypatch.setenv("ACIDORC_METASTORE_URL", url)
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64())]), metastoreUrl=url)
    from acid_source.table import AcidTable

    AcidTable.load(path).append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    return path


def ids(path):
    from acid_source.table import AcidTable

    return sorted(AcidTable.load(path).toArrow().column("id").to_pylist())


def test_executor_modules_alone_import_nothing_driver_side():
    """Importing the reader, the visibility filter and the ORC writer loads no planner, store or Spark."""
    code = ("import sys, acid_source.scan.reader, acid_source.scan.visibility, acid_source.orc.writer\n"
            f"print('\\n'.join(m for m in sys.modules if m.startswith({NOT_SPARK!r})))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []


def test_a_spark_read_task_imports_nothing_driver_side(table):
    from pyspark.sql.types import LongType, StructField, StructType

    from acid_source.spark.datasource import AcidOrcDataSource

    reader = AcidOrcDataSource({"path": table}).reader(StructType([StructField("id", LongType())]))
    (partition,) = reader.partitions()
    assert run_in_fresh_interpreter("read", (reader, partition), modules=DRIVER_SIDE) == 3


def test_a_write_task_imports_nothing_driver_side(table):
    """``AcidTable.newWrite``: the pickled staged write runs its writer in the child."""
    from acid_source.table import AcidTable

    batch = pa.RecordBatch.from_pydict({"id": pa.array([4, 5], pa.int64())})
    with AcidTable.load(table).newWrite(mode="append") as staged:
        result = run_in_fresh_interpreter("write", (staged, 0, [batch]))
        staged.commit([result])
    assert ids(table) == [1, 2, 3, 4, 5]


def test_a_dml_task_imports_nothing_driver_side(table, monkeypatch):
    """``AcidTable.delete`` with its one change task (``write_changes``) run in the child."""
    import acid_source.dml.arrow_changes as arrow_changes
    from acid_source.dml.events import write_changes
    from acid_source.table import AcidTable

    shipped = []

    def in_child(plan, task_id, batches):
        shipped.append(plan)
        return run_in_fresh_interpreter("function", (write_changes, (plan, task_id, list(batches))))

    monkeypatch.setattr(arrow_changes, "write_changes", in_child)
    AcidTable.load(table).delete("id = 2")
    assert len(shipped) == 1 and ids(table) == [1, 3]


def test_a_compaction_task_imports_nothing_driver_side(table):
    from acid_source import compact_table
    from acid_source.maintenance.compaction_tasks import run_task
    from acid_source.table import AcidTable

    AcidTable.load(table).append(pa.table({"id": pa.array([4], pa.int64())}))
    shipped = []

    def runner(tasks):
        shipped.extend(tasks)
        return [run_in_fresh_interpreter("function", (run_task, (task,))) for task in tasks]

    metrics = compact_table(table, "major", runTasks=runner)
    assert shipped and metrics["partitions"] and ids(table) == [1, 2, 3, 4]
