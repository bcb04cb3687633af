"""create_table / drop_table from Python: DDL schemas without Spark, codecs end to end,
layout validation at create time."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as paorc
import pytest
from core_read import read_rows
from write.writers import rows, write

import acid_source
from acid_source import create_table, drop_table
from acid_source.ddl import SPARK_METADATA_KEY, parse_ddl_schema
from acid_source.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    SchemaError,
    StoreBehindStorageError,
    TableExistsError,
    TableNotRegisteredError,
    TransactionStateError,
)
from acid_source.metastore import Metastore
from acid_source.orc.codecs import CODECS

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def store(tmp_path):
    return "sqlite:///" + str(tmp_path / "ms.db")


# --- DDL strings, parsed without Spark ------------------------------------------------------

def test_ddl_gives_the_types_spark_gives():
    schema = parse_ddl_schema("id bigint, amount decimal(10,2), ds date, tags array<string>, "
                              "m map<string,int>, s struct<a:int,b:string>")
    assert schema == pa.schema([
        ("id", pa.int64()),
        ("amount", pa.decimal128(10, 2)),
        ("ds", pa.date32()),
        ("tags", pa.list_(pa.field("element", pa.string()))),
        ("m", pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.int32()))),
        ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ])


@pytest.mark.parametrize("ddl, arrow_type", [
    ("boolean", pa.bool_()), ("tinyint", pa.int8()), ("byte", pa.int8()), ("smallint", pa.int16()),
    ("short", pa.int16()), ("int", pa.int32()), ("INTEGER", pa.int32()), ("bigint", pa.int64()),
    ("long", pa.int64()), ("float", pa.float32()), ("real", pa.float32()), ("double", pa.float64()),
    ("string", pa.string()), ("varchar(10)", pa.string()), ("char(3)", pa.string()),
    ("binary", pa.binary()), ("date", pa.date32()),
    ("decimal", pa.decimal128(10, 0)), ("dec(5)", pa.decimal128(5, 0)), ("numeric(38,38)", pa.decimal128(38, 38)),
    # what the write path receives from Spark: to_arrow_schema(timezone="UTC")
    ("timestamp", pa.timestamp("us", tz="UTC")), ("timestamp_ltz", pa.timestamp("us", tz="UTC")),
    ("timestamp_ntz", pa.timestamp("us")),
    ("array<array<int>>", pa.list_(pa.field("element", pa.list_(pa.field("element", pa.int32()))))),
    ("struct<>", pa.struct([])),
])
def test_ddl_type_names(ddl, arrow_type):
    assert parse_ddl_schema(f"c {ddl}").field("c").type == arrow_type


def test_ddl_quoting_nullability_and_comments():
    schema = parse_ddl_schema("`my ``col``` int NOT NULL COMMENT 'the id', s struct<x: int, `y z` string not null>")
    assert schema.names == ["my `col`", "s"]
    col = schema.field("my `col`")
    assert not col.nullable
    assert json.loads(col.metadata[SPARK_METADATA_KEY]) == {"comment": "the id"}
    inner = schema.field("s").type
    assert inner.field("x").nullable and not inner.field("y z").nullable


def test_ddl_as_a_struct_type_string():
    assert parse_ddl_schema("struct<a:int, b:string>") == pa.schema([("a", pa.int32()), ("b", pa.string())])


# positions as Spark's parser reports them (ParseException "pos")
@pytest.mark.parametrize("ddl, position, fragment", [
    ("id bigint,", 10, "expected a column name"),
    ("id bigint amount int", 10, "'amount'"),
    ("id decimal(10", 13, r"expected '\)'"),
    ("id foo", 3, "unknown data type 'foo'"),
    ("id int,,b int", 7, "found ','"),
    ("", 0, "no columns"),
    ("a decimal(40,2)", 2, "precision <= 38"),
    ("a int not nul", 10, "NULL"),
    ("a #", 2, "unexpected character"),
    ("x interval day to second", 2, "cannot be stored"),
])
def test_bad_ddl_is_a_schema_error_with_its_position(ddl, position, fragment):
    with pytest.raises(SchemaError, match=fragment) as info:
        parse_ddl_schema(ddl)
    assert info.value.position == position


SPARK_DDLS = [
    "id bigint, amount decimal(10,2), ds date, tags array<string>, m map<string,int>, s struct<a:int,b:string>",
    "a byte, b short, c integer, d long, e real, f dec, g numeric(5), j timestamp, k timestamp_ntz, "
    "l timestamp_ltz, m binary, n boolean, o float, p double, q tinyint, r smallint",
    "`weird col` int not null comment 'hi', s struct<x int, `y z`: string not null comment 'c'>, t STRUCT<>, "
    "u ARRAY<MAP<STRING, ARRAY<INT>>>",
    "a: int, B String",
    "struct<a:int, b:array<timestamp>>",
]


@pytest.mark.spark
@pytest.mark.parametrize("ddl", SPARK_DDLS)
def test_ddl_matches_sparks_own_parser(spark, ddl):
    from acid_source.spark.types import arrow_schema_of

    expected = arrow_schema_of(spark.createDataFrame([], ddl).schema)
    assert parse_ddl_schema(ddl).equals(expected, check_metadata=True)


STRUCT_TYPE_DDLS = SPARK_DDLS + [
    "d decimal(38,18), e decimal(1,0), t timestamp_ntz, n array<struct<a:decimal(5,2),b:timestamp_ntz>>, "
    "m map<int, struct<x: array<date> not null comment 'in a map'>>, v void",
]


@pytest.mark.spark
@pytest.mark.parametrize("ddl", STRUCT_TYPE_DDLS)
def test_struct_type_converts_as_sparks_own_arrow_conversion(spark, ddl):
    """A StructType reaches the core as its JSON (the core never imports acid_source.spark);
    the schema is exactly what pyspark's to_arrow_schema gives, nested, decimal and
    timestamp_ntz types and comments included."""
    from pyspark.sql.types import ArrayType, IntegerType, MapType, StructField, StructType

    from acid_source.spark.types import arrow_schema_of
    from acid_source.tables import table_schema

    struct = spark.createDataFrame([], ddl).schema
    assert table_schema(struct).equals(arrow_schema_of(struct), check_metadata=True)
    # nullability Spark's DDL cannot spell: non-null elements and map values
    odd = StructType([StructField("a", ArrayType(IntegerType(), containsNull=False), False),
                      StructField("m", MapType(IntegerType(), IntegerType(), valueContainsNull=False))])
    assert table_schema(odd).equals(arrow_schema_of(odd), check_metadata=True)


def test_struct_types_spark_cannot_store_are_schema_errors():
    from acid_source.ddl import parse_json_schema

    with pytest.raises(SchemaError, match="'i'.*cannot be stored"):
        parse_json_schema('{"type":"struct","fields":[{"name":"i","type":"interval day to second",'
                          '"nullable":true,"metadata":{}}]}')
    with pytest.raises(SchemaError, match="'u'.*unknown Spark data type"):
        parse_json_schema('{"type":"struct","fields":[{"name":"u","type":"uuid","nullable":true,"metadata":{}}]}')
    with pytest.raises(SchemaError, match="not a Spark JSON schema"):
        parse_json_schema("id bigint")


def test_create_table_from_a_struct_type(tmp_path, store):
    from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType, TimestampNTZType

    struct = StructType([StructField("id", LongType(), False), StructField("tags", ArrayType(StringType())),
                         StructField("at", TimestampNTZType())])
    table = create_table(tmp_path / "t", struct, metastoreUrl=store)
    assert table.schema == parse_ddl_schema("id bigint not null, tags array<string>, at timestamp_ntz")


def test_create_table_from_ddl_does_not_import_pyspark(tmp_path, store):
    code = (
        "import sys, acid_source\n"
        f"t = acid_source.create_table({str(tmp_path / 't')!r}, 'id bigint, ts timestamp, tags array<string>', "
        f"metastore_url={store!r})\n"
        "assert t.schema.field('ts').type.tz == 'UTC', t.schema\n"
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO)})


def test_create_table_rejects_what_is_not_a_schema(tmp_path, store):
    with pytest.raises(InvalidArgumentError, match="'schema'.*got dict"):
        create_table(tmp_path / "t", {"id": "bigint"}, metastoreUrl=store)
    with pytest.raises(InvalidArgumentError, match="'location'"):
        create_table("  ", "id bigint", metastoreUrl=store)
    with pytest.raises(InvalidArgumentError, match="'partitionColumns'"):
        create_table(tmp_path / "t", "id bigint, ds date", partitionColumns="ds", metastoreUrl=store)
    with pytest.raises(InvalidArgumentError, match="'numBuckets'"):
        create_table(tmp_path / "t", "id bigint", bucketColumns=["id"], numBuckets=-1, metastoreUrl=store)
    assert Metastore(store).find_table(tmp_path / "t") is None


def test_create_table_then_write_a_ddl_table(tmp_path, store):
    path = tmp_path / "t"
    create_table(path, "id bigint, name string, day date", partitionColumns=["day"], metastoreUrl=store)
    write(path, [[rows([1, 2], day=dt.date(2026, 11, 21))]], metastore_url=store)
    got = read_rows(path, metastoreUrl=store)
    assert sorted((r["id"], r["day"]) for r in got) == [(1, dt.date(2026, 11, 21)), (2, dt.date(2026, 11, 21))]


# --- compression: one list of codecs, end to end --------------------------------------------

@pytest.mark.parametrize("given, codec, hive_name", [
    *[(c, c, {"uncompressed": "NONE"}.get(c, c.upper())) for c in CODECS],
    ("none", "uncompressed", "NONE"), ("ZSTD", "zstd", "ZSTD"), ("NONE", "uncompressed", "NONE"),
])
def test_every_codec_creates_writes_and_reads(tmp_path, store, given, codec, hive_name):
    path = tmp_path / "t"
    table = create_table(path, "id bigint, name string", compression=given, metastoreUrl=store)
    assert table.compression == codec and table.properties["orc.compress"] == hive_name
    write(path, [[rows(list(range(100)), name="row")]], metastore_url=store)
    assert sorted(r["id"] for r in read_rows(path, metastoreUrl=store)) == list(range(100))
    files = [f for f in path.rglob("bucket_*") if f.is_file()]
    assert files and {paorc.ORCFile(str(f)).compression for f in files} == {hive_name.replace("NONE", "UNCOMPRESSED")}


def test_write_option_compression_reaches_a_new_table(tmp_path, store):
    path = tmp_path / "t"
    write(path, [[rows([1, 2])]], metastore_url=store, compression="None")
    assert Metastore(store).get_table(path).compression == "uncompressed"
    assert sorted(r["id"] for r in read_rows(path, metastoreUrl=store)) == [1, 2]


def test_lzo_is_a_typed_error_naming_the_option(tmp_path, store):
    with pytest.raises(InvalidArgumentError, match="'compression'.*LZO") as info:
        create_table(tmp_path / "t", "id bigint", compression="lzo", metastoreUrl=store)
    assert info.value.argument == "compression"
    with pytest.raises(InvalidOptionError, match="'compression'.*LZO") as info:
        write(tmp_path / "w", [[rows([1])]], metastore_url=store, compression="lzo")
    assert info.value.option == "compression"
    assert not (tmp_path / "t").exists() and Metastore(store).find_table(tmp_path / "t") is None


def test_unknown_codec_lists_the_valid_ones(tmp_path, store):
    with pytest.raises(InvalidArgumentError, match="zlib, snappy, zstd, lz4, uncompressed"):
        create_table(tmp_path / "t", "id bigint", compression="gzip", metastoreUrl=store)


# --- column and bucket column types, checked at create time ---------------------------------

@pytest.mark.parametrize("arrow_type, fragment", [
    (pa.uint32(), "unsigned"), (pa.duration("us"), "no Hive/ORC equivalent"), (pa.null(), "void"),
    (pa.decimal128(5, -2), "scale"), (pa.decimal256(40, 2), "decimal128"), (pa.date64(), "date32"),
    (pa.dictionary(pa.int32(), pa.string()), "value type"),
])
def test_column_types_orc_cannot_store_are_refused(tmp_path, store, arrow_type, fragment):
    schema = pa.schema([("id", pa.int64()), ("c", pa.struct([("inner", arrow_type)]))])
    with pytest.raises(SchemaError, match=fragment) as info:
        create_table(tmp_path / "t", schema, metastoreUrl=store)
    assert info.value.column == "c" and "'c.inner'" in str(info.value)


@pytest.mark.parametrize("ddl", ["c map<string,int>", "c float", "c double", "c struct<a:int,b:string>",
                                 "c array<int>", "c decimal(10,2)", "c timestamp", "c binary", "c boolean"])
def test_hashable_bucket_columns_are_written(tmp_path, store, ddl):
    """Hive's bucketing hash (layout/bucketing.py) covers maps, floats, structs and arrays."""
    path = tmp_path / "t"
    table = create_table(path, f"id bigint, {ddl}", bucketColumns=["c"], numBuckets=2, metastoreUrl=store)
    batch = pa.RecordBatch.from_pylist([], schema=table.schema)
    write(path, [[batch]], metastore_url=store)


@pytest.mark.parametrize("ddl", ["s struct<t:timestamp>", "s array<timestamp>", "s map<string,timestamp>"])
def test_zoned_timestamps_inside_bucket_columns_hash_as_wall_clock(tmp_path, store, ddl):
    """Spark hands zoned timestamps; Hive hashes wall-clock values, also nested ones."""
    from acid_source.layout.bucketing import bucket_ids

    path = tmp_path / "t"
    table = create_table(path, f"id bigint, {ddl}", bucketColumns=["s"], numBuckets=4, metastoreUrl=store)
    moments = [dt.datetime(2024, 1, d, 10, tzinfo=dt.timezone.utc) for d in range(1, 9)]
    zoned = table.schema.field("s").type
    naive = {"s struct<t:timestamp>": lambda m: {"t": m}, "s array<timestamp>": lambda m: [m],
             "s map<string,timestamp>": lambda m: [("k", m)]}[ddl]
    values = pa.array([naive(m) for m in moments], zoned)
    batch = pa.RecordBatch.from_arrays([pa.array(range(8), pa.int64()), values], schema=table.schema)
    write(path, [[batch]], metastore_url=store)
    wall_type = {"s struct<t:timestamp>": pa.struct([("t", pa.timestamp("us"))]),
                 "s array<timestamp>": pa.list_(pa.timestamp("us")),
                 "s map<string,timestamp>": pa.map_(pa.string(), pa.timestamp("us"))}[ddl]
    expected = bucket_ids([pa.array([naive(m.replace(tzinfo=None)) for m in moments], wall_type)], 4)
    got = {r["id"]: (r["ROW__ID"]["bucketId"] >> 16) & 0xFFF
           for r in read_rows(path, includeRowId="true", metastoreUrl=store)}
    assert [got[i] for i in range(8)] == [int(b) for b in expected]


# --- drop_table -------------------------------------------------------------------------------

def test_drop_table_by_location_keeps_files_unless_purged(tmp_path, store):
    path = tmp_path / "t"
    create_table(path, "id bigint, name string", metastoreUrl=store)
    write(path, [[rows([1])]], metastore_url=store)
    dropped = drop_table(path, metastoreUrl=store)
    assert dropped.location == str(path.resolve())
    assert Metastore(store).find_table(path) is None and any(path.iterdir())
    with pytest.raises(TableNotRegisteredError):
        drop_table(str(path), metastoreUrl=store)
    assert drop_table(str(path), ifExists=True, metastoreUrl=store) is None
    # its files hold an ACID history: registered again only by adopting it, then purged with them
    with pytest.raises(StoreBehindStorageError, match="adopt=True"):
        create_table(path, "id bigint, name string", metastoreUrl=store)
    create_table(path, "id bigint, name string", adopt=True, metastoreUrl=store)
    drop_table(str(path), purge=True, metastoreUrl=store)
    assert not path.exists()


def test_drop_table_by_name_with_purge(tmp_path, store):
    path = tmp_path / "t"
    create_table(path, "id bigint, name string", name="db.Sales", metastoreUrl=store)
    write(path, [[rows([1, 2])]], metastore_url=store)
    assert drop_table("DB.sales", purge=True, metastoreUrl=store).name == "db.sales"
    assert not path.exists()
    with pytest.raises(TableNotRegisteredError, match="db.sales"):
        drop_table("db.sales", metastoreUrl=store)
    create_table(path, "id bigint", name="db.sales", metastoreUrl=store)  # name and location are free again


def test_drop_table_is_refused_while_a_write_is_open(tmp_path, store):
    path = tmp_path / "t"
    table = create_table(path, "id bigint", metastoreUrl=store)
    ms = Metastore(store)
    txn = ms.open_transaction()
    ms.allocate_write_id(txn, table.table_id)
    with pytest.raises(TransactionStateError):
        drop_table(path, purge=True, metastoreUrl=store)
    assert path.exists() and ms.find_table(path) is not None


def test_drop_table_arguments(tmp_path, store):
    with pytest.raises(InvalidArgumentError, match="'purge'"):
        drop_table(tmp_path / "t", purge="yes", metastoreUrl=store)
    with pytest.raises(InvalidArgumentError, match="'location'"):
        drop_table("", metastoreUrl=store)


def test_create_table_twice(tmp_path, store):
    create_table(tmp_path / "t", "id bigint", metastoreUrl=store)
    with pytest.raises(TableExistsError):
        create_table(tmp_path / "t", "id bigint", metastoreUrl=store)
    assert create_table(tmp_path / "t", "id bigint", ifNotExists=True, metastoreUrl=store)
    assert acid_source.drop_table is drop_table
