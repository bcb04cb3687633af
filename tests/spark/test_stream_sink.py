"""The Structured Streaming sink (``df.writeStream.format("acidorc")``): one transaction per
non-empty micro-batch, recorded with the query's identity and batch id so that a replayed batch
commits nothing twice. Sources are directories of JSON files read one file per micro-batch
(``maxFilesPerTrigger=1``, ``Trigger.AvailableNow``): deterministic batches, no timing."""

from __future__ import annotations

import json
import os
import pickle
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from acid_source import AcidTable
from acid_source.metastore import Metastore

pytestmark = pytest.mark.spark

SCHEMA_DDL = "id BIGINT, grp STRING, v BIGINT"


def add_file(src: Path, name: str, rows: list[dict]) -> None:
    """A new input file, renamed into place whole (the file source skips dot-files)."""
    src.mkdir(parents=True, exist_ok=True)
    tmp = src / f".{name}.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.rename(tmp, src / f"{name}.json")


def rows_of(ids, grp_mod: int = 3) -> list[dict]:
    return [{"id": i, "grp": f"g{i % grp_mod}", "v": i * 10} for i in ids]


def stream_all(spark, src: Path, path: str, checkpoint: Path, **options):
    """Run the query over every file not processed yet (one file per micro-batch) and wait
    for it to end; returns the finished query."""
    df = spark.readStream.schema(SCHEMA_DDL).option("maxFilesPerTrigger", 1).json(str(src))
    writer = df.writeStream.format("acidorc").option("checkpointLocation", str(checkpoint))
    for k, v in options.items():
        writer = writer.option(k, v)
    query = writer.trigger(availableNow=True).start(path)
    try:
        assert query.awaitTermination(180), "the query did not finish"
    finally:
        query.stop()
    return query


def table_ids(path: str) -> list[int]:
    return sorted(AcidTable.load(path).toArrow().column("id").to_pylist())


def no_open_writes(path: str) -> bool:
    table = Metastore().find_table(AcidTable.load(path).location)
    return Metastore().write_ids_of(table.table_id, "open") == []


def test_each_micro_batch_commits_once_and_a_restart_goes_on(spark, tmp_path):
    src, ck, path = tmp_path / "in", tmp_path / "ck", str(tmp_path / "t")
    for b in range(3):
        add_file(src, f"f{b}", rows_of(range(b * 10, b * 10 + 10)))
    query = stream_all(spark, src, path, ck)
    assert table_ids(path) == list(range(30))
    history = AcidTable.load(path).history()
    assert [h["operation"] for h in history] == ["insert"] * 3  # one write id per micro-batch
    writes = sorted(h["version"] for h in history)
    from acid_source.spark.stream_writer import sink_id_for_query

    store = Metastore()
    sink = sink_id_for_query(query.id)
    committed = {b: store.sink_batch(sink, b) for b in range(3)}
    assert sorted(committed.values()) == sorted(h["txnId"] for h in history)
    assert store.last_sink_batch(sink) == 2

    # restarted from its checkpoint: only the new file, as batch 3 of the same sink
    add_file(src, "f3", rows_of(range(30, 35)))
    again = stream_all(spark, src, path, ck)
    assert again.id == query.id
    assert table_ids(path) == list(range(35))
    history = AcidTable.load(path).history()
    assert len(history) == 4 and max(h["version"] for h in history) > max(writes)
    assert store.last_sink_batch(sink) == 3
    assert no_open_writes(path)


def test_an_empty_micro_batch_commits_nothing(spark, tmp_path):
    src, ck, path = tmp_path / "in", tmp_path / "ck", str(tmp_path / "t")
    add_file(src, "a", rows_of(range(3)))
    add_file(src, "b", [])  # a micro-batch of no rows
    add_file(src, "c", rows_of(range(3, 5)))
    query = stream_all(spark, src, path, ck)
    assert table_ids(path) == list(range(5))
    assert len(AcidTable.load(path).history()) == 2
    from acid_source.spark.stream_writer import sink_id_for_query

    store = Metastore()
    assert [store.sink_batch(sink_id_for_query(query.id), b) is not None for b in range(3)] == [True, False, True]
    assert no_open_writes(path)


def test_partitioned_and_bucketed_tables_route_rows_as_a_batch_write(spark, tmp_path):
    from acid_source import create_table

    src, ck = tmp_path / "in", tmp_path / "ck"
    streamed, batch = str(tmp_path / "streamed"), str(tmp_path / "batch")
    rows = rows_of(range(40))
    for b in range(2):
        add_file(src, f"f{b}", rows[b * 20:(b + 1) * 20])
    stream_all(spark, src, streamed, ck, partitionColumns="grp", bucketColumns="id", numBuckets="4")
    # the partition column last, as the sink created its table
    create_table(batch, "id BIGINT, v BIGINT, grp STRING", partitionColumns=["grp"], bucketColumns=["id"],
                 numBuckets=4)
    assert AcidTable.load(streamed).schema.names == ["id", "v", "grp"]
    AcidTable.load(batch).append(pa.Table.from_pylist(rows, pa.schema([("id", pa.int64()), ("v", pa.int64()),
                                                                       ("grp", pa.string())])))

    def placement(path):
        # each row's partition and bucket (bits 16-27 of ROW__ID's bucketId, BucketCodec V1)
        t = AcidTable.load(path).scan(includeRowId=True).toArrow().to_pylist()
        return sorted((r["id"], r["grp"], (r["ROW__ID"]["bucketId"] >> 16) & 0xFFF) for r in t)

    assert table_ids(streamed) == list(range(40))
    assert placement(streamed) == placement(batch)
    assert len({b for _, _, b in placement(streamed)}) == 4
    assert sorted(p.name for p in Path(streamed).iterdir() if not p.name.startswith((".", "_"))) == \
        ["grp=g0", "grp=g1", "grp=g2"]


def test_a_replayed_batch_commits_nothing_and_leaves_no_files(spark, tmp_path):
    """What Spark does after a crash between the sink's commit and its own commit log: the
    same batch id again, written by new tasks into a new transaction."""
    from acid_source.spark.stream_writer import AcidStreamCommitMessage, make_stream_writer, sink_id_for_query

    src, ck, path = tmp_path / "in", tmp_path / "ck", str(tmp_path / "t")
    add_file(src, "f0", rows_of(range(5)))
    add_file(src, "f1", rows_of(range(5, 9)))
    query = stream_all(spark, src, path, ck)
    before = AcidTable.load(path).history()
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL(SCHEMA_DDL)
    options = {"path": path, "checkpointlocation": str(ck)}
    # the planning side: the writer pickled for the tasks opens the replay's transaction
    planned = pickle.loads(pickle.dumps(make_stream_writer(options, schema, False)))
    staged = planned._staged
    task = staged.writer(0)
    task.write(pa.record_batch({"id": pa.array([5, 6], pa.int64()), "grp": ["g2", "g0"], "v": pa.array([50, 60])}))
    message = AcidStreamCommitMessage(task.close(), staged, sink_id_for_query(query.id), 1)
    written = list(Path(path).glob(f"delta_{staged.writeId:07d}_*"))
    assert written  # the replay's files are there before its commit
    # the commit side: a fresh writer, as Spark's commit process builds it
    make_stream_writer(options, schema, False).commit([pickle.loads(pickle.dumps(message))], 1)
    assert table_ids(path) == list(range(9))
    assert AcidTable.load(path).history() == before
    assert not any(p.exists() for p in written) and not list(Path(path).glob(f"delta_{staged.writeId:07d}_*"))
    assert Metastore().txn_state(staged.txnId) == "aborted"
    assert no_open_writes(path)


def test_dml_and_compaction_run_while_the_query_streams(spark, tmp_path):
    """Inserts never conflict: an UPDATE, a DELETE and a major compaction commit while the
    query is running and committing, and every micro-batch commits too."""
    src, ck, path = tmp_path / "in", tmp_path / "ck", str(tmp_path / "t")
    add_file(src, "f00", rows_of(range(10)))
    df = spark.readStream.schema(SCHEMA_DDL).option("maxFilesPerTrigger", 1).json(str(src))
    query = df.writeStream.format("acidorc").option("checkpointLocation", str(ck)).start(path)
    errors: list[BaseException] = []
    try:
        query.processAllAvailable()
        table = AcidTable.load(path)
        feeder_done = threading.Event()

        def feed():  # new micro-batches while the test thread runs DML and compaction
            try:
                for b in range(1, 6):
                    add_file(src, f"f{b:02d}", rows_of(range(b * 10, b * 10 + 10)))
            except BaseException as exc:
                errors.append(exc)
            finally:
                feeder_done.set()

        feeder = threading.Thread(target=feed)
        feeder.start()
        table.update("id < 5", {"v": "-1"})
        table.delete("id = 9")
        table.compact("major")
        feeder.join(60)
        assert feeder_done.is_set() and not errors
        query.processAllAvailable()
    finally:
        query.stop()
    result = AcidTable.load(path).toArrow().sort_by("id")
    expected = [i for i in range(60) if i != 9]
    assert result.column("id").to_pylist() == expected
    assert result.column("v").to_pylist() == [-1 if i < 5 else i * 10 for i in expected]
    ops = [h["operation"] for h in AcidTable.load(path).history()]
    assert ops.count("insert") == 6
    assert no_open_writes(path)


@pytest.mark.parametrize("case", ["complete_mode", "bad_option", "options_disagree_with_table", "to_table"])
def test_refusals_are_typed_and_write_nothing(spark, tmp_path, case):
    from pyspark.errors import StreamingQueryException

    src, ck, path = tmp_path / "in", tmp_path / "ck", str(tmp_path / "t")
    add_file(src, "f0", rows_of(range(4)))
    df = spark.readStream.schema(SCHEMA_DDL).json(str(src))
    if case == "options_disagree_with_table":
        spark.read.schema(SCHEMA_DDL).json(str(src)).write.format("acidorc").mode("append").save(path)
    writer = (df.groupBy("grp").count() if case == "complete_mode" else df).writeStream.format("acidorc") \
        .option("checkpointLocation", str(ck))
    expected = {
        "complete_mode": "UnsupportedOperationError: streaming write in complete or update output mode",
        "bad_option": "InvalidOptionError: option 'numBuckets'",
        "options_disagree_with_table": "partitionColumns",
        "to_table": "InvalidOptionError: option 'path'.*toTable",
    }[case]
    with pytest.raises(StreamingQueryException, match=expected):
        if case == "complete_mode":
            query = writer.outputMode("complete").start(path)
        elif case == "bad_option":
            query = writer.option("bucketColumns", "id").option("numBuckets", "many").start(path)
        elif case == "options_disagree_with_table":
            query = writer.option("partitionColumns", "grp").start(path)
        else:
            query = writer.toTable(f"stream_sink_{os.getpid()}")
        try:
            query.processAllAvailable()
        finally:
            query.stop()
    if case == "options_disagree_with_table":
        assert table_ids(path) == list(range(4)) and len(AcidTable.load(path).history()) == 1
        assert no_open_writes(path)
    else:
        assert not Path(path).exists() or not any(Path(path).glob("delta_*"))


def test_no_checkpoint_location_is_refused_by_spark(spark, tmp_path):
    """Spark itself requires a checkpoint for this sink (the option or
    spark.sql.streaming.checkpointLocation): the query's id lives there, which the sink's
    exactly-once bookkeeping is keyed by."""
    from pyspark.errors import AnalysisException

    src = tmp_path / "in"
    add_file(src, "f0", rows_of(range(2)))
    df = spark.readStream.schema(SCHEMA_DDL).json(str(src))
    with pytest.raises(AnalysisException, match="checkpointLocation"):
        df.writeStream.format("acidorc").start(str(tmp_path / "t"))


def test_a_failed_micro_batch_is_aborted_and_replayed_once(spark, tmp_path):
    """A batch whose only task fails reaches Spark's abort without a commit message, so the
    sink cannot find its transaction there: it is aborted when the restarted query plans its
    next micro-batch (in Spark's reused planning worker), and the replay commits the rows once."""
    from pyspark.errors import StreamingQueryException
    from pyspark.sql.functions import col, udf

    src, ck, path = tmp_path / "in", tmp_path / "ck", str(tmp_path / "t")
    flag = tmp_path / "fail"
    add_file(src, "f0", rows_of(range(3)))
    from acid_source import create_table

    create_table(path, SCHEMA_DDL)

    @udf("bigint")
    def fail_while_flagged(v):
        if os.path.exists(str(flag)):
            raise RuntimeError("the test's failing task")
        return v

    def run():
        df = spark.readStream.schema(SCHEMA_DDL).json(str(src)).withColumn("v", fail_while_flagged(col("v")))
        query = df.writeStream.format("acidorc").option("checkpointLocation", str(ck)) \
            .trigger(availableNow=True).start(path)
        try:
            query.awaitTermination(180)
        finally:
            query.stop()

    flag.touch()
    with pytest.raises(StreamingQueryException, match="the test's failing task"):
        run()
    assert not no_open_writes(path)  # the failed batch's transaction: open, nobody reported it
    flag.unlink()
    run()
    assert table_ids(path) == [0, 1, 2]
    assert no_open_writes(path)
    table = Metastore().find_table(AcidTable.load(path).location)
    assert len(Metastore().write_ids_of(table.table_id, "aborted")) == 1


def test_two_queries_stream_into_one_table(spark, tmp_path):
    """Two running queries (two sinks) and a batch append on one table: inserts never
    conflict, and neither query's bookkeeping touches the other's transactions."""
    path = str(tmp_path / "t")
    queries = []
    try:
        for q in range(2):
            src = tmp_path / f"in{q}"
            add_file(src, "f0", rows_of(range(q * 100, q * 100 + 5)))
            df = spark.readStream.schema(SCHEMA_DDL).option("maxFilesPerTrigger", 1).json(str(src))
            queries.append(df.writeStream.format("acidorc").option("checkpointLocation", str(tmp_path / f"ck{q}"))
                           .start(path))
        for q, query in enumerate(queries):
            add_file(tmp_path / f"in{q}", "f1", rows_of(range(q * 100 + 5, q * 100 + 10)))
        spark.createDataFrame(rows_of(range(500, 503))).select("id", "grp", "v") \
            .write.format("acidorc").mode("append").save(path)
        for query in queries:
            query.processAllAvailable()
    finally:
        for query in queries:
            query.stop()
    assert table_ids(path) == [*range(10), *range(100, 110), *range(500, 503)]
    assert len(AcidTable.load(path).history()) == 5
    assert no_open_writes(path)
