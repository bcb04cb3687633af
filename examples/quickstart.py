"""Quickstart.

1. Write an ACID table with acidorc: create it by appending, append again, overwrite one
   partition - each a transaction committed atomically - and read it at the latest snapshot
   and at an older one (time travel); then append and read from plain Python with AcidTable.
2. Read a table the way Hive writes it, with an UPDATE and a DELETE (base / delta /
   delete_delta directories; built here with the test generator tests/hivegen.py, file by
   file, to show the layout). acidorc's own UPDATE / DELETE / MERGE: examples/upsert.py.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hivegen import Event, HiveTable, bucket_property  # noqa: E402

import acid_source  # noqa: E402


def build_table(root: Path) -> None:
    t = HiveTable(root / "orders", [("id", "int"), ("customer", "string"), ("amount", "decimal(10,2)")])
    # write id 1 (later major-compacted): three orders in bucket 0
    from decimal import Decimal

    base = [Event(0, 1, bucket_property(0), i, 1, (i + 1, c, Decimal(a)))
            for i, (c, a) in enumerate([("ann", "10.00"), ("bob", "25.50"), ("cy", "7.25")])]
    t.base(1, {0: base})
    # write id 2: two new orders in buckets 0 and 1
    t.insert(2, {0: [(4, "dee", Decimal("99.99"))], 1: [(5, "eve", Decimal("1.00"))]})
    # write id 3: UPDATE order 2 (split update: delete the old version, insert the new one)
    t.delete(3, [(1, bucket_property(0), 1)])
    t.insert(3, {0: [(2, "bob", Decimal("30.00"))]})
    # write id 4: DELETE order 3
    t.delete(4, [(1, bucket_property(0), 2)])
    # write id 5: aborted - its files exist but no reader may see them
    t.insert(5, {0: [(666, "ghost", Decimal("0.00"))]})


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
        build_table(root)
        path = str(root / "orders")
        print("Table directories:", sorted(p.name for p in (root / "orders").iterdir()))

        latest = (spark.read.format("acidorc")
                  .option("validWriteIds", "default.orders:5:9223372036854775807::5")  # 5 aborted
                  .load(path))
        print("\nAt the latest snapshot (write id 5 aborted):")
        latest.orderBy("id").show()

        before_update = (spark.read.format("acidorc")
                         .option("validWriteIds", "default.orders:2:9223372036854775807::")
                         .load(path))
        print("As of write id 2 (before the update and the delete):")
        before_update.orderBy("id").show()

        spark.sql(f"CREATE TEMPORARY VIEW orders USING acidorc OPTIONS (path '{path}', "
                  "validWriteIds 'default.orders:5:9223372036854775807::5', includeRowId 'true')")
        print("Through SQL, with Hive's ROW__ID:")
        spark.sql("SELECT id, customer, amount, ROW__ID FROM orders ORDER BY id").show(truncate=False)
    spark.stop()
    shutil.rmtree(metastore, ignore_errors=True)


if __name__ == "__main__":
    main()
