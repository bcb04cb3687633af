"""Process bodies for tests/objectstore/test_stale_listing.py (module level: forked from the
forkserver of tests/worker_context.py, :func:`serve_with_environment`).

Each worker is a long-lived process, as Spark's driver, its reused Python workers and any
``AcidTable`` user are: the table handle (and whatever file-system instances the process holds)
lives across commands, while other processes commit.
"""

from __future__ import annotations

import os

import process_workers

_tables: dict = {}


def _table(location: str):
    from acid_source.table import AcidTable

    if location not in _tables:
        _tables[location] = AcidTable.load(location)
    return _tables[location]


def count(conn, location: str, row_filter: str | None = None) -> int:
    return _table(location).scan(rowFilter=row_filter).count()


def ids(conn, location: str) -> list[int]:
    return sorted(_table(location).toArrow().column("id").to_pylist())


def delete(conn, location: str, condition: str) -> dict:
    return _table(location).delete(condition)


def append(conn, location: str, ids: list[int], p: int) -> dict:
    import pyarrow as pa

    rows = pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([p] * len(ids), pa.int32())})
    return _table(location).append(rows)


def compact(conn, location: str, kind: str, partition_filter: str | None = None) -> dict:
    return _table(location).compact(kind, partitionFilter=partition_filter)


def revert_listing_fix(conn) -> None:
    """Give this process fsspec's default caches back (the code before the fix): one shared
    file-system instance per process, whose listings stay until this process writes."""
    import acid_source.storage

    acid_source.storage.uncached = lambda options: dict(options)


COMMANDS = {"count": count, "ids": ids, "delete": delete, "append": append, "compact": compact,
            "revert_listing_fix": revert_listing_fix}


def serve(conn) -> None:
    process_workers.serve(conn, COMMANDS)


def serve_with_environment(conn, environment: dict[str, str]) -> None:
    """:func:`serve` with the test's environment (the table's credentials among it): a child of
    the forkserver starts with the server's, which is older."""
    os.environ.clear()
    os.environ.update(environment)
    serve(conn)
