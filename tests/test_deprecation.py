"""The public API's one spelling (camelCase, keyword-only tails) and the old spellings it still
accepts for one release: each works, warns naming the new spelling, and giving both is an error."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest

import acid_source
from acid_source import AcidTable, InvalidArgumentError, clean_aborted_writes, create_table, drop_table, vacuum
from acid_source.deprecation import keyword_only, renamed

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/store.db"


def test_old_keyword_names_work_and_warn_with_the_new_name(tmp_path, url):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        info = create_table(str(tmp_path / "t"), SCHEMA, partition_columns=["day"], metastore_url=url)
    assert info.partition_columns == ("day",)
    assert sorted(str(w.message) for w in caught if w.category is DeprecationWarning) == [
        "acidorc: create_table(metastore_url=...) is deprecated, use metastoreUrl=... (the old spelling goes in "
        "acidorc 0.3)",
        "acidorc: create_table(partition_columns=...) is deprecated, use partitionColumns=... (the old spelling "
        "goes in acidorc 0.3)"]
    assert all(w.filename == __file__ for w in caught)  # the warning points at the caller's line
    with pytest.warns(DeprecationWarning, match="dry_run"):
        report = vacuum(info.location, dry_run=True, metastoreUrl=url)
    assert report["dryRun"] is True
    with pytest.warns(DeprecationWarning, match="expire_after_seconds"):
        cleanup = clean_aborted_writes(info.location, expire_after_seconds=60, metastoreUrl=url)
    with pytest.warns(DeprecationWarning, match=r"CleanupReport.expired_transactions is deprecated, use "
                                                r"expiredTransactions"):
        assert cleanup.expired_transactions == cleanup.expiredTransactions == []
    with pytest.warns(DeprecationWarning, match="if_exists"):
        assert drop_table(info.location, if_exists=True, metastoreUrl=url) == info


def test_a_value_under_both_names_is_refused_and_creates_nothing(tmp_path, url):
    with pytest.raises(InvalidArgumentError, match="partitionColumns.*given twice"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        create_table(str(tmp_path / "t"), SCHEMA, partitionColumns=["day"], partition_columns=["day"],
                     metastoreUrl=url)
    assert not (tmp_path / "t").exists()


def test_options_after_the_first_are_keyword_only_and_positional_use_warns(tmp_path, url):
    t = AcidTable.create(str(tmp_path / "t"), SCHEMA, partitionColumns=["day"], metastoreUrl=url)
    assert isinstance(t, AcidTable) and t.partitionColumns == ["day"] and t.version == 0
    rows = pa.table({"id": [1, 2], "day": ["a", "b"]})
    t.append(rows)
    with pytest.warns(DeprecationWarning, match=r"passing partition of AcidTable.overwrite\(\) by position"):
        t.overwrite(pa.table({"id": [3]}), "day=a")
    assert sorted(t.toArrow().column("id").to_pylist()) == [2, 3]
    with pytest.warns(DeprecationWarning, match="passing dryRun of AcidTable.vacuum"):
        assert t.vacuum(True)["dryRun"] is True
    with pytest.raises(TypeError, match="takes 2 positional arguments but 4 were given"):
        t.compact("major", None, "extra")


def test_the_transaction_class_is_no_longer_a_top_level_name():
    with pytest.warns(DeprecationWarning, match="acid_source.Transaction is deprecated, use AcidTable.newWrite"):
        cls = acid_source.Transaction
    from acid_source.txn import Transaction

    assert cls is Transaction and "Transaction" not in acid_source.__all__


def test_the_decorators_keep_the_signature_help_shows():
    @renamed(old_name="newName")
    @keyword_only
    def f(a, *, newName=1, other=2):
        """doc"""
        return a, newName, other

    import inspect

    assert str(inspect.signature(f)) == "(a, *, newName=1, other=2)" and f.__doc__ == "doc"
    assert f(1, newName=5) == (1, 5, 2)
    with pytest.warns(DeprecationWarning):
        assert f(1, 7, 8) == (1, 7, 8)
    with pytest.raises(TypeError, match="multiple values for argument 'newName'"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        f(1, 7, newName=8)
