"""Proving a table listing complete before anything is built on it (driver side).

A listing is only as good as the storage that answered it: a cache another process's writes do
not invalidate, or an object store's eventually consistent listing, can omit directories that
committed transactions wrote. A reader would then return fewer rows, a DML would match rows
already deleted, and a compaction would write a base without them and lose them for good - all
without an error. The transaction store knows better: it records, for every committed write id,
the data objects it wrote. So every read, DML and compaction checks that each committed write id
of its snapshot is held by a directory it listed (:mod:`acid_source.layout.coverage`), lists
again (with a new file-system instance) when one is not, and raises :class:`MissingDataError`
when a second listing still lacks it: data missing from storage is corruption, never "fewer
rows". Compaction also checks its inputs themselves before it commits (:func:`check_inputs`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .errors import MissingDataError, SchemaError
from .layout.coverage import Holder, base_floor, holder_of, unheld, visible_holders
from .layout.names import parse_dir_name
from .layout.partitions import NAN, parse_partition_segment
from .layout.table_dirs import TableLayout, convert_partition_value, discover_layout
from .layout.writeids import ValidTxnList, ValidWriteIdList
from .storage import Storage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Gap:
    """Committed write ids of one data object that no listed directory holds."""

    partition: str  # "" or the partition path relative to the table root, as the store has it
    write_ids: tuple[int, ...]
    directory: str | None  # the data object's directory in the listing (None: not listed at all)

    @property
    def listed(self) -> bool:
        return self.directory is not None


def relative(layout: TableLayout, path: str) -> str:
    return path[len(layout.storage.root.rstrip("/")):].strip("/")


def partition_key(info) -> Callable[[str], object]:
    """A data object's identity by its partition values, so that a directory spelled another
    way (``p=01`` for the int 1, as another engine may have named it) is the one the store
    recorded as ``p=1``. Values compare as the column holds them: a float column's ``1.1``
    and ``1.100000023841858`` are one float, -0.0 is 0.0, and every NaN (``NaN``, ``nan``)
    is one value."""
    types = {c.lower(): info.schema.field(c).type for c in info.partition_columns}

    def key(rel: str) -> object:
        values = []
        for segment in rel.split("/") if rel else ():
            parsed = parse_partition_segment(segment)
            if parsed is None:
                return rel
            name, raw = parsed
            type_ = types.get(name.lower())
            try:
                value = convert_partition_value(raw, type_) if type_ is not None else raw
            except SchemaError:
                value = raw
            if isinstance(value, float):
                value = NAN if math.isnan(value) else float(np.float32(value)) if pa.types.is_float32(type_) \
                    else value
            values.append((name.lower(), value))
        return tuple(values)

    return key


def find_gaps(store, info, layout: TableLayout, write_ids: ValidWriteIdList, txns: ValidTxnList) -> list[Gap]:
    """The committed write ids of the snapshot that ``layout`` does not hold, per data object.

    A data object the store names is the listed directory of that name, else the listed
    directories of the same partition values (a directory another engine spelled otherwise)."""
    key = partition_key(info)
    listed = {relative(layout, p.path): p.path for p in layout.partitions}
    holders = {rel: visible_holders(layout.listings[path], write_ids, txns) for rel, path in listed.items()}
    by_value: dict[object, list[str]] = {}
    for rel in listed:
        by_value.setdefault(key(rel), []).append(rel)

    def directories_of(part: str) -> list[str]:
        return [part] if part in listed else by_value.get(key(part), [])

    # below every data object's base nothing needs checking: ask only for the write ids above
    floor = min((base_floor(h) for h in holders.values()), default=0)
    objects, writes = store.committed_writes(info.table_id, above=floor)
    unlisted = sorted(o for o in objects if not directories_of(o))
    if unlisted:  # a data object not listed at all: every committed write id in it counts
        writes.update(store.committed_writes(info.table_id, partitions=unlisted)[1])
    gaps = []
    for part, ids in sorted(writes.items()):
        seen = [w for w in ids if write_ids.is_write_id_valid(w)]
        rels = directories_of(part)
        missing = unheld(seen, [h for rel in rels for h in holders[rel]]) if rels else sorted(set(seen))
        if missing:
            gaps.append(Gap(part, tuple(missing), listed[rels[0]] if rels else None))
    return gaps


def complete_listing(store, info, layout: TableLayout, write_ids: ValidWriteIdList,
                     txns: ValidTxnList) -> tuple[TableLayout, list[Gap]]:
    """``layout`` if it holds every committed write id of the snapshot; else a second listing
    through a new file-system instance, with what that one still lacks (empty: complete)."""
    gaps = find_gaps(store, info, layout, write_ids, txns)
    if not gaps:
        return layout, []
    log.warning("the listing of %s lacks committed write ids (%s); listing it again without caches",
                layout.storage.url, describe(gaps))
    fresh = discover_layout(Storage(layout.storage.url, layout.storage.options + (("skip_instance_cache", True),)))
    fresh.storage = layout.storage  # the reads themselves go through the process's usual instance
    return fresh, find_gaps(store, info, fresh, write_ids, txns)


#: fresh snapshots a current read or a compaction takes before it calls a listing gap data loss
SNAPSHOT_ATTEMPTS = 3


def listed_snapshot(store, info, storage: Storage, take_snapshot: Callable[[], tuple], *,
                    retry: bool = True) -> tuple[tuple, TableLayout, list[Gap]]:
    """``take_snapshot()`` (whose first two items are the write-id and transaction lists), then
    the listing after it, proven complete (:func:`complete_listing`); what is still missing
    comes back as gaps. With ``retry`` (a current snapshot) a gap is tried again under a newer
    snapshot: the first may have lost a race with a compaction and the cleaner (its inputs
    removed between the snapshot and the listing), and a newer one sees the outputs instead."""
    for _attempt in range(SNAPSHOT_ATTEMPTS if retry else 1):
        snapshot = take_snapshot()
        layout = discover_layout(storage)  # after the snapshot: see acid_source.resolve
        layout, gaps = complete_listing(store, info, layout, snapshot[0], snapshot[1])
        if not gaps:
            break
    return snapshot, layout, gaps


def describe(gaps: list[Gap]) -> str:
    return "; ".join(f"{g.partition or '(table)'}: {', '.join(map(str, g.write_ids[:10]))}"
                     + (" ..." if len(g.write_ids) > 10 else "") for g in gaps)


def missing_data_error(layout: TableLayout, gaps: list[Gap], doing: str) -> MissingDataError:
    first = gaps[0]
    if first.directory is not None:
        path = layout.storage.display(first.directory)
    else:
        url = layout.storage.url.rstrip("/")
        path = f"{url}/{first.partition}" if first.partition else url
    where = "" if first.listed else " (the directory itself is missing)"
    more = f"; also {describe(gaps[1:])}" if len(gaps) > 1 else ""
    return MissingDataError(path, list(first.write_ids), f"{where}{more}; refusing to {doing}")


def check_inputs(store, info, layout: TableLayout, objects, write_ids: ValidWriteIdList, kind: str) -> None:
    """A compaction's inputs must hold every committed write id its outputs will claim to hold:
    ``base_N`` claims all up to N, a minor ``delta_lo_hi`` all from lo to hi. Raises
    :class:`MissingDataError` (the compaction then aborts) instead of writing an output that
    would shadow rows it never read."""
    if not objects:
        return
    inputs: dict[str, list[Holder]] = {}
    for obj in objects:
        parsed = [parse_dir_name(d.rstrip("/").rsplit("/", 1)[-1]) for d in obj.input_dirs]
        inputs[obj.partition] = [holder_of(p) for p in parsed if p is not None]
    floor = min((base_floor(h) for h in inputs.values()), default=0)
    _, writes = store.committed_writes(info.table_id, above=floor, partitions=list(inputs))
    gaps = []
    for part, holders in inputs.items():
        if kind == "minor":
            lo, hi = min((h.lo for h in holders), default=1), max((h.hi for h in holders), default=0)
        else:
            lo, hi = 1, write_ids.high_watermark
        claimed = [w for w in writes.get(part, ()) if lo <= w <= hi and write_ids.is_write_id_valid(w)]
        missing = unheld(claimed, holders)
        if missing:
            gaps.append(Gap(part, tuple(missing), next(o.path for o in objects if o.partition == part)))
    if gaps:
        raise missing_data_error(layout, gaps, f"write a {kind} compaction that would drop them")
