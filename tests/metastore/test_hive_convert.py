"""The HMS's thrift answers as Hive's snapshot strings and acidorc's types (pure functions over
structs with the IDL's attribute names; the real server is in test_hive_store.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest

from acid_source.errors import InvalidArgumentError
from acid_source.metastore.hive.connection import MetastoreAddress
from acid_source.metastore.hive.convert import arrow_type, bitset_members, hive_type, valid_txns, valid_write_ids
from acid_source.metastore.urls import is_thrift_url


def java_bitset(*bits: int) -> bytes:
    """What Java's BitSet.toByteArray() returns (little-endian bytes, no trailing zeros)."""
    value = sum(1 << b for b in bits)
    return value.to_bytes((value.bit_length() + 7) // 8, "little") if value else b""


def test_bitsets_as_java_writes_them():
    assert bitset_members(java_bitset(0, 3, 9)) == {0, 3, 9}
    assert bitset_members(b"") == set() and bitset_members(None) == set()


def test_the_open_transaction_list_as_hive_4_builds_it():
    response = SimpleNamespace(txn_high_water_mark=20, open_txns=[3, 5, 8, 12, 17], min_open_txn=5,
                               abortedBits=java_bitset(0, 3))
    assert str(valid_txns(response)) == "20:5:5,8,17:3,12"
    # inside transaction 12: the high-water mark drops to it, later ones are no exceptions
    assert str(valid_txns(response, 12)) == "12:5:5,8:3"
    # a transaction the HMS already forgot (aborted and cleaned): cut at it just the same
    assert str(valid_txns(response, 10)) == "10:5:5,8:3"


def test_a_tables_write_ids_as_hive_builds_them():
    table = SimpleNamespace(fullTableName="db.t", writeIdHighWaterMark=9, invalidWriteIds=[2, 4, 7],
                            minOpenWriteId=4, abortedBits=java_bitset(0))
    assert str(valid_write_ids(table)) == "db.t:9:4:4,7:2"
    none_open = SimpleNamespace(fullTableName="db.t", writeIdHighWaterMark=3, invalidWriteIds=[2],
                                minOpenWriteId=None, abortedBits=java_bitset(0))
    assert str(valid_write_ids(none_open)) == "db.t:3:9223372036854775807::2"


@pytest.mark.parametrize("hive, arrow", [
    ("bigint", pa.int64()), ("int", pa.int32()), ("smallint", pa.int16()), ("tinyint", pa.int8()),
    ("boolean", pa.bool_()), ("double", pa.float64()), ("float", pa.float32()), ("string", pa.string()),
    ("binary", pa.binary()), ("date", pa.date32()), ("timestamp", pa.timestamp("us")),
    ("decimal(12,3)", pa.decimal128(12, 3)), ("array<string>", pa.list_(pa.string())),
    ("map<string,bigint>", pa.map_(pa.string(), pa.int64())),
    ("struct<a:int,b:array<double>>", pa.struct([("a", pa.int32()), ("b", pa.list_(pa.float64()))])),
])
def test_column_types_both_ways(hive, arrow):
    assert arrow_type(hive) == arrow
    assert hive_type(arrow) == hive


def test_char_and_varchar_read_as_strings_and_unions_are_refused():
    assert arrow_type("varchar(10)") == pa.string() and arrow_type("char(3)") == pa.string()
    with pytest.raises(ValueError, match="uniontype"):
        arrow_type("uniontype<int,string>")


def test_store_urls():
    assert is_thrift_url("thrift://h:9083") and not is_thrift_url("sqlite:///x.db") and not is_thrift_url(None)
    address = MetastoreAddress.parse("thrift://a:1,b:2,thrift://c?lockTimeout=5&timeout=7")
    assert address.uris == (("a", 1), ("b", 2), ("c", 9083))
    assert (address.timeout, address.lock_timeout) == (7.0, 5.0)
    assert str(address) == "thrift://a:1,thrift://b:2,thrift://c:9083?timeout=7&lockTimeout=5"
    for bad in ("thrift://", "thrift://h:1/db", "thrift://h:1?user=x", "thrift://h:1?timeout=0", "thrift://h:x"):
        with pytest.raises(InvalidArgumentError, match="metastoreUrl"):
            MetastoreAddress.parse(bad)
