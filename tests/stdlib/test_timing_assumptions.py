"""Two of CPython's ThreadPoolExecutor tests assert what only the OS's usual timing gives.

No interleaving of the stdlib's code guarantees what they check; coordkit finds a
schedule where the assertion fails, and that schedule replays (SCHED-16, SCHED-17,
TRACE-3).  In the suite they are expected failures (``suites.futures_suite``'s
``timing``); here the finding itself is the test.
"""

from __future__ import annotations

import re

import pytest

import coordkit
from tests.stdlib.cpython import case_program, case_seed, explore_case
from tests.stdlib.suites import futures_suite

SUITE = futures_suite()
pytestmark = pytest.mark.skipif(isinstance(SUITE, str), reason=str(SUITE))
CASES = [] if isinstance(SUITE, str) else sorted(SUITE.timing)


@pytest.mark.parametrize(("cls", "method"), CASES, ids=[f"{c}.{m}" for c, m in CASES])
def test_coordkit_finds_the_schedule_and_it_replays(cls, method):
    seed = case_seed(SUITE.module, cls, method, "pct")
    # Shrinking unbounded in time (SCHED-77's default bound is in seconds): under load a
    # bounded one stops early, and the shrunk schedule, compared below, would depend on it.
    result, _ = explore_case(SUITE.classes[cls], method, "pct", schedules=200, seed=seed,
                             shrink_budget=None)
    failure = result.failure
    assert failure is not None and failure.kind == "exception", failure
    assert isinstance(failure.exception, AssertionError)
    assert failure.preemptions <= 1  # shrunk: no preemption, or one
    # The same seed finds the same schedule...
    again, _ = explore_case(SUITE.classes[cls], method, "pct", schedules=200, seed=seed,
                            shrink_budget=None)
    assert again.failure is not None and again.failure.trace == failure.trace
    # ...and replaying it fails the same way, every time.
    program = case_program(SUITE.classes[cls], method, seed, [])
    for _ in range(2):
        with pytest.raises(AssertionError, match=re.escape(str(failure.exception)[:30])):
            coordkit.replay(program, failure.trace)
