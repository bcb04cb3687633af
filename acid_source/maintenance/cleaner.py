"""The cleaner (``AcidTable.vacuum``): removes the directories no reader can still need.

Per data object (the table, or each partition) it removes what the latest snapshot no longer
reads - deltas covered by a compacted delta or base, superseded bases, pre-ACID files once a
base holds their rows (Hive's ``obsolete``) - and what aborted transactions left (Hive's
``aborted``), except:

* a directory a **live reader lease**'s snapshot reads (``get_acid_state`` with the lease's
  snapshot strings): a running ``AcidTable.scan().toBatches()`` or a planned Spark read;
* a directory a **reader without a lease yet** may read: one that took its snapshot less than
  ``retention_seconds`` ago (between taking a snapshot and recording its lease a reader lists
  the table), or an open transaction that may be reading the table (a DML, a compaction). The
  store gives the oldest such snapshot (the *floor*); only directories already obsolete under
  it go, because a directory obsolete under a snapshot is obsolete under every later one;
* a directory of an **open** write id or of a compaction still running (``_vT``, T open);
* what a transaction aborted less than ``retention_seconds`` ago (its writer may still be
  removing it).

A run first aborts the transactions whose driver stopped heartbeating (10 minutes), as
``clean_aborted_writes`` does: what they wrote then goes like any aborted directory.

Removal is safe to run concurrently with readers, writers, compactions and other cleaners; a
directory another cleaner removed first is skipped, and what a crashed cleaner left is removed
by the next run. A reader whose files are gone gets
:class:`~acid_source.errors.SnapshotFilesRemovedError`, never fewer rows. How a directory goes
depends on the storage:

* local (and other file systems with an atomic rename): it is first renamed to a hidden name in
  the same directory, so a reader lists it whole or not at all, then deleted;
* object stores (S3 and the like: no rename of a directory, and a "directory" is only the
  common prefix of its objects, deleted one by one) in this order:

  1. the removal marker ``_acidorc_removing`` (``layout.table_dirs.REMOVING_MARKER``) is
     written into the directory;
  2. every other object of the directory is deleted (data files and ``_orc_acid_version``);
  3. the marker, then whatever still stands for the directory (a folder object some servers
     keep) is deleted.

  At every moment between 1 and the end, a listing of the directory either holds the marker or
  holds nothing at all, and a reader refuses both for a directory its snapshot reads
  (``table_dirs.check_not_removing``, called wherever a reader lists an ACID directory). A
  listing taken before 1 is complete; a file of it deleted later fails to open, which is
  SnapshotFilesRemovedError too. So no reader turns a half-deleted directory into rows.

Why a reader the rules protect never even meets such a directory (the argument the order above
backs up for readers outside the rules): the cleaner removes a directory only when it is
obsolete or aborted under the latest snapshot *and* under the floor (the oldest snapshot taken
less than ``retention_seconds`` ago or held by an open transaction), and no live lease's
snapshot reads it. A directory is obsolete under a snapshot when a base or compacted delta that
snapshot sees covers it; a later snapshot sees every compaction output the earlier one saw, so
a directory obsolete under the floor and the latest is obsolete under every snapshot between
them, and a reader of such a snapshot does not select it - what it selects is decided by the
names of the other directories, which the removal does not touch. Aborted directories are read
by no snapshot. Readers protected by the rules are therefore those that hold a lease, took their
snapshot within ``retention_seconds``, or belong to an open transaction; a reader outside them
(a lease that lapsed, ``readLeaseSeconds=0`` and a read planned more than ``retention_seconds``
after its snapshot, ``AcidTable.scan()`` iterated long after it was created) is the one the
marker order above exists for. ``tests/objectstore/test_s3_vacuum.py`` holds a removal after
each step (pause points ``vacuum.objectstore.marked`` / ``.emptied``) and reads the table there.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..deprecation import renamed
from ..errors import AcidError, InvalidArgumentError, NotEnoughHistoryError, StorageError
from ..faults import pause_point
from ..layout.acid_state import AcidState, get_acid_state
from ..layout.ids_on_storage import ids_on_storage
from ..layout.names import parse_dir_name
from ..layout.table_dirs import CLEANING_MARKER, REMOVING_MARKER, discover_layout
from ..metastore import TransactionStore, connect
from ..metastore.leases import CleanerView
from ..settings import VACUUM_AFTER_COMPACTION, VACUUM_RETENTION_SECONDS, parse_seconds
from ..storage import FileEntry, Storage, option_pairs
from ..write.cleanup import remove_empty_parents
from .aborted import DEFAULT_EXPIRY_SECONDS

log = logging.getLogger(__name__)

#: Snapshots taken less than this long ago are protected even before their reader records a
#: lease (Hive 4's ``hive.compactor.cleaner.retention.time.seconds`` is 300 too).
DEFAULT_RETENTION_SECONDS = VACUUM_RETENTION_SECONDS.default
#: Open transactions silent for longer than this are presumed dead and protect nothing.
TXN_TIMEOUT_SECONDS = DEFAULT_EXPIRY_SECONDS
#: Prefix of the hidden name a directory gets while it is being removed.
REMOVING_PREFIX = ".acidorc-vacuum-"


def default_retention_seconds() -> float:
    return VACUUM_RETENTION_SECONDS.get()


@dataclass
class _Plan:
    remove: list[FileEntry] = field(default_factory=list)
    kept_for_leases: int = 0
    kept_for_recent: int = 0
    cleaning: set[str] = field(default_factory=set)  # partitions losing obsolete directories now
    marked: set[str] = field(default_factory=set)  # partitions whose cleaning marker is there already
    keeping: set[str] = field(default_factory=set)  # partitions that keep obsolete directories


@renamed(dry_run="dryRun", metastore_url="metastoreUrl", storage_options="storageOptions",
         retention_seconds="retentionSeconds")
def vacuum(location: str | os.PathLike, *, dryRun: bool = False, metastoreUrl: str | None = None,
           storageOptions: Mapping | Iterable = (), retentionSeconds: float | None = None,
           metastore: TransactionStore | None = None) -> dict:
    """Remove the table's obsolete and aborted directories that no reader can still need (see
    the module docstring); with ``dryRun``, only report them.

    ``retentionSeconds`` (default ``$ACIDORC_VACUUM_RETENTION_SECONDS`` or 300): snapshots
    taken less than this long ago are protected even without a lease. ``metastore``: an open
    store to use instead of ``metastoreUrl``. The table must be registered in the store (its
    transactions decide what is obsolete and what aborted).

    Returns ``dryRun``, ``removedPaths`` (removed, or that would be), ``numRemovedPaths``,
    ``removedBytes``, ``numKeptForLeases`` (obsolete or aborted, kept because a live lease's
    snapshot reads them), ``numKeptForRecentSnapshots`` (kept for snapshots without a lease:
    recent ones, open transactions, recent aborts), ``numLiveLeases``, ``retentionSeconds``,
    ``expiredTransactions`` (transactions of the table, or holding no write id, silent for
    longer than the heartbeat timeout and aborted by this run; none in a dry run).
    """
    dry_run = _flag(dryRun, "dryRun")
    retention = default_retention_seconds() if retentionSeconds is None else \
        _seconds(retentionSeconds, "retentionSeconds")
    store = metastore if metastore is not None else connect(metastoreUrl, existing=True)
    info = store.get_table(location)  # TableNotRegisteredError for a table the store does not know
    # Drivers silent that long are dead (the view below ignores them already); aborting them
    # lets their directories go - a dead compactor's _vT outputs have no write id to clean by.
    expired = [] if dry_run else store.abort_expired(TXN_TIMEOUT_SECONDS, table_id=info.table_id)
    view = store.cleaner_view(info.table_id, retention_seconds=retention, txn_timeout_seconds=TXN_TIMEOUT_SECONDS)
    storage = Storage(info.location, _storage_options(storageOptions))
    plan = _Plan()
    if storage.exists(storage.root):  # listed after the store's view, as a reader does
        layout = discover_layout(storage)
        # a store behind its storage would call a lost history's write ids aborted or unknown
        store.refuse_if_behind(info.table_id, ids_on_storage(layout))
        for part in layout.partitions:
            _plan_partition(storage, part.path, layout.listings[part.path], view, plan)
    if not dry_run:  # before the first obsolete directory goes: see CLEANING_MARKER
        for path in sorted(plan.cleaning - plan.marked):
            with storage.failures("writing the cleaning marker", path):
                storage.fs.pipe_file(storage.join(path, CLEANING_MARKER), b"")
    removed, size = [], 0
    for entry in sorted(plan.remove, key=lambda e: e.path):
        bytes_ = _size(storage, entry)
        if not dry_run and not _remove(storage, entry):
            continue  # another cleaner (or the aborting writer) removed it first
        pause_point("vacuum.after_removal")
        removed.append(entry.path)
        size += bytes_
    if not dry_run:
        for path in sorted((plan.cleaning | plan.marked) - plan.keeping):  # nothing obsolete left there
            with storage.failures("removing the cleaning marker", path):
                try:
                    storage.fs.rm_file(storage.join(path, CLEANING_MARKER))
                except FileNotFoundError:
                    pass
        for path in removed:
            remove_empty_parents(storage, path)
    return {
        "dryRun": dry_run,
        "removedPaths": [storage.display(p) for p in removed],
        "numRemovedPaths": len(removed),
        "removedBytes": size,
        "numKeptForLeases": plan.kept_for_leases,
        "numKeptForRecentSnapshots": plan.kept_for_recent,
        "numLiveLeases": len(view.leases),
        "retentionSeconds": retention,
        "expiredTransactions": expired,
    }


def vacuum_after_compaction(location: str, *, metastore_url: str | None = None, storage_options=(),
                            metastore: TransactionStore | None = None, enabled: bool | None = None) -> dict | None:
    """The vacuum a compaction runs once it committed: None when switched off (``enabled``
    False, or ``$ACIDORC_VACUUM_AFTER_COMPACTION=false``). The compaction is done whatever
    happens here, so a failure is logged and reported as ``{"error": message}``, not raised.
    With the default retention it removes what earlier compactions made obsolete; the inputs
    of this one go in a later run, once no reader without a lease can need them."""
    if enabled is None:
        enabled = VACUUM_AFTER_COMPACTION.get()
    if not enabled:
        return None
    try:
        return vacuum(location, metastoreUrl=metastore_url, storageOptions=storage_options, metastore=metastore)
    except AcidError as exc:
        log.warning("vacuum after compaction of %s failed: %s", location, exc)
        return {"error": str(exc)}


# --- deciding ------------------------------------------------------------------------------------
def _plan_partition(storage: Storage, path: str, entries: list[FileEntry], view: CleanerView, plan: _Plan) -> None:
    latest_w, latest_t = view.latest
    latest = get_acid_state(storage, path, latest_w, latest_t, entries)
    by_path = {e.path: e for e in entries}
    reads_latest = _top_level(path, _reads(latest))
    if view.floor is view.latest:
        obsolete_for_all = set(latest.obsolete)
    else:
        try:
            floor = get_acid_state(storage, path, *view.floor, entries)
            obsolete_for_all = set(latest.obsolete) & set(floor.obsolete)
        except NotEnoughHistoryError:  # the floor cannot be read here: keep everything obsolete
            obsolete_for_all = set()
    aborted_for_all = {p for p in latest.aborted if _aborted_long_enough(p, view)}
    leased: set[str] = set()
    for snapshot in dict.fromkeys(lease.snapshot for lease in view.leases):
        try:
            leased |= _top_level(path, _reads(get_acid_state(storage, path, *snapshot, entries)))
        except NotEnoughHistoryError:  # that reader cannot read this partition anyway
            continue
    open_ids = set(latest_w.open_ids)
    candidates = set(latest.obsolete) | set(latest.aborted)
    if any(e.name == CLEANING_MARKER for e in entries):
        plan.marked.add(path)
    for p in sorted(candidates):
        entry = by_path.get(p)
        if entry is None or p in reads_latest or _holds_open_write_id(entry, open_ids):
            continue
        if p in leased:
            plan.kept_for_leases += 1
        elif p not in obsolete_for_all and p not in aborted_for_all:
            plan.kept_for_recent += 1
        else:
            plan.remove.append(entry)
            if p in latest.obsolete:
                plan.cleaning.add(path)
            continue
        if p in latest.obsolete:
            plan.keeping.add(path)
    # what a cleaner that crashed mid-way left under a hidden name
    plan.remove += [e for e in entries if e.name.startswith(REMOVING_PREFIX)]


def _reads(state: AcidState) -> list[str]:
    """Every path a reader of ``state`` opens or lists."""
    dirs = ([state.base] if state.base is not None else []) + list(state.deltas)
    return [d.path for d in dirs] + [f.path for f in state.originals]


def _top_level(partition: str, paths: Iterable[str]) -> set[str]:
    """The entries of the partition directory holding ``paths`` (an original file inside
    ``HIVE_UNION_SUBDIR_1/`` keeps that directory)."""
    prefix = partition.rstrip("/") + "/"
    out = set()
    for p in paths:
        rest = p[len(prefix):] if p.startswith(prefix) else p
        out.add(prefix + rest.split("/", 1)[0])
    return out


def _holds_open_write_id(entry: FileEntry, open_ids: set[int]) -> bool:
    parsed = parse_dir_name(entry.name) if entry.is_dir else None
    if parsed is None or not open_ids:
        return False
    return any(parsed.min_write_id <= w <= parsed.max_write_id for w in open_ids)


def _aborted_long_enough(path: str, view: CleanerView) -> bool:
    parsed = parse_dir_name(path.rstrip("/").rsplit("/", 1)[-1])
    if parsed is None:
        return False
    if parsed.visibility_txn_id:
        return parsed.visibility_txn_id in view.aborted_txn_ids
    return all(w in view.aborted_write_ids for w in range(parsed.min_write_id, parsed.max_write_id + 1))


# --- removing -------------------------------------------------------------------------------------
def _size(storage: Storage, entry: FileEntry) -> int:
    if not entry.is_dir:
        return entry.size
    try:
        if storage.is_local:
            return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(entry.path) for f in files)
        return int(storage.fs.du(entry.path, total=True))
    except (FileNotFoundError, OSError):
        return 0


def _remove(storage: Storage, entry: FileEntry) -> bool:
    """Remove a directory (renamed to a hidden name first) or an original file; False when it
    was gone already."""
    storage.check_inside_root(entry.path)
    if not storage.is_local:
        with storage.failures("removing an obsolete directory", entry.path):
            return _remove_objects(storage, entry)
    if not entry.is_dir:
        try:
            os.unlink(entry.path)
        except FileNotFoundError:
            return False
        return True
    parent, name = os.path.split(entry.path.rstrip("/"))
    hidden = entry.path if name.startswith(REMOVING_PREFIX) else \
        os.path.join(parent, f"{REMOVING_PREFIX}{uuid.uuid4().hex[:12]}-{name}")
    if hidden != entry.path:
        try:
            os.rename(entry.path, hidden)
        except FileNotFoundError:
            return False
    if os.path.islink(hidden):
        os.unlink(hidden)
        return True
    shutil.rmtree(hidden, ignore_errors=True)  # parts another cleaner removes meanwhile are fine
    if os.path.lexists(hidden):
        raise StorageError(hidden, f"cannot remove {entry.path} (renamed to this hidden name first); the "
                                   "next vacuum tries again")
    return True


def _remove_objects(storage: Storage, entry: FileEntry) -> bool:
    """Remove a directory (or an original file) of an object store in the order the module
    docstring proves safe; False when nothing was there any more."""
    fs = storage.fs
    path = entry.path.rstrip("/")
    if not entry.is_dir:
        if not fs.exists(path):
            return False
        fs.rm_file(path)
        return True
    marker = storage.join(path, REMOVING_MARKER)
    objects = [p for p in storage.objects_under(path) if p != marker]
    if not objects and not fs.exists(path):
        return False  # another cleaner removed it first
    fs.pipe_file(marker, b"")  # 1. from now on every listing of it shows the marker
    pause_point("vacuum.objectstore.marked")
    if objects:
        fs.rm(objects)  # 2. data files and _orc_acid_version, in any order
    pause_point("vacuum.objectstore.emptied")
    try:
        fs.rm_file(marker)  # 3. the marker, then a folder object the server may keep
    except FileNotFoundError:
        pass
    storage.remove_folders(path)
    if fs.exists(path):
        raise StorageError(storage.display(path), "was emptied but still lists; the next vacuum tries again")
    return True


# --- arguments ------------------------------------------------------------------------------------
def _flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgumentError(name, f"expected True or False, got {value!r}")
    return value


def _seconds(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(name, f"expected a number of seconds >= 0, got {value!r}")
    try:
        return parse_seconds(name, value)
    except AcidError:
        raise InvalidArgumentError(name, f"expected a number of seconds >= 0, got {value!r}") from None


def _storage_options(options) -> tuple:
    return option_pairs(options)
