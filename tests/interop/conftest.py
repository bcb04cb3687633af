"""Fixtures of the interop tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def hive(hive23):
    """Hive 2.3's reader (:class:`interop.hive_reader.HiveAcidReader`), the session's JVM."""
    return hive23


@pytest.fixture(scope="session")
def hive4():
    """One JVM with Hive 4.1's own classes for the whole session (:class:`interop.hive4.Hive4`);
    fetches Hive 4's jars first (``scripts/fetch-hive4``, idempotent)."""
    from interop.hive4 import Hive4, fetch_hive4

    try:
        lib = fetch_hive4()
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    with Hive4(lib) as hive:
        yield hive
