"""Process bodies for tests/concurrency/test_stress.py (module level: started by "forkserver"
or "spawn", so they are found by name).

Every worker is long-lived: one process, one loop, one ``AcidTable`` handle reused (or opened
again per operation, as a reader of the second kind does), because a stale cache only shows in
a process that has listed the table before. Each worker reports ``(kind, number, report)`` on
the results queue once, at its end.

Rows carry their own proof of completeness:

* a writer's transaction tags its rows ``w<writer>-<k>-<n>``: ids ``0..n-1``, ``v`` 0. A read
  shows all ``n`` rows of a tag or none.
* the DML worker owns groups ``d<g>``: ``GROUP`` rows, ids ``0..GROUP-1``, all with one
  version ``v``. It appends a group (v 0), updates all its rows at once (``v + 1``, sometimes
  moving them to another partition) and deletes it, one transaction each; a read shows a
  group whole, with one ``v``, or not at all.
"""

from __future__ import annotations

import os
import time
import traceback

import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("v", pa.int64()), ("part", pa.string())])
PARTS = ("p0", "p1", "p2", "p3")
GROUP = 4  # rows per DML group, one in each partition until an update moves them
MAX_RETRIES = 20  # ConflictError retries of one DML operation
MAX_READ_ERRORS = 20  # a reader stops after this many failed reads
# The vacuum's retention. Not 0: AcidTable.scan() resolves its snapshot and then takes its read
# lease; a snapshot in between is protected by retention alone, so a vacuum with less retention
# than that gap can remove a compaction's inputs such a read still needs
# (SnapshotFilesRemovedError; README "Read leases"). The gap was wider when the lease started
# with the first batch (with 2 s it happened on a loaded machine, load 13 on 2 cores); the test
# ends with a vacuum with no retention instead.
VACUUM_RETENTION = 5.0


def rows_of(tag: str) -> int:
    return int(tag.rsplit("-", 1)[1])


def writer_rows(tag: str, single_part: str | None = None) -> pa.Table:
    """The rows of writer transaction ``tag``: spread over every partition, or all in one."""
    ids = list(range(rows_of(tag)))
    parts = [single_part or PARTS[i % len(PARTS)] for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "tag": [tag] * len(ids),
                     "v": pa.array([0] * len(ids), pa.int64()), "part": parts}, schema=SCHEMA)


def group_rows(g: int) -> pa.Table:
    ids = list(range(GROUP))
    return pa.table({"id": pa.array(ids, pa.int64()), "tag": [f"d{g}"] * GROUP, "v": pa.array([0] * GROUP, pa.int64()),
                     "part": [PARTS[i % len(PARTS)] for i in ids]}, schema=SCHEMA)


def observe(data: pa.Table) -> tuple[set[str], dict[str, int], dict[str, str]]:
    """What one read shows: the writer tags, the DML groups with their version, and what is
    torn, by tag (a transaction shown in part: missing, extra or duplicate rows, mixed versions)."""
    stats = data.group_by("tag").aggregate([("id", "count"), ("id", "count_distinct"), ("id", "min"), ("id", "max"),
                                            ("v", "min"), ("v", "max")])
    tags: set[str] = set()
    groups: dict[str, int] = {}
    torn = {}
    for row in stats.to_pylist():
        tag = row["tag"]
        got = (row["id_count"], row["id_count_distinct"], row["id_min"], row["id_max"])
        if tag.startswith("d"):
            groups[tag] = row["v_max"]
            want, versions_ok = GROUP, row["v_min"] == row["v_max"]
        else:
            tags.add(tag)
            want, versions_ok = rows_of(tag), row["v_min"] == row["v_max"] == 0
        if got != (want, want, 0, want - 1) or not versions_ok:
            torn[tag] = (f"{tag}: {row['id_count']} rows ({row['id_count_distinct']} distinct ids "
                         f"{row['id_min']}..{row['id_max']}, v {row['v_min']}..{row['v_max']}), expected {want} rows "
                         f"with ids 0..{want - 1} and one v")
    return tags, groups, torn


# --- common --------------------------------------------------------------------------------------
def open_table(cfg: dict):
    from acid_source.table import AcidTable

    return AcidTable.load(cfg["location"], metastoreUrl=cfg["url"], storageOptions=cfg["storage_options"] or None,
                          conflictDetection=cfg.get("conflict_detection"))


def warm_up(cfg: dict):
    """Imports and a first handle before the start line, so the timed part measures the work
    (the handle lists the table: a reader's stale cache, if any, starts here)."""
    os.environ["ACIDORC_AUTO_COMPACT"] = "false"  # compaction is the compactor's job here
    os.environ["ACIDORC_VACUUM_AFTER_COMPACTION"] = "false"  # and vacuum the vacuum's
    import acid_source.dml.arrow_changes  # noqa: F401
    import acid_source.maintenance.cleaner  # noqa: F401
    import acid_source.maintenance.compactor  # noqa: F401

    table = open_table(cfg)
    table.scan().toArrow()
    return table


def run(kind: str, number: int, cfg: dict, start, done, results) -> None:
    """Entry point of every worker process."""
    try:
        report = BODIES[kind](number, cfg, start, done)
    except BaseException:  # noqa: BLE001 - every failure goes back to the test
        report = {"error": traceback.format_exc()}
    results.put((kind, number, report))


def _past(started: float, seconds: float) -> bool:
    return time.monotonic() - started >= seconds


# --- the workers ---------------------------------------------------------------------------------
def writer(number: int, cfg: dict, start, done) -> dict:
    """Append for ``seconds`` (at least ``min_commits`` times); every third transaction goes to
    one partition, the others to all four. Reports (tag, write id) of every commit."""
    table = warm_up(cfg)
    start.wait(cfg["wait"])
    started = time.monotonic()
    commits = []
    k = 0
    while k < cfg["min_commits"] or not _past(started, cfg["seconds"]):
        tag = f"w{number}-{k}-{5 + (7 * k + 3 * number) % 13}"
        single = PARTS[(k + number) % len(PARTS)] if k % 3 == 2 else None
        metrics = table.append(writer_rows(tag, single))
        commits.append((tag, metrics["writeId"]))
        k += 1
    return {"commits": commits, "elapsed": time.monotonic() - started}


# insert, insert, update, delete in the first four operations (the least a run does)
DML_SCHEDULE = ("insert", "insert", "update", "delete", "update", "insert")


def dml(number: int, cfg: dict, start, done) -> dict:
    """Insert, update and delete whole groups, one transaction each, for ``seconds`` (at least
    ``min_ops``). Reports every committed operation: (op, group, write id, v, part after it;
    part None: one row in each partition)."""
    from acid_source.errors import ConflictError

    table = warm_up(cfg)
    start.wait(cfg["wait"])
    started = time.monotonic()
    ops: list[tuple] = []
    problems: list[str] = []
    live: dict[int, list] = {}  # group -> [v, part]
    conflicts = 0
    next_group = 0
    i = 0
    while i < cfg["min_ops"] or not _past(started, cfg["seconds"]):
        op = DML_SCHEDULE[i % len(DML_SCHEDULE)]
        if op == "insert" or not live:
            g, op = next_group, "insert"
            next_group += 1
        else:
            g = min(live)  # the oldest live group; a delete only after an update
            op = "update" if live[g][0] == 0 else op
        for _ in range(MAX_RETRIES):
            try:
                if op == "insert":
                    metrics = table.append(group_rows(g))
                    affected = metrics["numOutputRows"]
                elif op == "update":
                    moves = live[g][0] % 2 == 1  # every other update moves the group to one partition
                    to = PARTS[(g + live[g][0]) % len(PARTS)]
                    metrics = table.update(f"tag = 'd{g}'", {"v": "v + 1", **({"part": f"'{to}'"} if moves else {})})
                    affected = metrics["numUpdatedRows"]
                else:
                    metrics = table.delete(f"tag = 'd{g}'")
                    affected = metrics["numDeletedRows"]
                break
            except ConflictError:
                conflicts += 1
        else:
            raise AssertionError(f"{op} of d{g} failed with ConflictError {MAX_RETRIES} times")
        if affected != GROUP:
            problems.append(f"{op} of d{g} (write id {metrics.get('writeId')}) changed {affected} rows, "
                            f"expected {GROUP}")
        if metrics.get("writeId") is None:
            problems.append(f"{op} of d{g} committed nothing")
        else:
            if op == "insert":
                live[g] = [0, None]
            elif op == "update":
                live[g] = [live[g][0] + 1, to if moves else live[g][1]]
            else:
                del live[g]
            state = live.get(g, [None, None])
            ops.append((op, g, metrics["writeId"], state[0], state[1]))
        i += 1
    return {"ops": ops, "conflicts": conflicts, "problems": problems, "elapsed": time.monotonic() - started}


COMPACTIONS = (("minor", None), ("major", "part = 'p1'"), ("minor", "part = 'p2'"), ("major", None),
               ("minor", "part = 'p0'"), ("major", "part = 'p3'"))


def compactor(number: int, cfg: dict, start, done) -> dict:
    """Compact (minor and major, the whole table or one partition) until the writers and the
    DML worker are done, at least twice."""
    from acid_source.errors import AcidError, ConflictError

    table = warm_up(cfg)
    start.wait(cfg["wait"])
    started = time.monotonic()
    runs = {"minor": 0, "major": 0}
    nothing = conflicts = 0
    errors: list[str] = []
    i = 0
    while i < 2 or not done.is_set():
        kind, where = COMPACTIONS[i % len(COMPACTIONS)]
        i += 1
        try:
            metrics = table.compact(kind, partitionFilter=where)
        except ConflictError:
            conflicts += 1
            continue
        except AcidError:
            errors.append(traceback.format_exc())
            continue
        if metrics.get("numDataObjectsCompacted"):
            runs[kind] += 1
        else:
            nothing += 1
    return {"runs": runs, "nothing": nothing, "conflicts": conflicts, "errors": errors,
            "elapsed": time.monotonic() - started}


def vacuum(number: int, cfg: dict, start, done) -> dict:
    """Vacuum with a retention of ``VACUUM_RETENTION`` seconds, again and again, until the
    writers and the DML worker are done."""
    from acid_source.errors import AcidError

    table = warm_up(cfg)
    start.wait(cfg["wait"])
    started = time.monotonic()
    runs = removed = 0
    errors: list[str] = []
    while runs < 1 or not done.is_set():
        try:
            removed += table.vacuum(retentionSeconds=VACUUM_RETENTION)["numRemovedPaths"]
        except AcidError:
            errors.append(traceback.format_exc())
        runs += 1
    return {"runs": runs, "removed": removed, "errors": errors, "elapsed": time.monotonic() - started}


def reader(number: int, cfg: dict, start, done) -> dict:
    """Read the whole table until the test says the writers are done, then once more. Reader 0
    keeps one ``AcidTable`` for all its reads, the others open the table again for each read.
    Reports every distinct thing it saw, what was torn, what went backwards, what failed."""
    table = warm_up(cfg)
    reuse = number % 2 == 0
    start.wait(cfg["wait"])
    started = time.monotonic()
    seen: list[tuple] = []  # distinct (sorted writer tags, sorted (group, v)) in read order
    torn: list[str] = []
    backwards: list[str] = []
    errors: list[str] = []
    reads = failed = 0
    tags: set[str] = set()
    groups: dict[str, int] = {}
    gone: set[str] = set()  # groups once seen, then not: deleted, never to come back
    while True:
        last = done.is_set()  # a read started now comes after every commit of the writers and the DML
        try:
            if not reuse:
                table = open_table(cfg)
            data = table.scan().toArrow()
        except Exception:  # noqa: BLE001 - a failed read is counted, and the reader goes on
            failed += 1
            errors.append(f"read {reads}: " + traceback.format_exc())
            if len(errors) >= MAX_READ_ERRORS:
                break
            continue
        reads += 1
        now_tags, now_groups, wrong = observe(data)
        torn += [f"read {reads}: {w}" for w in wrong.values()]
        if not tags <= now_tags:
            backwards.append(f"read {reads}: committed writer transactions disappeared: {sorted(tags - now_tags)[:10]}")
        for g, v in now_groups.items():
            if g in gone:
                backwards.append(f"read {reads}: group {g} was gone and is back (v {v})")
            elif v < groups.get(g, v):
                backwards.append(f"read {reads}: group {g} went back from v {groups[g]} to v {v}")
        gone |= set(groups) - set(now_groups)
        tags, groups = now_tags, now_groups
        key = (sorted(tags), sorted(groups.items()))
        if not seen or seen[-1] != key:
            seen.append(key)
        if last:
            break
    return {"reads": reads, "failed": failed, "errors": errors, "torn": torn, "backwards": backwards, "seen": seen,
            "last": seen[-1] if seen and failed < MAX_READ_ERRORS else None, "elapsed": time.monotonic() - started,
            "reuse": reuse}


BODIES = {"writer": writer, "dml": dml, "compactor": compactor, "vacuum": vacuum, "reader": reader}
