"""Stdlib-shaped synchronisation objects over the controlled runtime.

Every method that reads or changes shared synchronisation state starts with a
scheduling point (``Execution.point``); every wait parks the thread on the
object's ``WaitQueue``.  The classes mirror ``threading``'s semantics, including
the errors, so code behaves as it would on real threads.  ``patch`` makes
unmodified code (``threading.Lock()``, ``queue.SimpleQueue()``) create these.

A step's footprint gets the effects beyond its opening operation
(``Execution.effect``): a ``Condition.wait`` also releases its lock.

CPython's own ``Lib/test/lock_tests.py`` and ``test_queue.py`` run over these
classes (``tests/stdlib``): reprs keep the stdlib's shape (the run's label where
the address would be), every class takes weak references, and bad timeouts are
refused with the stdlib's errors.
"""

from __future__ import annotations

import collections
import os
import queue as _queue
import sys
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from greenlet import getcurrent as _getcurrent

from coordkit import sync
from coordkit.engine.accesses import is_user_code
from coordkit.engine.runtime import point_of
from coordkit.engine.task import TaskGreenlet, WaitQueue, check_timeout
from coordkit.errors import UncontrolledUseError

if TYPE_CHECKING:
    from coordkit.engine.runtime import Execution
    from coordkit.engine.task import Task

__all__ = [
    "BoundedSemaphore",
    "Condition",
    "Event",
    "Lock",
    "RLock",
    "Semaphore",
    "Shims",
    "SimpleQueue",
]


# The real primitives a Condition cannot wait on inside a run: made outside it, they
# block the OS thread every controlled thread shares (SCHED-4).
_REAL_PRIMITIVES = (
    type(sync.real_Lock()), type(sync.real_RLock()), threading._PyRLock,  # type: ignore[attr-defined]
    sync.real_Condition, sync.real_Semaphore, sync.real_Event,
)


_NEGATIVE_TIMEOUT = ("timeout value must be positive" if sys.version_info < (3, 13)
                     else "timeout value must be a non-negative number")


def _lock_timeout(blocking: Any, timeout: Any) -> None:
    """The checks ``_thread.lock.acquire`` makes of a timeout other than -1, in its order."""
    t = check_timeout(timeout)
    if not blocking:
        raise ValueError("can't specify a timeout for a non-blocking call")
    if t < 0 and t != -1:
        raise ValueError(_NEGATIVE_TIMEOUT)


def _who(task: Task | None) -> str | None:
    """How the viewer names a thread that holds or waits for an object."""
    return None if task is None else f"{task.label} {task.name}"


_OPAQUE = ".opaque"  # what a library's lock's release reads (SCHED-80)
_ENGINE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _made_by_user() -> bool:
    """Whether the code that made the object being made (the first caller outside the
    engine's shims and patches) is the user's: the tracer sees what it does under it (not
    the stdlib's or coordkit's own queues)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_ENGINE):
        frame = frame.f_back
    return frame is not None and is_user_code(frame.f_code)


def _guard(ex: Execution, obj: Any) -> None:
    g = _getcurrent()  # current_execution(), inlined: this runs at every operation
    if type(g) is not TaskGreenlet or g.task_execution is not ex or ex.finished:
        raise UncontrolledUseError(_used_outside(ex, obj, g))


def _used_outside(ex: Execution, obj: Any, g: Any) -> str:
    """SCHED-4m's error, saying which of its three cases it is and what to do."""
    said = (f"{obj._ck_label} was created inside a controlled run and can only be used by "
            "that run's threads")
    if type(g) is TaskGreenlet and g.task_execution is not ex:
        return (f"{said}; it was made by an earlier run and is used again by this one: the "
                "explored function keeps objects between runs (in a global, a cache, a "
                "handler added to a logger): make them inside the function, or before "
                "exploring, or take them back out before the function returns")
    if ex.finished:
        return (f"{said}, and that run is over (it is used after explore returned, at exit "
                "or by an uncontrolled thread): take what a run made out of global state "
                "(a logging handler, a registry) before the function returns")
    return f"{said}, not by an uncontrolled thread"


def _read(ex: Execution, obj: Any, op: str) -> None:
    """The scheduling point of an operation that only reads (``is_set``, ``locked``,
    ``qsize``, ``empty``).  Once the run is over its objects hold their final state, and
    reading it needs no scheduling (a ``Thread``'s repr after the run reads its Event)."""
    g = _getcurrent()
    if type(g) is TaskGreenlet and g.task_execution is ex and not ex.finished:
        point_of(ex, op, obj._ck_label)
    elif not ex.finished:
        _guard(ex, obj)


class Lock:
    """``threading.Lock`` under the controlled scheduler."""

    __slots__ = ("__weakref__", "_ck_label", "_ck_opaque", "_ex", "_owner", "_waiters")

    def __init__(self, ex: Execution, kind: str = "Lock") -> None:
        self._ex = ex
        self._owner: Task | None = None
        self._waiters = WaitQueue()
        self._ck_label = ex.made(self, kind)
        # Made by a library (a queue's mutex): what its sections touch is not traced, so
        # its releases say so and its sections are never relaxed (SCHED-80).
        self._ck_opaque = not _made_by_user()
        if ex.locks is not None:  # a recorded run: its report says who holds what
            ex.locks.add(self)

    def __repr__(self) -> str:
        state = "locked" if self._owner is not None else "unlocked"
        return f"<{state} controlled.{type(self).__name__} object at {self._ck_label}>"

    def _ck_state(self) -> dict[str, Any]:
        """What the viewer shows of it (read without a scheduling point)."""
        return {"panel": "lock", "kind": type(self).__name__, "label": self._ck_label,
                "owner": _who(self._owner), "waiters": [_who(t) for t in self._waiters]}

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        ex = self._ex
        if timeout != -1:
            _lock_timeout(blocking, timeout)
        g = _getcurrent()  # _guard's check, inlined: a lock's operations are the hottest
        if type(g) is not TaskGreenlet or g.task_execution is not ex or ex.finished:
            _guard(ex, self)
        tstate = ex._tstate
        if tstate is not None and not ex.in_callback:
            # Execution.untraced, inlined (two calls less at every operation on a lock).
            ex.tracer.stop_tracing(tstate)
            ex.in_callback = True
        else:
            tstate = None
        try:
            point_of(ex, "acquire", self._ck_label)
            if not blocking or timeout != -1:
                ex.effect(self, "try")  # it may give up: a release does more than let it go on
            if self._owner is None:
                self._owner = ex.current
                return ex.returned(True)
            if not blocking:
                return ex.returned(False)
            deadline = None if timeout == -1 else ex.clock.deadline(timeout)
            while self._owner is not None:
                woken = self._waiters.park(ex, f"{self._ck_label} held by {self._owner.label}", deadline)
                if not woken and self._owner is not None:
                    return ex.returned(False, timeout=timeout)
            self._owner = ex.current
            # Taken after a wait: after whichever release freed it last, not only the one
            # that woke this thread (another thread may have taken and released it since).
            ex.effect(self, "acquire")
            return ex.returned(True)
        finally:
            if tstate is not None:  # Execution.traced_again, inlined
                ex.in_callback = False
                ex.tracer.resume_tracing(tstate)

    _take = acquire  # for RLock, whose acquire is its own

    def _free(self) -> bool:
        """Let go of the lock; True when that woke a waiter."""
        self._owner = None
        if self._waiters:
            self._waiters.unpark_all(self._ex)
            return True
        return False

    def release(self) -> None:
        ex = self._ex
        g = _getcurrent()
        if type(g) is not TaskGreenlet or g.task_execution is not ex or ex.finished:
            _guard(ex, self)
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        tstate = ex._tstate
        if tstate is not None and not ex.in_callback:  # Execution.untraced, as in acquire
            ex.tracer.stop_tracing(tstate)
            ex.in_callback = True
        else:
            tstate = None
        try:
            point_of(ex, "release", self._ck_label)
            if self._ck_opaque:  # an object of its own: no dependence of trace equivalence's
                ex.observed(self._ck_label + _OPAQUE, "opaque")
            woke = self._free()
            if ex.after_points:
                ex.after("after-release", self, woke=woke)
        finally:
            if tstate is not None:  # Execution.traced_again, inlined
                ex.in_callback = False
                ex.tracer.resume_tracing(tstate)

    def locked(self) -> bool:
        _read(self._ex, self, "locked")
        return self._ex.returned(self._owner is not None)

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()

    # What threading.Condition does with a lock that has no _is_owned & co. (the C lock has
    # none): "owned" is "locked, by anyone", and a wait releases and re-acquires it.  Done
    # here without scheduling points of their own: they are part of the wait's step.
    def _ck_is_owned(self) -> bool:
        return self._owner is not None

    def _ck_release_save(self) -> Any:
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        self._ex.effect(self, "release")
        self._free()
        return None

    def _ck_acquire_restore(self, state: Any) -> None:
        self._take(True, -1)


class RLock(Lock):
    """``threading.RLock`` under the controlled scheduler."""

    __slots__ = ("_count",)

    def __init__(self, ex: Execution) -> None:
        super().__init__(ex, "RLock")
        self._count = 0

    def __repr__(self) -> str:
        owner = self._owner
        return (f"<{'locked' if owner is not None else 'unlocked'} controlled.RLock object "
                f"owner={0 if owner is None else _ident(owner)} count={self._count} "
                f"at {self._ck_label}>")

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._owner is not None and self._owner is self._ex.current:
            if timeout != -1:
                _lock_timeout(blocking, timeout)
            _guard(self._ex, self)
            point_of(self._ex, "acquire", self._ck_label)
            self._count += 1
            return self._ex.returned(True)
        if self._take(blocking, timeout):
            self._count = 1
            return True
        return False

    __enter__ = acquire

    def release(self) -> None:
        ex = self._ex
        _guard(ex, self)
        if self._owner is not ex.current:
            raise RuntimeError("cannot release un-acquired lock")
        point_of(ex, "release", self._ck_label)
        self._count -= 1
        if self._count == 0:
            ex.after("after-release", self, woke=self._free())

    # The C RLock's protocol for threading.Condition, with its errors.
    def _is_owned(self) -> bool:
        return self._owner is not None and self._owner is self._ex.current

    if sys.version_info >= (3, 11):  # as the C RLock, which has it from 3.11
        def _recursion_count(self) -> int:
            return self._count if self._owner is not None and self._owner is self._ex.current else 0

    def _release_save(self) -> Any:
        if self._count == 0:
            raise RuntimeError("cannot release un-acquired lock")
        state = (self._count, self._owner)
        self._count = 0
        self._ex.effect(self, "release")
        self._free()
        return state

    def _acquire_restore(self, state: Any) -> None:
        self._take(True, -1)
        self._count, self._owner = state

    _ck_is_owned = _is_owned
    _ck_release_save = _release_save
    _ck_acquire_restore = _acquire_restore


def _ident(task: Task) -> int:
    """The ``get_ident()`` a controlled thread has (``patch`` answers it the same way)."""
    return _CONTROLLED_IDENT_BASE + task.tid


_CONTROLLED_IDENT_BASE = 1 << 40


class Condition:
    """``threading.Condition`` under the controlled scheduler (waiters notified in FIFO order).

    Its lock is a controlled ``Lock``, ``RLock`` or ``Condition`` (whose lock it then
    shares, as ``threading.Condition(threading.Condition())`` does).  Like the stdlib's,
    it exports the lock's ``_is_owned``, ``_release_save`` and ``_acquire_restore``.
    """

    __slots__ = ("__weakref__", "_acquire_restore", "_ck_label", "_ex", "_is_owned", "_lock",
                 "_release_save", "_waiters", "acquire", "release")

    def __init__(self, ex: Execution, lock: Any = None) -> None:
        if lock is None:
            lock = RLock(ex)
        elif isinstance(lock, _REAL_PRIMITIVES):
            raise TypeError(
                f"Condition(lock={lock!r}): the lock is a real one (created outside the "
                "controlled run, or through a name the run does not patch), so waiting on it "
                "cannot be controlled; create it inside the run, with threading.Lock() or RLock()"
            )
        elif not isinstance(lock, (Lock, Condition)):
            raise TypeError(
                f"Condition(lock={lock!r}): inside a controlled run a Condition's lock must be a "
                "Lock, RLock or Condition made in the run (a wait must release another kind of "
                "lock and start waiting in one step, which coordkit cannot do for it)"
            )
        self._ex = ex
        self._lock = lock
        self._waiters = WaitQueue()
        self._ck_label = ex.made(self, "Condition")
        self.acquire = lock.acquire
        self.release = lock.release
        if isinstance(lock, Condition):
            self._is_owned = lock._is_owned
            self._release_save = lock._release_save
            self._acquire_restore = lock._acquire_restore
        else:
            self._is_owned = lock._ck_is_owned
            self._release_save = lock._ck_release_save
            self._acquire_restore = lock._ck_acquire_restore

    def __repr__(self) -> str:
        return f"<controlled.Condition({self._lock!r}, {len(self._waiters)}) at {self._ck_label}>"

    def _ck_state(self) -> dict[str, Any]:
        owner = getattr(self._lock, "_owner", None)
        return {"panel": "lock", "kind": "Condition", "label": self._ck_label,
                "owner": _who(owner), "lock": getattr(self._lock, "_ck_label", "?"),
                "waiters": [_who(t) for t in self._waiters]}

    def __enter__(self) -> bool:
        return self._lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        ex = self._ex
        _guard(ex, self)
        if not self._is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        tstate = None if ex._tstate is None else ex.untraced()  # SCHED-88
        try:
            point_of(ex, "wait", self._ck_label)
            deadline = ex.clock.deadline(timeout)  # refuses a bad timeout before the lock is let go
            state = self._release_save()
            try:
                return ex.returned(self._waiters.park(ex, f"{self._ck_label}.wait", deadline),
                                   timeout=timeout)
            finally:
                if not ex.killing:
                    self._acquire_restore(state)
        finally:
            if tstate is not None:
                ex.traced_again(tstate)

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        endtime = None
        waittime = timeout
        result = predicate()
        while not result:
            if waittime is not None:
                if endtime is None:
                    endtime = self._ex.clock.now + waittime
                else:
                    waittime = endtime - self._ex.clock.now
                    if waittime <= 0:
                        break
            self.wait(waittime)
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        ex = self._ex
        _guard(ex, self)
        if not self._is_owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        tstate = None if ex._tstate is None else ex.untraced()  # SCHED-88
        try:
            point_of(ex, "notify", self._ck_label)
            woke = bool(self._waiters)
            if woke:
                if n < len(self._waiters):  # it picks some waiters: it reads their order (SCHED-81)
                    ex.observed(self._ck_label, "choose")
                self._waiters.unpark(ex, n)
            ex.after("after-notify", self, woke=woke)
        finally:
            if tstate is not None:
                ex.traced_again(tstate)

    def notify_all(self) -> None:
        self.notify(len(self._waiters))

    def notifyAll(self) -> None:  # noqa: N802 - the stdlib's deprecated alias, which warns
        warnings.warn("notifyAll() is deprecated, use notify_all() instead", DeprecationWarning,
                      stacklevel=2)
        self.notify_all()


class Event:
    """``threading.Event`` under the controlled scheduler."""

    __slots__ = ("__weakref__", "_ck_label", "_ex", "_flag", "_waiters")

    def __init__(self, ex: Execution) -> None:
        self._ex = ex
        self._flag = False
        self._waiters = WaitQueue()
        self._ck_label = ex.made(self, "Event")

    def __repr__(self) -> str:
        return f"<controlled.Event at {self._ck_label}: {'set' if self._flag else 'unset'}>"

    def _ck_state(self) -> dict[str, Any]:
        return {"panel": "event", "kind": "Event", "label": self._ck_label, "set": self._flag,
                "waiters": [_who(t) for t in self._waiters]}

    def is_set(self) -> bool:
        _read(self._ex, self, "is_set")
        return self._ex.returned(self._flag)

    def isSet(self) -> bool:  # noqa: N802 - the stdlib's deprecated alias, which warns
        warnings.warn("isSet() is deprecated, use is_set() instead", DeprecationWarning, stacklevel=2)
        return self.is_set()

    def set(self) -> None:
        ex = self._ex
        _guard(ex, self)
        tstate = None if ex._tstate is None else ex.untraced()  # SCHED-88
        try:
            point_of(ex, "set", self._ck_label)
            if self._flag:
                ex.changed_nothing(self, "set")
                return
            self._flag = True
            woke = bool(self._waiters)
            if woke:
                self._waiters.unpark_all(ex)
            ex.after("after-set", self, woke=woke)
        finally:
            if tstate is not None:
                ex.traced_again(tstate)

    def clear(self) -> None:
        _guard(self._ex, self)
        point_of(self._ex, "clear", self._ck_label)
        if not self._flag:
            self._ex.changed_nothing(self, "clear")
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        """True once the flag is set: a waiter that ``set()`` woke returns True even if
        ``clear()`` ran before it resumed (gh-57711), as the stdlib's does."""
        ex = self._ex
        _guard(ex, self)
        tstate = None if ex._tstate is None else ex.untraced()  # SCHED-88
        try:
            point_of(ex, "wait", self._ck_label)
            if timeout is not None:
                ex.effect(self, "try")  # it may give up: a set does more than let it go on
            if self._flag:
                ex.changed_nothing(self, "wait")
                return ex.returned(True)
            deadline = ex.clock.deadline(timeout)
            return ex.returned(self._waiters.park(ex, f"{self._ck_label}.wait", deadline), timeout=timeout)
        finally:
            if tstate is not None:
                ex.traced_again(tstate)


class Semaphore:
    """``threading.Semaphore`` under the controlled scheduler."""

    __slots__ = ("__weakref__", "_ck_label", "_ex", "_value", "_waiters")

    def __init__(self, ex: Execution, value: int = 1, kind: str = "Semaphore") -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        self._ex = ex
        self._value = value
        self._waiters = WaitQueue()
        self._ck_label = ex.made(self, kind)

    def __repr__(self) -> str:
        return f"<controlled.Semaphore at {self._ck_label}: value={self._value}>"

    def _ck_state(self) -> dict[str, Any]:
        return {"panel": "lock", "kind": type(self).__name__, "label": self._ck_label,
                "value": self._value, "waiters": [_who(t) for t in self._waiters]}

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        ex = self._ex
        if not blocking and timeout is not None:
            raise ValueError("can't specify timeout for non-blocking acquire")
        _guard(ex, self)
        tstate = None if ex._tstate is None else ex.untraced()  # SCHED-88
        try:
            point_of(ex, "acquire", self._ck_label)
            if self._value == 0:
                if not blocking:
                    return ex.returned(False)
                deadline = ex.clock.deadline(timeout)
                while self._value == 0:
                    if not self._waiters.park(ex, f"{self._ck_label}.acquire", deadline) and self._value == 0:
                        return ex.returned(False, timeout=timeout)
                ex.effect(self, "acquire")  # after the release that made it available (see Lock)
            self._value -= 1
            return ex.returned(True)
        finally:
            if tstate is not None:
                ex.traced_again(tstate)

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self, n: int = 1) -> None:
        ex = self._ex
        if n < 1:
            raise ValueError("n must be one or more")
        _guard(ex, self)
        tstate = None if ex._tstate is None else ex.untraced()  # SCHED-88
        try:
            point_of(ex, "release", self._ck_label)
            self._check_release(n)
            self._value += n
            woke = bool(self._waiters)
            if woke:
                # As threading.Semaphore's notify(n): the n longest waiting are woken (a thread
                # that has not waited may still take the value first; then one waits again).
                self._waiters.unpark(ex, n)
            ex.after("after-release", self, woke=woke)
        finally:
            if tstate is not None:
                ex.traced_again(tstate)

    def _check_release(self, n: int) -> None:
        pass


class BoundedSemaphore(Semaphore):
    """``threading.BoundedSemaphore`` under the controlled scheduler."""

    __slots__ = ("_initial_value",)

    def __init__(self, ex: Execution, value: int = 1) -> None:
        super().__init__(ex, value, "BoundedSemaphore")
        self._initial_value = value

    def __repr__(self) -> str:
        return (f"<controlled.BoundedSemaphore at {self._ck_label}: "
                f"value={self._value}/{self._initial_value}>")

    def _check_release(self, n: int) -> None:
        if self._value + n > self._initial_value:
            raise ValueError("Semaphore released too many times")


class SimpleQueue:
    """``queue.SimpleQueue`` under the controlled scheduler."""

    def __init__(self, ex: Execution) -> None:
        self._ex = ex
        self._items: collections.deque[Any] = collections.deque()
        self._waiters = WaitQueue()
        self._ck_label = ex.made(self, "SimpleQueue")

    def __repr__(self) -> str:
        return f"<controlled.SimpleQueue object at {self._ck_label}>"

    def _ck_state(self) -> dict[str, Any]:
        return {"panel": "queue", "kind": "SimpleQueue", "label": self._ck_label,
                "items": list(self._items), "size": len(self._items), "capacity": None,
                "closed": False}

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        ex = self._ex
        if ex.killing:
            # The run is ending or over, and its threads with it: nobody will take this. Pools
            # post wake-ups like this from weakref callbacks once they are collected,
            # which may be after the run or during a later one.
            self._items.append(item)
            return
        _guard(ex, self)
        tstate = None if ex._tstate is None else ex.untraced()  # SCHED-88
        try:
            point_of(ex, "put", self._ck_label)
            self._items.append(item)
            woke = bool(self._waiters)
            if woke:
                self._waiters.unpark(ex, 1)
            ex.after("after-put", self, woke=woke)
        finally:
            if tstate is not None:
                ex.traced_again(tstate)

    def put_nowait(self, item: Any) -> None:
        self.put(item, False)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        ex = self._ex
        deadline = None
        if timeout is not None:
            if check_timeout(timeout) < 0:
                raise ValueError("'timeout' must be a non-negative number")
            deadline = ex.clock.deadline(timeout)  # the clock stands still until this runs
        _guard(ex, self)
        tstate = None if ex._tstate is None else ex.untraced()  # SCHED-88
        try:
            point_of(ex, "get", self._ck_label)
            while not self._items:
                if not block:
                    raise _queue.Empty
                if not self._waiters.park(ex, f"{self._ck_label}.get", deadline) and not self._items:
                    raise _queue.Empty
                ex.effect(self, "get")  # after the put of the item it takes (see Lock)
            item = self._items.popleft()
        finally:
            if tstate is not None:
                ex.traced_again(tstate)
        return ex.returned(item)  # (traced: showing the item may run its repr, the program's)

    def get_nowait(self) -> Any:
        return self.get(False)

    def empty(self) -> bool:
        _read(self._ex, self, "empty")
        return self._ex.returned(not self._items)

    def qsize(self) -> int:
        _read(self._ex, self, "qsize")
        return self._ex.returned(len(self._items))


class Shims:
    """The factories an Execution hands out through ``coordkit.sync``."""

    __slots__ = ("_ex",)

    def __init__(self, ex: Execution) -> None:
        self._ex = ex

    def Lock(self) -> Lock:  # noqa: N802
        return Lock(self._ex)

    def RLock(self) -> RLock:  # noqa: N802
        return RLock(self._ex)

    def Condition(self, lock: Any = None) -> Condition:  # noqa: N802
        return Condition(self._ex, lock)

    def Event(self) -> Event:  # noqa: N802
        return Event(self._ex)

    def Semaphore(self, value: int = 1) -> Semaphore:  # noqa: N802
        return Semaphore(self._ex, value)

    def BoundedSemaphore(self, value: int = 1) -> BoundedSemaphore:  # noqa: N802
        return BoundedSemaphore(self._ex, value)

    def Barrier(self, parties: int, action: Any = None, timeout: float | None = None) -> Any:  # noqa: N802
        # threading.Barrier is pure Python over one Condition(Lock()): reuse it, made
        # over controlled ones, rather than re-implement its generations.
        ex = self._ex
        saved = threading.Condition, threading.Lock
        threading.Condition = lambda lock=None: Condition(ex, lock)  # type: ignore[assignment,misc]
        threading.Lock = lambda: Lock(ex)  # type: ignore[assignment,misc]
        try:
            return sync.real_Barrier(parties, action, timeout)
        finally:
            threading.Condition, threading.Lock = saved  # type: ignore[misc]

    def SimpleQueue(self) -> SimpleQueue:  # noqa: N802
        return SimpleQueue(self._ex)
