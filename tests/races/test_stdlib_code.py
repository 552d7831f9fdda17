"""The stdlib's Python code that race detection looks into (RACE-12) and what it leaves
out (RACE-13)."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
import threading
import types

import pytest

import coordkit
from coordkit.engine import tracing
from tests.sched.programs import needs_switching

pytestmark = pytest.mark.timeout(60)


def _explore(program, schedules: int = 30):
    return coordkit.explore(program, seed=1, max_schedules=schedules)


def _stop_from_another_thread() -> None:
    loop = asyncio.new_event_loop()
    serving = threading.Thread(target=loop.run_forever)
    serving.start()
    loop.call_soon_threadsafe(lambda: None)
    loop.stop()  # (not thread-safe: the loop's thread reads _stopping unordered)
    serving.join()
    loop.close()


def test_a_loop_flag_set_through_the_loops_method_is_a_race():
    # RACE-12: stop()'s write of _stopping, in base_events.py, races with run_forever's read
    result = _explore(_stop_from_another_thread, 3)
    assert any("_stopping" in race.location for race in result.races), result.races


@needs_switching
def test_the_racing_write_inside_the_stdlib_is_a_scheduling_point():
    # RACE-12 with RACE-5: the loop may park before stop() writes the flag: a hang
    result = coordkit.explore(_stop_from_another_thread, seed=1)
    assert result.failure is not None and result.failure.kind == "deadlock", result


def test_a_handler_of_the_programs_is_seen_one_made_before_the_run_is_not():
    # RACE-12: a handler made in the run (its lock is the run's) is looked into; RACE-13:
    # one made before (a real lock, whose ordering the run cannot see) and the loggers'
    # own caches are not, so two threads logging through them report nothing
    early = logging.StreamHandler(io.StringIO())
    logger = logging.getLogger("tests.races.stdlib_code")
    logger.addHandler(early)
    logger.propagate = False

    def swap(handler: logging.Handler) -> None:
        handler.stream = io.StringIO()  # (the user's write, unordered with emit's read)

    def program(make_handler) -> None:
        handler = make_handler()
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
        threads = [threading.Thread(target=handler.handle, args=(record,)),
                   threading.Thread(target=swap, args=(handler,)),
                   threading.Thread(target=logger.warning, args=("one",)),
                   threading.Thread(target=logger.warning, args=("two",))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    try:
        made_in_run = _explore(lambda: program(lambda: logging.StreamHandler(io.StringIO())))
        before = _explore(lambda: program(lambda: early))
    finally:
        logger.removeHandler(early)
        logging._handlerList[:] = [r for r in logging._handlerList  # type: ignore[attr-defined]
                                   if r() is None or r() is early]
    assert made_in_run.failure is None and before.failure is None
    assert {r.location for r in made_in_run.races} == {"attribute StreamHandler.stream"}
    assert before.races == [] and before.warnings == [], (before.races, before.warnings)


def test_no_line_or_store_points_inside_the_stdlib():
    # RACE-13: the stdlib's traced code has accesses only; line granularity stays the
    # user's lines
    stop = asyncio.BaseEventLoop.stop.__code__
    assert tracing.is_traced(stop) == tracing.LIBRARY
    assert tracing.shared_stores(stop) == {}
    assert tracing.Tracer(lines=True).offsets(stop) == frozenset()


def test_the_engine_and_the_modelled_library_are_not_traced():
    # RACE-13: threading, queue and concurrent.futures are modelled, coordkit is machinery
    import concurrent.futures
    import queue

    for fn in (threading.Event.set, queue.Queue.put, concurrent.futures.Future.set_result,
               coordkit.explore):
        assert not tracing.is_traced(fn.__code__), fn
    # nor an event loop's per-callback methods, nor (3.11+, by qualified name) a Logger's
    for fn in (asyncio.BaseEventLoop.call_soon, asyncio.BaseEventLoop.call_soon_threadsafe,
               asyncio.BaseEventLoop._check_closed):
        assert not tracing.is_traced(fn.__code__), fn
    if sys.version_info >= (3, 11):
        assert not tracing.is_traced(logging.Logger.isEnabledFor.__code__)
    assert tracing.is_traced(logging.Handler.handle.__code__) == tracing.LIBRARY


def test_only_methods_on_the_programs_loop_handler_or_scheduler_are_traced():
    # RACE-12/RACE-13: in a traced file, a frame is looked into only for its receiver
    def frame(fn, receiver):
        return types.SimpleNamespace(f_code=fn.__code__, f_locals={"self": receiver})

    logger = logging.getLogger("tests.races.stdlib_code")
    early = logging.StreamHandler(io.StringIO())  # made outside any run: a real lock
    assert not tracing.program_frame(frame(logging.Logger.isEnabledFor, logger))
    assert not tracing.program_frame(frame(logging.Handler.handle, early))
    assert not tracing.program_frame(types.SimpleNamespace(
        f_code=logging.getLogger.__code__, f_locals={"name": "x"}))

    def program():
        handler = logging.StreamHandler(io.StringIO())  # made in the run: the run's lock
        assert tracing.program_frame(frame(logging.Handler.handle, handler))
        loop = asyncio.new_event_loop()
        assert tracing.program_frame(frame(asyncio.BaseEventLoop.stop, loop))
        loop.close()
        logging._handlerList[:] = [r for r in logging._handlerList  # type: ignore[attr-defined]
                                   if r() is not handler]

    result = coordkit.explore(program, max_schedules=1)
    assert result.failure is None, result.failure
