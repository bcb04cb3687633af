"""The one key rule of ``set`` / ``values`` dicts and the one store rule of their values
(``dml.assignments``), which the engine-free UPDATE and the Spark UPDATE / MERGE both use;
expected results written out by hand. The Spark side of the same cases:
tests/spark/test_dml_typed_errors.py."""

from __future__ import annotations

import pyarrow as pa
import pytest

from acid_source import create_table
from acid_source.dml.assignments import storable, target_assignments
from acid_source.errors import AcidError, InvalidArgumentError, SchemaError
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

COLUMNS = ["id", "Amount", "p"]


@pytest.mark.parametrize("given, expected", [
    ({"amount": 1}, {"Amount": 1}),
    ({" `AMOUNT` ": 1, "id": 2}, {"Amount": 1, "id": 2}),
    ({"t.amount": 1}, {"Amount": 1}),
    ({"`T`.`amount`": 1}, {"Amount": 1}),
])
def test_keys_take_the_tables_spelling(given, expected):
    assert target_assignments(given, COLUMNS, "set", alias="t") == expected


@pytest.mark.parametrize("given, alias, error, words", [
    ({}, None, InvalidArgumentError, "non-empty dict"),
    ([("id", 1)], None, InvalidArgumentError, "non-empty dict"),
    ({1: 1}, None, InvalidArgumentError, "strings"),
    ({"nope": 1}, None, SchemaError, "no column 'nope'"),
    ({"s.amount": 1}, "t", SchemaError, "target columns only"),
    ({"t.amount": 1}, None, SchemaError, "target columns only"),
    ({"amount": 1, "AMOUNT": 2}, None, InvalidArgumentError, "assigned twice"),
    ({"amount": 1, "t.Amount": 2}, "t", InvalidArgumentError, "assigned twice"),
])
def test_bad_keys_name_the_argument(given, alias, error, words):
    with pytest.raises(error, match=words) as info:
        target_assignments(given, COLUMNS, "clause 2 (set)", alias=alias)
    assert "clause 2 (set)" in str(info.value)


@pytest.mark.parametrize("source, target, expected", [
    ("number", "number", True), ("number", "boolean", True), ("boolean", "number", True),
    ("string", "number", True), ("number", "string", True), ("string", "time", True), ("time", "string", True),
    ("time", "time", True), ("binary", "string", True), ("string", "binary", True),
    ("time", "number", False), ("number", "time", False), ("boolean", "time", False), ("binary", "number", False),
    ("nested", "nested", False), ("nested", "string", False), ("string", "nested", False),
])
def test_the_store_rule(source, target, expected):
    assert storable(source, target) is expected


@pytest.fixture
def engine_free(tmp_path, monkeypatch):
    monkeypatch.setenv("ACIDORC_METASTORE_URL", f"sqlite:///{tmp_path}/store.db")
    Metastore(f"sqlite:///{tmp_path}/store.db").list_tables()
    path = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int32()), ("k", pa.int32()), ("amt", pa.decimal128(10, 2)),
                        ("day", pa.date32())])
    create_table(path, schema)
    AcidTable.load(path).append(pa.table({"id": pa.array([1], pa.int32()), "k": pa.array([1], pa.int32()),
                                          "amt": pa.array([1], pa.decimal128(10, 2)),
                                          "day": pa.array([0], pa.date32())}, schema=schema))
    return AcidTable.load(path)


@pytest.mark.parametrize("column, value", [
    ("k", "DATE'2020-01-01'"), ("day", "5"), ("id", "'abc'"), ("k", "3000000000"), ("amt", "123456789012.5"),
    ("k", "CAST('abc' AS INT)"), ("k", "rand()"), ("k", "nope + 1"),
])
def test_every_engine_free_assignment_error_names_its_column(engine_free, column, value):
    """As the Spark path does: whatever is wrong with a value, the error names the column."""
    with pytest.raises(AcidError) as info:
        engine_free.update("id = 1", {column: value})
    assert isinstance(info.value, (SchemaError, InvalidArgumentError))
    assert f"set[{column}]" in str(info.value)
    if isinstance(info.value, SchemaError):
        assert info.value.column == column
    assert [h["operation"] for h in engine_free.history()] == ["insert"]
