"""Partition types inferred from directory names (tables no store describes)."""

import pyarrow as pa
import pytest

from acid_source.layout.table_dirs import infer_partition_type


@pytest.mark.parametrize("values, expected", [
    (["1", "2"], pa.int32()),
    (["1", "3000000000"], pa.int64()),
    (["1.5", "2"], pa.float64()),
    (["2026-11-21"], pa.date32()),
    (["1.5", "NaN"], pa.string()),
    (["1.5", "Infinity"], pa.string()),
    (["1.5", "-Infinity"], pa.string()),  # was a double while Infinity was text
    (["1.5", "+inf"], pa.string()),
    (["1.5", "1e400"], pa.string()),
    ([None], pa.string()),
])
def test_infer_partition_type(values, expected):
    assert infer_partition_type(values) == expected
