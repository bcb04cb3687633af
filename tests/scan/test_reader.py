"""The split reader on every table layout of the issue: through acidorc's own reader, and through
``acid_source.read`` in Spark, where files that need no merge go to Spark's ORC reader (the
``route`` parameter; tests of the reader's internals run the first route only)."""

import datetime as dt
import struct
from decimal import Decimal

import core_read
import pytest
from core_read import data, plan
from hivegen import DELETE, INSERT, UPDATE, Event, HiveTable, bucket_property, delta_name

from acid_source.filters import Predicate
from acid_source.scan.reader import ScanMetrics

B0, B1 = bucket_property(0), bucket_property(1)
COLS = [("id", "int"), ("name", "string")]
core_only = pytest.mark.core_only


def pytest_generate_tests(metafunc):
    routes = ["acidorc"] if metafunc.definition.get_closest_marker("core_only") else ["acidorc", "spark"]
    metafunc.parametrize("route", routes, indirect=True)


@pytest.fixture(autouse=True)
def route(request, monkeypatch):
    """Points ``read_rows`` at the route under test."""
    if request.param == "spark":
        spark = request.getfixturevalue("spark")
        monkeypatch.setitem(globals(), "read_rows",
                            lambda path, **options: core_read.native_rows(spark, path, **options))
    return request.param


read_rows = core_read.read_rows


def test_seed_example_base_delete_delta_and_new_versions(tmp_path):
    """Seed 002: base_1 with three rows; write id 2 deletes two and inserts their new versions."""
    t = HiveTable(tmp_path, COLS)
    t.base(1, {0: [Event(INSERT, 1, B0, i, 1, (i, f"v1-{i}")) for i in range(3)]})
    t.delete(2, [(1, B0, 1), (1, B0, 2)])
    t.insert(2, {0: [(1, "v2-1"), (2, "v2-2")]})
    rows = read_rows(tmp_path, includeRowId="true")
    assert data(rows, "id", "name") == [(0, "v1-0"), (1, "v2-1"), (2, "v2-2")]
    assert sorted(tuple(r["ROW__ID"].values()) for r in rows) == [(1, B0, 0), (2, B0, 0), (2, B0, 1)]
    # the snapshot before write id 2 sees the original three rows
    old = read_rows(tmp_path, validWriteIds="default.t:1:9223372036854775807::")
    assert data(old, "id", "name") == [(0, "v1-0"), (1, "v1-1"), (2, "v1-2")]


def test_open_and_aborted_write_ids_are_invisible(tmp_path):
    t = HiveTable(tmp_path, COLS)
    t.insert(1, {0: [(1, "a")]})
    t.insert(2, {0: [(2, "aborted")]})
    t.insert(3, {0: [(3, "open")]})
    t.delete(4, [(1, B0, 0)])  # an aborted delete must not hide the row
    rows = read_rows(tmp_path, validWriteIds="default.t:4:3:3:2,4")
    assert data(rows, "id", "name") == [(1, "a")]


def test_multi_statement_transaction_and_buckets_only_in_some_dirs(tmp_path):
    t = HiveTable(tmp_path, COLS)
    t.insert(1, {0: [(1, "a"), (2, "b")]})
    t.insert(2, {0: [(3, "c")], 1: [(4, "new bucket")]}, stmt=0)
    # statement 1 of write id 2 deletes a row of statement 0 and one of write id 1
    t.delete(2, [(2, B0, 0), (1, B0, 1)], stmt=1)
    t.insert(2, {2: [(5, "stmt1 bucket 2")]}, stmt=1)
    # a bucket that only has deletes (of rows that never existed in a kept dir)
    t.delete(3, [(1, bucket_property(3), 0)])
    rows = read_rows(tmp_path)
    assert data(rows, "id", "name") == [(1, "a"), (4, "new bucket"), (5, "stmt1 bucket 2")]


def test_minor_and_major_compacted_directories(tmp_path):
    t = HiveTable(tmp_path, COLS)
    e1 = t.insert(1, {0: [(1, "a"), (2, "b")]})[0]
    t.delete(2, [(1, B0, 1)])
    e3 = t.insert(3, {0: [(3, "c")]})[0]
    # minor compaction of 1..3 by txn 10: the same events, no statement ids
    t.raw_dir(delta_name(1, 3, None, 10), {0: e1 + e3})
    t.raw_dir(delta_name(1, 3, None, 10, delete=True), {0: [Event(DELETE, 1, B0, 1, 2, None)]})
    t.insert(4, {0: [(4, "d")]})
    expected = [(1, "a"), (3, "c"), (4, "d")]
    assert data(read_rows(tmp_path, validTxns="20:9223372036854775807::"), "id", "name") == expected
    assert data(read_rows(tmp_path, validTxns="20:10:10:"), "id", "name") == expected  # compaction running
    # major compaction up to 4 by txn 11 applies the delete
    t.base(4, {0: [Event(INSERT, 1, B0, 0, 1, (1, "a")), Event(INSERT, 3, B0, 0, 3, (3, "c")),
                   Event(INSERT, 4, B0, 0, 4, (4, "d"))]}, visibility=11)
    t.insert(5, {1: [(5, "e")]})
    assert data(read_rows(tmp_path, validTxns="20:9223372036854775807::"), "id", "name") == expected + [(5, "e")]


def test_original_files_get_hive_synthetic_row_ids(tmp_path):
    t = HiveTable(tmp_path, COLS)
    t.original("000000_0", [(1, "a"), (2, "b")])
    t.original("000000_0_copy_1", [(3, "c")])
    t.original("000001_0", [(4, "d")])
    # ROW__IDs: writeId 0, bucket V1(N), rowId offset by earlier same-bucket files
    t.delete(1, [(0, B0, 2), (0, B1, 0)])  # deletes (3, "c") and (4, "d")
    rows = read_rows(tmp_path, includeRowId="true")
    assert sorted((r["id"], tuple(r["ROW__ID"].values())) for r in rows) == [(1, (0, B0, 0)), (2, (0, B0, 1))]


def test_deletes_of_original_rows_by_hive2_keys(tmp_path):
    """Hive 2.x wrote the plain bucket number (V0) into ROW__IDs of pre-ACID rows."""
    t = HiveTable(tmp_path, COLS)
    t.original("000000_0", [(1, "a"), (2, "b"), (3, "c")])
    t.delete(1, [(0, 0, 1)])  # Hive 2.3 style
    t.delete(2, [(0, B0, 2)])  # Hive 3 style
    assert data(read_rows(tmp_path), "id") == [(1,)]


def test_copy_files_order_lexicographically(tmp_path):
    t = HiveTable(tmp_path, COLS)
    t.original("000000_0", [(0, "x")])
    for n in (1, 2, 10):
        t.original(f"000000_0_copy_{n}", [(n, f"copy {n}")])
    t.insert(1, {0: [(99, "y")]})
    rows = read_rows(tmp_path, includeRowId="true")
    ids = {r["id"]: r["ROW__ID"]["rowId"] for r in rows if r["ROW__ID"]["writeId"] == 0}
    assert ids == {0: 0, 1: 1, 10: 2, 2: 3}  # copy_10 sorts before copy_2 (numeric order would give 2: 2)


def test_load_data_files_inside_a_delta_directory(tmp_path):
    t = HiveTable(tmp_path, COLS)
    t.insert(1, {0: [(1, "a")]})
    t.write_plain(t.dir(delta_name(2, 2, 0)) / "000000_0", [(2, "loaded"), (3, "loaded")])
    t.delete(3, [(2, B0, 1)])
    rows = read_rows(tmp_path, includeRowId="true")
    assert sorted((r["id"], tuple(r["ROW__ID"].values())) for r in rows) == [(1, (1, B0, 0)), (2, (2, B0, 0))]


def test_attempt_id_file_names(tmp_path):
    t = HiveTable(tmp_path, COLS)
    t.insert(1, {0: [(1, "a"), (2, "b")]}, file_suffix="_0")
    d = t.dir(delta_name(2, 2, 0, delete=True))
    t.write_events(d / "bucket_00000_1", [Event(DELETE, 1, B0, 0, 2, None)])
    assert data(read_rows(tmp_path), "id") == [(2,)]


def test_flush_length_limits_a_streaming_file_to_its_committed_prefix(tmp_path):
    t = HiveTable(tmp_path, [("id", "int")])
    events = [Event(INSERT, w, B0, i, w, (w * 10 + i,)) for w in (1, 2, 3) for i in range(2)]
    path = t.write_events(t.dir(delta_name(1, 3, None)) / "bucket_00000", events, flush_at=[2, 4])
    # committed through write id 2: the side file says so; the rest of the file is garbage to us
    assert data(read_rows(tmp_path), "id") == [(10,), (11,), (20,), (21,)]
    # a torn write of the side file: only complete 8-byte values count
    side = path.with_name(path.name + "_flush_length")
    side.write_bytes(side.read_bytes()[:-3])
    assert data(read_rows(tmp_path), "id") == [(10,), (11,)]
    side.unlink()  # writer closed cleanly: the whole file counts
    assert len(read_rows(tmp_path)) == 6
    side.write_bytes(struct.pack(">q", 0))  # nothing committed yet
    assert read_rows(tmp_path) == []


def test_acid_v1_update_events(tmp_path):
    """Hive 1/2: UPDATE events carry the new row under the original ROW__ID; deletes live in delta_."""
    t = HiveTable(tmp_path, COLS, acid_version_file=False)
    t.base(1, {0: [Event(INSERT, 1, 0, i, 1, (i, f"v1-{i}")) for i in range(4)]}, acid_version=False)
    t.raw_dir("delta_0000002_0000002", {0: [Event(UPDATE, 1, 0, 1, 2, (1, "v2-1")),
                                            Event(DELETE, 1, 0, 2, 2, None),
                                            Event(INSERT, 2, 0, 0, 2, (10, "new"))]}, acid_version=False)
    t.raw_dir("delta_0000003_0000003", {0: [Event(UPDATE, 1, 0, 1, 3, (1, "v3-1")),
                                            Event(UPDATE, 2, 0, 0, 3, (10, "newer"))]}, acid_version=False)
    rows = read_rows(tmp_path, includeRowId="true")
    assert sorted((r["id"], r["name"], tuple(r["ROW__ID"].values())) for r in rows) == [
        (0, "v1-0", (1, 0, 0)), (1, "v3-1", (1, 0, 1)), (3, "v1-3", (1, 0, 3)), (10, "newer", (2, 0, 0))]
    at2 = read_rows(tmp_path, validWriteIds="default.t:3:9223372036854775807::3")
    assert data(at2, "id", "name") == [(0, "v1-0"), (1, "v2-1"), (3, "v1-3"), (10, "new")]


def test_insert_only_table(tmp_path):
    t = HiveTable(tmp_path, COLS)
    t.write_plain(t.dir(delta_name(1, 1, 0)) / "000000_0", [(1, "a")])
    t.write_plain(t.dir(delta_name(2, 2, 0)) / "000000_0", [(2, "b")])
    t.write_plain(t.dir(delta_name(2, 2, 0)) / "part1.orc", [(3, "loaded by name")])
    t.write_plain(t.dir(delta_name(3, 3, 0)) / "000000_0", [(4, "aborted")])
    rows = read_rows(tmp_path, validWriteIds="default.t:3:9223372036854775807::3")
    assert data(rows, "id", "name") == [(1, "a"), (2, "b"), (3, "loaded by name")]
    t.write_plain(t.dir("base_0000004") / "000000_0", [(5, "overwrite")])
    assert data(read_rows(tmp_path, validWriteIds="default.t:4:9223372036854775807::3"), "id") == [(5,)]


def test_empty_tables(tmp_path):
    empty_base = tmp_path / "t1"
    HiveTable(empty_base, COLS).dir("base_0000001")
    HiveTable(empty_base, COLS).insert(2, {0: [(1, "aborted")]})
    assert read_rows(empty_base, validWriteIds="default.t:2:9223372036854775807::2") == []


def test_partitioned_table_with_escaped_and_default_partitions(tmp_path, route):
    t = HiveTable(tmp_path, COLS)
    t.insert(1, {0: [(1, "a")]}, partition="region=eu%2Fwest/day=2024-01-01")
    t.insert(1, {0: [(2, "b")]}, partition="region=us/day=2024-01-02")
    t.insert(2, {0: [(3, "c")]}, partition="region=__HIVE_DEFAULT_PARTITION__/day=2024-01-02")
    t.delete(3, [(1, B0, 0)], partition="region=us/day=2024-01-02")
    rows = read_rows(tmp_path)
    assert sorted((r["id"], r["region"], r["day"]) for r in rows) == [
        (1, "eu/west", dt.date(2024, 1, 1)), (3, None, dt.date(2024, 1, 2))]
    if route == "acidorc":  # pushed-down predicates are the core's own
        pruned = read_rows(tmp_path, predicates=[Predicate("eq", ("region",), "eu/west")])
        assert [r["id"] for r in pruned] == [1]


def test_all_orc_types(tmp_path):
    cols = [("ti", "tinyint"), ("si", "smallint"), ("i", "int"), ("bi", "bigint"), ("f", "float"),
            ("d", "double"), ("bo", "boolean"), ("s", "string"), ("c", "char(3)"), ("v", "varchar(5)"),
            ("bin", "binary"), ("dec", "decimal(12,3)"), ("da", "date"), ("ts", "timestamp"),
            ("st", "struct<x:int,y:string>"), ("l", "array<bigint>"), ("m", "map<string,int>")]
    row = (1, 2, 3, 4, 1.5, 2.25, True, "str", "ab", "vc", b"\x00\x01", Decimal("123.456"),
           dt.date(2024, 2, 29), dt.datetime(2024, 1, 2, 3, 4, 5, 123456), (7, "n"), [1, 2], {"k": 9})
    nulls = (None,) * len(cols)
    t = HiveTable(tmp_path, cols)
    t.insert(1, {0: [row, nulls]})
    rows = read_rows(tmp_path)
    full = next(r for r in rows if r["i"] == 3)
    assert full["ti"] == 1 and full["si"] == 2 and full["bi"] == 4 and full["f"] == 1.5 and full["d"] == 2.25
    assert full["bo"] is True and full["s"] == "str" and full["c"] == "ab " and full["v"] == "vc"
    assert full["bin"] == b"\x00\x01" and full["dec"] == Decimal("123.456") and full["da"] == dt.date(2024, 2, 29)
    assert full["ts"].replace(tzinfo=None) == dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    assert full["st"] == {"x": 7, "y": "n"} and full["l"] == [1, 2] and dict(full["m"]) == {"k": 9}
    assert any(all(v is None for v in r.values()) for r in rows)


def test_schema_evolution_added_column_reads_as_null(tmp_path):
    HiveTable(tmp_path, [("id", "int")]).insert(1, {0: [(1,)]})
    HiveTable(tmp_path, [("id", "int"), ("extra", "string")]).insert(2, {0: [(2, "x")]})
    assert data(read_rows(tmp_path), "id", "extra") == [(1, None), (2, "x")]


def test_positional_col_names(tmp_path):
    HiveTable(tmp_path, [("_col0", "int"), ("_col1", "string")]).insert(1, {0: [(1, "a")]})
    assert data(read_rows(tmp_path), "_col0", "_col1") == [(1, "a")]


@core_only
def test_key_index_skips_delete_stripes_outside_the_split(tmp_path):
    HiveTable(tmp_path, [("id", "int")], stripe_rows=100).base(
        1, {0: [Event(INSERT, 1, B0, i, 1, (i,)) for i in range(1000)]})  # 10 stripes of 100 rows
    # 10 delete stripes of 10 events; stripe j ends at row 100j+99, exactly where base stripe j ends,
    # so key ranges line up (with other boundaries a neighbouring stripe may overlap too)
    doomed = list(range(9, 1000, 10))
    HiveTable(tmp_path, [("id", "int")], stripe_rows=10).delete(2, [(1, B0, i) for i in doomed])
    whole, sliced = ScanMetrics(), ScanMetrics()
    expected = sorted(set(range(1000)) - set(doomed))
    assert sorted(r["id"] for r in read_rows(tmp_path, whole)) == expected
    assert sorted(r["id"] for r in read_rows(tmp_path, sliced, maxSplitBytes="1")) == expected
    # one split covers every key: all delete stripes are needed
    assert (whole.delete_stripes_read, whole.delete_stripes_skipped) == (10, 0)
    # ten splits, one per base stripe: each reads the one delete stripe overlapping its key range
    assert (sliced.delete_stripes_read, sliced.delete_stripes_skipped) == (10, 90)
    assert sliced.delete_events_loaded == 100


@core_only
def test_statistics_skip_insert_stripes(tmp_path):
    t = HiveTable(tmp_path, [("id", "int")], stripe_rows=10)
    t.insert(1, {0: [(i,) for i in range(100)]})
    metrics = ScanMetrics()
    rows = read_rows(tmp_path, metrics, predicates=[Predicate("ge", ("id",), 95)])
    assert {r["id"] for r in rows} >= set(range(95, 100))
    assert metrics.insert_stripes_skipped == 9 and metrics.insert_stripes_read == 1


@core_only
def test_large_bucket_split_into_stripe_ranges_returns_same_rows(tmp_path):
    t = HiveTable(tmp_path, COLS, stripe_rows=7)
    t.original("000000_0", [(i, "orig") for i in range(30)])
    t.insert(1, {0: [(100 + i, "delta") for i in range(40)]})
    t.delete(2, [(0, B0, 3), (0, B0, 29), (1, B0, 0), (1, B0, 39)])
    whole = read_rows(tmp_path, includeRowId="true")
    sliced = read_rows(tmp_path, maxSplitBytes="1", includeRowId="true")
    assert len(whole) == 66
    assert sorted(map(str, sliced)) == sorted(map(str, whole))
    assert len(plan(tmp_path, maxSplitBytes="1")[1]) == 5 + 6  # one split per stripe of each file


@core_only
def test_a_narrower_schema_decodes_only_its_columns(tmp_path, monkeypatch):
    """A read of fewer columns asks the ORC reader for those fields of the row struct (and the
    event columns), not the whole row; the rows are the full read's, projected."""
    import pyarrow as pa
    import pyarrow.orc as po

    from acid_source.resolve import scan_for
    from acid_source.scan.reader import read_split
    from acid_source.spark.options import read_spec

    t = HiveTable(tmp_path, [("id", "int"), ("name", "string"), ("big", "string")])
    t.insert(1, {0: [(i, f"n{i}", "x" * 100) for i in range(10)]})
    t.delete(2, [(1, B0, 3)])
    asked = []
    real = po.ORCFile.read_stripe
    monkeypatch.setattr(po.ORCFile, "read_stripe", lambda self, n, columns=None: asked.append(columns)
                        or real(self, n, columns=columns))
    scan = scan_for(read_spec({"path": str(tmp_path)}))
    ctx, splits = scan.plan(pa.schema([("NAME", pa.string())]))
    got = sorted(r["NAME"] for s in splits for b in read_split(s, ctx) for r in b.to_pylist())
    assert got == sorted(f"n{i}" for i in range(10) if i != 3)
    assert ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row.name"] in asked
    assert not any(c is None or "row" in c for c in asked)  # never the whole row struct
