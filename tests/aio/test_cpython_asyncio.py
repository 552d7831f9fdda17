"""CPython's own asyncio tests with the loop swapped (AIO-30; issue 29, item 8).

test_asyncio's test_locks, test_queues, test_timeouts, test_waitfor, test_taskgroups,
test_threads and test_tasks, imported from the interpreter's Lib/test: every test method
runs as the program of ``coordkit.explore`` under random and PCT schedules, on
coordkit's loop and virtual clock (AIO-2, AIO-3, AIO-5, AIO-6; ``tests/aio/cpython.py``
says how, and which tests are skipped or expected to fail, and why).
"""

from __future__ import annotations

import asyncio
import time

import pytest

import coordkit
from tests.aio.cpython import SUITES, asyncio_suite, swapped_new_test_loop

PARAMS = []
for _name, _make in SUITES.items():
    _suite = _make()
    if isinstance(_suite, str):
        PARAMS.append(pytest.param(None, None, None, None, id=f"{_name}-unavailable",
                                   marks=pytest.mark.skip(reason=_suite)))
        continue
    for _param in _suite.params():
        PARAMS.append(pytest.param(_suite, *_param.values, marks=_param.marks,
                                   id=f"{_name}.{_param.id}"))


@pytest.mark.parametrize(("suite", "cls", "method", "strategy"), PARAMS)
def test_cpython_asyncio(suite, cls, method, strategy):
    """AIO-30: the test passes under every schedule explored."""
    suite.run(cls, method, strategy)


def test_the_loops_are_swapped():
    """AIO-30: inside a run, an IsolatedAsyncioTestCase's loop and a test_utils.TestCase's
    ``new_test_loop()`` are coordkit's loop, on the virtual clock (an hour's sleep costs no
    wall time); a test that hands ``new_test_loop`` a time generator skips itself."""
    suite = asyncio_suite("test_locks")
    if isinstance(suite, str):
        pytest.skip(suite)
    seen: list[str] = []

    class Probe(suite.classes["LockTests"]):
        async def test_probe(self) -> None:
            seen.append(type(asyncio.get_running_loop()).__name__)
            await asyncio.sleep(3600)

    class Helper:
        def set_event_loop(self, loop) -> None:
            seen.append(type(loop).__name__)
            loop.close()

    def program() -> None:
        Probe("test_probe").debug()
        swapped_new_test_loop(Helper())
        try:
            swapped_new_test_loop(Helper(), gen=lambda: iter(()))
        except Exception as exc:  # unittest.SkipTest
            seen.append(type(exc).__name__)

    start = time.perf_counter()
    result = coordkit.explore(program, max_schedules=1)
    assert result.failure is None
    assert seen == ["ControlledLoop", "ControlledLoop", "SkipTest"]
    assert time.perf_counter() - start < 30
