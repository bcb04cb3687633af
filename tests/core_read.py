"""Reading a table through acid_source's core (no Spark), for tests."""

from __future__ import annotations

from acid_source.options import ReadOptions
from acid_source.resolve import scan_for
from acid_source.scan.reader import ScanMetrics, read_split


def read_rows(path, metrics: ScanMetrics | None = None, predicates=(), **options) -> list[dict]:
    opts = {"path": str(path), **{k: str(v) for k, v in options.items()}}
    scan = scan_for(ReadOptions.parse(opts))
    ctx, splits = scan.plan(scan.infer_schema(), list(predicates))
    return [row for s in splits for batch in read_split(s, ctx, metrics) for row in batch.to_pylist()]


def plan(path, predicates=(), **options):
    opts = {"path": str(path), **{k: str(v) for k, v in options.items()}}
    scan = scan_for(ReadOptions.parse(opts))
    return scan.plan(scan.infer_schema(), list(predicates))


def data(rows, *columns):
    """Rows as sorted tuples of the given columns."""
    return sorted(tuple(r[c] for c in columns) for r in rows)
