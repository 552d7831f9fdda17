"""Ports of real, fixed asyncio bugs, each with its fixed twin (AIO-5).

Each port keeps the mechanism of the upstream bug in a few lines of our own (which
future is resolved, which cancellation comes between it and the task resuming); the
citation names the upstream issue or pull request where the bug and its fix are
described.  A buggy program fails under some schedule stock asyncio can produce; its
fixed twin passes under every one.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RealBug:
    id: str
    citation: str
    buggy: Callable[[], Any]
    fixed: Callable[[], Any]
    min_python: tuple[int, int] = (3, 10)  # a port that needs a newer asyncio (uncancel)


# -- A: Queue.get cancelled after put_nowait handed it the item ------------------------
# bpo-23812, "asyncio.Queue.put_nowait(), followed get() task cancellation leads to item
# being lost" (https://bugs.python.org/issue23812, fixed by
# https://github.com/python/asyncio/pull/256): put_nowait set the waiting getter's future
# to the item itself; a get() cancelled (by wait_for's timeout) before its task resumed
# dropped it.  The fix leaves the item in the queue and only wakes the getter, which takes
# it when it resumes; a getter cancelled after being woken wakes the next one.


class _HandingQueue:
    """Before the fix: the item goes into the getter's future."""

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self._getters: deque[asyncio.Future[Any]] = deque()

    def put_nowait(self, item: Any) -> None:
        while self._getters and self._getters[0].done():
            self._getters.popleft()
        if self._getters:
            self._getters.popleft().set_result(item)
        else:
            self._items.append(item)

    async def get(self) -> Any:
        if self._items:
            return self._items.popleft()
        getter = asyncio.get_running_loop().create_future()
        self._getters.append(getter)
        return await getter

    def qsize(self) -> int:
        return len(self._items)


class _WakingQueue(_HandingQueue):
    """After the fix: the item stays queued; the getter is only woken."""

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        self._wake_next()

    def _wake_next(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    async def get(self) -> Any:
        while not self._items:
            getter = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                await getter
            except asyncio.CancelledError:
                getter.cancel()
                if self._items and not getter.cancelled():
                    self._wake_next()  # woken, then cancelled: the next getter takes it
                raise
        return self._items.popleft()


def _queue_program(make: Callable[[], _HandingQueue]) -> Callable[[], Any]:
    async def main() -> None:
        queue = make()
        received: list[Any] = []

        async def producer() -> None:
            await asyncio.sleep(1)
            queue.put_nowait("item")

        task = asyncio.create_task(producer())
        try:
            received.append(await asyncio.wait_for(queue.get(), timeout=1.5))
        except asyncio.TimeoutError:
            pass
        await task
        assert received or queue.qsize() == 1, "the item was lost"

    return main


# -- B: wait_for swallows a cancellation when the inner future is done too ------------
# gh-86296 (bpo-42130), "AsyncIO's wait_for can hide cancellation in a rare race
# condition" (https://github.com/python/cpython/issues/86296), fixed in 3.12 by
# rewriting wait_for on asyncio.timeout (https://github.com/python/cpython/pull/98518):
# cancelled while the awaited future had also completed, wait_for returned the result,
# and the task that was cancelled went on as if it had not been.


def _release(waiter: asyncio.Future[Any], *args: Any) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def _wait_for_3_11(fut: Any, timeout: float) -> Any:
    """The shape of wait_for before 3.12 (the cancellation branch)."""
    loop = asyncio.get_running_loop()
    waiter = loop.create_future()
    handle = loop.call_later(timeout, _release, waiter)
    done = functools.partial(_release, waiter)
    fut = asyncio.ensure_future(fut)
    fut.add_done_callback(done)
    try:
        try:
            await waiter
        except asyncio.CancelledError:
            if fut.done():
                return fut.result()  # the bug: the cancellation is swallowed
            fut.remove_done_callback(done)
            fut.cancel()
            raise
        if fut.done():
            return fut.result()
        fut.remove_done_callback(done)
        fut.cancel()
        raise asyncio.TimeoutError()
    finally:
        handle.cancel()


async def _wait_for_fixed(fut: Any, timeout: float) -> Any:
    """The fix's rule: a cancellation of the waiting task always propagates."""
    loop = asyncio.get_running_loop()
    waiter = loop.create_future()
    handle = loop.call_later(timeout, _release, waiter)
    done = functools.partial(_release, waiter)
    fut = asyncio.ensure_future(fut)
    fut.add_done_callback(done)
    try:
        try:
            await waiter
        except asyncio.CancelledError:
            fut.remove_done_callback(done)
            fut.cancel()
            raise
        if fut.done():
            return fut.result()
        fut.remove_done_callback(done)
        fut.cancel()
        raise asyncio.TimeoutError()
    finally:
        handle.cancel()


def _wait_for_program(wait_for: Callable[..., Any]) -> Callable[[], Any]:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        inner = loop.create_future()

        async def waiting() -> Any:
            return await wait_for(inner, timeout=10)

        task = asyncio.create_task(waiting())
        loop.call_later(1, task.cancel)  # a shutdown cancels the waiting task...
        loop.call_later(1.5, _release, inner)  # ...as the reply comes in
        try:
            await task
            cancelled = False
        except asyncio.CancelledError:
            cancelled = True
        assert cancelled, "the task's cancellation was swallowed"

    return main


# -- C: an executor's result copied into an asyncio future a timeout cancelled --------
# python/asyncio#123, "Future._copy_state(self, other) fails if self is cancelled"
# (https://github.com/python/asyncio/issues/123): run_in_executor's thread finished while
# the awaiting task was being cancelled; the result, handed to the loop with
# call_soon_threadsafe, was set on the cancelled asyncio future: InvalidStateError in a
# callback (asyncio only logs it).  The fix copies the state only into a future that is
# not cancelled (asyncio.futures._copy_future_state).


def _executor_program(*, check: bool) -> Callable[[], Any]:
    import concurrent.futures
    import time

    async def main() -> None:
        loop = asyncio.get_running_loop()
        executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        result: asyncio.Future[Any] = loop.create_future()

        def copy(source: concurrent.futures.Future[Any]) -> None:
            if check and result.cancelled():
                return  # the fix
            result.set_result(source.result())

        def work() -> str:
            time.sleep(1)
            return "reply"

        done = executor.submit(work)
        done.add_done_callback(lambda f: loop.call_soon_threadsafe(copy, f))
        try:
            await asyncio.wait_for(result, timeout=1)
        except asyncio.TimeoutError:
            pass
        await asyncio.to_thread(executor.shutdown)

    return main


REAL_BUGS = [
    RealBug("queue-get-cancel-loses-item", "bpo-23812 (python/asyncio#256)",
            _queue_program(_HandingQueue), _queue_program(_WakingQueue)),
    RealBug("wait-for-swallows-cancel", "gh-86296 / bpo-42130 (fixed by cpython#98518)",
            _wait_for_program(_wait_for_3_11), _wait_for_program(_wait_for_fixed)),
    RealBug("executor-result-into-cancelled-future", "python/asyncio#123",
            _executor_program(check=False), _executor_program(check=True)),
]

# The command line's target (``coordkit explore tests.aio.realbugs.programs:queue_bug``).
queue_bug = REAL_BUGS[0].buggy
