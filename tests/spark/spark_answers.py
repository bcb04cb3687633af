"""What the tests that hold engine-free evaluation to Spark's answers share: rows as a temp
view, one SELECT's rows in id order, and one value compared with Spark's (NaN equals NaN, and
-0.0 is not 0.0)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator

import pyarrow as pa


def same_value(ours, theirs) -> bool:
    if isinstance(ours, float) and isinstance(theirs, float):
        if math.isnan(ours) or math.isnan(theirs):
            return math.isnan(ours) and math.isnan(theirs)
        return ours == theirs and math.copysign(1, ours) == math.copysign(1, theirs)
    return type(ours) is type(theirs) and ours == theirs


def rows_view(spark, rows: pa.Table, prefix: str) -> Iterator[str]:
    """A module fixture's body: ``rows`` as a temp view of Spark in ANSI mode, dropped after."""
    view = f"{prefix}_{uuid.uuid4().hex[:8]}"
    spark.createDataFrame(rows).createOrReplaceTempView(view)
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    yield view
    spark.catalog.dropTempView(view)


def selected(spark, view: str, columns: str) -> list:
    """``SELECT id, <columns>`` of the view, in id order."""
    return sorted(spark.sql(f"SELECT id, {columns} FROM {view}").collect(), key=lambda r: r["id"])
