"""The driver's side of one write, between the tasks and the transaction: what the tasks are
told (the plan), and what is committed once they are done (touched data objects, plus the empty
bases an overwrite needs). The transaction itself is the caller's; this module never talks to
the transaction store."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from ..faults import crash_point
from ..layout.names import ACID_VERSION_FILE, base_dir_name, bucket_file_name
from ..layout.table_dirs import discover_layout
from ..orc.writer import InsertFileWriter
from .task import TaskResult, WritePlan


@dataclass(frozen=True)
class WriteJob:
    """One write of one table: picklable, no live clients (Spark ships it to the commit
    process; tasks only need ``plan``)."""

    plan: WritePlan
    table_id: int
    dynamic_overwrite: bool = False

    @property
    def operation(self) -> str:
        return "insert_overwrite" if self.plan.overwrite else "insert"

    def commit(self, txn, results: list[TaskResult], *, sink: tuple[str, int] | None = None) -> None:
        """Make the tasks' files visible: one commit of the write id in ``txn`` (``sink``: a
        streaming sink's micro-batch, recorded with the commit; see ``Transaction.commit``)."""
        from ..commit import record_results, touched_partitions  # driver side: a task never loads it

        touched = set(touched_partitions(results))
        record_results(txn, self.table_id, results, storage=self.plan.storage, write_id=self.plan.write_id)
        try:
            if self.plan.overwrite:
                for part in self._partitions_to_empty(touched, txn):
                    txn.record_written(self.table_id, [self._empty_base(part)])
                    touched.add(part)
        except BaseException as exc:
            txn.abort(f"could not prepare the commit: {exc}")
            raise
        crash_point("write.before_commit")
        txn.commit(self.operation, {self.table_id: sorted(touched)}, sink=sink)

    def abort(self, txn, results: list[TaskResult], reason: str = "the write failed") -> None:
        from ..commit import record_results

        record_results(txn, self.table_id, results, storage=self.plan.storage, write_id=self.plan.write_id)
        txn.abort(reason)

    # --- overwrite ---------------------------------------------------------------------------
    def _partitions_to_empty(self, touched: set[str], txn) -> list[str]:
        """Partitions an overwrite must replace although no task wrote rows into them: those
        on storage, and those the store knows committed rows went to (a listing that missed
        one would leave its rows visible under the overwrite)."""
        plan = self.plan
        if not plan.partition_columns:
            return [] if "" in touched else [""]
        if plan.static_partition:
            # every directory of the value (Hive's p=01 next to p=1), or the one its rows go to
            values = tuple(v for _, v in plan.static_partition)
            return [p for p in plan.directories_of(values) or [plan.partition_dir(values)] if p not in touched]
        if self.dynamic_overwrite:
            # the other directories of each value the overwrite wrote
            by_dir = {path: values for values, path in plan.partition_dirs}
            written = {by_dir[p] for p in touched if p in by_dir}
            return sorted({p for values, p in plan.partition_dirs if values in written} - touched)
        existing = {p for p in txn.committed_data_objects(self.table_id) if p}
        if plan.storage.exists(plan.storage.root):
            for p in discover_layout(plan.storage).partitions:
                existing.add(p.path[len(plan.storage.root):].strip("/"))
        return sorted(p for p in existing if p and p not in touched)

    def _empty_base(self, part: str) -> str:
        """An empty base_W (Hive keeps an empty base file so that an overwrite takes effect)."""
        storage = self.plan.storage
        directory = storage.join(storage.join(storage.root, part) if part else storage.root,
                                 base_dir_name(self.plan.write_id))
        storage.make_dirs(directory)
        name = "000000_0" if self.plan.insert_only else bucket_file_name(0)
        with tempfile.TemporaryDirectory(prefix="acidorc-") as tmp:
            local = os.path.join(tmp, name)
            InsertFileWriter(local, self.plan.data_schema, self.plan.write_id, 1 << 29,
                             compression=self.plan.compression, plain=self.plan.insert_only).close()
            storage.put_file(local, storage.join(directory, name))
        if not self.plan.insert_only:
            storage.write_if_absent(storage.join(directory, ACID_VERSION_FILE), b"2")
        return directory
