"""Patching the stdlib so that unmodified code runs under the controlled scheduler.

While a controlled run is active, ``threading.Lock`` & co., ``queue.SimpleQueue``
and the ``time`` functions are replaced by factories that give the shims to
controlled threads and the real objects to everyone else (the test runner's own
threads keep working).  ``threading.Thread.start/join/is_alive`` are replaced once
and for good: for a thread never started under control they are the originals.
"""

from __future__ import annotations

import _thread
import _threading_local
import functools
import itertools
import queue as _queue
import sys
import threading
import time as _time
from collections.abc import Callable
from typing import Any

from coordkit import sync
from coordkit.engine.runtime import current_execution
from coordkit.engine.task import FINISHED, Kill, WaitQueue

__all__ = ["StdlibPatch", "fresh_thread_names", "install_thread_hooks", "restore_thread_names"]

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
    ex.point("start", f"T{len(ex.tasks)}")  # the thread about to be made
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
    ex.point("join", task.label)
    if task.state is not FINISHED:
        if task.joiners is None:
            task.joiners = WaitQueue()
        task.joiners.park(ex, f"join({task.label})", ex.clock.deadline(timeout))


def _thread_is_alive(self: threading.Thread) -> bool:
    task = self.__dict__.get("_ck_task")
    if task is None:
        return _orig_is_alive(self)
    ex = current_execution()
    if ex is not None:
        ex.point("is_alive", task.label)
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
            self.__dict__["_ck_hash"] = ex.names.stable_hash()
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
    ex.point("enumerate")
    return ex.live_thread_objects()


def _active_count() -> int:
    ex = current_execution()
    if ex is None:
        return _real_active_count()
    ex.point("active_count")
    return len(ex.live_thread_objects())


def _get_ident() -> int:
    ex = current_execution()
    if ex is None or ex.current is None or ex.current.tid == 0:
        return _real_get_ident()
    return _CONTROLLED_IDENT_BASE + ex.current.tid


_PATCHES: list[tuple[Any, str, Any]] = [
    (threading, "Lock", _factory(sync.real_Lock, "Lock")),
    (threading, "RLock", _factory(sync.real_RLock, "RLock")),
    (threading, "Condition", _factory(sync.real_Condition, "Condition")),
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
    saved = threading._counter  # type: ignore[attr-defined]
    threading._counter = itertools.count(1).__next__  # type: ignore[attr-defined]
    return saved


def restore_thread_names(saved: Any) -> None:
    threading._counter = saved  # type: ignore[attr-defined]
