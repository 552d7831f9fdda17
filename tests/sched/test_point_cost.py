"""What a scheduling point costs is paid once where it can be (issue 33): the tracing a
session installs stays installed between its runs (SCHED-65); the compiled tracer makes the
choices the pure-Python one makes (SCHED-67)."""

from __future__ import annotations

import collections
import os
import queue
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import coordkit
from coordkit.engine import patch as patch_module
from coordkit.engine import shims, tracing
from tests.sched import programs

ROOT = Path(__file__).resolve().parents[2]


def _counter() -> None:
    lock = threading.Lock()
    box = [0]

    def bump() -> None:
        for _ in range(2):
            with lock:
                box[0] += 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring exists from Python 3.12")
def test_a_location_disabled_in_one_run_stays_disabled_in_the_next(monkeypatch):
    """SCHED-65: the library's lines are disabled once per session, not once per run (each
    run re-paying them cost more than the run's own points), and the tool id is given back
    when the session ends."""
    disabled: collections.Counter[tuple[int, int]] = collections.Counter()
    line_event = tracing._line_event

    def counting(code, line):
        answer = line_event(code, line)
        if answer is sys.monitoring.DISABLE:
            disabled[id(code), sys._getframe(1).f_lasti] += 1  # a location is an offset
        return answer

    monkeypatch.setattr(tracing, "_line_event", counting)
    result = coordkit.explore(_counter, granularity="line", max_schedules=10, seed=1)
    assert result.schedules_run == 10
    assert disabled, "no location was disabled: the counting callback was not the one called"
    assert max(disabled.values()) == 1, [n for n in disabled.values() if n > 1]
    assert sys.monitoring.get_tool(tracing._TOOL_ID) is None


_CHOICES = """
import hashlib, json, sys
import coordkit
from coordkit.engine import tracing
from tests.sched import programs

from coordkit.engine.runtime import Execution

log = []
run = Execution.run

def logged(self, fn):
    run(self, fn)
    log.append((self.choices, self.steps, [str(t.pt) for t in self.tasks]))
    return self

Execution.run = logged
for program in (programs.lost_update_attribute_in_loop, programs.one_slot_buffer):
    for granularity in ("line", "auto", "sync"):
        for strategy in ("random", "pct"):
            r = coordkit.explore(program, granularity=granularity, strategy=strategy, seed=2,
                                 max_schedules=8, shrink=False)
            print(program.__name__, granularity, strategy, r.schedules_run,
                  r.failure and r.failure.trace)
print(sum(len(choices) for choices, _, _ in log), hashlib.sha1(json.dumps(log).encode()).hexdigest())
print(tracing.ACCELERATED is not None)
"""


def _choices(pure: bool) -> list[str]:
    env = {**os.environ, "COORDKIT_PURE_PYTHON": "1" if pure else "0"}
    out = subprocess.run([sys.executable, "-c", _CHOICES], capture_output=True, text=True,
                         timeout=120, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.mark.skipif(tracing.ACCELERATED is None, reason="the C accelerator is not built here "
                    "(or COORDKIT_PURE_PYTHON=1): nothing to compare the fallback with")
@pytest.mark.skipif(not tracing.SWITCHES, reason="Python 3.10: the accelerator has nothing for "
                    "it, and line granularity needs 3.11")
def test_the_accelerator_and_the_fallback_make_the_same_choices():
    """SCHED-67: every run (its choices, steps and where each thread ended) of line-, auto-
    and sync-granularity explorations is the same with the compiled tracer and point
    (``_ctrace.stay``) and without them."""
    accelerated, pure = _choices(pure=False), _choices(pure=True)
    assert accelerated[-1] == "True" and pure[-1] == "False"
    assert int(accelerated[-2].split()[0]) > 300  # choices were made, and logged
    assert accelerated[:-1] == pure[:-1]


class _AskedEveryTime(coordkit.RandomScheduler):
    """The random scheduler with its ``choose`` asked at every choice point (a subclass's
    choose decides alone: no ``stays`` fast path)."""

    def choose(self, point, enabled):
        return super().choose(point, enabled)


@pytest.mark.parametrize("granularity", ["sync", "auto"])
def test_a_choice_drawn_ahead_is_the_choice_choose_makes(granularity):
    """SCHED-66: where the random scheduler's ``stays()`` lets the runtime take 0 without
    building the candidates, every run makes the choices it makes when ``choose`` is asked
    at every choice point."""
    seen: dict[bool, list[object]] = {True: [], False: []}
    run = coordkit.engine.runtime.Execution.run

    def logged(self, fn):
        run(self, fn)
        seen[self._stays is not None].append((self.choices, self.steps))
        return self

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(coordkit.engine.runtime.Execution, "run", logged)
        for scheduler in (coordkit.RandomScheduler(3), _AskedEveryTime(3)):
            coordkit.explore(programs.one_slot_buffer, strategy=scheduler, max_schedules=20,
                             granularity=granularity, shrink=False)
    assert len(seen[True]) == len(seen[False]) == 20
    assert sum(len(choices) for choices, _ in seen[True]) > 100
    assert seen[True] == seen[False]



def test_the_random_schedulers_pick_is_randranges():
    """SCHED-66: a choice the random scheduler draws among n candidates is the one
    ``Random.randrange(n)`` draws from the same generator (its seeds' runs stay as they were),
    for every n a choice point can have, from the running thread and from a yield."""
    from coordkit.engine.points import Point

    for seed in range(30):
        scheduler = coordkit.RandomScheduler(seed, switch_probability=1.0)
        scheduler.begin(seed)
        reference = random.Random(f"{seed}:{seed}")
        for n in (2, 3, 4, 5, 7, 8, 9, 16, 17, 100):
            enabled = [Point(t, "acquire", "Lock#1", False, 1) for t in range(n)]
            parked = Point(n, "acquire", "Lock#1", False, 1)
            assert scheduler.choose(parked, enabled) == reference.randrange(n)
            reference.random()  # from the running thread: its draw of "switch", then whom
            assert scheduler.choose(enabled[0], enabled) == reference.randrange(n)


@pytest.mark.skipif(not tracing.SWITCHES, reason="Python 3.10: line granularity needs 3.11")
def test_a_lock_and_a_join_reach_their_points_untraced():
    """SCHED-88: in a traced run, every point of a lock's acquire and release and of a
    join is reached in the trace-callback state, entered at the operation's entry (a
    point reached traced enters it itself: then the operation's own code ran traced)."""
    states: collections.Counter[tuple[str, bool]] = collections.Counter()
    point = coordkit.engine.runtime.point_of  # (the shims' and patch's Execution.point)

    def recording(self, kind, obj=""):
        if self._tstate is not None and not self.killing and kind in ("acquire", "release", "join"):
            states[kind, self.in_callback] += 1
        return point(self, kind, obj)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shims, "point_of", recording)
        patch.setattr(patch_module, "point_of", recording)
        result = coordkit.explore(_counter, granularity="line", max_schedules=5, seed=1,
                                  shrink=False)
    assert result.schedules_run == 5
    assert {kind for kind, _ in states} == {"acquire", "release", "join"}, states
    assert all(untraced for _, untraced in states), states


def _every_shim() -> None:
    cond = threading.Condition(threading.Lock())
    event = threading.Event()
    sem = threading.Semaphore(1)
    items: queue.SimpleQueue[int] = queue.SimpleQueue()
    box: list[int] = []

    def producer() -> None:
        with sem:
            items.put(1)
        with cond:
            box.append(1)
            cond.notify()
        event.set()

    def consumer() -> None:
        with cond:
            while not box:
                cond.wait()
        event.wait()
        assert items.get() == 1

    threads = [threading.Thread(target=f) for f in (consumer, producer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.skipif(not tracing.SWITCHES, reason="Python 3.10: line granularity needs 3.11")
def test_every_shim_and_a_start_reach_their_points_untraced():
    """SCHED-88: the Condition, Event, Semaphore and SimpleQueue operations and a thread's
    start reach their points in the trace-callback state too, and the program's code
    between them still runs traced (its lines are points)."""
    ops = ("wait", "notify", "set", "acquire", "release", "put", "get", "start")
    states: collections.Counter[tuple[str, bool]] = collections.Counter()
    point = coordkit.engine.runtime.point_of  # (the shims' and patch's Execution.point)
    lines = 0

    def recording(self, kind, obj=""):
        if self._tstate is not None and not self.killing and kind in ops:
            states[kind, self.in_callback] += 1
        return point(self, kind, obj)

    def counting(self, kind, obj=""):
        nonlocal lines
        lines += kind == "line"
        return callback_point(self, kind, obj)

    callback_point = coordkit.engine.runtime.Execution.callback_point
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shims, "point_of", recording)
        patch.setattr(patch_module, "point_of", recording)
        patch.setattr(coordkit.engine.runtime.Execution, "callback_point", counting)
        result = coordkit.explore(_every_shim, granularity="line", max_schedules=5, seed=1,
                                  shrink=False)
    assert result.schedules_run == 5 and result.failure is None
    assert {kind for kind, _ in states} == set(ops), states
    assert all(untraced for _, untraced in states), states
    assert lines > 0


def _makes_shims() -> None:
    lock = threading.Lock()  # no argument: made untraced
    sem = threading.Semaphore(2)  # the program's argument: made traced
    with lock, sem:
        pass


@pytest.mark.skipif(not tracing.Tracer.untraced_pays,
                    reason="only under settrace (3.11) does engine code gain by running untraced")
def test_a_shims_factory_runs_untraced_and_its_arguments_traced():
    """SCHED-88: ``threading.Lock()`` in a run checks for an import and makes its shim in the
    trace-callback state; a shim made from the program's arguments is made traced."""
    made: collections.Counter[tuple[str, bool]] = collections.Counter()
    importing = patch_module._importing

    def recording_importing():
        ex = coordkit.engine.runtime.current_execution()
        made["importing", ex is not None and ex.in_callback] += 1
        return importing()

    def recorder(cls):
        init = cls.__init__

        def recording(self, ex, *args, **kwargs):
            made[cls.__name__, ex.in_callback] += 1
            init(self, ex, *args, **kwargs)
        return recording

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(patch_module, "_importing", recording_importing)
        for cls in (shims.Lock, shims.Semaphore):
            mp.setattr(cls, "__init__", recorder(cls))
        result = coordkit.explore(_makes_shims, granularity="line", max_schedules=3, seed=1,
                                  shrink=False)
    assert result.schedules_run == 3 and result.failure is None
    assert made == {("importing", True): 6, ("Lock", True): 3, ("Semaphore", False): 3}, made


@pytest.mark.skipif(not tracing.Tracer.untraced_pays,
                    reason="only under settrace (3.11) does engine code gain by running untraced")
def test_the_driver_picks_the_next_thread_untraced():
    """SCHED-88: after a thread ends, the driver picks the next one in the trace-callback
    state, as a point does; the threads it switches to still run traced (their lines are
    points)."""
    states: collections.Counter[bool] = collections.Counter()
    pick = coordkit.engine.runtime.Execution._next

    def recording(self, cur, asked=False):
        if self._tstate is not None and not self.killing:
            states[self.in_callback] += 1
        return pick(self, cur, asked)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(coordkit.engine.runtime.Execution, "_next", recording)
        result = coordkit.explore(programs.locked_counter, granularity="line", max_schedules=5,
                                  seed=1, shrink=False)
    assert result.schedules_run == 5 and result.failure is None
    assert states[True] > 0 and states[False] == 0, states


def test_a_run_whose_threads_all_ended_unwinds_nothing():
    """A run's end unwinds only the threads still alive (its context managers are entered
    only then): a run whose threads all ended skips them, a deadlocked run still unwinds."""
    unwinds = 0
    unwind = coordkit.engine.runtime.Execution._unwind

    def counting(self):
        nonlocal unwinds
        unwinds += 1
        unwind(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(coordkit.engine.runtime.Execution, "_unwind", counting)
        ended = coordkit.explore(programs.locked_counter, max_schedules=5, seed=1, shrink=False)
        assert ended.schedules_run == 5 and ended.failure is None and unwinds == 0
        stuck = coordkit.explore(programs.lock_order_deadlock, max_schedules=200, seed=1,
                                 shrink=False)
    assert stuck.failure is not None and stuck.failure.kind == "deadlock", stuck.failure
    assert unwinds >= 1  # the deadlocked run (and its replay, recorded)
