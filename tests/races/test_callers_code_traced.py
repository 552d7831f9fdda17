"""The caller's code run at a line point (the invariant) is traced as at any other point:
the engine runs with tracing off at scheduling points, and turns it back on for it."""

from __future__ import annotations

import threading

import coordkit
from tests.sched.programs import needs_line_granularity

MADE_BEFORE = threading.Lock()


@needs_line_granularity
def test_an_invariant_checked_only_at_line_points_is_still_traced():
    def program():  # one thread, no synchronisation: every point is a line point
        x = 1
        x += 1

    def invariant():
        return not MADE_BEFORE.locked()

    result = coordkit.explore(program, seed=1, max_schedules=1, granularity="line",
                              invariant=invariant, shrink=False)
    assert result.failure is None
    assert any("a real threading.Lock created before the run is used" in w and "in invariant" in w
               for w in result.warnings)
