"""A controlled thread, how it parks, and the virtual clock it sees.

``Task`` is one thread of a run (a greenlet underneath); ``WaitQueue`` is the one
way a thread waits; ``Clock`` is virtual time.  The ``Execution`` (``runtime``)
decides which task runs; these are what it decides about.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import greenlet

from coordkit.engine.points import Point, Step


class Parker(Protocol):
    """What a WaitQueue needs of the runtime (``runtime.Execution`` is one)."""

    def block(self, queue: WaitQueue | None, what: str, deadline: float | None = None) -> bool: ...

    def wake(self, task: Task, timed_out: bool = False) -> None: ...

__all__ = [
    "BLOCKED", "FINISHED", "RUNNABLE", "TIMEOUT_MAX", "Clock", "Kill", "Names", "Task",
    "TaskGreenlet", "WaitQueue", "WatchdogTimeout", "call_excepthook", "check_timeout", "new_point",
]

RUNNABLE = "runnable"
BLOCKED = "blocked"
FINISHED = "finished"

# The longest timeout the stdlib accepts; above it a wait raises OverflowError.
TIMEOUT_MAX = threading.TIMEOUT_MAX
# The virtual clock starts at fixed values so that a replay sees the same times.
MONOTONIC_ORIGIN = 1_000.0
EPOCH_ORIGIN = 1_700_000_000.0


class Kill(BaseException):
    """Thrown into a controlled thread to end it when its run is over."""


class WatchdogTimeout(BaseException):
    """Raised asynchronously in a run that exceeded its wall-clock budget."""


# Point(...) without NamedTuple's Python-level __new__: one is made at every step.
new_point = functools.partial(tuple.__new__, Point)
_NOT_STARTED = Point(-1, "start")


class TaskGreenlet(greenlet.greenlet):
    """A greenlet that runs one controlled thread."""

    task: Task
    task_execution: Any  # the Execution it belongs to


@dataclass(eq=False, slots=True)
class Task:
    """One controlled thread of an execution."""

    tid: int
    name: str
    daemon: bool
    target: Callable[[], Any]
    label: str  # T<tid>: how reports and points name the thread
    thread: threading.Thread | None = None
    glet: TaskGreenlet | None = None
    state: str = RUNNABLE
    # The point it is at: what it does when it next runs (set at each scheduling point).
    pt: Point = _NOT_STARTED
    waiting_on: str = ""
    parked_on: WaitQueue | None = None
    deadline: float | None = None
    timed_out: bool = False
    # At a yield (sleep(0)) the thread steps aside: it is the last candidate, not the first.
    yielding: bool = False
    joiners: WaitQueue | None = None
    step: Step | None = None  # the step it is in (recorded only when footprints are)
    exception: BaseException | None = None  # what ended it, if it raised

    @property
    def _ck_label(self) -> str:  # how points name a thread
        return self.label


class Clock:
    """Virtual time: advances only when every thread is parked (autojump)."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return MONOTONIC_ORIGIN + self.now

    def time(self) -> float:
        return EPOCH_ORIGIN + self.now

    def deadline(self, timeout: float | None) -> float | None:
        """The virtual instant ``timeout`` seconds from now (None: no deadline); a timeout
        the stdlib would refuse is refused (``check_timeout``)."""
        if timeout is None:
            return None
        return self.now + max(check_timeout(timeout), 0.0)


def check_timeout(timeout: Any) -> float:
    """``timeout`` as a float, refused as the stdlib refuses it when converting it to its C
    clock: above ``threading.TIMEOUT_MAX`` an OverflowError, a NaN a ValueError."""
    t = float(timeout)
    if not t <= TIMEOUT_MAX:  # one comparison when all is well: a NaN compares false too
        if math.isnan(t):
            raise ValueError("Invalid value NaN (not a number)")
        raise OverflowError(_TOO_LARGE)
    return t


_TOO_LARGE = ("timestamp too large to convert to C _PyTime_t" if sys.version_info < (3, 11)
              else "timestamp out of range for platform time_t")


class WaitQueue(list):
    """Threads parked until another thread unparks them (trio's ParkingLot).

    The one way a controlled thread waits: every shim parks on one of these and
    wakes its waiters through it, in FIFO order.  A list of the parked tasks, so
    that making one and asking whether anyone waits cost what a list does.
    """

    __slots__ = ()

    def park(self, ex: Parker, what: str, deadline: float | None = None) -> bool:
        """Park the running thread until unparked (True) or ``deadline`` passes (False)."""
        return ex.block(self, what, deadline)

    def unpark(self, ex: Parker, n: int = 1) -> None:
        """Make the first ``n`` parked threads runnable."""
        for task in self[:n]:
            ex.wake(task)

    def unpark_all(self, ex: Parker) -> None:
        for task in list(self):
            ex.wake(task)


class Names:
    """Per-run, deterministic names and hashes for the objects a run creates: the same
    program under the same schedule names its objects the same in every run."""

    __slots__ = ("_counts", "_hashes")

    _HASH_BASE = 1 << 40

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._hashes = 0

    def label(self, kind: str) -> str:
        """A new object's label (``Lock#2``)."""
        n = self._counts.get(kind, 0) + 1
        self._counts[kind] = n
        return f"{kind}#{n}"

    def stable_hash(self) -> int:
        """A new object's hash (see ``patch.stable_hashes``)."""
        self._hashes += 1
        return self._HASH_BASE + self._hashes


def call_excepthook(task: Task, exc: BaseException) -> None:
    """Hand a thread's exception to ``threading.excepthook``, as a real thread does, through
    the thread's own ``_invoke_excepthook`` (a hook that fails is reported on stderr and to
    ``sys.excepthook``, exactly as for a real thread).  Call it while ``exc`` is being
    handled.  A thread started by ``_thread.start_new_thread`` has no hook to call."""
    thread = task.thread
    if thread is None or isinstance(thread, threading._DummyThread):  # type: ignore[attr-defined]
        return
    invoke = getattr(thread, "_invoke_excepthook", None)
    try:
        if invoke is not None and sys.exc_info()[1] is exc:
            invoke(thread)
        else:
            threading.excepthook(threading.ExceptHookArgs((type(exc), exc, exc.__traceback__, thread)))
    except Kill:
        raise
    except BaseException as hook_exc:
        sys.__excepthook__(type(hook_exc), hook_exc, hook_exc.__traceback__)
