"""Quickstart.

1. Write an ACID table with acidorc: create it by appending, append again, overwrite one
   partition - each a transaction committed atomically - and read it at the latest snapshot
   and at an older one (time travel); then append and read from plain Python with AcidTable.
2. Read a table in the layout Hive leaves between compactions - a base, deltas and delete
   deltas, an UPDATE and a DELETE, and a write still open whose files are on disk - at its
   latest snapshot and at an older one given as Hive's snapshot string. acidorc's UPDATE /
   DELETE / MERGE in depth: examples/upsert.py.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from decimal import Decimal
from pathlib import Path

import pyarrow as pa

import acid_source


def _orders(rows: list[tuple[int, str, str]]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int32()), "customer": [r[1] for r in rows],
                     "amount": pa.array([Decimal(r[2]) for r in rows], pa.decimal128(10, 2))})


def build_table(root: Path) -> acid_source.StagedWrite:
    """base / delta / delete_delta directories, as Hive leaves them between compactions; returns
    the staged write id 5, whose files are on disk but not committed (abort it when done)."""
    # automatic compaction off for this table: small writes over Hive's thresholds would be
    # compacted right away, and this table is to show each write's own directories
    os.environ["ACIDORC_AUTO_COMPACT"] = "false"
    t = acid_source.AcidTable.create(root / "orders", "id int, customer string, amount decimal(10,2)",
                                     bucketColumns=["id"], numBuckets=2)
    t.append(_orders([(1, "ann", "10.00"), (2, "bob", "25.50"), (3, "cy", "7.25")]))  # write id 1
    t.compact("major")                                                # base_0000001_v...: write id 1
    t.append(_orders([(4, "dee", "99.99"), (5, "eve", "1.00")]))       # write id 2: delta_0000002_...
    t.update("id = 2", {"amount": "30.00"})  # write id 3: the old version deleted, the new inserted
    t.delete("id = 3")                       # write id 4: a delete_delta_0000004_... only
    open_write = t.newWrite()                # write id 5: its files are written, it never commits
    task = open_write.writer(0)
    task.write(_orders([(666, "ghost", "0.00")]))
    task.close()
    return open_write


def write_and_read(spark, root: Path) -> None:
    import datetime as dt

    path = str(root / "events")
    day1, day2 = dt.date(2026, 11, 20), dt.date(2026, 11, 21)
    first = spark.createDataFrame([(1, "click", day1), (2, "view", day1), (3, "click", day2)],
                                  "id bigint, kind string, day date")
    first.write.format("acidorc").option("partitionColumns", "day").mode("append").save(path)  # write id 1
    spark.createDataFrame([(4, "buy", day2)], "id bigint, kind string, day date") \
        .write.format("acidorc").mode("append").save(path)                                     # write id 2
    spark.createDataFrame([(5, "refund", day1)], "id bigint, kind string, day date") \
        .write.format("acidorc").mode("overwrite").option("partitionOverwriteMode", "dynamic") \
        .save(path)                                                                             # write id 3
    print("Written by acidorc:", sorted(str(p.relative_to(root / "events")) for p in (root / "events").glob("*/*")))
    print("Latest snapshot (day 2026-11-20 was overwritten by write id 3):")
    spark.read.format("acidorc").load(path).orderBy("id").show()
    print("As of write id 2 (time travel):")
    spark.read.format("acidorc").option("versionAsOf", 2).load(path).orderBy("id").show()

    # The same table from plain Python (pyarrow, no Spark): append, filter, history.
    import pyarrow as pa

    table = acid_source.AcidTable.load(path)
    table.append(pa.table({"id": pa.array([6], pa.int64()), "kind": ["view"], "day": [day2]}))  # write id 4
    print("AcidTable, clicks and views of 2026-11-21:",
          table.scan(rowFilter="day = DATE '2026-11-21' AND kind IN ('click', 'view')", columns=["id", "kind"])
          .toArrow().sort_by("id").to_pylist())
    print("History:", [(h["version"], h["operation"]) for h in table.history()])


def main() -> None:
    # keep the example's transactions out of the default metastore (~/.acidorc)
    metastore = tempfile.mkdtemp(prefix="acidorc-quickstart-")
    spark = acid_source.get_or_create_session(appName="acidorc-quickstart", master="local[2]",
                                              metastoreUrl=f"sqlite:///{metastore}/metastore.db",
                                              conf={"spark.ui.enabled": "false",
                                                    "spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_and_read(spark, root)
        open_write = build_table(root)
        path = str(root / "orders")
        print("Table directories:", sorted(p.name for p in (root / "orders").iterdir() if not p.name.startswith(".")))

        print("\nAt the latest snapshot (write id 5 is open: its rows are on disk, not in the snapshot):")
        spark.read.format("acidorc").load(path).orderBy("id").show()

        before_update = (spark.read.format("acidorc")
                         .option("validWriteIds", "default.orders:2:9223372036854775807::")  # Hive's form
                         .load(path))
        print("As of write id 2 (before the update and the delete):")
        before_update.orderBy("id").show()

        spark.sql(f"CREATE TEMPORARY VIEW orders USING acidorc OPTIONS (path '{path}', includeRowId 'true')")
        print("Through SQL, with Hive's ROW__ID:")
        spark.sql("SELECT id, customer, amount, ROW__ID FROM orders ORDER BY id").show(truncate=False)
        open_write.abort()  # write id 5 aborted: its files are removed
    spark.stop()
    shutil.rmtree(metastore, ignore_errors=True)


if __name__ == "__main__":
    main()
