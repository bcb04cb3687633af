"""Original (pre-ACID) files in a subdirectory (``HIVE_UNION_SUBDIR_N``) are refused, as an ACID
directory is, when the cleaner's removal marker says the directory is being deleted: a snapshot
never reads part of it. (On S3: tests/objectstore/test_s3_error_paths.py.)"""

import pytest

from acid_source.errors import SnapshotFilesRemovedError
from acid_source.layout.acid_state import REMOVING_MARKER, get_acid_state
from acid_source.layout.writeids import ValidTxnList, ValidWriteIdList
from acid_source.storage import Storage


def originals(storage):
    state = get_acid_state(storage, storage.root, ValidWriteIdList.parse(""), ValidTxnList.parse(""))
    return [e.path.split(storage.root)[1] for e in state.originals]


@pytest.mark.parametrize("where", ["HIVE_UNION_SUBDIR_1", "HIVE_UNION_SUBDIR_1/nested"])
def test_a_union_subdirectory_being_removed_is_refused(tmp_path, where):
    (tmp_path / "000000_0").write_bytes(b"d")
    (tmp_path / where).mkdir(parents=True)
    (tmp_path / where / "000001_0").write_bytes(b"d")
    storage = Storage(str(tmp_path))
    assert originals(storage) == ["/000000_0", f"/{where}/000001_0"]
    (tmp_path / where / REMOVING_MARKER).write_bytes(b"")
    with pytest.raises(SnapshotFilesRemovedError) as info:
        originals(storage)
    assert info.value.path == str(tmp_path / where)


def test_a_marker_is_ignored_once_a_base_shadows_the_originals(tmp_path):
    (tmp_path / "HIVE_UNION_SUBDIR_1").mkdir()
    (tmp_path / "HIVE_UNION_SUBDIR_1" / REMOVING_MARKER).write_bytes(b"")
    (tmp_path / "base_0000001").mkdir()
    (tmp_path / "base_0000001" / "bucket_00000").write_bytes(b"x")
    assert originals(Storage(str(tmp_path))) == []
