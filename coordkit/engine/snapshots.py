"""What the world looked like at a step: threads, stacks, source, locks, queues, clock.

A replayed run (one that records rows) keeps a snapshot at each of its steps,
taken as a thread goes on from its scheduling point, just before its operation
takes effect: each thread's state and user stack, the source around the acting
thread's line, the state of the run's synchronisation objects, and the virtual
clock.  Exploration runs record no rows, so they take none.

Objects are registered, not searched for: a shim when it is made, a coordkit queue
or Coordinator when it first starts an operation (``Execution.note``).  Each
describes itself with ``_ck_state()`` (a small dict of plain values, ``"panel"``
saying where it is shown) and is held weakly, so a replay keeps no object of the
program alive (a frame's locals are never read: on CPython before 3.13 reading
them keeps their values alive).  The engine never imports a primitive:
``_ck_state`` is the whole protocol.

Values are short strings (reprs cut to ``REPR_LIMIT``); escaping is the page's job.
Reading the state makes no scheduling point: the run is marked as in the caller's
code while a snapshot is taken, so a ``__repr__`` that takes a lock is not a step.
"""

from __future__ import annotations

import linecache
import os
import weakref
from typing import Any

from coordkit.engine.frames import place, user_frame, user_frames
from coordkit.engine.task import BLOCKED, FINISHED, Task

__all__ = ["REPR_LIMIT", "Snapshots", "short_repr"]

REPR_LIMIT = 80
_CONTEXT = 3  # source lines shown either side of the current one
_STACK_DEPTH = 8  # user frames kept per thread, innermost first
_SCAN = 64  # items of a queue shown
_MAX_OBJECTS = 256  # objects shown: a run that makes more shows its first ones


def short_repr(value: Any, limit: int = REPR_LIMIT) -> str:
    """``repr(value)`` cut to ``limit`` characters; a repr that raises is named, not raised."""
    try:
        text = repr(value)
    except Exception as exc:  # the program's __repr__: its bug is not the viewer's
        text = f"<repr failed: {type(exc).__name__}>"
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Snapshots(list):
    """The snapshots of one run, one per step in order (the first ``LIMIT`` steps), and
    the objects seen so far."""

    __slots__ = ("_seen", "_stacks")

    LIMIT = 5000  # steps: a longer run is shown without the world after these

    def __init__(self) -> None:
        super().__init__()
        # id -> object, in the order first seen, held weakly: a replay must not keep the
        # program's objects alive (a weak reference to a lock must die as it would).
        self._seen: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        # tid -> (the point the thread was at when its stack was last read, the stack): a
        # thread still at that point (the same Point object) has run none of the user's
        # code since, so its frames are neither read nor looked through again.  (Not a
        # frame's id: the innermost frame of a parked thread is the engine's, made anew
        # at each switch, and an id can be reused for another.)
        self._stacks: dict[int, tuple[Any, list[str]]] = {}

    def take(self, task: Task, frame: Any, now: float, step: int) -> None:
        """Add the world as ``task``'s operation at ``frame`` takes effect, as step
        ``step``."""
        ex = task.glet.task_execution if task.glet is not None else None
        if ex is None or len(self) >= self.LIMIT:
            return
        saved = ex._in_callers_code
        ex._in_callers_code = True  # reading state (a repr) makes no scheduling point
        try:
            self.append(self._world(ex, task, frame, now, step))
        finally:
            ex._in_callers_code = saved

    def _world(self, ex: Any, acting: Task, frame: Any, now: float, step: int) -> dict[str, Any]:
        threads = [{"tid": task.tid, "name": _cut(str(task.name), REPR_LIMIT),
                    "state": _state(task, acting), "stack": self._stack(task, acting, frame)}
                   for task in ex.tasks]
        return {
            "step": step, "tid": acting.tid, "clock": float(now),
            "threads": threads, "source": _source(user_frame(frame)),
            "objects": [state for obj in list(self._seen.values()) if (state := _state_of(obj))],
        }

    def _stack(self, task: Task, acting: Task, frame: Any) -> list[str]:
        """The thread's user stack, innermost first; its frames' objects are looked for."""
        top = frame if task is acting else (task.glet.gr_frame if task.glet else None)
        last = self._stacks.get(task.tid)
        if task is not acting and last is not None and last[0] is task.pt:
            return last[1]
        frames = user_frames(top)
        stack = [place(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
                 for f in frames[:_STACK_DEPTH]]
        self._stacks[task.tid] = (task.pt, stack)
        return stack

    def add(self, obj: Any) -> None:
        """Show ``obj`` (a shim, a queue, a Coordinator: anything with ``_ck_state()``) in
        this snapshot and every later one, for as long as the program keeps it."""
        if _describes_itself(obj) and len(self._seen) < _MAX_OBJECTS:
            try:
                self._seen[id(obj)] = obj
            except TypeError:  # no weak references to it: not shown
                pass


def _describes_itself(value: Any) -> bool:
    return callable(getattr(type(value), "_ck_state", None))


def _state(task: Task, acting: Task) -> str:
    if task is acting:
        return "running"
    if task.state is FINISHED:
        return "finished"
    if task.state is BLOCKED:
        return f"blocked: {_cut(task.waiting_on, REPR_LIMIT)}" if task.waiting_on else "blocked"
    if task.glet is not None and not task.glet and not task.glet.dead:
        return "runnable (not started)"
    return "runnable"


def _state_of(obj: Any) -> dict[str, Any] | None:
    """The object's state as plain values, or None if it cannot say."""
    try:
        state = dict(obj._ck_state())
    except Exception as exc:  # the object is half made or half torn down
        return {"panel": "other", "kind": type(obj).__name__, "label": type(obj).__name__,
                "error": f"state unavailable: {type(exc).__name__}"}
    for key, value in state.items():
        if key == "items":
            state[key] = [short_repr(i) for i in list(value)[:_SCAN]]
        elif isinstance(value, str):
            state[key] = _cut(value, REPR_LIMIT)
        elif isinstance(value, (list, tuple)):
            state[key] = [_cut(str(v), REPR_LIMIT) for v in value[:_SCAN]]
    return state


def _source(frame: Any) -> dict[str, Any] | None:
    """The lines around ``frame``'s current one."""
    if frame is None:
        return None
    filename, line = frame.f_code.co_filename, frame.f_lineno
    lines = linecache.getlines(filename)
    first = max(line - _CONTEXT, 1)
    shown = [[n, _cut(lines[n - 1].rstrip("\n"), 160)]
             for n in range(first, min(line + _CONTEXT, len(lines)) + 1)]
    return {"file": os.path.basename(filename), "line": line,
            "function": frame.f_code.co_name, "lines": shown}
