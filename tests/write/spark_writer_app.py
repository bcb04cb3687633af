"""A Spark application that starts an append and hangs in the middle of it (for the test that
SIGKILLs a driver): partition 0 is written, then partition 1 signals through a FIFO and blocks."""

import sys

import acid_source


def main(path: str, fifo: str, metastore_url: str, java_options: str) -> None:
    spark = acid_source.get_or_create_session(master="local[1]", metastoreUrl=metastore_url,
                                              conf={"spark.ui.enabled": "false",
                                                    "spark.driver.extraJavaOptions": java_options})
    from pyspark.sql.functions import lit, udf

    @udf("bigint")
    def hang_in_second_partition(x):
        if x == 10:  # first row of partition 1: partition 0's file is already written
            with open(fifo, "w") as f:
                f.write("files written\n")
            with open(fifo) as f:  # blocks: nobody will ever write
                f.read()
        return x

    df = spark.range(0, 20, numPartitions=2).select(hang_in_second_partition("id").alias("id"),
                                                     lit("from spark").alias("name"))
    df.write.format("acidorc").mode("append").save(path)


if __name__ == "__main__":
    main(*sys.argv[1:5])
