"""Budgets hold for every strategy (SCHED-61), shrinking included (SCHED-62), and a
Hypothesis search raises the recursion limit once (SCHED-63).

The budget's clock is replaced by one the program moves on by a second per run, so the
tests measure runs, not real time."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

import coordkit
from coordkit.engine import search
from tests.sched.search_clock import SearchClock

STRATEGIES: list[tuple[str, dict[str, Any]]] = [
    ("random", {}),
    ("pct", {}),
    ("dfs", {"max_preemptions": None}),  # DPOR
    ("dfs", {"max_preemptions": 2}),  # bounded
    ("hypothesis", {}),
]
IDS = ["random", "pct", "dpor", "bounded", "hypothesis"]


def many_schedules(clock: SearchClock, *, fail: bool = False) -> Any:
    """Three threads taking a lock twice each: far more than ten schedules (and classes).
    With ``fail``, a lost update fails the run, and the clock jumps past any budget."""

    def program() -> None:
        clock.now += 1.0
        lock = threading.Lock()
        total = [0]

        def work() -> None:
            with lock:
                seen = total[0]
            with lock:
                total[0] = seen + 1

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if fail and total[0] != 3:
            clock.now += 1000.0
            raise AssertionError(f"lost update: {total[0]}")

    return program


@pytest.mark.parametrize(("strategy", "options"), STRATEGIES, ids=IDS)
def test_time_budget_holds_within_one_run(clock, strategy, options):
    """SCHED-61: no run starts once time_budget is spent, whatever the strategy."""
    result = coordkit.explore(many_schedules(clock), strategy=strategy, seed=1,
                              time_budget=5.0, max_schedules=1000, **options)
    assert result.ok and not result.exhausted
    assert result.schedules_run == 5
    assert result.elapsed == 5.0


@pytest.mark.parametrize(("strategy", "options"), STRATEGIES, ids=IDS)
def test_max_schedules_holds(clock, strategy, options):
    """SCHED-61: ``max_schedules`` runs are searched, no more, whatever the strategy."""
    result = coordkit.explore(many_schedules(clock), strategy=strategy, seed=1,
                              max_schedules=7, **options)
    assert result.ok and not result.exhausted
    assert result.schedules_run == 7 == clock.now


@pytest.mark.parametrize(("strategy", "options"), STRATEGIES, ids=IDS)
def test_shrinking_stops_at_the_time_budget_and_says_so(clock, strategy, options):
    """SCHED-62: a failure found when the budget is spent is not shrunk; it is replayed once,
    recorded, and the result says that shrinking stopped."""
    program = many_schedules(clock, fail=True)
    result = coordkit.explore(program, strategy=strategy, seed=1, time_budget=500.0,
                              max_schedules=1000, **options)
    failure = result.failure
    assert failure is not None and "lost update" in failure.message
    assert failure.shrink_runs == 0
    assert failure.minimality == search.SHRINK_STOPPED and not failure.minimal
    assert "shrinking stopped at time_budget" in failure.headline()
    # The search runs, then the one recorded replay of the failure: nothing more.
    assert clock.now == result.schedules_run + 1 + 2 * 1000.0


def test_shrinking_within_the_budget_is_unchanged(clock):
    """SCHED-62: with time left, shrinking and its confirmation run as before (with no
    shrink bound of their own, SCHED-77: a failing run here takes 1000 s)."""
    program = many_schedules(clock, fail=True)
    result = coordkit.explore(program, strategy="random", seed=1, time_budget=1e9,
                              shrink_budget=None)
    assert result.failure is not None and result.failure.minimal


def test_a_hypothesis_search_raises_the_recursion_limit_once(monkeypatch):
    """SCHED-63: the engine's recursion raise is made once around a Hypothesis search, not
    in each example (Hypothesis warns when an example leaves a limit it did not set)."""
    real = sys.setrecursionlimit
    by_coordkit: list[int] = []

    def counting(limit: int) -> None:
        if sys._getframe(1).f_globals["__name__"] == "coordkit.engine.recursion":
            by_coordkit.append(limit)
        real(limit)

    monkeypatch.setattr(sys, "setrecursionlimit", counting)
    before = sys.getrecursionlimit()
    result = coordkit.explore(lambda: None, strategy="hypothesis", max_schedules=10, seed=1)
    assert result.ok and result.schedules_run == 10
    assert len(by_coordkit) == 2  # raised, then put back
    assert sys.getrecursionlimit() == before
