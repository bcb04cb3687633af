"""Read cost after compaction, counted in files opened (not wall time).

A partitioned (2 partitions), bucketed (2 buckets) table gets 30 small appends and 10 DELETEs.
Every ORC open of a full engine-free scan goes through ``Storage.open_input``; a counting
wrapper (calling the real method) records the paths. The expected sets come from listing the
table directory here: before compaction every bucket file of every delta and delete delta, each
opened once; after a minor compaction the files of the ``_vT`` delta and delete delta of each
partition (2 partitions x 2 kinds x 2 buckets); after a major compaction one file per bucket per
partition. The rows stay the same throughout (checked against a plain-Python model).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acid_source import create_table
from acid_source.expressions import parse_condition
from acid_source.storage import Storage
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
PARTS = ("a", "b")
BUCKETS = 2
ROWS_PER_APPEND = 16


@pytest.fixture(autouse=True)
def private_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{tmp_path}/store.db")


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """Every path ``Storage.open_input`` opens from now on (the real method does the work)."""
    calls: list[str] = []
    real = Storage.open_input

    def counting(self, path, length=None):
        calls.append(os.path.normpath(path))
        return real(self, path, length)

    monkeypatch.setattr(Storage, "open_input", counting)
    return calls


def bucket_files(location: str, dir_pattern: str) -> set[str]:
    """The ``bucket_N`` files of the directories (of any partition) whose names match."""
    out = set()
    for part in Path(location).iterdir():
        for d in part.iterdir():
            if d.is_dir() and re.fullmatch(dir_pattern, d.name):
                out |= {os.path.normpath(str(f)) for f in d.iterdir() if re.fullmatch(r"bucket_\d{5}", f.name)}
    return out


def scan_cost(table: AcidTable, opened: list[str], **scan_args) -> tuple[list[tuple], Counter]:
    opened.clear()
    data = table.scan(**scan_args).toArrow()
    rows = sorted(zip(*(data.column(c).to_pylist() for c in data.column_names)))
    return rows, Counter(opened)


def test_files_opened_by_a_full_scan_before_and_after_minor_and_major_compaction(tmp_path, opened):
    location = str(tmp_path / "t")
    create_table(location, SCHEMA, partitionColumns=["p"], bucketColumns=["id"], numBuckets=BUCKETS)
    t = AcidTable.load(location)
    model: dict[int, tuple[str, str]] = {}
    next_id = 0
    for w in range(30):
        ids = list(range(next_id, next_id + ROWS_PER_APPEND))
        next_id += ROWS_PER_APPEND
        parts = [PARTS[i % 2] for i in ids]
        t.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"w{w}"] * len(ids), "p": parts}))
        model.update({i: (f"w{w}", p) for i, p in zip(ids, parts)})
        if w % 3 == 2:  # a DELETE after every third append: 10 of them; each takes the whole
            # previous append (rows in every bucket of every partition) and a few more rows
            r = w // 3
            gone = {i for i, (v, _) in model.items() if v == f"w{w - 1}" or i % 15 == r}
            assert t.delete(f"v = 'w{w - 1}' OR id % 15 = {r}")["numDeletedRows"] == len(gone)
            model = {i: row for i, row in model.items() if i not in gone}
    expected_rows = sorted((i, v, p) for i, (v, p) in model.items())

    # the layout the writes made: every append wrote both buckets of both partitions, every
    # DELETE both buckets of both partitions (so the counts below are the layout's, exactly)
    inserts = bucket_files(location, r"delta_\d+_\d+_\d+")
    deletes = bucket_files(location, r"delete_delta_\d+_\d+_\d+")
    assert len(inserts) == 30 * len(PARTS) * BUCKETS and len(deletes) == 10 * len(PARTS) * BUCKETS

    rows, counts = scan_cost(t, opened)
    assert rows == expected_rows
    assert set(counts) == inserts | deletes and len(counts) == 160  # every file of the snapshot ...
    assert set(counts.values()) == {1}  # ... opened once: not once per split, not per delete delta

    minor = t.compact("minor")
    v = f"_v{minor['txnId']:07d}"
    compacted = bucket_files(location, rf"(delete_)?delta_\d+_\d+{v}")
    assert len(compacted) == len(PARTS) * 2 * BUCKETS  # per partition: a delta and a delete delta, per bucket
    rows, counts = scan_cost(t, opened)
    assert rows == expected_rows
    assert set(counts) == compacted and set(counts.values()) == {1}  # 8 files, not 160

    major = t.compact("major")
    v = f"_v{major['txnId']:07d}"
    bases = bucket_files(location, rf"base_\d+{v}")
    assert len(bases) == len(PARTS) * BUCKETS
    rows, counts = scan_cost(t, opened)
    assert rows == expected_rows
    assert set(counts) == bases and set(counts.values()) == {1}  # one file per bucket per partition

    # vacuum removes the inputs; a scan opens exactly the same files
    t.vacuum(retentionSeconds=0)
    rows, counts = scan_cost(t, opened)
    assert rows == expected_rows and set(counts) == bases and sum(counts.values()) == len(bases)


# --- rowFilter prunes partitions ----------------------------------------------------------------
PRUNE_SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.int32()), ("tag", pa.string())])
# partitions (day, tag) -> ids; (None, None) is Hive's __HIVE_DEFAULT_PARTITION__ for both
PRUNE_PARTS = {(1, "x"): [1, 2], (1, "y"): [3], (2, "x"): [4, 5], (3, None): [6], (None, None): [7]}


def _pruned_table(tmp_path, url: str | None = None) -> tuple[AcidTable, dict[int, tuple]]:
    location = str(tmp_path / "pruned")
    create_table(location, PRUNE_SCHEMA, partitionColumns=["day", "tag"], metastoreUrl=url)
    t = AcidTable.load(location, metastoreUrl=url)
    rows = {i: (i, day, tag) for (day, tag), ids in PRUNE_PARTS.items() for i in ids}
    t.append(pa.table({"id": pa.array(list(rows), pa.int64()),
                       "day": pa.array([r[1] for r in rows.values()], pa.int32()),
                       "tag": pa.array([r[2] for r in rows.values()], pa.string())}))
    return t, rows


# rowFilter, the rows it keeps (by hand), the partitions a scan may skip (by hand)
PRUNE_CASES = [
    ("day = 1", [1, 2, 3], {(2, "x"), (3, None), (None, None)}),
    ("day = 1 AND id > 1", [2, 3], {(2, "x"), (3, None), (None, None)}),
    ("(tag = 'x' AND (id < 5 AND day >= 1))", [1, 2, 4], {(1, "y"), (3, None), (None, None)}),
    ("day = 1 OR id = 6", [1, 2, 3, 6], set()),  # OR with a data column: nothing can be skipped
    ("tag IS NULL", [6, 7], {(1, "x"), (1, "y"), (2, "x")}),
    ("NOT (day <> 2)", [4, 5], {(1, "x"), (1, "y"), (3, None), (None, None)}),
    ("coalesce(day, 0) = 0 AND id = 7", [7], {(1, "x"), (1, "y"), (2, "x"), (3, None)}),
    ("day IN (2, 3) AND tag <=> NULL", [6], {(1, "x"), (1, "y"), (2, "x"), (None, None)}),
    ("id > 3", [4, 5, 6, 7], set()),
    ("false", [], set(PRUNE_PARTS)),
]


def _partition_dir(day, tag) -> str:
    name = lambda v: "__HIVE_DEFAULT_PARTITION__" if v is None else str(v)  # noqa: E731
    return f"day={name(day)}{os.sep}tag={name(tag)}"


@pytest.mark.parametrize("row_filter, ids, skipped", PRUNE_CASES)
def test_a_row_filter_on_partition_columns_skips_the_partitions_it_rules_out(tmp_path, opened, row_filter,
                                                                            ids, skipped):
    t, rows = _pruned_table(tmp_path)
    got, counts = scan_cost(t, opened, rowFilter=row_filter)
    assert got == sorted(rows[i] for i in ids)
    read = {p for p in PRUNE_PARTS if any(_partition_dir(*p) + os.sep in path for path in counts)}
    assert read == set(PRUNE_PARTS) - skipped


_atoms = st.sampled_from([
    "day = 1", "day <> 1", "day > 1", "day IS NULL", "day IS NOT NULL", "day IN (1, 3)", "day <=> NULL",
    "tag = 'x'", "tag <> 'x'", "tag IS NULL", "tag LIKE 'y%'", "coalesce(tag, 'z') = 'z'",
    "id > 3", "id % 2 = 0", "id IS NULL", "NULL", "true", "false", "day + id > 5", "day = id",
])
_conditions = st.recursive(_atoms, lambda inner: st.one_of(
    st.tuples(inner, inner).map(lambda ab: f"({ab[0]} AND {ab[1]})"),
    st.tuples(inner, inner).map(lambda ab: f"({ab[0]} OR {ab[1]})"),
    inner.map(lambda a: f"NOT ({a})"),
), max_leaves=6)


@pytest.fixture(scope="module")
def prune_table(tmp_path_factory) -> tuple[AcidTable, pa.Table]:
    """The table, and every row of it read once by a scan with no filter (the table never
    changes, so the examples share that read)."""
    root = tmp_path_factory.mktemp("prune")
    table = _pruned_table(root, f"sqlite:///{root}/store.db")[0]
    everything = table.scan().toArrow()
    assert sorted(everything.column("id").to_pylist()) == sorted(i for ids in PRUNE_PARTS.values() for i in ids)
    return table, everything


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(condition=_conditions)
def test_pruning_never_changes_the_rows(prune_table, condition):
    """Differential: the pruned scan keeps exactly the rows the same condition keeps when it is
    applied to every row of the table (no partition skipped)."""
    table, everything = prune_table
    expected = everything.filter(parse_condition(condition, everything.schema).expression)
    got = table.scan(rowFilter=condition).toArrow()
    assert sorted(got.column("id").to_pylist()) == sorted(expected.column("id").to_pylist())

