"""Where stock asyncio is silent, so is coordkit's loop: what CPython's own test_tasks,
run with the loop swapped (AIO-30), found it reporting that asyncio does not."""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import time
import warnings
from unittest import mock

import pytest

import coordkit


def test_a_mock_of_the_base_call_exception_handler_is_what_the_loop_calls():
    """AIO-31: the loop does not override ``call_exception_handler``; a program (or test)
    that patches ``BaseEventLoop.call_exception_handler`` gets what it patched in, and the
    error it swallowed does not fail the run (CPython's test_issue46672)."""
    calls: list[str] = []

    def fn() -> None:
        with mock.patch("asyncio.base_events.BaseEventLoop.call_exception_handler") as handler:
            async def main() -> None:
                asyncio.get_running_loop().call_soon(lambda: 1 / 0)
                await asyncio.sleep(0.1)

            asyncio.run(main())
        calls.extend(call.args[0]["message"] for call in handler.call_args_list)

    result = coordkit.explore(fn, max_schedules=3, seed=1)
    assert result.failure is None
    assert calls and all(message.startswith("Exception in callback") for message in calls)


def test_what_reaches_the_default_exception_handler_still_fails_the_run():
    """AIO-31 (with AIO-6): asyncio's own ``call_exception_handler`` runs, and its call of
    the default handler is the run's failure."""
    async def main() -> None:
        asyncio.get_running_loop().call_soon(lambda: 1 / 0)
        await asyncio.sleep(0.1)

    result = coordkit.explore(main, max_schedules=3, seed=1)
    assert result.failure is not None
    assert "Exception in callback" in result.failure.message


def test_a_task_gather_leaves_pending_at_close_is_not_reported():
    """AIO-32: ``gather`` marks the tasks it wraps coroutines in not to be reported if
    destroyed pending (``_log_destroy_pending = False``), and stock asyncio never reports
    them: closing the loop with one pending is not a failure (CPython's
    CoroutineGatherTests.test_one_exception)."""
    def fn() -> None:
        loop = asyncio.new_event_loop()
        blocker = loop.create_future()

        async def fails() -> None:
            raise ZeroDivisionError

        async def waits() -> None:
            await blocker

        async def main() -> None:
            with contextlib.suppress(ZeroDivisionError):
                await asyncio.gather(fails(), waits())

        loop.run_until_complete(main())
        loop.close()

    result = coordkit.explore(fn, max_schedules=10, seed=1)
    assert result.failure is None


def test_a_task_marked_not_to_report_is_not_reported_but_others_are():
    """AIO-32 (with AIO-6): a task the program marks ``_log_destroy_pending = False`` is not
    reported pending at close; its unmarked twin is."""
    def closes_with_a_pending_task(marked: bool):
        def fn() -> None:
            loop = asyncio.new_event_loop()

            async def forever() -> None:
                await loop.create_future()

            task = loop.create_task(forever(), name="sleeper")
            task._log_destroy_pending = not marked
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()

        return fn

    assert coordkit.explore(closes_with_a_pending_task(True), max_schedules=5, seed=1).failure is None
    result = coordkit.explore(closes_with_a_pending_task(False), max_schedules=5, seed=1)
    assert result.failure is not None
    assert "'sleeper'" in result.failure.message


def test_no_thread_of_a_closed_loop_is_left():
    """AIO-33: the timer actor (AIO-5) ends when its loop closes: once the threads that
    are ending have ended, ``_thread._count()`` is what it was before ``asyncio.run``, as
    with stock asyncio (CPython's threading_cleanup found a thread left by every loop
    whose actor had been offered)."""
    counts: list[tuple[int, int]] = []

    def fn() -> None:
        before = _thread._count()

        async def main() -> None:
            sleeper = asyncio.ensure_future(asyncio.sleep(1))
            await asyncio.sleep(0)  # iterations with a timer pending: the actor is offered
            await asyncio.sleep(0)
            await sleeper

        asyncio.run(main())
        time.sleep(1)  # as threading_cleanup waits for a test's threads to end
        counts.append((before, _thread._count()))

    result = coordkit.explore(fn, max_schedules=20, seed=3)
    assert result.failure is None
    assert counts and all(after == before for before, after in counts)


_SHUTDOWN_TIMES_ITS_JOIN = "timeouts" in (
    asyncio.base_events.BaseEventLoop.shutdown_default_executor.__code__.co_names)


@pytest.mark.skipif(not _SHUTDOWN_TIMES_ITS_JOIN, reason=(
    "this asyncio's shutdown_default_executor times the executor's join with no loop timer "
    "(3.10-3.11 wait without a timeout, 3.12.1 joins the thread with one)"))
def test_asyncio_run_never_warns_that_its_executor_overran_300_seconds():
    """AIO-35: ``asyncio.run``'s 300 s timeout around the default executor's shutdown is
    asyncio's own timer: it never arrives early (AIO-5), so no schedule warns "The executor
    did not finishing joining its threads within 300 seconds" (168 of 200 did before)."""
    async def main() -> None:
        await asyncio.to_thread(time.sleep, 0.1)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = coordkit.explore(main, max_schedules=200, seed=1)
    assert result.failure is None
    assert result.schedules_run == 200
    assert not [w for w in caught if "did not finishing joining" in str(w.message)]
    assert not result.warnings


def test_the_programs_own_timers_still_arrive_early_during_the_shutdown():
    """AIO-35 (with AIO-5): only asyncio's own timers are exempt: a program's timer
    pending while the executor shuts down may still arrive early (the clock then reads 10 s
    on), and asyncio's own 300 s one never does."""
    seen: list[float] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: None)
        loop.call_later(10, lambda: None)  # pending through the shutdown
        await loop.shutdown_default_executor()
        seen.append(loop.time())

    result = coordkit.explore(main, max_schedules=50, seed=1)
    assert result.failure is None
    start = min(seen)
    assert set(seen) == {start, start + 10}
