"""CPython's Lib/test/lock_tests.py (item 2 of issue 20): Lock, RLock, _thread.RLock, Event,
Condition, Condition as RLock, Semaphore, BoundedSemaphore, Barrier, under the scheduler.

Every test method runs as the program of ``coordkit.explore`` under random and PCT
schedules (SCHED-21; SCHED-2, SCHED-3, SCHED-6; ``tests/stdlib/cpython.py`` says how).
"""

from __future__ import annotations

import pytest

from tests.stdlib.suites import SUITES

SUITE = SUITES["lock_tests"]()
PARAMS = ([pytest.param(None, None, None, marks=pytest.mark.skip(reason=SUITE), id="unavailable")]
          if isinstance(SUITE, str) else SUITE.params())


@pytest.mark.parametrize(("cls", "method", "strategy"), PARAMS)
def test_cpython_lock_tests(cls, method, strategy):
    SUITE.run(cls, method, strategy)
