"""Routing the rows of an Arrow batch to (partition directory, bucket) groups, vectorized:
one sort by the routing keys, then zero-copy slices of each run."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError, SchemaError
from ..layout.partitions import NAN, Float32Value, java_float_string, parse_partition_segment, partition_segment
from ..layout.table_dirs import convert_partition_value


def format_partition_value(value) -> str | None:
    """A partition value as Hive writes it in a directory name (None: default partition).

    Hive names a dynamic partition by the ``toString`` of the value's Writable
    (``FileSinkOperator``), and so do we:

    - double / float: ``Double.toString`` / ``Float.toString`` (:func:`java_float_string`):
      ``NaN``, ``Infinity``, ``-Infinity``, ``1.0E20``, ``1.0E-5``, ``100.0``; a float column's
      1.1 is ``1.1`` (its values come as :class:`Float32Value` from :func:`group_rows`). Spark
      casts to string the same way. -0.0 is written as ``0.0``: -0.0 and 0.0 are one value to
      a comparison, and Spark's NormalizeFloatingNumbers makes them one grouping key (and
      every NaN one NaN), so their rows share one partition, ``0.0``. (Hive would name them
      apart, ``-0.0`` and ``0.0``; a ``-0.0`` directory Hive wrote still reads, and rows of
      value 0 written later go where rows of that value already are.)
    - decimal: ``HiveDecimalWritable.toString``: no trailing zeros, no exponent (``1.5``,
      ``100``, ``0``). Spark keeps the column's scale (``1.50``); Hive is the format here.
    - timestamp: Hive's ``Timestamp.toString``: ``2020-01-02 03:04:05``, a fraction only when
      there is one and without trailing zeros (``...:05.5``), as Spark casts it too; a value
      with a time zone is named by its UTC wall clock, as the ORC files hold it.
    - date ``yyyy-mm-dd``, boolean ``true`` / ``false``, integers and strings as they are.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value == 0:
            return "0.0"
        return java_float_string(value, single=isinstance(value, Float32Value))
    if isinstance(value, dt.datetime):
        return _timestamp_string(value)
    if isinstance(value, decimal.Decimal):
        return _decimal_string(value)
    if isinstance(value, (dt.date, int, str)):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _timestamp_string(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    text = value.isoformat(sep=" ", timespec="seconds")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text


def _decimal_string(value: decimal.Decimal) -> str:
    if not value.is_finite():
        return str(value)
    if value == 0:
        return "0"
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def partition_path(columns: list[str], values: tuple) -> str:
    return "/".join(partition_segment(c, format_partition_value(v)) for c, v in zip(columns, values))


def static_partition_values(pairs, partition_columns: list[str]) -> dict[str, str | None]:
    """The values of a static partition (``((column, value), ...)``, see
    :func:`acid_source.options.parse_partition_spec`) by partition column; every partition
    column must be given once, and no value may leave the table directory."""
    wanted = {c.lower(): c for c in partition_columns}
    values: dict[str, str | None] = {}
    for name, value in pairs:
        if name.lower() not in wanted:
            raise InvalidArgumentError("partition", f"{name!r} is not a partition column of the table "
                                                    f"(partition columns: {', '.join(partition_columns) or 'none'})")
        if value in (".", ".."):  # (other values are escaped into one directory name)
            raise InvalidArgumentError("partition", f"value {value!r} of {name!r} would leave the table directory")
        if wanted[name.lower()] in values:
            raise InvalidArgumentError("partition", f"{name!r} is given twice")
        values[wanted[name.lower()]] = value
    missing = [c for c in partition_columns if c not in values]
    if missing:
        raise InvalidArgumentError("partition", f"no value for partition column(s) {', '.join(missing)}")
    return values


def group_rows(batch: pa.RecordBatch, key_columns: list[pa.Array]) -> Iterator[tuple[tuple, pa.RecordBatch]]:
    """Split ``batch`` by the values of ``key_columns``: yields (key values, rows)."""
    n = batch.num_rows
    if n == 0:
        return
    if not key_columns:
        yield (), batch
        return
    keys = pa.table({f"k{i}": col for i, col in enumerate(key_columns)})
    order = pc.sort_indices(keys, sort_keys=[(f"k{i}", "ascending") for i in range(len(key_columns))])
    sorted_keys = keys.take(order)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for col in sorted_keys.columns:
        arr = col.combine_chunks()
        same = pc.fill_null(pc.equal(arr[1:], arr[:-1]), False).to_numpy(zero_copy_only=False)
        both_null = (pc.is_null(arr[1:]).to_numpy(zero_copy_only=False)
                     & pc.is_null(arr[:-1]).to_numpy(zero_copy_only=False))
        if pa.types.is_floating(arr.type):  # every NaN is one key (they sort together, last)
            nan = pc.fill_null(pc.is_nan(arr), False).to_numpy(zero_copy_only=False)
            both_null |= nan[1:] & nan[:-1]
        change[1:] |= ~(same | both_null)
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    rows = batch.take(order)
    firsts = sorted_keys.take(pa.array(starts)).to_pylist()  # one Python value per group only
    types = [col.type for col in sorted_keys.columns]
    for first, start, end in zip(firsts, starts, ends):
        values = tuple(_key_value(v, t) for v, t in zip(first.values(), types))
        yield values, rows.slice(int(start), int(end - start))


def _key_value(value, type_: pa.DataType):
    return partition_key(value, type_)


def partition_key(value, type_: pa.DataType):
    """A partition value of a column of ``type_`` as one key, as Spark normalises grouping
    keys: -0.0 is 0.0 (they compare equal, so the group holds both), NaN is :data:`NAN` (equal
    to every NaN, so that the directory of an existing NaN partition is found by value); a
    finite value of a 32-bit float column is a :class:`Float32Value` rounded to 32 bits (it
    names its partition as ``Float.toString``, and a directory ``f=1.1`` is the row's 1.1f).
    Rows, static partition values and existing directories' values all pass through here, so
    that equal values are equal keys."""
    if isinstance(value, float) and pa.types.is_floating(type_):
        if value == 0:
            return 0.0
        if math.isnan(value):
            return NAN
        if pa.types.is_float32(type_) and math.isfinite(value):
            return Float32Value(float(np.float32(value)))
    return value


def existing_partition_dirs(paths, columns: list[str], types: list[pa.DataType]) -> tuple[tuple[tuple, str], ...]:
    """(values, path) of each existing partition directory in ``paths`` (relative to the table
    root, ``col=value/...``), values as :func:`partition_key` makes them, for
    :attr:`WritePlan.partition_dirs <acid_source.write.task.WritePlan.partition_dirs>`. A path
    that is not a partition of these columns, or whose value does not parse, is left out."""
    lowered = [c.lower() for c in columns]
    found = set()
    for path in paths:
        segments = [s for s in str(path).strip("/").split("/") if s]
        parsed = [p for p in (parse_partition_segment(s) for s in segments) if p is not None]
        if len(parsed) != len(segments) or len(parsed) != len(columns) or any(
                p[0].lower() != c for p, c in zip(parsed, lowered)):
            continue
        try:
            values = tuple(partition_key(convert_partition_value(p[1], t), t) for p, t in zip(parsed, types))
        except SchemaError:
            continue
        found.add((values, "/".join(segments)))
    return tuple(sorted(found, key=lambda pair: pair[1]))
