"""Ports of real, fixed upstream races: each found with no option set, each fix clean.

The default options (``coordkit.explore(fn)``: auto granularity, race reports, PCT) must
find every buggy port within its default budget of schedules, and must pass the fixed
version with no failure and no race reported (RACE-5: racing sites become scheduling
points; RACE-1: a race is reported only when the accesses are unordered).
"""

from __future__ import annotations

import pytest

import coordkit
from tests.realbugs.ccalls import C_CALL_BUGS
from tests.realbugs.programs import REAL_BUGS
from tests.realbugs.stdlib import STDLIB_BUGS
from tests.sched.programs import needs_switching

# C_CALL_BUGS: races made inside C calls (RACE-10); STDLIB_BUGS: inside the stdlib's
# Python code (RACE-12)
BUGS = REAL_BUGS + C_CALL_BUGS + STDLIB_BUGS

IDS = [bug.id for bug in BUGS]


@needs_switching
@pytest.mark.parametrize("bug", BUGS, ids=IDS)
def test_the_bug_is_found_at_defaults(bug):
    # RACE-5: no option but a fixed seed (the budget is explore's default)
    result = coordkit.explore(bug.buggy, seed=1)
    assert result.failure is not None, f"{bug.id} ({bug.citation}) not found: {result}"


@pytest.mark.parametrize("bug", BUGS, ids=IDS)
def test_the_fixed_version_is_clean(bug):
    # RACE-1: no failure in the fixed version, and no race where the fix orders the accesses
    result = coordkit.explore(bug.fixed, seed=1, max_schedules=300)
    assert result.failure is None, f"{bug.id}: {result.failure}"
    assert result.warnings == [], f"{bug.id}: {result.warnings}"
    if bug.lock_free_fix:
        assert result.races, f"{bug.id}: a GIL-atomic fix leaves unordered accesses"
    else:
        assert result.races == [], f"{bug.id}: {result.races}"


def test_the_set_covers_the_styles_that_matter():
    styles = {bug.style for bug in BUGS}
    assert len(REAL_BUGS) >= 16 and len(C_CALL_BUGS) >= 10 and len(STDLIB_BUGS) >= 4
    assert {"heap shared", "check-then-pop", "generator shared"} <= styles
    assert {"loop flag", "handler state"} <= styles
    assert {"check-then-act", "lazy init", "counter", "stop flag", "mutated while iterated",
            "join then read", "shutdown vs work", "double shutdown"} <= styles
