"""One grammar for every SQL condition acidorc reads (issue 14): option ``partitionFilter``,
``AcidTable.scan(rowFilter=...)``, the DML condition (``AcidTable.delete``) and the WHERE of a
``DELETE`` statement (``acid_source.sql``'s parser). A condition accepted by one is accepted by
the others and selects the same rows (a condition on a data column is refused as
partitionFilter only, with a message naming it); a refused condition gets the same error text
everywhere, only the error's type and the name it carries differ.

The table and the expected rows are written out here, not computed by the code under test."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from acid_source import AcidTable, create_table
from acid_source.errors import InvalidArgumentError, InvalidOptionError
from acid_source.expressions.statements import DeleteStatement, parse_statement
from acid_source.resolve import scan_for
from acid_source.scan.reader import read_split
from acid_source.spark.options import option_errors, read_spec

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("region", pa.string()), ("day", pa.date32())])
ROWS = pa.table({
    "id": pa.array([1, 2, 3, 4, 5], pa.int64()),
    "name": ["a", "b", "c", None, "e"],
    "region": ["eu", "us", "eu", "apac", None],
    "day": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 2),
                     dt.date(2024, 1, 3)], pa.date32()),
}, schema=SCHEMA)
ALL = [1, 2, 3, 4, 5]

#: (condition, the ids it selects, the data column it reads or None)
ACCEPTED = [
    ("upper(region) = 'EU'", [1, 3], None),
    ("region IN ('us', 'apac')", [2, 4], None),
    ("region NOT IN ('eu')", [2, 4], None),
    ("day BETWEEN DATE '2024-01-02' AND DATE '2024-01-03'", [3, 4, 5], None),
    ("region IS NULL", [5], None),
    ("region IS NOT NULL AND day = '2024-01-01'", [1, 2], None),
    ("CAST(day AS STRING) LIKE '2024-01-0_' AND length(region) = 2", [1, 2, 3], None),
    ("coalesce(region, 'none') <> 'eu'", [2, 4, 5], None),
    ("NOT (region = 'eu') OR day > DATE '2024-01-01'", [2, 3, 4, 5], None),
    ("CASE WHEN region = 'eu' THEN day < DATE '2024-01-02' ELSE false END", [1], None),
    ("name IS NULL OR id > 4", [4, 5], "id"),
    ("region = 'eu' AND upper(name) = 'A'", [1], "name"),
]

DEEP = "(" * 201 + "day IS NULL" + ")" * 201
LONG = "id IN (" + ", ".join(str(i) for i in range(20_000)) + ")"

#: (condition, the error text of every condition entry point, what the statement parser says
#: or None when the statement parses and its condition meets the same error when compiled)
REFUSED = [
    ("region = = 'x'", "cannot parse the expression: incomplete EQ expression at line 1, column 10 (near '=')",
     "cannot parse the statement: incomplete EQ expression (near '=')"),
    ("region = 'eu", "cannot read the expression (an unterminated string, quoted name or comment?) at line 1, "
                     "column 10",
     "cannot read the statement (an unterminated string, quoted name or comment?)"),
    (DEEP, "the expression is nested more than 200 levels deep (at line 1, column 201)",
     "the statement is nested more than 200 levels deep"),
    (LONG, f"the expression is {len(LONG)} characters long; at most 100000 are accepted",
     "characters long; at most 100000 are accepted"),
    ("nope = 1", "unknown column 'nope' (known: id, name, region, day) at line 1, column 1", None),
    ("id + 1", "a condition must be true or false, but this expression is of type bigint at line 1, column 1", None),
    ("day + 1", "+ needs numbers, not date at line 1, column 1", None),
    ("region IN (SELECT 'eu')", "IN with a subquery is not supported (list the values instead) at line 1, column 1",
     None),
]


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("ACIDORC_AUTO_COMPACT", "false")
    return f"sqlite:///{tmp_path}/store.db"


def _table(tmp_path, store, name="t") -> str:
    path = str(tmp_path / name)
    create_table(path, SCHEMA, metastoreUrl=store, partitionColumns=["region", "day"])
    AcidTable.load(path, metastoreUrl=store).append(ROWS)
    return path


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _partition_filter(path: str, store: str, condition: str) -> list[int]:
    """A read with option partitionFilter, engine-free: plan it, read every split."""
    with option_errors():  # the Spark read's edge: errors name the option
        scan = scan_for(read_spec({"path": path, "metastoreUrl": store, "partitionFilter": condition}))
        ctx, splits = scan.plan(scan.infer_schema())
        return sorted(i for s in splits for batch in read_split(s, ctx) for i in batch.column("id").to_pylist())


def _row_filter(path: str, store: str, condition: str) -> list[int]:
    return _ids(AcidTable.load(path, metastoreUrl=store).scan(rowFilter=condition).toArrow())


def _left_after_delete(path: str, store: str, condition: str) -> list[int]:
    AcidTable.load(path, metastoreUrl=store).delete(condition)
    return _ids(AcidTable.load(path, metastoreUrl=store).toArrow())


def _statement(path: str, condition: str) -> DeleteStatement:
    statement = parse_statement(f"DELETE FROM acidorc.`{path}` WHERE {condition}")
    assert isinstance(statement, DeleteStatement) and statement.target.path == path
    return statement


@pytest.mark.parametrize("condition, ids, data_column", ACCEPTED, ids=[c for c, _, _ in ACCEPTED])
def test_an_accepted_condition_selects_the_same_rows_everywhere(tmp_path, store, condition, ids, data_column):
    path = _table(tmp_path, store)
    assert _row_filter(path, store, condition) == ids
    if data_column is None:
        assert _partition_filter(path, store, condition) == ids
    else:
        with pytest.raises(InvalidOptionError) as info:
            _partition_filter(path, store, condition)
        assert info.value.option == "partitionFilter"
        assert f"{data_column!r} is not a partition column (partition columns: region, day)" in str(info.value)
    rest = [i for i in ALL if i not in ids]
    assert _left_after_delete(path, store, condition) == rest
    statement = _statement(path, condition)
    assert _left_after_delete(_table(tmp_path, store, "u"), store, statement.condition) == rest


@pytest.mark.parametrize("condition, text, statement_text", REFUSED, ids=[c[:40] for c, _, _ in REFUSED])
def test_a_refused_condition_gets_the_same_error_everywhere(tmp_path, store, condition, text, statement_text):
    path = _table(tmp_path, store)
    with pytest.raises(InvalidOptionError) as option_error:
        _partition_filter(path, store, condition)
    assert str(option_error.value) == f"option 'partitionFilter': {text}"
    with pytest.raises(InvalidArgumentError) as row_filter_error:
        _row_filter(path, store, condition)
    assert str(row_filter_error.value) == f"argument 'rowFilter': {text}"
    with pytest.raises(InvalidArgumentError) as delete_error:
        AcidTable.load(path, metastoreUrl=store).delete(condition)
    assert str(delete_error.value) == f"argument 'condition': {text}"
    assert _ids(AcidTable.load(path, metastoreUrl=store).toArrow()) == ALL
    if statement_text is None:
        statement = _statement(path, condition)
        with pytest.raises(InvalidArgumentError) as compiled_error:
            AcidTable.load(path, metastoreUrl=store).delete(statement.condition)
        assert str(compiled_error.value) == f"argument 'condition': {text}"
    else:
        with pytest.raises(InvalidArgumentError) as statement_error:
            parse_statement(f"DELETE FROM acidorc.`{path}` WHERE {condition}")
        assert statement_error.value.argument == "statement" and statement_text in str(statement_error.value)


def test_an_unpartitioned_table_has_no_partition_columns():
    """On a table without partitions, partitionFilter says there are none."""
    from acid_source.expressions import parse_partition_filter

    with pytest.raises(InvalidArgumentError) as info:
        parse_partition_filter("name = 'a'", SCHEMA, [])
    assert str(info.value) == ("argument 'partitionFilter': 'name' is not a partition column (partition columns: "
                               "none: the table is not partitioned) at line 1, column 1")


@pytest.mark.parametrize("condition, columns", [
    (None, []),
    ("region = 'eu' AND NAME IS NULL", ["region", "name"]),
    ("upper(region) = region", ["region", "region"]),
    ("nope = 1", None),  # not a column of the table: unknown, read them all
    ("region = = 'x'", None),  # does not parse
    (DEEP, None),  # beyond the shared bounds
    (42, None),  # not SQL text (a Spark Column, say)
])
def test_columns_of_a_condition(condition, columns):
    from acid_source.expressions import columns_of

    assert columns_of(condition, SCHEMA.names) == columns
