"""An overwrite of a partitioned table replaces every partition rows were committed to: those
its listing of storage shows, and those the transaction store recorded (a listing that missed
one would leave that partition's rows visible under the overwrite)."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.errors import MissingDataError
from acid_source.table import AcidTable


def rows(ids, p):
    return pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([p] * len(ids), pa.int32())})


def test_a_partition_the_listing_misses_is_replaced_too(tmp_path):
    path = str(tmp_path / "t")
    create_table(path, "id bigint, p int", partitionColumns=["p"])
    t = AcidTable.load(path)
    t.append(rows([1, 2], 1))
    t.append(rows([3], 2))
    shutil.rmtree(tmp_path / "t" / "p=2")  # the overwrite's listing will not show p=2
    with pytest.raises(MissingDataError, match="p=2"):
        t.toArrow()
    data = rows([9], 1)
    with t.newWrite(mode="overwrite") as staged:  # no read first: the write does not fail on the missing p=2
        task = staged.writer(0)
        task.write(data.to_batches()[0])
        staged.commit([task.close()])
    assert (tmp_path / "t" / "p=2").is_dir()  # an empty base replaces what was committed there
    assert t.toArrow().column("id").to_pylist() == [9]
