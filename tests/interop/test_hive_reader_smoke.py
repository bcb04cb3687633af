"""Smoke test for the Hive 2.3 reader harness (tests/interop/hive_reader.py).

Builds tiny ACID tables by hand with pyorc and checks that Hive's own reader,
driven through the harness, returns exactly the rows we know it must.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import py4j  # noqa: E402,F401
import pyorc  # noqa: E402  (interop tests fail, never skip, without their parts)
import pytest

from .hive_reader import (  # noqa: E402
    HiveReadError,
    hive_job_conf,
    make_valid_txns,
    parse_hive_type,
)

pytestmark = [
    pytest.mark.interop,
]

ACID_SCHEMA = ("struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
               "currentTransaction:bigint,row:struct<{}>>")
INSERT, DELETE = 0, 2


def bucket_property(bucket_id: int, stmt_id: int = 0) -> int:
    """V1 bucket encoding: (1 << 29) | (bucketId << 16) | stmtId."""
    return (1 << 29) | (bucket_id << 16) | stmt_id


B0, B1 = bucket_property(0), bucket_property(1)
assert B0 == 536870912


def write_acid_file(path, columns, events, *, key_index=True):
    """Write one ACID bucket file (single stripe) plus ``_orc_acid_version``."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(os.path.join(os.path.dirname(path), "_orc_acid_version"), "wb") as f:
        f.write(b"2")
    row_type = ",".join(f"{n}:{t}" for n, t in columns)
    with open(path, "wb") as f:
        w = pyorc.Writer(f, ACID_SCHEMA.format(row_type))
        for e in events:
            w.write(e)
        ops = [e[0] for e in events]
        meta = {"hive.acid.stats": f"{ops.count(INSERT)},0,{ops.count(DELETE)}".encode(),
                "hive.acid.version": b"2"}
        if key_index:
            _, owid, bucket, row_id, _, _ = events[-1]
            meta["hive.acid.key.index"] = f"{owid},{bucket},{row_id};".encode()
        w.set_user_metadata(**meta)
        w.close()


def inserts(write_id, rows, bucket=B0):
    return [(INSERT, write_id, bucket, i, write_id, r) for i, r in enumerate(rows)]


def deletes(write_id, keys):
    """keys: (originalWriteId, bucketProperty, rowId) of the rows to delete."""
    return [(DELETE, owid, bucket, row_id, write_id, None) for owid, bucket, row_id in keys]


COLS = [("id", "int"), ("name", "string")]


@pytest.fixture
def table(tmp_path):
    """base_1 + aborted delta_2 + delete_delta_3 + delta_4 + aborted delete_delta_5,
    two buckets."""
    t = tmp_path / "t"
    write_acid_file(t / "base_0000001" / "bucket_00000", COLS,
                    inserts(1, [(1, "a"), (2, "b"), (3, "c")]))
    write_acid_file(t / "base_0000001" / "bucket_00001", COLS,
                    inserts(1, [(10, "x"), (11, "y")], bucket=B1))
    # write 2 is aborted: must be invisible
    write_acid_file(t / "delta_0000002_0000002_0000" / "bucket_00000", COLS,
                    inserts(2, [(4, "aborted")]))
    # write 3 deletes "b" (bucket 0, row 1) and "y" (bucket 1, row 1)
    write_acid_file(t / "delete_delta_0000003_0000003_0000" / "bucket_00000", COLS,
                    deletes(3, [(1, B0, 1)]))
    write_acid_file(t / "delete_delta_0000003_0000003_0000" / "bucket_00001", COLS,
                    deletes(3, [(1, B1, 1)]))
    write_acid_file(t / "delta_0000004_0000004_0000" / "bucket_00000", COLS,
                    inserts(4, [(5, "e")]))
    # write 5 is aborted too: its delete of "a" must not be applied
    write_acid_file(t / "delete_delta_0000005_0000005_0000" / "bucket_00000", COLS,
                    deletes(5, [(1, B0, 0)]))
    return str(t)


def test_delete_applied_and_aborted_writes_hidden(hive, table):
    rows = hive.read(table, COLS, valid_txns=make_valid_txns(5, aborted=[2, 5]),
                     bucket_count=2, with_row_id=True)
    assert sorted(rows) == [
        ((1, B0, 0), 1, "a"),
        ((1, B0, 2), 3, "c"),
        ((1, B1, 0), 10, "x"),
        ((4, B0, 0), 5, "e"),
    ]


def test_valid_txns_controls_visibility(hive, table):
    # everything committed: aborted insert visible, write 5 deletes "a"
    assert sorted(hive.read(table, COLS, bucket_count=2)) == [
        (3, "c"), (4, "aborted"), (5, "e"), (10, "x")]
    # snapshot at write 3 (2 aborted): delete applied, write 4 not yet visible
    assert sorted(hive.read(table, COLS, valid_txns="3:9223372036854775807:2", bucket_count=2)) == [
        (1, "a"), (3, "c"), (10, "x")]
    # write 3 still open: its deletes are not visible
    assert sorted(hive.read(table, COLS, valid_txns=make_valid_txns(4, open=[3], aborted=[2]),
                            bucket_count=2)) == [
        (1, "a"), (2, "b"), (3, "c"), (5, "e"), (10, "x"), (11, "y")]


TYPE_COLS = [
    ("i", "int"), ("bi", "bigint"), ("si", "smallint"), ("ti", "tinyint"), ("b", "boolean"),
    ("f", "float"), ("d", "double"), ("s", "string"), ("vc", "varchar(10)"), ("c", "char(5)"),
    ("dec", "decimal(10,2)"), ("dt", "date"), ("ts", "timestamp"), ("bin", "binary"),
    ("arr", "array<int>"), ("m", "map<string,int>"), ("mk", "map<int,decimal(5,1)>"),
    ("st", "struct<a:int,b:string,c:array<timestamp>>"),
]
TYPE_ROWS = [
    (1, 2**40, -3, 7, True, 1.5, 2.2, 'héllo\n"x"', "vc", "ab", Decimal("12.50"),
     dt.date(2020, 2, 29), dt.datetime(2021, 3, 4, 5, 6, 7, 123456), b"\x00\xff\x10",
     [1, None, 3], {"k": 1, "z": None}, {5: Decimal("0.5")},
     (9, "nine", [dt.datetime(1960, 1, 1, 0, 0, 0, 1)])),
    (2,) + (None,) * (len(TYPE_COLS) - 1),
    (3, -(2**63), -(2**15), -128, False, -0.25, float("-inf"), "", "", "", Decimal("-0.01"),
     dt.date(1, 1, 1), dt.datetime(1500, 3, 1, 23, 59, 59, 999999), b"", [], {}, {},
     (None, None, None)),
]


def test_types(hive, tmp_path):
    t = tmp_path / "types"
    write_acid_file(t / "base_0000001" / "bucket_00000", TYPE_COLS, inserts(1, TYPE_ROWS))
    rows = sorted(hive.read(str(t), TYPE_COLS), key=lambda r: r[0])
    expected = [list(r) for r in TYPE_ROWS]
    expected[0][9] = "ab   "  # char(5) comes back padded
    expected[2][9] = "     "
    assert rows == [tuple(r) for r in expected]
    # exact Python types, not just equal values
    assert [type(v) for v in rows[0]] == [
        int, int, int, int, bool, float, float, str, str, str, Decimal, dt.date, dt.datetime,
        bytes, list, dict, dict, tuple]


def test_java_errors_are_readable(hive, tmp_path):
    t = tmp_path / "nokey"
    write_acid_file(t / "base_0000001" / "bucket_00000", COLS, inserts(1, [(1, "a")]),
                    key_index=False)
    with pytest.raises(HiveReadError, match="hive.acid.key.index") as info:
        hive.read(str(t), COLS)
    assert "NoSuchMethodError" not in str(info.value)  # classpath order is right
    assert "at org.apache.hadoop.hive" in info.value.java_stacktrace
    # the JVM is still usable afterwards
    ok = tmp_path / "ok"
    write_acid_file(ok / "base_0000001" / "bucket_00000", COLS, inserts(1, [(1, "a")]))
    assert hive.read(str(ok), COLS) == [(1, "a")]


def test_bad_arguments(hive, tmp_path):
    with pytest.raises(ValueError, match="ValidReadTxnList"):
        hive.read(str(tmp_path), COLS, valid_txns="default.t:5:9223372036854775807::")
    with pytest.raises(ValueError, match="unsupported Hive type"):
        hive.read(str(tmp_path), [("u", "uniontype<int,string>")])
    with pytest.raises(FileNotFoundError):
        hive.read(str(tmp_path / "missing"), COLS)


def test_conf_and_type_helpers():
    assert make_valid_txns(5, aborted=[5, 2]) == "5:9223372036854775807:2:5"
    assert make_valid_txns(7, open=[6], aborted=[3]) == "7:6:3:6"
    conf = hive_job_conf("file:///x", [("a", "int"), ("s", "struct<x:decimal(4,1),y:map<string,int>>")])
    assert conf["columns.types"] == "int,struct<x:decimal(4,1),y:map<string,int>>"
    assert conf["hive.txn.valid.txns"] == "9223372036854775807:9223372036854775807"
    assert parse_hive_type("array<struct<a:char(3)>>") == ("array", ("struct", (("a", ("char", 3)),)))
