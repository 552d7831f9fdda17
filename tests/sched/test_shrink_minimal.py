"""Shrinking ends with a bounded search below the shrunk preemptions (SCHED-39)."""

from __future__ import annotations

import pytest

import coordkit
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.shrink import confirm_minimal
from tests.sched import programs

CASES = [
    (programs.lock_order_deadlock, {}),
    (programs.missed_notify, {}),
    pytest.param(programs.lost_update, {"granularity": "line"},
                 marks=programs.needs_line_granularity),
]


@pytest.mark.parametrize(("program", "options"), CASES)
@pytest.mark.parametrize("strategy", ["pct", "random", "dfs"])
def test_a_shrunk_failure_says_it_is_minimal(program, options, strategy):
    """SCHED-39: "minimal (k preemptions)", and no schedule with fewer fails that way."""
    result = coordkit.explore(program, strategy=strategy, seed=3, max_schedules=500, **options)
    failure = result.failure
    assert failure is not None
    k = failure.preemptions
    assert failure.minimality == f"minimal ({k} preemption{'' if k == 1 else 's'})"
    assert failure.minimality in str(failure)
    if k:
        below = coordkit.explore(program, strategy="dfs", max_preemptions=k - 1,
                                 max_schedules=100_000, **options)
        assert below.exhausted and (below.failure is None or below.failure.kind != failure.kind)


def test_a_search_cut_short_says_so():
    """SCHED-39: "k preemptions, none found with fewer in N schedules"."""
    found = coordkit.explore(programs.lock_order_deadlock, strategy="dfs", seed=1).failure
    assert found is not None and found.preemptions == 1
    with Session(RunOptions()) as session:  # one schedule (it passes) is all it may run
        _, statement, runs = session.call(lambda: confirm_minimal(
            session, programs.lock_order_deadlock, found.report.failure, [], 3, max_runs=1,
            time_budget=10.0))
    assert runs == 1 and statement == "3 preemptions, none found with fewer in 1 schedules"
