"""Which data objects need a compaction, and of which kind, by Hive's rules
(``Initiator.determineCompactionType``; HIVE_ACID_FORMAT.md 8.2), and the settings those rules
read. No compaction runs here: :mod:`.initiator` (a pass over tables) and :mod:`.auto_compact`
(the after-commit trigger) act on these decisions.

A data object (an unpartitioned table, or one partition) is judged under the compactor's
snapshot: write ids up to just below the lowest open one, aborted ones excluded (what a
compaction started now could use). In Hive's order:

1. more than ``hive.compactor.abortedtxn.threshold`` (1000) aborted write ids left on it
   -> MAJOR;
2. sizes, as Hive sums them (direct, non-hidden files of the base directory plus the pre-ACID
   files = base bytes; the same of every kept delta and delete delta = delta bytes): no base
   bytes but delta bytes means "no base"; otherwise delta bytes / base bytes above
   ``hive.compactor.delta.pct.threshold`` (0.1) -> MAJOR;
3. more than ``hive.compactor.delta.num.threshold`` (10) kept deltas (insert and delete) ->
   MAJOR for an insert-only table or when there is no base, else MINOR; otherwise nothing.

Hive learns aborted transactions per partition from its lock records; acidorc's store knows
which write ids aborted but not where they wrote, so the count is of aborted write ids whose
directories are still in the data object and not yet covered by a compaction (an aborted write
that left no file costs readers nothing, like Hive's empty aborted transactions).

Thresholds use Hive's names: a table property ``compactorthreshold.<name>`` overrides the
environment variable ``ACIDORC_<NAME>`` (``hive.`` dropped, upper case, ``_`` for ``.``), which
overrides Hive's default. ``no_auto_compaction=true`` on a table keeps the initiator away from
it (explicit ``compact`` still works); ``ACIDORC_AUTO_COMPACT=false`` switches the after-commit
trigger off everywhere. After ``hive.compactor.initiator.failed.compacts.threshold`` (2)
consecutive failed compactions of a data object, this process stops compacting it
automatically; and an after-commit trigger compacts a data object at most once per
``hive.compactor.check.interval`` (300 s, the period of Hive's initiator loop), so small,
frequent commits do not pay for a compaction each. Both are remembered per process: the store
keeps no compaction history (Hive's COMPLETED_COMPACTIONS). A compaction the after-commit
trigger would run inside the committing process (no Spark runner) is bounded by
``ACIDORC_AUTO_COMPACT_MAX_BYTES`` (256 MiB read); bigger ones wait for an explicit pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .. import settings
from ..layout.acid_state import AcidState, get_acid_state
from ..layout.names import is_hidden, parse_dir_name
from ..layout.table_dirs import INSERT_ONLY
from ..layout.writeids import ValidTxnList
from ..scan.resolved import ResolvedTable
from ..storage import Storage
from .compaction_plan import compactor_write_ids

MINOR, MAJOR = "minor", "major"

DELTA_NUM = "hive.compactor.delta.num.threshold"
DELTA_PCT = "hive.compactor.delta.pct.threshold"
ABORTED = "hive.compactor.abortedtxn.threshold"
FAILED = "hive.compactor.initiator.failed.compacts.threshold"
CHECK_INTERVAL = "hive.compactor.check.interval"

#: per-table overrides: ``compactorthreshold.<name>`` (Hive reads the first two per table)
TABLE_SETTINGS = (DELTA_NUM, DELTA_PCT, ABORTED, FAILED)
PROPERTY_PREFIX = "compactorthreshold."
NO_AUTO_COMPACTION = "no_auto_compaction"
#: the largest compaction input (bytes read) an after-commit trigger runs in the committing
#: process when no task runner (Spark) is given; larger ones are left to an explicit pass
ENV_MAX_BYTES = settings.AUTO_COMPACT_MAX_BYTES.name


@dataclass(frozen=True)
class CompactorSettings:
    """The thresholds for one table (Hive's defaults unless overridden)."""

    delta_num_threshold: int = 10
    delta_pct_threshold: float = 0.1
    aborted_threshold: int = 1000
    failed_compacts_threshold: int = 2
    check_interval: float = 300.0


@dataclass(frozen=True)
class DataObject:
    """One unpartitioned table or partition, as the compactor would see it now."""

    partition: str  # relative to the table root; "" for an unpartitioned table
    values: tuple[str | None, ...]  # raw partition values (None: Hive's default partition)
    directory: str
    state: AcidState  # under the compactor's snapshot
    running_compaction: int | None = None  # txn id of a compaction whose outputs are not visible yet


@dataclass(frozen=True)
class Decision:
    kind: str | None  # "minor" | "major" | None
    reason: str
    deltas: int
    delta_bytes: int
    base_bytes: int
    aborted: int


# --- settings (the environment through acid_source.settings) ---------------------------------------
def global_settings(env: Mapping[str, str] | None = None) -> dict[str, float]:
    """Hive's defaults, overridden by ``ACIDORC_COMPACTOR_*`` environment variables."""
    return {name: setting.get(env) for name, setting in settings.COMPACTOR.items()}


def _property(properties: Mapping[str, str], key: str) -> str | None:
    """A table property by Hive's key (exact case first, then any case)."""
    if key in properties:
        return properties[key]
    lowered = key.lower()
    for k, v in properties.items():
        if k.lower() == lowered:
            return v
    return None


def table_settings(properties: Mapping[str, str], env: Mapping[str, str] | None = None) -> CompactorSettings:
    """The thresholds for a table: ``compactorthreshold.<name>`` properties over the
    environment over Hive's defaults. A bad value is an :class:`InvalidOptionError` naming the
    property or environment variable."""
    values = global_settings(env)
    for setting in TABLE_SETTINGS:
        text = _property(properties, PROPERTY_PREFIX + setting)
        if text is not None:
            values[setting] = settings.COMPACTOR[setting].parse(PROPERTY_PREFIX + setting, str(text))
    return CompactorSettings(int(values[DELTA_NUM]), float(values[DELTA_PCT]), int(values[ABORTED]),
                             int(values[FAILED]), float(values[CHECK_INTERVAL]))


def auto_compaction_disabled(properties: Mapping[str, str]) -> bool:
    """Hive's ``no_auto_compaction`` (also spelled upper case) set to ``true``, any case."""
    value = _property(properties, NO_AUTO_COMPACTION)
    return value is not None and str(value).strip().lower() == "true"


def after_commit_enabled(env: Mapping[str, str] | None = None) -> bool:
    """The global switch of the after-commit trigger: ``ACIDORC_AUTO_COMPACT`` (default on)."""
    return settings.AUTO_COMPACT.get(env)


def after_commit_max_bytes(env: Mapping[str, str] | None = None) -> int:
    """``ACIDORC_AUTO_COMPACT_MAX_BYTES`` (default 256 MiB)."""
    return settings.AUTO_COMPACT_MAX_BYTES.get(env)


# --- the decision -----------------------------------------------------------------------------
def _running_compaction(entries, txns: ValidTxnList) -> int | None:
    """A ``_vT`` directory whose transaction is neither visible nor aborted: a compaction of
    this data object is running (or committed after the snapshot). Hive's initiator skips such
    objects (``lookForCurrentCompactions``)."""
    for entry in entries:
        if entry.is_dir and not is_hidden(entry.name):
            parsed = parse_dir_name(entry.name)
            if (parsed is not None and parsed.visibility_txn_id
                    and not txns.is_txn_valid(parsed.visibility_txn_id)
                    and not txns.is_txn_aborted(parsed.visibility_txn_id)):
                return parsed.visibility_txn_id
    return None


def data_objects(table: ResolvedTable, partitions: Iterable[str] | None = None) -> list[DataObject]:
    """The table's data objects (only those at ``partitions``, relative paths, if given), each
    with its directories selected under the compactor's snapshot."""
    write_ids = compactor_write_ids(table.write_ids)
    root = table.storage.root.rstrip("/")
    wanted = None if partitions is None else {p.strip("/") for p in partitions}
    found = []
    for part in table.layout.partitions:
        rel = part.path[len(root):].strip("/")
        if wanted is not None and rel not in wanted:
            continue
        entries = table.layout.listings[part.path]
        state = get_acid_state(table.storage, part.path, write_ids, table.txns, entries)
        found.append(DataObject(rel, part.raw_values, part.path, state, _running_compaction(entries, table.txns)))
    return found


def aborted_count(obj: DataObject) -> int:
    """Aborted write ids (and aborted compactions) whose directories are still in the data
    object and not covered by its base or a kept delta's range: what a major compaction
    would drop."""
    base_wid = obj.state.base.parsed.write_id if obj.state.base is not None else 0
    kept = [(d.parsed.min_write_id, d.parsed.max_write_id) for d in obj.state.deltas]
    write_ids: set[int] = set()
    txns: set[int] = set()
    for path in obj.state.aborted:
        parsed = parse_dir_name(path.rstrip("/").rsplit("/", 1)[-1])
        if parsed is None:
            continue
        lo, hi = parsed.min_write_id, parsed.max_write_id
        if hi <= base_wid or any(a <= lo and hi <= b for a, b in kept):
            continue
        if parsed.visibility_txn_id:
            txns.add(parsed.visibility_txn_id)
        else:
            write_ids.update(range(max(lo, base_wid + 1), hi + 1))
    return len(write_ids) + len(txns)


def _dir_bytes(storage: Storage, directory: str) -> int:
    """Hive's ``sumDirSize``: the lengths of the directory's direct, non-hidden children
    (subdirectories count 0, as on HDFS)."""
    return sum(e.size for e in storage.list_dir(directory) if not e.is_dir and not is_hidden(e.name))


def assess(table: ResolvedTable, obj: DataObject, aborted: int, settings: CompactorSettings) -> Decision:
    """Hive's ``checkForCompaction`` / ``determineCompactionType`` for one data object."""
    deltas = obj.state.deltas
    storage = table.storage
    base_bytes = _dir_bytes(storage, obj.state.base.path) if obj.state.base is not None else 0
    base_bytes += sum(e.size for e in obj.state.originals)
    delta_bytes = sum(_dir_bytes(storage, d.path) for d in deltas)

    def decision(kind: str | None, reason: str) -> Decision:
        return Decision(kind, reason, len(deltas), delta_bytes, base_bytes, aborted)

    if aborted > settings.aborted_threshold:  # Hive decides this before sizing anything
        return decision(MAJOR, f"{aborted} aborted write ids > {ABORTED}={settings.aborted_threshold}")
    no_base = base_bytes == 0 and delta_bytes > 0
    if base_bytes > 0:
        ratio = delta_bytes / base_bytes
        if ratio > settings.delta_pct_threshold:
            return decision(MAJOR, f"delta bytes / base bytes = {delta_bytes}/{base_bytes} = {ratio:.3g} > "
                                   f"{DELTA_PCT}={settings.delta_pct_threshold:g}")
    if len(deltas) <= settings.delta_num_threshold:
        return decision(None, f"{len(deltas)} deltas <= {DELTA_NUM}={settings.delta_num_threshold}")
    count = f"{len(deltas)} deltas > {DELTA_NUM}={settings.delta_num_threshold}"
    if table.kind == INSERT_ONLY:
        return decision(MAJOR, f"{count} (insert-only table)")
    if no_base:
        return decision(MAJOR, f"{count} and no base")
    return decision(MINOR, count)


def compaction_needed(table: ResolvedTable, obj: DataObject, aborted: int,
                      settings: CompactorSettings) -> str | None:
    """``"minor"``, ``"major"`` or None for one data object (see the module docstring)."""
    return assess(table, obj, aborted, settings).kind


def input_bytes(decision: Decision) -> int:
    """What a compaction reads: the deltas, plus the base for a major one."""
    return decision.delta_bytes + (decision.base_bytes if decision.kind == MAJOR else 0)
