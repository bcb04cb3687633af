"""The one key rule of ``set`` / ``values`` dicts (``dml.assignments``), which the engine-free
UPDATE and the Spark UPDATE / MERGE both use; expected results written out by hand."""

from __future__ import annotations

import pytest

from acid_source.dml.assignments import target_assignments
from acid_source.errors import InvalidArgumentError, SchemaError

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
