"""Stdlib-shaped synchronisation objects over the controlled runtime.

Every method that reads or changes shared synchronisation state starts with a
scheduling point (``Execution.point``); every wait parks the thread on the
object's ``WaitQueue``.  The classes mirror ``threading``'s semantics, including
the errors, so code behaves as it would on real threads.  ``patch`` makes
unmodified code (``threading.Lock()``, ``queue.SimpleQueue()``) create these.

A step's footprint gets the effects beyond its opening operation
(``Execution.effect``): a ``Condition.wait`` also releases its lock.
"""

from __future__ import annotations

import collections
import queue as _queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from greenlet import getcurrent as _getcurrent

from coordkit import sync
from coordkit.engine.task import TaskGreenlet, WaitQueue
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


def _guard(ex: Execution, obj: Any) -> None:
    g = _getcurrent()  # current_execution(), inlined: this runs at every operation
    if type(g) is not TaskGreenlet or g.task_execution is not ex or ex.finished:
        raise UncontrolledUseError(
            f"{obj._ck_label} was created inside a controlled run and can only be used by "
            "that run's threads"
        )


class Lock:
    """``threading.Lock`` under the controlled scheduler."""

    __slots__ = ("_ck_label", "_ex", "_owner", "_waiters")

    def __init__(self, ex: Execution, kind: str = "Lock") -> None:
        self._ex = ex
        self._owner: Task | None = None
        self._waiters = WaitQueue()
        self._ck_label = ex.names.label(kind)

    def __repr__(self) -> str:
        state = "locked" if self._owner is not None else "unlocked"
        return f"<controlled {state} {self._ck_label}>"

    def _take(self, blocking: bool, timeout: float) -> bool:
        ex = self._ex
        if not blocking and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        if timeout < 0 and timeout != -1:
            raise ValueError("timeout value must be a non-negative number")
        _guard(ex, self)
        ex.point("acquire", self._ck_label)
        if self._owner is None:
            self._owner = ex.current
            return True
        if not blocking:
            return False
        deadline = None if timeout == -1 else ex.clock.deadline(timeout)
        while self._owner is not None:
            woken = self._waiters.park(ex, f"{self._ck_label} held by {self._owner.label}", deadline)
            if not woken and self._owner is not None:
                return False
        self._owner = ex.current
        return True

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._take(blocking, timeout)

    def _free(self) -> None:
        self._owner = None
        if self._waiters:
            self._waiters.unpark_all(self._ex)

    def release(self) -> None:
        ex = self._ex
        _guard(ex, self)
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        ex.point("release", self._ck_label)
        self._free()

    def locked(self) -> bool:
        _guard(self._ex, self)
        self._ex.point("locked", self._ck_label)
        return self._owner is not None

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()

    # The protocol Condition uses (as threading.Condition does with its lock).
    def _is_owned(self) -> bool:
        return self._owner is not None and self._owner is self._ex.current

    def _release_save(self) -> Any:
        if self._ex.recorder is not None:
            self._ex.effect(self, "release")
        self._free()
        return None

    def _acquire_restore(self, state: Any) -> None:
        self._take(True, -1)


class RLock(Lock):
    """``threading.RLock`` under the controlled scheduler."""

    __slots__ = ("_count",)

    def __init__(self, ex: Execution) -> None:
        super().__init__(ex, "RLock")
        self._count = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._owner is not None and self._owner is self._ex.current:
            _guard(self._ex, self)
            self._ex.point("acquire", self._ck_label)
            self._count += 1
            return True
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
        ex.point("release", self._ck_label)
        self._count -= 1
        if self._count == 0:
            self._free()

    def _release_save(self) -> Any:
        count = self._count
        self._count = 0
        if self._ex.recorder is not None:
            self._ex.effect(self, "release")
        self._free()
        return count

    def _acquire_restore(self, state: Any) -> None:
        self._take(True, -1)
        self._count = state


class Condition:
    """``threading.Condition`` under the controlled scheduler (waiters notified in FIFO order)."""

    __slots__ = ("_ck_label", "_ex", "_lock", "_waiters", "acquire", "release")

    def __init__(self, ex: Execution, lock: Any = None) -> None:
        if lock is None:
            lock = RLock(ex)
        elif not isinstance(lock, Lock):
            raise TypeError(
                f"Condition(lock={lock!r}): the lock was created outside the controlled run, "
                "so waiting on it cannot be controlled; create it inside the run"
            )
        self._ex = ex
        self._lock = lock
        self._waiters = WaitQueue()
        self._ck_label = ex.names.label("Condition")
        self.acquire = lock.acquire
        self.release = lock.release

    def __repr__(self) -> str:
        return f"<controlled {self._ck_label} over {self._lock!r}>"

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        ex = self._ex
        _guard(ex, self)
        if not self._lock._is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        ex.point("wait", self._ck_label)
        state = self._lock._release_save()
        try:
            return self._waiters.park(ex, f"{self._ck_label}.wait", ex.clock.deadline(timeout))
        finally:
            if not ex.killing:
                self._lock._acquire_restore(state)

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
        if not self._lock._is_owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        ex.point("notify", self._ck_label)
        if self._waiters:
            self._waiters.unpark(ex, n)

    def notify_all(self) -> None:
        self.notify(len(self._waiters))

    notifyAll = notify_all  # noqa: N815 - stdlib alias


class Event:
    """``threading.Event`` under the controlled scheduler."""

    __slots__ = ("_ck_label", "_ex", "_flag", "_waiters")

    def __init__(self, ex: Execution) -> None:
        self._ex = ex
        self._flag = False
        self._waiters = WaitQueue()
        self._ck_label = ex.names.label("Event")

    def __repr__(self) -> str:
        return f"<controlled {self._ck_label} {'set' if self._flag else 'unset'}>"

    def is_set(self) -> bool:
        _guard(self._ex, self)
        self._ex.point("is_set", self._ck_label)
        return self._flag

    isSet = is_set  # noqa: N815

    def set(self) -> None:
        ex = self._ex
        _guard(ex, self)
        ex.point("set", self._ck_label)
        self._flag = True
        if self._waiters:
            self._waiters.unpark_all(ex)

    def clear(self) -> None:
        _guard(self._ex, self)
        self._ex.point("clear", self._ck_label)
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        ex = self._ex
        _guard(ex, self)
        ex.point("wait", self._ck_label)
        if not self._flag:
            self._waiters.park(ex, f"{self._ck_label}.wait", ex.clock.deadline(timeout))
        return self._flag


class Semaphore:
    """``threading.Semaphore`` under the controlled scheduler."""

    __slots__ = ("_ck_label", "_ex", "_value", "_waiters")

    def __init__(self, ex: Execution, value: int = 1, kind: str = "Semaphore") -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        self._ex = ex
        self._value = value
        self._waiters = WaitQueue()
        self._ck_label = ex.names.label(kind)

    def __repr__(self) -> str:
        return f"<controlled {self._ck_label} value={self._value}>"

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        ex = self._ex
        if not blocking and timeout is not None:
            raise ValueError("can't specify timeout for non-blocking acquire")
        _guard(ex, self)
        ex.point("acquire", self._ck_label)
        deadline = ex.clock.deadline(timeout)
        while self._value == 0:
            if not blocking:
                return False
            if not self._waiters.park(ex, f"{self._ck_label}.acquire", deadline) and self._value == 0:
                return False
        self._value -= 1
        return True

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self, n: int = 1) -> None:
        ex = self._ex
        if n < 1:
            raise ValueError("n must be one or more")
        _guard(ex, self)
        ex.point("release", self._ck_label)
        self._check_release(n)
        self._value += n
        if self._waiters:
            self._waiters.unpark_all(ex)

    def _check_release(self, n: int) -> None:
        pass


class BoundedSemaphore(Semaphore):
    """``threading.BoundedSemaphore`` under the controlled scheduler."""

    __slots__ = ("_initial_value",)

    def __init__(self, ex: Execution, value: int = 1) -> None:
        super().__init__(ex, value, "BoundedSemaphore")
        self._initial_value = value

    def _check_release(self, n: int) -> None:
        if self._value + n > self._initial_value:
            raise ValueError("Semaphore released too many times")


class SimpleQueue:
    """``queue.SimpleQueue`` under the controlled scheduler."""

    def __init__(self, ex: Execution) -> None:
        self._ex = ex
        self._items: collections.deque[Any] = collections.deque()
        self._waiters = WaitQueue()
        self._ck_label = ex.names.label("SimpleQueue")

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        ex = self._ex
        if ex.killing:
            # The run is ending or over, and its threads with it: nobody will take this. Pools
            # post wake-ups like this from weakref callbacks once they are collected,
            # which may be after the run or during a later one.
            self._items.append(item)
            return
        _guard(ex, self)
        ex.point("put", self._ck_label)
        self._items.append(item)
        if self._waiters:
            self._waiters.unpark(ex, 1)

    def put_nowait(self, item: Any) -> None:
        self.put(item, False)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        ex = self._ex
        if timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        _guard(ex, self)
        ex.point("get", self._ck_label)
        deadline = ex.clock.deadline(timeout)
        while not self._items:
            if not block:
                raise _queue.Empty
            if not self._waiters.park(ex, f"{self._ck_label}.get", deadline) and not self._items:
                raise _queue.Empty
        return self._items.popleft()

    def get_nowait(self) -> Any:
        return self.get(False)

    def empty(self) -> bool:
        _guard(self._ex, self)
        self._ex.point("empty", self._ck_label)
        return not self._items

    def qsize(self) -> int:
        _guard(self._ex, self)
        self._ex.point("qsize", self._ck_label)
        return len(self._items)


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
