"""Cancellation safety (AIO-40..43): each task cancelled at each await it suspends at, as an
outside timeout or a shutdown would; what broke is reported with the cancellation."""

from __future__ import annotations

import asyncio
import re

import pytest

import coordkit
from coordkit.engine.trace import Schedule


def _line_of(marker: str) -> int:
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if line.rstrip().endswith(marker))


def guarded(*, safe: bool):
    """A worker holds a lock and a busy count across an await; main cancels nothing itself,
    waits for the worker, then needs the lock back and the count at 0.  The bug: without
    ``async with``/``try``-``finally``, a worker cancelled at its await keeps the lock and
    leaves the count up."""

    async def main() -> None:
        lock = asyncio.Lock()
        busy = [0]

        async def fetch() -> None:
            if safe:
                async with lock:
                    busy[0] += 1
                    try:
                        await asyncio.sleep(1)
                    finally:
                        busy[0] -= 1
            else:
                await lock.acquire()
                busy[0] += 1
                await asyncio.sleep(1)  # the unsafe await
                busy[0] -= 1
                lock.release()

        task = asyncio.create_task(fetch())
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.wait_for(lock.acquire(), 5)
        assert busy[0] == 0, f"busy count left at {busy[0]}"

    return main


def counted(*, safe: bool):
    """Two workers count themselves in before an await and out after it; the fix counts
    out in a ``finally``, so a cancellation at the await cannot skip it."""

    async def main() -> None:
        active = [0]

        async def step() -> None:
            await asyncio.sleep(0.5)

        async def worker() -> None:
            active[0] += 1
            if safe:
                try:
                    await step()
                finally:
                    active[0] -= 1
            else:
                await step()
                active[0] -= 1

        tasks = [asyncio.create_task(worker()) for _ in range(2)]
        await asyncio.gather(*tasks, return_exceptions=True)
        assert active[0] == 0, f"{active[0]} worker(s) never counted out"

    return main


def test_a_lock_held_across_an_await_without_finally_is_found_and_named():
    """AIO-40, AIO-41, AIO-42: the worker cancelled at its await keeps the lock; the report
    names the task, its coroutine, the await's file:line, and what failed; the failure
    needs exactly one cancellation and its trace replays it."""
    result = coordkit.explore(guarded(safe=False), cancel="tasks")
    failure = result.failure
    assert failure is not None, "the unsafe cancellation was not found"
    text = str(failure)
    at = f"test_cancel.py:{_line_of('# the unsafe await')} in fetch"
    assert f"It depends on this: cancelled Task-2 'fetch' at {at}, while it waited." in text
    assert "TimeoutError" in text  # main never gets the lock back
    assert failure.report.deviations == [f"cancelled Task-2 'fetch' at {at}, while it waited"]
    assert failure.preemptions == 1  # one cancellation, nothing else
    assert Schedule.decode(failure.trace).cancel
    with pytest.raises(asyncio.TimeoutError):
        coordkit.replay(guarded(safe=False), failure.trace)


def test_the_lock_held_in_async_with_is_clean_and_the_count_of_points_is_stated():
    """AIO-41: the fixed twin passes every cancellation, and an exhausted search says how
    many (task, suspension point) pairs it covered."""
    result = coordkit.explore(guarded(safe=True), cancel="tasks")
    assert result.failure is None, result.failure
    assert result.exhausted
    assert not result.warnings
    # Task-1 (main) at gather and at its wait for the lock, Task-2 at its sleep: waiting,
    # and woken before it resumed.
    match = re.search(r"every cancellation point: (\d+) \(task, suspension point\)",
                      result.coverage or "")
    assert match is not None, result.coverage
    n = int(match.group(1))
    assert n >= 3
    assert result.schedules_run == n + 1  # the program's own order, then one per pair
    assert f"every cancellation point: {n} (task, suspension point) pair(s)" in str(result)


def test_a_count_across_an_await_is_found_and_finally_fixes_it():
    """AIO-40, AIO-42: a counter incremented before an await and decremented after it is
    left up by a cancellation there; counted out in a ``finally`` it is clean."""
    result = coordkit.explore(counted(safe=False), cancel="tasks")
    assert result.failure is not None
    assert "never counted out" in str(result.failure)
    assert "It depends on this: cancelled Task-" in str(result.failure)
    clean = coordkit.explore(counted(safe=True), cancel="tasks")
    assert clean.failure is None, clean.failure
    assert clean.exhausted


def test_a_program_cancelled_from_outside_may_end_in_cancelled_error():
    """AIO-42: the main task cancelled at its await ends ``asyncio.run`` with
    CancelledError, which is what cancellation asks of it: not a failure."""
    async def main() -> None:
        await asyncio.sleep(1)

    result = coordkit.explore(main, cancel="tasks")
    assert result.failure is None, result.failure
    assert result.schedules_run == 3  # own order; main cancelled waiting, and woken


def test_no_task_to_cancel_says_zero_points_were_checked():
    """AIO-43: a program with no task suspended at an await is never a silent pass."""
    def threads_only() -> None:
        pass

    result = coordkit.explore(threads_only, cancel="tasks")
    assert result.failure is None
    assert "every cancellation point: 0 (task, suspension point) pair(s)" in result.coverage
    assert any("checked 0 cancellation points" in w for w in result.warnings)
    assert "no failure seen (but see the warnings)" in str(result)


def test_a_bad_cancel_value_is_a_clear_error():
    """AIO-41: ``cancel`` is None or ``"tasks"``; anything else names the argument."""
    with pytest.raises(ValueError, match=r"cancel must be None or 'tasks', got 'all'"):
        coordkit.explore(lambda: None, cancel="all")


def test_the_cancel_flag_survives_the_trace_string():
    """AIO-40: a trace records that its runs offered cancellations, so replay offers them."""
    schedule = Schedule(((2, 1),), cancel=True)
    assert Schedule.decode(schedule.encode()).cancel
    assert not Schedule.decode(Schedule(((2, 1),)).encode()).cancel
    assert "cancel='tasks'" in schedule.describe()


def test_the_viewers_passing_neighbour_keeps_the_loop_options():
    """AIO-40, AIO-44: the viewer's neighbour of a schedule (VIEW-4) offers the same
    cancellations and reorderings, or it could not replay."""
    from coordkit.viewer.model import neighbour_schedule

    found = neighbour_schedule(Schedule(((2, 0), (3, 1)), cancel=True, adversarial=True))
    assert found is not None
    neighbour, point = found
    assert (neighbour.cancel, neighbour.adversarial, point) == (True, True, 1)
