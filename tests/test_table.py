"""AcidTable: the engine-free table handle (pyarrow in, pyarrow out, no Spark)."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest
from hivegen import HiveTable

from acid_source import create_table
from acid_source.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    SchemaError,
    TableNotRegisteredError,
)
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())])


def rows(ids, day, name="x"):
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [name] * len(ids), "day": [day] * len(ids)})


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


@pytest.fixture(autouse=True)
def private_store(tmp_path, monkeypatch):
    """Each test its own transaction store (table names are unique per store)."""
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{tmp_path}/store.db")
    Metastore(f"sqlite:///{tmp_path}/store.db").list_tables()  # a named store must exist for reads


@pytest.fixture
def sales(tmp_path):
    create_table(str(tmp_path / "sales"), SCHEMA, partitionColumns=["day"], name="db.sales")
    return AcidTable.load(str(tmp_path / "sales"))


def test_append_scan_count_and_metrics(sales):
    m = sales.append(rows([1, 2], "a"))
    assert (m["operation"], m["writeId"], m["numOutputRows"], m["partitions"]) == ("insert", 1, 2, ["day=a"])
    sales.append(pa.concat_tables([rows([3], "a"), rows([4], "b")]))
    assert ids(sales.toArrow()) == [1, 2, 3, 4]
    assert sales.scan().count() == 4
    assert sales.version == 2
    assert sales.schema.names == ["id", "name", "day"] and sales.partitionColumns == ["day"]


def test_row_filter_and_columns(sales):
    sales.append(pa.concat_tables([rows([1, 2], "a"), rows([3, 4], "b")]))
    got = sales.scan(rowFilter="day = 'b' AND id > 3", columns=["id"]).toArrow()
    assert got.schema.names == ["id"] and got.column("id").to_pylist() == [4]
    assert sales.scan(rowFilter="name IS NULL").count() == 0
    with pytest.raises(InvalidArgumentError, match="rowFilter"):
        sales.scan(rowFilter="nope = 1")
    with pytest.raises(SchemaError, match="colour"):
        sales.scan(columns=["id", "colour"])


def test_a_row_filter_that_fails_on_the_data_is_the_filters_error_not_a_corrupt_file(sales):
    sales.append(pa.concat_tables([rows([1], "a"), rows([2], "7")]))
    with pytest.raises(InvalidArgumentError, match=r"argument 'rowFilter': cannot be evaluated on the rows of "
                                                   r".*day=a.*CAST_INVALID_INPUT"):
        sales.scan(rowFilter="CAST(day AS INT) = 7 AND id > 0").toArrow()


def test_overwrite_table_and_partition(sales):
    sales.append(pa.concat_tables([rows([1], "a"), rows([2], "b")]))
    sales.overwrite(pa.table({"id": pa.array([9], pa.int64()), "name": ["y"]}), partition={"day": "a"})
    assert sorted(zip(*[sales.toArrow().column(c).to_pylist() for c in ("id", "day")])) == [(2, "b"), (9, "a")]
    sales.overwrite(rows([7], "c"))
    assert ids(sales.toArrow()) == [7]


def test_history_is_newest_first_with_utc_times(sales):
    sales.append(rows([1], "a"))
    sales.overwrite(rows([2], "b"))
    h = sales.history()
    assert [(e["version"], e["operation"]) for e in h] == [(2, "insert_overwrite"), (1, "insert")]
    assert h[0]["timestamp"].tzinfo == dt.timezone.utc and h[0]["timestamp"] >= h[1]["timestamp"]
    assert len(sales.history(limit=1)) == 1
    with pytest.raises(InvalidArgumentError, match="limit"):
        sales.history(limit=-1)


def test_load_by_name_and_unknown_name(sales):
    assert AcidTable.load("db.sales").location == sales.location
    with pytest.raises(TableNotRegisteredError):
        AcidTable.load("db.nothing")


def test_bad_data_is_a_typed_error_and_writes_nothing(sales):
    with pytest.raises(InvalidArgumentError, match="data"):
        sales.append([{"id": 1}])
    with pytest.raises(SchemaError, match="missing column 'name'"):
        sales.append(pa.table({"id": pa.array([1], pa.int64()), "day": ["a"]}))
    with pytest.raises(SchemaError, match="case-insensitive"):
        sales.append(pa.table({"id": [1], "ID": [2], "name": ["x"], "day": ["a"]}))
    assert sales.toArrow().num_rows == 0 and os.listdir(sales.location) == []


def test_a_failing_batch_source_aborts_and_leaves_no_files(sales):
    def batches():
        yield rows([1], "a").to_batches()[0]
        raise RuntimeError("upstream failed")

    with pytest.raises(RuntimeError, match="upstream failed"):
        sales.append(batches())
    assert sales.toArrow().num_rows == 0 and os.listdir(sales.location) == []
    assert sales.history() == []


def test_non_null_columns_are_stored_nullable_and_nulls_read_back(tmp_path):
    # Spark marks many columns NOT NULL; Hive columns are nullable, and a later NULL must not
    # make the table unreadable.
    strict = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False)])
    create_table(str(tmp_path / "t"), strict)
    t = AcidTable.load(str(tmp_path / "t"))
    assert all(f.nullable for f in t.schema)
    t.append(pa.table({"id": pa.array([1, None], pa.int64()), "v": ["a", None]}))
    assert sorted(t.toArrow().to_pylist(), key=str) == [{"id": 1, "v": "a"}, {"id": None, "v": None}]


def test_create_only_options_must_match_an_existing_table(tmp_path):
    from acid_source.spark.options import option_errors, write_spec
    from acid_source.writes import stage_write

    create_table(str(tmp_path / "t"), SCHEMA, partitionColumns=["day"])
    schema = rows([1], "a").schema
    for option, value in (("partitionColumns", "name"), ("compression", "zstd"), ("tableType", "insert_only")):
        with pytest.raises(InvalidOptionError, match=option), option_errors():  # as the Spark writer reports it
            stage_write(write_spec({"path": str(tmp_path / "t"), option: value}), overwrite=False,
                        data_schema=schema)
    stage_write(write_spec({"path": str(tmp_path / "t"), "partitionColumns": "DAY"}), overwrite=False,
                data_schema=schema).abort(reason="test")


def test_tables_of_other_engines_read_but_not_written(tmp_path):
    hive = tmp_path / "hive"
    HiveTable(hive, [("id", "bigint"), ("name", "string")]).insert(1, {0: [(1, "a"), (2, "b")]})
    t = AcidTable.load(str(hive))
    assert ids(t.toArrow()) == [1, 2] and t.version is None
    with pytest.raises(TableNotRegisteredError, match="not registered"):
        t.append(pa.table({"id": pa.array([3], pa.int64()), "name": ["c"]}))
    with pytest.raises(InvalidArgumentError, match="versionAsOf"):
        t.scan(versionAsOf=1)


def test_a_table_deleted_by_hand_says_how_to_start_over(tmp_path):
    import shutil

    from acid_source import drop_table

    path = str(tmp_path / "t")
    create_table(path, SCHEMA, partitionColumns=["day"])
    AcidTable.load(path).append(rows([1], "a"))
    shutil.rmtree(path)
    other = pa.table({"key": ["k"]})
    from acid_source.specs import WriteSpec
    from acid_source.writes import stage_write

    with pytest.raises(SchemaError, match="drop_table"):
        stage_write(WriteSpec(path=path), overwrite=False, data_schema=other.schema)
    drop_table(path)
    stage_write(WriteSpec(path=path), overwrite=False, data_schema=other.schema).abort(reason="test")


def test_a_hand_typed_snapshot_keeps_the_stores_aborted_write_ids_hidden(sales):
    from core_read import read_rows

    sales.append(rows([1], "a"))

    def failing():
        yield rows([666], "a").to_batches()[0]
        raise RuntimeError("driver died")

    with pytest.raises(RuntimeError):
        sales.append(failing())
    sales.append(rows([3], "a"))
    # an aborted write's files may still be on disk (a killed driver): simulate by writing them again
    staged = sales.newWrite(mode="append")
    task = staged.writer(0)
    task.write(rows([777], "a").to_batches()[0])
    task.close()
    txn = staged.transaction
    txn.metastore.abort(txn.txn_id, "driver died")  # aborted in the store, files left on disk
    got = read_rows(sales.location, validWriteIds=f"default.sales:{staged.writeId}:9223372036854775807::")
    assert sorted(r["id"] for r in got) == [1, 3]


# --- the staged write (newWrite) ------------------------------------------------------------------
def test_a_staged_write_runs_several_tasks_and_commits_once(sales, tmp_path):
    with sales.newWrite(mode="append") as staged:
        assert staged.schema.names == ["id", "name", "day"] and staged.mode == "append"
        writers = [staged.writer(i) for i in range(2)]
        writers[0].write(rows([1, 2], "a").to_batches()[0])
        writers[1].write(rows([3], "b").to_batches()[0])
        assert ids(sales.toArrow()) == []  # written, not committed: invisible
        m = staged.commit([w.close() for w in writers])
    assert {k: m[k] for k in ("operation", "writeId", "numOutputRows", "numFiles", "partitions")} == {
        "operation": "insert", "writeId": 1, "numOutputRows": 3, "numFiles": 2, "partitions": ["day=a", "day=b"]}
    assert m["txnId"] == staged.txnId and ids(sales.toArrow()) == [1, 2, 3]
    with pytest.raises(Exception, match="committed or aborted already"):
        staged.commit([])
    # one partition: the tasks' batches lack the partition column
    with sales.newWrite(mode="overwrite", partition={"day": "a"}) as staged:
        assert staged.schema.names == ["id", "name"]
        w = staged.writer(0)
        w.write(pa.record_batch({"id": pa.array([9], pa.int64()), "name": ["y"]}))
        assert staged.commit([w.close()])["operation"] == "insert_overwrite"
    assert ids(sales.toArrow()) == [3, 9]


def test_a_staged_write_aborts_on_an_exception_and_leaves_nothing(sales, tmp_path):
    sales.append(rows([1], "a"))
    before = sorted(os.listdir(tmp_path / "sales" / "day=a"))
    with pytest.raises(RuntimeError, match="producer died"):
        with sales.newWrite() as staged:
            w = staged.writer(0)
            w.write(rows([2], "a").to_batches()[0])
            w.close()
            raise RuntimeError("producer died")
    assert staged.transaction.state == "aborted"
    assert sorted(os.listdir(tmp_path / "sales" / "day=a")) == before and ids(sales.toArrow()) == [1]
    with sales.newWrite() as staged:  # a block that ends without a commit aborts too
        staged.writer(0).write(rows([3], "a").to_batches()[0])
    assert staged.transaction.state == "aborted" and ids(sales.toArrow()) == [1]


def test_a_staged_write_checks_each_tasks_batches_and_its_arguments(sales):
    with sales.newWrite() as staged:
        w = staged.writer(0)
        with pytest.raises(SchemaError, match="missing column 'day'"):
            w.write(pa.record_batch({"id": pa.array([1], pa.int64()), "name": ["x"]}))
        with pytest.raises(SchemaError, match="column 'id' is string"):
            w.write(pa.record_batch({"id": ["1"], "name": ["x"], "day": ["a"]}))
        with pytest.raises(InvalidArgumentError, match="taskId"):
            staged.writer(-1)
    with pytest.raises(InvalidArgumentError, match="mode"):
        sales.newWrite(mode="upsert")
    with pytest.raises(InvalidArgumentError, match="partition"):
        sales.newWrite(mode="overwrite", partition={"nope": "a"})


def test_a_pickled_staged_write_commits_in_another_object(sales):
    """What Spark does: tasks and the commit get a pickled copy (a TransactionRef inside, no
    live client), and the commit finds the transaction again."""
    import pickle

    staged = sales.newWrite()
    remote = pickle.loads(pickle.dumps(staged))
    w = pickle.loads(pickle.dumps(remote)).writer(3)
    w.write(rows([5], "c").to_batches()[0])
    m = remote.commit([w.close()])
    assert m["writeId"] == staged.writeId and ids(sales.toArrow()) == [5]


# --- scan options the read options have -----------------------------------------------------------
def test_scan_include_row_id_and_max_split_bytes(sales):
    sales.append(pa.concat_tables([rows(list(range(2000)), "a")]))
    got = sales.scan(columns=["id", "ROW__ID"], includeRowId=True).toArrow()
    assert got.schema.names == ["id", "ROW__ID"]
    assert got.schema.field("ROW__ID").type.names == ["writeId", "bucketId", "rowId"]
    assert sorted(r["rowId"] for r in got.column("ROW__ID").to_pylist()) == list(range(2000))
    assert "ROW__ID" not in sales.scan().schema.names
    assert sales.scan(columns=["id"], includeRowId=True).count() == 2000  # asked for, not selected
    assert sales.scan(maxSplitBytes=1).count() == sales.scan(maxSplitBytes="128m").count() == 2000
    with pytest.raises(InvalidArgumentError, match="maxSplitBytes"):
        sales.scan(maxSplitBytes="lots")
    with pytest.raises(InvalidArgumentError, match="includeRowId"):
        sales.scan(includeRowId="yes")


def test_the_spark_edge_parses_options_into_the_typed_spec_the_python_api_builds():
    from acid_source.spark.options import write_spec
    from acid_source.specs import WriteSpec

    spec = write_spec({"path": "/t", "fs.anon": "true",
                                   "PARTITION": "day=2026-11-21/region=a%2Fb,x=__HIVE_DEFAULT_PARTITION__"})
    assert spec.partition == (("day", "2026-11-21"), ("region", "a/b"), ("x", None))
    assert spec.storage_options == (("anon", "true"),) and spec.given == frozenset()
    assert WriteSpec(path="/t", partition=spec.partition, storage_options=(("anon", "true"),)) == spec
    with pytest.raises(InvalidOptionError, match="'nonsense' is not of the form column=value"):
        write_spec({"path": "/t", "partition": "day=1/nonsense"})


def test_a_partition_column_named_before_data_columns_reads_last_as_hive_orders_it(tmp_path):
    create_table(str(tmp_path / "t"), "id BIGINT, grp STRING, v BIGINT", partitionColumns=["grp"])
    t = AcidTable.load(str(tmp_path / "t"))
    assert t.schema.names == ["id", "v", "grp"]
    t.append(pa.table({"id": [1, 2], "grp": ["g0", "g1"], "v": [5, 6]}))
    got = t.toArrow()
    assert got.schema.names == ["id", "v", "grp"]
    assert sorted(zip(*[got[c].to_pylist() for c in got.schema.names])) == [(1, 5, "g0"), (2, 6, "g1")]
