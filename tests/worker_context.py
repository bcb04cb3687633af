"""The multiprocessing context for worker processes of the concurrency, conflict, crash-point,
write and stale-listing suites: forkserver with acidorc and the workers' modules imported once. A
spawned interpreter or a ``python`` subprocess imports them again, about a second apiece on
two busy cores, and the suites start dozens of them.

A test run has one forkserver, and only the first use starts it with a preload list, so every
suite that uses it asks for the same list: the union of what its workers need (a module that
cannot be imported, as a suite's module when its directory was not collected, is skipped).
Children are forked from that server, not from the test process: what a child needs of the
test's environment it must be given.
"""

from __future__ import annotations

import multiprocessing as mp

PRELOAD = ["rw_workers", "stress_workers", "crash_ops", "writers", "stale_workers", "conflict_workers",
           "compaction_workers", "stream_producers", "acid_source.table", "acid_source.writes",
           "acid_source.dml.arrow_changes", "acid_source.maintenance.compactor", "acid_source.maintenance.cleaner",
           # the clients of the S3 and PostgreSQL suites (imported on first use otherwise, in every child)
           "s3fs", "psycopg"]


def forkserver():
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx
