"""Ports of real, fixed asyncio bugs: each found at explore's defaults and replayed, each
fixed twin clean (AIO-5: timers arrive as real time could make them)."""

from __future__ import annotations

import sys

import pytest

import coordkit
from coordkit.errors import Deadlock
from tests.aio.realbugs.catalog import ALL_BUGS


def _param(bug):
    needs = bug.min_python
    skip = pytest.mark.skipif(
        sys.version_info < needs,
        reason=f"{bug.id} needs Python {needs[0]}.{needs[1]}+ (Task.uncancel)")
    return pytest.param(bug, id=bug.id, marks=skip)


BUGS = [_param(bug) for bug in ALL_BUGS]


def test_the_set_has_twelve_distinct_bugs():
    """Issue 29 item 9: at least 12 ports, each with its citation."""
    assert len({bug.id for bug in ALL_BUGS}) == len(ALL_BUGS) >= 12
    assert all(bug.citation for bug in ALL_BUGS)


@pytest.mark.parametrize("bug", BUGS)
def test_the_bug_is_found_at_defaults_and_replays(bug):
    """AIO-5: no option but a fixed seed (the budget is explore's default)."""
    assert coordkit.run(bug.buggy) is None, "stock asyncio's own order shows no bug"
    result = coordkit.explore(bug.buggy, seed=1)
    failure = result.failure
    assert failure is not None, f"{bug.id} ({bug.citation}) not found: {result}"
    assert failure.schedules_run <= 1000
    expected = Deadlock if failure.kind == "deadlock" else type(failure.exception)
    with pytest.raises(expected):
        coordkit.replay(bug.buggy, failure.trace)


@pytest.mark.parametrize("bug", BUGS)
def test_the_fixed_twin_is_clean(bug):
    """AIO-5: the fix passes every schedule explored."""
    result = coordkit.explore(bug.fixed, seed=1, max_schedules=300)
    assert result.failure is None, f"{bug.id}: {result.failure}"
