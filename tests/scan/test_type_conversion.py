"""Reading a file's column as the table's type: Hive's schema evolution only widens, and a
read never wraps or truncates a value silently - a value that does not fit is an error naming
the file and the column."""

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from core_read import data, read_rows
from hivegen import HiveTable, delta_name

from acid_source.errors import SchemaError
from acid_source.scan.reader import widens


def evolved(root, old_type, old_rows, new_type, new_rows):
    """Write id 1 wrote column ``n`` as ``old_type``; the newest file (write id 2), which the
    table schema is inferred from, has ``new_type``."""
    HiveTable(root, [("id", "int"), ("n", old_type)]).insert(1, {0: old_rows})
    HiveTable(root, [("id", "int"), ("n", new_type)]).insert(2, {0: new_rows})
    return root / delta_name(1, 1, 0) / "bucket_00000"


def test_bigint_too_large_for_the_int_column_fails_naming_file_and_column(tmp_path):
    old_file = evolved(tmp_path, "bigint", [(1, 7), (2, 5_000_000_000)], "int", [(3, 9)])
    with pytest.raises(SchemaError, match=r"column 'n' holds int64 values that do not fit .*int32") as info:
        read_rows(tmp_path)  # used to return 705032704
    assert info.value.path == str(old_file) and info.value.column == "n"
    assert str(old_file) in str(info.value)


def test_narrowing_values_that_fit_read_exactly(tmp_path):
    evolved(tmp_path, "bigint", [(1, 7), (2, -2**31)], "int", [(3, 9)])
    assert data(read_rows(tmp_path), "id", "n") == [(1, 7), (2, -2**31), (3, 9)]


def test_decimal_scale_reduction_that_would_round_fails(tmp_path):
    evolved(tmp_path, "decimal(12,3)", [(1, Decimal("1.234"))], "decimal(12,2)", [(2, Decimal("5.10"))])
    with pytest.raises(SchemaError, match="'n'"):
        read_rows(tmp_path)


def test_strings_that_are_not_numbers_fail(tmp_path):
    evolved(tmp_path, "string", [(1, "12"), (2, "twelve")], "bigint", [(3, 9)])
    with pytest.raises(SchemaError, match="'n'"):
        read_rows(tmp_path)


def test_widening_reads_are_silent(tmp_path):
    evolved(tmp_path / "ints", "int", [(1, 2**31 - 1)], "bigint", [(2, 2**40)])
    assert data(read_rows(tmp_path / "ints"), "n") == [(2**31 - 1,), (2**40,)]
    evolved(tmp_path / "double", "bigint", [(1, 2**53 + 1)], "double", [(2, 0.5)])
    assert data(read_rows(tmp_path / "double"), "n") == [(0.5,), (float(2**53),)]  # Hive rounds too
    evolved(tmp_path / "float", "float", [(1, 1.5)], "double", [(2, 0.25)])
    assert data(read_rows(tmp_path / "float"), "n") == [(0.25,), (1.5,)]
    evolved(tmp_path / "dec", "decimal(5,2)", [(1, Decimal("123.45"))], "decimal(10,4)", [(2, Decimal("1"))])
    assert data(read_rows(tmp_path / "dec"), "n") == [(Decimal("1.0000"),), (Decimal("123.4500"),)]
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    evolved(tmp_path / "struct", "struct<a:int,t:timestamp>", [(1, (1, ts))], "struct<a:bigint,t:timestamp>",
            [(2, (2**40, ts))])
    got = sorted(r["n"]["a"] for r in read_rows(tmp_path / "struct"))
    assert got == [1, 2**40]


def test_lossless_non_widening_conversions_read(tmp_path):
    evolved(tmp_path, "int", [(1, 42)], "string", [(2, "x")])
    assert data(read_rows(tmp_path), "id", "n") == [(1, "42"), (2, "x")]


@pytest.mark.parametrize("source, target, expected", [
    (pa.int32(), pa.int64(), True), (pa.int64(), pa.int32(), False), (pa.int8(), pa.float64(), True),
    (pa.float64(), pa.float32(), False), (pa.float64(), pa.int64(), False),
    (pa.decimal128(5, 2), pa.decimal128(6, 2), True), (pa.decimal128(5, 2), pa.decimal128(5, 3), False),
    (pa.timestamp("ns"), pa.timestamp("us"), True), (pa.timestamp("us"), pa.timestamp("ns"), False),
    (pa.list_(pa.int32()), pa.list_(pa.int64()), True), (pa.list_(pa.int64()), pa.list_(pa.int32()), False),
    (pa.map_(pa.string(), pa.int16()), pa.map_(pa.string(), pa.int32()), True),
    (pa.struct([("a", pa.int64())]), pa.struct([("a", pa.int32())]), False),
    (pa.string(), pa.int64(), False), (pa.int64(), pa.string(), False),
])
def test_what_counts_as_widening(source, target, expected):
    assert widens(source, target) is expected
