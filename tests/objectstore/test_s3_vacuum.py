"""Vacuum on a real S3 server: a directory goes object by object, behind a removal marker
(acid_source/maintenance/cleaner.py). A reader whose snapshot needs a directory that is being
removed must stop with SnapshotFilesRemovedError at every step of the removal - without the
marker, the step after the data files went would read the table without those rows."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from acid_source import AcidTable, create_table
from acid_source.errors import SnapshotFilesRemovedError
from acid_source.faults import PauseGate
from acid_source.layout.table_dirs import REMOVING_MARKER


@pytest.mark.parametrize("step", ["vacuum.objectstore.marked", "vacuum.objectstore.emptied"])
def test_a_reader_never_reads_a_half_deleted_directory(s3_server, s3_table_url, tmp_path, monkeypatch, step):
    options = s3_server.storage_options
    create_table(s3_table_url, "id bigint", storageOptions=options)
    t = AcidTable.load(s3_table_url, storageOptions=options)
    model = []
    for i in range(3):
        t.append(pa.table({"id": [10 * i, 10 * i + 1]}))
        model += [10 * i, 10 * i + 1]
    stale = t.scan(leaseSeconds=0)  # its snapshot reads the three deltas, and it holds no lease
    t.compact("major")
    gate = PauseGate(tmp_path / "gate", step)
    for name, value in gate.env().items():
        monkeypatch.setenv(name, value)
    result: dict = {}
    vacuum = threading.Thread(target=lambda: result.update(t.vacuum(retentionSeconds=0)))
    vacuum.start()
    try:
        gate.wait_reached()  # the first delta is half way through its removal
        fs = s3_server.filesystem()
        bucket_path = s3_table_url.removeprefix("s3://")
        being_removed = [d for d in fs.ls(bucket_path) if fs.exists(f"{d}/{REMOVING_MARKER}")]
        assert len(being_removed) == 1
        if step.endswith("emptied"):
            assert fs.find(being_removed[0]) == [f"{being_removed[0]}/{REMOVING_MARKER}"]
        with pytest.raises(SnapshotFilesRemovedError) as info:
            stale.toArrow()
        assert info.value.path == f"s3://{being_removed[0]}"
        assert sorted(t.scan().toArrow()["id"].to_pylist()) == model  # the latest snapshot reads the base
    finally:
        for _ in range(3):  # one pause per removed delta
            gate.release()
            if _ < 2:
                gate.wait_reached()
        vacuum.join(timeout=120)
    assert not vacuum.is_alive()
    assert result["numRemovedPaths"] == 3
    assert all(p.startswith(f"{s3_table_url}/delta_") for p in result["removedPaths"])
    left = s3_server.filesystem().find(s3_table_url.removeprefix("s3://"))
    assert not [p for p in left if "/delta_" in p]
    assert sorted(t.scan().toArrow()["id"].to_pylist()) == model
