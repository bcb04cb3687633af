"""The checks every store runs on its arguments before it asks its database or server: ids,
seconds, counts and a streaming sink's marks. Bad input is an
:class:`~acid_source.errors.InvalidArgumentError` naming the argument, whichever store got it."""

from __future__ import annotations

import math
import operator

from ..errors import InvalidArgumentError

_SINK_ID_MAX = 1024


def integer_or_none(value) -> int | None:
    """``value`` as an int if it is an integer (numpy's too; not a bool), else None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def as_id(value, what: str) -> int:
    """An integer id argument (bools and floats are refused, numpy integers accepted)."""
    found = integer_or_none(value)
    if found is None:
        raise InvalidArgumentError(what, f"expected an integer id, got {value!r}")
    return found


def as_seconds(value, what: str) -> float:
    """A finite, non-negative number of seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidArgumentError(what, f"expected a number of seconds >= 0, got {value!r}")
    return float(value)


def at_least(value, minimum: int, what: str, expected: str) -> int:
    """An integer argument >= ``minimum``; else the error says ``expected`` of ``what``."""
    found = integer_or_none(value)
    if found is None or found < minimum:
        raise InvalidArgumentError(what, f"{expected}, got {value!r}")
    return found


def batch_size(count) -> int:
    """The number of transactions of a batch: an integer >= 1."""
    return at_least(count, 1, "count", "a transaction batch opens an integer >= 1 of transactions")


def lease_ttl(value) -> float:
    """A lease's time to live: a positive number of seconds."""
    ttl = as_seconds(value, "ttl_seconds")
    if ttl <= 0:
        raise InvalidArgumentError("ttl_seconds", f"a lease lives a positive number of seconds, got {value!r}")
    return ttl


def lease_id_arg(value) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError("lease_id", f"expected a lease id string, got {value!r}")
    return value


def sink_key(sink) -> tuple[str, int]:
    """``(sink_id, batch_id)``: a non-empty string of at most 1024 characters and an integer
    batch id >= 0 (Spark's micro-batches count from 0)."""
    if not isinstance(sink, (tuple, list)) or len(sink) != 2:
        raise InvalidArgumentError("sink", f"expected a tuple (sink_id, batch_id), got {sink!r}")
    sink_id, batch_id = sink
    return sink_id_arg(sink_id), batch_id_arg(batch_id)


def sink_id_arg(sink_id) -> str:
    if not isinstance(sink_id, str) or not sink_id or len(sink_id) > _SINK_ID_MAX:
        raise InvalidArgumentError("sink_id", f"expected a non-empty string of at most {_SINK_ID_MAX} characters, "
                                   f"got {sink_id!r}")
    return sink_id


def batch_id_arg(batch_id) -> int:
    return at_least(batch_id, 0, "batch_id", "expected an integer >= 0")
