"""Every loop a run's program makes is coordkit's (AIO-2), on the run's clock (AIO-3)."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import warnings

import pytest

import coordkit
from coordkit.engine.aio.loop import ControlledLoop

needs_runner = pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.Runner is 3.11+")


def test_asyncio_run_runs_on_coordkits_loop():
    """AIO-2: ``asyncio.run`` inside a run makes coordkit's loop."""
    async def main() -> type:
        return type(asyncio.get_running_loop())

    assert coordkit.run(lambda: asyncio.run(main())) is ControlledLoop


def test_new_event_loop_and_run_until_complete():
    """AIO-2: ``new_event_loop()`` + ``run_until_complete`` is coordkit's loop."""
    async def main() -> str:
        await asyncio.sleep(1)
        return "slept"

    def fn() -> tuple[type, str]:
        loop = asyncio.new_event_loop()
        try:
            return type(loop), loop.run_until_complete(main())
        finally:
            loop.close()

    assert coordkit.run(fn) == (ControlledLoop, "slept")


@needs_runner
def test_runner():
    """AIO-2: ``asyncio.Runner`` (3.11+) makes coordkit's loop."""
    def fn() -> type:
        with asyncio.Runner() as runner:
            return type(runner.get_loop())

    assert coordkit.run(fn) is ControlledLoop


def test_get_event_loop_in_the_main_thread_and_set_event_loop_per_thread():
    """AIO-2: the current loop (``get_event_loop``/``set_event_loop``) is per controlled
    thread and per run: a worker has none until it sets one."""
    def fn() -> list[object]:
        seen: list[object] = []
        main_loop = asyncio.get_event_loop()
        seen.append(type(main_loop))

        def worker() -> None:
            try:
                asyncio.get_event_loop()
            except RuntimeError as exc:
                seen.append("no loop" if "no current event loop" in str(exc) else exc)
            own = asyncio.new_event_loop()
            asyncio.set_event_loop(own)
            seen.append(asyncio.get_event_loop() is own)
            own.close()

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        seen.append(asyncio.get_event_loop() is main_loop)
        main_loop.close()
        return seen

    with warnings.catch_warnings():  # get_event_loop() with no running loop: deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        assert coordkit.run(fn) == [ControlledLoop, "no loop", True, True]


def test_nothing_of_asyncio_is_touched_outside_a_run():
    """AIO-2: after a run, the policy's methods are asyncio's own and a new loop is not ours."""
    policy = asyncio.events.BaseDefaultEventLoopPolicy
    before = (policy.new_event_loop, policy.get_event_loop, policy.set_event_loop)
    coordkit.explore(lambda: asyncio.run(asyncio.sleep(0)), max_schedules=2)
    assert (policy.new_event_loop, policy.get_event_loop, policy.set_event_loop) == before
    loop = asyncio.new_event_loop()
    try:
        assert not isinstance(loop, ControlledLoop)
    finally:
        loop.close()


def test_a_loop_per_thread_each_sees_its_own_running_loop():
    """AIO-2: two controlled threads each running a loop: each sees its own running loop,
    and a thread running none sees none (asyncio keeps it per OS thread, which every
    controlled thread shares)."""
    def fn() -> None:
        errors: list[BaseException] = []

        async def spin(me: list[object]) -> None:
            for _ in range(5):
                me.append(asyncio.get_running_loop())
                await asyncio.sleep(0.01)

        def thread_body() -> None:
            try:
                mine: list[object] = []
                asyncio.run(spin(mine))
                assert len(set(map(id, mine))) == 1
            except BaseException as exc:
                errors.append(exc)

        def bystander() -> None:
            for _ in range(5):
                time.sleep(0.005)
                try:
                    asyncio.get_running_loop()
                    errors.append(AssertionError("a thread running no loop saw one"))
                except RuntimeError:
                    pass

        threads = [threading.Thread(target=thread_body), threading.Thread(target=thread_body),
                   threading.Thread(target=bystander)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors

    result = coordkit.explore(fn, max_schedules=50)
    assert result.failure is None, result.failure


def test_loop_time_is_the_virtual_monotonic_clock_and_sleeping_costs_no_real_time():
    """AIO-3: ``loop.time() == time.monotonic()``; ``sleep(3600)`` takes an hour of virtual
    time and no real time."""
    async def main() -> float:
        loop = asyncio.get_running_loop()
        assert loop.time() == time.monotonic()
        start = loop.time()
        await asyncio.sleep(3600)
        assert loop.time() == time.monotonic()
        return loop.time() - start

    started = time.perf_counter()
    assert coordkit.run(main) == pytest.approx(3600)
    assert time.perf_counter() - started < 5


def test_wait_for_times_out_in_virtual_time():
    """AIO-3: ``wait_for`` fires at its virtual deadline."""
    async def main() -> float:
        start = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.sleep(100), timeout=2.5)
        return time.monotonic() - start

    assert coordkit.run(main) == pytest.approx(2.5)


@needs_runner
def test_timeout_fires_in_virtual_time():
    """AIO-3: ``asyncio.timeout`` (3.11+) fires at its virtual deadline."""
    async def main() -> float:
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(7):
                await asyncio.Event().wait()
        return time.monotonic() - start

    assert coordkit.run(main) == pytest.approx(7)


def test_a_loop_with_nothing_to_do_is_a_deadlock_not_a_hang():
    """AIO-3: awaiting a future nobody resolves blocks the loop's thread in a controlled
    wait: every thread blocked is a deadlock, reported, never a hang."""
    async def main() -> None:
        await asyncio.get_running_loop().create_future()

    result = coordkit.explore(main, max_schedules=2, run_timeout=5)
    assert result.failure is not None
    assert result.failure.kind == "deadlock"
    assert "EventLoop#1 select" in str(result.failure)


def test_threads_and_the_loop_share_one_clock():
    """AIO-3: a thread's ``time.sleep`` and the loop's timers fire in deadline order."""
    async def main() -> list[str]:
        order: list[str] = []

        def worker() -> None:
            time.sleep(1.5)
            order.append("thread woke at 1.5")

        t = threading.Thread(target=worker)
        t.start()
        await asyncio.sleep(1)
        order.append("loop woke at 1")
        await asyncio.sleep(1)
        order.append("loop woke at 2")
        t.join()
        return order

    assert coordkit.run(main) == ["loop woke at 1", "thread woke at 1.5", "loop woke at 2"]


def test_call_soon_threadsafe_wakes_the_parked_loop():
    """AIO-4: a thread's ``call_soon_threadsafe`` wakes the loop parked in its select."""
    async def main() -> int:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        t = threading.Thread(target=lambda: loop.call_soon_threadsafe(fut.set_result, 42))
        t.start()
        value = await fut
        t.join()
        return value

    result = coordkit.explore(main, max_schedules=30)
    assert result.failure is None, result.failure
    assert coordkit.run(main) == 42


def test_executor_threads_are_controlled():
    """AIO-3: the default executor, ``to_thread`` and ``run_in_executor`` run on
    controlled threads (they block in virtual time, and their names are the run's)."""
    async def main() -> list[object]:
        loop = asyncio.get_running_loop()

        def work(n: int) -> tuple[int, str]:
            time.sleep(10)  # virtual: costs nothing
            return n, threading.current_thread().name

        a = await asyncio.to_thread(work, 1)
        b = await loop.run_in_executor(None, work, 2)
        return [a, b, time.monotonic()]

    started = time.perf_counter()
    a, b, _ = coordkit.run(main)
    assert time.perf_counter() - started < 5
    assert a[0] == 1 and b[0] == 2
    assert a[1].startswith("asyncio_") and b[1].startswith("asyncio_")


def test_the_issues_measured_program_runs():
    """AIO-3 (issue 29, measured): ``asyncio.run(main())`` gathering two tasks over a Queue,
    sleeping 0.1 s, calling ``to_thread``, used to time out in ``selectors.select``."""
    def fn() -> None:
        async def main() -> int:
            q: asyncio.Queue[int | None] = asyncio.Queue()
            got: list[int] = []

            async def producer() -> None:
                for i in range(3):
                    await q.put(i)
                await q.put(None)

            async def consumer() -> None:
                while (x := await q.get()) is not None:
                    got.append(x)

            await asyncio.gather(producer(), consumer())
            await asyncio.sleep(0.1)
            return await asyncio.to_thread(sum, got)

        assert asyncio.run(main()) == 3

    started = time.perf_counter()
    result = coordkit.explore(fn, max_schedules=100, run_timeout=5)
    assert result.failure is None, result.failure
    assert result.schedules_run == 100 or result.exhausted
    assert time.perf_counter() - started < 30
