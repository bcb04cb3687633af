"""Planning a change feed on the driver: which committed write ids, which of their delta and
delete-delta directories, and one :class:`~acid_source.streaming.change_reader.ChangeSplit`
per (partition directory, bucket).

Changes come from the write ids' own events, never from a diff of two scans: insert events
whose ``currentTransaction`` is a wanted write id (a minor compaction's ``delta_x_y_vT`` keeps
each event's write id, so it serves as well as the original deltas), and their delete events,
whose rows' values are looked up by ROW__ID on the executors. A major compaction's base keeps
neither delete events nor the rows deleted before it, so once the cleaner removed a write id's
deltas its changes are gone: that is a :class:`HistoryUnavailableError`, found from the
listing and the store's record of which data objects each write id wrote - never silently
fewer changes. While compacted deltas are still there, they are read.

The order is the one :mod:`acid_source.resolve` keeps: the store's history (which write ids
committed) first, then a snapshot (which compaction outputs are committed), then the listing,
so every directory a committed write wrote is listed.
"""

from __future__ import annotations

import datetime as dt
import math
import operator
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pyarrow as pa

from ..completeness import Gap, missing_data_error, partition_key, relative
from ..errors import (
    HistoryUnavailableError,
    InvalidArgumentError,
    UnsupportedOperationError,
    VersionNotFoundError,
)
from ..layout.acid_state import CLEANING_MARKER, AcidDir
from ..layout.coverage import usable_dirs
from ..layout.names import is_hidden
from ..layout.table_dirs import FULL_ACID, INSERT_ONLY, TableLayout, convert_partition_value, discover_layout
from ..layout.writeids import ValidTxnList, ValidWriteIdList
from ..maintenance.cleaner import REMOVING_PREFIX
from ..metastore.constants import ADOPT, DML_OPERATIONS, INSERT_OVERWRITE
from ..resolve import registered_table
from ..scan.resolved import nullable
from ..scan.slicing import dir_slices, original_slices
from ..scan.splits import FileSlice
from ..storage import FileEntry, Storage
from .change_reader import ChangeContext, ChangeSplit, change_schema

OVERWRITE_OPERATIONS = (INSERT_OVERWRITE,)
_ATTEMPTS = 3  # listings before a write id no directory holds is called missing data


@dataclass(frozen=True)
class ChangePlan:
    """What a change feed reads: ``write_ids`` (the committed ones among those asked for,
    ascending), ``dml_write_ids`` (those that may have written delete events: an UPDATE,
    DELETE or MERGE whose delete events are on storage), the context every split shares and
    the splits (picklable; read each with :func:`~acid_source.streaming.change_reader.read_change_split`)."""

    location: str
    write_ids: tuple[int, ...]
    dml_write_ids: tuple[int, ...]
    context: ChangeContext
    splits: tuple[ChangeSplit, ...]

    @property
    def schema(self) -> pa.Schema:
        return self.context.output_schema

    @property
    def has_deletes(self) -> bool:
        return bool(self.dml_write_ids)


def plan_changes(location: str, write_ids: Iterable[int], *, metastore_url: str | None = None,
                 storage_options: tuple = (), asked: str | None = None) -> ChangePlan:
    """The change feed of an explicit set of write ids (not necessarily contiguous: e.g. the
    write ids committed between two snapshots). Write ids that are not committed (open,
    aborted, never allocated) are left out: they have no changes. ``asked`` says what the
    caller asked for, in errors (default: the write ids)."""
    wanted = sorted({_write_id(w) for w in write_ids})
    shown = asked or f"write ids {_shown(wanted)}"
    return _plan(location, lambda history: [w for w in wanted if w in history], shown,
                 metastore_url=metastore_url, storage_options=storage_options)


def plan_change_range(location: str, *, starting_version: int | None = None, ending_version: int | None = None,
                      starting_timestamp: float | None = None, ending_timestamp: float | None = None,
                      metastore_url: str | None = None, storage_options: tuple = ()) -> ChangePlan:
    """The change feed of the committed write ids ``starting_version..ending_version`` (both
    inclusive; the end defaults to the latest), or of those committed at or after
    ``starting_timestamp`` and at or before ``ending_timestamp`` (UTC epoch seconds). A
    starting version after the latest one is a :class:`VersionNotFoundError`; a time range
    without commits is empty."""
    asked = ", ".join(f"{name}={_shown_value(value)}" for name, value in (
        ("startingVersion", starting_version), ("endingVersion", ending_version),
        ("startingTimestamp", starting_timestamp), ("endingTimestamp", ending_timestamp)) if value is not None)

    def select(history: dict[int, dict]) -> list[int]:
        latest = max(history, default=0)
        if starting_version is not None and starting_version > latest:
            raise VersionNotFoundError(f"{location}: the change feed for {asked} starts after the latest version "
                                       f"{latest}", write_id=starting_version)
        # times compare as the feed shows them: to the microsecond
        start = None if starting_timestamp is None else _micros(starting_timestamp)
        end = None if ending_timestamp is None else _micros(ending_timestamp)
        chosen = []
        for w in sorted(history):
            when = _micros(history[w]["commit_time"])
            if starting_version is not None and w < starting_version:
                continue
            if ending_version is not None and w > ending_version:
                continue
            if (start is not None and when < start) or (end is not None and when > end):
                continue
            chosen.append(w)
        return chosen

    return _plan(location, select, asked, metastore_url=metastore_url, storage_options=storage_options)


# --- the plan ----------------------------------------------------------------------------------
def _plan(location: str, select: Callable[[dict[int, dict]], list[int]], asked: str, *,
          metastore_url: str | None, storage_options: tuple) -> ChangePlan:
    store, info = registered_table(location, metastore_url, ", whose commit history a change feed reads")
    if not store.keeps_history:
        raise UnsupportedOperationError(
            "readChangeFeed", f"{info.location} is kept in {store.url}, which records no commit history (which "
                              "write ids committed when, and which partitions each wrote); the change feed needs "
                              "it: use acidorc's own transaction store")
    storage = Storage(info.location, storage_options)
    table_schema = nullable(info.read_schema)
    output = change_schema(table_schema)
    key = partition_key(info)
    problem: Exception | None = None
    for _attempt in range(_ATTEMPTS):
        history = {h["write_id"]: h for h in store.history(info.table_id) if h["write_id"] is not None}
        wanted = select(history)
        adopted = [w for w in wanted if history[w]["operation"] == ADOPT]
        if adopted:
            raise UnsupportedOperationError(
                "readChangeFeed", f"the write ids up to {adopted[0]} of {info.location} were adopted from storage "
                                  f"(create_table(adopt=True)) with no record of what each changed ({asked}); the "
                                  f"change feed starts after them: startingVersion={adopted[0] + 1}")
        overwrites = [w for w in wanted if history[w]["operation"] in OVERWRITE_OPERATIONS]
        if overwrites:
            raise UnsupportedOperationError(
                "readChangeFeed", f"write id {overwrites[0]} of {info.location} overwrote data ({asked}); the change "
                                  "feed lists the changes of appends, UPDATE, DELETE and MERGE, not the rows an "
                                  "overwrite replaced: read a range that starts after it")
        now_ids, now_txns = store.snapshot(info.table_id)  # after the history: every wanted write id is committed
        layout = discover_layout(storage)  # after the snapshot
        by_object = _directories_by_object(layout, key)
        touched: dict[str, list[int]] = defaultdict(list)
        for w in wanted:
            for part in history[w]["touched"]:
                touched[part].append(w)
        written: dict[object, list[int]] = defaultdict(list)  # every committed write id of each data object
        for w, entry in history.items():
            for part in entry["touched"]:
                written[key(part)].append(w)
        try:
            dirs = {}
            for part, ids in sorted(touched.items()):
                paths = by_object.get(key(part), [])
                for path in paths:
                    dirs[path] = _usable_dirs(layout.listings[path], now_ids, now_txns, info.insert_only)
                _check_history(info.location, part, ids, written[key(part)], [dirs[p] for p in paths],
                               [layout.listings[p] for p in paths], paths, asked)
            _check_still_listed(storage, layout, dirs, info.location, asked)
            problem = None
            break
        except (HistoryUnavailableError, _Missing) as exc:
            problem = exc
    if problem is not None:
        if isinstance(problem, _Missing):
            raise missing_data_error(layout, [problem.gap], f"read the change feed for {asked}")
        raise problem
    micros = tuple(_micros(history[w]["commit_time"]) for w in wanted)
    ctx = ChangeContext(storage, storage.display(), output, tuple(info.partition_columns), tuple(wanted), micros,
                        asked)
    part_fields = [table_schema.field(c) for c in info.partition_columns]
    splits: list[ChangeSplit] = []
    dml: set[tuple[int, bool]] = set()  # (write id, from its own delete delta) of delete events found
    for part in layout.partitions:
        if part.path not in dirs:
            continue
        values = tuple(convert_partition_value(raw, f.type) for raw, f in zip(part.raw_values, part_fields))
        deltas, bases = dirs[part.path]
        splits.extend(_partition_splits(storage, part.path, values, layout.listings[part.path], deltas, bases,
                                        wanted, dml, INSERT_ONLY if info.insert_only else FULL_ACID))
    # a write id's own delete delta says it wrote delete events; a compacted one (a range) says
    # so for the write ids of the range whose operation can write them
    dml_ids = tuple(w for w in wanted if (w, True) in dml or ((w, False) in dml and
                                                               history[w]["operation"] in DML_OPERATIONS))
    return ChangePlan(info.location, tuple(wanted), dml_ids, ctx, tuple(splits))


class _Missing(Exception):
    def __init__(self, gap: Gap):
        self.gap = gap


def _directories_by_object(layout: TableLayout, key) -> dict[object, list[str]]:
    """Listed partition directories by the store's identity of their data object."""
    found: dict[object, list[str]] = {}
    for part in layout.partitions:
        found.setdefault(key(relative(layout, part.path)), []).append(part.path)
    return found


def _usable_dirs(entries: list[FileEntry], write_ids: ValidWriteIdList, txns: ValidTxnList,
                 insert_only: bool = False) -> tuple[list[AcidDir], list[AcidDir]]:
    """The deltas and the bases of one listing a reader may use now (newest base first). The
    rows of an insert-only table carry no write id, so there a delta of several write ids (a
    minor compaction's) says no more than a base: it counts among the bases."""
    deltas, bases = [], []
    for d in usable_dirs(entries, write_ids, txns):
        if d.parsed.is_base or (insert_only and d.parsed.min_write_id != d.parsed.max_write_id):
            bases.append(d)
        else:
            deltas.append(d)
    return deltas, sorted(bases, key=lambda b: -b.parsed.write_id)


def _check_history(location: str, part: str, ids: list[int], written: list[int],
                   dirs: list[tuple[list[AcidDir], list[AcidDir]]], listings: list[list[FileEntry]],
                   paths: list[str], asked: str) -> None:
    """Every write id of ``ids`` wrote data object ``part``: a delta or delete delta listed
    there must hold it, and the cleaner must not have started on the directories a base made
    obsolete below it. Held by a base only, or below a base whose inputs the cleaner has begun
    to remove: a HistoryUnavailableError. Held by nothing: storage lost it (or the listing is
    stale).

    The cleaner removes a base's obsolete directories one at a time (older bases first, then
    delete deltas, then deltas: by name), so a write id that wrote a delta and a delete delta
    may have lost one and still look held. So once any committed write id of the data object
    between a base and the base below it (``written``) has lost every directory - or a
    cleaner's half-removed directory or its cleaning marker (written before its first removal
    in the partition, removed after its last) is there - every write id up to that base
    counts as removed."""
    deltas = [d for found, _ in dirs for d in found]
    bases = sorted({b.parsed.write_id: b for _, found in dirs for b in found}.values(), key=lambda b: b.parsed.write_id)

    def held(w: int) -> bool:
        return any(d.parsed.min_write_id <= w <= d.parsed.max_write_id for d in deltas)

    cleaned, lower = 0, 0  # write ids up to ``cleaned`` may have lost directories to the cleaner
    for b in bases:
        if any(lower < w <= b.parsed.write_id and not held(w) for w in written):
            cleaned = b.parsed.write_id
        lower = b.parsed.write_id
    if bases and any(e.name.startswith(REMOVING_PREFIX) or e.name == CLEANING_MARKER
                     for entries in listings for e in entries):
        cleaned = bases[-1].parsed.write_id
    for w in sorted(ids):
        if w > cleaned and held(w):
            continue
        base = next((b for b in bases if b.parsed.write_id >= w), None)
        if base is not None:
            raise HistoryUnavailableError(location, w, asked, partition=part, directory=base.parsed.name)
        raise _Missing(Gap(part, (w,), paths[0] if paths else None))


def _check_still_listed(storage: Storage, layout: TableLayout, dirs: dict, location: str, asked: str) -> None:
    """The directories a base made obsolete, listed again: a cleaner that started removing them
    since the listing (or while it was taken) shows here, before anything is read."""
    for path, (deltas, bases) in dirs.items():
        if not bases:
            continue
        top = max(bases, key=lambda b: b.parsed.write_id)
        obsolete = [d for d in deltas if d.parsed.max_write_id <= top.parsed.write_id]
        if not obsolete:
            continue
        again = storage.list_dir(path)
        names = {e.name for e in again}
        gone = [d for d in obsolete if d.parsed.name not in names]
        if gone or any(e.name.startswith(REMOVING_PREFIX) or e.name == CLEANING_MARKER for e in again):
            w = gone[0].parsed.min_write_id if gone else top.parsed.write_id
            raise HistoryUnavailableError(location, w, asked, partition=relative(layout, path),
                                          directory=f"the cleaner is removing what {top.parsed.name} made obsolete")


# --- splits ------------------------------------------------------------------------------------
def _cover(dirs: list[AcidDir]) -> list[AcidDir]:
    """Directories of one kind (insert or delete deltas) that hold every event once: Hive's
    choice of working deltas (a wider compacted delta before the deltas it holds, several
    statements of one write id all kept), with no base."""
    kept: list[AcidDir] = []
    current, last_statement = 0, -1
    for d in sorted(dirs, key=lambda d: d.parsed.sort_key(d.path)):
        p = d.parsed
        if p.max_write_id > current:
            kept.append(d)
            current, last_statement = p.max_write_id, p.statement_id
        elif p.max_write_id == current and last_statement >= 0 and p.statement_id >= 0:
            kept.append(d)
    return kept


def _holds_any(d: AcidDir, wanted: list[int]) -> bool:
    from bisect import bisect_left

    i = bisect_left(wanted, d.parsed.min_write_id)
    return i < len(wanted) and wanted[i] <= d.parsed.max_write_id


def _partition_splits(storage: Storage, path: str, values: tuple, entries: list[FileEntry], deltas: list[AcidDir],
                      bases: list[AcidDir], wanted: list[int], dml: set[tuple[int, bool]],
                      table_kind: str) -> list[ChangeSplit]:
    sliced: dict[str, list[FileSlice]] = {}

    def slices_of(d: AcidDir) -> list[FileSlice]:  # each directory listed once, as the scan slices it
        if d.path not in sliced:
            sliced[d.path] = dir_slices(storage, d, table_kind=table_kind)
        return sliced[d.path]

    insert_cover = _cover([d for d in deltas if not d.parsed.is_delete])
    delete_cover = _cover([d for d in deltas if d.parsed.is_delete])
    buckets: dict[int, dict[str, list[FileSlice]]] = defaultdict(lambda: {"inserts": [], "deletes": []})
    for d in delete_cover:
        if not _holds_any(d, wanted):
            continue
        slices = slices_of(d)
        for s in slices:
            buckets[s.bucket_id]["deletes"].append(s)
        if slices:
            own = d.parsed.min_write_id == d.parsed.max_write_id
            dml.update((w, own) for w in wanted if d.parsed.min_write_id <= w <= d.parsed.max_write_id)
    for d in insert_cover:
        if _holds_any(d, wanted):
            for s in slices_of(d):
                buckets[s.bucket_id]["inserts"].append(s)
    lookups: dict[int, list[FileSlice]] = defaultdict(list)
    if any(b["deletes"] for b in buckets.values()):
        for d in insert_cover + bases:  # where a deleted row's insert event may be: deltas, then bases
            for s in slices_of(d):
                lookups[s.bucket_id].append(s)
        originals = [e for e in entries if not e.is_dir and not is_hidden(e.name) and e.size > 0]
        for s in original_slices(storage, originals, table_kind=table_kind):
            lookups[s.bucket_id].append(s)
    return [ChangeSplit(path, values, bucket, tuple(files["inserts"]), tuple(files["deletes"]),
                        tuple(lookups[bucket]) if files["deletes"] else ())
            for bucket, files in sorted(buckets.items())]


# --- arguments ---------------------------------------------------------------------------------
def _write_id(value) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise InvalidArgumentError("writeIds", f"expected integer write ids, got {value!r}") from None
    if value < 1:
        raise InvalidArgumentError("writeIds", f"write ids are >= 1, got {value}")
    return value


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _micros(seconds: float) -> int:
    """UTC epoch seconds as whole microseconds, rounded as a datetime rounds them (history()
    shows commit times as datetimes)."""
    try:
        return (dt.datetime.fromtimestamp(seconds, dt.timezone.utc) - _EPOCH) // dt.timedelta(microseconds=1)
    except (OverflowError, OSError, ValueError):  # beyond datetime's years 1..9999: before or after every commit
        return int(max(min(seconds, 1e15), -1e15) * 1_000_000)


def _shown(ids: list[int]) -> str:
    return "[" + ", ".join(map(str, ids[:10])) + (", ..." if len(ids) > 10 else "") + "]"


def _shown_value(value) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return repr(value)
        return dt.datetime.fromtimestamp(value, dt.timezone.utc).isoformat()
    return str(value)
