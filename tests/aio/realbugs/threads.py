"""Ports of real, fixed asyncio-plus-thread bugs (AIO-4, AIO-5).

A thread hands the loop a result with ``call_soon_threadsafe`` (or a loop hands one to
a thread); a timeout on the other side ends the wait at the same moment.  The buggy
code is the hand-off of the version named, cut to what the program uses.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.aio.realbugs.programs import RealBug

# -- K: run_coroutine_threadsafe: the result copied into a future the thread cancelled -
# python/asyncio#273 ("Submitting a coroutine to an asyncio event loop", the PR that
# added run_coroutine_threadsafe): its first _copy_state asserted the concurrent future
# was not done, which a thread cancelling it after a timeout breaks; the review settled
# on ``set_running_or_notify_cancel()`` ("The secret handshake ... If this returns True
# you can set the result/exception; otherwise don't bother"), asyncio's
# _set_concurrent_future_state ever since.


def _copy_assert(source: asyncio.Future[Any], dest: concurrent.futures.Future[Any]) -> None:
    assert not dest.done(), f"copying a result into {dest}"
    dest.set_result(source.result())


def _copy_handshake(source: asyncio.Future[Any], dest: concurrent.futures.Future[Any]) -> None:
    if dest.set_running_or_notify_cancel():
        dest.set_result(source.result())


def _submit(coro: Any, loop: asyncio.AbstractEventLoop, copy: Callable[..., None]) -> Any:
    """run_coroutine_threadsafe, its chaining reduced to the copy under test."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def start() -> None:
        task = asyncio.ensure_future(coro)
        task.add_done_callback(lambda t: copy(t, future))

    loop.call_soon_threadsafe(start)
    return future


def _threadsafe_program(copy: Callable[..., None]) -> Callable[[], Any]:
    """A thread asks the loop for a reply (ready after 1 s) and gives up after 2 s."""

    async def main() -> None:
        loop = asyncio.get_running_loop()

        async def reply() -> str:
            await asyncio.sleep(1)
            return "reply"

        def client() -> None:
            future = _submit(reply(), loop, copy)
            try:
                future.result(timeout=2)
            except concurrent.futures.TimeoutError:
                future.cancel()

        thread = threading.Thread(target=client)
        thread.start()
        await asyncio.sleep(3)
        await asyncio.to_thread(thread.join)

    return main


# -- L: a loop closed under its executor: the worker's hand-off meets a closed loop ---
# bpo-33469, "RuntimeError after closing loop that used run_in_executor" (fixed by
# python/cpython#7171 in futures._chain_future: no hand-off into a cancelled future of a
# closed loop); the way out for programs came with bpo-34037 (python/cpython#15735,
# loop.shutdown_default_executor(), which asyncio.run awaits before closing).  The
# port's worker is a plain thread (a concurrent.futures callback's exception is only
# logged); the buggy program closes the loop when its wait timed out, the worker still
# running, and the worker's call_soon_threadsafe raises "Event loop is closed"; the fixed
# twin waits for the worker first.


def _closed_loop_program(*, wait_for_worker: bool) -> Callable[[], Any]:
    def program() -> None:
        loop = asyncio.new_event_loop()
        result = loop.create_future()

        def work() -> None:
            time.sleep(1)
            loop.call_soon_threadsafe(_set_unless_done, result, "reply")

        worker = threading.Thread(target=work, name="worker")

        async def busy() -> None:
            for _ in range(3):
                await asyncio.sleep(0)  # the loop is at work while the worker sleeps

        async def main() -> None:
            worker.start()
            other = asyncio.ensure_future(busy())
            try:
                await asyncio.wait_for(result, timeout=2)
            except asyncio.TimeoutError:
                pass
            await other
            if wait_for_worker:
                await asyncio.to_thread(worker.join)

        try:
            loop.run_until_complete(main())
        finally:
            loop.close()
        worker.join()

    return program


def _set_unless_done(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


THREAD_BUGS = [
    RealBug("threadsafe-result-into-cancelled-future", "python/asyncio#273 (review thread)",
            _threadsafe_program(_copy_assert), _threadsafe_program(_copy_handshake)),
    RealBug("loop-closed-under-executor",
            "bpo-33469 (python/cpython#7171); the fix's pattern bpo-34037 (python/cpython#15735)",
            _closed_loop_program(wait_for_worker=False),
            _closed_loop_program(wait_for_worker=True)),
]
