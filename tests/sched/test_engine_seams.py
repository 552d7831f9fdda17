"""The engine's seams: the scheduler interface over Points, step footprints, one run
path, the failure kinds, and a package that costs nothing until it is used."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys
import threading
import time

import pytest

import coordkit
from coordkit.engine.points import DAEMONS, READ, WRITE, Effect, Point
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import ReplayScheduler, Scheduler
from coordkit.errors import FailureKind

PACKAGE = pathlib.Path(coordkit.__file__).parent


def _handoff() -> None:
    """T1 waits on a condition that the main thread notifies; the main thread joins T1."""
    cond = threading.Condition(threading.Lock())
    ready = []

    def waiter() -> None:
        with cond:
            while not ready:
                cond.wait()

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.1)  # virtual time: T1 gets to wait first in the default schedule
    with cond:
        ready.append(1)
        cond.notify()
    t.join()


class Recording(Scheduler):
    """Always the default choice; keeps what it was shown."""

    def __init__(self) -> None:
        self.seen: list[tuple[Point, list[Point]]] = []

    def choose(self, point: Point, enabled: list[Point]) -> int:
        self.seen.append((point, list(enabled)))
        return 0


def test_a_scheduler_is_asked_with_the_running_threads_point_and_the_enabled_ones():
    """ENGINE-2"""
    scheduler = Recording()
    result = coordkit.explore(_handoff, strategy=scheduler, max_schedules=1)
    assert result.ok and scheduler.seen
    for point, enabled in scheduler.seen:
        assert isinstance(point, Point) and all(isinstance(p, Point) for p in enabled)
        assert len(enabled) >= 2  # a choice point has a choice
        assert len({p.thread for p in enabled}) == len(enabled)
        assert point.step > 0
    # The first choice: the main thread, having started T1, is about to sleep; T1 has not
    # run yet (only one thread could run when the main thread started it).
    first_point, first_enabled = scheduler.seen[0]
    assert (first_point.thread, first_point.op, first_point.obj) == (0, "sleep", "")
    assert {p.thread for p in first_enabled} == {0, 1}
    assert next(p for p in first_enabled if p.thread == 1).op == "start"
    # Every object is named by its label, never by an address.
    objs = {p.obj for _, enabled in scheduler.seen for p in enabled if p.obj}
    assert objs and all(o.startswith(("Lock#", "Condition#", "T", "Event#")) for o in objs), objs


def test_a_scheduler_that_switches_changes_the_run():
    """ENGINE-2: the answer is an index into enabled."""
    class AlwaysSwitch(Scheduler):
        def choose(self, point: Point, enabled: list[Point]) -> int:
            return len(enabled) - 1

    result = coordkit.explore(_handoff, strategy=AlwaysSwitch(), max_schedules=1)
    assert result.ok  # the hand-off is correct in every order
    assert result.schedules_run == 1


def _footprints(fn) -> list:
    with Session(RunOptions()) as session:
        run = session.run(fn, ReplayScheduler([], strict=False), footprints=True)
    assert run.failure is None, run.failure
    assert run.footprints is not None
    return run.footprints


def test_a_condition_wait_step_also_releases_its_lock():
    """ENGINE-3"""
    steps = _footprints(_handoff)
    # (A step that resumes a wait opens with the wait's point too: it reads its wake-up.)
    waits = [s for s in steps if s.point.op == "wait" and s.point.obj.startswith("Condition#")
             and not any(e.op == "resume" for e in s.footprint)]
    assert waits, [s.point for s in steps]
    for step in waits:
        assert Effect(step.point.obj, WRITE, "wait") in step.footprint
        released = [e for e in step.footprint if e.op == "release"]
        assert len(released) == 1 and released[0].obj.startswith("Lock#")
        assert released[0].access == WRITE


def _set_then_clear() -> None:
    """T1 waits for an Event that the main thread sets, then clears."""
    ev = threading.Event()
    t = threading.Thread(target=ev.wait)
    t.start()
    time.sleep(0.1)  # virtual time: T1 waits first in the default schedule
    ev.set()
    ev.clear()
    t.join()


@pytest.mark.parametrize(("program", "kind"), [(_handoff, "Condition#"),
                                               (_set_then_clear, "Event#")])
def test_a_resumed_wait_touches_its_object_no_more(program, kind):
    """SCHED-95: the step that resumes a Condition's or an Event's wait opens at the wait's
    point but has no effect on its object (it began to wait in the step that parked; the
    notify or set took it off the waiters): it reads only its wake-up, so a later notify,
    set or clear does not conflict with it."""
    steps = _footprints(program)
    resumed = [s for s in steps if any(e.op == "resume" for e in s.footprint)
               and s.point.obj.startswith(kind)]
    assert resumed, [s.point for s in steps]
    for step in resumed:
        assert step.point.op == "wait"
        assert step.footprint[0] == Effect(f"T{step.point.thread}.run", READ, "resume")
        assert not [e for e in step.footprint if e.obj == step.point.obj], step.footprint


def test_a_threads_last_step_also_ends_it():
    """ENGINE-3"""
    steps = _footprints(_handoff)
    ends = [(s, e) for s in steps for e in s.footprint if e.op == "end"]
    # T1 ends inside its last step (labelled with its last operation, not "end").
    assert any(e.obj == "T1" and s.point.thread == 1 and s.point.op != "end" for s, e in ends), ends
    join = [s for s in steps if s.point.op == "join"]
    # The main thread's join waits for T1; the step that resumes it (a new step, opened
    # by the same point) reads its wake-up and ends T0 (SCHED-31: the run ends with no
    # thread left, so that end depends on nothing more than whether a daemon has started:
    # none has, so it reads no ends).
    assert join and join[0].footprint == [Effect("T1", READ, "join"), Effect("T0.run", READ, "park")]
    assert join[-1].footprint == [Effect("T1", READ, "join"), Effect("T0.run", READ, "resume"),
                                  Effect("T0", WRITE, "end"), Effect(DAEMONS, READ, "end")]
    assert any(a.conflicts_with(b) for a, _ in ends for b in join)


def test_footprints_are_not_kept_unless_asked():
    """ENGINE-3"""
    with Session(RunOptions()) as session:
        run = session.run(_handoff, ReplayScheduler([], strict=False))
    assert run.footprints is None and run.events == []


def test_failure_kinds_are_an_enum_that_compares_as_its_name():
    """ENGINE-6"""
    result = coordkit.explore(lambda: 1 / 0, max_schedules=1, seed=1)
    assert result.failure is not None
    assert result.failure.kind is FailureKind.EXCEPTION
    assert result.failure.kind == "exception" and str(result.failure.kind) == "exception"
    assert {k.value for k in FailureKind} >= {"exception", "deadlock", "step_limit", "invariant", "timeout"}


def test_only_the_run_module_makes_an_execution():
    """ENGINE-1: one run path: nobody but engine/run.py constructs (and so drives) an Execution."""
    makers = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
                    and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == "Execution"):
                makers.append(str(path.relative_to(PACKAGE)))
    assert makers == ["engine/run.py"], makers


@pytest.mark.parametrize("statement", ["import coordkit", "import coordkit.pytest_plugin"])
def test_importing_coordkit_loads_no_engine_and_no_extras(statement):
    """ENGINE-5"""
    code = (f"import sys; {statement}; print(sorted(m for m in sys.modules if m.startswith("
            "('coordkit.engine', 'greenlet', 'hypothesis', 'coordkit.queues', 'rich'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_public_names_load_on_first_use():
    """ENGINE-5"""
    code = ("import sys, coordkit; assert 'coordkit.engine.search' not in sys.modules; "
            "f = coordkit.explore; assert 'coordkit.engine.search' in sys.modules; "
            "assert callable(f) and coordkit.explore is f; "
            "assert set(dir(coordkit)) >= set(coordkit.__all__); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        coordkit.nonesuch  # noqa: B018


def test_the_public_namespace_lists_only_the_public_names():
    """ENGINE-5: nothing of the package's own plumbing (annotations, importlib, typing)
    shows in ``dir(coordkit)``; a submodule never shadows a public function."""
    assert sorted(dir(coordkit)) == sorted([*coordkit.__all__, "__version__"])
    importlib.import_module("coordkit.engine.search")  # once a module named like a function
    importlib.import_module("coordkit.testing")

    assert callable(coordkit.explore) and callable(coordkit.interleavings)
    assert coordkit.explore.__module__ == "coordkit.engine.search"
