"""Fixtures of tests/sched."""

from __future__ import annotations

import pytest

from coordkit.engine import search
from tests.sched.search_clock import SearchClock


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> SearchClock:
    """The exploration's clock (``search.clock``, SCHED-63), a ``SearchClock`` for the test."""
    fake = SearchClock()
    monkeypatch.setattr(search, "clock", fake)
    return fake
