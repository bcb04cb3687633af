"""Bad input gets a clear, typed error naming the path or option - never an empty result."""

import pytest
from core_read import read_rows
from hivegen import HiveTable, delta_name

from acid_source.errors import (
    AcidError,
    CorruptFileError,
    InvalidOptionError,
    InvalidSnapshotError,
    NotAnAcidTableError,
    SchemaError,
    TableNotFoundError,
)

COLS = [("id", "int"), ("name", "string")]


def table(tmp_path):
    t = HiveTable(tmp_path / "t", COLS)
    t.insert(1, {0: [(1, "a"), (2, "b")]})
    return t


def test_missing_path(tmp_path):
    with pytest.raises(TableNotFoundError, match="does-not-exist") as info:
        read_rows(tmp_path / "does-not-exist")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, AcidError)


def test_plain_orc_directory_is_not_an_acid_table(tmp_path):
    HiveTable(tmp_path / "plain", COLS).write_plain(tmp_path / "plain" / "part-0.orc", [(1, "a")])
    with pytest.raises(NotAnAcidTableError, match="tableType=full"):
        read_rows(tmp_path / "plain")


def test_a_file_is_not_a_table(tmp_path):
    f = tmp_path / "file.orc"
    f.write_bytes(b"ORC")
    with pytest.raises(NotAnAcidTableError, match="file.orc"):
        read_rows(f)


def test_corrupt_data_file(tmp_path):
    t = table(tmp_path)
    bad = t.root / delta_name(2, 2, 0) / "bucket_00000"
    bad.parent.mkdir()
    bad.write_bytes(b"this is not an ORC file at all" * 10)
    with pytest.raises(CorruptFileError, match="delta_0000002_0000002_0000/bucket_00000"):
        read_rows(t.root, validWriteIds="default.t:2:9223372036854775807::")


def test_truncated_data_file(tmp_path):
    t = table(tmp_path)
    t.insert(2, {0: [(i, "x" * 50) for i in range(2000)]})
    victim = t.root / delta_name(2, 2, 0) / "bucket_00000"
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    with pytest.raises(CorruptFileError, match=str(victim)):
        read_rows(t.root)


def test_delete_events_in_the_wrong_bucket_file(tmp_path):
    from hivegen import DELETE, Event, bucket_property

    t = HiveTable(tmp_path / "t", COLS)
    t.insert(1, {0: [(1, "a")], 1: [(2, "b")]})
    # a delete of bucket 0's row, written into bucket 1's file
    d = t.dir(delta_name(2, 2, 0, delete=True))
    t.write_events(d / "bucket_00001", [Event(DELETE, 1, bucket_property(0), 0, 2, None)])
    with pytest.raises(CorruptFileError, match="different bucket ids"):
        read_rows(t.root)


def test_unknown_option_names_it(tmp_path):
    with pytest.raises(InvalidOptionError, match="'validWriteId'") as info:
        read_rows(table(tmp_path).root, validWriteId="x")
    assert "validWriteIds" in str(info.value)  # the message lists what is valid


@pytest.mark.parametrize("option, value", [("includeRowId", "maybe"), ("maxSplitBytes", "lots"),
                                           ("maxSplitBytes", "0"), ("tableType", "delta")])
def test_malformed_option_values(tmp_path, option, value):
    with pytest.raises(InvalidOptionError, match=option):
        read_rows(table(tmp_path).root, **{option: value})


def test_unparsable_write_id_list(tmp_path):
    with pytest.raises(InvalidSnapshotError, match="validWriteIds"):
        read_rows(table(tmp_path).root, validWriteIds="default.t:ten")


def test_row_id_on_insert_only_table(tmp_path):
    t = HiveTable(tmp_path / "mm", COLS)
    t.write_plain(t.dir(delta_name(1, 1, 0)) / "000000_0", [(1, "a")])
    with pytest.raises(InvalidOptionError, match="insert-only"):
        read_rows(t.root, includeRowId="true")


def test_empty_table_without_schema(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SchemaError, match="schema"):
        read_rows(tmp_path / "empty")


def test_errors_leave_files_untouched(tmp_path):
    t = table(tmp_path)
    before = {p: p.read_bytes() for p in t.root.rglob("*") if p.is_file()}
    with pytest.raises(AcidError):
        read_rows(t.root, validWriteIds="garbage")
    assert {p: p.read_bytes() for p in t.root.rglob("*") if p.is_file()} == before


# --- every error class pickles with its message and attributes -----------------------------

import pickle  # noqa: E402

import acid_source  # noqa: E402
from acid_source import errors  # noqa: E402

# One representative construction per error class: (positional args, keyword args). A new
# error class without an entry fails test_every_error_class_has_an_example.
EXAMPLES = {
    errors.InvalidOptionError: (("validWriteIds", "expected a snapshot"), {}),
    errors.InvalidArgumentError: (("num_buckets", "must be >= 0"), {}),
    errors.InvalidSnapshotError: (("d.t:x", "bad id 'x'"), {"option": "validWriteIds"}),
    errors.TableLocationNotFoundError: (("/warehouse/t",), {}),
    errors.MissingDataError: (("s3://lake/t/p=1", [3, 4]), {"detail": "; refusing to compact"}),
    errors.PathError: (("/warehouse/t/p=1", "listing failed"), {}),
    errors.NotAnAcidTableError: (("/warehouse/t", "no base or delta directory"), {}),
    errors.UnsafePathError: (("/warehouse/t/link", "a symbolic link leads outside the table"), {}),
    errors.StorageError: (("/warehouse/t", "deleting the files failed: permission denied"), {}),
    errors.CorruptFileError: (("/warehouse/t/base_1/bucket_00000", "truncated"), {}),
    errors.NotEnoughHistoryError: (("/warehouse/t", "base_5", "d.t:3:3::"), {}),
    errors.SnapshotFilesRemovedError: (("/warehouse/t/delta_0000002_0000002_0000",), {}),
    errors.HistoryUnavailableError: (("/w/t", 3, "startingVersion=2, endingVersion=5"), {"partition": "p=1",
                                                                                     "directory": "base_0000005_v9"}),
    errors.SchemaError: (("bad DDL",), {"path": "/warehouse/t", "column": "id", "position": 3}),
    errors.MetastoreError: (("database is locked",), {"url": "sqlite:///m.db"}),
    errors.TableNotRegisteredError: ((), {"location": "/warehouse/t", "name": "d.t"}),
    errors.TableExistsError: (("taken",), {"location": "/warehouse/t", "name": "d.t"}),
    errors.TransactionStateError: (("not open",), {"txn_id": 7, "state": "aborted"}),
    errors.MetastoreNotFoundError: (("no such store",), {"url": "sqlite:///nope.db"}),
    errors.MetastoreUnreachableError: (("no answer",), {"url": "thrift://h:9083"}),
    errors.LockTimeoutError: (("lock not granted",), {"table": "db.t", "url": "thrift://h:9083",
                                                      "blocker": "lock 7"}),
    errors.StoreBehindStorageError: (("behind",), {"location": "/w/t", "write_id": 2,
                                                   "directories": ("/w/t/delta_0000002_0000002_0000",),
                                                   "url": "sqlite:///m.db"}),
    errors.VersionNotFoundError: (("write id 9 is not committed",), {"table_id": 1, "write_id": 9}),
    errors.ConflictError: (("lost",), {"txn_id": 8, "committed_txn_id": 7, "location": "/w/t",
                                       "partition": "ds=1"}),
    errors.UnsupportedOperationError: (("streaming read", "not available yet"), {}),
    errors.BatchAlreadyCommittedError: (("/checkpoints/q1", 7), {"committed_txn_id": 12, "txn_id": 15}),
    errors.MergeCardinalityError: (("t.id = s.id", "/w/t", "(writeId 1, bucketId 536870912, rowId 0)"), {}),
}


def all_error_classes():
    seen, todo = [], [errors.AcidError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.append(sub)
                todo.append(sub)
    return seen


def test_every_error_class_has_an_example():
    missing = [c.__name__ for c in all_error_classes() if c not in EXAMPLES]
    assert not missing, f"add example arguments to EXAMPLES for {missing}"


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda c: c.__name__)
def test_errors_survive_pickling_with_message_and_context(cls):
    args, kwargs = EXAMPLES[cls]
    error = cls(*args, **kwargs)
    context = {k: v for k, v in vars(error).items() if v is not None}
    assert context, f"{cls.__name__} carries no context attributes"
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls
    assert str(copy) == str(error) and copy.args == error.args
    assert vars(copy) == vars(error)
    assert str(pickle.loads(pickle.dumps(copy))) == str(error)  # stable over several hops


def test_table_location_not_found_keeps_its_message_once():
    error = pickle.loads(pickle.dumps(errors.TableLocationNotFoundError("/w/t")))
    assert str(error) == "table path does not exist: /w/t" and error.path == "/w/t"
    assert isinstance(error, FileNotFoundError)


def test_old_error_names_are_the_same_classes():
    assert acid_source.TableNotFoundError is acid_source.TableLocationNotFoundError
    assert acid_source.NoSuchTableError is acid_source.TableNotRegisteredError
    assert errors.TableNotFoundError is errors.TableLocationNotFoundError
    for name in ("TableLocationNotFoundError", "TableNotRegisteredError", "InvalidArgumentError",
                 "UnsupportedOperationError"):
        assert name in acid_source.__all__


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda c: c.__name__)
def test_every_error_class_is_a_public_name(cls):
    # users catch what acidorc raises by the names acid_source exports
    assert cls.__name__ in acid_source.__all__
    assert getattr(acid_source, cls.__name__) is cls
