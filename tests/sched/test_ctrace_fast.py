"""The compiled tracer's shortcuts change nothing but the cost (SCHED-67): it reads the
Execution's attributes where the generic look-up would find them, and decides a call of the
user's code itself only where the Python global trace function would decide it the same way."""

from __future__ import annotations

import sys
import threading

import pytest

import coordkit
from coordkit.engine import runtime, tracing

pytestmark = pytest.mark.skipif(
    runtime.ACCELERATED is None,
    reason="the C accelerator is not built here (or COORDKIT_PURE_PYTHON=1)")


class _Boom(Exception):
    pass


def _raising(self):
    raise _Boom


def _execution(cls: type) -> runtime.Execution:
    return cls(coordkit.RandomScheduler(1), shims=lambda ex: None)


def test_a_data_descriptor_of_the_execution_class_wins_over_its_dict():
    """SCHED-67: where the Execution's class (a subclass, or one changed after the
    accelerator first read it) defines a name as a data descriptor, the accelerator's point
    reads the descriptor, as the generic look-up does, not a stale entry of the instance's
    ``__dict__``."""

    class Plain(runtime.Execution):
        pass

    ex = _execution(Plain)
    assert runtime.ACCELERATED.stay(ex, "line", "", False) is False  # (no thread: not taken)
    Plain.killing = property(_raising, lambda self, value: None)  # the class changes
    ex.__dict__["killing"] = False
    with pytest.raises(_Boom):
        runtime.ACCELERATED.stay(ex, "line", "", False)

    class Odd(runtime.Execution):
        killing = property(_raising, lambda self, value: None)

    odd = _execution(Odd)
    odd.__dict__["killing"] = False
    with pytest.raises(_Boom):
        runtime.ACCELERATED.stay(odd, "line", "", False)


def _counter() -> None:
    box = [0]
    lock = threading.Lock()

    def bump() -> None:
        for _ in range(2):
            with lock:
                value = box[0]
                box[0] = value + 1

    threads = [threading.Thread(target=bump) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box[0] == 6, box[0]


@pytest.mark.skipif(getattr(runtime.ACCELERATED, "settrace", None) is None,
                    reason="the C global trace function is 3.11's")
def test_a_call_of_the_users_code_is_decided_in_c_once_its_offsets_are_known(monkeypatch):
    """SCHED-67: the global trace function is asked about a user function's call only until
    the runs' tracer mode knows the function's offsets; the C trace function decides the rest,
    and the frames it traces make the same points: every run is the one made when Python
    decides every call."""
    asked: list[str] = []
    decide = tracing._global_trace

    def counting(frame, event, arg):
        asked.append(frame.f_code.co_name)
        return decide(frame, event, arg)

    runs: list[object] = []
    run = runtime.Execution.run

    def logged(self, fn):
        run(self, fn)
        runs.append((self.choices, self.steps))
        return self

    def explore(granularity: str = "line") -> list[tuple[object, int]]:
        runs.clear()
        coordkit.explore(_counter, granularity=granularity, max_schedules=30, seed=3,
                         races="ignore")
        return list(runs)

    monkeypatch.setattr(runtime.Execution, "run", logged)
    monkeypatch.setattr(tracing, "_global_trace", counting)
    fast = explore()
    called = asked.count("bump")
    accelerated = tracing.ACCELERATED
    accelerated.configure_calls({}, tracing.USER, tracing._instruction,
                                tracing.greenlet.getcurrent, tracing.TaskGreenlet)
    try:  # (no code is known to be the user's: Python decides every call)
        slow = explore()
    finally:
        accelerated.configure_calls(tracing._traced_cache, tracing.USER, tracing._instruction,
                                    tracing.greenlet.getcurrent, tracing.TaskGreenlet)
    assert called <= 1, called
    assert asked.count("bump") - called >= 3 * len(slow) > 0  # (each thread's call, each run)
    assert len(fast) == 30 and fast == slow
    # (the frames the C trace function traced made their line points)
    assert min(steps for _choices, steps in fast) > max(steps for _c, steps in explore("sync"))


def _task(tid: int, state: str, *, yielding: bool = False) -> runtime.Task:
    task = runtime.Task(tid, f"t{tid}", False, lambda: None, f"T{tid}", None, None, state)
    task.pt = runtime.new_point((tid, "line", "", yielding, tid))
    task.yielding = yielding
    return task


@pytest.mark.timeout(30)
@pytest.mark.parametrize("yielding", [False, True])
@pytest.mark.parametrize("cur", [None, 0, 1, 3])
def test_the_candidates_made_in_c_are_those_of_execution_enabled(cur, yielding):
    """SCHED-67: ``enabled(tasks, cur)`` lists the runnable threads' points in
    ``Execution._enabled``'s order (current first, round-robin after it, a yielding current
    last), whichever threads are parked or ended."""
    ex = _execution(runtime.Execution)
    states = [runtime.RUNNABLE, runtime.BLOCKED, runtime.RUNNABLE, runtime.RUNNABLE,
              runtime.FINISHED]
    ex.tasks = [_task(i, state, yielding=yielding and i == cur) for i, state in enumerate(states)]
    current = None if cur is None else ex.tasks[cur]
    assert runtime.ACCELERATED.enabled(ex.tasks, current) == ex._enabled(current)
    with pytest.raises(TypeError):
        runtime.ACCELERATED.enabled(tuple(ex.tasks), current)


def _both_walks() -> tuple[bool, bool]:
    from coordkit.engine import patch

    return patch._importing(), patch._importing_walk()


@pytest.mark.timeout(30)
def test_the_import_walk_made_in_c_is_patch_importing_walk(tmp_path, monkeypatch):
    """``importing()`` answers as ``patch._importing_walk``: True while a module is being
    imported on the calling thread (a frame above the caller's caller is importlib's),
    else False."""
    from coordkit.engine import patch

    assert patch._importing is runtime.ACCELERATED.importing
    assert _both_walks() == (False, False)
    (tmp_path / "ck_walked_at_import.py").write_text(
        "from tests.sched.test_ctrace_fast import _both_walks\nSEEN = _both_walks()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import ck_walked_at_import

        assert ck_walked_at_import.SEEN == (True, True)
    finally:
        sys.modules.pop("ck_walked_at_import", None)


@pytest.mark.timeout(30)
def test_the_point_made_in_c_is_execution_point():
    """``point(ex, kind, obj)`` does what ``Execution.point`` does: nothing while the run
    unwinds, ``ex.point`` itself for a traced thread (it stops tracing around the point),
    and for an untraced one the point taken by ``stay`` or else by ``ex._reach``."""
    calls = []

    class Watched(runtime.Execution):
        def point(self, kind, obj=""):
            calls.append(("point", kind, obj))

        def _reach(self, kind, obj):
            calls.append(("reach", kind, obj))

    ex = _execution(Watched)
    ex._tstate, ex.in_callback = 1, False  # a traced thread
    assert runtime.ACCELERATED.point(ex, "acquire", "Lock#1") is None
    assert calls == [("point", "acquire", "Lock#1")]
    calls.clear()
    ex._tstate = None
    ex.killing = True
    runtime.ACCELERATED.point(ex, "acquire", "Lock#1")
    assert calls == []
    ex.killing = False
    runtime.ACCELERATED.point(ex, "acquire")  # no thread runs: stay declines, _reach takes it
    assert calls == [("reach", "acquire", "")]
    assert runtime.point_of is runtime.ACCELERATED.point
