"""The concurrency stress test: writers, readers, DML, compaction and vacuum in separate,
long-lived processes on one table, for a bounded time, on each backend (local disk + SQLite,
local disk + PostgreSQL, S3 + PostgreSQL).

* ``WRITERS`` writer processes append (``AcidTable.append``; two of three transactions span all
  four partitions, the third goes to one), each reusing one handle.
* ``READERS`` reader processes scan the whole table again and again: reader 0 reuses one
  ``AcidTable``, reader 1 opens the table again for every read (both as applications do; a
  process that has listed the table before is where a stale listing cache shows).
* one DML process inserts, updates (``v + 1``, every other time moving the rows to another
  partition) and deletes whole groups of rows, one transaction each (``conflictDetection="row"``:
  the writers' inserts do not conflict with it; a ConflictError is retried and counted). MERGE
  needs Spark (``AcidTable.merge`` refuses without a session), so it is not among them.
* one compaction process: minor and major, of the whole table or one partition.
* one vacuum process: ``vacuum(retentionSeconds=5)``, again and again (leases keep what reads
  read; the retention covers a scan's snapshot until its lease starts), and after the run one
  with no retention before the final read.

Checks: every read shows each transaction whole or not at all (no torn reads); what a read
shows is the table after a prefix of the store's commit order (so it never misses a committed
transaction it should see, and reads never go backwards); the last read of each reader and a
final read see everything; the final table equals the model rebuilt from the workers' reports
of what they committed, which must match the store's history (zero lost commits, zero
resurrected deletes, zero undone updates); write ids are unique.

The figures (commits/s, reads/s, DML operations, compactions, vacuums, torn reads, lost
commits) are printed on one ``STRESS`` line (``pytest -s``) and recorded as the test's
properties; ``ACIDORC_STRESS_RESULTS=<file>`` appends them there as JSON lines as well.

``ACIDORC_STRESS_SECONDS`` (default 4) is how long the workers work; e.g.
``ACIDORC_STRESS_SECONDS=60 pytest -s tests/concurrency/test_stress.py`` for a soak.

With the stale-listing fix of issue 13 reverted (fsspec's shared instance and listings cache
back on), the S3 + PostgreSQL variant fails: readers keep showing the table as they first
listed it, and compactions built from stale listings lose commits.
"""

from __future__ import annotations

import json
import os
import queue
import time

import pytest
import stress_workers as sw
import worker_context
from stress_workers import GROUP, PARTS, SCHEMA

from acid_source.metastore import Metastore
from acid_source.table import AcidTable

WRITERS = 3
READERS = 2
MIN_COMMITS = 2  # per writer, however slow the machine
MIN_DML_OPS = 4
BACKENDS = ["local-sqlite", "local-postgres", "s3-postgres"]
SEED_TAG = "s-0-8"  # the first commit, made by the test itself (on S3 it creates the table)


def stress_seconds() -> float:
    text = os.environ.get("ACIDORC_STRESS_SECONDS", "").strip()
    return float(text) if text else 4.0


# --- the backends --------------------------------------------------------------------------------
def backend(request, name: str, tmp_path) -> tuple[str, str, dict]:
    """(table location, store URL, storage options) of a fresh table's backend."""
    url = f"sqlite:///{tmp_path}/store.db" if name.endswith("sqlite") else request.getfixturevalue("pg_store_url")
    if name.startswith("s3"):
        server = request.getfixturevalue("s3_server")
        options = dict(server.storage_options)
        # flat, string-valued options: AcidTable passes storage options to a write as fs.<key> strings
        options.update(options.pop("client_kwargs", {}))
        return f"s3://{server.new_bucket('stress')}/warehouse/t", url, options
    return str(tmp_path / "table"), url, {}


def create(location: str, url: str, options: dict) -> tuple[int, int]:
    """Create the table by its first append (an empty table cannot yet be created or opened on an
    object store: create_table takes no storage options); its table id and the append's write id."""
    from acid_source.spark.options import write_spec
    from acid_source.writes import stage_write

    write = {"path": location, "metastoreUrl": url, "partitionColumns": "part",
             **{f"fs.{k}": str(v) for k, v in options.items()}}
    # the Spark write's path (its options create the table), without Spark
    with stage_write(write_spec(write), overwrite=False, data_schema=SCHEMA) as staged:
        task = staged.writer(0)
        for batch in sw.writer_rows(SEED_TAG).to_batches():
            task.write(batch)
        staged.commit([task.close()])
    info = Metastore(url).find_table(location)
    assert info is not None
    return info.table_id, staged.writeId


# --- running the workers ------------------------------------------------------------------------
def run_workers(cfg: dict) -> dict:
    """Start every worker together; their reports by (kind, number)."""
    ctx = worker_context.forkserver()  # acidorc imported once: eight spawned interpreters would cost more
    kinds = [("writer", w) for w in range(WRITERS)] + [("reader", r) for r in range(READERS)]
    kinds += [("dml", 0), ("compactor", 0), ("vacuum", 0)]
    start = ctx.Barrier(len(kinds))
    done = ctx.Event()  # the writers and the DML worker have finished: readers read once more, all stop
    results = ctx.Queue()
    processes = {k: ctx.Process(target=sw.run, args=(*k, cfg, start, done, results), daemon=True) for k in kinds}
    for p in processes.values():
        p.start()
    reports: dict = {}
    deadline = time.monotonic() + cfg["wait"] + 4 * cfg["seconds"]  # a safety net, not a synchronization
    try:
        while len(reports) < len(processes):
            try:
                kind, number, report = results.get(timeout=1)
            except queue.Empty:
                dead = [k for k, p in processes.items() if k not in reports and p.exitcode not in (None, 0)]
                if dead:
                    pytest.fail(f"worker(s) {dead} died without a report")
                if time.monotonic() > deadline:
                    pytest.fail(f"workers did not report in time; got {sorted(reports)}")
                continue
            assert "error" not in report, f"{kind} {number} failed:\n{report['error']}"
            reports[(kind, number)] = report
            if all((k, n) in reports for k, n in kinds if k in ("writer", "dml")):
                done.set()
    finally:
        done.set()
        for p in processes.values():
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()
    return reports


# --- the model -----------------------------------------------------------------------------------
def group_rows(g: str, v: int, part: str | None) -> set[tuple]:
    return {(g, i, v, part or PARTS[i % len(PARTS)]) for i in range(GROUP)}


def cuts(history: list[dict], events: dict) -> tuple[list[str], set[tuple]]:
    """The writer tags in commit order, and every (number of writer tags, DML groups) the table
    showed after some prefix of the commit order."""
    order: list[str] = []
    groups: dict[str, int] = {}
    states = {(0, frozenset())}
    for h in sorted(history, key=lambda h: h["commit_seq"]):
        event = events.get(h["write_id"])
        if event is None:
            continue  # a compaction
        if event[0] == "writer":
            order.append(event[1])
        elif event[1] == "delete":
            groups.pop(f"d{event[2]}")
        else:
            groups[f"d{event[2]}"] = event[3]
        states.add((len(order), frozenset(groups.items())))
    return order, states


def write_results(figures: dict) -> None:
    path = os.environ.get("ACIDORC_STRESS_RESULTS", "").strip()
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(figures) + "\n")


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_stress(request, tmp_path, backend_name, record_property):
    seconds = stress_seconds()
    location, url, options = backend(request, backend_name, tmp_path)
    table_id, seed_write_id = create(location, url, options)
    cfg = {"location": location, "url": url, "storage_options": options, "seconds": seconds, "wait": 120.0,
           "min_commits": MIN_COMMITS, "min_ops": MIN_DML_OPS, "conflict_detection": "row"}

    reports = run_workers(cfg)

    def of(kind: str) -> list[dict]:
        return [r for (k, _), r in sorted(reports.items()) if k == kind]

    writers, readers, (dml,), (compactor,), (vacuum,) = (of(k) for k in ("writer", "reader", "dml", "compactor",
                                                                          "vacuum"))
    # what the workers say they committed, by write id
    events: dict[int, tuple] = {seed_write_id: ("writer", SEED_TAG)}
    duplicates = []
    for e in [("writer", tag, w) for r in writers for tag, w in r["commits"]] + [("dml", *op) for op in dml["ops"]]:
        write_id = e[2] if e[0] == "writer" else e[3]
        if write_id in events:
            duplicates.append(write_id)
        events[write_id] = (e[0], e[1]) if e[0] == "writer" else ("dml", e[1], e[2], e[4], e[5])
    history = Metastore(url).history(table_id)
    store_ids = sorted(h["write_id"] for h in history if h["write_id"] is not None)
    store_compactions = sum(1 for h in history if h["write_id"] is None)

    # the model: every writer tag, and the DML groups as the DML worker left them
    committed_tags = {e[1] for e in events.values() if e[0] == "writer"}
    model_groups: dict[str, tuple] = {}
    deleted: set[str] = set()
    for op, g, _, v, part in dml["ops"]:
        if op == "delete":
            model_groups.pop(f"d{g}")
            deleted.add(f"d{g}")
        else:
            model_groups[f"d{g}"] = (v, part)

    # the final table, read without any cache this process may hold
    # (after a vacuum with no retention, now that no one reads: it must remove only what no snapshot needs)
    fresh = {**options, "skip_instance_cache": True, "use_listings_cache": False} if options else None
    final_handle = AcidTable.load(location, metastoreUrl=url, storageOptions=fresh)
    final_vacuum = final_handle.vacuum(retentionSeconds=0)["numRemovedPaths"]
    final = final_handle.scan().toArrow()
    final_tags, final_groups, final_torn = sw.observe(final)
    final_rows = {(t, i, v, p) for t, i, v, p in zip(*(final.column(c).to_pylist() for c in ("tag", "id", "v", "part")))
                  if t.startswith("d")}
    want_rows = set().union(*(group_rows(g, v, p) for g, (v, p) in model_groups.items())) if model_groups else set()
    # a committed transaction not whole in the final table is lost (in part or in full)
    lost_appends = sorted(t for t in committed_tags if t not in final_tags or t in final_torn)
    # a DML group missing, in part, or at another version (an update undone)
    lost_dml = sorted(g for g, (v, _) in model_groups.items() if final_groups.get(g) != v or g in final_torn)
    resurrected = sorted(set(final_groups) & deleted)
    unknown = sorted(set(final_groups) - set(model_groups) - deleted)

    # reads against the commit order
    order, states = cuts(history, events)
    torn = [t for r in readers for t in r["torn"]]
    stale = []
    for r in readers:
        for tags, groups in r["seen"]:
            prefix = set(order[:len(tags)])
            if set(tags) != prefix or (len(tags), frozenset(map(tuple, groups))) not in states:
                stale.append(f"a read saw {len(tags)} writer transactions and groups {groups}: not the table after "
                             f"any prefix of the commit order (writer tags missing {sorted(prefix - set(tags))[:5]}, "
                             f"extra {sorted(set(tags) - prefix)[:5]})")
    final_key = (sorted(final_tags), sorted(final_groups.items()))
    stale_last = sum(1 for r in readers
                     if r["last"] is not None and (list(r["last"][0]), [tuple(g) for g in r["last"][1]]) != final_key)
    backwards = [b for r in readers for b in r["backwards"]]
    failed_reads = sum(r["failed"] for r in readers)

    commits = len(events) - 1
    writer_time = max(r["elapsed"] for r in writers + [dml])
    reads = sum(r["reads"] for r in readers)
    reader_time = max(r["elapsed"] for r in readers)
    figures = {
        "backend": backend_name, "seconds": seconds, "writers": WRITERS, "readers": READERS,
        "commits": commits, "commits_per_s": round(commits / writer_time, 2),
        "appends": sum(len(r["commits"]) for r in writers), "reads": reads,
        "reads_per_s": round(reads / reader_time, 2), "dml_ops": len(dml["ops"]), "dml_conflicts": dml["conflicts"],
        "compactions": compactor["runs"]["minor"] + compactor["runs"]["major"],
        "minor": compactor["runs"]["minor"], "major": compactor["runs"]["major"],
        "compactions_in_store": store_compactions, "compaction_errors": len(compactor["errors"]),
        "vacuums": vacuum["runs"], "vacuumed_paths": vacuum["removed"], "final_vacuumed_paths": final_vacuum,
        "vacuum_errors": len(vacuum["errors"]),
        "torn_reads": len(torn), "stale_reads": len(stale) + stale_last,
        "backwards_reads": len(backwards), "failed_reads": failed_reads,
        "lost_commits": len(lost_appends) + len(lost_dml), "resurrected_deletes": len(resurrected),
        "final_rows": final.num_rows,
        "elapsed_s": {k: round(max(r["elapsed"] for r in of(k)), 1) for k in ("writer", "dml", "reader", "compactor",
                                                                                "vacuum")},
    }
    print("\nSTRESS " + " ".join(f"{k}={v}" for k, v in figures.items()))
    for k, v in figures.items():
        record_property(k, v)
    write_results(figures)

    def sample(items: list) -> str:
        return "\n".join(str(i)[:2000] for i in items[:5])

    assert not duplicates, f"write ids handed out twice: {duplicates}"
    assert store_ids == sorted(events), (
        f"the store's history differs from the workers' commits: only in the store "
        f"{sorted(set(store_ids) - set(events))}, "
        f"only reported {sorted(set(events) - set(store_ids))}")
    assert not dml["problems"], "DML changed the wrong rows:\n" + sample(dml["problems"])
    assert not (lost_appends or lost_dml or resurrected or unknown), (
        f"the final table lost {len(lost_appends)} committed appends {lost_appends[:10]} and {len(lost_dml)} DML "
        f"commits ({ {g: (final_groups.get(g), model_groups[g][0]) for g in lost_dml[:10]} }: (read v, committed v)); "
        f"deleted groups back: {resurrected}; groups nobody committed: {unknown}; in part:\n"
        + sample(list(final_torn.values())))
    assert final_rows == want_rows, (f"DML rows differ from the model: missing {sorted(want_rows - final_rows)[:10]}, "
                                     f"extra {sorted(final_rows - want_rows)[:10]}")
    assert not torn, f"{len(torn)} torn reads, e.g.:\n" + sample(torn)
    assert not failed_reads, f"{failed_reads} reads failed, e.g.:\n" + sample([e for r in readers for e in r["errors"]])
    assert not backwards, f"{len(backwards)} reads went backwards, e.g.:\n" + sample(backwards)
    assert final.num_rows == sum(sw.rows_of(t) for t in committed_tags) + GROUP * len(model_groups)
    assert not stale, f"{len(stale)} reads were not the table after a prefix of the commits, e.g.:\n" + sample(stale)
    assert not stale_last, f"{stale_last} readers' last read (after every commit) differs from the final table"
    assert not compactor["errors"], "compactions failed:\n" + sample(compactor["errors"])
    assert not vacuum["errors"], "vacuums failed:\n" + sample(vacuum["errors"])
    assert figures["compactions"] >= 1 and vacuum["runs"] >= 1 and len(dml["ops"]) >= MIN_DML_OPS
