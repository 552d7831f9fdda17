"""What coordkit's loop cannot control is refused by name, never run silently (AIO-8)."""

from __future__ import annotations

import asyncio
import sys
import threading

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
