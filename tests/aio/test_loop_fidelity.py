"""Where stock asyncio is silent, so is coordkit's loop: what CPython's own test_tasks,
run with the loop swapped (AIO-30), found it reporting that asyncio does not."""

from __future__ import annotations

import asyncio
from unittest import mock

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
