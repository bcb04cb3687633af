"""Shared fixtures: one SparkSession for the whole test session, and table builders."""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # for `from hivegen import ...`

from servers import scheduling  # noqa: E402

# Never touch the user's ~/.acidorc: one throw-away metastore for the whole test run, set
# before Spark starts so that its Python workers inherit it.
# Driver-side heartbeats every second (30 s in production), so that a test can watch a Spark
# write stay alive through a slow upstream stage; set before Spark starts its Python workers.
os.environ["ACIDORC_HEARTBEAT_SECONDS"] = "1"
# Automatic compaction after commits is on by default for users; tests that count directories
# after their writes must not have them compacted away: the initiator's tests switch it on.
os.environ["ACIDORC_AUTO_COMPACT"] = "false"
os.environ["ACIDORC_METASTORE_URL"] = "sqlite:///" + os.path.join(tempfile.mkdtemp(prefix="acidorc-ms-"),
                                                                   "metastore.db")


def _create_store(url: str) -> None:
    """A store named by $ACIDORC_METASTORE_URL must exist for reads (only the built-in default may
    be missing), so the run's store is created before any test reads a table no write registered."""
    from acid_source.metastore import Metastore

    with Metastore(url) as store:
        store.list_tables()


_create_store(os.environ["ACIDORC_METASTORE_URL"])

#: The longest test files, started first (longest-processing-time-first): the whole suite runs
#: a file per worker (pytest-xdist --dist loadfile, files handed out in collection order:
#: scripts/run-tests passes --no-loadscope-reorder), and one of these started last would keep a
#: worker busy while the other idles. The rest keep their order; short files fill the end.
#: By per-file times of two-worker runs (about 60 s for the cluster down to 15 s); to refresh:
#: ``awk '/^[0-9.]+s (call|setup|teardown) /{t=$1; sub("s","",t); split($3,a,"::"); f[a[1]]+=t}
#: END{for(k in f) print f[k], k}' <log of --durations=0> | sort -rn | head -25``
LONGEST_FIRST = (
    "cluster/test_cluster.py",
    "spark/test_stream_source.py",
    "dml/test_conflicts.py",
    "spark/test_stream_sink_kills.py",
    "spark/test_merge.py",
    "dml/test_dml_properties.py",
    "spark/test_stream_sink.py",
    "concurrency/test_stress.py",
    "spark/test_native_read.py",
    "metastore/test_hive_store.py",
    "interop/test_hive4_through_hms.py",
    "metastore/test_store_contract.py",
    "interop/test_streaming_hms.py",
    "metastore/test_metastore.py",
    "spark/test_datasource.py",
    "objectstore/test_stale_listing.py",
    "test_examples.py",
    "spark/test_datasource_write.py",
    "orc/test_growing.py",
    "spark/test_change_feed.py",
    "concurrency/test_readers_writers.py",
    "maintenance/test_compaction.py",
    "spark/test_read_leases.py",
    "interop/test_hive_interop.py",
    "write/test_killed_spark_driver.py",
)


def pytest_configure(config):
    scheduling.configure(config)  # the whole suite's files go where their servers run (tests/servers/)


def pytest_unconfigure(config):
    scheduling.unconfigure(config)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    files = {item.nodeid.split("::")[0].removeprefix("tests/") for item in items}
    if len(files) > 100 and not set(rank) <= files:  # the whole suite: a renamed file drops out of the order
        warnings.warn(pytest.PytestWarning(f"tests/conftest.py LONGEST_FIRST names files that are not collected: "
                                           f"{sorted(set(rank) - files)}"))
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0].removeprefix("tests/"), len(rank)))
    scheduling.report_collection(config, items)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from servers.jvm import spark_driver_conf

    import acid_source

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = acid_source.get_or_create_session(
        appName="acidorc-tests",
        master="local[2]",
        conf={
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.warehouse.dir": str(warehouse),
            "spark.sql.session.timeZone": "UTC",
            "spark.driver.memory": "2g",
            **spark_driver_conf(),  # C1 only, serial GC (tests/servers/jvm.py)
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def hive23():
    """Hive 2.3's own ACID reader through py4j (``interop.hive_reader.HiveAcidReader``): one JVM
    for the whole session (~1.5 s to start); each read builds its own JobConf, so reads share
    nothing but the JVM."""
    from interop.hive_reader import HiveAcidReader

    with HiveAcidReader() as reader:
        yield reader


# Real servers on loopback, started on first use (tests/servers/).
from servers.hive_metastore import hive_metastore, hive_metastore_short_timeout  # noqa: E402,F401
from servers.postgres import pg_store_url, postgres_server, store_backend, store_url  # noqa: E402,F401
from servers.s3 import s3_bucket, s3_server, s3_shared_bucket, s3_table_url  # noqa: E402,F401
from servers.spark_cluster import spark_cluster  # noqa: E402,F401
