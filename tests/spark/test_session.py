"""Registration in a SparkSession, and what a streaming read tells the user."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: write.writers
from write.writers import rows, write  # noqa: E402

from acid_source import register  # noqa: E402
from acid_source.errors import InvalidOptionError  # noqa: E402
from acid_source.spark.datasource import SOURCE_NAME, AcidOrcDataSource  # noqa: E402
from acid_source.spark.session import is_registered  # noqa: E402

pytestmark = pytest.mark.spark


def _registered_source(spark):
    """The JVM object Spark resolves ``acidorc`` to, by identity."""
    manager = spark._jsparkSession.sessionState().dataSourceManager()
    source = manager.lookupDataSource(SOURCE_NAME)
    return spark._jvm.java.lang.System.identityHashCode(source)


def test_register_leaves_an_already_registered_source_alone(spark):
    # the installed package is registered statically (pyspark_acidorc), and the fixture's
    # session ran register() already: registering again would replace it and log a WARN
    assert is_registered(spark, SOURCE_NAME) and is_registered(spark, SOURCE_NAME.upper())
    before = _registered_source(spark)
    register(spark)
    register(spark)
    assert _registered_source(spark) == before
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"


def test_is_registered_is_false_for_unknown_sources(spark):
    assert not is_registered(spark, "no_such_source_acidorc_test")
    assert not is_registered(object(), SOURCE_NAME)  # not a classic session: cannot tell


def test_a_new_session_knows_the_source(spark):
    other = spark.newSession()
    register(other)
    assert is_registered(other, SOURCE_NAME)
    assert other.conf.get("spark.sql.execution.arrow.maxBytesPerBatch") == "2147483647"


def test_a_stream_reader_with_bad_options_raises_its_typed_error_on_first_use():
    reader = AcidOrcDataSource({"path": "/warehouse/t", "maxRowsPerTrigger": "0"}).streamReader(None)
    reader.stop()  # Spark calls stop() even after a failure: it must not hide the error
    for call in (reader.initialOffset, lambda: reader.latestOffset({}, None), lambda: reader.partitions({}, {})):
        with pytest.raises(InvalidOptionError, match="maxRowsPerTrigger.*expected an integer >= 1"):
            call()


def test_a_read_stream_with_a_batch_option_fails_with_a_clear_message(spark, tmp_path):
    from pyspark.errors import StreamingQueryException

    path = tmp_path / "t"
    write(path, [[rows([1, 2])]])
    query = (spark.readStream.format("acidorc").option("versionAsOf", 1).load(str(path))
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        with pytest.raises(StreamingQueryException) as info:
            query.processAllAvailable()
    finally:
        query.stop()
    message = str(info.value)
    assert "InvalidOptionError: option 'versionasof': 'versionAsOf' is a batch read option" in message
    assert "UnboundLocalError" not in message and "NOT_IMPLEMENTED" not in message
