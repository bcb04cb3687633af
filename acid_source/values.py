"""The value parsers both edges share: a size, a write id, a timestamp, a change feed's range, a
static partition. The Python API hands them arguments, the Spark edge option strings; each
error is an :class:`~acid_source.errors.InvalidArgumentError` naming the value, which the
Spark edge reports as the option of the same name (:mod:`acid_source.spark.options`)."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

from . import settings
from .errors import InvalidArgumentError
from .layout.partitions import parse_partition_segment

#: a bucket larger than this is read by several tasks
DEFAULT_MAX_SPLIT_BYTES = 256 * 1024 * 1024
#: how a read names the kind of table it expects
TABLE_TYPES = ("auto", "full", "insert_only")
#: How long a read's lease protects its snapshot's files from the cleaner when not given
#: (seconds; a Spark read cannot renew it, AcidScan does).
DEFAULT_READ_LEASE_SECONDS = settings.READ_LEASE_SECONDS.default

#: A static partition: ((column, value), ...); a value is the partition's text (as in a Hive
#: partition spec, unescaped), None for the NULL partition (Hive's default partition).
StaticPartition = tuple[tuple[str, "str | None"], ...]

_SIZE = re.compile(r"^\s*([0-9]{1,19})\s*([kmgt]?)b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def default_read_lease_seconds() -> float:
    """``$ACIDORC_READ_LEASE_SECONDS``, else :data:`DEFAULT_READ_LEASE_SECONDS`."""
    return settings.READ_LEASE_SECONDS.get()


def parse_size(name: str, value: Any) -> int:
    """A number of bytes, or a size such as ``128m`` (k, m, g, t: powers of 1024)."""
    m = _SIZE.match(str(value))
    if not m:
        raise InvalidArgumentError(name, f"expected a size such as 134217728 or 128m, got {value!r}")
    size = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if not 0 < size < 2**63:
        raise InvalidArgumentError(name, f"must be positive and below 2^63 bytes, got {value!r}")
    return size


def parse_version(name: str, value: Any) -> int:
    """A write id (>= 0)."""
    if isinstance(value, bool):
        raise InvalidArgumentError(name, f"expected a write id (an integer >= 0), got {value!r}")
    try:
        version = int(str(value).strip())
    except ValueError:
        raise InvalidArgumentError(name, f"expected a write id (an integer >= 0), got {value!r}") from None
    if not 0 <= version < 2**63:
        raise InvalidArgumentError(name, f"expected a write id (an integer >= 0), got {value!r}")
    return version


def parse_timestamp(name: str, value: Any) -> float:
    """Epoch seconds from a number, a datetime, or an ISO-8601 string (naive means UTC)."""
    if isinstance(value, bool):
        raise InvalidArgumentError(name, f"expected a timestamp, got {value!r}")
    if isinstance(value, (int, float)):
        return _finite_seconds(name, float(value), value)
    if isinstance(value, dt.datetime):
        moment = value
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            seconds = None
        if seconds is not None:
            return _finite_seconds(name, seconds, value)
        try:
            moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidArgumentError(name, "expected an ISO-8601 timestamp such as '2026-11-21 10:30:00' "
                                             f"(UTC unless a zone is given) or epoch seconds, got {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


def _finite_seconds(name: str, seconds: float, value: Any) -> float:
    if not math.isfinite(seconds):
        raise InvalidArgumentError(name, f"expected a finite number of epoch seconds, got {value!r}")
    return seconds


def check_change_range(starting_version: int | None, ending_version: int | None, starting_timestamp: float | None,
                       ending_timestamp: float | None, *, require_start: bool = True) -> None:
    """The rules of a change feed's range: a start (a version or a timestamp, not both; a
    streaming read may start without one), at most one end, and no end before the start."""
    if require_start and starting_version is None and starting_timestamp is None:
        raise InvalidArgumentError("startingVersion", "the change feed needs a start: startingVersion (a write id) "
                                                      "or startingTimestamp")
    if starting_version is not None and starting_timestamp is not None:
        raise InvalidArgumentError("startingTimestamp", "give startingVersion or startingTimestamp, not both")
    if ending_version is not None and ending_timestamp is not None:
        raise InvalidArgumentError("endingTimestamp", "give endingVersion or endingTimestamp, not both")
    if starting_version is not None and ending_version is not None and ending_version < starting_version:
        raise InvalidArgumentError("endingVersion", f"{ending_version} is before startingVersion {starting_version}")
    if starting_timestamp is not None and ending_timestamp is not None and ending_timestamp < starting_timestamp:
        raise InvalidArgumentError("endingTimestamp", f"{_utc_text(ending_timestamp)} is before startingTimestamp "
                                                      f"{_utc_text(starting_timestamp)}")


def _utc_text(seconds: float) -> str:
    try:
        return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):
        return f"{seconds!r} (epoch seconds)"


def parse_partition_spec(text: str, name: str = "partition") -> StaticPartition:
    """``ds=2026-11-21/region=eu`` (or comma-separated) -> ``(("ds", "2026-11-21"), ("region",
    "eu"))``: names and values unescaped, None for Hive's default partition. Whether the
    columns are the table's is checked against the table (:func:`~acid_source.write.rows.static_partition_values`)."""
    pairs = []
    for segment in [s for s in str(text).replace(",", "/").split("/") if s.strip()]:
        parsed = parse_partition_segment(segment.strip())
        if parsed is None:
            raise InvalidArgumentError(name, f"{segment!r} is not of the form column=value")
        pairs.append(parsed)
    return tuple(pairs)
