"""Which files of a planned scan need no ACID merge, so that an engine's own ORC reader can read
them as they are (the native route), and which buckets stay on acidorc's merge (the Python
route).

A bucket goes native when nothing but its own insert events decides what a snapshot sees:
no visible delete events, no pre-ACID (original) files, no ACID v1 update or delete events, no
growing streaming file (``_flush_length``), and files whose columns the engine reads exactly as
acidorc does (the same names and types; timestamps stay with acidorc, whose wall-clock
reading does not depend on time zones). A native file is then read whole: every insert event,
or - where the snapshot does not see every write id the file may hold - the events of the write
ids it sees, exactly as :class:`~acid_source.scan.visibility.SplitVisibility` decides.

Runs on the driver: reads file footers (in threads), imports no engine.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from ..errors import AcidError
from ..layout.table_dirs import INSERT_ONLY
from ..layout.writeids import ValidWriteIdList
from ..orc.files import ACID_COLUMNS, ROW, OrcFile
from .splits import BucketSplit, FileSlice, ReadContext
from .visibility import all_events_valid

#: the ACID event columns as Hive writes them: names and integer types, in order
EVENT_TYPES = (pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64())

#: characters a path handed to a Hadoop file system would read as a glob pattern, or (a colon)
#: refuse inside a path name
_HADOOP_SPECIAL = set("*?[]{}\\:")

FOOTER_THREADS = 16


@dataclass(frozen=True)
class NativeFile:
    """One data file an ORC reader can read whole."""

    path: str
    partition_values: tuple
    #: False: every event of the file is visible. True: only events whose currentTransaction
    #: the snapshot sees (a delta of write ids some of which are open or aborted, a base at or
    #: above the lowest open write id)
    check_valid: bool
    min_write_id: int
    max_write_id: int


@dataclass(frozen=True)
class RoutedScan:
    native: tuple[NativeFile, ...]
    merged: tuple[BucketSplit, ...]
    #: why buckets stayed on the merge: reason -> number of buckets
    reasons: dict[str, int] = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(self.reasons.items()))
        merged = len({(s.partition_path, s.bucket_id) for s in self.merged})
        return (f"{len(self.native)} file(s) read natively, {merged} bucket(s) merged by acidorc"
                + (f" ({why})" if why else ""))


def exception_ranges(write_ids: ValidWriteIdList, lo: int, hi: int) -> tuple[tuple[int, int], ...]:
    """The write-id ranges inside ``[lo, hi]`` the snapshot does not see: open or aborted ids,
    and everything above its high watermark."""
    ranges = sorted(write_ids.open_ranges + write_ids.aborted_ranges)
    out = [(max(a, lo), min(b, hi)) for a, b in ranges if b >= lo and a <= hi]
    if hi > write_ids.high_watermark:
        out.append((max(lo, write_ids.high_watermark + 1), hi))
    return tuple(out)


def native_type(t: pa.DataType) -> bool:
    """Types an engine's ORC reader returns exactly as acidorc does. Timestamps are not among
    them: ORC stores wall-clock times that JVM readers shift by the reader's time zone."""
    if pa.types.is_struct(t):
        return all(native_type(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return native_type(t.key_type) and native_type(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return native_type(t.value_type)
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_string(t)
            or pa.types.is_binary(t) or pa.types.is_decimal(t) or pa.types.is_date32(t))


def _why_not_native_slice(s: FileSlice) -> str | None:
    """Why a file cannot be read whole by an engine, judged by its name alone (None: it can)."""
    if s.dir_kind not in ("base", "delta"):
        return "pre-ACID files"
    if s.length is not None:
        return "open streaming files"
    if _HADOOP_SPECIAL & set(s.path):
        return "glob characters or colons in paths"
    return None


def _why_not_native_file(f: OrcFile, fields: list[pa.Field], insert_only: bool) -> str | None:
    """Why an engine cannot read this file as acidorc would, judged by its footer (None: it can)."""
    if insert_only:
        if f.is_acid:
            return "ACID events in an insert-only table"
        columns = f.schema
    else:
        schema = f.schema
        if (tuple(schema.names) != ACID_COLUMNS
                or tuple(schema.field(i).type for i in range(ROW)) != EVENT_TYPES
                or not pa.types.is_struct(schema.field(ROW).type)):
            return "files without Hive's ACID event columns"
        stats = f.acid_stats
        if stats is None or stats[1] or stats[2]:
            return "ACID v1 update or delete events"
        row = schema.field(ROW).type
        columns = pa.schema([row.field(i) for i in range(row.num_fields)])
    for field in fields:
        i = columns.get_field_index(field.name)
        if i < 0 or columns.field(i).type != field.type:
            return "files whose columns differ from the table's"
    return None


def route_splits(ctx: ReadContext, splits: list[BucketSplit], *, threads: int = FOOTER_THREADS) -> RoutedScan:
    """Split a planned scan into files an engine reads natively and buckets acidorc merges."""
    fields = ctx.data_fields
    table_reason = None
    if not ctx.storage.is_local:
        table_reason = "storage the engine may not reach"
    elif not all(native_type(f.type) for f in fields):
        table_reason = "timestamp columns"
    if table_reason is not None:
        buckets = len({(s.partition_path, s.bucket_id) for s in splits})
        return RoutedScan((), tuple(splits), {table_reason: buckets} if buckets else {})

    groups: dict[tuple[str, int], list[BucketSplit]] = defaultdict(list)
    for s in splits:
        groups[(s.partition_path, s.bucket_id)].append(s)
    insert_only = ctx.table_kind == INSERT_ONLY
    candidates = {key: group for key, group in groups.items() if not any(s.deletes for s in group)}
    reasons: Counter[str] = Counter()
    reasons["visible delete events"] = len(groups) - len(candidates)

    files = {fs.path: fs for group in candidates.values() for s in group for fs in s.inserts}

    def check(s: FileSlice) -> str | None:
        why = _why_not_native_slice(s)
        if why is not None:
            return why
        try:
            return _why_not_native_file(OrcFile(ctx.storage, s.path), fields, insert_only)
        except AcidError:
            return "unreadable files"  # acidorc's reader reports it, naming the file

    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(files)))) as pool:
        verdicts = dict(zip(files, pool.map(check, files.values())))

    write_ids = ctx.write_ids
    if write_ids is None and splits:
        write_ids = ValidWriteIdList.parse(splits[0].write_ids)
    native: list[NativeFile] = []
    merged: list[BucketSplit] = []
    for key, group in groups.items():
        if key not in candidates:
            merged.extend(group)
            continue
        slices = {fs.path: fs for s in group for fs in s.inserts}  # a bucket cut into stripe ranges: each file once
        why = next((verdicts[p] for p in slices if verdicts[p] is not None), None)
        if why is not None:
            reasons[why] += 1
            merged.extend(group)
            continue
        assert write_ids is not None
        for fs in slices.values():
            native.append(NativeFile(fs.path, group[0].partition_values,
                                     not all_events_valid(write_ids, fs.dir_kind, fs.min_write_id, fs.max_write_id),
                                     fs.min_write_id, fs.max_write_id))
    return RoutedScan(tuple(native), tuple(merged), {k: v for k, v in reasons.items() if v})
