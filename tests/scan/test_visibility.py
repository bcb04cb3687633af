"""KeySet membership and the ACID v1 winner choice against literal Python versions, and
SplitVisibility handing out surviving rows with the file's own columns."""

import numpy as np
import pyarrow as pa
from core_read import plan
from hivegen import DELETE, INSERT, UPDATE, Event, HiveTable, bucket_property
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_source.scan.visibility import KeySet, SplitVisibility, choose_winners

keys = st.tuples(st.integers(0, 3), st.sampled_from([536870912, 536936448, 3]), st.integers(0, 40))


def arrays(ks):
    return (np.array([k[0] for k in ks], dtype=np.int64), np.array([k[1] for k in ks], dtype=np.int32),
            np.array([k[2] for k in ks], dtype=np.int64))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(keys, max_size=60), st.lists(keys, max_size=120), st.booleans())
def test_contains_matches_set_membership(members, probes, contiguous):
    if contiguous and probes:  # a run of consecutive row ids, as in an insert file
        w, b, r = probes[0]
        probes = [(w, b, r + i) for i in range(len(probes))]
    ks = KeySet(*arrays(members))
    expected = [p in set(members) for p in probes]
    assert ks.contains(*arrays(probes)).tolist() == expected
    assert len(ks) == len(set(members))


def test_many_runs_take_the_sorted_path():
    members = [(w, 536870912, r) for w in range(200) for r in (1, 3)]
    probes = [(w, 536870912, r) for w in reversed(range(200)) for r in range(4)]
    hit = KeySet(*arrays(members)).contains(*arrays(probes))
    assert hit.tolist() == [p in set(members) for p in probes]


def test_winner_is_newest_valid_event_deletes_first_on_ties():
    events = pa.table({
        "originalTransaction": [1, 1, 1, 2, 2],
        "bucket": [0, 0, 0, 0, 0],
        "rowId": [0, 0, 0, 0, 0],
        "currentTransaction": [1, 3, 3, 2, 2],
        "operation": [0, 1, 2, 0, 1],
        "statement": [0, 0, 0, 0, 1],
        "sequence": [0, 1, 2, 3, 4],
    })
    winners = choose_winners(events).to_pylist()
    assert [(w["originalTransaction"], w["operation"]) for w in winners] == [(1, 2), (2, 1)]


# --- SplitVisibility: surviving rows without output projection -------------------------------
def surviving(path, **options):
    """Every VisibleRows of a table, as (source directory, file row, ROW__ID) triples."""
    ctx, splits = plan(path, **options)
    out = []
    for split in splits:
        for visible in SplitVisibility(split, ctx.storage, with_keys=True).rows():
            batch = visible.to_batch()
            assert batch.num_rows == visible.num_rows and visible.select(visible.columns)[0].equals(batch.column(0))
            source = visible.source.path.rsplit("/", 2)[-2]
            for row, key in zip(batch.to_pylist(), zip(*visible.surviving_keys())):
                out.append((source, row, tuple(int(k) for k in key)))
    return sorted(out, key=str)


def test_split_update_survivors_carry_the_file_columns_and_row_ids(tmp_path):
    b0 = bucket_property(0)
    old = HiveTable(tmp_path, [("id", "int")])
    old.insert(1, {0: [(1,), (2,), (3,)]})
    new = HiveTable(tmp_path, [("id", "bigint"), ("extra", "string")])  # schema evolution: not projected
    new.insert(2, {0: [(4, "x")]})
    new.delete(3, [(1, b0, 1)])
    assert surviving(tmp_path) == sorted([
        ("delta_0000001_0000001_0000", {"id": 1}, (1, b0, 0)),
        ("delta_0000001_0000001_0000", {"id": 3}, (1, b0, 2)),
        ("delta_0000002_0000002_0000", {"id": 4, "extra": "x"}, (2, b0, 0)),
    ], key=str)


def test_acid_v1_survivors_come_from_the_file_holding_the_winning_event(tmp_path):
    t = HiveTable(tmp_path, [("id", "int"), ("name", "string")], acid_version_file=False)
    t.base(1, {0: [Event(INSERT, 1, 0, i, 1, (i, "v1")) for i in range(3)]}, acid_version=False)
    t.raw_dir("delta_0000002_0000002", {0: [Event(UPDATE, 1, 0, 1, 2, (1, "v2")),
                                            Event(DELETE, 1, 0, 2, 2, None)]}, acid_version=False)
    assert surviving(tmp_path) == sorted([
        ("base_0000001", {"id": 0, "name": "v1"}, (1, 0, 0)),
        ("delta_0000002_0000002", {"id": 1, "name": "v2"}, (1, 0, 1)),
    ], key=str)
