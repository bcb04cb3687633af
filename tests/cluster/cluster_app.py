"""A Spark application in client deploy mode, run by ``test_cluster.py`` as a subprocess (one
SparkContext per process: the test process already hosts the local one).

It reads its settings as JSON on standard input (so the object store's secret never shows on
a command line): ``master_url``, ``table_url``, ``store_url``, ``storage_options`` (fsspec's,
nested as s3fs takes them; given to Spark as ``fs.<a>.<b>`` string options), ``steps`` (the
data of each step), ``java_options`` (the driver's and executors' JVM flags).
It configures Spark only through the SparkSession's conf and acidorc through its arguments and
options -- nothing in the executors' environment -- then writes, reads, updates, deletes,
merges, compacts and vacuums one partitioned table and writes one JSON document to the file
``output``: the rows read after the writes, the UPDATE, the DELETE and the MERGE and after the
compactions and the vacuum (the whole table, one partition, ``toDF``), each operation's metrics
and what the executors' Python workers saw of their environment. The test compares the rows
with its own model.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    settings = json.load(sys.stdin)
    from pyspark.sql import Row

    import acid_source
    from acid_source import AcidTable

    t0 = time.monotonic()
    spark = acid_source.get_or_create_session(
        appName="acidorc-cluster-test",
        master=settings["master_url"],
        conf={
            "spark.executor.memory": "1g",
            "spark.executor.cores": "1",
            "spark.cores.max": "1",
            "spark.driver.memory": "1g",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.session.timeZone": "UTC",
            # the tests' JIT and GC flags (tests/servers/jvm.py), for the driver and the executors
            "spark.driver.extraJavaOptions": settings["java_options"],
            "spark.executor.extraJavaOptions": settings["java_options"],
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    out: dict = {"timings": {"session": time.monotonic() - t0}}

    url, store = settings["table_url"], settings["store_url"]
    storage = settings["storage_options"]
    fs_options = spark_storage_options(storage)
    steps = settings["steps"]
    schema = "id bigint, kind string, amount bigint, day string"

    def frame(rows):
        return spark.createDataFrame([Row(**r) for r in rows], schema)

    def read(**options) -> list[dict]:
        # collected at once: no lease needed to keep the snapshot's files from the cleaner
        reader = (spark.read.format("acidorc").option("metastoreUrl", store).option("readLeaseSeconds", "0")
                  .options(**fs_options))
        for key, value in options.items():
            reader = reader.option(key, value)
        return [r.asDict() for r in reader.load(url).orderBy("id").collect()]

    def timed(name, action):
        started = time.monotonic()
        result = action()
        out["timings"][name] = time.monotonic() - started
        print(f"acidorc cluster app: {name} {out['timings'][name]:.1f}s", file=sys.stderr, flush=True)
        return result

    def write(rows, create: bool):
        writer = frame(rows).write.format("acidorc").mode("append").option("metastoreUrl", store).options(**fs_options)
        if create:
            writer = writer.option("partitionColumns", "day")
        writer.save(url)

    # 1. create by the first write, a second append, read
    timed("write_create", lambda: write(steps["first"], create=True))
    timed("write_append", lambda: write(steps["second"], create=False))
    out["after_writes"] = timed("read_after_writes", read)

    table = AcidTable.forPath(spark, url, metastoreUrl=store, storageOptions=storage)
    # 2. UPDATE, DELETE, MERGE as Spark jobs
    out["update"] = timed("update", lambda: table.update(steps["update"]["condition"], steps["update"]["set"]))
    out["after_update"] = timed("read", read)
    out["delete"] = timed("delete", lambda: table.delete(steps["delete"]))
    out["after_delete"] = read()
    source = frame(steps["merge"]).alias("s")
    out["merge"] = timed("merge", lambda: (
        table.alias("t").merge(source, "t.id = s.id")
        .whenMatchedUpdate(set={"amount": "s.amount", "kind": "s.kind"})
        .whenNotMatchedInsertAll()
        .execute()))
    out["after_merge"] = read()

    # 3. compaction (Spark jobs on the executors: the major one reads what the minor one wrote),
    # vacuum, and reads of what is left
    out["minor"] = timed("compact_minor", lambda: table.compact("minor"))
    out["major"] = timed("compact_major", lambda: table.compact("major"))
    out["vacuum"] = timed("vacuum", lambda: table.vacuum(retentionSeconds=0))
    out["after_vacuum"] = read()
    out["after_vacuum_partition"] = read(partitionFilter=steps["partition_filter"])
    out["after_vacuum_toDF"] = [r.asDict() for r in table.toDF().orderBy("id").collect()]
    out["history"] = [h["operation"] for h in table.history().collect()]

    # 4. what the executors' Python workers run with
    def probe(_):
        home = os.path.expanduser("~")
        yield {
            "home": home,
            "store_dir_exists": os.path.exists(os.path.join(home, ".acidorc")),
            "env": sorted(k for k in os.environ
                          if k.startswith(("ACIDORC", "AWS", "PYSPARK", "SPARK")) or "METASTORE" in k),
            "values_with_store": sorted(k for k, v in os.environ.items() if store in v or "postgres" in v),
        }

    out["executor"] = spark.sparkContext.parallelize([0], 1).mapPartitions(probe).collect()[0]
    spark.stop()
    with open(settings["output"], "w") as f:
        json.dump(out, f, default=str)


def spark_storage_options(options: dict, prefix: str = "fs.") -> dict[str, str]:
    """Nested fsspec options as Spark's string options: ``{"client_kwargs": {"endpoint_url": u}}``
    is ``fs.client_kwargs.endpoint_url = u`` (README, "Object storage")."""
    flat: dict[str, str] = {}
    for key, value in options.items():
        if isinstance(value, dict):
            flat.update(spark_storage_options(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = str(value)
    return flat


if __name__ == "__main__":
    main()
