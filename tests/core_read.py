"""Reading a table through acid_source's core (no Spark), for tests."""

from __future__ import annotations

from acid_source.resolve import resolve_table, scan_for
from acid_source.scan.planner import TableScan
from acid_source.scan.reader import ScanMetrics, read_split
from acid_source.scan.resolved import SnapshotSpec
from acid_source.spark.options import option_errors, read_spec


def read_rows(path, metrics: ScanMetrics | None = None, predicates=(), **options) -> list[dict]:
    """The rows a Spark read with these options returns, read by the core in this process
    (through the option edge: an error names the option, as in Spark)."""
    opts = {"path": str(path), **{k: str(v) for k, v in options.items()}}
    with option_errors():
        scan = scan_for(read_spec(opts))
        ctx, splits = scan.plan(scan.infer_schema(), list(predicates))
        return [row for s in splits for batch in read_split(s, ctx, metrics) for row in batch.to_pylist()]


def native_rows(spark, path, **options) -> list[dict]:
    """The rows of ``acid_source.read`` (Spark's ORC reader for files that need no merge,
    acidorc's merge for the rest), as the core's ``read_rows`` returns them."""
    import acid_source

    return acid_source.read(spark, str(path), **{k: str(v) for k, v in options.items()}).toArrow().to_pylist()


def plan(path, predicates=(), **options):
    opts = {"path": str(path), **{k: str(v) for k, v in options.items()}}
    with option_errors():
        scan = scan_for(read_spec(opts))
        return scan.plan(scan.infer_schema(), list(predicates))


def data(rows, *columns):
    """Rows as sorted tuples of the given columns."""
    return sorted(tuple(r[c] for c in columns) for r in rows)


def rows_with_row_ids(location: str, version: int | None = None) -> list[dict]:
    """Every visible row of a version (None: the latest) as a dict holding its ROW__ID struct,
    through the scan's own reader (engine-free)."""
    resolved = resolve_table(location, snapshot=SnapshotSpec(version_as_of=version))
    ctx, splits = TableScan(resolved, include_row_id=True).plan(resolved.schema(include_row_id=True))
    return [row for split in splits for batch in read_split(split, ctx) for row in batch.to_pylist()]


def read_with_row_ids(location: str, version: int | None = None) -> list[tuple]:
    """Every row of a version (None: the latest) as ``(*values, (writeId, bucketId, rowId))``,
    sorted."""
    out = []
    for row in rows_with_row_ids(location, version):
        rid = row.pop("ROW__ID")
        out.append(tuple(row.values()) + ((rid["writeId"], rid["bucketId"], rid["rowId"]),))
    return sorted(out)
