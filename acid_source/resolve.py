"""Snapshot resolution, once per query: location (or table name) and a snapshot spec in, a
:class:`~acid_source.scan.resolved.ResolvedTable` out.

The order matters. The snapshot is taken first and the table listed afterwards: every write id
the snapshot calls committed finished writing its files before it committed, so the listing
holds all of them (listing first and snapshotting second could see a transaction as committed
whose directories the listing missed: a torn read).

Which writes count as committed:

* a table registered in the transaction store: the store decides (open and aborted write ids
  are hidden), also when an expert passes ``validWriteIds`` (it can only hide more);
* a table the store does not know: it was written by another engine (Hive, Trino, Impala), so
  every write id on disk counts as committed unless ``validWriteIds`` / ``validTxns`` say
  otherwise. A store that is named (by argument or by $ACIDORC_METASTORE_URL) must exist.
"""

from __future__ import annotations

import pyarrow as pa

from .completeness import complete_listing, find_gaps, listed_snapshot, missing_data_error
from .errors import InvalidArgumentError, NotAnAcidTableError, NotEnoughHistoryError, TableNotRegisteredError
from .layout.acid_state import with_serving_compactions
from .layout.names import is_hidden, parse_dir_name
from .layout.table_dirs import (
    FULL_ACID,
    INSERT_ONLY,
    TableLayout,
    acid_state_for,
    data_files,
    discover_layout,
    has_acid_layout,
)
from .layout.writeids import ValidTxnList, ValidWriteIdList
from .metastore import Metastore, TransactionStore, connect
from .metastore.tableinfo import TableInfo
from .metastore.urls import check_shareable, named_url, sqlite_store_missing
from .scan.discovery import detect_table_kind
from .scan.resolved import ResolvedTable, SnapshotSpec
from .specs import ReadSpec
from .storage import Storage


def open_store(url: str | None) -> TransactionStore | None:
    """The transaction store a read asks. A reader never creates one. A named store (``url``,
    else ``$ACIDORC_METASTORE_URL``) must exist (MetastoreNotFoundError) and be one other
    processes can see; only the built-in default store, when it does not exist yet, knows no
    tables (None)."""
    named = named_url(url)
    if named is not None:
        check_shareable(named)
        return connect(named, existing=True)
    if sqlite_store_missing(None):
        return None
    return Metastore(None)


def registered_table(location: str, metastore_url: str | None, why: str) -> tuple[TransactionStore, TableInfo]:
    """The store and its record of the table at ``location``, for work only a registered table
    allows (writes, DML, compaction, history); :class:`TableNotRegisteredError` otherwise, its
    message ending with ``why``."""
    store = open_store(metastore_url)
    info = store.find_table(location) if store is not None else None
    if store is None or info is None:
        raise TableNotRegisteredError(f"{location} is not registered in the acidorc transaction store{why}",
                                      location=location)
    return store, info


def _narrowed(given: ValidWriteIdList, store: ValidWriteIdList) -> ValidWriteIdList:
    """An expert's snapshot string, minus what the store knows is not committed."""
    hwm = given.high_watermark
    open_ids = {w for w in store.open_ids if w <= hwm} | set(given.open_ids)
    aborted = {w for w in store.aborted_ids if w <= hwm} | set(given.aborted_ids)
    open_ids -= aborted
    return ValidWriteIdList(high_watermark=hwm, min_open=min(open_ids, default=given.min_open),
                            open_ids=tuple(sorted(open_ids)), aborted_ids=tuple(sorted(aborted)),
                            table_name=given.table_name or store.table_name)


def resolve_table(location: str, *, metastore_url: str | None = None, storage_options: tuple = (),
                  snapshot: SnapshotSpec = SnapshotSpec(), table_type: str = "auto") -> ResolvedTable:
    """Resolve ``location`` under ``snapshot``: the store is asked first, then storage is listed,
    and the listing is proven to hold every write id the snapshot calls committed
    (:mod:`acid_source.completeness`)."""
    store = open_store(metastore_url)
    info = store.find_table(location) if store is not None else None
    if store is None or info is None:
        return _resolve_unregistered(store, location, storage_options, snapshot, table_type)
    storage = Storage(info.location, storage_options)
    if snapshot.version_as_of is not None or snapshot.timestamp_as_of is not None:
        write_ids, txns, version = _store_snapshot(store, info, snapshot)
        layout = discover_layout(storage)  # after the snapshot, as below
        write_ids, txns, layout = _past_snapshot(store, info, layout, write_ids, txns, version)
    else:
        (write_ids, txns, version), layout, gaps = listed_snapshot(
            store, info, storage, lambda: _store_snapshot(store, info, snapshot))
        if gaps:
            raise missing_data_error(layout, gaps, "read the table without them")
    kind = _table_kind(location, info, layout, write_ids, txns, table_type)
    return ResolvedTable(storage, info.location, layout, write_ids, txns, kind, info, version)


def _store_snapshot(store, info, snapshot: SnapshotSpec) -> tuple[ValidWriteIdList, ValidTxnList, int | None]:
    """The registered table's snapshot under ``snapshot``, and the version it shows."""
    if snapshot.version_as_of is not None or snapshot.timestamp_as_of is not None:
        version = snapshot.version_as_of
        if version is None:
            assert snapshot.timestamp_as_of is not None  # the condition above
            # to the microsecond (a datetime's precision): a commit within the named
            # microsecond is included
            version = store.write_id_as_of_time(info.table_id, snapshot.timestamp_as_of + 1e-6)
        write_ids, txns = store.snapshot_as_of(info.table_id, version)
    else:
        write_ids, txns = store.snapshot(info.table_id)
        version = store.latest_version(info.table_id, write_ids)
    if snapshot.write_ids is not None:
        write_ids = _narrowed(snapshot.write_ids, write_ids)
        version = None
    if snapshot.txns is not None:
        txns = snapshot.txns
    return write_ids, txns, version


def _resolve_unregistered(store, location: str, storage_options: tuple, snapshot: SnapshotSpec,
                          table_type: str) -> ResolvedTable:
    """A table the store does not know: written by another engine, every write id on disk
    counts as committed unless ``validWriteIds`` / ``validTxns`` say otherwise."""
    for option, value in (("versionAsOf", snapshot.version_as_of), ("timestampAsOf", snapshot.timestamp_as_of)):
        if value is not None:
            where = store.url if store is not None else "the default transaction store (it does not exist yet)"
            raise InvalidArgumentError(option, f"time travel needs the table's commit history, and {location} "
                                               f"is not registered in {where}; a table the store does not "
                                               "know is read with every write id on disk counted as "
                                               "committed (pass validWriteIds to choose a snapshot)")
    write_ids = snapshot.write_ids or ValidWriteIdList.all_valid()
    txns = snapshot.txns or ValidTxnList()
    storage = Storage(location, storage_options)
    layout = discover_layout(storage)
    kind = _table_kind(location, None, layout, write_ids, txns, table_type)
    return ResolvedTable(storage, location, layout, write_ids, txns, kind, None, None)


def _past_snapshot(store, info, layout, write_ids: ValidWriteIdList, txns: ValidTxnList,
                   version: int | None) -> tuple[ValidWriteIdList, ValidTxnList, TableLayout]:
    """The snapshot a past read uses, and the listing it reads: the snapshot as the store
    recorded it when its files are all listed; else widened to the outputs of later compactions
    that serve it exactly (:func:`~acid_source.layout.acid_state.with_serving_compactions`);
    else, once the table was listed again (a stale listing is no lost history),
    :class:`NotEnoughHistoryError` naming the version and the oldest one that can still be read."""
    gaps = find_gaps(store, info, layout, write_ids, txns)
    for fresh in (False, True):
        if fresh:
            relisted, gaps = complete_listing(store, info, layout, write_ids, txns)
            if relisted is layout:
                break  # nothing was missing from the first listing: listing again changes nothing
            layout = relisted
        try:
            _check_history(layout, write_ids, txns, gaps)
            return write_ids, txns, layout
        except NotEnoughHistoryError as exc:
            refused = exc
        now = store.snapshot(info.table_id)  # after the listing: a compaction committed by now wrote all its files
        served = _served_by_compactions(store, info, layout, write_ids, txns, now)
        if served is not None:
            return (*served, layout)
    if version is None:
        raise refused
    raise NotEnoughHistoryError(refused.path, refused.base, refused.snapshot, version=version,
                                oldest_version=_oldest_readable_version(store, info, layout, now))


def _served_by_compactions(store, info, layout, write_ids: ValidWriteIdList, txns: ValidTxnList,
                           now: tuple[ValidWriteIdList, ValidTxnList]) -> tuple[ValidWriteIdList, ValidTxnList] | None:
    """The past snapshot widened to later compactions' outputs, when the listing then holds all
    of it; None otherwise."""
    widened = with_serving_compactions(layout.listings.values(), write_ids, txns, *now, insert_only=info.insert_only)
    if widened is None:
        return None
    try:
        _check_history(layout, *widened, find_gaps(store, info, layout, *widened))
    except NotEnoughHistoryError:
        return None
    return widened


def _readable(store, info, layout, version: int, now) -> bool:
    write_ids, txns = store.snapshot_as_of(info.table_id, version)
    try:
        _check_history(layout, write_ids, txns, find_gaps(store, info, layout, write_ids, txns))
        return True
    except NotEnoughHistoryError:
        return _served_by_compactions(store, info, layout, write_ids, txns, now) is not None


def _oldest_readable_version(store, info, layout, now) -> int | None:
    """The oldest version (in commit order) the listed files can serve, found by bisection:
    versions a read cannot serve any more are the older ones (compaction and the cleaner remove
    history from the oldest end; a read lease can keep an older island readable, which this
    may miss). None when not even the latest can be read."""
    versions = [h["write_id"] for h in reversed(store.history(info.table_id)) if h["write_id"] is not None]
    if not versions or not _readable(store, info, layout, versions[-1], now):
        return None
    lo, hi = 0, len(versions) - 1  # versions[hi] is readable
    while lo < hi:
        mid = (lo + hi) // 2
        if _readable(store, info, layout, versions[mid], now):
            hi = mid
        else:
            lo = mid + 1
    return versions[hi]


def _check_history(layout, write_ids: ValidWriteIdList, txns: ValidTxnList, gaps) -> None:
    """A past snapshot needs the directories of every write id it sees. Compaction replaces
    them with outputs a past snapshot must not use (they also hold later writes), and the
    cleaner then removes them: such a snapshot cannot be read any more."""
    snapshot = str(write_ids)
    for pdir in layout.partitions:  # rows no write id owns: original (pre-ACID) files
        _check_originals(layout, pdir, write_ids, txns, snapshot)
    if not gaps:
        return
    gap = gaps[0]
    if gap.directory is None:
        root = layout.storage.root.rstrip("/")
        path = f"{root}/{gap.partition}" if gap.partition else root
        raise NotEnoughHistoryError(layout.storage.display(path), "(partition directory gone)", snapshot)
    later = sorted(e.name for e in layout.listings[gap.directory]
                   if e.is_dir and (p := parse_dir_name(e.name)) is not None and p.visibility_txn_id)
    raise NotEnoughHistoryError(layout.storage.display(gap.directory), ", ".join(later) or "(directories removed)",
                                snapshot)


def _check_originals(layout, pdir, write_ids: ValidWriteIdList, txns: ValidTxnList, snapshot: str) -> None:
    """A past snapshot that reads no base would read the partition's original files; once a
    major compaction folded them into a base (rows with originalTransaction 0) and the cleaner
    removed them, that snapshot cannot be read: an error, never a table without those rows."""
    state = acid_state_for(layout, pdir, write_ids, txns)
    if state.base is not None or state.originals:
        return
    for entry in layout.listings[pdir.path]:
        parsed = parse_dir_name(entry.name) if entry.is_dir else None
        if parsed is None or not parsed.is_base or not parsed.visibility_txn_id:
            continue
        if any(_holds_original_rows(layout.storage, f.path) for f in data_files(layout.storage, entry.path)):
            raise NotEnoughHistoryError(layout.storage.display(pdir.path), entry.name, snapshot)


def _holds_original_rows(storage: Storage, path: str) -> bool:
    """Whether an ACID file's first row (rows are sorted by originalTransaction) came from an
    original file."""
    import pyarrow.orc as paorc

    with storage.open_input(path) as f:
        orc = paorc.ORCFile(f)
        if orc.nrows == 0 or "originalTransaction" not in orc.schema.names:
            return False
        first = orc.read_stripe(0, columns=["originalTransaction"]).column(0)
        return len(first) > 0 and first[0].as_py() == 0


def _table_kind(location, info, layout, write_ids, txns, table_type: str) -> str:
    if table_type == "full":
        return FULL_ACID
    if table_type == "insert_only":
        return INSERT_ONLY
    if info is not None:
        return INSERT_ONLY if info.insert_only else FULL_ACID
    if not has_acid_layout(layout):
        if any(any(not is_hidden(e.name) for e in entries) for entries in layout.listings.values()):
            raise NotAnAcidTableError(
                location,
                "no base_, delta_ or delete_delta_ directories; if it is a table converted to "
                "ACID that holds only pre-ACID files, pass option tableType=full",
            )
        return FULL_ACID  # an empty table
    return detect_table_kind(layout, write_ids, txns)


def resolve_read(options: ReadSpec) -> ResolvedTable:
    """:func:`resolve_table` for a typed read (:class:`~acid_source.options.ReadSpec`)."""
    return resolve_table(options.path, metastore_url=options.metastore_url, storage_options=options.storage_options,
                         snapshot=SnapshotSpec(options.version_as_of, options.timestamp_as_of, options.write_ids,
                                               options.txns),
                         table_type=options.table_type)


def scan_for(options: ReadSpec, read_schema: pa.Schema | None = None, resolved: ResolvedTable | None = None):
    """The planner for a typed read of ``read_schema`` (None: every column of the table):
    resolve (unless done already), bind the read's conditions to the columns read (parsed once,
    here, after the columns asked for are checked), then hand the planner only what it needs."""
    from .expressions import parse_condition, parse_partition_filter
    from .scan.planner import TableScan

    scan = TableScan(resolved if resolved is not None else resolve_read(options),
                     include_row_id=options.include_row_id, max_split_bytes=options.max_split_bytes)
    if not options.partition_filter and options.row_filter is None:
        return scan
    if read_schema is None:
        read_schema = scan.infer_schema()
    scan.check_schema(read_schema)
    if options.partition_filter:
        partition_columns = [f.name for f in scan.partition_fields(read_schema)]
        scan.partition_filter = parse_partition_filter(options.partition_filter, read_schema, partition_columns)
    if options.row_filter is not None:
        scan.row_filter = parse_condition(options.row_filter, read_schema, argument="rowFilter")
    return scan
