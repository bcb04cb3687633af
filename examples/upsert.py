"""Upsert: keep a customer table in sync with a feed of changes, the way Delta Lake users do.

1. The first load creates a Hive ACID table partitioned by country (``df.write``).
2. A MERGE applies a batch of changes in one transaction: changed rows are updated (a change of
   country moves the row to another partition), rows flagged as deleted are deleted, new
   customers are inserted.
3. An UPDATE and a DELETE with SQL conditions; then the history, and time travel to the table
   as it was before the MERGE.

Run it with ``./scripts/run-example`` (or ``python examples/upsert.py`` in the project's venv).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import acid_source
from acid_source import AcidTable


def run(spark, root: Path) -> list[tuple]:
    """The whole example against ``spark`` in directory ``root``; returns the final rows."""
    path = str(root / "customers")
    first_load = spark.createDataFrame(
        [(1, "ann@example.com", "FR"), (2, "bob@example.com", "UK"), (3, "cy@example.com", "UK"),
         (4, "dee@example.com", "DE")],
        "id bigint, email string, country string")
    first_load.write.format("acidorc").option("partitionColumns", "country").mode("append").save(path)

    changes = spark.createDataFrame(
        [(2, "bob@new.example.com", "IE", False),   # bob moved to Ireland: updated, new partition
         (3, None, "UK", True),                     # cy asked to be forgotten: deleted
         (5, "eve@example.com", "FR", False),       # a new customer: inserted
         (6, None, "DE", True)],                    # deleting someone we never had: nothing to do
        "id bigint, email string, country string, deleted boolean")

    customers = AcidTable.forPath(spark, path)
    metrics = (customers.alias("t")
               .merge(changes.alias("s"), "t.id = s.id")
               .whenMatchedDelete(condition="s.deleted")
               .whenMatchedUpdate(set={"email": "s.email", "country": "s.country"})
               .whenNotMatchedInsert(condition="NOT s.deleted",
                                     values={"id": "s.id", "email": "s.email", "country": "s.country"})
               .execute())
    print("MERGE:", {k: metrics[k] for k in ("numUpdatedRows", "numDeletedRows", "numInsertedRows",
                                            "writeId", "partitions")})

    print("UPDATE:", customers.update("country = 'DE'", {"email": "upper(email)"})["numUpdatedRows"], "row(s)")
    print("DELETE:", customers.delete("email LIKE '%@new.example.com'")["numDeletedRows"], "row(s)")

    print("The table now:")
    customers.toDF().orderBy("id").show()
    print("History:")
    customers.history().select("version", "operation", "partitions").show(truncate=False)
    print("Before the MERGE (time travel to write id 1):")
    spark.read.format("acidorc").option("versionAsOf", 1).load(path).orderBy("id").show()
    return sorted((r.id, r.email, r.country) for r in customers.toDF().collect())


def main() -> None:
    metastore = tempfile.mkdtemp(prefix="acidorc-upsert-")  # keep the example out of ~/.acidorc
    spark = acid_source.get_or_create_session(appName="acidorc-upsert", master="local[2]",
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
