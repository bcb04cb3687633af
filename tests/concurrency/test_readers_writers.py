"""Concurrent writers and readers on one table: no torn reads, no lost commits.

Two tests:

* a stress test: writer processes append multi-task, multi-partition transactions while
  reader processes read the whole table again and again. Every read must show each
  transaction whole or not at all, and the set of transactions a read shows must be the ones
  committed up to some point (a prefix of the store's commit order); transactions never
  disappear from one read to the next; the final read holds exactly every commit; write ids
  are unique.
* a deterministic one for the order of snapshot and listing: a transaction commits while a
  reader is listing the table (between two partition directories). A reader that took its
  snapshot first ignores it; one that listed first would show the rows of only the partitions
  it listed after the commit.

The stress test finds a listing-first reader too, but only by chance: it did in every run of
4 s or more (the listing slows down as the table grows) and in none of 3 s; hence the default.
``ACIDORC_STRESS_SECONDS`` (default 8) is how long the stress test's writers write; run e.g.
``ACIDORC_STRESS_SECONDS=60 pytest -s tests/concurrency`` for the long variant. Throughput is
printed (visible with ``-s``).
"""

from __future__ import annotations

import os
import queue
from collections import Counter

import fsspec
import pyarrow as pa
import pytest
import rw_workers
import worker_context
from fsspec.implementations.local import LocalFileSystem

from acid_source import create_table
from acid_source.metastore import Metastore
from acid_source.table import AcidTable

WRITERS = 3
READERS = 2
MIN_COMMITS = 3  # per writer, however slow the machine


def stress_seconds() -> float:
    text = os.environ.get("ACIDORC_STRESS_SECONDS", "").strip()
    return float(text) if text else 8.0


def run_workers(location: str, url: str, seconds: float) -> dict:
    """Start the writers and readers together; their reports by (kind, number)."""
    ctx = worker_context.forkserver()
    barrier = ctx.Barrier(WRITERS + READERS)
    writers_done = ctx.Event()
    results = ctx.Queue()
    processes = [ctx.Process(target=rw_workers.writer, args=(location, url, w, seconds, MIN_COMMITS, barrier, results))
                 for w in range(WRITERS)]
    processes += [ctx.Process(target=rw_workers.reader, args=(location, url, r, barrier, writers_done, results))
                  for r in range(READERS)]
    for p in processes:
        p.start()
    reports: dict = {}
    try:
        budget = 120 + 4 * seconds  # a safety net against a hung worker, not a synchronization
        while len(reports) < len(processes):
            try:
                kind, number, report = results.get(timeout=budget)
            except queue.Empty:
                pytest.fail(f"workers did not report within {budget:.0f}s; got {sorted(reports)}")
            assert "error" not in report, f"{kind} {number} failed:\n{report['error']}"
            reports[(kind, number)] = report
            if sum(1 for k, _ in reports if k == "writer") == WRITERS:
                writers_done.set()
    finally:
        writers_done.set()
        for p in processes:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
                p.join()
    return reports


def test_readers_never_see_a_partial_transaction(tmp_path, store_url):
    """On each store backend (``store_url``: SQLite, PostgreSQL)."""
    seconds = stress_seconds()
    location = str(tmp_path / "table")
    url = store_url
    info = create_table(location, rw_workers.SCHEMA, partitionColumns=["part"], metastoreUrl=url)

    reports = run_workers(location, url, seconds)

    commits = [c for (kind, _), r in reports.items() if kind == "writer" for c in r["commits"]]
    tags = {tag for tag, _, _ in commits}
    write_ids = [w for _, w, _ in commits]
    assert len(set(write_ids)) == len(write_ids), "a write id was handed out twice"
    assert len({t for _, _, t in commits}) == len(commits), "a transaction id was handed out twice"
    history = Metastore(url).history(info.table_id)
    assert sorted(h["write_id"] for h in history) == sorted(write_ids), "the store's history differs from the commits"

    reader_reports = [r for (kind, _), r in reports.items() if kind == "reader"]
    problems = [p for r in reader_reports for p in r["problems"]]
    assert not problems, f"{len(problems)} bad reads, e.g.:\n" + "\n".join(problems[:20])
    tag_of = {w: tag for tag, w, _ in commits}
    commit_order = [tag_of[h["write_id"]] for h in sorted(history, key=lambda h: h["commit_seq"])]
    for r in reader_reports:
        for seen in r["snapshots"]:
            prefix = set(commit_order[:len(seen)])
            assert set(seen) == prefix, (
                f"a read saw {len(seen)} transactions that are not the first {len(seen)} committed: "
                f"extra {sorted(set(seen) - prefix)}, missing {sorted(prefix - set(seen))}")
        assert r["last"] == tags, "a read started after the last commit missed some"

    final = AcidTable.load(location, metastoreUrl=url).scan().toArrow()
    final_tags, wrong = rw_workers.check_snapshot(final)
    assert not wrong and final_tags == tags
    assert final.num_rows == sum(rw_workers.rows_of(t) for t in tags)

    writer_time = max(r["elapsed"] for (kind, _), r in reports.items() if kind == "writer")
    reads = sum(r["reads"] for r in reader_reports)
    reader_time = max(r["elapsed"] for r in reader_reports)
    print(f"\n{WRITERS} writers, {READERS} readers, {seconds:g}s: {len(commits)} commits "
          f"({len(commits) / writer_time:.1f}/s), {reads} full-table reads ({reads / reader_time:.1f}/s), "
          f"{final.num_rows} rows in {len(tags)} transactions")


# --- a commit in the middle of a reader's listing ------------------------------------------------

class ListingHookFS(LocalFileSystem):
    """The local file system, plus a callback that runs right after one chosen directory is
    listed (``hooks``: path -> callable, each run once)."""

    protocol = ("listhook",)
    hooks: dict = {}

    def ls(self, path, detail=False, **kwargs):
        listing = super().ls(path, detail=detail, **kwargs)
        hook = type(self).hooks.pop(self._strip_protocol(path), None)
        if hook is not None:
            hook()
        return listing


def test_a_commit_during_the_listing_is_not_seen_in_part(tmp_path, store_url):
    fsspec.register_implementation("listhook", ListingHookFS, clobber=True)
    root = str(tmp_path / "table")
    location = f"listhook://{root}"
    url = store_url
    create_table(location, rw_workers.SCHEMA, partitionColumns=["part"], metastoreUrl=url)

    def rows(tag: str, part: str, n: int) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict({"id": pa.array(range(n), pa.int64()), "tag": [tag] * n,
                                           "part": [part] * n}, schema=rw_workers.SCHEMA)

    table = AcidTable.load(location, metastoreUrl=url)
    table.append(pa.Table.from_batches([rows("before", "p0", 3), rows("before", "p1", 3)]))

    # a transaction whose task for p1 has finished, and whose task for p0 has not started
    staged = table.newWrite(mode="append")
    txn = staged.transaction
    second = staged.writer(1)
    second.write(rows("racing", "p1", 4))
    results = [second.close()]

    def finish_the_write():  # runs after the reader has listed p0, before it lists p1
        first = staged.writer(0)
        first.write(rows("racing", "p0", 4))
        staged.commit([first.close()] + results)

    ListingHookFS.hooks = {f"{root}/part=p0": finish_the_write}
    seen = table.scan().toArrow()
    assert not ListingHookFS.hooks, "the reader never listed partition p0"
    assert txn.state == "committed"

    counts = dict(Counter(seen.column("tag").to_pylist()))
    assert counts.get("racing", 0) in (0, 8), (
        f"the reader shows {counts['racing']} of the 8 rows of a transaction that committed while it "
        "listed the table: it listed before taking its snapshot (a torn read)")
    assert counts == {"before": 6}  # the commit came after this reader's snapshot
    assert sorted(table.scan().toArrow().column("tag").to_pylist()) == ["before"] * 6 + ["racing"] * 8
