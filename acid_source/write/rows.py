"""Routing the rows of an Arrow batch to (partition directory, bucket) groups, vectorized:
one sort by the routing keys, then zero-copy slices of each run."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidOptionError
from ..layout.partitions import partition_segment


def format_partition_value(value) -> str | None:
    """A partition value as Hive writes it in a directory name (None: default partition)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, decimal.Decimal, int, float, str)):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


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
            raise InvalidOptionError("partition", f"{name!r} is not a partition column of the table "
                                                  f"(partition columns: {', '.join(partition_columns) or 'none'})")
        if value in (".", ".."):  # (other values are escaped into one directory name)
            raise InvalidOptionError("partition", f"value {value!r} of {name!r} would leave the table directory")
        if wanted[name.lower()] in values:
            raise InvalidOptionError("partition", f"{name!r} is given twice")
        values[wanted[name.lower()]] = value
    missing = [c for c in partition_columns if c not in values]
    if missing:
        raise InvalidOptionError("partition", f"no value for partition column(s) {', '.join(missing)}")
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
        change[1:] |= ~(same | both_null)
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    rows = batch.take(order)
    firsts = sorted_keys.take(pa.array(starts)).to_pylist()  # one Python value per group only
    for first, start, end in zip(firsts, starts, ends):
        yield tuple(first.values()), rows.slice(int(start), int(end - start))
