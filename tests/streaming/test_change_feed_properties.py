"""The change feed over random histories against a literal model.

Each example creates a partitioned, bucketed table and runs a random history: appends, UPDATEs
that move rows across partitions and buckets, DELETEs, failed (aborted) writes, minor and major
compactions and cleaner runs, anywhere before, inside or after the ranges read. The model keeps,
per committed write id, the rows it inserted and the values of the rows it deleted, and, per
partition, which write ids a major compaction folded into a base and which of those the cleaner
then removed. For random ranges [a, b]: ``AcidTable.changes`` equals the model's changes of the
committed write ids in the range (as a multiset), or is a HistoryUnavailableError exactly when
the model says a write id of the range lost its deltas in a partition it wrote. Some tables
start with pre-ACID files (rows with synthetic ROW__IDs that no write id inserted), which later
writes update and delete.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pyarrow as pa
import pyarrow.orc as paorc
import pytest
from hypothesis import HealthCheck, event, given, note
from hypothesis import strategies as st
from properties import examples

from acid_source import create_table
from acid_source.errors import HistoryUnavailableError
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("v", pa.string()), ("p", pa.string())])
PARTS = ("a", "b")

step = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 4), st.sampled_from(PARTS)),
    st.tuples(st.just("update"), st.integers(2, 3), st.integers(0, 1), st.sampled_from(PARTS)),
    st.tuples(st.just("delete"), st.integers(2, 4), st.integers(0, 1)),
    st.tuples(st.just("fail"), st.integers(1, 2), st.sampled_from(PARTS)),
    st.tuples(st.just("minor")),
    st.tuples(st.just("major")),
    st.tuples(st.just("vacuum")),
)


class Model:
    def __init__(self):
        self.live: dict[int, tuple] = {}  # id -> (id, k, v, p)
        self.changes: dict[int, list[tuple]] = {}  # write id -> (change, id, k, v, p)
        self.touched: dict[int, set[str]] = {}
        self.written: dict[str, set[int]] = defaultdict(set)  # partition -> write ids that wrote it
        self.folded: dict[str, set[int]] = defaultdict(set)  # ... folded into a base by a major compaction
        self.removed: dict[str, set[int]] = defaultdict(set)  # ... whose deltas the cleaner then removed
        self.next_id = 0

    def commit(self, w: int, inserted: list[tuple], deleted: list[tuple]) -> None:
        self.changes[w] = [("delete",) + r for r in deleted] + [("insert",) + r for r in inserted]
        self.touched[w] = {f"p={r[3]}" for r in inserted + deleted}
        for part in self.touched[w]:
            self.written[part].add(w)
        for r in deleted:
            del self.live[r[0]]
        for r in inserted:
            self.live[r[0]] = r

    def expected(self, a: int, b: int) -> list[tuple] | None:
        wanted = [w for w in self.changes if a <= w <= b]
        if any(w in self.removed[part] for w in wanted for part in self.touched[w]):
            return None
        return sorted((w,) + c for w in wanted for c in self.changes[w])


def _table(rows: list[tuple]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "k": pa.array([r[1] for r in rows], pa.int32()),
                     "v": [r[2] for r in rows], "p": [r[3] for r in rows]})


def _run(t: AcidTable, model: Model, op: tuple) -> None:
    kind = op[0]
    if kind in ("append", "fail"):
        new = [(model.next_id + i, (model.next_id + i) % 5, f"v{model.next_id + i}", op[2]) for i in range(op[1])]
        model.next_id += len(new)
        if kind == "fail":
            def failing(batch=_table(new).to_batches()[0]):
                yield batch
                raise RuntimeError("boom")

            with pytest.raises(RuntimeError):
                t.append(failing())
            return
        model.commit(t.append(_table(new))["writeId"], new, [])
    elif kind == "update":
        _, m, r, part = op
        old = [row for i, row in sorted(model.live.items()) if i % m == r]
        metrics = t.update(f"id % {m} = {r}", {"v": "concat(v, '+')", "p": f"'{part}'", "k": "k + 1"})
        if old:
            model.commit(metrics["writeId"], [(i, k + 1, v + "+", part) for i, k, v, _ in old], old)
    elif kind == "delete":
        _, m, r = op
        old = [row for i, row in sorted(model.live.items()) if i % m == r]
        metrics = t.delete(f"id % {m} = {r}")
        if old:
            model.commit(metrics["writeId"], [], old)
    elif kind == "minor":
        t.compact("minor")
    elif kind == "major":
        t.compact("major")
        for part, ids in model.written.items():
            model.folded[part] |= ids
    else:
        t.vacuum(retentionSeconds=0)
        for part, ids in model.folded.items():
            model.removed[part] |= ids


def _changes(t: AcidTable, a: int, b: int) -> list[tuple]:
    got = t.changes(startingVersion=a, endingVersion=b).toArrow()
    return sorted(zip(*(got.column(c).to_pylist() for c in ("_commit_version", "_change_type", "id", "k", "v", "p"))))


@examples(20, suppress=[HealthCheck.function_scoped_fixture])
@given(originals=st.booleans(), history=st.lists(step, min_size=3, max_size=12),
       ranges=st.lists(st.tuples(st.integers(1, 14), st.integers(0, 6)), min_size=2, max_size=4))
def test_change_feed_equals_the_model_or_names_the_removed_history(tmp_path_factory, originals, history, ranges):
    base = tmp_path_factory.mktemp("cf")
    url = f"sqlite:///{base}/store.db"
    create_table(str(base / "t"), SCHEMA, partitionColumns=["p"], bucketColumns=["k"], numBuckets=2,
                 metastoreUrl=url)
    model = Model()
    if originals:  # pre-ACID files in both partitions: rows with synthetic ROW__IDs and no write id
        for part in PARTS:
            old = [(model.next_id + i, i, f"o{model.next_id + i}", part) for i in range(3)]
            model.next_id += len(old)
            (base / "t" / f"p={part}").mkdir()
            paorc.write_table(_table(old).drop_columns(["p"]), str(base / "t" / f"p={part}" / "000000_0"))
            model.live.update((r[0], r) for r in old)
    t = AcidTable.load(str(base / "t"), metastoreUrl=url)
    for op in [("append", 3, "a")] + history:
        _run(t, model, op)
    latest = max(model.changes)
    for a, length in [(1, latest)] + ranges:
        a = min(a, latest)
        b = a + length
        expected = model.expected(a, b)
        note(f"range {a}..{b}: expected {expected}")
        event("history removed" if expected is None else "changes read")
        if expected is None:
            with pytest.raises(HistoryUnavailableError) as caught:
                _changes(t, a, b)
            w = caught.value.write_id
            assert a <= w <= b and any(w in model.removed[part] for part in model.touched[w]), str(caught.value)
        else:
            got = _changes(t, a, b)
            assert Counter(got) == Counter(expected)
