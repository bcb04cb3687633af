"""Hypothesis settings shared by the property tests: the same examples on every CI run, and
more of them on demand (ACIDORC_PROPERTY_EXAMPLES replaces each test's default count)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from hypothesis import HealthCheck, settings

SCALE = int(os.environ.get("ACIDORC_PROPERTY_EXAMPLES", "0") or 0)


def examples(default: int, *, suppress: Iterable[HealthCheck] = (), **extra: Any) -> settings:
    """``default`` examples (or ACIDORC_PROPERTY_EXAMPLES); ``suppress`` adds health checks to
    the two every property test suppresses, ``extra`` are further settings (e.g. ``phases``)."""
    return settings(
        derandomize=True,  # CI runs the same examples every time
        deadline=None,
        database=None,
        print_blob=False,
        report_multiple_bugs=False,  # shrink one failure, not every distinct one (keeps CI fast)
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, *suppress],
        max_examples=SCALE or default,
        **extra,
    )
