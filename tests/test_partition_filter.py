import datetime as dt

import pyarrow as pa
import pytest

from acid_source.errors import InvalidOptionError
from acid_source.filters import partition_matches
from acid_source.partition_filter import parse_partition_filter

FIELDS = [pa.field("day", pa.date32()), pa.field("region", pa.string()), pa.field("n", pa.int32())]


def matches(text, **values):
    return partition_matches([parse_partition_filter(text, FIELDS)], values)


def test_comparisons_on_typed_values():
    assert matches("day >= '2024-01-01'", day=dt.date(2024, 1, 2))
    assert not matches("day >= DATE'2024-01-03'", day=dt.date(2024, 1, 2))
    assert matches("5 > n", n=4) and not matches("5 > n", n=5)
    assert matches("n BETWEEN -1 AND 3", n=-1)


def test_boolean_structure_and_sql_nulls():
    assert matches("region IN ('eu', 'us') AND NOT n = 2", region="eu", n=3)
    assert matches("region = 'x' OR n <> 1", region="eu", n=2)
    assert not matches("region <> 'eu'", region=None)  # null comparison is not true
    assert matches("region IS NULL", region=None) and matches("region IS NOT NULL", region="a")


@pytest.mark.parametrize("text, fragment", [
    ("name = 'x'", "not a partition column"),
    ("day = other_col", "literal"),
    ("upper(region) = 'EU'", "comparison needs a partition column"),
    ("region LIKE 'e%'", "unsupported"),
    ("region = = 'x'", "cannot parse"),
    ("day = 'not a date'", "not a valid"),
])
def test_errors_name_the_option(text, fragment):
    with pytest.raises(InvalidOptionError, match=fragment) as info:
        parse_partition_filter(text, FIELDS)
    assert "partitionFilter" in str(info.value)
