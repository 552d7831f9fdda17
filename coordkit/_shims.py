"""Stdlib-shaped synchronisation objects over the controlled runtime, and the patching
that makes unmodified code use them.

Every method that reads or changes shared synchronisation state starts with a
scheduling point (``Execution.point``); every wait parks the thread with
``Execution.block``.  The classes mirror ``threading``'s semantics, including
the errors, so code behaves as it would on real threads.

While a controlled run is active, ``threading.Lock`` & co., ``queue.SimpleQueue``
and the ``time`` functions are replaced by factories that give these shims to
controlled threads and the real objects to everyone else (the test runner's own
threads keep working).  ``threading.Thread.start/join/is_alive`` are replaced once
and for good: for a thread never started under control they are the originals.
"""

from __future__ import annotations

import _thread
import _threading_local
import collections
import functools
import queue as _queue
import sys
import threading
import time as _time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coordkit import sync
from coordkit._runtime import FINISHED, Kill, current_execution

if TYPE_CHECKING:
    from coordkit._runtime import Execution, Task


class UncontrolledUseError(RuntimeError):
    """A synchronisation object made inside a controlled run was used outside it."""


def _guard(ex: Execution, obj: Any) -> None:
    if current_execution() is not ex:
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
        self._waiters: list[Task] = []
        self._ck_label = ex.label(kind)

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
        ex.point("acquire", self)
        if self._owner is None:
            self._owner = ex.current
            return True
        if not blocking:
            return False
        deadline = None if timeout == -1 else ex.clock.deadline(timeout)
        while self._owner is not None:
            woken = ex.block(self._waiters, f"{self._ck_label} held by {self._owner.label}", deadline)
            if not woken and self._owner is not None:
                return False
        self._owner = ex.current
        return True

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._take(blocking, timeout)

    def _free(self) -> None:
        self._owner = None
        wake = self._ex.wake
        for t in list(self._waiters):
            wake(t)

    def release(self) -> None:
        ex = self._ex
        _guard(ex, self)
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        ex.point("release", self)
        self._free()

    def locked(self) -> bool:
        _guard(self._ex, self)
        self._ex.point("locked", self)
        return self._owner is not None

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()

    # The protocol Condition uses (as threading.Condition does with its lock).
    def _is_owned(self) -> bool:
        return self._owner is not None and self._owner is self._ex.current

    def _release_save(self) -> Any:
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
            self._ex.point("acquire", self)
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
        ex.point("release", self)
        self._count -= 1
        if self._count == 0:
            self._free()

    def _release_save(self) -> Any:
        count = self._count
        self._count = 0
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
        self._waiters: list[Task] = []
        self._ck_label = ex.label("Condition")
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
        ex.point("wait", self)
        state = self._lock._release_save()
        try:
            return ex.block(self._waiters, f"{self._ck_label}.wait", ex.clock.deadline(timeout))
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
        ex.point("notify", self)
        for t in self._waiters[:n]:
            ex.wake(t)

    def notify_all(self) -> None:
        self.notify(len(self._waiters))

    notifyAll = notify_all  # noqa: N815 - stdlib alias


class Event:
    """``threading.Event`` under the controlled scheduler."""

    __slots__ = ("_ck_label", "_ex", "_flag", "_waiters")

    def __init__(self, ex: Execution) -> None:
        self._ex = ex
        self._flag = False
        self._waiters: list[Task] = []
        self._ck_label = ex.label("Event")

    def __repr__(self) -> str:
        return f"<controlled {self._ck_label} {'set' if self._flag else 'unset'}>"

    def is_set(self) -> bool:
        _guard(self._ex, self)
        self._ex.point("is_set", self)
        return self._flag

    isSet = is_set  # noqa: N815

    def set(self) -> None:
        ex = self._ex
        _guard(ex, self)
        ex.point("set", self)
        self._flag = True
        for t in list(self._waiters):
            ex.wake(t)

    def clear(self) -> None:
        _guard(self._ex, self)
        self._ex.point("clear", self)
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        ex = self._ex
        _guard(ex, self)
        ex.point("wait", self)
        if not self._flag:
            ex.block(self._waiters, f"{self._ck_label}.wait", ex.clock.deadline(timeout))
        return self._flag


class Semaphore:
    """``threading.Semaphore`` under the controlled scheduler."""

    __slots__ = ("_ck_label", "_ex", "_value", "_waiters")

    def __init__(self, ex: Execution, value: int = 1, kind: str = "Semaphore") -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        self._ex = ex
        self._value = value
        self._waiters: list[Task] = []
        self._ck_label = ex.label(kind)

    def __repr__(self) -> str:
        return f"<controlled {self._ck_label} value={self._value}>"

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        ex = self._ex
        if not blocking and timeout is not None:
            raise ValueError("can't specify timeout for non-blocking acquire")
        _guard(ex, self)
        ex.point("acquire", self)
        deadline = ex.clock.deadline(timeout)
        while self._value == 0:
            if not blocking:
                return False
            if not ex.block(self._waiters, f"{self._ck_label}.acquire", deadline) and self._value == 0:
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
        ex.point("release", self)
        self._check_release(n)
        self._value += n
        for t in list(self._waiters):
            ex.wake(t)

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
        self._waiters: list[Task] = []
        self._ck_label = ex.label("SimpleQueue")

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        ex = self._ex
        if ex.killing:
            # The run is ending or over, and its threads with it: nobody will take this. Pools
            # post wake-ups like this from weakref callbacks once they are collected,
            # which may be after the run or during a later one.
            self._items.append(item)
            return
        _guard(ex, self)
        ex.point("put", self)
        self._items.append(item)
        if self._waiters:
            ex.wake(self._waiters[0])

    def put_nowait(self, item: Any) -> None:
        self.put(item, False)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        ex = self._ex
        if timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        _guard(ex, self)
        ex.point("get", self)
        deadline = ex.clock.deadline(timeout)
        while not self._items:
            if not block:
                raise _queue.Empty
            if not ex.block(self._waiters, f"{self._ck_label}.get", deadline) and not self._items:
                raise _queue.Empty
        return self._items.popleft()

    def get_nowait(self) -> Any:
        return self.get(False)

    def empty(self) -> bool:
        _guard(self._ex, self)
        self._ex.point("empty", self)
        return not self._items

    def qsize(self) -> int:
        _guard(self._ex, self)
        self._ex.point("qsize", self)
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
        # threading.Barrier is pure Python over Condition(Lock()), which the patch
        # turns into shims; reuse it rather than re-implement its generations.
        with _patched_sync_factories():
            return sync.real_Barrier(parties, action, timeout)

    def SimpleQueue(self) -> SimpleQueue:  # noqa: N802
        return SimpleQueue(self._ex)


# -- threads -----------------------------------------------------------------

_orig_start = threading.Thread.start
_orig_join = threading.Thread.join
_orig_is_alive = threading.Thread.is_alive
_CONTROLLED_IDENT_BASE = 1 << 40


def _thread_start(self: threading.Thread) -> None:
    ex = current_execution()
    if ex is None:
        _orig_start(self)
        return
    if not self._initialized:  # type: ignore[attr-defined]
        raise RuntimeError("thread.__init__() not called")
    if self.__dict__.get("_ck_task") is not None:
        raise RuntimeError("threads can only be started once")
    ex.point("start", self.name)
    task = ex.spawn(self.run, self.name, self.daemon, thread=self)
    self._ck_task = task  # type: ignore[attr-defined]
    self._ident = _CONTROLLED_IDENT_BASE + task.tid  # type: ignore[attr-defined]


def _thread_join(self: threading.Thread, timeout: float | None = None) -> None:
    task = self.__dict__.get("_ck_task")
    if task is None:
        _orig_join(self, timeout)
        return
    ex = current_execution()
    if ex is None or task.state is FINISHED:
        return
    if task is ex.current:
        raise RuntimeError("cannot join current thread")
    ex.point("join", self.name)
    if task.state is not FINISHED:
        ex.block(task.exit_waiters, f"join({task.label})", ex.clock.deadline(timeout))


def _thread_is_alive(self: threading.Thread) -> bool:
    task = self.__dict__.get("_ck_task")
    if task is None:
        return _orig_is_alive(self)
    ex = current_execution()
    if ex is not None:
        ex.point("is_alive", self.name)
    return task.state is not FINISHED


def install_thread_hooks() -> None:
    """Route ``Thread.start/join/is_alive`` through the runtime for controlled threads."""
    threading.Thread.start = _thread_start  # type: ignore[method-assign]
    threading.Thread.join = _thread_join  # type: ignore[method-assign]
    threading.Thread.is_alive = _thread_is_alive  # type: ignore[method-assign]
    stable_hashes(threading.Thread)
    import concurrent.futures._base

    stable_hashes(concurrent.futures._base.Future)


def stable_hashes(cls: type) -> None:
    """Give instances of ``cls`` made inside a run a hash that is the same in every run.

    Objects hash by address by default, and a set's iteration order follows the
    hashes: ``ThreadPoolExecutor.shutdown`` joins the threads of a set, and
    ``as_completed`` yields futures from sets.  With addresses, the same schedule
    would run differently from one run to the next, and no trace could replay.
    Installed once and for good: an object's hash must not change while it lives.
    """
    if cls.__dict__.get("_ck_stable_hash"):
        return
    original_init = cls.__init__

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        ex = current_execution()
        if ex is not None:
            self.__dict__["_ck_hash"] = ex.stable_hash()
        original_init(self, *args, **kwargs)

    def __hash__(self: Any) -> int:  # noqa: N807
        h = self.__dict__.get("_ck_hash")
        return object.__hash__(self) if h is None else h

    cls.__init__ = __init__  # type: ignore[misc]
    cls.__hash__ = __hash__  # type: ignore[method-assign]
    cls._ck_stable_hash = True  # type: ignore[attr-defined]


# -- module patching -----------------------------------------------------------


def _importing() -> bool:
    """True while a module is being imported on the calling thread.

    A controlled thread's stack ends at the runtime's entry point, so this means a
    module was first imported inside the run: what its import creates (a module's
    global lock, a handler's lock) is global state that outlives the run, like an
    object created before it.  Class bodies, ``exec`` and ``eval`` in the user's
    own functions are not imports.
    """
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _factory(real: Any, shim: str) -> Callable[..., Any]:
    def make(*args: Any, **kwargs: Any) -> Any:
        ex = current_execution()
        if ex is None or _importing():
            return real(*args, **kwargs)
        return getattr(ex.shims, shim)(*args, **kwargs)

    make.__name__ = shim
    make.__qualname__ = shim
    return make


def _clocked(real: Callable[[], Any], read: Callable[[Any], Any]) -> Callable[[], Any]:
    def now() -> Any:
        ex = current_execution()
        return real() if ex is None else read(ex.clock)

    now.__name__ = real.__name__
    return now


def _sleep(seconds: float) -> None:
    ex = current_execution()
    if ex is None:
        sync.real_sleep(seconds)
    else:
        ex.sleep(seconds)


def _current_thread() -> threading.Thread:
    ex = current_execution()
    return sync.real_current_thread() if ex is None else ex.current_thread_object()


_real_get_ident = _thread.get_ident
_real_enumerate = threading.enumerate
_real_active_count = threading.active_count


def _enumerate() -> list[threading.Thread]:
    ex = current_execution()
    if ex is None:
        return _real_enumerate()
    ex.point("enumerate", None)
    return ex.live_thread_objects()


def _active_count() -> int:
    ex = current_execution()
    if ex is None:
        return _real_active_count()
    ex.point("active_count", None)
    return len(ex.live_thread_objects())


def _get_ident() -> int:
    ex = current_execution()
    if ex is None or ex.current is None or ex.current.tid == 0:
        return _real_get_ident()
    return _CONTROLLED_IDENT_BASE + ex.current.tid


_SYNC_PATCHES: list[tuple[Any, str, Any]] = [
    (threading, "Lock", _factory(sync.real_Lock, "Lock")),
    (threading, "RLock", _factory(sync.real_RLock, "RLock")),
    (threading, "Condition", _factory(sync.real_Condition, "Condition")),
]

_PATCHES: list[tuple[Any, str, Any]] = [
    *_SYNC_PATCHES,
    (threading, "Event", _factory(sync.real_Event, "Event")),
    (threading, "Semaphore", _factory(sync.real_Semaphore, "Semaphore")),
    (threading, "BoundedSemaphore", _factory(sync.real_BoundedSemaphore, "BoundedSemaphore")),
    (threading, "Barrier", _factory(sync.real_Barrier, "Barrier")),
    (threading, "current_thread", _current_thread),
    (threading, "currentThread", _current_thread),
    (threading, "get_ident", _get_ident),
    # The C threading.local keys on the OS thread, which every controlled thread shares;
    # the pure-Python one keys on current_thread(), which the run answers per thread.
    (threading, "local", _threading_local.local),
    (threading, "enumerate", _enumerate),
    (threading, "active_count", _active_count),
    (threading, "activeCount", _active_count),
    (_queue, "SimpleQueue", _factory(_queue.SimpleQueue, "SimpleQueue")),
    (_queue, "time", _clocked(sync.real_monotonic, lambda c: c.monotonic())),
    (_time, "sleep", _sleep),
    (_time, "monotonic", _clocked(sync.real_monotonic, lambda c: c.monotonic())),
    (_time, "perf_counter", _clocked(sync.real_perf_counter, lambda c: c.monotonic())),
    (_time, "time", _clocked(sync.real_time, lambda c: c.time())),
    (_time, "monotonic_ns", _clocked(_time.monotonic_ns, lambda c: int(c.monotonic() * 1e9))),
    (_time, "perf_counter_ns", _clocked(_time.perf_counter_ns, lambda c: int(c.monotonic() * 1e9))),
    (_time, "time_ns", _clocked(_time.time_ns, lambda c: int(c.time() * 1e9))),
]


class _Patch:
    """Apply a list of attribute patches; undo them in reverse order."""

    def __init__(self, patches: list[tuple[Any, str, Any]]) -> None:
        self._patches = patches
        self._saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> _Patch:
        for obj, name, value in self._patches:
            self._saved.append((obj, name, getattr(obj, name)))
            setattr(obj, name, value)
        return self

    def __exit__(self, *exc: object) -> None:
        while self._saved:
            obj, name, value = self._saved.pop()
            setattr(obj, name, value)


def _patched_sync_factories() -> _Patch:
    return _Patch(_SYNC_PATCHES)


# Modules whose own attributes _PATCHES replaces, and C modules whose names are
# types or internals that other stdlib code relies on (``_thread.LockType`` in
# isinstance checks, ``_thread.allocate_lock`` for import locks).
_NO_ALIAS_SCAN = frozenset({"threading", "_thread", "queue", "_queue", "time"})
# The pure-Python threading.local (used inside runs) takes its RLock around every
# attribute access; a controlled one would add two scheduling points to each.  No
# switch happens inside that critical section unless a property of a local subclass
# synchronises, so the real lock (re-entrant on the one OS thread) does.
_KEEP_REAL = frozenset({("_threading_local", "RLock")})


def _aliases_of_patched_names() -> list[tuple[Any, str, Any]]:
    """Patches for modules that imported a patched name directly (``from threading import
    Lock``, ``from time import monotonic``): their global would otherwise keep the real
    object, and a real lock taken by two controlled threads (which share one OS thread)
    neither excludes nor blocks as it should."""
    replacements = {id(getattr(obj, name)): value for obj, name, value in _PATCHES}
    patches = []
    for modname, module in list(sys.modules.items()):
        if module is None or modname in _NO_ALIAS_SCAN or modname.split(".")[0] == "coordkit":
            continue
        try:
            namespace = vars(module)
        except TypeError:
            continue
        for attr, value in list(namespace.items()):
            if (id(value) in replacements and callable(value) and not attr.startswith("__")
                    and (modname, attr) not in _KEEP_REAL):
                patches.append((module, attr, replacements[id(value)]))
    return patches


class StdlibPatch:
    """Patch ``threading``, ``queue`` and ``time`` for the duration of an exploration.

    Objects created by controlled threads while it is active are controlled;
    other threads still get the real ones.  Not re-entrant.
    """

    _active = False

    def __init__(self) -> None:
        self._patch = _Patch(_PATCHES)
        self._aliases: _Patch | None = None

    def __enter__(self) -> StdlibPatch:
        if StdlibPatch._active:
            raise RuntimeError("coordkit explorations cannot be nested")
        StdlibPatch._active = True
        install_thread_hooks()
        self._aliases = _Patch(_aliases_of_patched_names())
        self._aliases.__enter__()
        self._patch.__enter__()
        self._unraisable = sys.unraisablehook
        sys.unraisablehook = self._drop_kills
        return self

    def _drop_kills(self, unraisable: Any) -> None:
        # The Kill that ends a run's leftover threads can surface where Python cannot
        # raise it (a weakref callback, a __del__): it is coordkit's, not the program's.
        if not isinstance(unraisable.exc_value, Kill):
            self._unraisable(unraisable)

    def __exit__(self, *exc: object) -> None:
        sys.unraisablehook = self._unraisable
        self._patch.__exit__()
        if self._aliases is not None:
            self._aliases.__exit__()
        _forget_controlled_threads()
        StdlibPatch._active = False


def _forget_controlled_threads() -> None:
    """Drop the runs' threads from the stdlib's registry of pool workers.

    ``concurrent.futures.thread`` keeps every worker it starts in a module-level
    registry and, at interpreter exit, puts a wake-up into each worker's queue.  A
    pool made inside a run has controlled queues, which only that run's threads can
    use, and its workers have ended with the run, so they have nothing to wake.
    """
    pool = sys.modules.get("concurrent.futures.thread")
    registry = getattr(pool, "_threads_queues", None)
    if registry is not None:
        with pool._global_shutdown_lock:  # type: ignore[union-attr]  # real threads add to it
            for thread in list(registry):
                if thread.__dict__.get("_ck_task") is not None:
                    registry.pop(thread, None)


def fresh_thread_names() -> Any:
    """Restart ``Thread-N`` numbering so each run names its threads identically."""
    import itertools

    saved = threading._counter  # type: ignore[attr-defined]
    threading._counter = itertools.count(1).__next__  # type: ignore[attr-defined]
    return saved


def restore_thread_names(saved: Any) -> None:
    threading._counter = saved  # type: ignore[attr-defined]


__all__ = [
    "BoundedSemaphore",
    "Condition",
    "Event",
    "Kill",
    "Lock",
    "RLock",
    "Semaphore",
    "Shims",
    "SimpleQueue",
    "StdlibPatch",
    "UncontrolledUseError",
    "install_thread_hooks",
]
