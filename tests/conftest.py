"""Shared fixtures: one SparkSession for the whole test session, and table builders."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # for `from hivegen import ...`

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
#: a file per worker (pytest-xdist --dist loadfile, in collection order), and one of these
#: started last would keep a worker busy while the other idles. Measured on a full run; the
#: order of everything else is unchanged.
LONGEST_FIRST = (
    "cluster/test_cluster.py",
    "spark/test_stream_sink_kills.py",
    "spark/test_merge.py",
    "dml/test_dml_properties.py",
    "spark/test_stream_source.py",
    "dml/test_conflicts.py",
    "metastore/test_hive_store.py",
    "spark/test_native_read.py",
    "spark/test_stream_sink.py",
    "spark/test_change_feed.py",
    "orc/test_growing.py",
    "spark/test_datasource.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0].removeprefix("tests/"), len(rank)))


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
