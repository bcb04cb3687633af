"""Fixtures of the transaction store tests: a store in its own SQLite file, on a clock that
moves only when a test moves it."""

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
def db_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'metastore.db'}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ms(db_url, clock):
    store = Metastore(db_url, clock=clock)
    yield store
    store.close()
