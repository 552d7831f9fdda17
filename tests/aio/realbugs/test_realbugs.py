"""Ports of real, fixed asyncio bugs: each found at explore's defaults and replayed, each
fixed twin clean (AIO-5: timers arrive as real time could make them)."""

from __future__ import annotations

import pytest

import coordkit
from tests.aio.realbugs.programs import REAL_BUGS

IDS = [bug.id for bug in REAL_BUGS]


@pytest.mark.parametrize("bug", REAL_BUGS, ids=IDS)
def test_the_bug_is_found_at_defaults_and_replays(bug):
    """AIO-5: no option but a fixed seed (the budget is explore's default)."""
    assert coordkit.run(bug.buggy) is None, "stock asyncio's own order shows no bug"
    result = coordkit.explore(bug.buggy, seed=1)
    assert result.failure is not None, f"{bug.id} ({bug.citation}) not found: {result}"
    with pytest.raises(type(result.failure.exception)):
        coordkit.replay(bug.buggy, result.failure.trace)


@pytest.mark.parametrize("bug", REAL_BUGS, ids=IDS)
def test_the_fixed_twin_is_clean(bug):
    """AIO-5: the fix passes every schedule explored."""
    result = coordkit.explore(bug.fixed, seed=1, max_schedules=300)
    assert result.failure is None, f"{bug.id}: {result.failure}"
