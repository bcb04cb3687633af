"""DELETE and UPDATE without Spark: the target is read at the snapshot with ROW__IDs, the
condition and SET values are evaluated with pyarrow (acid_source.expressions, Spark SQL's
semantics), and one task writes the change rows. For plain-Python users, scripts and the CLI;
the Spark path (acid_source.spark.dml) produces the same change rows with Spark."""

from __future__ import annotations

import decimal
from typing import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from ..errors import InvalidArgumentError, SchemaError
from ..expressions import parse_condition, parse_value_expression
from ..expressions.sqltypes import describe
from ..scan.planner import TableScan
from ..scan.reader import evaluation_error, read_split
from ..scan.resolved import ResolvedTable
from ..scan.splits import ROW_ID_COLUMN as READ_ROW_ID
from ..write.task import TaskResult
from .assignments import does_not_fit_error, storable, target_assignments
from .events import (
    DELETE,
    OP_COLUMN,
    ROW_ID_COLUMN,
    UPDATE_DELETE,
    UPDATE_INSERT,
    ChangePlan,
    relative_dir,
    with_source_dir,
    write_changes,
)


def arrow_changes(resolved: ResolvedTable, plan: ChangePlan, *, condition: str | None,
                  assignments: Mapping[str, object] | None) -> list[TaskResult]:
    """Change rows of ``DELETE WHERE condition`` (``assignments`` None) or ``UPDATE SET
    assignments WHERE condition``, written as one task."""
    schema = resolved.schema()
    cond = None
    if condition is not None:
        if not isinstance(condition, str):
            raise InvalidArgumentError("condition", "without Spark a condition is a SQL string, "
                                       f"not {type(condition).__name__}")
        cond = parse_condition(condition, schema, argument="condition")
    values = {}
    if assignments is not None:
        for column, text in target_assignments(assignments, schema.names, "set").items():
            if not isinstance(text, str):
                raise InvalidArgumentError(f"set[{column}]", "without Spark a value is a SQL string, "
                                           f"not {type(text).__name__}")
            values[column] = parse_value_expression(text, schema, argument=f"set[{column}]",
                                                    store_in=schema.field(column))
            _check_castable(values[column].type, schema.field(column), f"set[{column}]")
    if assignments is None:  # DELETE reads only what it needs: ROW__ID, partitions, the condition's columns
        needed = set(resolved.partition_columns) | (set(cond.columns) if cond else set())
        read_fields = [f for f in schema if f.name in needed]
    else:
        read_fields = list(schema)
    read_schema = pa.schema(read_fields + [pa.field(READ_ROW_ID, resolved.schema(True).field(READ_ROW_ID).type)])
    ctx, splits = TableScan(resolved, include_row_id=True).plan(read_schema)

    def change_rows():
        for split in splits:
            read_from = relative_dir(resolved.storage.root, split.partition_path)  # its delete events go there
            for batch in read_split(split, ctx):
                matched = _matching(batch, cond)
                if matched.num_rows == 0:
                    continue
                if assignments is None:
                    yield with_source_dir(_change_batch(matched, schema, DELETE, keep=set(resolved.partition_columns)),
                                          read_from)
                else:
                    yield with_source_dir(_change_batch(matched, schema, UPDATE_DELETE,
                                                        keep=set(resolved.partition_columns)), read_from)
                    yield _change_batch(_updated(matched, values, schema), schema, UPDATE_INSERT,
                                        keep=set(schema.names), with_row_id=False)

    return [write_changes(plan, 0, change_rows())]


# what evaluating a compiled condition or value can raise: a row Spark fails on (a division
# by zero, an overflow, a malformed string cast), never a defect of the data
_EVALUATION_ERRORS = (pa.ArrowException, ArithmeticError, TypeError, ValueError)


def _matching(batch: pa.RecordBatch, cond) -> pa.RecordBatch:
    if cond is None:
        return batch
    try:
        return batch.filter(cond.expression)
    except _EVALUATION_ERRORS as exc:
        raise InvalidArgumentError("condition", f"cannot be evaluated on the rows of the table: "
                                                f"{evaluation_error(exc)}") from None


def _check_castable(source: pa.DataType, target: pa.Field, argument: str) -> None:
    """Spark SQL's rule for storing a value in a column (:func:`.assignments.storable`, the
    rule the Spark path keeps too); nested types only to the same type."""
    if pa.types.is_null(source) or source == target.type:
        return
    if not (_castable(source, target.type)):
        raise SchemaError(f"{argument}: a value of type {source} cannot be stored in column {target.name!r} "
                          f"of type {target.type}", column=target.name)


def _kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return "time"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    return "nested"


def _castable(source: pa.DataType, target: pa.DataType) -> bool:
    return storable(_kind(source), _kind(target))


def _updated(rows: pa.RecordBatch, values: dict, schema: pa.Schema) -> pa.RecordBatch:
    """The new versions of ``rows``: assigned columns evaluated (on the old values, as SQL
    does), the others kept."""
    projection = {name: values[name].expression if name in values else ds.field(name) for name in schema.names}
    try:
        table = ds.dataset(pa.Table.from_batches([rows])).to_table(columns=projection)
    except _EVALUATION_ERRORS as exc:
        failing, error = next(iter(values)), exc
        for name in values:  # the value that fails, on its own
            try:
                ds.dataset(pa.Table.from_batches([rows])).to_table(columns={name: values[name].expression})
            except _EVALUATION_ERRORS as own:
                failing, error = name, own
                break
        if _STORE_OVERFLOW in evaluation_error(error):
            raise _does_not_fit(rows, values[failing].text, schema, schema.field(failing)) from None
        raise InvalidArgumentError(f"set[{failing}]", f"cannot be evaluated on the rows it updates: "
                                                      f"{evaluation_error(error)}") from None
    arrays = []
    for f in schema:
        arr = table.column(f.name).combine_chunks()
        if arr.type != f.type:
            try:
                arr = arr.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(f"set[{f.name}]: a new value does not fit column {f.name!r} ({f.type}): {exc}",
                                  column=f.name) from None
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


_STORE_OVERFLOW = "[CAST_OVERFLOW_IN_TABLE_INSERT]"


def _does_not_fit(rows: pa.RecordBatch, text: str, schema: pa.Schema, column: pa.Field) -> SchemaError:
    """The error of a SET value out of its column's range, naming the first such value as the
    Spark path does (found again here, on the failing batch only)."""
    raw = parse_value_expression(text, schema, argument=f"set[{column.name}]")
    computed = ds.dataset(pa.Table.from_batches([rows])).to_table(columns={"v": raw.expression}).column("v")
    target = column.type
    shown = next((str(v) for v in computed.to_pylist() if v is not None and not _fits(v, target)), "?")
    return does_not_fit_error(f"set[{column.name}]", column.name, shown, describe(target),
                              f"computed by {text}, of type {describe(raw.type)}")


def _fits(value, target: pa.DataType) -> bool:
    """Whether a computed number fits the column's type once stored (rounded half up to a
    decimal's scale, truncated to an integer), as Spark's store assignment decides."""
    try:
        if pa.types.is_decimal(target):
            exact = decimal.Decimal(str(value)).quantize(decimal.Decimal(1).scaleb(-target.scale),
                                                         rounding=decimal.ROUND_HALF_UP)
            return abs(exact) < decimal.Decimal(10) ** (target.precision - target.scale)
        if pa.types.is_integer(target):
            pa.scalar(int(value), target)
        return True
    except (ArithmeticError, OverflowError, ValueError, pa.ArrowInvalid):
        return False


def _change_batch(rows: pa.RecordBatch, schema: pa.Schema, op: int, *, keep: set[str],
                  with_row_id: bool = True) -> pa.RecordBatch:
    """Change rows in the shape tasks take: the op code, every table column (those not in
    ``keep`` as nulls) and the ROW__ID."""
    n = rows.num_rows
    arrays: list[pa.Array] = [pa.array(np.full(n, op, dtype=np.int8))]
    names = [OP_COLUMN]
    for f in schema:
        idx = rows.schema.get_field_index(f.name)
        arrays.append(rows.column(idx) if f.name in keep and idx >= 0 else pa.nulls(n, f.type))
        names.append(f.name)
    row_id_type = pa.struct([("writeId", pa.int64()), ("bucketId", pa.int32()), ("rowId", pa.int64())])
    idx = rows.schema.get_field_index(READ_ROW_ID)
    arrays.append(rows.column(idx) if with_row_id and idx >= 0 else pa.nulls(n, row_id_type))
    names.append(ROW_ID_COLUMN)
    return pa.RecordBatch.from_arrays(arrays, names=names)
