"""A scan handed to the engines users have: the Arrow PyCapsule stream (DuckDB, Polars and
pyarrow read it as it is) and the toPandas / toPolars / toDuckDB conveniences, on random
histories against a literal model; the read lease is held while the stream is consumed."""

from __future__ import annotations

import os
import sys

import duckdb
import polars
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from properties import examples

from acid_source import create_table
from acid_source.errors import UnsupportedOperationError
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("day", pa.string())])


@pytest.fixture(autouse=True)
def private_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{tmp_path}/store.db")
    Metastore(f"sqlite:///{tmp_path}/store.db").list_tables()


operation = st.one_of(
    st.tuples(st.just("append"), st.lists(st.integers(0, 40), min_size=1, max_size=6, unique=True),
              st.sampled_from(["a", "b"])),
    st.tuples(st.just("delete"), st.integers(2, 5), st.integers(0, 4)),
    st.tuples(st.just("update"), st.integers(2, 5), st.integers(0, 4)),
)


@examples(25, suppress=[HealthCheck.function_scoped_fixture])
@given(history=st.lists(operation, min_size=1, max_size=8))
def test_duckdb_polars_and_pyarrow_read_a_scan_as_the_model_says(tmp_path_factory, history):
    path = str(tmp_path_factory.mktemp("t") / "t")
    create_table(path, SCHEMA, partitionColumns=["day"])
    table = AcidTable.load(path)
    rows: list[tuple[int, int, str]] = []
    for op in history:
        if op[0] == "append":
            new = [(i, i * 10, op[2]) for i in op[1]]
            table.append(pa.table({"id": pa.array([r[0] for r in new], pa.int64()),
                                   "v": pa.array([r[1] for r in new], pa.int64()), "day": [r[2] for r in new]}))
            rows += new
        elif op[0] == "delete":
            table.delete(f"id % {op[1]} = {min(op[2], op[1] - 1)}")
            rows = [r for r in rows if r[0] % op[1] != min(op[2], op[1] - 1)]
        else:
            table.update(f"id % {op[1]} = {min(op[2], op[1] - 1)}", {"v": "v + 1"})
            rows = [(i, v + 1 if i % op[1] == min(op[2], op[1] - 1) else v, d) for i, v, d in rows]
    expected = sorted(rows)

    scan = table.scan()
    got = duckdb.sql("select id, v, day from scan").fetchall()  # a Python variable holding a scan
    assert sorted(got) == expected
    assert sorted(polars.DataFrame(scan).select(["id", "v", "day"]).rows()) == expected
    reader = pa.RecordBatchReader.from_stream(scan)
    assert sorted(zip(*reader.read_all().select(["id", "v", "day"]).to_pydict().values())) == expected
    assert sorted(scan.toPolars().select(["id", "v", "day"]).rows()) == expected
    assert sorted(scan.toDuckDB().fetchall()) == expected
    pandas = scan.toPandas()
    assert sorted(zip(pandas["id"], pandas["v"], pandas["day"])) == expected


def test_a_filtered_projected_scan_streams_its_columns_and_holds_its_lease_while_read(tmp_path):
    path = str(tmp_path / "t")
    create_table(path, SCHEMA, partitionColumns=["day"])
    table = AcidTable.load(path)
    for day in ("a", "b", "c"):
        table.append(pa.table({"id": pa.array(range(3), pa.int64()), "v": pa.array([1, 2, 3], pa.int64()),
                               "day": [day] * 3}))
    scan = table.scan(rowFilter="day <> 'b' AND v > 1", columns=["v", "day"])
    assert duckdb.sql("select day, sum(v) from scan group by day order by day").fetchall() == [("a", 5), ("c", 5)]
    store = Metastore(os.environ["ACIDORC_METASTORE_URL"])
    table_id = store.get_table(path).table_id
    reader = pa.RecordBatchReader.from_stream(scan)
    assert reader.schema.names == ["v", "day"]
    assert len(store.live_leases(table_id)) == 1  # the scan's, from its snapshot on
    first = reader.read_next_batch()
    assert first.num_rows > 0 and len(store.live_leases(table_id)) == 1  # the same, while the stream is consumed
    for _ in reader:
        pass
    assert len(store.live_leases(table_id)) == 1
    scan.close()
    assert store.live_leases(table_id) == []
    assert duckdb.connect().execute("select 1").fetchall() == [(1,)]
    assert scan.toDuckDB(duckdb.connect()).aggregate("count(*)").fetchall() == [(4,)]


def test_a_missing_engine_names_the_extra_that_installs_it(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    create_table(path, SCHEMA)
    monkeypatch.setitem(sys.modules, "polars", None)  # what an import of a missing module finds
    with pytest.raises(UnsupportedOperationError, match=r"pip install 'acidorc\[polars\]'"):
        AcidTable.load(path).scan().toPolars()
