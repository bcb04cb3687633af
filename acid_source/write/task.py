"""One write task: route incoming Arrow batches to partition directories and bucket files of
the new ``delta_W_W_S`` / ``base_W`` directories, and report what it wrote.

File naming (HIVE_ACID_FORMAT.md 6.3, 10): in an unbucketed table the number in ``bucket_N``
is the writer (task) id; a bucketed table routes each row to its hash bucket N, and since
several tasks may hold rows of one bucket, each task writes its own statement directory
``delta_W_W_<task>`` so that no two tasks write the same file and row ids stay unique per
(write id, bucket property).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa

from ..errors import AcidError, SchemaError, StorageError
from ..faults import crash_point
from ..layout import bucket_codec
from ..layout.bucketing import bucket_ids
from ..layout.names import ACID_VERSION_FILE, base_dir_name, bucket_file_name, delta_dir_name
from ..orc.files import wall_clock_type
from ..orc.writer import DELTA_STRIPE_SIZE, InsertFileWriter, WrittenFile
from ..storage import Storage
from .rows import group_rows, partition_path


@dataclass(frozen=True)
class WritePlan:
    """Everything a task needs, decided once on the driver (picklable, no live clients)."""

    storage: Storage
    data_schema: pa.Schema  # the table's non-partition columns, in table order
    partition_columns: tuple[str, ...]
    static_partition: tuple = ()  # ((column, value), ...) from the 'partition' option
    bucket_columns: tuple[str, ...] = ()
    num_buckets: int = 0
    bucketing_version: int = 2
    insert_only: bool = False
    compression: str = "zlib"
    write_id: int = 0
    overwrite: bool = False
    stripe_size: int = DELTA_STRIPE_SIZE
    #: (partition values, directory relative to the root) of every existing partition (values
    #: as :func:`~acid_source.write.rows.partition_key` makes them): new rows go where rows
    #: with those values already are (a directory ``p=01`` holds value 1; 1 formats as ``p=1``).
    #: One value may have several directories (Hive's ``p=01`` next to ``p=1``)
    partition_dirs: tuple[tuple[tuple, str], ...] = ()

    def partition_dir(self, values: tuple) -> str:
        """The directory new rows of ``values`` go to: the one existing directory of the value,
        and when there are several, the one named as :func:`partition_path` names it (Hive's
        spelling) if it exists, else the first by name - the same choice on every task and
        every run. With none, a new directory named the Hive way."""
        if not self.partition_columns:
            return ""
        named = partition_path(list(self.partition_columns), values)
        found = self.directories_of(values)
        if not found or named in found:
            return named
        return found[0]

    def directories_of(self, values: tuple) -> list[str]:
        """Every existing directory of ``values``, sorted by name."""
        return sorted({path for known, path in self.partition_dirs if known == values})

    @property
    def bucketed(self) -> bool:
        return self.num_buckets > 0 and bool(self.bucket_columns)

    def dir_name(self, task_id: int) -> str:
        statement = self.statement_id(task_id)
        if self.overwrite:
            return base_dir_name(self.write_id)
        return delta_dir_name(self.write_id, self.write_id, statement)

    def statement_id(self, task_id: int) -> int:
        if self.bucketed:
            return task_id
        return task_id // (bucket_codec.MAX_WRITER_ID + 1)  # more than 4096 writers: Hive 4's overflow

    def writer_id(self, task_id: int, bucket: int) -> int:
        return bucket if self.bucketed else task_id % (bucket_codec.MAX_WRITER_ID + 1)


@dataclass
class TaskResult:
    """What one task of any write wrote - an append or overwrite, a DML, a compaction: the one
    result shape the commit path takes. ``directories`` are the ones the task created (an abort
    removes them); ``counts`` holds what only one kind of write counts (a DML's rows per
    operation, a compaction's input and dropped rows), by name."""

    task_id: int
    files: list[WrittenFile] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    def add(self, name: str, n: int) -> None:
        """Add ``n`` to the count ``name``."""
        self.counts[name] = self.counts.get(name, 0) + int(n)


# Arrow type changes a write may make silently when the data's type differs from the table's.
_WIDENINGS = {
    (pa.int8(), pa.int16()), (pa.int8(), pa.int32()), (pa.int8(), pa.int64()),
    (pa.int16(), pa.int32()), (pa.int16(), pa.int64()), (pa.int32(), pa.int64()),
    (pa.float32(), pa.float64()),
}


def plain_type(data_type: pa.DataType) -> pa.DataType:
    """``data_type`` in the plain layout Hive's types map to: string and binary views and 64-bit
    offsets (what polars and DuckDB hand over) become string, binary and list, at any depth. The
    values are the same; only their layout in memory differs."""
    is_view = getattr(pa.types, "is_list_view", lambda t: False)
    is_large_view = getattr(pa.types, "is_large_list_view", lambda t: False)
    if pa.types.is_large_string(data_type) or getattr(pa.types, "is_string_view", lambda t: False)(data_type):
        return pa.string()
    if pa.types.is_large_binary(data_type) or getattr(pa.types, "is_binary_view", lambda t: False)(data_type):
        return pa.binary()
    if pa.types.is_map(data_type):
        return pa.map_(plain_type(data_type.key_type), _plain_field(data_type.item_field))
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type) or is_view(data_type) \
            or is_large_view(data_type):
        return pa.list_(_plain_field(data_type.value_field))
    if pa.types.is_struct(data_type):
        return pa.struct([_plain_field(f) for f in data_type])
    return data_type


def _plain_field(f: pa.Field) -> pa.Field:
    return f.with_type(plain_type(f.type))


def plain_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([_plain_field(f) for f in schema], metadata=schema.metadata)


def _compatible(data_type: pa.DataType, table_type: pa.DataType) -> bool:
    data_type = plain_type(data_type)
    return data_type == table_type or (data_type, table_type) in _WIDENINGS or pa.types.is_null(data_type)


def check_unique_columns(data_schema: pa.Schema) -> None:
    """Hive column names are case-insensitive: ``id`` and ``ID`` would be one column."""
    seen: dict[str, str] = {}
    for name in data_schema.names:
        other = seen.setdefault(name.lower(), name)
        if other != name or data_schema.names.count(name) > 1:
            raise SchemaError(f"the data has columns {other!r} and {name!r}, which are the same column in a "
                              "Hive table (names are case-insensitive); rename or drop one")


def check_data_schema(location: str, expected: pa.Schema, data_schema: pa.Schema) -> None:
    """The data must have exactly the ``expected`` columns, by name (case-insensitive), with
    the same or a safely widened type."""
    given = {f.name.lower(): f for f in data_schema}
    problems = []
    for f in expected:
        d = given.pop(f.name.lower(), None)
        if d is None:
            problems.append(f"missing column {f.name!r}")
        elif not _compatible(d.type, f.type):
            problems.append(f"column {f.name!r} is {d.type} in the data but {f.type} in the table")
    problems += [f"unknown column {name!r}" for name in given]
    if problems:
        raise SchemaError(f"cannot write to {location}: " + "; ".join(problems))


class TaskWriter:
    """The task side of one append or overwrite: ``write(batch)`` any number of times, then
    ``close()`` (-> :class:`TaskResult`) or ``abort()``. Built from a picklable
    :class:`WritePlan`; holds no client of the transaction store. With ``expected`` (the
    write's schema), every batch's schema is checked against it first (a staged write whose
    data schema was not checked when it began)."""

    def __init__(self, plan: WritePlan, task_id: int, *, expected: pa.Schema | None = None):
        if plan.bucketed and task_id > bucket_codec.MAX_STATEMENT_ID:
            raise SchemaError(f"a bucketed write supports at most {bucket_codec.MAX_STATEMENT_ID + 1} tasks; "
                              "coalesce the DataFrame first")
        self.plan = plan
        self.task_id = task_id
        self.result = TaskResult(task_id)
        self._writers: dict[tuple[str, int], tuple[InsertFileWriter, str, str]] = {}
        _remove_stale_task_dirs()
        self._tmp = tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-")
        self._router = RowRouter(plan)
        self._expected = expected
        self._checked: set[pa.Schema] = set()
        self._plain: dict[pa.Schema, pa.Schema] = {}  # a batch's schema -> its plain layout

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        if isinstance(batch, pa.Table):  # a table is its batches, in order
            for part in batch.to_batches():
                self.write(part)
            return
        if self._expected is not None and batch.schema not in self._checked:
            check_unique_columns(batch.schema)
            check_data_schema(self.plan.storage.display(), self._expected, batch.schema)
            self._checked.add(batch.schema)
        with self._typed_errors("write rows"):
            self._write(self._plain_layout(batch))

    def _plain_layout(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The batch in the plain layout (:func:`plain_type`), cast only when it is not."""
        target = self._plain.get(batch.schema)
        if target is None:
            target = self._plain[batch.schema] = plain_schema(batch.schema)
        return batch if target == batch.schema else batch.cast(target)

    def _write(self, batch: pa.RecordBatch) -> None:
        for part, bucket, rows in self._router.route(batch):
            self._writer(part, bucket).write(rows)

    def close(self) -> TaskResult:
        with self._typed_errors("finish its files"):
            return self._close()

    @contextlib.contextmanager
    def _typed_errors(self, doing: str):
        """A raw error of pyarrow, numpy or the OS leaving a Spark task is a bug: say which
        table and write id it hit (the write is aborted and leaves nothing)."""
        try:
            yield
        except AcidError:
            raise
        except OSError as exc:
            raise StorageError(self.plan.storage.display(), f"write task {self.task_id} of write id "
                                                            f"{self.plan.write_id} could not {doing}: {exc}") from exc
        except (pa.ArrowException, ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
            raise SchemaError(f"{self.plan.storage.display()}: write task {self.task_id} of write id "
                              f"{self.plan.write_id} could not {doing}: {type(exc).__name__}: {exc}") from exc

    def _close(self) -> TaskResult:
        try:
            for (part, _), (writer, tmp_path, final_path) in self._writers.items():
                info = writer.close()
                self.plan.storage.put_file(tmp_path, final_path)
                self.result.files.append(info.placed(final_path, part))
                crash_point("write.task.after_first_file")
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)
        return self.result

    def abort(self) -> None:
        for writer, _, _ in self._writers.values():
            try:
                writer.close()
            except Exception:  # the task is failing anyway; the original error is what matters
                pass
        shutil.rmtree(self._tmp, ignore_errors=True)

    # --- helpers -----------------------------------------------------------------------------
    def _writer(self, part: str, bucket: int) -> InsertFileWriter:
        key = (part, bucket)
        entry = self._writers.get(key)
        if entry is None:
            storage = self.plan.storage
            directory = storage.join(storage.root, part) if part else storage.root
            directory = storage.join(directory, self.plan.dir_name(self.task_id))
            writer_id = self.plan.writer_id(self.task_id, bucket)
            if self.plan.insert_only:
                name = f"{writer_id:06d}_0"
            else:
                name = bucket_file_name(writer_id)
            final_path = storage.join(directory, name)
            storage.check_inside_root(directory)  # a planted link must not take rows elsewhere
            storage.make_dirs(directory)
            if not self.plan.insert_only:
                storage.write_if_absent(storage.join(directory, ACID_VERSION_FILE), b"2")
            self.result.directories.append(directory)
            tmp_path = os.path.join(self._tmp, f"{uuid.uuid4().hex}.orc")
            prop = bucket_codec.encode_v1(writer_id, self.plan.statement_id(self.task_id))
            writer = InsertFileWriter(tmp_path, self.plan.data_schema, self.plan.write_id, prop,
                                      compression=self.plan.compression, stripe_size=self.plan.stripe_size,
                                      plain=self.plan.insert_only)
            entry = self._writers[key] = (writer, tmp_path, final_path)
        return entry[0]



class RowRouter:
    """Where rows go: each batch split by partition (the static one, or the rows' partition
    columns) and, for bucketed tables, by Hive's bucket id - what every inserting writer of a
    plan does (a write task, a streaming transaction batch). Yields the data columns only, in
    the table's order and types."""

    def __init__(self, plan: WritePlan):
        self.plan = plan
        self._names = {f.name.lower(): f for f in plan.data_schema}
        self._dirs: dict[tuple, str] = {}

    def route(self, batch: pa.RecordBatch) -> Iterator[tuple[str, int, pa.RecordBatch]]:
        """``(partition directory, bucket, rows)`` groups of ``batch`` (bucket 0 unbucketed)."""
        if batch.num_rows == 0:
            return
        data = self._data_columns(batch)
        part_keys = [] if self.plan.static_partition else [self._column(batch, c) for c in self.plan.partition_columns]
        for part_values, rows in group_rows(data if not part_keys else _with_keys(data, part_keys), part_keys):
            rows = rows.select(list(range(len(self.plan.data_schema))))
            if self.plan.static_partition:
                part_values = tuple(v for _, v in self.plan.static_partition)
            part = self._partition_dir(tuple(part_values))
            if self.plan.bucketed:
                ids = bucket_ids([_wall_clock(rows.column(rows.schema.get_field_index(c)))
                                  for c in self._bucket_names()],
                                 self.plan.num_buckets, self.plan.bucketing_version)
                for (bucket,), bucket_rows in group_rows(rows, [pa.array(ids)]):
                    yield part, int(bucket), bucket_rows
            else:
                yield part, 0, rows

    def _partition_dir(self, values: tuple) -> str:
        found = self._dirs.get(values)
        if found is None:
            found = self._dirs[values] = self.plan.partition_dir(values)
        return found

    def _bucket_names(self) -> list[str]:
        return [self._names[c.lower()].name for c in self.plan.bucket_columns]

    def _column(self, batch: pa.RecordBatch, name: str) -> pa.Array:
        idx = _field_index(batch.schema, name)
        if idx < 0:
            raise SchemaError(f"the data has no column {name!r}")
        return batch.column(idx)

    def _data_columns(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        arrays = []
        for f in self.plan.data_schema:
            arr = self._column(batch, f.name)
            if arr.type != f.type:
                arr = arr.cast(f.type)
            arrays.append(arr)
        return pa.RecordBatch.from_arrays(arrays, schema=self.plan.data_schema)


_TMP_PREFIX = "acidorc-task-"


def _remove_stale_task_dirs() -> None:
    """Local staging directories of task processes that died (SIGKILL skips every clean-up):
    their names carry the process id."""
    root = tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(root) if n.startswith(_TMP_PREFIX)]
    except OSError:
        return
    for name in names:
        pid_text = name[len(_TMP_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        except OSError:
            pass


def _wall_clock(arr: pa.Array) -> pa.Array:
    """Hive hashes timestamps as wall-clock values: drop a time zone Spark attached, also
    inside structs, lists and maps."""
    wall = wall_clock_type(arr.type)
    return arr if wall == arr.type else arr.cast(wall)


def _field_index(schema: pa.Schema, name: str) -> int:
    idx = schema.get_field_index(name)
    if idx >= 0:
        return idx
    lowered = [n.lower() for n in schema.names]
    return lowered.index(name.lower()) if name.lower() in lowered else -1


def _with_keys(data: pa.RecordBatch, keys: list[pa.Array]) -> pa.RecordBatch:
    """Data columns plus the partition keys (dropped again after grouping)."""
    return pa.RecordBatch.from_arrays(list(data.columns) + keys,
                                      names=list(data.schema.names) + [f"__key{i}" for i in range(len(keys))])

