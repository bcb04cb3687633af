"""Reading one split on an executor: the rows its snapshot sees (decided by
:mod:`.visibility`), shaped into Arrow batches of the output schema - projection and type
conversion of the data columns, partition constants, the ROW__ID column, batch slicing.

Memory is bounded by one stripe plus the delete events of the split's key ranges (and, for
ACID v1 data only, the delta events of the bucket). Runs on executors: imports nothing
driver-side (no planner, no transaction store).
"""

from __future__ import annotations

import re
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyorc.errors

from ..errors import AcidError, CorruptFileError, InvalidArgumentError, SchemaError, SnapshotFilesRemovedError
from ..layout.table_dirs import INSERT_ONLY
from .splits import ROW_ID_COLUMN, BucketSplit, ReadContext
from .visibility import ScanMetrics, SplitVisibility, VisibleRows

__all__ = ["MAX_BATCH_ROWS", "ScanMetrics", "SplitReader", "evaluation_error", "read_split"]

MAX_BATCH_ROWS = 1 << 17

# What the libraries underneath raise when a file holds something unexpected. Any of these
# escaping a read task would be a bug: the task reports a CorruptFileError naming the file.
_LIBRARY_ERRORS = (ArithmeticError, AttributeError, LookupError, TypeError, ValueError, OSError, RuntimeError,
                   pa.ArrowException, pyorc.errors.ORCError)


# A compiled expression raises the error Spark raises on a row (a division by zero, an
# overflow: acid_source.expressions.typed.raising) as a cast of its text that fails
_SPARK_ERROR = re.compile(r"'(\[[A-Z_]+\] [^']*)'")


def evaluation_error(exc: BaseException) -> str:
    """Why evaluating a compiled expression failed: Spark's error where Spark fails on the same
    row (``[DIVIDE_BY_ZERO] Division by zero``), else the library's error."""
    found = _SPARK_ERROR.search(str(exc))
    return found.group(1) if found else f"{type(exc).__name__}: {exc}"


class SplitReader:
    def __init__(self, split: BucketSplit, ctx: ReadContext):
        self.split = split
        self.ctx = ctx
        self.metrics = ScanMetrics()
        self._data_fields = ctx.data_fields
        self.visibility = SplitVisibility(
            split, ctx.storage, insert_only=ctx.table_kind == INSERT_ONLY, with_keys=ctx.include_row_id,
            predicates=ctx.predicates, metrics=self.metrics, write_ids=ctx.write_ids,
            columns=[f.name for f in self._data_fields])

    # --- entry point ---------------------------------------------------------------------------
    def batches(self) -> Iterator[pa.RecordBatch]:
        shaping = None  # the file whose rows are being shaped
        try:
            for visible in self.visibility.rows():
                shaping = visible.source.path
                batch = self._shape(visible)
                if self.ctx.row_filter is not None:
                    batch = self._filter(batch, shaping)
                shaping = None
                for offset in range(0, batch.num_rows, MAX_BATCH_ROWS):
                    part = batch.slice(offset, MAX_BATCH_ROWS)
                    self.metrics.rows_returned += part.num_rows
                    yield part
        except AcidError:
            raise
        except FileNotFoundError as exc:  # a planned file is gone: removed by the cleaner
            path = exc.filename or self.visibility.current_path or self.split.partition_path
            raise SnapshotFilesRemovedError(self.ctx.storage.display(str(path))) from exc
        except _LIBRARY_ERRORS as exc:
            path = shaping or self.visibility.current_path or self.split.partition_path
            raise CorruptFileError(self.ctx.storage.display(path), f"{type(exc).__name__}: {exc}") from exc

    def _filter(self, batch: pa.RecordBatch, path: str) -> pa.RecordBatch:
        """Option rowFilter on the shaped rows. Failing to evaluate it (a CAST of a malformed
        string, in ANSI mode) is the filter's error, not a corrupt file's."""
        try:
            return batch.filter(self.ctx.row_filter)
        except _LIBRARY_ERRORS as exc:
            where = self.ctx.storage.display(path)
            raise InvalidArgumentError("rowFilter", f"cannot be evaluated on the rows of {where}: "
                                                    f"{evaluation_error(exc)}") from exc

    # --- output shaping ------------------------------------------------------------------------
    def _shape(self, visible: VisibleRows) -> pa.RecordBatch:
        data = visible.select(self._columns_of(visible))  # project first: filtering few flat columns is cheap
        keys = visible.surviving_keys() if self.ctx.include_row_id else None
        return self._output(data, visible.num_rows, keys)

    def _columns_of(self, visible: VisibleRows) -> list[pa.Array]:
        return match_columns(visible.names, visible.columns, self._data_fields, visible.length,
                             self.ctx.storage.display(visible.source.path))

    def _output(self, data: list[pa.Array], n: int, keys) -> pa.RecordBatch:
        arrays = list(data)
        schema = self.ctx.output_schema
        for name, value in zip(self.ctx.partition_columns, self.split.partition_values):
            type_ = schema.field(name).type
            arrays.append(_constant(value, type_, n))
        if self.ctx.include_row_id:
            o, b, r = keys
            arrays.append(pa.StructArray.from_arrays(
                [pa.array(o, pa.int64()), pa.array(b, pa.int32()), pa.array(r, pa.int64())],
                fields=list(schema.field(ROW_ID_COLUMN).type),
            ))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


# --- type conversion -------------------------------------------------------------------------
_TIME_UNITS = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def widens(source: pa.DataType, target: pa.DataType) -> bool:
    """Does reading ``source`` values as ``target`` only widen them, as Hive's schema evolution
    does (int -> bigint, int -> double, float -> double, decimal(p,s) -> a decimal holding it,
    timestamps to a coarser unit - Spark and Hive hold microseconds)? Such reads cannot fail."""
    if source == target:
        return True
    if pa.types.is_integer(source):
        if pa.types.is_integer(target):
            return pa.types.is_signed_integer(target) and target.bit_width >= source.bit_width
        return pa.types.is_floating(target)
    if pa.types.is_floating(source) and pa.types.is_floating(target):
        return target.bit_width >= source.bit_width
    if pa.types.is_decimal(source) and pa.types.is_decimal(target):
        return target.scale >= source.scale and target.precision - target.scale >= source.precision - source.scale
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return _TIME_UNITS[target.unit] <= _TIME_UNITS[source.unit]
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        return source.num_fields == target.num_fields and all(
            widens(source.field(i).type, target.field(i).type) for i in range(source.num_fields))
    if pa.types.is_map(source) and pa.types.is_map(target):
        return widens(source.key_type, target.key_type) and widens(source.item_type, target.item_type)
    if (pa.types.is_list(source) or pa.types.is_large_list(source)) and (
            pa.types.is_list(target) or pa.types.is_large_list(target)):
        return widens(source.value_type, target.value_type)
    return False


def convert(arr: pa.Array, field: pa.Field, path: str) -> pa.Array:
    """A file's column as the table's type. Widening is silent; any other conversion is
    checked value by value and a value that does not fit is a SchemaError naming the file and
    column (never a silently wrapped or truncated value)."""
    if arr.type == field.type:
        return arr
    if widens(arr.type, field.type):
        return arr.cast(field.type, safe=False)
    try:
        # the one loss a checked read accepts: sub-microsecond digits of nested timestamps
        return pc.cast(arr, options=pc.CastOptions(field.type, allow_time_truncate=True))
    except pa.ArrowInvalid as exc:
        raise SchemaError(f"{path}: column {field.name!r} holds {arr.type} values that do not fit the "
                          f"table's type {field.type}: {exc}", path=path, column=field.name) from None
    except pa.ArrowNotImplementedError as exc:
        raise SchemaError(f"{path}: column {field.name!r} of type {arr.type} cannot be read as "
                          f"{field.type}: {exc}", path=path, column=field.name) from None


def match_columns(names: Sequence[str], arrays: Sequence[pa.Array], fields: Sequence[pa.Field], length: int,
                  path: str) -> list[pa.Array]:
    """The arrays for ``fields`` from a file's columns, matched by name (positionally for files
    whose columns are named ``_colN``) and converted to the field's type; columns the file
    lacks become nulls."""
    by_name = {name.lower(): arr for name, arr in zip(names, arrays)}
    positional = bool(names) and all(n.startswith("_col") for n in names)
    out = []
    for i, field in enumerate(fields):
        arr = by_name.get(field.name.lower())
        if arr is None and positional and i < len(arrays):
            arr = arrays[i]
        out.append(pa.nulls(length, field.type) if arr is None else convert(arr, field, path))
    return out


def _constant(value, type_: pa.DataType, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, type_)
    return pa.array([value], type_).take(pa.array(np.zeros(n, dtype=np.int32)))


def read_split(split: BucketSplit, ctx: ReadContext, metrics: ScanMetrics | None = None) -> Iterator[pa.RecordBatch]:
    reader = SplitReader(split, ctx)
    try:
        yield from reader.batches()
    finally:
        if metrics is not None:
            metrics.add(reader.metrics)
