"""Worker functions run in separate processes (multiprocessing, spawn) by test_metastore.py.

A top-level module of its own (test_metastore.py puts this directory on sys.path) so that
spawned children can import these functions by name whatever pytest's import mode.
"""

from __future__ import annotations

import traceback

from acid_source.errors import ConflictError
from acid_source.metastore import Metastore, connect


def _report(queue, worker: int, fn):
    try:
        queue.put((worker, "ok", fn()))
    except BaseException:  # the parent reports the child's traceback
        queue.put((worker, "error", traceback.format_exc()))


def allocate_and_commit(url: str, table_id: int, iterations: int, worker: int, start, queue) -> None:
    """``iterations`` times: open a txn, allocate a write id, commit, on whatever store ``url``
    names (a Hive Metastore too). Reports (txn, write id) pairs."""
    def run():
        ms = connect(url)
        start.wait()
        done = []
        for _ in range(iterations):
            txn = ms.open_transaction(user=f"worker-{worker}")
            write_id = ms.allocate_write_id(txn, table_id, operation="insert")
            ms.commit(txn, touched={table_id: [""]}, operation="insert")
            done.append((txn, write_id))
        return done

    _report(queue, worker, run)


def racing_updates(url: str, table_id: int, rounds: int, worker: int, barrier, queue) -> None:
    """Each round: open an update txn, wait until every worker has one open, commit, wait until
    every worker has committed or failed. The first ``rounds`` rounds all update one partition,
    the next ``rounds`` each worker its own. Reports per round (txn, "committed" | "conflict",
    the txn's state afterwards)."""
    def run():
        ms = Metastore(url)
        outcomes = []
        for round_ in range(2 * rounds):
            partition = "ds=shared" if round_ < rounds else f"ds=w{worker}"
            txn = ms.open_transaction(user=f"worker-{worker}")
            ms.allocate_write_id(txn, table_id)
            barrier.wait()  # every worker's txn started before anyone commits
            try:
                ms.commit(txn, touched={table_id: [partition]}, operation="update")
                outcome = "committed"
            except ConflictError as exc:
                assert exc.txn_id == txn and f"[txnid:{txn}]" in str(exc), str(exc)
                outcome = "conflict"
            outcomes.append((txn, outcome, ms.txn_state(txn)))
            barrier.wait()  # nobody starts the next round before this one is decided
        return outcomes

    _report(queue, worker, run)


def first_use(urls: list[str], worker: int, start, queue) -> None:
    """For each fresh store in ``urls``, at the same moment as the other workers: its first call
    (which creates the store's tables). Reports the transaction ids opened."""
    def run():
        opened = []
        for url in urls:
            start.wait()
            opened.append(Metastore(url).open_transaction(user=f"worker-{worker}"))
        return opened

    _report(queue, worker, run)



def open_batches(url: str, table_id: int, batches: int, size: int, worker: int, start, queue) -> None:
    """``batches`` times: open a transaction batch of ``size`` on the table, commit its even
    transactions and abort the odd ones, on whatever store ``url`` names. Reports each batch's
    (txn, write id) pairs."""
    def run():
        ms = connect(url)
        start.wait()
        done = []
        for _ in range(batches):
            pairs = ms.open_transaction_batch(table_id, size, user=f"worker-{worker}")
            for i, (txn, _) in enumerate(pairs):
                if i % 2:
                    ms.abort(txn, "odd")
                else:
                    ms.commit(txn, touched={table_id: [""]}, operation="insert")
            done.append(pairs)
        return done

    _report(queue, worker, run)


def commit_batch(location: str, url: str, sink_id: str, batch_id: int, ids: list, worker: int, start,
                 queue) -> None:
    """Stage an append of ``ids`` to the table, then, at the same moment as the other workers,
    commit it as micro-batch ``batch_id`` of ``sink_id``. Reports ("committed" | "refused",
    the transaction, the one that committed the batch)."""
    def run():
        import pyarrow as pa

        from acid_source.errors import BatchAlreadyCommittedError
        from acid_source.table import AcidTable

        staged = AcidTable.load(location, metastoreUrl=url).newWrite(mode="append")
        writer = staged.writer(0)
        writer.write(pa.record_batch({"id": pa.array(ids, pa.int64()), "ds": ["a"] * len(ids)}))
        result = writer.close()
        start.wait()
        try:
            metrics = staged.commit([result], sink=(sink_id, batch_id))
        except BatchAlreadyCommittedError as exc:
            return "refused", staged.txnId, exc.committed_txn_id
        return "committed", metrics["txnId"], metrics["txnId"]

    _report(queue, worker, run)


def run_workers(ctx, workers: int, target, args_of) -> list:
    """Start ``workers`` processes of ``target`` (``args_of(i, start, queue)`` gives worker i's
    arguments; ``start`` is a barrier they all wait on, ``queue`` where :func:`_report` puts
    results), collect one ``(worker, status, value)`` each and fail with the children's
    tracebacks if any of them failed."""
    queue, start = ctx.Queue(), ctx.Barrier(workers, timeout=60)
    procs = [ctx.Process(target=target, args=args_of(i, start, queue)) for i in range(workers)]
    for p in procs:
        p.start()
    try:
        results = [queue.get(timeout=120) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    failed = [value for _, status, value in results if status != "ok"]
    assert not failed, "\n".join(failed)
    return results
