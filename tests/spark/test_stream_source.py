"""spark.readStream.format("acidorc"): every committed row exactly once, across restarts from
the checkpoint, including a lower write id that commits after a higher one; DML commits fail,
are skipped, or come as change rows; read limits and Trigger.AvailableNow."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.table import AcidTable

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


def rows(ids, day="a"):
    return pa.table({"id": pa.array(ids, pa.int64()), "day": [day] * len(ids)})


class Stream:
    """A streaming read of ``table`` into a parquet sink (exactly once by its own log), run
    with Trigger.AvailableNow from one checkpoint, again and again."""

    def __init__(self, spark, table, tmp_path, **options):
        self.spark, self.table, self.options = spark, str(table), options
        self.out, self.checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
        self.batches = 0

    def run(self):
        reader = self.spark.readStream.format("acidorc")
        for k, v in self.options.items():
            reader = reader.option(k, v)
        query = (reader.load(self.table).writeStream.format("parquet").option("path", self.out)
                 .option("checkpointLocation", self.checkpoint).trigger(availableNow=True).start())
        query.awaitTermination()
        self.batches += sum(1 for p in query.recentProgress if p["numInputRows"] > 0)
        return query

    def rows(self, *columns):
        if not os.path.exists(self.out):
            return []
        got = self.spark.read.parquet(self.out)
        return sorted(tuple(r) for r in got.select(*(columns or got.columns)).collect())


@pytest.fixture
def table(tmp_path):
    create_table(str(tmp_path / "t"), SCHEMA, partitionColumns=["day"])
    return AcidTable.load(str(tmp_path / "t"))


def test_the_table_as_it_is_then_each_new_commit_exactly_once_across_restarts_or_from_latest(spark, table, tmp_path):
    table.append(rows([1, 2]))
    stream = Stream(spark, table.location, tmp_path)
    stream.run()
    assert stream.rows("id", "day") == [(1, "a"), (2, "a")]
    table.append(rows([3], "b"))
    table.append(rows([4]))
    stream.run()  # a restart from the checkpoint
    stream.run()  # nothing new: nothing again
    assert stream.rows("id", "day") == [(1, "a"), (2, "a"), (3, "b"), (4, "a")]
    latest = Stream(spark, table.location, tmp_path / "latest", startingVersion="latest")
    latest.run()  # what is there is skipped
    table.append(rows([5]))
    latest.run()
    assert latest.rows("id") == [(5,)]


def test_a_lower_write_id_that_commits_after_a_higher_one_is_delivered_once(spark, table, tmp_path):
    stream = Stream(spark, table.location, tmp_path, startingVersion="1")
    slow = table.newWrite()  # write id 1, open
    writer = slow.writer(0)
    writer.write(rows([10]))
    table.append(rows([20]))  # write id 2, committed first
    stream.run()
    assert stream.rows("id") == [(20,)]
    slow.commit([writer.close()])
    stream.run()
    assert stream.rows("id") == [(10,), (20,)]


def test_dml_commits_fail_the_stream_unless_skipped_or_read_as_change_rows(spark, table, tmp_path):
    table.append(rows([1, 2]))
    table.update("id = 2", {"id": "22"})  # write id 2: a delete and an insert
    table.append(rows([3]))
    failing = Stream(spark, table.location, tmp_path / "f", startingVersion="1")
    with pytest.raises(Exception, match=r"write id 2 updated or deleted rows.*readChangeFeed=true.*skipChangeCommits"):
        failing.run()
    skipping = Stream(spark, table.location, tmp_path / "s", startingVersion="1", skipChangeCommits="true")
    skipping.run()
    assert skipping.rows("id") == [(1,), (2,), (3,)]
    changes = Stream(spark, table.location, tmp_path / "c", startingVersion="1", readChangeFeed="true")
    changes.run()
    assert changes.rows("id", "_change_type", "_commit_version") == [
        (1, "insert", 1), (2, "delete", 2), (2, "insert", 1), (3, "insert", 3), (22, "insert", 2)]


def test_read_limits_split_the_backlog_into_micro_batches(spark, table, tmp_path):
    for i in range(4):
        table.append(rows([i, i + 100]))
    by_ids = Stream(spark, table.location, tmp_path / "w", startingVersion="1", maxWriteIdsPerTrigger="1")
    by_ids.run()
    assert by_ids.batches == 4 and len(by_ids.rows()) == 8
    by_rows = Stream(spark, table.location, tmp_path / "r", startingVersion="1", maxRowsPerTrigger="3")
    by_rows.run()
    assert by_rows.batches == 2 and len(by_rows.rows()) == 8  # whole write ids: 2 + 2 rows >= 3


def test_bad_stream_options_are_typed_errors(spark, table, tmp_path):
    table.append(rows([1]))
    for options, match in (({"maxRowsPerTrigger": "0"}, "maxRowsPerTrigger"),
                           ({"versionAsOf": "1"}, "batch read option"),
                           ({"startingVersion": "x"}, "startingVersion")):
        with pytest.raises(Exception, match=match):
            Stream(spark, table.location, tmp_path / match, **options).run()


def test_an_open_streaming_batch_is_delivered_transaction_by_transaction(spark, table, tmp_path):
    conn = table.streamingConnection(transactionsPerBatch=3)  # write ids 1..3 open at once
    conn.beginTransaction()
    conn.write(rows([1]))
    conn.commitTransaction()
    stream = Stream(spark, table.location, tmp_path, startingVersion="1")
    stream.run()  # write id 1 committed, 2 and 3 open: pending in the offset
    assert stream.rows("id") == [(1,)]
    conn.beginTransaction()
    conn.write(rows([2]))
    conn.abortTransaction()
    conn.beginTransaction()
    conn.write(rows([3], "b"))
    conn.commitTransaction()
    conn.close()
    table.append(rows([4]))
    stream.run()
    assert stream.rows("id", "day") == [(1, "a"), (3, "b"), (4, "a")]


def test_change_rows_across_restarts_each_commit_once(spark, table, tmp_path):
    table.append(rows([1, 2]))
    stream = Stream(spark, table.location, tmp_path, readChangeFeed="true")
    stream.run()  # the table as it is: inserts of version 1
    table.delete("id = 1")
    stream.run()
    table.update("id = 2", {"day": "'b'"})  # moves the row to another partition
    stream.run()
    assert stream.rows("id", "day", "_change_type", "_commit_version") == [
        (1, "a", "delete", 2), (1, "a", "insert", 1), (2, "a", "delete", 3), (2, "a", "insert", 1),
        (2, "b", "insert", 3)]
