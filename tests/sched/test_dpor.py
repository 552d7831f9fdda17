"""Step footprints, happens-before and the DPOR search (SCHED-30..36)."""

from __future__ import annotations

import re
import sys
import threading
import time
import types

import pytest

import coordkit
from coordkit.engine.dpor import HappensBefore
from coordkit.engine.points import (
    ANY,
    READ,
    WRITE,
    Effect,
    Point,
    memory_label,
    opening_effects,
    stutters,
)
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import DFSScheduler, ReplayScheduler
from coordkit.engine.schedulers.dfs import ITERATIVE_BOUNDS
from coordkit.errors import TraceDivergedError
from tests.sched import programs
from tests.sched.dpor_oracle import Enumerate, outcomes


def _steps(fn, choices=(), **options):
    with Session(RunOptions(**options)) as session:
        run = session.run(fn, ReplayScheduler(list(choices), strict=False), footprints=True)
    assert run.footprints is not None
    return run, run.footprints


def _any(step) -> bool:
    return any(e.obj == ANY for e in step.footprint)


def test_a_step_that_moves_the_clock_depends_on_everything():
    """SCHED-31: the sleeper's deadline fires in the step of the last thread to park."""
    def program():
        t = threading.Thread(target=lambda: time.sleep(1.0))
        t.start()
        time.sleep(2.0)
        t.join()

    _, steps = _steps(program)
    clock = [s for s in steps if Effect(ANY, WRITE, "clock") in s.footprint]
    # Main sleeps first; T1's sleep parks the last thread: its step moves the clock to 1.0,
    # and T1's end (nobody else can run) moves it to 2.0.
    assert [(s.thread, s.point.op) for s in clock] == [(1, "sleep"), (1, "sleep")]
    assert [s for s in steps if s.point.op == "sleep" and s.thread == 0 and not _any(s)]


def test_a_poll_depends_on_everything():
    """SCHED-31: sleep(0) and a wait already due poll."""
    def program():
        time.sleep(0)
        threading.Event().wait(0)

    _, steps = _steps(program)
    polls = [s for s in steps if Effect(ANY, WRITE, "poll") in s.footprint]
    assert {s.point.op for s in polls} == {"sleep", "wait"}


def test_reading_every_thread_depends_on_everything():
    """SCHED-31: threading.enumerate and active_count."""
    _, steps = _steps(lambda: (threading.enumerate(), threading.active_count()))
    assert [s.point.op for s in steps if _any(s)] == ["enumerate", "active_count"]


def test_the_end_of_a_run_with_a_daemon_left_depends_on_everything():
    """SCHED-31: the step that ends the last non-daemon thread, with a daemon that could
    still run, depends on everything; the daemon then runs on after the return (SCHED-53)."""
    def with_daemon():
        threading.Thread(target=lambda: None, daemon=True).start()

    def without():
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()

    _, steps = _steps(with_daemon)
    ends = [s.point.thread for s in steps if Effect(ANY, WRITE, "end of run") in s.footprint]
    assert ends == [0] and steps[-1].point.thread == 1
    _, steps = _steps(without)
    assert not any(_any(s) for s in steps)


def test_the_end_of_a_run_reads_the_end_of_every_thread_that_ended_before_it():
    """SCHED-31: with no other thread alive, the program's end reads each one's end (a
    daemon that ended first ends after it in another order, and is cut off there)."""
    def daemon_first():
        t = threading.Thread(target=lambda: None, daemon=True)
        t.start()
        time.sleep(0.01)  # parks: the daemon runs to its end first

    _, steps = _steps(daemon_first)
    ended = [i for i, s in enumerate(steps) if Effect("T1", WRITE, "end") in s.footprint]
    reads = [i for i, s in enumerate(steps) if Effect("T1", READ, "end") in s.footprint]
    assert len(ended) == 1 and len(reads) == 1 and ended[0] < reads[0]
    assert steps[reads[0]].point.thread == 0 and not _any(steps[reads[0]])
    hb = HappensBefore(steps)
    assert hb.hb(ended[0], reads[0])


def test_an_invariant_makes_every_step_depend_on_everything():
    """SCHED-31: it runs at every point, in the step that point ends, which then comes
    before or after every other step."""
    run, steps = _steps(programs.locked_counter, invariant=lambda: True)
    checks = [e for s in steps for e in s.footprint if e == Effect(ANY, WRITE, "invariant")]
    assert len(checks) == run.steps > 0


def test_a_line_step_depends_on_everything_unless_memory_is_traced():
    """SCHED-31: without a tracer's report a line's accesses are unknown."""
    line = Point(1, "line")
    assert opening_effects(line, "T1", memory_traced=False) == [Effect(ANY, WRITE, "line")]
    assert opening_effects(line, "T1", memory_traced=True) == []


@programs.needs_line_granularity
@pytest.mark.parametrize("granularity", ["line", "sync"])
def test_steps_report_their_memory_accesses(granularity):
    """SCHED-30: with footprints, the tracer reports each step's reads and writes of shared
    memory, one object per owner: the lost update's read and write of ``box[0]``."""
    _, steps = _steps(programs.lost_update, granularity=granularity)
    box = {e.obj for s in steps if s.thread in (1, 2) for e in s.footprint
           if e.obj.startswith("mem#") and e.access == WRITE}
    assert len(box) == 1
    (obj,) = box
    accesses = [(s.thread, e.access) for s in steps for e in s.footprint if e.obj == obj]
    assert {(1, READ), (1, WRITE), (2, READ), (2, WRITE)} <= set(accesses)
    assert not any(_any(s) for s in steps if s.point.op in ("line", "store"))


def test_only_real_modules_name_memory_by_module():
    """SCHED-30: ``sys.modules`` may hold objects that are no modules (``typing.re`` is a
    class on 3.11).  Their ``__dict__``'s id was kept as a module's globals; once that dict
    was freed, whatever object got its id next was labelled as those globals, in some runs
    and not others (a generated program's replayed prefix then did not repeat)."""
    name = "coordkit_test_not_a_module"
    holder = types.SimpleNamespace()
    sys.modules[name] = holder  # type: ignore[assignment]
    try:
        memory_label(0)  # sys.modules changed: the table is brought up to date
        stale = id(holder.__dict__)
    finally:
        del sys.modules[name]
    del holder  # its dict is freed: CPython hands the next new dict that memory
    fresh = [{} for _ in range(100)]
    reused = [d for d in fresh if id(d) == stale]
    assert reused, "no new dict took the freed one's id: the check below would be empty"
    assert memory_label(stale) == f"mem:{stale}"
    assert memory_label(id(threading.__dict__)) == "mem:globals:threading"


def test_starting_and_waking_a_thread_orders_its_next_step():
    """SCHED-30, SCHED-32: the start writes T1.run, T1's first step reads it; a release
    that wakes a waiter writes its .run, the resumed step reads it."""
    def program():
        lock, ev = threading.Lock(), threading.Event()

        def worker():
            ev.set()
            lock.acquire()  # held by the main thread: T1 waits

        lock.acquire()
        t = threading.Thread(target=worker)
        t.start()
        ev.wait()
        lock.release()
        t.join()

    _, steps = _steps(program)
    starts = [s for s in steps if Effect("T1.run", WRITE, "start") in s.footprint]
    first = next(s for s in steps if s.thread == 1)
    assert starts and first.footprint[0] == Effect("T1.run", READ, "begin")
    release = next(s for s in steps if s.point.op == "release")
    assert Effect("T1.run", WRITE, "wake") in release.footprint
    resumed = [s for s in steps if s.thread == 1 and Effect("T1.run", READ, "resume") in s.footprint]
    assert resumed and resumed[0].point.op == "acquire"
    blocked = next(s for s in steps if s.thread == 1 and s.point.op == "acquire")
    assert stutters(blocked) and not stutters(resumed[0])
    hb = HappensBefore(steps)
    assert hb.hb(release.index, resumed[0].index)
    assert (release.index, resumed[0].index) not in hb.races


def test_a_condition_wait_is_not_a_stutter():
    """SCHED-32: it releases the lock, which another thread sees."""
    def program():
        cond = threading.Condition(threading.Lock())
        with cond:
            cond.wait(0.5)

    _, steps = _steps(program)
    wait = next(s for s in steps if s.point.op == "wait")
    assert any(e.op == "park" for e in wait.footprint) and not stutters(wait)


def test_is_alive_races_with_the_threads_last_step():
    """SCHED-30, SCHED-33: the issue's case, as a race DPOR reverses."""
    def program():
        t = threading.Thread(target=lambda: None)
        t.start()
        t.is_alive()
        t.join()

    _, steps = _steps(program, [1])  # T1 runs (and ends) first
    end = next(s for s in steps if Effect("T1", WRITE, "end") in s.footprint)
    alive = next(s for s in steps if s.point.op == "is_alive")
    assert (end.index, alive.index) in HappensBefore(steps).races


def test_an_event_operation_that_changes_nothing_only_reads_it():
    """SCHED-32: a set of a set Event, a clear of a clear one and a wait that returns at
    once read the Event; the set that set it, the clear that cleared it and a wait that
    parks write it.  So the second set lets no wait proceed, and does not order one."""
    def program():
        ev = threading.Event()
        ev.clear()
        ev.set()
        ev.set()
        ev.wait()
        ev.clear()

        def waiter():
            ev.wait(0.5)

        t = threading.Thread(target=waiter)
        t.start()
        t.join()

    _, steps = _steps(program)
    event = [(s.point.op, s.footprint[0].access) for s in steps  # (not the resumed wait)
             if s.point.obj.startswith("Event#") and not any(e.op == "resume" for e in s.footprint)]
    assert event == [("clear", READ), ("set", WRITE), ("set", READ), ("wait", READ),
                     ("clear", WRITE), ("wait", WRITE)]
    second_set = next(s for s in steps if s.point.op == "set" and s.footprint[0].access == READ)
    wait = next(s for s in steps if s.point.op == "wait")
    races = HappensBefore(steps).races
    assert not any(second_set.index in pair and wait.index in pair for pair in races)


def _release_then_acquire(blocking: bool, timeout: float):
    def program():
        lock = threading.Lock()

        def worker():
            if lock.acquire(blocking, timeout):
                lock.release()

        t = threading.Thread(target=worker)
        with lock:
            t.start()
        t.join()

    _, steps = _steps(program)  # the main thread releases, then T1 acquires
    release = next(s for s in steps if s.thread == 0 and s.point.op == "release")
    acquire = next(s for s in steps if s.thread == 1 and s.point.op == "acquire")
    return (release.index, acquire.index) in HappensBefore(steps).races


@pytest.mark.parametrize(("blocking", "timeout", "race"), [
    (True, -1, False), (False, -1, True), (True, 0.5, True)])
def test_a_release_races_only_with_an_acquire_that_may_give_up(blocking, timeout, race):
    """SCHED-32: run first, a blocking acquire would only have waited for the release; a
    non-blocking or timed one would have failed (its step records a "try")."""
    assert _release_then_acquire(blocking, timeout) is race


def _end_then_join(write_first: bool):
    def program():
        box = [0]
        t = threading.Thread(target=lambda: None)
        t.start()
        if write_first:
            box[0] = 1; t.join()  # noqa: E702 (one line: one step)
        else:
            t.join()

    # At line granularity, T1 runs (and ends) at the main thread's first point after start.
    _, steps = _steps(program, [1], granularity="line")
    end = next(s for s in steps if Effect("T1", WRITE, "end") in s.footprint)
    join = next(s for s in steps if Effect("T1", READ, "join") in s.footprint)
    assert join.point.op != "join"  # inside another step
    return (end.index, join.index) in HappensBefore(steps).races


@programs.needs_line_granularity
def test_a_join_of_an_ended_thread_races_with_its_end_only_after_other_effects():
    """SCHED-32: first in its step, the join would only have waited; after a write, running
    the step first moves the write before the thread's end."""
    assert not _end_then_join(write_first=False)
    assert _end_then_join(write_first=True)


def test_unbounded_search_tries_shallow_bounds_first():
    """SCHED-34"""
    scheduler = DFSScheduler(max_preemptions=None)
    bounds = [scheduler.bound]
    result = coordkit.explore(lambda: programs.locked_counter(2, 2), granularity="sync",
                              strategy=_Watching(scheduler, bounds), max_schedules=100_000)
    assert result.ok and result.exhausted
    assert sorted(set(bounds), key=lambda b: -1 if b is None else b) == [None, *ITERATIVE_BOUNDS]
    assert bounds[0] == 0 and bounds[-1] is None


class _Watching(DFSScheduler):
    """Delegates to a DFSScheduler and notes the bound of each run."""

    def __init__(self, inner: DFSScheduler, bounds: list) -> None:
        super().__init__(max_preemptions=None)
        self.__dict__.update(inner.__dict__)
        self._bounds_seen = bounds

    def begin(self, run_index: int) -> None:
        self._bounds_seen.append(self.bound)
        super().begin(run_index)


@programs.needs_line_granularity
def test_unbounded_dfs_finds_a_shallow_lost_update_at_a_low_bound():
    """SCHED-34: the 3x3 lost update (one preemption) is found before the unbounded level."""
    def counter():
        box = [0]

        def inc():
            for _ in range(3):
                v = box[0]
                box[0] = v + 1

        ts = [threading.Thread(target=inc) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert box[0] == 9, "lost update"

    result = coordkit.explore(counter, strategy="dfs", max_preemptions=None, granularity="line",
                              max_schedules=5_000)
    assert result.failure is not None and result.failure.preemptions <= 2
    assert result.failure.schedules_run < 2_000


@pytest.mark.parametrize("bound", [0, 1, 2])
def test_a_bounded_search_runs_every_schedule_within_the_bound(bound):
    """SCHED-35, SCHED-71: unreduced by default (as many schedules as the oracle
    enumerates, and as ``sleep_sets=False``); with ``reduce_bound=True`` no more, and the
    coverage says its schedules stand for the rest."""
    counts = []
    for kw in ({}, {"sleep_sets": False}, {"reduce_bound": True}):
        result = coordkit.explore(lambda: programs.locked_counter(2, 2), max_schedules=100_000,
                                  strategy=DFSScheduler(bound, **kw), granularity="sync")
        assert result.ok and result.exhausted
        counts.append(result.schedules_run)
        reduced = ", up to the order of non-conflicting steps" if kw.get("reduce_bound") else ""
        assert result.coverage == (f"all schedules with <= {bound} preemption(s) at sync "
                                   f"granularity{reduced} ({result.schedules_run} schedules)")
    _, every = outcomes(lambda: programs.locked_counter(2, 2), Enumerate(bound))
    assert counts[2] <= counts[0] == counts[1] == every


def test_an_exhausted_search_says_what_it_covered():
    """SCHED-36"""
    result = coordkit.explore(lambda: programs.locked_counter(2, 2), strategy="dfs",
                              max_preemptions=None, max_schedules=100_000, granularity="sync")
    assert result.exhausted
    assert result.coverage is not None
    assert re.fullmatch(r"all interleavings at sync granularity \(\d+ equivalence classes in "
                        rf"{result.schedules_run - _bounded_levels(result)} schedules\)",
                        result.coverage), result.coverage
    assert result.coverage in str(result)
    cut = coordkit.explore(lambda: programs.locked_counter(2, 2), strategy="dfs",
                           max_preemptions=None, max_schedules=3)
    assert not cut.exhausted and cut.coverage is None
    assert coordkit.explore(programs.lock_order_deadlock, strategy="dfs",
                            max_preemptions=None).coverage is None  # it failed


def _bounded_levels(result) -> int:
    """The schedules an unbounded dfs ran at bounds 0, 1, 2 (before its last level)."""
    last = re.search(r"in (\d+) schedules", result.coverage or "")
    return result.schedules_run - int(last.group(1)) if last else 0


def test_three_threads_three_locked_increments_reach_every_lock_order():
    """SCHED-33: 9!/(3!3!3!) = 1,680 orders of the critical sections, the floor for any
    sound reduction: DPOR reaches each in exactly as many classes (a release does not
    race with a blocking acquire, nor a thread's end with the joins that open a step)."""
    orders: set = set()

    def program():
        lock, order = threading.Lock(), []

        def work(i):
            for _ in range(3):
                with lock:
                    order.append(i)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        orders.add(tuple(order))

    result = coordkit.explore(program, strategy="dfs", max_preemptions=None,
                              max_schedules=100_000, granularity="sync")
    assert result.ok and result.exhausted and len(orders) == 1680
    classes = int(re.search(r"\((\d+) equivalence classes", result.coverage).group(1))
    assert classes == 1680


def test_a_program_that_does_not_repeat_its_replayed_prefix_is_not_deterministic():
    """SCHED-33: DPOR keeps the steps of the prefix a run replays; a program whose replayed
    steps differ (here the lock the main thread takes depends on how many runs came
    before, and the runnable threads stay the same) is reported as not deterministic,
    not explored with steps it did not take (the search used to report it exhausted)."""
    runs = [0]

    def program():
        runs[0] += 1
        lock, other = threading.Lock(), threading.Lock()

        def worker():
            with lock:
                pass
            with lock:
                pass

        ts = [threading.Thread(target=worker) for _ in range(2)]
        for t in ts:
            t.start()
        with lock if runs[0] < 6 else other:
            pass
        for t in ts:
            t.join()

    with pytest.raises(TraceDivergedError, match=r"not deterministic: step \d+ of the schedule "
                       r"being replayed was T0 acquire Lock#1 before and is T0 acquire Lock#2"):
        coordkit.explore(program, strategy=DFSScheduler(None), max_schedules=500, shrink=False)
