"""What a report needs to explain a failure: the threads as they were when the run
failed, and the preemptions that led there.

Both are taken only in a recorded run (a replay, the shrunk run of an exploration),
when the run fails: a snapshot of every thread of the program (coordkit's own helper
threads left out) with where it is, what it waits for, which locks it holds and the
exception that ended it, if one did; and, at each preemption, which thread was
switched away from, where in the user's code, and which thread ran instead.  The run
unwinds its threads after it ends (a ``with lock:`` releases then): the snapshot is
what the failure saw.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from coordkit.engine.frames import is_machinery, raised_at, user_frame, user_stack, where
from coordkit.engine.task import BLOCKED, FINISHED, Task

__all__ = ["Preemption", "ThreadState", "is_coordkits", "preemption", "thread_states"]

@dataclass(frozen=True)
class ThreadState:
    """One thread of the program when its run failed."""

    label: str  # T0, T1, ...: T0 runs the function given to explore
    name: str
    state: str  # "blocked", "runnable", "not started", "finished" or "died"
    where: str  # the user's line it is at (blocked, runnable), "" when it has ended
    waits_on: str = ""  # what a blocked thread waits for ("Lock#1 held by T1")
    holds: tuple[str, ...] = ()  # the locks it holds
    exception: str = ""  # "TypeError: message", for a thread an exception ended
    raised_at: str = ""  # where the user's code raised it
    stack: str = ""  # a blocked thread's stack, without the engine's frames

    @property
    def who(self) -> str:
        return f"{self.label} {self.name!r}"


@dataclass(frozen=True)
class Preemption:
    """A switch away from a thread that could have gone on running."""

    step: int  # the last step (operation that took effect) before the switch
    thread: str  # "T1 'producer-a'"
    where: str  # the user's line it was at
    operation: str  # what it was about to do there ("acquire Lock#1")
    to: str  # the thread that ran instead

    def __str__(self) -> str:
        op = self.operation
        if op.startswith("after-"):  # a point just after an operation (RACE-9)
            before = f", just after its {op[len('after-'):]}"
        else:
            before = f", before {op}" if op else ""
        return (f"after step {self.step}, {self.thread} was switched away from at {self.where}{before}, "
                f"and {self.to} ran")


def is_coordkits(task: Task, frame: Any) -> bool:
    """True for a thread that runs only coordkit's machinery (an event loop's actor says
    so with ``_ck_helper`` on its target, before it has run a line)."""
    if getattr(task.target, "_ck_helper", False):
        return True
    if frame is not None:
        return is_machinery(user_frame(frame).f_code.co_filename)
    target = getattr(task.thread, "_target", None)
    code = getattr(getattr(target, "__func__", target), "__code__", None)
    return code is not None and is_machinery(code.co_filename)


def preemption(cur: Task, chosen: Task, frame: Any, after: int) -> Preemption:
    """``cur``, at ``frame`` (or its suspended frame), is switched away from for ``chosen``
    once ``after`` operations have taken effect."""
    point = cur.pt
    return Preemption(after, f"{cur.label} {cur.name!r}", where(frame),
                      f"{point.op} {point.obj}".strip(), f"{chosen.label} {chosen.name!r}")


def thread_states(tasks: list[Task], locks: Iterable[Any], helpers: set[int]) -> tuple[ThreadState, ...]:
    """Every thread of the program now, coordkit's own helper threads (``helpers``, by
    tid, and any daemon thread now only in coordkit's code) left out; every thread is
    parked or has ended.  ``locks`` are the run's locks (``_owner``: a Task or None)."""
    holds: dict[int, list[str]] = {}
    for lock in locks:
        owner = lock._owner
        if owner is not None:
            holds.setdefault(owner.tid, []).append(lock._ck_label)
    states = []
    for task in tasks:
        frame = task.glet.gr_frame if task.glet is not None else None
        if task.tid in helpers or (task.daemon and is_coordkits(task, frame)):
            continue
        states.append(_state(task, frame, tuple(holds.get(task.tid, ()))))
    return tuple(states)


def _state(task: Task, frame: Any, holds: tuple[str, ...]) -> ThreadState:
    exc = task.exception
    if exc is not None:
        return ThreadState(task.label, task.name, "died", "", holds=holds,
                           exception=f"{type(exc).__name__}: {exc}", raised_at=raised_at(exc))
    if task.state is FINISHED:
        return ThreadState(task.label, task.name, "finished", "", holds=holds)
    if frame is None:
        return ThreadState(task.label, task.name, "not started", "", holds=holds)
    if task.state is BLOCKED:
        return ThreadState(task.label, task.name, "blocked", where(frame), waits_on=task.waiting_on,
                           holds=holds, stack=user_stack(frame))
    return ThreadState(task.label, task.name, "runnable", where(frame), holds=holds)
