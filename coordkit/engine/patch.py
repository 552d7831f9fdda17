"""Patching the stdlib so that unmodified code runs under the controlled scheduler.

While a controlled run is active, ``threading.Lock`` & co., ``queue.SimpleQueue``,
the ``time`` functions and ``_thread``'s own names (``start_new_thread``,
``allocate_lock``, ``LockType``, ``RLock``, ``get_ident``, ``_count``) are replaced by
factories that give the shims to controlled threads and the real objects to
everyone else (the test runner's own threads keep working).
``threading.Thread.start/join/is_alive`` are replaced once and for good: for a
thread never started under control they are the originals.
"""

from __future__ import annotations

import _thread
import _threading_local
import functools
import itertools
import os
import queue as _queue
import subprocess
import sys
import threading
import time as _time
import warnings
from collections.abc import Callable
from typing import Any

from coordkit import sync
from coordkit.engine import aio, shims
from coordkit.engine.points import STOPS, THREADS
from coordkit.engine.runtime import ACCELERATED, Execution, current_execution, point_of
from coordkit.engine.task import FINISHED, Kill, Task, WaitQueue, call_excepthook, check_timeout
from coordkit.engine.tracing import library_calls

__all__ = ["StdlibPatch", "fresh_thread_names", "install_thread_hooks", "restore_thread_names"]

# -- threads -----------------------------------------------------------------

_orig_start = threading.Thread.start
_orig_join = threading.Thread.join
_orig_is_alive = threading.Thread.is_alive
_CONTROLLED_IDENT_BASE = shims._CONTROLLED_IDENT_BASE


def _mark_started(thread: threading.Thread) -> None:
    """Set a thread's ``_started`` Event without a scheduling point of its own (it is part
    of the start's step, whose footprint writes it: a read of it before the start
    conflicts with the start, SCHED-49); a thread made before the run has a real one."""
    started = thread._started  # type: ignore[attr-defined]
    if type(started) is shims.Event:
        started._flag = True
        ex = current_execution()
        if ex is not None:
            ex.effect(started, "set")
    else:
        started.set()


def _not_started(thread: threading.Thread) -> bool:
    """Whether ``thread`` was made (``Thread.__init__`` ran) and not started yet, read
    without a scheduling point."""
    if not thread._initialized:  # type: ignore[attr-defined]
        return False  # (``threading``'s own code says so)
    started = thread._started  # type: ignore[attr-defined]
    return not (started._flag if type(started) is shims.Event else started.is_set())


def _thread_start(self: threading.Thread) -> None:
    ex = current_execution()
    if ex is None:
        _orig_start(self)
        return
    if not self._initialized:  # type: ignore[attr-defined]
        raise RuntimeError("thread.__init__() not called")
    tstate = None if ex._tstate is None else ex.untraced()  # SCHED-88
    try:
        free_on_call = "_ck_task" not in self.__dict__ and _not_started(self)
        point_of(ex, "start", f"T{len(ex.tasks)}")  # the thread about to be made
        # Whether it was started is read at the point, in the start's step: another thread
        # may start it while this one stands there, and a thread runs once (SCHED-48).
        task = self.__dict__.get("_ck_task")
        if task is not None or not _not_started(self):
            if task is not None:
                ex.observed(task.label, "is_alive")
            raise RuntimeError(_started_once(self) if free_on_call else "threads can only be started once")
    finally:
        if tstate is not None:
            ex.traced_again(tstate)
    # Traced: threading's properties (or a subclass's) may be the program's code.
    name, daemon = self.name, self.daemon
    tstate = None if ex._tstate is None else ex.untraced()
    try:
        task = ex.spawn(self._ck_run, name, daemon, thread=self)
        self._ck_task = task  # type: ignore[attr-defined]
        self._ck_starter = ex.current.label if ex.current is not None else None  # type: ignore[attr-defined]
        # What Thread._bootstrap_inner sets before run(): identity, and "started" (so that a
        # started thread cannot be made a daemon, and its repr says so).  No other thread
        # runs between the start's point and here: each sees all of it or none.
        self._ident = self._native_id = _CONTROLLED_IDENT_BASE + task.tid  # type: ignore[attr-defined]
        _mark_started(self)
    finally:
        if tstate is not None:
            ex.traced_again(tstate)


def _started_once(thread: threading.Thread) -> str:
    """The error of a start that another start overtook (SCHED-48): on real threads both
    calls can pass ``start()``'s check, so the program has a race between two starts."""
    by = thread.__dict__.get("_ck_starter") or "another thread"
    return ("threads can only be started once: this start() was under way when "
            f"{by} started the thread; on real threads both calls can get through "
            "(a race between two start() calls)")


def _thread_run(self: threading.Thread) -> None:
    """A controlled thread's life, as ``Thread._bootstrap_inner`` runs it: ``run()``, where
    a ``SystemExit`` ends the thread quietly (the default excepthook ignores it; a hook the
    program installed is called).  Like CPython, ``is_alive()`` and ``join()`` mark the
    thread stopped once they see it has ended (a repr asks ``is_alive()`` first).
    Installed as ``Thread._ck_run``: a method, so that the thread's greenlet starts in
    it by a call from Python to Python, which costs no C stack for each switch to copy."""
    put_back = library_calls(current_execution(), self)  # (a C target's call: SCHED-59)
    try:
        self.run()
    except SystemExit as exc:
        ex = current_execution()
        task = None if ex is None else ex.current
        if task is not None and threading.excepthook is not ex._outer_excepthook:  # type: ignore[union-attr]
            call_excepthook(task, exc)
    finally:
        if put_back is not None:
            put_back()
        _handle_done(self)


_make_thread_handle = getattr(_thread, "_make_thread_handle", None)  # Python 3.13+


def _handle_done(thread: threading.Thread) -> None:
    """From Python 3.13 a ``Thread`` says it has ended through its ``_handle`` (its repr
    reads ``_handle.is_done()``): a controlled thread's handle is made done when its
    code ends, as a real thread's is."""
    if _make_thread_handle is not None:
        handle = _make_thread_handle(thread._ident)  # type: ignore[attr-defined]
        handle._set_done()
        thread._handle = handle  # type: ignore[attr-defined]


def _observe_unstarted(ex: Execution, thread: threading.Thread, op: str) -> Task | None:
    """The scheduling point of ``op``, an observation of a ``thread`` not started yet, and
    its task after the point (None: still not started).  It reads what every start
    writes (``THREADS``); a start that came while it stood at its point makes it read
    the thread's label too, which the thread's end writes (SCHED-49)."""
    point_of(ex, op, THREADS)
    task = thread.__dict__.get("_ck_task")
    if task is not None:
        ex.effect(task, op)
    return task


def _thread_join(self: threading.Thread, timeout: float | None = None) -> None:
    task = self.__dict__.get("_ck_task")
    if task is None:
        ex = current_execution()
        if ex is None or not _not_started(self):  # outside the run, or a real thread
            _orig_join(self, timeout)
            return
        task = _observe_unstarted(ex, self, "join")
        if task is None:
            raise RuntimeError("cannot join thread before it is started")
    self._is_stopped = _join_task(task, timeout, "cannot join current thread")  # type: ignore[attr-defined]


def _join_task(task: Task, timeout: float | None, itself: str) -> bool:
    """The running thread waits (a scheduling point) until ``task`` ends or ``timeout``
    passes; whether it ended.  A thread that joins itself gets ``RuntimeError(itself)``.
    A join with a timeout may give up: it records a ``try`` of the thread, so that no
    end is taken to only let it proceed (SCHED-46)."""
    ex = current_execution()
    if ex is None or task.state is FINISHED:
        if ex is not None:  # no choice to make, but the joiner is ordered after the thread
            ex.effect(task, "join")
            if timeout is not None:
                ex.effect(task, "try")
            ex.after("after-join", task, woke=True)
        return task.state is FINISHED
    if task is ex.current:
        raise RuntimeError(itself)
    tstate = ex.untraced()
    try:
        # That it has not ended was read in the step this one is in: there is a scheduling
        # point here only because of it (SCHED-49).
        ex.observed(task.label, STOPS)
        point_of(ex, "join", task.label)
        if timeout is not None:
            ex.effect(task, "try")
        if task.state is not FINISHED:
            if task.joiners is None:
                task.joiners = WaitQueue()
            task.joiners.park(ex, f"join({task.label})", ex.clock.deadline(timeout))
        ended = task.state is FINISHED
        ex.returned(None, text=f"{task.label} ended" if ended else
                    f"timed out (timeout {timeout:g} s at t={ex.clock.now:g}), {task.label} still alive")
        return ended
    finally:
        ex.traced_again(tstate)


def _thread_is_alive(self: threading.Thread) -> bool:
    task = self.__dict__.get("_ck_task")
    ex = current_execution()
    if task is None:
        if ex is None or not _not_started(self):  # outside the run, or a real thread
            return _orig_is_alive(self)
        task = _observe_unstarted(ex, self, "is_alive")
        if task is None:
            return ex.returned(False)
    elif ex is not None:
        point_of(ex, "is_alive", task.label)
    alive = task.state is not FINISHED
    if not alive:
        self._is_stopped = True  # type: ignore[attr-defined]
    return alive if ex is None else ex.returned(alive)


def _thread_identity(real: property) -> property:
    """``Thread.ident`` or ``native_id``: a controlled thread that reads another's (or its
    own) identity reads its lifecycle: the thread's label once it was started, what every
    start writes before (SCHED-49).  No scheduling point: it reads in the step it is in."""
    read = real.fget
    assert read is not None

    def get(self: threading.Thread) -> Any:
        ex = current_execution()
        if ex is not None:
            task = self.__dict__.get("_ck_task")
            if task is not None:
                ex.observed(task.label, "is_alive")
            elif _not_started(self):
                ex.observed(THREADS, "is_alive")
        return read(self)

    return property(get, doc=real.__doc__)


_IDENTITIES = {name: _thread_identity(vars(threading.Thread)[name])
               for name in ("ident", "native_id") if name in vars(threading.Thread)}


# -- _thread: threads without a Thread object ----------------------------------

_real_start_new_thread = _thread.start_new_thread
_real_count = _thread._count  # type: ignore[attr-defined]
# _DummyThread objects made for controlled threads and entered in threading._active, as
# current_thread() does for a foreign thread; removed when the exploration ends.
_DUMMIES: list[threading.Thread] = []


def _start_new_thread(function: Any, args: Any, kwargs: Any = None) -> int:
    """``_thread.start_new_thread``: inside a run, a controlled daemon thread (the
    interpreter does not wait for these at exit).  As for a real one, a ``SystemExit``
    ends it quietly, another exception goes to ``sys.unraisablehook`` if the program
    installed one ("Exception ignored in thread started by"), and the thread lets go of
    the function and its arguments when it ends."""
    ex = current_execution()
    if ex is None:
        if kwargs is None:
            return _real_start_new_thread(function, args)
        return _real_start_new_thread(function, args, kwargs)
    if not callable(function):
        raise TypeError("first arg must be callable")
    if not isinstance(args, tuple):
        raise TypeError("2nd arg must be a tuple")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError("optional 3rd arg must be a dictionary")
    return _CONTROLLED_IDENT_BASE + _spawn_foreign(ex, function, args, kwargs or {}, True).tid


def _spawn_foreign(ex: Execution, function: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                   daemon: bool) -> Task:
    """A controlled thread without a ``Thread`` object, running ``function(*args,
    **kwargs)`` as ``_thread``'s threads do (see ``_start_new_thread``)."""
    call = [function, args, kwargs]

    def body() -> None:
        function, args, kwargs = call
        call.clear()
        try:
            function(*args, **kwargs)
        except SystemExit:
            pass
        except Kill:
            raise
        except BaseException as exc:
            hook = sys.unraisablehook
            if getattr(hook, "__func__", None) is not StdlibPatch._drop_kills:  # the program's
                hook(_unraisable_args(type(exc), exc, exc.__traceback__,
                                      *_ignored_in_thread(function)))
            raise
        finally:
            del function, args, kwargs
            if ex.current is not None:
                _dummy_ends(ex.current)

    body._ck_foreign = True  # type: ignore[attr-defined]
    point_of(ex, "start", f"T{len(ex.tasks)}")
    name = getattr(function, "__name__", None) or type(function).__name__
    return ex.spawn(body, f"_thread({name})", daemon=daemon)


_real_start_joinable_thread = getattr(_thread, "start_joinable_thread", None)  # Python 3.13+
_REAL_THREAD_HANDLE: Any = getattr(_thread, "_ThreadHandle", None)


class _ThreadHandle:
    """``_thread._ThreadHandle`` inside a run (Python 3.13+): the handle of a controlled
    thread that ``start_joinable_thread`` started.  ``join`` and ``is_done`` are the
    scheduling points ``Thread.join`` and ``is_alive`` are; errors are CPython's."""

    __slots__ = ("_task",)

    def __init__(self) -> None:
        self._task: Task | None = None

    def __repr__(self) -> str:
        return f"<_thread._ThreadHandle object: ident={self.ident}>"

    @property
    def ident(self) -> int:
        task = self._looked_at()
        return 0 if task is None else _CONTROLLED_IDENT_BASE + task.tid

    def _looked_at(self) -> Task | None:
        """Its thread, read in the running thread's step: a thread not started yet reads
        what every start writes (SCHED-49)."""
        task = self._task
        ex = current_execution()
        if ex is not None:
            ex.observed(THREADS if task is None else task.label, "is_alive")
        return task

    def _started(self) -> Task:
        task = self._looked_at()
        if task is None:
            raise RuntimeError("thread not started")
        return task

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread to end; a negative ``timeout`` waits for ever."""
        task = self._started()
        if timeout is not None:
            if not isinstance(timeout, (int, float)):
                raise TypeError(f"'{type(timeout).__name__}' object cannot be interpreted "
                                "as an integer")
            if timeout < 0:
                timeout = None
        _join_task(task, timeout, "Cannot join current thread")

    def is_done(self) -> bool:
        task = self._task
        if task is None:
            self._looked_at()
            return False
        ex = current_execution()
        if ex is not None:
            point_of(ex, "is_alive", task.label)
        done = task.state is FINISHED
        return done if ex is None else ex.returned(done)

    def _set_done(self) -> None:
        # CPython calls it in a child after fork(), which a run refuses.
        raise RuntimeError("thread not started" if self._task is None else
                           "_set_done() of a controlled thread: only fork() calls it, "
                           "and a run refuses fork()")


def _start_joinable_thread(function: Any, handle: Any = None, daemon: bool = True) -> Any:
    """``_thread.start_joinable_thread`` (Python 3.13+): inside a run, a controlled thread,
    and its controlled ``_ThreadHandle`` (the one given, if any)."""
    ex = current_execution()
    if ex is None:
        return _real_start_joinable_thread(function, handle, daemon)  # type: ignore[misc]
    if not callable(function):
        raise TypeError("thread function must be callable")
    if handle is None:
        handle = _ThreadHandle()
    elif type(handle) is _REAL_THREAD_HANDLE:
        raise TypeError("a _ThreadHandle made before the run cannot hold a controlled "
                        "thread: make it inside the program")
    elif not isinstance(handle, _ThreadHandle):
        raise TypeError("'handle' must be a _ThreadHandle")
    elif handle._task is not None:
        raise RuntimeError("thread already started")
    handle._task = _spawn_foreign(ex, function, (), {}, bool(daemon))
    return handle


def _ignored_in_thread(function: Any) -> tuple[str, Any]:
    """The ``err_msg`` and ``object`` CPython reports for an exception that ended a
    ``_thread`` thread: 3.13 names the function in the message."""
    if sys.version_info >= (3, 13):
        return f"Exception ignored in thread started by {function!r}", None
    return "Exception ignored in thread started by", function


_UNRAISABLE_ARGS: list[type] = []


def _unraisable_args(*fields: Any) -> Any:
    """A ``sys.UnraisableHookArgs`` (the type is not exposed by ``sys``: the first call
    learns it from one unraisable exception, caught by a hook of its own)."""
    if not _UNRAISABLE_ARGS:
        seen: list[Any] = []
        saved = sys.unraisablehook
        sys.unraisablehook = seen.append

        class _Raises:
            def __del__(self) -> None:
                raise RuntimeError

        try:
            _Raises()
        finally:
            sys.unraisablehook = saved
        _UNRAISABLE_ARGS.append(type(seen[0]))
    return _UNRAISABLE_ARGS[0](fields)


def _foreign(task: Task) -> bool:
    """Started by ``_thread.start_new_thread`` (and so without a ``Thread`` object)."""
    return getattr(task.target, "_ck_foreign", False)


def _count() -> int:
    """``_thread._count``: inside a run, the run's threads still alive other than its first."""
    ex = current_execution()
    if ex is None:
        return _real_count()
    point_of(ex, "active_count")
    return sum(1 for t in ex.tasks[1:] if t.state is not FINISHED)


def _dummy_thread(task: Task) -> threading.Thread:
    """The ``_DummyThread`` that ``current_thread()`` makes for a thread started without a
    ``Thread`` object: named ``Dummy-N``, a daemon, alive, entered in ``threading._active``."""
    dummy = threading._DummyThread.__new__(threading._DummyThread)  # type: ignore[attr-defined]
    threading.Thread.__init__(dummy, name=threading._newname("Dummy-%d"), daemon=True)  # type: ignore[attr-defined]
    _mark_started(dummy)
    dummy._ident = dummy._native_id = _CONTROLLED_IDENT_BASE + task.tid  # type: ignore[attr-defined]
    with threading._active_limbo_lock:  # type: ignore[attr-defined]
        threading._active[dummy._ident] = dummy  # type: ignore[attr-defined]
    _DUMMIES.append(dummy)
    task.thread = dummy
    return dummy


def _dummy_ends(task: Task) -> None:
    """From Python 3.13 the ``_DummyThread`` of a thread that ends says it is no longer
    alive, and leaves ``threading._active`` (CPython removes it when the thread ends)."""
    dummy = task.thread
    if sys.version_info >= (3, 13) and dummy is not None and dummy in _DUMMIES:
        _handle_done(dummy)
        _leave_active([dummy])


def _forget_dummies() -> None:
    _leave_active(_DUMMIES)
    _DUMMIES.clear()


def _leave_active(dummies: list[threading.Thread]) -> None:
    """Take ``dummies`` out of ``threading._active``, where each is still there."""
    with threading._active_limbo_lock:  # type: ignore[attr-defined]
        for dummy in dummies:
            if threading._active.get(dummy._ident) is dummy:  # type: ignore[attr-defined]
                del threading._active[dummy._ident]  # type: ignore[attr-defined]


class _EitherType(type):
    """A stand-in for a C type of ``_thread`` (``LockType``, ``RLock``) while a run is
    active: ``isinstance`` accepts the real objects and the controlled ones, and calling
    it inside a run makes a controlled object (where the real type can be called)."""

    _ck_real: type
    _ck_shim: type
    _ck_make: Callable[[Execution], Any]

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, (cls._ck_real, cls._ck_shim))

    def __subclasscheck__(cls, sub: Any) -> bool:
        return issubclass(sub, (cls._ck_real, cls._ck_shim))

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        ex = current_execution()
        if ex is None or _importing():
            return cls._ck_real(*args, **kwargs)
        # Refused where the real type refuses (3.11's LockType() cannot be called); without
        # arguments, what the real type says was learnt once, not re-made every time.
        if args or kwargs:
            cls._ck_real(*args, **kwargs)
        elif cls._ck_bare_error is not None:
            raise TypeError(cls._ck_bare_error)
        return cls._ck_make(ex)


def _either(real: type, shim: type, make: Callable[[Execution], Any]) -> type:
    try:
        real()
        bare_error = None
    except TypeError as exc:
        bare_error = str(exc)
    return _EitherType(real.__name__, (), {"_ck_real": real, "_ck_shim": shim, "_ck_make": make,
                                           "_ck_bare_error": bare_error,
                                           "__module__": real.__module__,
                                           "__qualname__": real.__qualname__})


def install_thread_hooks() -> None:
    """Route ``Thread.start/join/is_alive`` through the runtime for controlled threads."""
    threading.Thread.start = _thread_start  # type: ignore[method-assign]
    threading.Thread.join = _thread_join  # type: ignore[method-assign]
    threading.Thread.is_alive = _thread_is_alive  # type: ignore[method-assign]
    for name, identity in _IDENTITIES.items():
        setattr(threading.Thread, name, identity)
    threading.Thread._ck_run = _thread_run  # type: ignore[attr-defined]
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


def _importing_walk() -> bool:
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


# ``_importing()``: the same walk, in C where the accelerator is built (each shim made in a
# run asks, a thread's Event included).
_importing: Callable[[], bool] = (_importing_walk if ACCELERATED is None
                                  else ACCELERATED.importing)


def _make(real: Any, shim: str, *args: Any, **kwargs: Any) -> Any:
    ex = current_execution()
    if ex is None:
        return real(*args, **kwargs)
    # Untraced (SCHED-88): the walk of the stack, and a shim made from no argument of the
    # program's (a Lock, an Event); one made from the program's arguments is made traced.
    tstate = ex.untraced_where_it_pays()
    try:
        if _importing():
            make = real
        else:
            make = getattr(ex.shims, shim)
            if not args and not kwargs:
                return make()
    finally:
        ex.traced_again(tstate)
    return make(*args, **kwargs)


class _Factory(functools.partial):  # type: ignore[type-arg]
    """A patched name such as ``threading.Event`` while a run is active.

    Calling it makes the controlled object for a controlled thread, and the real one for
    anyone else and for a module being imported (a ``partial`` of ``_make``: calling it
    costs what calling a function does).  Where the real name is a class, it stands in for
    that class too: ``isinstance`` accepts the real objects and the controlled ones, and a
    class that subclasses it subclasses the real class (so its instances are real ones:
    SCHED-4c).
    """

    def __new__(cls, real: Any, shim: str) -> _Factory:
        self = super().__new__(cls, _make, real, shim)
        self._real = real
        self._shim = shim
        self.__name__ = self.__qualname__ = shim
        self.__doc__ = real.__doc__
        self.__wrapped__ = real
        return self

    def __repr__(self) -> str:
        return f"<coordkit's stand-in for {self._real!r} while a controlled run is active>"

    def _real_class(self, what: str) -> type:
        if not isinstance(self._real, type):
            raise TypeError(f"{self._shim} is a function in the standard library, not a class: "
                            f"{what} is not possible")
        return self._real

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, (self._real_class("isinstance()"), getattr(shims, self._shim, ())))

    def __subclasscheck__(self, cls: Any) -> bool:
        return issubclass(cls, (self._real_class("issubclass()"), getattr(shims, self._shim, ())))

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (self._real_class("subclassing it"),)

    def __getitem__(self, item: Any) -> Any:
        return self._real_class("subscripting it")[item]

    def __or__(self, other: Any) -> Any:  # ``threading.Lock | None`` (a class from 3.13)
        return self._real_class("a union with it") | other

    def __ror__(self, other: Any) -> Any:
        return other | self._real_class("a union with it")


def _factory(real: Any, shim: str) -> Callable[..., Any]:
    return _Factory(real, shim)


# Controlled threads inside a wait on a real child process (``_real_time``).
_REAL_TIME: set[Task] = set()


def _clocked(real: Callable[[], Any], read: Callable[[Any], Any]) -> Callable[[], Any]:
    def now() -> Any:
        ex = current_execution()
        if ex is None or (_REAL_TIME and ex.current in _REAL_TIME):
            return real()
        return read(ex.clock)

    now.__name__ = real.__name__
    return now


def _real_time(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` (``Popen.wait``, ``Popen.communicate``) with real clocks and real sleeps
    for the controlled thread that calls it (SCHED-4h): a child process runs in real time,
    and its ``timeout=`` measured on the virtual clock, which jumps ahead whenever every
    controlled thread waits, would expire at once.  Other threads keep virtual time."""

    @functools.wraps(method)
    def real_time(*args: Any, **kwargs: Any) -> Any:
        ex = current_execution()
        task = None if ex is None else ex.current
        if task is None or task in _REAL_TIME:
            return method(*args, **kwargs)
        _REAL_TIME.add(task)
        try:
            return method(*args, **kwargs)
        finally:
            _REAL_TIME.discard(task)

    return real_time


def _sleep(seconds: float) -> None:
    ex = current_execution()
    if ex is None or (_REAL_TIME and ex.current in _REAL_TIME):
        sync.real_sleep(seconds)
    else:
        check_timeout(seconds)  # refused as time.sleep refuses it
        ex.sleep(seconds)


def _current_thread() -> threading.Thread:
    ex = current_execution()
    if ex is None:
        return sync.real_current_thread()
    task = ex.current
    if task is not None and task.thread is None and task.tid and _foreign(task):
        return _dummy_thread(task)
    return ex.current_thread_object()


def _current_thread_deprecated() -> threading.Thread:
    warnings.warn("currentThread() is deprecated, use current_thread() instead",
                  DeprecationWarning, stacklevel=2)
    return _current_thread()


def _no_fork(real: Callable[[], Any]) -> Callable[[], Any]:
    def fork() -> Any:
        if current_execution() is not None:
            raise RuntimeError(
                f"os.{real.__name__}() inside a controlled run: the child would copy the run "
                "half-way through (every controlled thread lives on one OS thread), and no "
                "scheduler runs it; fork outside the run, or use subprocess (fork+exec)")
        return real()

    fork.__name__ = real.__name__
    return fork


_real_get_ident = _thread.get_ident
_real_get_native_id = _thread.get_native_id
_real_enumerate = threading.enumerate
_real_active_count = threading.active_count


def _live_threads(ex: Execution) -> list[threading.Thread]:
    """The ``Thread`` objects of the run's live threads, main first; a thread started by
    ``_thread.start_new_thread`` is among them once it has one (``current_thread()``)."""
    return [ex._thread_object(t) for t in ex.tasks
            if t.state is not FINISHED and (t.thread is not None or not _foreign(t))]


def _enumerate() -> list[threading.Thread]:
    ex = current_execution()
    if ex is None:
        return _real_enumerate()
    point_of(ex, "enumerate")
    return _live_threads(ex)


def _active_count() -> int:
    ex = current_execution()
    if ex is None:
        return _real_active_count()
    point_of(ex, "active_count")
    return len(_live_threads(ex))


def _active_count_deprecated() -> int:
    warnings.warn("activeCount() is deprecated, use active_count() instead",
                  DeprecationWarning, stacklevel=2)
    return _active_count()


def _get_ident() -> int:
    ex = current_execution()
    if ex is None or ex.current is None:
        return _real_get_ident()
    if ex.current.tid == 0:  # fn itself runs as the caller's thread (SCHED-7)
        ident = ex.current_thread_object().ident
        return _real_get_ident() if ident is None else ident
    return _CONTROLLED_IDENT_BASE + ex.current.tid


def _get_native_id() -> int:
    ex = current_execution()
    if ex is None or ex.current is None:
        return _real_get_native_id()
    if ex.current.tid == 0:
        native = ex.current_thread_object().native_id
        return _real_get_native_id() if native is None else native
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
    (threading, "currentThread", _current_thread_deprecated),
    (threading, "get_ident", _get_ident),
    (threading, "get_native_id", _get_native_id),
    # The C threading.local keys on the OS thread, which every controlled thread shares;
    # the pure-Python one keys on current_thread(), which the run answers per thread.
    (threading, "local", _threading_local.local),
    (threading, "enumerate", _enumerate),
    (threading, "active_count", _active_count),
    (threading, "activeCount", _active_count_deprecated),
    # _thread's own names: threads without a Thread object, and the C lock types.
    (_thread, "start_new_thread", _start_new_thread),
    (_thread, "start_new", _start_new_thread),
    (_thread, "allocate_lock", _factory(_thread.allocate_lock, "Lock")),
    (_thread, "allocate", _factory(_thread.allocate_lock, "Lock")),
    (_thread, "LockType", _either(_thread.LockType, shims.Lock, lambda ex: ex.shims.Lock())),
    (_thread, "RLock", _either(_thread.RLock, shims.RLock, lambda ex: ex.shims.RLock())),
    (_thread, "get_ident", _get_ident),
    (_thread, "get_native_id", _get_native_id),
    (_thread, "_count", _count),
    *([(_thread, "start_joinable_thread", _start_joinable_thread),
       (_thread, "_ThreadHandle", _either(_REAL_THREAD_HANDLE, _ThreadHandle, lambda ex: _ThreadHandle()))]
      if _real_start_joinable_thread is not None else []),
    # A process copied half-way through a run cannot be controlled: refused at the call.
    *[(os, name, _no_fork(getattr(os, name))) for name in ("fork", "forkpty") if hasattr(os, name)],
    (_queue, "SimpleQueue", _factory(_queue.SimpleQueue, "SimpleQueue")),
    (_queue, "time", _clocked(sync.real_monotonic, lambda c: c.monotonic())),
    (_time, "sleep", _sleep),
    (_time, "monotonic", _clocked(sync.real_monotonic, lambda c: c.monotonic())),
    (_time, "perf_counter", _clocked(sync.real_perf_counter, lambda c: c.monotonic())),
    (_time, "time", _clocked(sync.real_time, lambda c: c.time())),
    (_time, "monotonic_ns", _clocked(_time.monotonic_ns, lambda c: int(c.monotonic() * 1e9))),
    (_time, "perf_counter_ns", _clocked(_time.perf_counter_ns, lambda c: int(c.monotonic() * 1e9))),
    (_time, "time_ns", _clocked(_time.time_ns, lambda c: int(c.time() * 1e9))),
    # A child process keeps real time: waiting for it, its caller does too.
    (subprocess.Popen, "wait", _real_time(subprocess.Popen.wait)),
    (subprocess.Popen, "communicate", _real_time(subprocess.Popen.communicate)),
    # asyncio: every loop a program makes inside a run is coordkit's (AIO-2).
    *aio.PATCHES,
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
        self._unraisable = sys.unraisablehook
        try:  # half-applied (a Ctrl-C, a module that fails a lookup), it is undone
            install_thread_hooks()
            self._aliases = _Patch(_aliases_of_patched_names())
            self._aliases.__enter__()
            self._patch.__enter__()
            sys.unraisablehook = self._drop_kills
        except BaseException:
            self.__exit__()
            raise
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
        _forget_dummies()
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
    """Restart ``Thread-N`` numbering so each run names its threads identically; returns
    what ``restore_thread_names`` needs to put the numbering back."""
    saved = threading._counter  # type: ignore[attr-defined]
    fresh = threading._counter = itertools.count(1).__next__  # type: ignore[attr-defined]
    return saved, fresh


def restore_thread_names(token: Any) -> None:
    """Put back the numbering a run replaced, unless something has replaced the run's
    since (a run abandoned by the watchdog ends late, after later runs began)."""
    saved, fresh = token
    if threading._counter is fresh:  # type: ignore[attr-defined]
        threading._counter = saved  # type: ignore[attr-defined]
