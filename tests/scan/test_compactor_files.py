"""Files written by Hive's query-based compactor: the ACID event columns are named in lower
case (``originaltransaction``, ``rowid``, ...) and the footer may carry no ``hive.acid.*``
metadata at all. Hive reads the event columns by position; so must acidorc, on every path."""

from core_read import data, read_rows
from hivegen import DELETE, INSERT, UPDATE, Event, HiveTable, bucket_property, delta_name

from acid_source.filters import Predicate
from acid_source.orc.files import OrcFile
from acid_source.scan.reader import ScanMetrics
from acid_source.storage import Storage

B0, B1 = bucket_property(0), bucket_property(1)
COLS = [("id", "int"), ("name", "string")]
NO_META = {"key_index": False, "stats": False, "acid_version": False}


def compactor(root, **kw) -> HiveTable:
    return HiveTable(root, COLS, lowercase_event_columns=True, **kw)


def row_ids(rows):
    return sorted((r["id"], tuple(r["ROW__ID"].values())) for r in rows)


def test_the_generator_writes_lower_case_names_without_metadata(tmp_path):
    t = compactor(tmp_path)
    t.base(1, {0: [Event(INSERT, 1, B0, 0, 1, (1, "a"))]}, visibility=5, **NO_META)
    f = OrcFile(Storage(str(tmp_path)), str(t.written[0]))
    assert f.schema.names == ["operation", "originaltransaction", "bucket", "rowid", "currenttransaction", "row"]
    assert f.is_acid and not any(k.startswith("hive.acid.") for k in f.user_metadata)


def test_major_compacted_base_plain_read_and_row_ids(tmp_path):
    t = compactor(tmp_path)
    t.base(2, {0: [Event(INSERT, 1, B0, i, 1, (i, f"r{i}")) for i in range(3)],
               1: [Event(INSERT, 2, B1, 0, 2, (10, "b1"))]}, visibility=5, **NO_META)
    HiveTable(tmp_path, COLS).insert(3, {0: [(20, "new")]})
    assert data(read_rows(tmp_path), "id", "name") == [(0, "r0"), (1, "r1"), (2, "r2"), (10, "b1"), (20, "new")]
    assert row_ids(read_rows(tmp_path, includeRowId="true")) == [
        (0, (1, B0, 0)), (1, (1, B0, 1)), (2, (1, B0, 2)), (10, (2, B1, 0)), (20, (3, B0, 0))]


def test_delete_deltas_written_by_the_compactor_are_applied(tmp_path):
    HiveTable(tmp_path, COLS).insert(1, {0: [(i, "x") for i in range(5)]})
    t = compactor(tmp_path)
    t.raw_dir(delta_name(2, 3, None, 10, delete=True),
              {0: [Event(DELETE, 1, B0, 1, 2, None), Event(DELETE, 1, B0, 3, 3, None)]}, **NO_META)
    metrics = ScanMetrics()
    rows = read_rows(tmp_path, metrics, includeRowId="true")
    assert row_ids(rows) == [(0, (1, B0, 0)), (2, (1, B0, 2)), (4, (1, B0, 4))]
    assert metrics.delete_events_loaded == 2 and metrics.rows_hidden == 2
    # an older snapshot sees the first delete only
    rows = read_rows(tmp_path, validWriteIds="default.t:3:3:3:")
    assert data(rows, "id") == [(0,), (2,), (3,), (4,)]


def test_minor_compacted_deltas(tmp_path):
    """A minor-compacted delta without ``hive.acid.stats`` cannot be proven insert-only and
    goes through the ACID v1 merge; its delete twin holds the deletes of the same range."""
    t = compactor(tmp_path)
    inserts = [Event(INSERT, 1, B0, i, 1, (i, "w1")) for i in range(3)]
    inserts += [Event(INSERT, 3, B0, 0, 3, (30, "w3"))]
    t.raw_dir(delta_name(1, 3, None, 10), {0: inserts, 1: [Event(INSERT, 2, B1, 0, 2, (20, "w2"))]}, **NO_META)
    t.raw_dir(delta_name(1, 3, None, 10, delete=True), {0: [Event(DELETE, 1, B0, 1, 2, None)]}, **NO_META)
    HiveTable(tmp_path, COLS).delete(4, [(3, B0, 0)])
    expected = [(0, (1, B0, 0)), (2, (1, B0, 2)), (20, (2, B1, 0))]
    assert row_ids(read_rows(tmp_path, includeRowId="true", validTxns="20:9223372036854775807::")) == expected
    assert data(read_rows(tmp_path, validTxns="20:9223372036854775807::"), "id") == [(0,), (2,), (20,)]
    # before write id 4 the row of write id 3 is still there
    before = read_rows(tmp_path, validWriteIds="default.t:3:9223372036854775807::",
                       validTxns="20:9223372036854775807::")
    assert data(before, "id") == [(0,), (2,), (20,), (30,)]


def test_acid_v1_collapse_with_lower_case_columns(tmp_path):
    """Hive 1/2 data (UPDATE events in delta_ dirs) written with lower-case names."""
    t = compactor(tmp_path, acid_version_file=False)
    t.base(1, {0: [Event(INSERT, 1, 0, i, 1, (i, f"v1-{i}")) for i in range(3)]}, **NO_META)
    t.raw_dir("delta_0000002_0000002", {0: [Event(UPDATE, 1, 0, 1, 2, (1, "v2-1")),
                                            Event(DELETE, 1, 0, 2, 2, None),
                                            Event(INSERT, 2, 0, 0, 2, (10, "new"))]}, **NO_META)
    rows = read_rows(tmp_path, includeRowId="true")
    assert sorted((r["id"], r["name"], tuple(r["ROW__ID"].values())) for r in rows) == [
        (0, "v1-0", (1, 0, 0)), (1, "v2-1", (1, 0, 1)), (10, "new", (2, 0, 0))]
    assert data(read_rows(tmp_path), "id", "name") == [(0, "v1-0"), (1, "v2-1"), (10, "new")]


def test_statistics_skip_stripes_of_compactor_files(tmp_path):
    t = compactor(tmp_path, stripe_rows=10)
    t.base(1, {0: [Event(INSERT, 1, B0, i, 1, (i, "x")) for i in range(100)]}, visibility=5, **NO_META)
    metrics = ScanMetrics()
    rows = read_rows(tmp_path, metrics, predicates=[Predicate("ge", ("id",), 95)])
    assert {r["id"] for r in rows} >= set(range(95, 100))
    assert (metrics.insert_stripes_read, metrics.insert_stripes_skipped) == (1, 9)


def test_sliced_splits_over_compactor_files(tmp_path):
    """Stripe-range splits of a file without a key index: every delete event is loaded."""
    t = compactor(tmp_path, stripe_rows=4)
    t.base(1, {0: [Event(INSERT, 1, B0, i, 1, (i, "x")) for i in range(12)]}, visibility=5, **NO_META)
    t.raw_dir(delta_name(2, 2, None, 6, delete=True), {0: [Event(DELETE, 1, B0, i, 2, None) for i in (0, 5, 11)]},
              **NO_META)
    rows = read_rows(tmp_path, maxSplitBytes="1", includeRowId="true")
    assert sorted(r["id"] for r in rows) == [1, 2, 3, 4, 6, 7, 8, 9, 10]
