"""CPython's lock_tests and test_queue at ``explore``'s defaults (issue 34 item 4).

The other files here pin ``granularity="sync", races="ignore"``: their subject is the
stdlib's behaviour under the scheduler (SCHED-21).  A user's suite runs at the defaults
(``auto``, races reported), so this slice runs there too, under PCT: every test method of
the two modules but the many-thread SimpleQueue ones (seconds a run at auto, where race
detection traces each of their polls), of which ``test_many_threads_timeout`` runs once
here.  Each must pass and leave no thread behind (SCHED-13, SCHED-64).  About 4 s.
"""

from __future__ import annotations

import pytest

from tests.stdlib.suites import SUITES

DEFAULTS = {"granularity": "auto", "races": "report"}
MANY_THREADS = ("test_many_threads", "test_many_threads_nonblock", "test_many_threads_timeout")


def _params() -> list:
    out = []
    for name in ("lock_tests", "test_queue"):
        suite = SUITES[name]()
        if isinstance(suite, str):
            out.append(pytest.param(None, None, marks=pytest.mark.skip(reason=suite), id=name))
            continue
        out += [pytest.param(suite, *p.values[:2], marks=p.marks, id=f"{name}.{p.id}")
                for p in suite.params(strategies=("pct",)) if p.values[1] not in MANY_THREADS]
    return out


@pytest.mark.parametrize(("suite", "cls", "method"), _params())
def test_cpython_at_the_defaults(suite, cls, method):
    result = suite.run(cls, method, "pct", **DEFAULTS)
    assert result.leaked_threads == []


def test_many_threads_timeout_at_the_defaults():
    """100 threads polling a SimpleQueue with ``get(timeout=1e-5)``: one run, which passes
    and ends every thread.  Its run takes 5-7 s at auto on a loaded 2-core machine, near
    the default ``run_timeout`` of 10 s (past it, the run ends as a slow one: SCHED-64), so
    it is given 120 s, as the suite gives the nonblock variant."""
    suite = SUITES["test_queue"]()
    if isinstance(suite, str):
        pytest.skip(suite)
    result = suite.run("CSimpleQueueTest", "test_many_threads_timeout", "pct", schedules=1,
                       run_timeout=120.0, **DEFAULTS)
    assert result.schedules_run == 1 and result.leaked_threads == []
