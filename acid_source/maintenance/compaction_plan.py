"""Planning a compaction on the driver: the compactor's snapshot, which data objects have work,
their inputs per writer id and the names of the outputs - exactly as Hive's compactor decides
them (HIVE_ACID_FORMAT.md 2.4, 8.1).

* The snapshot (Hive's ``ValidCompactorWriteIdList``): the high watermark is the lowest open
  write id minus one, so a compaction never reads past a transaction that may still commit;
  aborted write ids are the only exceptions, so their events are dropped. Directories written
  by transactions that are open - the compaction's own included - are not seen
  (``_vT`` directories of running compactions).
* minor: the data object's deltas become ``delta_MIN_MAX_vT`` and ``delete_delta_MIN_MAX_vT``
  (MIN/MAX: the range of the compacted deltas, no statement id, T the compaction's transaction);
  major: everything becomes ``base_N_vT`` with N the snapshot's high watermark.
* One task per (data object, writer id); :mod:`.compaction_tasks` runs them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field

import pyarrow as pa

from ..completeness import partition_key
from ..errors import InvalidArgumentError, TableNotRegisteredError
from ..expressions import parse_partition_filter
from ..layout.acid_state import AcidState
from ..layout.names import base_dir_name, delta_dir_name
from ..layout.table_dirs import INSERT_ONLY, PartitionDir, acid_state_for, convert_partition_value
from ..layout.writeids import ValidTxnList, ValidWriteIdList
from ..orc.codecs import canonical_codec
from ..orc.writer import BASE_STRIPE_SIZE, DELTA_STRIPE_SIZE
from ..scan.planner import partition_may_match
from ..scan.resolved import ResolvedTable, nullable
from ..scan.slicing import dir_slices, original_slices
from ..scan.splits import FileSlice
from ..storage import Storage
from .compaction_tasks import KINDS, MAJOR, MINOR, CompactionTask


def compaction_kind(value) -> str:
    """``"minor"`` or ``"major"`` (any case)."""
    kind = str(value).strip().lower() if isinstance(value, str) else None
    if kind not in KINDS:
        raise InvalidArgumentError("kind", f"expected 'minor' or 'major', got {value!r}")
    return kind


def compactor_write_ids(write_ids: ValidWriteIdList) -> ValidWriteIdList:
    """Hive's compactor view of a table snapshot (``TxnCommonUtils.createValidCompactWriteIdList``):
    high watermark below the lowest open write id, aborted ids the only exceptions."""
    hwm = write_ids.high_watermark
    if write_ids.min_open_id is not None:
        hwm = min(hwm, write_ids.min_open_id - 1)
    aborted = [(lo, min(hi, hwm)) for lo, hi in write_ids.aborted_ranges if lo <= hwm]
    return ValidWriteIdList(high_watermark=hwm, aborted_ranges=aborted, table_name=write_ids.table_name)


@dataclass
class DataObjectPlan:
    """The work on one data object (the unpartitioned table, or one partition)."""

    partition: str  # "" or the partition path relative to the table root
    path: str
    input_dirs: list[str]  # the base and delta directories compacted
    input_originals: list[str]  # pre-ACID files folded into a base
    outputs: list[str]  # the directories the compaction creates
    tasks: list[CompactionTask]


@dataclass
class CompactionPlan:
    kind: str
    table_kind: str
    txn_id: int
    write_ids: ValidWriteIdList  # the compactor's snapshot
    txns: ValidTxnList
    objects: list[DataObjectPlan] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # data object -> why there was nothing to do

    @property
    def tasks(self) -> list[CompactionTask]:
        return [t for o in self.objects for t in o.tasks]

    @property
    def output_dirs(self) -> list[str]:
        return [d for o in self.objects for d in o.outputs]


def plan_compaction(table: ResolvedTable, kind: str, txn_id: int, *, partition_filter: str | None = None,
                    partitions: Collection[str] | None = None) -> CompactionPlan:
    """The compaction of ``table`` by transaction ``txn_id``. ``table`` must be resolved at the
    store's current snapshot (taken after ``txn_id`` opened, which must be open in its
    transaction list); the compactor's bound is derived from it here.

    Only the data objects matching ``partition_filter`` (a SQL condition on partition columns,
    the user's ``partitionFilter``) and, if given, at ``partitions`` are compacted.
    ``partitions`` are paths relative to the table root as on storage ("" for an
    unpartitioned table, ``p=1/q=a``), matched by value (``p=01`` is ``p=1`` for an integer
    ``p``): internal callers name data objects this way, never with SQL built from values."""
    kind = compaction_kind(kind)
    info = table.info
    if info is None:
        raise TableNotRegisteredError(f"{table.location} is not registered in the transaction store; acidorc "
                                      "compacts only tables whose write ids it allocates", location=table.location)
    if table.txns.is_txn_valid(txn_id):
        raise InvalidArgumentError("txn_id", f"transaction {txn_id} must be open in the snapshot's transaction list "
                                             "(its own outputs must not be visible to it)")
    write_ids = compactor_write_ids(table.write_ids)
    plan = CompactionPlan(kind, table.kind, txn_id, write_ids, table.txns)
    layout = table.layout
    root = layout.storage.root.rstrip("/")
    part_fields = [table.schema().field(c) for c in table.partition_columns]
    chosen = None
    if partition_filter is not None:
        if not part_fields:
            raise InvalidArgumentError("partitionFilter", f"{table.location} is not partitioned")
        chosen = parse_partition_filter(partition_filter, table.schema(), list(table.partition_columns)).expression
    key = partition_key(info)
    wanted = None if partitions is None else {key(p.strip("/")) for p in partitions}
    data_schema = nullable(pa.schema([info.schema.field(n) for n in info.data_columns]))
    compression = canonical_codec(info.compression)
    for part in layout.partitions:
        rel = part.path[len(root):].strip("/")
        if wanted is not None and key(rel) not in wanted:
            continue
        if chosen is not None and not _chosen(chosen, part, part_fields):
            continue
        state = acid_state_for(layout, part, write_ids, table.txns)
        reason = _nothing_to_do(kind, state, write_ids)
        if reason is not None:
            plan.skipped[rel] = reason
            continue
        plan.objects.append(_object_plan(plan, layout.storage, part.path, rel, state, data_schema, compression))
    return plan


def _chosen(condition, part: PartitionDir, part_fields: list[pa.Field]) -> bool:
    """Does partitionFilter's compiled condition hold on this partition's values (as a read
    with that option would decide)?"""
    values = tuple(convert_partition_value(raw, f.type) for raw, f in zip(part.raw_values, part_fields))
    return partition_may_match(condition, part_fields, values, "partitionFilter")


def _nothing_to_do(kind: str, state: AcidState, write_ids: ValidWriteIdList) -> str | None:
    """Why a data object is left alone (None: compact it)."""
    hwm = write_ids.high_watermark
    straddling = [d.parsed.name for d in state.deltas if d.parsed.max_write_id > hwm]
    if straddling:
        # a streaming delta holding write ids on both sides of an open one: compacting it would
        # drop the later write ids' events (Hive's compactor must not cross an open write id)
        return f"{', '.join(straddling)} spans write ids above {hwm}, the lowest open write id minus one"
    inserts = [d for d in state.deltas if not d.parsed.is_delete]
    deletes = [d for d in state.deltas if d.parsed.is_delete]
    if kind == MINOR:
        if not state.deltas:
            return "no deltas"
        if len(inserts) < 2 and len(deletes) < 2:
            # as Hive's compactor: nothing to merge (aborted directories are the cleaner's);
            # compacting one delta again would give a second directory of the same range
            return "fewer than two deltas of a kind"
        return None
    if not state.deltas and not state.originals:
        return "nothing but a base" if state.base is not None else "no data"
    return None


def _object_plan(plan: CompactionPlan, storage: Storage, path: str, rel: str, state: AcidState,
                 data_schema: pa.Schema, compression: str) -> DataObjectPlan:
    txn = plan.txn_id
    insert_only = plan.table_kind == INSERT_ONLY
    if plan.kind == MINOR:
        lo = min(d.parsed.min_write_id for d in state.deltas)
        hi = max(d.parsed.max_write_id for d in state.deltas)
        output = storage.join(path, delta_dir_name(lo, hi, None, txn))
        has_deletes = any(d.parsed.is_delete for d in state.deltas)
        delete_output = storage.join(path, delta_dir_name(lo, hi, None, txn, delete=True)) if has_deletes else None
        dirs = list(state.deltas)
        originals: list = []
        stripe_size = DELTA_STRIPE_SIZE
    else:
        output = storage.join(path, base_dir_name(plan.write_ids.high_watermark, txn))
        delete_output = None
        dirs = ([state.base] if state.base is not None else []) + list(state.deltas)
        originals = list(state.originals)
        stripe_size = BASE_STRIPE_SIZE
    buckets: dict[int, tuple[list[FileSlice], list[FileSlice]]] = defaultdict(lambda: ([], []))
    for s in original_slices(storage, originals, table_kind=plan.table_kind):
        buckets[_writer(s.bucket_id, insert_only)][0].append(s)
    for d in dirs:
        for s in dir_slices(storage, d, table_kind=plan.table_kind):
            buckets[_writer(s.bucket_id, insert_only)][1 if d.parsed.is_delete else 0].append(s)
    tasks = []
    for bucket_id in sorted(buckets):
        inserts, deletes = buckets[bucket_id]
        if plan.kind == MAJOR and not inserts:
            continue  # deletes of rows this writer no longer has
        tasks.append(CompactionTask(
            kind=plan.kind, table_kind=plan.table_kind, storage=storage, partition=rel, partition_path=path,
            bucket_id=bucket_id, inserts=tuple(inserts), deletes=tuple(deletes), write_ids=str(plan.write_ids),
            output_dir=output, delete_output_dir=delete_output, data_schema=data_schema,
            compression=compression, stripe_size=stripe_size))
    outputs = [output] + ([delete_output] if delete_output else [])
    return DataObjectPlan(rel, path, [d.path for d in dirs], [e.path for e in originals], outputs, tasks)


def _writer(bucket_id: int, insert_only: bool) -> int:
    """The task a file goes to: its writer id. Insert-only tables may hold files whose names
    carry none (LOAD DATA): their rows have no ids, so writer 0 takes them."""
    return max(0, bucket_id) if insert_only else bucket_id
