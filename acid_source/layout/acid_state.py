"""Directory selection for one table/partition directory: Hive's ``AcidUtils.getAcidState``.

Given the listing of a partition directory and a snapshot, decide which base, deltas and
delete deltas a reader uses, which directories are obsolete (shadowed by a compaction or an
overwrite) and which belong to aborted transactions. Pure logic over names plus a lookup of
``_metadata_acid`` in bases, so it is testable without data files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import CorruptFileError, NotEnoughHistoryError, SnapshotFilesRemovedError
from ..storage import FileEntry, Storage
from .names import METADATA_FILE, ParsedDir, acid_dir_name_problem, is_hidden, parse_dir_name
from .writeids import RangeResponse, ValidTxnList, ValidWriteIdList

#: The object the cleaner writes into a directory before it deletes the directory's files one
#: by one (object stores cannot rename a directory aside atomically). It goes last, so any
#: listing of a partly deleted directory holds it: a reader that finds it in a directory its
#: snapshot needs stops with SnapshotFilesRemovedError instead of reading what is left.
REMOVING_MARKER = "_acidorc_removing"
#: The object the cleaner writes into a partition directory before it removes the first
#: directory a base made obsolete there, and removes once none is left: while it is there,
#: what those directories held may be partly gone (an UPDATE's delete delta removed, its delta
#: not yet), which a change feed must not take for the whole history.
CLEANING_MARKER = "_acidorc_cleaning"


def check_not_removing(storage: Storage, directory: str, entries: list[FileEntry]) -> None:
    """Refuse the listing of a directory a snapshot reads (an ACID directory, or a directory of
    original files) when it shows the cleaner is deleting it: its :data:`REMOVING_MARKER` is
    there, or - on an object store - nothing is left (object stores have no empty directories:
    every directory acidorc writes holds ``_orc_acid_version``, a directory of original files
    holds its files, and one that lists empty is what a deletion left, e.g. a folder object
    some servers keep)."""
    if any(e.name == REMOVING_MARKER for e in entries) or (not entries and not storage.is_local):
        raise SnapshotFilesRemovedError(storage.display(directory))


@dataclass(frozen=True)
class AcidDir:
    path: str
    parsed: ParsedDir


@dataclass
class AcidState:
    """What a reader of one partition directory uses, in Hive's order."""

    base: AcidDir | None
    deltas: list[AcidDir]  # insert and delete deltas, in Hive's delta order
    originals: list[FileEntry]  # pre-ACID files (only when no base), sorted by full path
    obsolete: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)

    @property
    def insert_deltas(self) -> list[AcidDir]:
        return [d for d in self.deltas if not d.parsed.is_delete]



def _is_compacted_base(storage: Storage, base: AcidDir) -> bool:
    """Compactor output (vs. INSERT OVERWRITE): a ``_vN`` suffix, or, from pre-Hive-4
    compactors, ``_metadata_acid`` saying ``compacted``."""
    if base.parsed.visibility_txn_id > 0:
        return True
    meta_path = storage.join(base.path, METADATA_FILE)
    if not storage.exists(meta_path):
        return False
    try:
        doc = json.loads(storage.read_bytes(meta_path).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptFileError(storage.display(meta_path), f"not a JSON document ({exc})") from None
    if str(doc.get("thisFileVersion")) != "0":
        raise CorruptFileError(storage.display(meta_path),
                               f"unsupported thisFileVersion {doc.get('thisFileVersion')!r}")
    return str(doc.get("dataFormat", "")).lower() == "compacted"


def get_acid_state(
    storage: Storage,
    partition_dir: str,
    write_ids: ValidWriteIdList,
    txns: ValidTxnList,
    entries: list[FileEntry] | None = None,
) -> AcidState:
    """Hive's directory selection for ``partition_dir`` under the given snapshot."""
    if entries is None:
        entries = storage.list_dir(partition_dir)

    bases: list[AcidDir] = []
    candidates: list[AcidDir] = []
    originals: list[FileEntry] = []
    original_dirs: list[str] = []
    obsolete: list[str] = []
    aborted: list[str] = []

    for entry in entries:
        if is_hidden(entry.name):
            continue
        if not entry.is_dir:
            if entry.size > 0:
                originals.append(entry)
            continue
        parsed = parse_dir_name(entry.name)
        if parsed is None:
            problem = acid_dir_name_problem(entry.name)
            if problem is not None:
                raise CorruptFileError(storage.display(entry.path), problem)
            original_dirs.append(entry.path)
            continue
        acid_dir = AcidDir(entry.path, parsed)
        if not txns.is_txn_valid(parsed.visibility_txn_id):
            # Output of a compaction whose transaction is not visible: aborted, or still running.
            if txns.is_txn_aborted(parsed.visibility_txn_id):
                aborted.append(entry.path)
            continue
        if parsed.is_base:
            bases.append(acid_dir)
            continue
        if write_ids.is_write_id_range_aborted(parsed.min_write_id, parsed.max_write_id) is RangeResponse.ALL:
            aborted.append(entry.path)
            continue
        if write_ids.is_write_id_range_valid(parsed.min_write_id, parsed.max_write_id) is not RangeResponse.NONE:
            candidates.append(acid_dir)

    best = _choose_base(storage, bases, write_ids, obsolete, aborted)
    if best is None:
        oldest = min(bases, key=lambda b: b.parsed.write_id, default=None)
        if oldest is not None and _is_compacted_base(storage, oldest):
            raise NotEnoughHistoryError(storage.display(partition_dir), oldest.parsed.name, str(write_ids))

    if best is not None:
        obsolete.extend(e.path for e in originals)
        obsolete.extend(original_dirs)
        originals = []
    else:
        for sub in original_dirs:
            originals.extend(_list_originals(storage, sub))
        originals.sort(key=lambda e: e.path)

    deltas = _find_best_working_deltas(candidates, best, write_ids, obsolete)
    return AcidState(best, deltas, originals, sorted(obsolete), sorted(aborted))


def _choose_base(storage, bases, write_ids, obsolete, aborted) -> AcidDir | None:
    best: AcidDir | None = None
    best_compacted = False
    for base in sorted(bases, key=lambda b: b.path):
        wid = base.parsed.write_id
        compacted = _is_compacted_base(storage, base)
        if not compacted and write_ids.is_write_id_aborted(wid):
            aborted.append(base.path)
            continue
        better = (
            best is None
            or wid > best.parsed.write_id
            or (wid == best.parsed.write_id and compacted and not best_compacted)
        )
        if not better:
            obsolete.append(base.path)
            continue
        if compacted:
            min_open = write_ids.min_open_id
            valid = (min_open is not None and wid <= min_open) or write_ids.is_valid_base(wid)
        else:
            # An INSERT OVERWRITE base is visible only once its write id is committed. (Hive also
            # accepts one equal to the min open write id, which would expose uncommitted data.)
            valid = write_ids.is_write_id_valid(wid)
        if not valid:
            continue
        if best is not None:
            obsolete.append(best.path)
        best, best_compacted = base, compacted
    return best


def _find_best_working_deltas(candidates, base, write_ids, obsolete) -> list[AcidDir]:
    kept: list[AcidDir] = []
    current = base.parsed.write_id if base is not None else 0
    last_stmt = -1
    prev: ParsedDir | None = None
    for d in sorted(candidates, key=lambda c: c.parsed.sort_key(c.path)):
        p = d.parsed
        if p.max_write_id > current:
            if write_ids.is_write_id_range_valid(current + 1, p.max_write_id) is not RangeResponse.NONE:
                kept.append(d)
                current, last_stmt, prev = p.max_write_id, p.statement_id, p
        elif p.max_write_id == current and last_stmt >= 0:
            kept.append(d)
            prev = p
        elif (prev is not None and p.is_delete != prev.is_delete
              and (p.min_write_id, p.max_write_id, p.statement_id)
              == (prev.min_write_id, prev.max_write_id, prev.statement_id)):
            # the delete_delta_x_y of a delta_x_y (split update, or one minor compaction's two
            # outputs); a second directory of the same kind and range (a range compacted twice)
            # holds the same events again and is obsolete
            kept.append(d)
            prev = p
        else:
            obsolete.append(d.path)
    return kept


# --- time travel ------------------------------------------------------------------------------
def with_serving_compactions(listings: Iterable[list[FileEntry]], write_ids: ValidWriteIdList, txns: ValidTxnList,
                             now_write_ids: ValidWriteIdList, now_txns: ValidTxnList, *,
                             insert_only: bool) -> tuple[ValidWriteIdList, ValidTxnList] | None:
    """A past snapshot (``write_ids``, ``txns``) widened to see the outputs of compactions that
    committed after it (they are committed in ``now_txns``) and serve it exactly; None when no
    compaction in ``listings`` does. Once the cleaner removed a compaction's inputs, these
    outputs are all that is left of the history they hold.

    A compaction is taken whole (one transaction decides the visibility of all its outputs), and
    only when every output it left serves the snapshot exactly:

    * a minor output of a full ACID table (``delta_x_y_vT``, ``delete_delta_x_y_vT``) always
      does: it holds the events of x..y unchanged, each with its write id, and the reader hides
      the events of write ids the snapshot does not see, insert and delete events alike (a
      minor compaction only covers write ids that were committed or aborted when it ran);
    * a base (``base_N_vT``: deleted rows are gone from it) and an insert-only table's delta
      (its rows carry no write id) only when the snapshot sees every write id they hold: each
      write id of their range committed now is one the snapshot sees. A base above the
      snapshot's high watermark (only aborted write ids in between) raises it, those write ids
      aborted, so that the base is usable.
    """
    by_txn: dict[int, list[ParsedDir]] = {}
    for entries in listings:
        for entry in entries:
            if not entry.is_dir or is_hidden(entry.name):
                continue
            parsed = parse_dir_name(entry.name)
            txn = parsed.visibility_txn_id if parsed is not None else 0
            if parsed is not None and txn and not txns.is_txn_valid(txn) and now_txns.is_txn_valid(txn):
                by_txn.setdefault(txn, []).append(parsed)
    serving = [txn for txn, dirs in by_txn.items()
               if all(_serves_exactly(d, write_ids, now_write_ids, insert_only) for d in dirs)]
    if not serving:
        return None
    hwm = write_ids.high_watermark
    top = max([hwm] + [d.write_id for t in serving for d in by_txn[t] if d.is_base])
    if top > hwm:
        write_ids = ValidWriteIdList(high_watermark=top, min_open=write_ids.min_open,
                                     open_ranges=write_ids.open_ranges,
                                     aborted_ranges=write_ids.aborted_ranges + ((hwm + 1, top),),
                                     table_name=write_ids.table_name)
    return write_ids, txns.with_valid(serving)


def _serves_exactly(parsed: ParsedDir, write_ids: ValidWriteIdList, now: ValidWriteIdList, insert_only: bool) -> bool:
    if not parsed.is_base and not insert_only:
        return True  # events keep their write ids: the reader filters them per row
    lo, hi = (1, parsed.write_id) if parsed.is_base else (parsed.min_write_id, parsed.max_write_id)
    unseen = [(max(lo, a), min(hi, b)) for a, b in write_ids.open_ranges + write_ids.aborted_ranges
              if a <= hi and b >= lo]
    if hi > write_ids.high_watermark:
        unseen.append((max(lo, write_ids.high_watermark + 1), hi))
    return all(now.is_write_id_range_valid(a, b) is RangeResponse.NONE for a, b in unseen)


def _list_originals(storage: Storage, directory: str) -> list[FileEntry]:
    """Files of a non-ACID subdirectory (e.g. ``HIVE_UNION_SUBDIR_1``), recursively. One the
    cleaner is deleting (or has removed since the partition was listed) is a
    SnapshotFilesRemovedError, as for ACID directories: never a snapshot without its rows."""
    try:
        entries = storage.list_dir(directory)
    except FileNotFoundError:
        raise SnapshotFilesRemovedError(storage.display(directory)) from None
    check_not_removing(storage, directory, entries)
    found: list[FileEntry] = []
    for entry in entries:
        if is_hidden(entry.name):
            continue
        if entry.is_dir:
            found.extend(_list_originals(storage, entry.path))
        elif entry.size > 0:
            found.append(entry)
    return found
