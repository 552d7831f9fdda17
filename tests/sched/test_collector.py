"""No garbage collection inside a run but the program's (SCHED-60)."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import types

import pytest

import coordkit
from coordkit.engine.replay import record
from tests.sched import programs


class _Cyclic:
    """Garbage only the cyclic collector frees; its finalizer is a scheduling point."""

    def __init__(self, log: list[str], what: str) -> None:
        self.me = self
        self.log = log
        self.what = what

    def __del__(self) -> None:
        time.sleep(0)  # a scheduling point inside a run (a real no-op outside one)
        self.log.append(f"finalized {self.what}")


def _threads_and_a_loop() -> None:
    """A worker thread and an event loop, each leaving cyclic garbage and allocating
    enough to pass the collector's threshold."""
    log: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(3):
            _Cyclic(log, "worker's")
            _ = [[] for _ in range(300)]
            with lock:
                log.append("w")

    async def main() -> None:
        for _ in range(3):
            _Cyclic(log, "task's")
            _ = [[] for _ in range(300)]
            await asyncio.sleep(0)
            with lock:
                log.append("m")

    thread = threading.Thread(target=worker)
    thread.start()
    asyncio.run(main())
    thread.join()


def _rows(report: coordkit.RunReport) -> list[str]:
    return [f"{e.tid} {e.kind} {e.target} {e.where} {e.result}" for e in report.events]


@pytest.mark.timeout(60)
def test_a_finalizer_that_is_a_scheduling_point_replays_identically():
    """SCHED-60: 50 replays of one schedule of a program whose cyclic garbage has a
    finalizer that is a scheduling point make the same steps (before the collector was
    held, 44 of 50 diverged: a collection ran it at a step the allocation counts chose)."""
    schedule = record(_threads_and_a_loop, []).schedule.encode()
    first = _rows(record(_threads_and_a_loop, schedule))
    diverged = sum(_rows(record(_threads_and_a_loop, schedule)) != first for _ in range(50))
    assert diverged == 0


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_put_back_as_the_caller_had_it(enabled):
    """SCHED-60: off inside the run (as the program sees it), back as it was after, the
    run passing or failing, whatever the program did with it."""
    seen: list[bool] = []

    def passes() -> None:
        seen.append(gc.isenabled())

    def fails() -> None:
        gc.disable() if enabled else gc.enable()
        raise ValueError("boom")

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        coordkit.run(passes)
        assert gc.isenabled() is enabled
        with pytest.raises(ValueError):
            coordkit.run(fails)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert seen == [False]


def test_the_programs_own_collection_runs_its_finalizers():
    """SCHED-60: ``gc.collect()`` inside a run collects, and ``gc.enable()`` turns the
    collector on for the rest of the run."""
    def fn() -> tuple[list[str], bool]:
        log: list[str] = []
        _Cyclic(log, "mine")
        gc.collect()
        gc.enable()
        return log, gc.isenabled()

    assert coordkit.run(fn) == (["finalized mine"], True)


def test_a_harness_step_holds_the_collector_and_gives_it_back():
    """SCHED-60: each step a Harness drives is a run's: the collector off inside, back as
    the caller had it between steps."""
    assert gc.isenabled()
    with coordkit.Harness() as h:
        assert h.run(gc.isenabled) is False
        assert gc.isenabled()
        log: list[str] = []
        h.run(lambda: _Cyclic(log, "the operation's") and None)
        assert log == []  # not collected inside the step
    assert gc.isenabled()


def _of_a_run(o: object) -> bool:
    """Whether ``o``, found in the collector's garbage, is a run's: its execution, a task or
    greenlet, a ``Thread`` made in a run, or a frame (or a traceback through one) of the
    engine or the program.  (Garbage another test's thread made meanwhile is not.)"""
    from coordkit.engine.runtime import Execution
    from coordkit.engine.task import Task, TaskGreenlet

    if isinstance(o, types.TracebackType):
        o = o.tb_frame
    if isinstance(o, types.FrameType):
        name = o.f_code.co_filename.replace("\\", "/")
        return "coordkit/engine/" in name or name.endswith("tests/sched/programs.py")
    return isinstance(o, (Execution, Task, TaskGreenlet)) or (
        isinstance(o, threading.Thread) and hasattr(o, "_ck_hash"))


def _what(o: object) -> str:
    if isinstance(o, types.TracebackType):
        o = o.tb_frame
    if isinstance(o, types.FrameType):
        return f"frame of {o.f_code.co_name} ({o.f_code.co_filename})"
    return type(o).__name__


def _buffer_2p_2c() -> None:
    programs.condition_buffer(2, 2, 2)


# What holds a run's objects differs by how it is explored: the race detector (races on),
# DPOR's footprint recorder, and runs DPOR abandons part-way (their threads are killed in
# Condition waits, and each dies of an exception whose traceback holds its frames).
_EXPLORATIONS = {
    "random, races ignored": dict(strategy="random", seed=1, max_schedules=5,
                                  races="ignore"),
    "random, races detected": dict(strategy="random", seed=1, max_schedules=5),
    "dpor, runs abandoned": dict(max_schedules=60),
}


@pytest.mark.parametrize("how", list(_EXPLORATIONS))
@pytest.mark.parametrize("program", [programs.locked_counter, programs.one_slot_buffer,
                                     _buffer_2p_2c],
                         ids=["locked_counter", "one_slot_buffer", "buffer_2p_2c"])
def test_an_explorations_runs_leave_the_collector_nothing_of_theirs(program, how):
    """SCHED-60: a run read by its session is closed: its threads' links to each other,
    their greenlets, ``Thread`` objects, their exceptions, the objects its tracer, recorder
    and race detector hold, and the execution are cut, so reference counting frees every
    run and no execution, task, greenlet, frame or traceback is left for the collector."""
    from coordkit.engine.runtime import Execution

    options = dict(_EXPLORATIONS[how])
    dfs = coordkit.DFSScheduler(None, equivalence="lock-aware")
    if how.startswith("dpor"):
        options["strategy"] = dfs
    gc.collect()
    earlier = {id(o) for o in gc.get_objects() if isinstance(o, Execution)}  # other tests'
    was = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = coordkit.explore(program, granularity="sync", shrink=False, **options)
        gc.collect()
        left = sorted({_what(o) for o in gc.garbage if _of_a_run(o)})
        # Nor kept alive where the collector cannot see (the C tracer's frame tracers).
        alive = sum(isinstance(o, Execution) and id(o) not in earlier
                    for o in gc.get_objects())
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert result.failure is None
    if how.startswith("dpor") and program is _buffer_2p_2c:
        assert dfs.schedules > dfs.classes  # some runs were abandoned
    assert left == []
    assert alive == 0
