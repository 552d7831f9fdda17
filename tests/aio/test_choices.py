"""The loop's choice points, faithful by default (AIO-5): timers may arrive early or in
either order at one instant, threads' arrivals interleave with the loop's steps, and
handles queued by the loop's own code stay FIFO."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque

import pytest

import coordkit


class Channel:
    """A hand-rolled channel: ``send`` hands the item to a waiting receiver's future.

    The bug: a receiver cancelled (by a timeout) after its future got the item but before
    its task resumed raises CancelledError, and the item is lost."""

    def __init__(self, *, safe: bool) -> None:
        self.items: deque[str] = deque()
        self.waiter: asyncio.Future[str] | None = None
        self.safe = safe

    def send(self, item: str) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(item)
        else:
            self.items.append(item)

    async def recv(self) -> str:
        if self.items:
            return self.items.popleft()
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        try:
            return await waiter
        except asyncio.CancelledError:
            if self.safe and waiter.done() and not waiter.cancelled():
                self.items.appendleft(waiter.result())  # the fix: give the item back
            raise


def lossy(safe: bool):
    async def main() -> None:
        channel = Channel(safe=safe)

        async def producer() -> None:
            await asyncio.sleep(1)
            channel.send("item")

        task = asyncio.create_task(producer())
        try:
            got = await asyncio.wait_for(channel.recv(), timeout=1.5)
        except asyncio.TimeoutError:
            got = None
        await task
        assert got == "item" or "item" in channel.items, "the item was lost"

    return main


def test_a_timeout_between_future_resolved_and_task_resumed_is_found_and_replays():
    """AIO-5 (a): the callbacks of one iteration may take long enough for a later timer to
    be due: the timeout fires between "the receiver's future got the item" and "the
    receiver resumed", and the item is lost.  Found by explore at its defaults; replayed."""
    buggy = lossy(safe=False)
    assert coordkit.run(buggy) is None  # stock asyncio's own order: no loss
    result = coordkit.explore(buggy, seed=1)
    assert result.failure is not None, "the cancellation window was not found"
    assert "the item was lost" in str(result.failure)
    with pytest.raises(AssertionError, match="the item was lost"):
        coordkit.replay(buggy, result.failure.trace)


def test_the_fixed_channel_is_clean():
    """AIO-5: the fixed twin (a cancelled receiver gives the item back) passes."""
    result = coordkit.explore(lossy(safe=True), seed=1, max_schedules=300)
    assert result.failure is None, result.failure


def test_a_threads_arrival_races_the_timeout():
    """AIO-5 (b): a worker's ``call_soon_threadsafe`` may come before or after the loop's
    step that makes a timer due: the receiver is cancelled after it got the item and the
    item is lost.  Found by explore at its defaults."""
    async def main() -> None:
        loop = asyncio.get_running_loop()
        channel = Channel(safe=False)

        def worker() -> None:
            time.sleep(1)
            loop.call_soon_threadsafe(channel.send, "item")

        t = threading.Thread(target=worker)
        t.start()
        receiver = asyncio.create_task(channel.recv())
        loop.call_later(1, receiver.cancel)  # a deadline, as a shutdown would set one
        try:
            got = await receiver
        except asyncio.CancelledError:
            got = None
        await asyncio.to_thread(t.join)
        assert got == "item" or "item" in channel.items, "the item was lost"

    result = coordkit.explore(main, seed=2)
    assert result.failure is not None
    assert "the item was lost" in str(result.failure)


def test_timers_due_at_one_instant_fire_in_either_order():
    """AIO-5 (c): two timers due at the same virtual instant fire in either order."""
    async def main() -> None:
        order: list[str] = []

        async def sleeper(name: str) -> None:
            await asyncio.sleep(1)
            order.append(name)

        await asyncio.gather(sleeper("a"), sleeper("b"))
        assert order == ["a", "b"], f"woke in order {order}"

    assert coordkit.run(main) is None  # stock order: a then b
    result = coordkit.explore(main, seed=3)
    assert result.failure is not None
    assert "woke in order ['b', 'a']" in str(result.failure)


def test_handles_queued_by_the_loop_stay_fifo():
    """AIO-5: no schedule runs two handles the loop's own code queued out of order (tasks
    start in creation order; call_soon callbacks run in the order they were queued)."""
    async def main() -> None:
        started: list[int] = []
        called: list[int] = []
        loop = asyncio.get_running_loop()

        async def child(i: int) -> None:
            started.append(i)
            await asyncio.sleep(0.5 * (i % 2))

        for i in range(4):
            loop.call_soon(called.append, i)
        tasks = [asyncio.create_task(child(i)) for i in range(4)]
        await asyncio.gather(*tasks)
        assert started == [0, 1, 2, 3], started
        assert called == [0, 1, 2, 3], called

    result = coordkit.explore(main, seed=4, max_schedules=300)
    assert result.failure is None, result.failure
