"""The automatic initiator: which data objects need a compaction, and of which kind, by Hive's
rules (``Initiator.determineCompactionType``; HIVE_ACID_FORMAT.md 8.2), then the compactor.

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

import argparse
import json
import logging
import math
import os
import re
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import ConflictError, InvalidOptionError, TableNotRegisteredError
from ..layout.acid_state import AcidState, get_acid_state
from ..layout.names import is_hidden, parse_dir_name
from ..layout.partitions import parse_partition_segment
from ..layout.table_dirs import FULL_ACID, INSERT_ONLY, PartitionDir, TableLayout, discover_layout
from ..layout.writeids import ValidTxnList
from ..metastore import Metastore
from ..metastore.tableinfo import TABLE_NAME, TableInfo
from ..scan.resolved import ResolvedTable
from ..storage import Storage
from .compaction_plan import compactor_write_ids

logger = logging.getLogger("acidorc.initiator")

MINOR, MAJOR = "minor", "major"

DELTA_NUM = "hive.compactor.delta.num.threshold"
DELTA_PCT = "hive.compactor.delta.pct.threshold"
ABORTED = "hive.compactor.abortedtxn.threshold"
FAILED = "hive.compactor.initiator.failed.compacts.threshold"
CHECK_INTERVAL = "hive.compactor.check.interval"

#: Hive's defaults (HiveConf)
DEFAULTS: dict[str, float] = {DELTA_NUM: 10, DELTA_PCT: 0.1, ABORTED: 1000, FAILED: 2, CHECK_INTERVAL: 300.0}
#: per-table overrides: ``compactorthreshold.<name>`` (Hive reads the first two per table)
TABLE_SETTINGS = (DELTA_NUM, DELTA_PCT, ABORTED, FAILED)
PROPERTY_PREFIX = "compactorthreshold."
NO_AUTO_COMPACTION = "no_auto_compaction"
ENV_AUTO_COMPACT = "ACIDORC_AUTO_COMPACT"
#: the largest compaction input (bytes read) an after-commit trigger runs in the committing
#: process when no task runner (Spark) is given; larger ones are left to an explicit pass
ENV_MAX_BYTES = "ACIDORC_AUTO_COMPACT_MAX_BYTES"
DEFAULT_MAX_BYTES = 256 * 1024 * 1024

_MAX_FILTER_CHARS = 50_000  # per compaction call; the partitionFilter parser takes up to 100,000


def env_name(setting: str) -> str:
    """``hive.compactor.delta.num.threshold`` -> ``ACIDORC_COMPACTOR_DELTA_NUM_THRESHOLD``."""
    return "ACIDORC_" + setting.removeprefix("hive.").replace(".", "_").upper()


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


# --- settings -------------------------------------------------------------------------------
def _parse(setting: str, text: str, source: str) -> float:
    """A threshold value, checked: Hive parses them with Integer/Float.parseInt, acidorc also
    refuses values that would make every data object qualify (negative ones)."""
    value = text.strip()
    try:
        if setting in (DELTA_NUM, ABORTED, FAILED):
            number: float = int(value)
        elif setting == CHECK_INTERVAL:
            number = _seconds(value)
        else:
            number = float(value)
    except ValueError:
        number = math.nan
    minimum = 1 if setting == FAILED else 0
    if not math.isfinite(number) or number < minimum:
        kind = ("an integer" if setting in (DELTA_NUM, ABORTED, FAILED)
                else "a duration (seconds, or with a unit: 500ms, 300s, 5m, 1h)" if setting == CHECK_INTERVAL
                else "a number")
        raise InvalidOptionError(source, f"{setting} must be {kind} >= {minimum}, got {text!r}")
    return number


_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"([0-9.eE+-]+)\s*([a-z]*)")


def _seconds(text: str) -> float:
    m = _DURATION.fullmatch(text.lower())
    if m is None or m.group(2) not in _UNITS and m.group(2) != "":
        raise ValueError(text)
    return float(m.group(1)) * _UNITS.get(m.group(2), 1.0)


def global_settings(env: Mapping[str, str] | None = None) -> dict[str, float]:
    """Hive's defaults, overridden by ``ACIDORC_COMPACTOR_*`` environment variables."""
    env = os.environ if env is None else env
    values = dict(DEFAULTS)
    for setting in DEFAULTS:
        text = env.get(env_name(setting), "").strip()
        if text:
            values[setting] = _parse(setting, text, env_name(setting))
    return values


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
            values[setting] = _parse(setting, str(text), PROPERTY_PREFIX + setting)
    return CompactorSettings(int(values[DELTA_NUM]), float(values[DELTA_PCT]), int(values[ABORTED]),
                             int(values[FAILED]), float(values[CHECK_INTERVAL]))


def auto_compaction_disabled(properties: Mapping[str, str]) -> bool:
    """Hive's ``no_auto_compaction`` (also spelled upper case) set to ``true``, any case."""
    value = _property(properties, NO_AUTO_COMPACTION)
    return value is not None and str(value).strip().lower() == "true"


def after_commit_enabled(env: Mapping[str, str] | None = None) -> bool:
    """The global switch of the after-commit trigger: ``ACIDORC_AUTO_COMPACT`` (default on)."""
    env = os.environ if env is None else env
    text = env.get(ENV_AUTO_COMPACT, "").strip().lower()
    if text in ("", "1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise InvalidOptionError(ENV_AUTO_COMPACT, f"expected true or false, got {env.get(ENV_AUTO_COMPACT)!r}")


def after_commit_max_bytes(env: Mapping[str, str] | None = None) -> int:
    """``ACIDORC_AUTO_COMPACT_MAX_BYTES`` (default 256 MiB)."""
    env = os.environ if env is None else env
    text = env.get(ENV_MAX_BYTES, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidOptionError(ENV_MAX_BYTES, f"expected a number of bytes >= 0, got {text!r}")
    return value


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


# --- partition filters ------------------------------------------------------------------------
def _quoted_name(column: str) -> str:
    return "`" + column.replace("`", "``") + "`"


def _string_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def partition_condition(columns: Iterable[str], values: Iterable[str | None]) -> str:
    """A ``partitionFilter`` condition matching exactly one partition: each column equal to
    its raw directory value as a string literal (the filter converts it to the column's
    type, as it converts directory values), or ``IS NULL`` for Hive's default partition."""
    terms = [f"{_quoted_name(c)} IS NULL" if v is None else f"{_quoted_name(c)} = {_string_literal(v)}"
             for c, v in zip(columns, values)]
    return " AND ".join(terms)


def _batches(columns: list[str], group: list[tuple[DataObject, dict]]) -> list[tuple[str | None, list]]:
    """``(partitionFilter, members)`` pairs covering ``group``, each condition short enough for
    one compaction call (None for an unpartitioned table: the whole table)."""
    if not columns:
        return [(None, group)]
    batches: list[tuple[str | None, list]] = []
    terms: list[str] = []
    members: list[tuple[DataObject, dict]] = []
    length = 0
    for obj, entry in group:
        term = "(" + partition_condition(columns, obj.values) + ")"
        if terms and length + len(term) + 4 > _MAX_FILTER_CHARS:
            batches.append((" OR ".join(terms), members))
            terms, members, length = [], [], 0
        terms.append(term)
        members.append((obj, entry))
        length += len(term) + 4
    if terms:
        batches.append((" OR ".join(terms), members))
    return batches


# --- per-process memory (Hive keeps it in its compaction queue) ---------------------------------
_lock = threading.Lock()
_failures: dict[tuple[str, int, str], int] = {}  # consecutive failed compactions
_last_attempt: dict[tuple[str, int, str], float] = {}  # time.monotonic() of the last automatic one


def _key(store: Metastore, table_id: int, partition: str) -> tuple[str, int, str]:
    return (store.url, table_id, partition)


def _store_url(store: Metastore) -> str:
    return store._url.render_as_string(hide_password=False)


# --- running it --------------------------------------------------------------------------------
def _entry(info: TableInfo, partition: str | None, status: str, **fields) -> dict:
    return {"table": info.name, "location": info.location, "partition": partition, "status": status, **fields}


def _partial_layout(storage: Storage, info: TableInfo, partitions: Iterable[str]) -> TableLayout:
    """The layout of just the named partitions (an after-commit check lists nothing else)."""
    parts, listings = [], {}
    root = storage.root.rstrip("/")
    for rel in sorted({p.strip("/") for p in partitions}):
        segments = [parse_partition_segment(seg) for seg in rel.split("/")] if rel else []
        if len(segments) != len(info.partition_columns) or any(seg is None for seg in segments):
            logger.debug("%s: %r is not a data object of the table", info.location, rel)
            continue
        path = f"{root}/{rel}" if rel else root
        if not storage.is_dir(path):
            continue  # dropped since the commit
        parts.append(PartitionDir(path, tuple(seg[1] for seg in segments if seg is not None)))
        listings[path] = storage.list_dir(path)
    return TableLayout(storage, list(info.partition_columns), parts, listings)


def _initiate_table(store: Metastore, info: TableInfo, *, partitions: Iterable[str] | None, dry_run: bool,
                    storage_options: tuple, run_tasks: Any, after_commit: bool,
                    env: Mapping[str, str] | None = None) -> list[dict]:
    """Check a table's data objects (only ``partitions`` if given) and compact those that need
    it: one compaction per kind (the partitions of each in one ``partitionFilter``)."""
    if auto_compaction_disabled(info.properties):
        return [_entry(info, None, "disabled", reason=f"table property {NO_AUTO_COMPACTION}=true")]
    try:
        settings = table_settings(info.properties, env)
    except InvalidOptionError as exc:
        return [_entry(info, None, "error", error=str(exc))]
    write_ids, txns = store.snapshot(info.table_id)
    storage = Storage(info.location, storage_options)
    if partitions is None:
        layout = discover_layout(storage)
    else:
        partitions = [p.strip("/") for p in partitions]
        layout = _partial_layout(storage, info, partitions)
    table = ResolvedTable(storage, info.location, layout, write_ids, txns,
                          INSERT_ONLY if info.insert_only else FULL_ACID, info)
    # in-process after-commit compactions are bounded: they run inside the user's write call
    max_bytes = after_commit_max_bytes(env) if after_commit and run_tasks is None else None
    now = time.monotonic()
    results: list[dict] = []
    pending: dict[str, list[tuple[DataObject, dict]]] = {}
    for obj in data_objects(table, partitions):
        key = _key(store, info.table_id, obj.partition)
        if after_commit:
            with _lock:
                last = _last_attempt.get(key)
            if last is not None and now - last < settings.check_interval:
                logger.debug("%s %r: compacted %.0fs ago, less than %s=%gs", info.location, obj.partition,
                             now - last, CHECK_INTERVAL, settings.check_interval)
                continue
        decision = assess(table, obj, aborted_count(obj), settings)
        if decision.kind is None:
            continue
        entry = _entry(info, obj.partition, "dry_run" if dry_run else "pending", kind=decision.kind,
                       reason=decision.reason, deltas=decision.deltas, deltaBytes=decision.delta_bytes,
                       baseBytes=decision.base_bytes, abortedWriteIds=decision.aborted)
        results.append(entry)
        with _lock:
            failures = _failures.get(key, 0)
        if obj.running_compaction is not None:
            entry.update(status="skipped", reason=f"a compaction is running (transaction {obj.running_compaction})")
        elif failures >= settings.failed_compacts_threshold:
            entry.update(status="skipped", reason=f"the last {failures} compactions failed ({FAILED}="
                                                  f"{settings.failed_compacts_threshold}); compact it explicitly")
        elif max_bytes is not None and _input_bytes(decision) > max_bytes:
            entry.update(status="skipped", reason=f"{decision.kind} compaction would read {_input_bytes(decision)} "
                                                  f"bytes, more than {ENV_MAX_BYTES}={max_bytes} for a compaction "
                                                  "inside a commit; run run_initiator() or AcidTable.compact() "
                                                  f"(it was due: {decision.reason})")
        elif not dry_run:
            pending.setdefault(decision.kind, []).append((obj, entry))
    for kind, group in pending.items():
        for condition, batch in _batches(list(info.partition_columns), group):
            _compact(store, info, kind, condition, batch, storage_options, run_tasks)
    return results


def _input_bytes(decision: Decision) -> int:
    """What a compaction reads: the deltas, plus the base for a major one."""
    return decision.delta_bytes + (decision.base_bytes if decision.kind == MAJOR else 0)


def _compact(store: Metastore, info: TableInfo, kind: str, condition: str | None,
             batch: list[tuple[DataObject, dict]], storage_options: tuple, run_tasks: Any) -> None:
    from .compactor import compact_table

    keys = [_key(store, info.table_id, obj.partition) for obj, _ in batch]
    with _lock:
        for key in keys:
            _last_attempt[key] = time.monotonic()
    where = f"{info.location}" + (f" where {condition}" if condition else "")
    logger.info("%s compaction of %s: %s", kind, where, "; ".join(e["reason"] for _, e in batch))
    try:
        metrics = compact_table(info.location, kind, partition_filter=condition, metastore_url=_store_url(store),
                                storage_options=storage_options, run_tasks=run_tasks)
    except ConflictError as exc:  # an overwrite won: nothing to do, and not the compaction's fault
        logger.info("%s compaction of %s gave way to a concurrent write: %s", kind, where, exc)
        for _, entry in batch:
            entry.update(status="conflict", error=str(exc))
        return
    except Exception as exc:
        logger.error("%s compaction of %s failed: %s", kind, where, exc, exc_info=True)
        with _lock:
            for key in keys:
                _failures[key] = _failures.get(key, 0) + 1
        for _, entry in batch:
            entry.update(status="failed", error=f"{type(exc).__name__}: {exc}")
        return
    with _lock:
        for key in keys:
            _failures.pop(key, None)
    skipped = metrics.get("skipped") or {}
    for obj, entry in batch:
        if obj.partition in skipped:  # e.g. a base and aborted directories only: the cleaner's job
            entry.update(status="skipped", reason=f"the compactor found nothing to do ({skipped[obj.partition]}); "
                                                  f"it was due: {entry['reason']}", metrics=metrics)
        else:
            entry.update(status="compacted", metrics=metrics)


def _open(metastore_url: str | Metastore | None) -> Metastore | None:
    if isinstance(metastore_url, Metastore):
        return metastore_url
    from ..resolve import open_store

    return open_store(metastore_url)


def run_initiator(location_or_name: str | os.PathLike | None = None, *, metastore_url: str | None = None,
                  dry_run: bool = False, storage_options: Mapping[str, Any] | None = None,
                  run_tasks: Callable | None = None) -> list[dict]:
    """One pass of Hive's initiator over one table (a location, or a registered name such as
    ``db.sales``) or every table in the store: compact each data object over a threshold.

    Returns one dict per data object that needs a compaction (``partition``, ``kind``,
    ``reason``, the counts and sizes behind it, and ``status``: ``compacted`` with the
    compactor's ``metrics``, ``dry_run``, ``skipped``, ``conflict`` or ``failed`` with an
    ``error``), plus one per table it left alone (``disabled``: ``no_auto_compaction``;
    ``error``: a bad threshold property). A failure on one table does not stop the others.
    Runs whatever ``ACIDORC_AUTO_COMPACT`` says: that switch is for the after-commit trigger.
    """
    options = tuple(sorted((storage_options or {}).items()))
    global_settings()  # a bad environment variable is the caller's error, raised now
    store = _open(metastore_url)
    if location_or_name is None:
        if store is None:  # no store yet: no tables
            return []
        infos = store.list_tables()
    else:
        key = os.fspath(location_or_name).strip()
        if store is None:
            raise TableNotRegisteredError(location=None if TABLE_NAME.fullmatch(key) else key,
                                          name=key if TABLE_NAME.fullmatch(key) else None)
        infos = [store.get_table(name=key) if TABLE_NAME.fullmatch(key) else store.get_table(key)]
    results: list[dict] = []
    for info in infos:
        try:
            results += _initiate_table(store, info, partitions=None, dry_run=dry_run, storage_options=options,
                                       run_tasks=run_tasks, after_commit=False)
        except Exception as exc:  # e.g. the table's directory is gone: go on with the others
            logger.error("cannot check %s for compaction: %s", info.location, exc, exc_info=True)
            results.append(_entry(info, None, "error", error=f"{type(exc).__name__}: {exc}"))
    return results


def maybe_compact_after_commit(location: str, metastore_url: str | Metastore | None,
                               touched_partitions: Iterable[str], *,
                               storage_options: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
                               run_tasks: Callable | None = None) -> list[dict]:
    """The after-commit trigger: check the data objects a commit just touched (relative
    partition paths, "" for an unpartitioned table) and compact those over a threshold, in
    this call. Never raises (the user's write has committed): errors are logged on
    ``acidorc.initiator`` and give an empty list; a concurrent compaction or overwrite winning
    is fine. Does nothing when ``ACIDORC_AUTO_COMPACT`` is false or the table has
    ``no_auto_compaction=true``; a data object compacted by this process less than
    ``hive.compactor.check.interval`` ago is not checked again. Without ``run_tasks`` (a
    Spark runner) the compaction runs in this process, so one that would read more than
    ``ACIDORC_AUTO_COMPACT_MAX_BYTES`` (256 MiB) is skipped (reported, logged) and left to an
    explicit :func:`run_initiator` or ``AcidTable.compact``."""
    try:
        if not after_commit_enabled():
            return []
        touched = [touched_partitions] if isinstance(touched_partitions, str) else list(touched_partitions)
        if not touched:
            return []
        options = tuple(sorted(dict(storage_options).items()))
        store = _open(metastore_url)
        info = store.find_table(location) if store is not None else None
        if store is None or info is None or auto_compaction_disabled(info.properties):
            return []
        results = _initiate_table(store, info, partitions=touched, dry_run=False, storage_options=options,
                                  run_tasks=run_tasks, after_commit=True)
        for entry in results:
            if entry["status"] == "error":
                logger.warning("automatic compaction of %s skipped: %s", location, entry.get("error"))
            elif entry["status"] == "skipped":
                logger.info("automatic compaction of %s %r skipped: %s", location, entry["partition"],
                            entry["reason"])
        return results
    except Exception as exc:
        logger.warning("automatic compaction check after a commit on %s failed: %s", location, exc, exc_info=True)
        return []


def main(argv: list[str] | None = None) -> int:
    """``python -m acid_source.maintenance.initiator [TABLE] [--dry-run] [--metastore-url URL]``:
    one initiator pass; prints one JSON object per line."""
    parser = argparse.ArgumentParser(prog="python -m acid_source.maintenance.initiator",
                                     description="Compact the data objects of ACID tables that are over "
                                                 "Hive's compaction thresholds.")
    parser.add_argument("table", nargs="?", help="a table location or name (default: every registered table)")
    parser.add_argument("--dry-run", action="store_true", help="only report what would be compacted")
    parser.add_argument("--metastore-url", default=None, help="the transaction store (default: "
                                                               "$ACIDORC_METASTORE_URL or ~/.acidorc)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    results = run_initiator(args.table, metastore_url=args.metastore_url, dry_run=args.dry_run)
    for entry in results:
        print(json.dumps(entry, default=str))
    return 1 if any(e["status"] in ("failed", "error") for e in results) else 0


if __name__ == "__main__":
    sys.exit(main())
