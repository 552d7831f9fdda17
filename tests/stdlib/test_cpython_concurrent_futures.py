"""CPython's Lib/test/test_concurrent_futures.py (item 3 of issue 20): ThreadPoolExecutor (submit,
map, shutdown with wait and cancel_futures, initializers), wait, as_completed and Future.

Every test method runs as the program of ``coordkit.explore`` under random and PCT
schedules (SCHED-21; SCHED-2, SCHED-3, SCHED-6; ``tests/stdlib/cpython.py`` says how).
"""

from __future__ import annotations

import pytest

from tests.stdlib.suites import SUITES

SUITE = SUITES["test_concurrent_futures"]()
PARAMS = ([pytest.param(None, None, None, marks=pytest.mark.skip(reason=SUITE), id="unavailable")]
          if isinstance(SUITE, str) else SUITE.params())


@pytest.mark.parametrize(("cls", "method", "strategy"), PARAMS)
def test_cpython_concurrent_futures(cls, method, strategy):
    SUITE.run(cls, method, strategy)
