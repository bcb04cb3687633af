"""Time travel: ``versionAsOf`` (a write id) and ``timestampAsOf`` against a model of the
table kept by the test, over random histories of appends, overwrites and failed writes."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acid_source import create_table
from acid_source.errors import InvalidArgumentError, NotEnoughHistoryError, VersionNotFoundError
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])

ops = st.lists(
    st.tuples(st.sampled_from(["append", "append", "overwrite", "overwrite_p", "fail"]),
              st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=3)),
    min_size=1, max_size=6)


@settings(max_examples=20, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=ops)
def test_version_as_of_equals_the_model_after_that_write(tmp_path_factory, history):
    base = tmp_path_factory.mktemp("tt")
    url = f"sqlite:///{base}/store.db"
    create_table(str(base / "t"), SCHEMA, partitionColumns=["p"], metastoreUrl=url)
    t = AcidTable.load(str(base / "t"), metastoreUrl=url)
    model: list[tuple[int, str]] = []
    after: dict[int, list] = {}  # write id -> the model right after it committed
    next_id = 0
    for op, parts in history:
        new = [(next_id + i, p) for i, p in enumerate(parts)]
        next_id += len(parts)
        data = pa.table({"id": pa.array([i for i, _ in new], pa.int64()), "p": [p for _, p in new]})
        if op == "append":
            w = t.append(data)["writeId"]
            model += new
        elif op == "overwrite":
            w = t.overwrite(data)["writeId"]
            model = list(new)
        elif op == "overwrite_p":
            only = [(i, p) for i, p in new if p == "a"] or [(next_id, "a")]
            next_id += 1
            only_ids = pa.table({"id": pa.array([i for i, _ in only], pa.int64())})
            w = t.overwrite(only_ids, partition={"p": "a"})["writeId"]
            model = [r for r in model if r[1] != "a"] + only
        else:
            def failing():
                yield data.to_batches()[0]
                raise RuntimeError("boom")

            with pytest.raises(RuntimeError):
                t.append(failing())
            continue
        after[w] = sorted(model)
    for w, expected in after.items():
        got = t.scan(versionAsOf=w).toArrow()
        assert sorted(zip(got.column("id").to_pylist(), got.column("p").to_pylist())) == expected, w
    times = {h["version"]: h["timestamp"] for h in t.history()}
    for w, expected in after.items():
        got = t.scan(timestampAsOf=times[w]).toArrow()
        assert sorted(zip(got.column("id").to_pylist(), got.column("p").to_pylist())) == expected, w
    assert sorted(zip(*[t.toArrow().column(c).to_pylist() for c in ("id", "p")])) == sorted(model)


def _table(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    create_table(str(tmp_path / "t"), SCHEMA, metastoreUrl=url)
    t = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url)
    for i in range(3):
        t.append(pa.table({"id": pa.array([i], pa.int64()), "p": ["a"]}))
    return t


def test_unknown_versions_and_times_are_typed_errors(tmp_path):
    t = _table(tmp_path)
    with pytest.raises(VersionNotFoundError):
        t.scan(versionAsOf=9)
    first = t.history()[-1]["timestamp"]
    with pytest.raises(VersionNotFoundError):
        t.scan(timestampAsOf="1999-01-01T00:00:00")
    assert t.scan(timestampAsOf=first).count() == 1
    with pytest.raises(InvalidArgumentError, match="timestampAsOf"):
        t.scan(timestampAsOf="last tuesday")


def test_history_removed_by_compaction_is_a_typed_error(tmp_path):
    t = _table(tmp_path)
    root = tmp_path / "t"
    # what a major compaction followed by the cleaner leaves: base_3 of a later transaction,
    # and the deltas it replaced gone
    (root / "base_0000003_v0000099").mkdir()
    shutil.rmtree(root / "delta_0000001_0000001_0000")
    with pytest.raises(NotEnoughHistoryError, match="base_0000003_v0000099"):
        t.scan(versionAsOf=1).toArrow()


# ---------------------------------------------------------------------------------------------
# time travel after compaction and vacuum (issue 18): every version the files left serve exactly
# is readable by number, the latest always; the others name the oldest version still readable
# ---------------------------------------------------------------------------------------------
def _rows(table: pa.Table) -> list[tuple[int, str]]:
    return sorted(zip(table.column("id").to_pylist(), table.column("p").to_pylist()))


def _history_table(tmp_path, **create):
    """A partitioned table and the model of its rows after each version: appends and deletes,
    the model kept from the writes (never from the reader)."""
    url = f"sqlite:///{tmp_path}/store.db"
    create_table(str(tmp_path / "t"), SCHEMA, partitionColumns=["p"], metastoreUrl=url, **create)
    t = AcidTable.load(str(tmp_path / "t"), metastoreUrl=url)
    model: dict[int, list] = {}
    rows: list[tuple[int, str]] = []

    def append(ids):
        nonlocal rows
        new = [(i, "ab"[i % 2]) for i in ids]
        w = t.append(pa.table({"id": pa.array([i for i, _ in new], pa.int64()), "p": [p for _, p in new]}))
        rows = rows + new
        model[w["writeId"]] = sorted(rows)

    def delete(condition, gone):
        nonlocal rows
        t.delete(condition)
        rows = [r for r in rows if not gone(r[0])]
        model[t.version] = sorted(rows)

    return t, model, append, delete


def test_versions_after_a_minor_compaction_and_vacuum_read_exactly(tmp_path):
    t, model, append, delete = _history_table(tmp_path)
    append(range(0, 6))
    append(range(6, 10))
    delete("id % 3 = 0", lambda i: i % 3 == 0)
    append(range(10, 13))
    delete("id = 4", lambda i: i == 4)
    t.compact("minor")  # delta_1_5 and delete_delta_1_5 per partition, in a later transaction
    append(range(13, 15))
    removed = t.vacuum(retentionSeconds=0)["removedPaths"]
    assert any("delta_0000001_0000001" in p for p in removed)  # the history is gone from storage
    for version, expected in model.items():
        assert _rows(t.scan(versionAsOf=version).toArrow()) == expected, version
    assert t.scan(versionAsOf=0).count() == 0  # the table as created, before its first write
    assert _rows(t.toArrow()) == model[max(model)]


def test_versions_after_a_major_compaction_and_vacuum(tmp_path):
    t, model, append, delete = _history_table(tmp_path)
    append(range(0, 4))
    delete("id = 1", lambda i: i == 1)
    append(range(4, 8))
    t.compact("major")  # base_3: deleted rows are gone from it, so versions 1 and 2 cannot be served
    append(range(8, 10))
    delete("id = 8", lambda i: i == 8)
    t.vacuum(retentionSeconds=0)
    for version in (1, 2):
        with pytest.raises(NotEnoughHistoryError, match=f"version {version} .*oldest version .* is 3") as info:
            t.scan(versionAsOf=version)
        assert info.value.version == version and info.value.oldest_version == 3
    for version in (3, 4, 5):
        assert _rows(t.scan(versionAsOf=version).toArrow()) == model[version], version


def test_the_latest_version_stays_readable_after_a_failed_write_and_a_major_compaction(tmp_path):
    t, model, append, delete = _history_table(tmp_path)
    append(range(0, 4))
    delete("id = 2", lambda i: i == 2)

    def failing():
        yield pa.record_batch({"id": pa.array([99], pa.int64()), "p": ["a"]})
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        t.append(failing())  # write id 3, aborted: the compaction's base_3 holds none of it
    t.compact("major")
    t.vacuum(retentionSeconds=0)
    assert _rows(t.scan(versionAsOf=2).toArrow()) == model[2]
    with pytest.raises(NotEnoughHistoryError, match="oldest version .* is 2"):
        t.scan(versionAsOf=1)


def test_insert_only_versions_inside_a_minor_compaction_cannot_be_served(tmp_path):
    """An insert-only table's files carry no write id per row: a compacted delta_1_3 serves the
    versions that see all of 1..3, never version 1 or 2."""
    t, model, append, _ = _history_table(tmp_path, insertOnly=True)
    for start in (0, 2, 4):
        append(range(start, start + 2))
    t.compact("minor")
    append(range(6, 8))
    t.vacuum(retentionSeconds=0)
    for version in (1, 2):
        with pytest.raises(NotEnoughHistoryError, match="oldest version .* is 3"):
            t.scan(versionAsOf=version)
    for version in (3, 4):
        assert _rows(t.scan(versionAsOf=version).toArrow()) == model[version], version


def test_version_zero_is_the_created_table_and_negative_versions_are_refused(tmp_path):
    t = _table(tmp_path)
    empty = t.scan(versionAsOf=0).toArrow()
    assert empty.num_rows == 0 and empty.schema.names == ["id", "p"]
    with pytest.raises(InvalidArgumentError, match="versionAsOf"):
        t.scan(versionAsOf=-1)


def test_out_of_order_commits_are_served_by_row_level_filtering_of_a_minor_compaction(tmp_path):
    """Write id 3 commits before write id 2: version 3 sees 1 and 3 but not 2. After a minor
    compaction into delta_1_4 and the cleaner, only the reader's per-event write-id filter can
    serve it (the insert events of 2 and the delete events of 4 are in the compacted deltas)."""
    t, model, append, _ = _history_table(tmp_path)
    append([0, 1, 2, 3])
    early, late = t.newWrite(), t.newWrite()
    assert (early.writeId, late.writeId) == (2, 3)

    def write(staged, ids):
        writer = staged.writer(0)
        writer.write(pa.record_batch({"id": pa.array(ids, pa.int64()), "p": ["ab"[i % 2] for i in ids]}))
        staged.commit([writer.close()])

    write(late, [30, 31])
    model[3] = sorted(model[1] + [(30, "a"), (31, "b")])
    write(early, [20, 21])
    model[2] = sorted(model[3] + [(20, "a"), (21, "b")])
    assert t.delete("id in (0, 20, 31)")["writeId"] == 4
    model[4] = [r for r in model[2] if r[0] not in (0, 20, 31)]
    t.compact("minor")
    t.vacuum(retentionSeconds=0)
    for version, expected in model.items():
        assert _rows(t.scan(versionAsOf=version).toArrow()) == expected, version
    t.compact("major")  # base_4: the rows write id 4 deleted are gone from it, so only version 4 is left
    t.vacuum(retentionSeconds=0)
    for version in (1, 3, 2):
        with pytest.raises(NotEnoughHistoryError, match=f"version {version} .* can still be read is 4"):
            t.scan(versionAsOf=version)
    assert _rows(t.scan(versionAsOf=4).toArrow()) == model[4]
