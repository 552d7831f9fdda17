"""Async programs run under coordkit, and what cannot run is refused (AIO-1)."""

from __future__ import annotations

import asyncio

import pytest

import coordkit

ran: list[str] = []


async def async_main() -> str:
    ran.append("main")
    await asyncio.sleep(0)
    return "done"


def test_explore_runs_an_async_def():
    """AIO-1: ``explore(async_main)`` runs it (no clean verdict on code never run)."""
    ran.clear()
    result = coordkit.explore(async_main, max_schedules=3)
    assert result.failure is None
    assert ran and set(ran) == {"main"}


def test_explore_finds_the_failure_of_an_async_def():
    """AIO-1: an exception raised by the coroutine is the run's failure."""
    async def broken() -> None:
        await asyncio.sleep(0)
        raise KeyError("lost")

    result = coordkit.explore(broken, max_schedules=3)
    assert result.failure is not None
    assert "KeyError" in str(result.failure)


def test_run_returns_the_coroutines_value():
    """AIO-1: ``run`` returns what the coroutine returned."""
    assert coordkit.run(async_main) == "done"


def test_replay_runs_an_async_def():
    """AIO-1: ``replay`` re-raises the coroutine's exception."""
    async def broken() -> None:
        raise ValueError("in the coroutine")

    result = coordkit.explore(broken, max_schedules=1)
    with pytest.raises(ValueError, match="in the coroutine"):
        coordkit.replay(broken, result.failure.trace)


def test_a_coroutine_object_is_refused_naming_it():
    """AIO-1: a coroutine object is a TypeError naming ``fn`` and the value."""
    coro = async_main()
    with pytest.raises(TypeError, match=r"fn must be .*coroutine object.*async_main"):
        coordkit.explore(coro)
    with pytest.raises(TypeError, match=r"fn must be .*coroutine object"):
        coordkit.run(coro)


def test_an_async_generator_function_is_refused_naming_it():
    """AIO-1: an async generator function cannot run: a TypeError naming it."""
    async def agen():
        yield 1

    with pytest.raises(TypeError, match=r"fn must be .*async generator function.*agen"):
        coordkit.explore(agen)
    with pytest.raises(TypeError, match=r"fn must be .*async generator function"):
        coordkit.run(agen)


def test_the_decorator_runs_an_async_test():
    """AIO-1: ``@coordkit.interleavings`` on an ``async def`` test runs its body."""
    calls: list[int] = []

    @coordkit.interleavings(max_schedules=2)
    async def test_body() -> None:
        await asyncio.sleep(0)
        calls.append(1)

    test_body()
    assert calls


def test_the_marker_runs_an_async_test(pytester):
    """AIO-1: ``@pytest.mark.coordkit`` on an ``async def`` test runs it (and fails it)."""
    pytester.makepyfile("""
        import asyncio
        import pytest

        @pytest.mark.coordkit(max_schedules=2)
        async def test_fails():
            await asyncio.sleep(0)
            assert False, "the body ran"
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the body ran*"])


def test_the_command_line_explores_an_async_def():
    """AIO-1: ``coordkit explore MODULE:FUNCTION`` with an ``async def`` target runs it."""
    from tests.test_cli import run

    code, out = run("explore", "tests.aio.realbugs.programs:queue_bug", "--seed", "1")
    assert code == 1
    assert "the item was lost" in out
