"""Quickstart: build a small Hive ACID table with several transactions, then read it with
spark.read.format("acidorc") - at the latest snapshot and at an older one.

The table is written the way Hive writes it (base / delta / delete_delta directories of ACID
ORC files), using the test generator in tests/hivegen.py, since acidorc's own writer is still
to come.
"""

from __future__ import annotations

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


def main() -> None:
    spark = acid_source.get_or_create_session(app_name="acidorc-quickstart", master="local[2]",
                                              conf={"spark.ui.enabled": "false",
                                                    "spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
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


if __name__ == "__main__":
    main()
