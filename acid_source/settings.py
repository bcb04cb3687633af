"""Every ``ACIDORC_*`` environment variable in one place: its name, default, parser and a
one-line doc, so that a setting is read, parsed and reported the same way wherever it is used.

A bad value is an :class:`~acid_source.errors.InvalidOptionError` naming the variable
(``option '$ACIDORC_READ_LEASE_SECONDS': expected a number of seconds >= 0, got 'soon'``).
Executor-safe: the standard library and ``errors.py`` only (tasks read the fault-injection
settings). Values are read when asked for, not at import: tests and applications set them late.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from .errors import InvalidOptionError

T = TypeVar("T")

#: a parser: (the name to report, e.g. ``$ACIDORC_AUTO_COMPACT`` or a table property, the text) -> value
Parser = Callable[[str, str], T]


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One environment variable. ``get`` returns the default when it is unset or blank."""

    name: str
    default: T
    parse: Parser
    doc: str
    #: a malformed value silently means the default (only the heartbeat interval, as it always
    #: has: it is read inside a transaction's keep-alive, where an error would end the write)
    invalid_means_default: bool = False

    def get(self, env: Mapping[str, str] | None = None) -> T:
        text = (os.environ if env is None else env).get(self.name, "").strip()
        if not text:
            return self.default
        try:
            return self.parse(f"${self.name}", text)
        except InvalidOptionError:
            if self.invalid_means_default:
                return self.default
            raise


# --- parsers -------------------------------------------------------------------------------------
def _number(text) -> float:
    """``text`` as a float; NaN when it is not a number (and for booleans, which are not)."""
    if isinstance(text, bool):
        return math.nan
    try:
        return float(str(text).strip())
    except ValueError:
        return math.nan


def parse_text(source: str, text: str) -> str:
    return str(text).strip()


def parse_seconds(source: str, value) -> float:
    """A finite number of seconds >= 0."""
    seconds = _number(value)
    if not math.isfinite(seconds) or seconds < 0:
        raise InvalidOptionError(source, f"expected a number of seconds >= 0, got {value!r}")
    return seconds


def parse_positive_seconds(source: str, value) -> float:
    """A finite number of seconds > 0."""
    seconds = _number(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise InvalidOptionError(source, f"expected a number of seconds > 0, got {value!r}")
    return seconds


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def parse_bool(source: str, value) -> bool:
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidOptionError(source, f"expected true or false, got {value!r}")


def parse_bytes(source: str, value) -> int:
    """A whole number of bytes >= 0."""
    try:
        number = int(str(value).strip())
    except ValueError:
        number = -1
    if number < 0:
        raise InvalidOptionError(source, f"expected a number of bytes >= 0, got {value!r}")
    return number


_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"([0-9.eE+-]+)\s*([a-z]*)")


def duration_seconds(text: str) -> float:
    """Hive's spelling of a duration: seconds, or with a unit (500ms, 300s, 5m, 1h, 1d);
    NaN when ``text`` is none."""
    m = _DURATION.fullmatch(str(text).strip().lower())
    if m is None or (m.group(2) not in _UNITS and m.group(2) != ""):
        return math.nan
    return _number(m.group(1)) * _UNITS.get(m.group(2), 1.0)


def compactor_threshold(setting: str, kind: str) -> Parser:
    """The parser of one of Hive's compactor settings (``kind``: ``"integer"``, ``"number"`` or
    ``"duration"``), for the environment and for ``compactorthreshold.*`` table properties.
    Hive parses them with Integer/Float.parseInt; acidorc also refuses values that would make
    every data object qualify (negative ones), and a failed-compactions threshold below 1."""
    minimum = 1 if setting == "hive.compactor.initiator.failed.compacts.threshold" else 0
    described = {"integer": "an integer", "number": "a number",
                 "duration": "a duration (seconds, or with a unit: 500ms, 300s, 5m, 1h)"}[kind]

    def parse(source: str, text: str) -> float:
        value = str(text).strip()
        if kind == "integer":
            try:
                number: float = int(value)
            except ValueError:
                number = math.nan
        elif kind == "duration":
            number = duration_seconds(value)
        else:
            number = _number(value)
        if not math.isfinite(number) or number < minimum:
            raise InvalidOptionError(source, f"{setting} must be {described} >= {minimum}, got {text!r}")
        return number

    return parse


def env_name(hive_setting: str) -> str:
    """``hive.compactor.delta.num.threshold`` -> ``ACIDORC_COMPACTOR_DELTA_NUM_THRESHOLD``."""
    return "ACIDORC_" + hive_setting.removeprefix("hive.").replace(".", "_").upper()


def _compactor(setting: str, default: float, kind: str, doc: str) -> Setting[float]:
    return Setting(env_name(setting), default, compactor_threshold(setting, kind), doc)


# --- the settings --------------------------------------------------------------------------------
METASTORE_URL: Setting[str | None] = Setting(
    "ACIDORC_METASTORE_URL", None, parse_text,
    "the transaction store (a SQLAlchemy URL); unset: a SQLite file ~/.acidorc/metastore.db")
READ_LEASE_SECONDS = Setting(
    "ACIDORC_READ_LEASE_SECONDS", 3600.0, parse_seconds,
    "how long a read's lease protects its snapshot's files when readLeaseSeconds is not given (0: no lease)")
HEARTBEAT_SECONDS = Setting(
    "ACIDORC_HEARTBEAT_SECONDS", 30.0, parse_positive_seconds,
    "seconds between an open transaction's heartbeats (a malformed value means the default)",
    invalid_means_default=True)
AUTO_COMPACT = Setting(
    "ACIDORC_AUTO_COMPACT", True, parse_bool,
    "the after-commit compaction trigger on (default) or off")
AUTO_COMPACT_MAX_BYTES = Setting(
    "ACIDORC_AUTO_COMPACT_MAX_BYTES", 256 * 1024 * 1024, parse_bytes,
    "the largest input (bytes read) an after-commit compaction runs in the committing process without Spark")
COMPACTOR_DELTA_NUM_THRESHOLD = _compactor(
    "hive.compactor.delta.num.threshold", 10, "integer", "deltas that make a data object due for a minor compaction")
COMPACTOR_DELTA_PCT_THRESHOLD = _compactor(
    "hive.compactor.delta.pct.threshold", 0.1, "number",
    "delta size over base size that makes a data object due for a major compaction")
COMPACTOR_ABORTEDTXN_THRESHOLD = _compactor(
    "hive.compactor.abortedtxn.threshold", 1000, "integer", "aborted transactions that make a data object due")
COMPACTOR_INITIATOR_FAILED_COMPACTS_THRESHOLD = _compactor(
    "hive.compactor.initiator.failed.compacts.threshold", 2, "integer",
    "failed compactions in a row after which a data object is left alone")
COMPACTOR_CHECK_INTERVAL = _compactor(
    "hive.compactor.check.interval", 300.0, "duration", "how long the initiator waits before checking a table again")
VACUUM_RETENTION_SECONDS = Setting(
    "ACIDORC_VACUUM_RETENTION_SECONDS", 300.0, parse_seconds,
    "snapshots younger than this are protected from vacuum even without a lease")
VACUUM_AFTER_COMPACTION = Setting(
    "ACIDORC_VACUUM_AFTER_COMPACTION", True, parse_bool, "whether a compaction runs a vacuum once it committed")
CRASH_AT: Setting[str] = Setting(
    "ACIDORC_CRASH_AT", "", parse_text, "fault injection: the crash point (faults.STEPS) that kills the process")
PAUSE_AT: Setting[str] = Setting(
    "ACIDORC_PAUSE_AT", "", parse_text, "fault injection: the pause point (faults.PAUSE_STEPS) that holds the process")
PAUSE_DIR: Setting[str] = Setting(
    "ACIDORC_PAUSE_DIR", "", parse_text, "fault injection: the directory of a pause point's FIFOs")
PAUSE_TIMEOUT = Setting(
    "ACIDORC_PAUSE_TIMEOUT", 300.0, parse_seconds, "fault injection: seconds a paused process waits to be released")

#: every setting, for documentation and for the check that no other ``ACIDORC_*`` name exists
ALL: tuple[Setting, ...] = (
    METASTORE_URL, READ_LEASE_SECONDS, HEARTBEAT_SECONDS, AUTO_COMPACT, AUTO_COMPACT_MAX_BYTES,
    COMPACTOR_DELTA_NUM_THRESHOLD, COMPACTOR_DELTA_PCT_THRESHOLD, COMPACTOR_ABORTEDTXN_THRESHOLD,
    COMPACTOR_INITIATOR_FAILED_COMPACTS_THRESHOLD, COMPACTOR_CHECK_INTERVAL, VACUUM_RETENTION_SECONDS,
    VACUUM_AFTER_COMPACTION, CRASH_AT, PAUSE_AT, PAUSE_DIR, PAUSE_TIMEOUT,
)
#: the compactor's settings by Hive's name (the initiator's thresholds)
COMPACTOR: dict[str, Setting[float]] = {
    "hive.compactor.delta.num.threshold": COMPACTOR_DELTA_NUM_THRESHOLD,
    "hive.compactor.delta.pct.threshold": COMPACTOR_DELTA_PCT_THRESHOLD,
    "hive.compactor.abortedtxn.threshold": COMPACTOR_ABORTEDTXN_THRESHOLD,
    "hive.compactor.initiator.failed.compacts.threshold": COMPACTOR_INITIATOR_FAILED_COMPACTS_THRESHOLD,
    "hive.compactor.check.interval": COMPACTOR_CHECK_INTERVAL,
}
