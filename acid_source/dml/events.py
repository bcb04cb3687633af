"""Writing the change events of one DML task: delete events of old row versions into
``delete_delta_W_W_S`` and new row versions as insert events into ``delta_W_W_S`` (Hive's
split-update, HIVE_ACID_FORMAT.md 6.2). Executor side: imports nothing driver-side.

A task receives Arrow batches of *change rows*: an operation code (:data:`OP_COLUMN`), the
table's columns, and the old row's ROW__ID (:data:`ROW_ID_COLUMN`). Delete-side rows (the
delete of a DELETE, the old half of an UPDATE, and the "matched, no action" rows of a MERGE,
which only take part in the cardinality check) carry a ROW__ID and their old partition values;
insert-side rows carry the new row. A delete-side row also carries the partition directory
its row was read from (:data:`SOURCE_DIR_COLUMN`): its delete event goes exactly there, as Hive
pairs delete events with the rows of their own directory, even when one value has several
directories (``p=01`` next to ``p=1``). Every delete-side row of one (partition, writer id) must
reach one task (the Spark plan repartitions by them); the task collects their ROW__IDs (keys
only: 16 bytes a row), sorts them once, refuses a ROW__ID seen twice (a MERGE whose target
row matched several source rows), and writes one sorted delete file per (partition, writer).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import AcidError, MergeCardinalityError, SchemaError, StorageError
from ..layout import bucket_codec, row_ids
from ..layout.names import ACID_VERSION_FILE, bucket_file_name, delta_dir_name
from ..orc.writer import DeleteFileWriter
from ..write.rows import group_rows
from ..write.task import TaskResult, TaskWriter, WritePlan

OP_COLUMN = "__acidorc_op"
ROW_ID_COLUMN = "__acidorc_row_id"
#: The partition directory (relative to the table root, "" unpartitioned) a delete-side row
#: was read from; null on insert-side rows.
SOURCE_DIR_COLUMN = "__acidorc_source_dir"

#: Operation codes of change rows.
DELETE = 0  # the row is deleted (DELETE, MERGE ... THEN DELETE)
UPDATE_DELETE = 1  # the old version of an updated row
INSERT = 2  # a new row (MERGE ... THEN INSERT)
UPDATE_INSERT = 3  # the new version of an updated row
MATCHED_NO_ACTION = 4  # a MERGE target row matched by the source that no clause acted on
DELETE_SIDE = (DELETE, UPDATE_DELETE, MATCHED_NO_ACTION)
INSERT_SIDE = (INSERT, UPDATE_INSERT)


@dataclass(frozen=True)
class ChangePlan:
    """What a DML task needs (picklable). Delete events go to the directory their change row
    names (:data:`SOURCE_DIR_COLUMN`); new row versions where ``write.partition_dir`` sends them."""

    write: WritePlan
    #: the MERGE condition, for the cardinality error; None for UPDATE / DELETE
    merge_condition: str | None = None
    #: a MERGE whose only WHEN MATCHED clause is an unconditional DELETE may match a target
    #: row several times (Spark SQL allows it): the row is deleted once
    repeated_deletes: bool = False


#: The name under which a task's :attr:`TaskResult.counts` holds the rows of each operation.
COUNT_NAMES = {DELETE: "deleted", UPDATE_DELETE: "updateDeleted", INSERT: "inserted", UPDATE_INSERT: "updated",
               MATCHED_NO_ACTION: "matchedNoAction"}

class ChangeWriter:
    """One task's change rows -> its delete and insert files."""

    def __init__(self, plan: ChangePlan, task_id: int):
        self.plan = plan
        self.task_id = task_id
        write = plan.write
        self._columns = [f.name for f in write.data_schema] + list(write.partition_columns)
        self._inserts = TaskWriter(write, task_id)
        self._keys: dict[tuple[str, int], list[tuple[np.ndarray, ...]]] = {}
        self._counts: Counter[int] = Counter()
        self._tmp = tempfile.mkdtemp(prefix=f"acidorc-dml-{os.getpid()}-")

    # --- taking rows ---------------------------------------------------------------------------
    def write(self, batch: pa.RecordBatch) -> None:
        try:
            self._write(batch)
        except AcidError:
            raise
        except (pa.ArrowException, ValueError, TypeError, KeyError, IndexError) as exc:
            raise SchemaError(f"{self.plan.write.storage.display()}: DML task {self.task_id} could not take its rows: "
                              f"{type(exc).__name__}: {exc}") from exc

    def _write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        ops = batch.column(batch.schema.get_field_index(OP_COLUMN))
        for op, count in zip(*np.unique(ops.to_numpy(zero_copy_only=False), return_counts=True)):
            self._counts[int(op)] += int(count)
        inserts = pc.is_in(ops, pa.array(INSERT_SIDE, ops.type))
        if pc.any(inserts).as_py():
            self._inserts.write(batch.filter(inserts).select(self._columns))
        deletes = batch.filter(pc.invert(inserts))
        if deletes.num_rows:
            self._collect_deletes(deletes)

    def _collect_deletes(self, rows: pa.RecordBatch) -> None:
        row_ids = rows.column(rows.schema.get_field_index(ROW_ID_COLUMN))
        if row_ids.null_count:
            raise SchemaError(f"{self.plan.write.storage.display()}: a row to delete has no ROW__ID")
        o, b, r = (np.asarray(row_ids.field(i).to_numpy(zero_copy_only=False)) for i in range(3))
        no_action = (rows.column(rows.schema.get_field_index(OP_COLUMN)).to_numpy(zero_copy_only=False)
                     == MATCHED_NO_ACTION)
        writers = bucket_codec.decode_writer_ids(b.astype(np.int32))
        parts = list(self.plan.write.partition_columns)
        source = rows.schema.get_field_index(SOURCE_DIR_COLUMN)
        by_source = bool(parts) and source >= 0 and rows.column(source).null_count == 0
        if by_source:  # the directory each row was read from
            keys = [rows.column(source).cast(pa.string()), pa.array(writers)]
        else:  # unpartitioned, or a producer that does not say where its rows were read from
            keys = [rows.column(rows.schema.get_field_index(c)) for c in parts] + [pa.array(writers)]
        indexed = pa.RecordBatch.from_arrays([pa.array(np.arange(rows.num_rows))], names=["i"])
        for values, group in group_rows(_with(indexed, keys), keys):
            idx = group.column(0).to_numpy()
            part = str(values[0]).strip("/") if by_source else self._partition_dir(values[:-1])
            self._keys.setdefault((part, int(values[-1])), []).append((o[idx], b[idx], r[idx], no_action[idx]))

    def _partition_dir(self, values: tuple) -> str:
        """The directory of a delete-side row that does not name its own: the one directory of
        its value. With several, the row's directory is unknown - refused, never guessed."""
        write = self.plan.write
        if not write.partition_columns:
            return ""
        found = write.directories_of(tuple(values))
        if len(found) > 1:
            raise SchemaError(f"{write.storage.display()}: partition value {values!r} has the directories "
                              f"{', '.join(found)}, and a row to delete does not say which one it was read from")
        return found[0] if found else write.partition_dir(tuple(values))

    # --- finishing -----------------------------------------------------------------------------
    def close(self) -> TaskResult:
        try:
            return self._close()
        except AcidError:
            raise
        except OSError as exc:
            raise StorageError(self.plan.write.storage.display(),
                               f"DML task {self.task_id} of write id {self.plan.write.write_id} could not "
                               f"finish its files: {exc}") from exc
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _close(self) -> TaskResult:
        result = TaskResult(self.task_id, counts={COUNT_NAMES[op]: n for op, n in self._counts.items()})
        for (part, writer_id), chunks in sorted(self._keys.items()):
            self._write_delete_file(part, writer_id, chunks, result)
        self._keys.clear()
        inserted: TaskResult = self._inserts.close()
        result.files.extend(inserted.files)
        result.directories.extend(inserted.directories)
        return result

    def _write_delete_file(self, part: str, writer_id: int, chunks, result: TaskResult) -> None:
        o, b, r, no_action = (np.concatenate([c[i] for c in chunks]) for i in range(4))
        order = row_ids.order(o, b, r)
        o, b, r, no_action = o[order], b[order], r[order], no_action[order]
        same = row_ids.same_as_previous(o, b, r)
        if same.any() and self.plan.repeated_deletes:
            first = row_ids.first_of_each(o, b, r)
            result.add(COUNT_NAMES[DELETE], -int(same.sum()))  # each row once
            o, b, r, no_action = o[first], b[first], r[first], no_action[first]
        elif same.any():
            i = int(np.flatnonzero(same)[0])
            key = f"(writeId {o[i]}, bucketId {b[i]}, rowId {r[i]})"
            where = f"{self.plan.write.storage.display()}/{part}".rstrip("/")
            if self.plan.merge_condition is not None:
                raise MergeCardinalityError(self.plan.merge_condition, where, key)
            raise SchemaError(f"{where}: the target row {key} would be deleted twice in one statement")
        keep = ~no_action
        if not keep.any():
            return
        write = self.plan.write
        storage = write.storage
        base = storage.join(storage.root, part) if part else storage.root
        directory = storage.join(base, delta_dir_name(write.write_id, write.write_id, write.statement_id(self.task_id),
                                                      delete=True))
        name = bucket_file_name(writer_id)
        storage.check_inside_root(directory)
        storage.make_dirs(directory)
        storage.write_if_absent(storage.join(directory, ACID_VERSION_FILE), b"2")
        if directory not in result.directories:
            result.directories.append(directory)
        local = os.path.join(self._tmp, f"{uuid.uuid4().hex}.orc")
        writer = DeleteFileWriter(local, write.data_schema, write.write_id, writer_id,
                                  compression=write.compression, stripe_size=write.stripe_size)
        writer.write((o[keep], b[keep], r[keep]))
        info = writer.close()
        final = storage.join(directory, name)
        storage.put_file(local, final)
        result.files.append(info.placed(final, part))

    def abort(self) -> None:
        self._inserts.abort()
        shutil.rmtree(self._tmp, ignore_errors=True)


def _with(batch: pa.RecordBatch, keys: list[pa.Array]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(list(batch.columns) + keys,
                                      names=list(batch.schema.names) + [f"__k{i}" for i in range(len(keys))])


def with_source_dir(batch: pa.RecordBatch, directory: str) -> pa.RecordBatch:
    """``batch`` of change rows read from one partition ``directory`` (relative to the table
    root), saying so (:data:`SOURCE_DIR_COLUMN`)."""
    column = pa.repeat(pa.scalar(directory.strip("/"), pa.string()), batch.num_rows)  # no Python list a row
    return pa.RecordBatch.from_arrays(list(batch.columns) + [column],
                                      names=list(batch.schema.names) + [SOURCE_DIR_COLUMN])


def relative_dir(root: str, path: str) -> str:
    """A partition directory's full ``path`` relative to the table ``root``."""
    root = root.rstrip("/")
    return path[len(root):].strip("/") if path.startswith(root) else path.strip("/")


def write_changes(plan: ChangePlan, task_id: int, batches) -> TaskResult:
    """Write every change row of ``batches`` as one task; on failure nothing of the task's
    own staging remains (directories it created are removed by the transaction's abort)."""
    writer = ChangeWriter(plan, task_id)
    try:
        for batch in batches:
            writer.write(batch)
        return writer.close()
    except BaseException:
        writer.abort()
        raise
