"""The change feed on a table kept in a real Hive 4.1 metastore: the HMS records no commit history
(which write ids committed when, which partitions each wrote), so the feed is an
UnsupportedOperationError saying why, never a guess from the files."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from pymetastore.hive_metastore import ttypes as tt

from acid_source import UnsupportedOperationError, create_table
from acid_source.streaming.change_plan import plan_changes
from acid_source.table import AcidTable

pytestmark = pytest.mark.hms


def test_the_change_feed_needs_a_store_with_a_commit_history(hive_metastore, tmp_path):
    with hive_metastore.client() as client:
        try:
            client.create_database(tt.Database(name="acidorc_cf", parameters={},
                                               locationUri=f"file:{hive_metastore.warehouse}/acidorc_cf.db"))
        except tt.AlreadyExistsException:
            pass
    name = f"acidorc_cf.t_{uuid.uuid4().hex[:8]}"
    create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), name=name, metastoreUrl=hive_metastore.uri)
    t = AcidTable.load(name, metastoreUrl=hive_metastore.uri)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(UnsupportedOperationError, match="readChangeFeed: .* records no commit history") as caught:
        t.changes(startingVersion=1)
    assert caught.value.operation == "readChangeFeed" and str(tmp_path / "t") in str(caught.value)
    with pytest.raises(UnsupportedOperationError, match="records no commit history"):
        plan_changes(str(tmp_path / "t"), [1], metastore_url=hive_metastore.uri)
