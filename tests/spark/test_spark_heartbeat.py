"""A Spark write stays alive while its upstream stage runs longer than the expiry: the
transaction is kept open by a driver-side heartbeat, not by task loops (which have not even
started). Heartbeats come every second in tests (tests/conftest.py)."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.metastore import Metastore

pytestmark = pytest.mark.spark


def test_a_write_with_a_slow_upstream_stage_is_not_expired(spark, tmp_path):
    from pyspark.sql.functions import udf

    path = str(tmp_path / "t")
    table = create_table(path, pa.schema([("id", pa.int64())]))
    store = Metastore()
    flag = str(tmp_path / "go")

    @udf("bigint")
    def upstream(i):  # blocks the stage until the test releases it
        import os
        import time

        while not os.path.exists(flag):
            time.sleep(0.05)
        return i

    errors: list[BaseException] = []

    def append():
        try:
            # a Python thread's JVM thread has no active session, and Spark then cannot find
            # Python data sources (DATA_SOURCE_NOT_FOUND)
            spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
            spark.range(3).select(upstream("id").alias("id")).write.format("acidorc").mode("append").save(path)
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)

    writer = threading.Thread(target=append)
    writer.start()
    try:
        txn = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # waiting for time to pass is what is under test
            ours = [t for t in _open_txns(store) if t["description"] == f"append {table.location}"]
            if ours:
                txn = store.txn_info(ours[0]["txn_id"])
                if txn["last_heartbeat"] - txn["started_at"] > 3.0:  # beats long after tasks would have
                    break
            time.sleep(0.1)
        assert txn is not None and txn["last_heartbeat"] - txn["started_at"] > 3.0, txn
        # someone else's clean-up with an expiry shorter than the stage so far: ours survives
        assert store.abort_expired(2.5, table_id=table.table_id) == []
    finally:
        open(flag, "w").close()
        writer.join(120)
    assert errors == [] and store.txn_state(txn["txn_id"]) == "committed"
    assert spark.read.format("acidorc").load(path).count() == 3


def _open_txns(store):
    import sqlalchemy as sa

    from acid_source.metastore.sql.schema import txns

    with store._get_engine().connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.select(txns).where(txns.c.state == "open"))]
