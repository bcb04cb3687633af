"""Partition directory names of double and float columns are Hive's own: what Hive 2.3's
FileSinkOperator makes of the value (its Writable's ``toString``, then
``FileUtils.makePartName``), run in the JVM through py4j, for the issue's values and for
random doubles and floats (the JDK is pyspark's, 17: the digits Hive and Spark print before
JDK 19). -0.0 is the one deliberate difference (acidorc's partition is ``0.0``, as Spark
groups it; Hive would make a second one, ``-0.0``)."""

from __future__ import annotations

import random
import struct

import numpy as np
import pyarrow as pa
import pytest

from acid_source.write.rows import group_rows, partition_path

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def jvm(hive23):
    return hive23._jvm


def hive_name(jvm, writable) -> str:
    columns, values = jvm.java.util.ArrayList(), jvm.java.util.ArrayList()
    columns.add("p")
    values.add(writable.toString())
    return jvm.org.apache.hadoop.hive.common.FileUtils.makePartName(columns, values)


def our_names(values: list[float], arrow_type: pa.DataType) -> dict[int, str]:
    """Row index -> the directory acidorc's write path names for its value."""
    batch = pa.RecordBatch.from_arrays([pa.array(range(len(values)))], names=["i"])
    names = {}
    for key, rows in group_rows(batch, [pa.array(values, arrow_type)]):
        for i in rows.column(0).to_pylist():
            names[i] = partition_path(["p"], key)
    return names


def random_values(single: bool) -> list[float]:
    rnd = random.Random(18)
    if single:
        bits = [rnd.getrandbits(32) for _ in range(300)]
        found = [float(np.frombuffer(b.to_bytes(4, "little"), np.float32)[0]) for b in bits]
        found += [float(np.float32(rnd.randint(1, 2**40))) for _ in range(100)]
    else:
        found = [struct.unpack("<d", rnd.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(300)]
        found += [float(rnd.randint(1, 2**63)) for _ in range(100)] + [rnd.uniform(-1e8, 1e8) for _ in range(100)]
    return [v for v in found if np.isfinite(v) and v != 0]


ISSUE_VALUES = [float("nan"), float("inf"), float("-inf"), 0.0, 1.1, 1e20, 1e-5, 100.0]


def test_double_partition_names_are_hives(jvm):
    values = ISSUE_VALUES + random_values(single=False)
    ours = our_names(values, pa.float64())
    for i, v in enumerate(values):
        assert ours[i] == hive_name(jvm, jvm.org.apache.hadoop.hive.serde2.io.DoubleWritable(v)), repr(v)
    assert hive_name(jvm, jvm.org.apache.hadoop.hive.serde2.io.DoubleWritable(-0.0)) == "p=-0.0"
    assert our_names([-0.0], pa.float64())[0] == "p=0.0"


def test_float_partition_names_are_hives(jvm):
    values = ISSUE_VALUES + random_values(single=True)
    ours = our_names(values, pa.float32())
    F = jvm.java.lang.Float
    for i, v in enumerate(values):
        bits = struct.unpack("<i", np.float32(v).tobytes())[0]  # the exact float, whatever py4j would convert
        expected = hive_name(jvm, jvm.org.apache.hadoop.io.FloatWritable(F.intBitsToFloat(bits)))
        assert ours[i] == expected, repr(v)
