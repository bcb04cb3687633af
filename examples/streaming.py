"""Streaming: a Python producer streams into a Hive ACID table, Spark streams it into a second
table exactly once, and the change feed shows what an UPDATE did.

1. A producer writes click events the way Flume or NiFi write Hive tables: a streaming
   connection, one transaction per small batch of events (Hive's transaction batches: the
   transactions share growing files, each commit an intermediate footer). One transaction is
   aborted: its rows never show.
2. A Structured Streaming query reads the table as a stream (``readStream.format("acidorc")``)
   and writes it into a second table (``writeStream.format("acidorc")``), one transaction per
   micro-batch, with Trigger.AvailableNow; run again after more commits, it delivers only the
   new ones, each row once.
3. An UPDATE, then the change feed of that commit: a delete and an insert of the same version.

Run it with ``./scripts/run-example`` (or ``python examples/streaming.py`` in the project's venv).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pyarrow as pa

import acid_source
from acid_source import AcidTable


def produce(clicks: AcidTable, first: int, transactions: int) -> None:
    """``transactions`` transactions of 3 events each; the second one is aborted."""
    with clicks.streamingConnection(transactionsPerBatch=transactions) as conn:
        for n in range(transactions):
            conn.beginTransaction()
            ids = [first + 3 * n + i for i in range(3)]
            conn.write(pa.table({"id": pa.array(ids, pa.int64()), "page": [f"/p{i % 4}" for i in ids],
                                 "day": ["2026-11-27"] * 3}))
            if n == 1:
                conn.abortTransaction()  # e.g. the producer's upstream batch failed
            else:
                conn.commitTransaction()  # readers see these rows from now on


def copy_stream(spark, source: str, target: str, checkpoint: str) -> None:
    """The source table's new commits into the target table, exactly once (AvailableNow)."""
    query = (spark.readStream.format("acidorc").load(source)
             .writeStream.format("acidorc").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(target))
    query.awaitTermination()


def run(spark, root: Path) -> dict:
    """The whole example against ``spark`` in directory ``root``; returns what it saw."""
    source, target, checkpoint = str(root / "clicks"), str(root / "clicks_copy"), str(root / "checkpoint")
    acid_source.create_table(source, "id bigint, page string, day string", partitionColumns=["day"])
    clicks = AcidTable.load(source)

    produce(clicks, first=0, transactions=3)  # ids 0-2 and 6-8 committed, 3-5 aborted
    copy_stream(spark, source, target, checkpoint)
    produce(clicks, first=100, transactions=2)  # ids 100-102 committed, 103-105 aborted
    copy_stream(spark, source, target, checkpoint)  # only the new commit
    copied = sorted(r.id for r in spark.read.format("acidorc").load(target).collect())
    print("Copied by the stream:", copied)

    version = clicks.update("id = 7", {"page": "'/checkout'"})["writeId"]
    changes = clicks.changes(startingVersion=version).toArrow().sort_by("_change_type")
    print("Change feed of the UPDATE:")
    for row in changes.select(["_change_type", "_commit_version", "id", "page"]).to_pylist():
        print("  ", row)
    return {"copied": copied, "changes": [(r["_change_type"], r["id"], r["page"]) for r in changes.to_pylist()]}


def main() -> None:
    metastore = tempfile.mkdtemp(prefix="acidorc-streaming-")  # keep the example out of ~/.acidorc
    spark = acid_source.get_or_create_session(appName="acidorc-streaming", master="local[2]",
                                              metastoreUrl=f"sqlite:///{metastore}/metastore.db",
                                              conf={"spark.ui.enabled": "false",
                                                    "spark.ui.showConsoleProgress": "false",
                                                    "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run(spark, Path(tmp))
    finally:
        spark.stop()
        shutil.rmtree(metastore, ignore_errors=True)


if __name__ == "__main__":
    main()
