"""AcidTable (no Spark) and spark.read.format("acidorc") read the same rows on the property
tests' random histories (deletes, updates, compactions, originals, streaming, aborted and open
transactions), and on a registered table at every version."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from scan.test_reader_properties import histories, materialize

from acid_source import create_table
from acid_source.errors import AcidError
from acid_source.table import AcidTable

pytestmark = pytest.mark.spark


def _spark_rows(spark, path, **options):
    reader = spark.read.format("acidorc")
    for k, v in options.items():
        reader = reader.option(k, v)
    return sorted(tuple(r) for r in reader.load(path).collect())


@settings(max_examples=6, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(history=histories())
def test_acid_table_reads_what_spark_reads_on_random_histories(spark, history):
    with tempfile.TemporaryDirectory() as tmp:
        root = str(materialize(history, Path(tmp) / "t"))
        try:
            ours = AcidTable.load(root).toArrow()
        except AcidError as exc:
            with pytest.raises(Exception, match=type(exc).__name__):
                _spark_rows(spark, root)
            return
        theirs = _spark_rows(spark, root)
        assert sorted(tuple(r.values()) for r in ours.to_pylist()) == theirs


def test_every_version_reads_the_same_both_ways(spark, tmp_path):
    path = str(tmp_path / "t")
    create_table(path, pa.schema([("id", pa.int64()), ("p", pa.string())]), partitionColumns=["p"])
    t = AcidTable.load(path)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["a", "b"]}))
    t.overwrite(pa.table({"id": pa.array([3], pa.int64())}), partition={"p": "a"})
    t.append(pa.table({"id": pa.array([4], pa.int64()), "p": ["c"]}))
    for version in (1, 2, 3):
        ours = sorted(tuple(r.values()) for r in t.scan(versionAsOf=version).toArrow().to_pylist())
        theirs = sorted(tuple(r) for r in spark.read.format("acidorc").option("versionAsOf", version)
                        .load(path).collect())
        assert ours == theirs, version
