"""What coordkit's loop cannot control is refused by name, never run silently (AIO-8)."""

from __future__ import annotations

import asyncio
import sys
import threading
from unittest import mock

import pytest

import coordkit


def test_a_loop_made_before_the_run_is_refused():
    """AIO-8: a real loop made before the run, run inside it: a clear error at once (it
    would block in a real select outside the scheduler)."""
    loop = asyncio.new_event_loop()
    try:
        def fn() -> None:
            loop.call_soon(loop.stop)
            loop.run_forever()

        with pytest.raises(RuntimeError, match="is not coordkit's event loop"):
            coordkit.run(fn)
    finally:
        loop.close()


@pytest.mark.skipif(sys.version_info < (3, 12), reason="asyncio.run(loop_factory=) is 3.12+")
def test_a_loop_factory_of_the_programs_is_refused():
    """AIO-8: ``asyncio.run(main(), loop_factory=...)`` making a real loop is refused."""
    async def main() -> None:
        await asyncio.sleep(0)

    def fn() -> None:
        coro = main()
        try:
            asyncio.run(coro, loop_factory=asyncio.SelectorEventLoop)
        finally:
            coro.close()  # refused before it ran

    with pytest.raises(RuntimeError, match="is not coordkit's event loop"):
        coordkit.run(fn)


def test_call_soon_from_a_worker_thread_is_refused():
    """AIO-8: a worker resolving an asyncio future directly (``call_soon`` from a thread
    that is not running the loop) raises in the worker: the run fails."""
    async def main() -> None:
        fut = asyncio.get_running_loop().create_future()
        fut.add_done_callback(lambda f: None)
        t = threading.Thread(target=fut.set_result, args=(1,))
        t.start()
        await asyncio.sleep(1)
        t.join()

    result = coordkit.explore(main, max_schedules=5)
    assert result.failure is not None
    assert "Non-thread-safe operation" in result.failure.message
    assert "call_soon() on EventLoop#1" in result.failure.message


def test_sockets_are_not_modelled():
    """AIO-8: real I/O on coordkit's loop raises (NotImplementedError), never runs."""
    async def main() -> None:
        await asyncio.get_running_loop().create_server(asyncio.Protocol, "127.0.0.1", 0)

    with pytest.raises(NotImplementedError, match=r"create_server\(\) on EventLoop#1: real I/O"):
        coordkit.run(main)


class _ForeignLoop(asyncio.AbstractEventLoop):
    """A loop that is not coordkit's nor a ``BaseEventLoop`` (as uvloop's is not): running
    anything on it would run outside the scheduler."""

    closed = False

    def close(self) -> None:
        self.closed = True

    def is_closed(self) -> bool:
        return self.closed

    def run_until_complete(self, future: object) -> None:
        raise AssertionError("the foreign loop ran")

    run_forever = run_until_complete


class _ForeignPolicy(asyncio.AbstractEventLoopPolicy):
    def __init__(self) -> None:
        self.loops: list[_ForeignLoop] = []

    def new_event_loop(self) -> _ForeignLoop:
        self.loops.append(_ForeignLoop())
        return self.loops[-1]

    def get_event_loop(self) -> None:
        raise AssertionError("not asked")

    def set_event_loop(self, loop: object) -> None:
        pass


def test_a_loop_of_an_event_loop_policy_of_the_programs_is_refused():
    """AIO-8: a loop made by an event-loop policy the program set (uvloop's way) is
    refused at once, and closed, before anything runs on it."""
    policy = _ForeignPolicy()

    async def main() -> None:
        pass

    def fn() -> None:
        previous = asyncio.get_event_loop_policy()
        asyncio.set_event_loop_policy(policy)
        coro = main()
        try:
            asyncio.run(coro)
        finally:
            coro.close()
            asyncio.set_event_loop_policy(previous)

    with pytest.raises(RuntimeError, match=r"is not coordkit's event loop.*an event-loop policy"):
        coordkit.run(fn)
    assert policy.loops and all(loop.closed for loop in policy.loops)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="asyncio.run(loop_factory=) is 3.12+")
def test_a_foreign_loop_of_a_loop_factory_is_refused():
    """AIO-8: a ``loop_factory`` making a loop that is not a ``BaseEventLoop`` (uvloop's
    ``new_event_loop``) is refused, and the loop closed, before anything runs on it."""
    made: list[_ForeignLoop] = []

    async def main() -> None:
        pass

    def fn() -> None:
        coro = main()
        try:
            asyncio.run(coro, loop_factory=lambda: made.append(_ForeignLoop()) or made[-1])
        finally:
            coro.close()

    with pytest.raises(RuntimeError, match=r"is not coordkit's event loop.*a loop_factory"):
        coordkit.run(fn)
    assert made and made[0].closed


def test_a_mocked_monotonic_clock_is_a_warning_of_the_run():
    """AIO-8: ``time.monotonic`` replaced inside the program (``mock.patch``) is named in
    the run's warnings: the loop keeps the virtual clock, which the mock does not move."""
    async def main() -> None:
        with mock.patch("time.monotonic", return_value=5.0):
            await asyncio.sleep(1)

    result = coordkit.explore(main, max_schedules=3, seed=1)
    assert result.failure is None
    assert any("time.monotonic was replaced" in w for w in result.warnings)
    plain = coordkit.explore(lambda: asyncio.run(asyncio.sleep(1)), max_schedules=3, seed=1)
    assert not plain.warnings


@pytest.mark.parametrize(("call", "method"), [
    (lambda: asyncio.open_connection("127.0.0.1", 9), "create_connection"),
    (lambda: asyncio.get_running_loop().sock_connect(None, ("127.0.0.1", 9)), "sock_connect"),
    (lambda: asyncio.create_subprocess_exec(sys.executable, "-c", "pass"), "subprocess_exec"),
    (lambda: asyncio.create_subprocess_shell("true"), "subprocess_shell"),
])
def test_real_sockets_and_subprocesses_are_not_modelled(call, method):
    """AIO-8: a real socket or subprocess through coordkit's loop raises
    ``NotImplementedError`` naming the loop method, and never runs."""
    async def main() -> None:
        await call()

    with pytest.raises(NotImplementedError, match=rf"{method}\(\) on EventLoop#1: real I/O"):
        coordkit.run(main)
