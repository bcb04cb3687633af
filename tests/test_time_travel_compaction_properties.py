"""Time travel over random histories with compactions and the cleaner: every version reads
exactly as the model kept from the writes, or is a NotEnoughHistoryError whose oldest readable
version does read exactly; the latest version always reads; and with only minor compactions
(the events keep their write ids) every version of a full ACID table stays readable."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from properties import examples

from acid_source import create_table
from acid_source.errors import NotEnoughHistoryError
from acid_source.table import AcidTable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])

# (operation, argument): appends of n rows, deletes of ids % k = 0, failed writes, compactions,
# the cleaner with no retention, overwrites; after two appends, and before a last append + vacuum
steps = st.lists(st.sampled_from([
    ("append", 1), ("append", 2), ("delete", 2), ("delete", 3), ("fail", 0), ("minor", 0), ("minor", 0),
    ("major", 0), ("vacuum", 0), ("vacuum", 0), ("overwrite", 0),
]), min_size=4, max_size=9)


def _rows(table: pa.Table) -> list[tuple[int, str]]:
    return sorted(zip(table.column("id").to_pylist(), table.column("p").to_pylist()))


@examples(8, suppress=[HealthCheck.function_scoped_fixture])
@given(history=steps)
def test_every_version_reads_exactly_or_names_the_oldest_that_does(tmp_path_factory, history):
    base = tmp_path_factory.mktemp("ttc")
    url = f"sqlite:///{base}/store.db"
    create_table(str(base / "t"), SCHEMA, partitionColumns=["p"], metastoreUrl=url)
    t = AcidTable.load(str(base / "t"), metastoreUrl=url)
    rows: list[tuple[int, str]] = []
    model: dict[int, list] = {}
    next_id = 0
    for op, n in [("append", 2), ("append", 1)] + history + [("append", 1), ("vacuum", 0)]:
        if op in ("append", "overwrite", "fail"):
            new = [(next_id + i, "ab"[(next_id + i) % 2]) for i in range(max(n, 2))]
            next_id += len(new)
            data = pa.table({"id": pa.array([i for i, _ in new], pa.int64()), "p": [p for _, p in new]})
            if op == "fail":
                def failing(batch=data.to_batches()[0]):
                    yield batch
                    raise RuntimeError("boom")

                with pytest.raises(RuntimeError):
                    t.append(failing())
                continue
            w = (t.append if op == "append" else t.overwrite)(data)["writeId"]
            rows = rows + new if op == "append" else new
            model[w] = sorted(rows)
        elif op == "delete":
            t.delete(f"id % {n} = 0")
            rows = [r for r in rows if r[0] % n]
            model[t.version] = sorted(rows)
        elif op == "vacuum":
            t.vacuum(retentionSeconds=0)
        else:
            t.compact(op)
    latest = max(model)
    assert _rows(t.scan(versionAsOf=latest).toArrow()) == model[latest] == _rows(t.toArrow())
    only_minor = not any(op in ("major", "overwrite") for op, _ in history)
    for version, expected in model.items():
        try:
            got = _rows(t.scan(versionAsOf=version).toArrow())
        except NotEnoughHistoryError as exc:
            assert not only_minor, (version, str(exc))
            assert exc.version == version and exc.oldest_version in model, str(exc)
            oldest = exc.oldest_version
            assert _rows(t.scan(versionAsOf=oldest).toArrow()) == model[oldest]
            continue
        assert got == expected, version
