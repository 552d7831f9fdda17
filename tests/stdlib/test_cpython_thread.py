"""CPython's Lib/test/test_thread.py (item 1 of issue 20): _thread.start_new_thread, allocate_lock
and _count, controlled like threading.Thread.

Every test method runs as the program of ``coordkit.explore`` under random and PCT
schedules (SCHED-21; SCHED-2, SCHED-3, SCHED-6; ``tests/stdlib/cpython.py`` says how).
"""

from __future__ import annotations

import pytest

from tests.stdlib.suites import SUITES

SUITE = SUITES["test_thread"]()
PARAMS = ([pytest.param(None, None, None, marks=pytest.mark.skip(reason=SUITE), id="unavailable")]
          if isinstance(SUITE, str) else SUITE.params())


@pytest.mark.parametrize(("cls", "method", "strategy"), PARAMS)
def test_cpython_thread(cls, method, strategy):
    SUITE.run(cls, method, strategy)
