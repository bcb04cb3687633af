"""Time travel: ``versionAsOf`` (a write id) and ``timestampAsOf`` against a model of the
table kept by the test, over random histories of appends, overwrites and failed writes."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acid_source import create_table
from acid_source.errors import InvalidOptionError, NotEnoughHistoryError, VersionNotFoundError
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
    create_table(str(base / "t"), SCHEMA, partition_columns=["p"], metastore_url=url)
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
    create_table(str(tmp_path / "t"), SCHEMA, metastore_url=url)
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
    with pytest.raises(InvalidOptionError, match="timestampAsOf"):
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
