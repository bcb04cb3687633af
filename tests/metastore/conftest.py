"""Fixtures of the transaction store tests: a fresh store on each backend (its own SQLite file,
its own database on the test PostgreSQL server: ``store_url``, tests/servers/postgres.py), on a
clock that moves only when a test moves it. A test about SQLite itself is marked
``@sqlite_only``."""

from __future__ import annotations

import pytest

from acid_source.metastore import Metastore


class FakeClock:
    """Epoch seconds that only move when told to."""

    def __init__(self, now: float = 1_700_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def db_url(store_url) -> str:
    return store_url


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ms(db_url, clock):
    store = Metastore(db_url, clock=clock)
    yield store
    store.close()

