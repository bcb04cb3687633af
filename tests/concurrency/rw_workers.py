"""Process bodies for the readers-and-writers test (module level: started by the forkserver of
``worker_context``).

Every transaction tags its rows ``w<writer>-<k>-<n>``: ``n`` is how many rows it wrote (ids
0..n-1), so any reader can check a transaction it sees is whole without asking anyone.
"""

from __future__ import annotations

import time
import traceback

import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("part", pa.string())])
PARTS = ("p0", "p1", "p2", "p3")
TASKS = 2


def rows_of(tag: str) -> int:
    return int(tag.rsplit("-", 1)[1])


def task_batch(tag: str, task_id: int) -> pa.RecordBatch:
    """Task ``t`` writes the ids i with i % TASKS == t; both tasks write every partition."""
    ids = [i for i in range(rows_of(tag)) if i % TASKS == task_id]
    return pa.RecordBatch.from_pydict({
        "id": pa.array(ids, pa.int64()),
        "tag": [tag] * len(ids),
        "part": [PARTS[(i // TASKS) % len(PARTS)] for i in ids],
    }, schema=SCHEMA)


def append(location: str, url: str, tag: str) -> tuple[int, int]:
    """One multi-task, multi-partition append, as a Spark job would run it; (write id, txn id)."""
    from acid_source.table import AcidTable

    with AcidTable(location, metastoreUrl=url).newWrite(mode="append") as staged:
        results = []
        for task_id in range(TASKS):
            task = staged.writer(task_id)
            task.write(task_batch(tag, task_id))
            results.append(task.close())
        metrics = staged.commit(results)
    return metrics["writeId"], metrics["txnId"]


def check_snapshot(data: pa.Table) -> tuple[set[str], list[str]]:
    """The tags one read saw, and what is wrong with it (a tag with missing, extra or duplicate
    rows is a torn or corrupt read)."""
    stats = data.group_by("tag").aggregate([("id", "count"), ("id", "count_distinct"), ("id", "min"), ("id", "max")])
    problems = []
    tags = set()
    for row in stats.to_pylist():
        tag, n = row["tag"], rows_of(row["tag"])
        tags.add(tag)
        got = (row["id_count"], row["id_count_distinct"], row["id_min"], row["id_max"])
        if got != (n, n, 0, n - 1):
            problems.append(f"{tag}: {row['id_count']} rows ({row['id_count_distinct']} distinct ids "
                            f"{row['id_min']}..{row['id_max']}), expected {n} rows with ids 0..{n - 1}")
    return tags, problems


def warm_up() -> None:
    """Pay one-time import costs (pyarrow loads pandas lazily, seconds on a busy machine)
    before the workers start together, so the timed part measures reads and writes."""
    import acid_source.table  # noqa: F401
    import acid_source.writes  # noqa: F401

    task_batch("w0-0-6", 0).to_pylist()


def writer(location: str, url: str, writer_id: int, seconds: float, min_commits: int, barrier, results) -> None:
    """Append for ``seconds`` (at least ``min_commits`` times); report every commit."""
    try:
        commits = []
        warm_up()
        barrier.wait()
        started = time.monotonic()
        k = 0
        while k < min_commits or time.monotonic() - started < seconds:
            tag = f"w{writer_id}-{k}-{6 + (7 * k + 3 * writer_id) % 19}"
            write_id, txn_id = append(location, url, tag)
            commits.append((tag, write_id, txn_id))
            k += 1
        results.put(("writer", writer_id, {"commits": commits, "elapsed": time.monotonic() - started}))
    except BaseException:
        results.put(("writer", writer_id, {"error": traceback.format_exc()}))


def reader(location: str, url: str, reader_id: int, barrier, writers_done, results) -> None:
    """Read the whole table again and again until the writers are done (then once more)."""
    try:
        from acid_source.table import AcidTable

        problems: list[str] = []
        snapshots: list[list[str]] = []  # every distinct set of transactions a read saw
        previous: set[str] = set()
        reads = 0
        warm_up()
        AcidTable.load(location, metastoreUrl=url).scan().toArrow()  # (the table is empty now)
        barrier.wait()
        started = time.monotonic()
        while True:
            last = writers_done.is_set()  # a read started after every commit sees all of them
            data = AcidTable.load(location, metastoreUrl=url).scan().toArrow()
            tags, wrong = check_snapshot(data)
            problems += [f"read {reads}: {p}" for p in wrong]
            if not previous <= tags:
                problems.append(f"read {reads}: committed transactions disappeared: {sorted(previous - tags)}")
            if tags != previous or not snapshots:
                snapshots.append(sorted(tags))
            previous = tags
            reads += 1
            if last:
                break
        results.put(("reader", reader_id, {"reads": reads, "elapsed": time.monotonic() - started,
                                           "problems": problems, "snapshots": snapshots, "last": previous}))
    except BaseException:
        results.put(("reader", reader_id, {"error": traceback.format_exc()}))
