"""Await chains in reports (AIO-45): a failure lists each task not done with the
coroutines it is suspended in, beside the threads' stacks."""

from __future__ import annotations

import asyncio
import threading

import coordkit


def _line_of(marker: str) -> int:
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if line.rstrip().endswith(marker))


def worker(loop: asyncio.AbstractEventLoop, lock: threading.Lock) -> None:
    with lock:  # then waits for the loop, whose thread waits for the lock
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result()


async def offload(loop: asyncio.AbstractEventLoop, lock: threading.Lock) -> None:
    await asyncio.to_thread(worker, loop, lock)  # offload's await


async def helper(loop: asyncio.AbstractEventLoop, lock: threading.Lock) -> None:
    await offload(loop, lock)  # helper's await


async def main() -> None:
    loop = asyncio.get_running_loop()
    lock = threading.Lock()
    task = asyncio.create_task(helper(loop, lock))
    await asyncio.sleep(0)
    with lock:  # main blocks the loop's thread here
        pass
    await task


def test_a_deadlock_across_a_task_and_a_thread_shows_each_tasks_await_chain():
    """AIO-45: the report lists the tasks at the failure: the running one, and the one
    awaiting the worker thread with every frame of its chain (qualname and file:line),
    down to asyncio's to_thread."""
    result = coordkit.explore(main, seed=1)
    failure = result.failure
    assert failure is not None and failure.kind.value == "deadlock", failure
    text = str(failure)
    here = "test_await_chain.py"
    assert "Tasks at the failure:\n" in text
    assert "  Task-1 'main' on EventLoop#1, running (its thread's stack shows where)\n" in text
    chain = (f"  Task-2 'helper' on EventLoop#1, awaits a Future\n"
             f"      helper at {here}:{_line_of('# helper' + chr(39) + 's await')}\n"
             f"      offload at {here}:{_line_of('# offload' + chr(39) + 's await')}\n"
             f"      to_thread at threads.py:")
    assert chain in text
    assert text.index("Threads at the failure:") < text.index("Tasks at the failure:")
    assert failure.report.failure.tasks[1].startswith("Task-2 'helper'")


def test_a_failure_without_tasks_lists_none():
    """AIO-45: a threads-only failure has no tasks section."""
    def threads_only() -> None:
        a, b = threading.Lock(), threading.Lock()

        def other() -> None:
            with b, a:
                pass

        t = threading.Thread(target=other)
        t.start()
        with a, b:
            pass
        t.join()

    result = coordkit.explore(threads_only, seed=1)
    assert result.failure is not None
    assert "Tasks at the failure" not in str(result.failure)
