"""JIT and GC flags for the JVMs the tests start (Spark drivers, executors and cluster
daemons, the Hive metastore; tests/interop's py4j JVMs set the same two flags themselves).

The tests' JVMs live for seconds to minutes and handle little data, on a 2-core machine that
two pytest workers share: C2's compiler threads and G1's parallel GC threads then take CPU
from the other worker and the servers, for code that rarely runs long enough to pay back.
C1 only and the serial collector made a file of Spark MERGE tests a third faster on a loaded
machine and a local SparkSession start twice as fast. They change how fast the JVM runs,
never what it computes.
"""

from __future__ import annotations

#: for ``java`` command lines
QUICK_JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
#: the same as one option string (Spark's ``spark.driver.extraJavaOptions`` and the like)
QUICK_JVM_OPTIONS = " ".join(QUICK_JVM_FLAGS)


def spark_driver_conf() -> dict[str, str]:
    """SparkSession conf of a driver started by the tests (local mode: the executors run in it)."""
    return {"spark.driver.extraJavaOptions": QUICK_JVM_OPTIONS}
