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
@pytest.mark.timeout(300)  # 1 s on 3.11; on 3.10, loaded, 90 s (two searches, each shrunk)
def test_coordkit_finds_the_schedule_and_it_replays(cls, method):
    seed = case_seed(SUITE.module, cls, method, "pct")
    # Shrinking gets 30 s (SCHED-77's default, 1 s or 5x the time to find, stopped it at 2
    # preemptions on a loaded machine, and the shrunk schedule is compared below); the
    # failure with <= 1 preemption comes within a second, the rest is the proof below it,
    # which on 3.10 takes minutes.
    result, _ = explore_case(SUITE.classes[cls], method, "pct", schedules=200, seed=seed,
                             shrink_budget=30)
    failure = result.failure
    assert failure is not None and failure.kind == "exception", failure
    assert isinstance(failure.exception, AssertionError)
    assert failure.preemptions <= 1  # shrunk: no preemption, or one
    # The same seed finds the same schedule...
    again, _ = explore_case(SUITE.classes[cls], method, "pct", schedules=200, seed=seed,
                            shrink_budget=30)
    assert again.failure is not None and again.failure.trace == failure.trace
    # ...and replaying it fails the same way, every time.
    program = case_program(SUITE.classes[cls], method, seed, [])
    for _ in range(2):
        with pytest.raises(AssertionError, match=re.escape(str(failure.exception)[:30])):
            coordkit.replay(program, failure.trace)
