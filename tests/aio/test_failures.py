"""What asyncio only logs is a run's failure, through the engine's one failure mapping
(AIO-6); a deadlock across tasks and threads is reported, never a hang (AIO-7)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time

import pytest

import coordkit


def test_an_exception_in_a_callback_fails_the_run():
    """AIO-6: "Exception in callback" (asyncio logs it and goes on) fails the run."""
    async def main() -> None:
        asyncio.get_running_loop().call_soon(lambda: 1 / 0)
        await asyncio.sleep(0.1)

    result = coordkit.explore(main, max_schedules=5)
    assert result.failure is not None
    assert "Exception in callback" in result.failure.message
    assert "ZeroDivisionError" in result.failure.message
    with pytest.raises(ZeroDivisionError):
        coordkit.replay(main, result.failure.trace)


def _submitted_with_a_failing_callback() -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(lambda: 1)
        future.add_done_callback(lambda done: 1 / 0)
        future.result()


def _done_then_a_failing_callback() -> None:
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    future.set_result(1)
    future.add_done_callback(lambda done: 1 / 0)  # called at once, by the caller


@pytest.mark.parametrize("program", [_submitted_with_a_failing_callback,
                                     _done_then_a_failing_callback])
def test_a_concurrent_futures_done_callbacks_exception_fails_the_run(program, caplog):
    """AIO-36: a done callback's exception, which ``concurrent.futures`` only logs
    ("exception calling callback for ..."), fails the run (whichever thread runs the
    callback), and its replay raises it; nothing is logged."""
    with caplog.at_level(logging.ERROR, logger="concurrent.futures"):
        result = coordkit.explore(program, max_schedules=10, seed=1)
        failure = result.failure
        assert failure is not None
        assert failure.message == ("exception calling callback for a Future: "
                                   "ZeroDivisionError: division by zero")
        with pytest.raises(ZeroDivisionError):
            coordkit.replay(program, failure.trace)
    assert not caplog.records


def test_an_asyncio_futures_done_callbacks_exception_fails_the_run():
    """AIO-36 (with AIO-6): an asyncio ``Future``'s done callback runs as a loop callback:
    its exception ("Exception in callback") fails the run."""
    async def main() -> None:
        future = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda done: 1 / 0)
        future.set_result(1)
        await asyncio.sleep(0)

    result = coordkit.explore(main, max_schedules=5, seed=1)
    assert result.failure is not None
    assert "Exception in callback" in result.failure.message
    with pytest.raises(ZeroDivisionError):
        coordkit.replay(main, result.failure.trace)


def test_a_task_exception_never_retrieved_fails_the_run():
    """AIO-6: a task that raised and was never awaited fails the run."""
    async def main() -> None:
        async def boom() -> None:
            raise KeyError("lost in a task")

        asyncio.get_running_loop().create_task(boom())  # no reference kept, never awaited
        await asyncio.sleep(0.1)

    result = coordkit.explore(main, max_schedules=5, seed=6)
    assert result.failure is not None
    assert "Task exception was never retrieved" in result.failure.message
    assert "lost in a task" in result.failure.message


def test_a_coroutine_never_awaited_fails_the_run():
    """AIO-6: a coroutine never awaited fails the run (Python only warns)."""
    async def helper() -> None:
        pass

    async def main() -> None:
        helper()  # forgot the await
        await asyncio.sleep(0)

    result = coordkit.explore(main, max_schedules=5)
    assert result.failure is not None
    assert "was never awaited" in result.failure.message
    assert "helper" in result.failure.message


def test_a_task_pending_when_its_loop_closed_fails_the_run():
    """AIO-6: closing a loop with a task still pending fails the run."""
    def fn() -> None:
        loop = asyncio.new_event_loop()

        async def forever() -> None:
            await asyncio.sleep(3600)

        task = loop.create_task(forever(), name="sleeper")
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
        del task

    # (Some schedules pass: the loop's callbacks may take the hour the task sleeps, AIO-5.)
    result = coordkit.explore(fn, max_schedules=50, seed=5)
    assert result.failure is not None
    assert "still pending when EventLoop#1 was closed" in result.failure.message
    assert "'sleeper'" in result.failure.message


def test_a_handler_the_program_set_is_called_instead():
    """AIO-6: a program that sets its own exception handler handles what reaches it."""
    async def main() -> list[str]:
        seen: list[str] = []
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda loop, context: seen.append(context["message"]))
        loop.call_soon(lambda: 1 / 0)
        await asyncio.sleep(0.1)
        return seen

    seen = coordkit.run(main)  # passes: the handler handled it
    assert len(seen) == 1 and seen[0].startswith("Exception in callback")


def test_a_deadlock_across_the_loop_and_a_thread_is_reported_not_a_hang():
    """AIO-7: the loop's thread blocks on a threading.Lock held by a worker that waits for
    the loop (``run_coroutine_threadsafe(...).result()``): every thread is blocked, and the
    run reports a deadlock naming each, within a second."""
    async def main() -> None:
        loop = asyncio.get_running_loop()
        lock = threading.Lock()

        async def ask() -> int:
            return 1

        def worker() -> None:
            with lock:
                asyncio.run_coroutine_threadsafe(ask(), loop).result()

        t = threading.Thread(target=worker, name="worker")
        t.start()
        await asyncio.sleep(0)
        time.sleep(0.1)  # the worker takes the lock (virtual time)
        with lock:  # blocks the loop's thread: the worker's request never runs
            pass
        t.join()

    started = time.perf_counter()
    result = coordkit.explore(main, max_schedules=20, run_timeout=5)
    assert time.perf_counter() - started < 1.5
    assert result.failure is not None
    assert result.failure.kind == "deadlock"
    text = str(result.failure)
    assert "'worker'" in text and "MainThread" in text
