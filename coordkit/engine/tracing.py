"""What a run sees of the user's code between synchronisation operations: its lines, its
shared-memory accesses, and the accesses that have raced.

A ``Tracer`` is made for each run, and does up to three things:

* ``lines`` (line granularity): a scheduling point before every source line of the
  user's code, and before every store into shared state (a global, an attribute,
  an item, a closure cell), so the scheduler may switch between ``tmp = c.v`` and
  ``c.v = tmp + 1`` and inside ``x += 1`` too;
* ``accesses`` (race detection): every access of the user's code to shared memory
  is handed to the run (``Execution.access``), which orders it against the others;
* ``racing`` (auto granularity): a scheduling point before every access at a site
  that has raced (site keys, see ``accesses.site_key``).

Lines of the standard library, of installed packages and of coordkit itself are not
traced; their synchronisation operations are scheduling points anyway.  Python
3.12+ uses ``sys.monitoring`` (disabled per location where there is nothing to do);
3.10 and 3.11 use ``sys.settrace`` with opcode events.  A scheduling point from
inside a trace callback needs Python 3.11 (``SWITCHES``); on 3.10 a tracer only
records accesses.
"""

from __future__ import annotations

import _thread
import asyncio
import dis
import logging
import queue
import sched
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import greenlet

from coordkit import sync
from coordkit.engine.accesses import (
    CARRIES,
    UNNAMED,
    CodeCache,
    Frame,
    Pending,
    Site,
    _user_code_cache,
    access_sites,
    call_locations,
    carries_nothing,
    carry,
    is_user_code,
    locations,
    seen_instructions,
    site_key,
)
from coordkit.engine.frames import is_traced_library
from coordkit.engine.points import ANY, READ, WRITE, Effect, Step
from coordkit.engine.races import format_stack
from coordkit.engine.runtime import ACCELERATED, current_execution, stay_accelerated
from coordkit.engine.task import TaskGreenlet

if TYPE_CHECKING:
    from coordkit.engine.runtime import Execution

__all__ = ["ACCELERATED", "SWITCHES", "Tracer", "hold", "is_traced", "is_user_code", "library_calls",
           "release", "unavailable"]

STACK_DEPTH = 3  # frames of the user's code kept for each side of a race


# Writes that another thread can see: everything but STORE_FAST and friends (locals).
_SHARED_STORES = frozenset(
    name for name in dis.opmap
    if name.startswith(("STORE_", "DELETE_")) and "FAST" not in name
)
_stores_cache = CodeCache()


def shared_stores(code: Any) -> dict[int, str]:
    """Offset a tracer sees -> what is written, for each store of ``code`` into shared state."""
    known: dict[int, str] | None = _stores_cache.get(id(code))
    if known is None and not is_user_code(code):  # the stdlib's: no points (RACE-12)
        known = _stores_cache.put(code, {})
    if known is None:
        known = _stores_cache.put(code, {
            offset: ins.argval if isinstance(ins.argval, str) else "[]"
            for offset, _head, ins in seen_instructions(code) if ins.opname in _SHARED_STORES})
    return known


if sys.version_info >= (3, 11):
    import ctypes

    _get_tstate = ctypes.pythonapi.PyThreadState_Get
    _get_tstate.restype = ctypes.c_void_p
    _leave_tracing = ctypes.pythonapi.PyThreadState_LeaveTracing
    _leave_tracing.argtypes = [ctypes.c_void_p]
    _enter_tracing = ctypes.pythonapi.PyThreadState_EnterTracing
    _enter_tracing.argtypes = [ctypes.c_void_p]
    if ACCELERATED is not None:  # the same two calls, without ctypes' cost (~3k instructions)
        _leave_tracing, _enter_tracing = ACCELERATED.leave_tracing, ACCELERATED.enter_tracing
    SWITCHES = True
else:
    SWITCHES = False


def _stack(frame: Any) -> tuple[tuple[str, int, str], ...]:
    """Up to ``STACK_DEPTH`` frames of the user's code, innermost first, as ``(file, line,
    function)``: formatted only if a race is reported."""
    out = []
    f = frame
    while f is not None and len(out) < STACK_DEPTH:
        code = f.f_code
        if is_user_code(code):
            out.append((code.co_filename, f.f_lineno, code.co_name))
        f = f.f_back
    if not out and frame is not None:  # a thread running only the stdlib's code (RACE-12)
        out.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
    return tuple(out)


def _access(ex: Execution, site: Site, frame: Any) -> None:
    """Hand the accesses at ``site`` to the run; where they cannot be named, the step
    depends on everything (SCHED-42).  Warn (once per site and run) when the site uses
    something the run does not control.

    A step a search repeats from its last run (SCHED-85) has its footprint already, and
    its escapes were warned about where it was recorded: without race detection, only
    the accesses at which that run first labelled memory are named (so that a later,
    new step labels memory as that run did), and the rest only leave what a later
    instruction of their frame reads (``carry``)."""
    tracer = ex.tracer
    pending = tracer.pending
    recorder = ex.recorder
    again = None
    if recorder is not None:
        recorder.accesses += 1
        again = recorder.names_again
        if again is not None and ex.races is None and recorder.accesses not in again:
            if site.kind in CARRIES:
                carry(site, Frame(frame, pending.loaded), pending)
            return
    named = Frame(frame, pending.loaded)
    if again is None and site.site_key not in tracer.checked and site.kind in _ESCAPE_KINDS:
        tracer.checked.add(site.site_key)
        escape = _escape(site, named)
        if escape is not None:
            stack = format_stack(_stack(frame))
            ex.warn(escape.format(where=stack[0] if stack else "?"))
    found = locations(site, named, pending)
    if not found:
        if found is not UNNAMED:
            return
        _depends_on_everything(ex, site)
        guessed, pending.guessed = pending.guessed, []
        if guessed and ex.races is not None:  # race detection's only (RACE-11)
            stack = _stack(frame)
            for owner, field, keep, access in guessed:
                ex.access(owner, field, keep, site._replace(access=access), stack, False)
        return
    # Only a race report shows the stack; footprints alone do not need it.
    stack = _stack(frame) if ex.races is not None else ()
    mine = site.access
    for owner, field, keep, access in found:
        ex.access(owner, field, keep, site if access == mine else site._replace(access=access),
                  stack)


def library_call(ex: Execution, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The library's own (untraced) code calls ``fn``, a callable the program gave it, now:
    hand what the call touches to the run, as a call in the user's code would (SCHED-59)."""
    tracer = ex.tracer
    if tracer is None or not tracer.accesses:
        return
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    site = Site("call", READ, name, None, None, 0, site_key("<library>", 0, "call", READ, name))
    found = call_locations(fn, args, kwargs)
    if found is UNNAMED:
        _depends_on_everything(ex, site)
        return
    for owner, field, keep, access in found:
        ex.access(owner, field, keep, site._replace(access=access), ())


_THREAD_RUN, _TIMER_RUN = threading.Thread.run, threading.Timer.run


def library_calls(ex: Execution | None, thread: threading.Thread) -> Callable[[], None] | None:
    """Before ``thread.run()``: where that is the library's own ``run``, the callable it
    calls (a thread's target, a Timer's function: ``log.append``, ``d.__setitem__``) is
    called from code the tracer does not trace, so its call is handed to the run where it
    is made: a thread's target now (``Thread.run`` calls it at once), a Timer's function
    once its wait is over, through a stand-in (SCHED-59).  Returns what puts the Timer's
    function back, or None.  (No frame of its own around ``run``: a thread has the room
    to recurse that a real one has, SCHED-40.)"""
    run = type(thread).run
    if ex is None or ex.tracer is None or not ex.tracer.accesses:
        return None
    if run is _THREAD_RUN:
        target = thread.__dict__.get("_target")
        if target is not None and not _traced(target):
            library_call(ex, target, thread.__dict__.get("_args", ()),
                         thread.__dict__.get("_kwargs", {}))
        return None
    function = thread.__dict__.get("function")
    if run is not _TIMER_RUN or function is None or _traced(function):
        return None

    def seen(*args: Any, **kwargs: Any) -> Any:
        library_call(ex, function, args, kwargs)
        return function(*args, **kwargs)

    thread.function = seen  # type: ignore[attr-defined]
    return lambda: setattr(thread, "function", function)


def _traced(fn: Any) -> bool:
    """``fn`` is the user's Python code: the tracer sees what it does.  (The stdlib's
    traced code is seen only on the program's objects, RACE-12: its call is handed over.)"""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return code is not None and is_user_code(code)


USER, LIBRARY = 1, 2
_traced_cache = CodeCache()  # id(code) -> 0, USER or LIBRARY


def is_traced(code: Any) -> int:
    """``USER`` for the user's code, ``LIBRARY`` for the stdlib's that may be traced
    (RACE-12: its frames on the program's objects, ``program_frame``; their accesses only,
    no line or store points), else 0."""
    known: int | None = _traced_cache.get(id(code))
    if known is None:
        known = _traced_cache.put(code, USER if is_user_code(code) else
                                  LIBRARY if is_traced_library(code.co_filename, getattr(
                                      code, "co_qualname", code.co_name)) else 0)
    return known


# The stdlib's objects whose methods' accesses are seen (RACE-12), and the attribute that
# holds the lock their methods take: one made before the run is real, so the accesses
# under it could not be ordered (RACE-13).  An event loop in a run is always coordkit's.
_TRACED_CLASSES: dict[type, str | None] = {
    asyncio.BaseEventLoop: None, logging.Handler: "lock", sched.scheduler: "_lock"}
_TRACED_BASES = tuple(_TRACED_CLASSES)


def program_frame(frame: Any) -> bool:
    """A frame of the stdlib's traced code runs a method on the program's own object (an
    event loop, a log handler or a scheduler made in the run), in a thread of the
    program's, not one of coordkit's (a loop's canceller, RACE-12)."""
    code = frame.f_code
    if not code.co_argcount:
        return False
    receiver = frame.f_locals.get(code.co_varnames[0])
    if not isinstance(receiver, _TRACED_BASES):
        return False
    for kind, lock in _TRACED_CLASSES.items():
        if isinstance(receiver, kind):
            held = None if lock is None else getattr(receiver, "__dict__", {}).get(lock)
            if isinstance(held, _REAL_SYNC):
                return False
            break
    ex = current_execution()
    task = None if ex is None else ex.current
    # (Not cause.is_coordkits: a thread whose target is the loop's run_forever is the
    # program's, though that method is coordkit's.)
    return task is None or not getattr(task.target, "_ck_helper", False)


def _depends_on_everything(ex: Execution, site: Site) -> None:
    """The running step touched what cannot be named: an ``ANY`` effect (SCHED-31), once
    per step."""
    recorder, task = ex.recorder, ex.current
    if recorder is None or task is None or ex.killing or task.step is None:
        return
    footprint = task.step.footprint
    if not footprint or footprint[-1].obj != ANY:
        recorder.effect(task, ANY, site.name or site.kind, WRITE)


# What a run cannot control when the program uses it: the real clock (a function bound
# before the run, as ``from time import monotonic`` binds it) and synchronisation objects
# created before the run (their waits are real).  Captured when coordkit is imported,
# before any run patches the stdlib.
_REAL_CLOCKS = {id(f): f"time.{f.__name__}" for f in (
    sync.real_monotonic, sync.real_time, sync.real_perf_counter, sync.real_sleep,
    time.monotonic_ns, time.time_ns, time.perf_counter_ns)}
_REAL_LOCK = _thread.LockType
_REAL_RLOCK = type(_thread.RLock())
_REAL_SYNC = (_REAL_LOCK, _REAL_RLOCK, threading.Condition, threading.Event,
              threading.Semaphore, threading.BoundedSemaphore)
_CLOCK_WARNING = ("{name}, bound before the run, is called at {{where}}: it reads the real clock, "
                  "not the run's virtual one (call {name} through the module instead)")
_SYNC_WARNING = ("a real {name} created before the run is used at {{where}}: its waits are "
                 "real, not scheduled, so the run cannot explore them (create it inside the "
                 "program)")


_ESCAPE_KINDS = frozenset({"global", "attr", "method", "with"})


def _escape(site: Site, frame: Frame) -> str | None:
    """A warning template (with ``{where}``) when ``site`` uses a real clock or a real
    synchronisation object, or None.  Only the user's code is warned about: the stdlib's
    own module locks (logging's ``_lock``) are none of the program's (RACE-12)."""
    if site.access != READ or site.kind not in ("global", "attr", "method", "with"):
        return None
    if not is_user_code(frame.frame.f_code):
        return None
    if site.kind in ("method", "with"):
        owner = frame.value(site.owner)
        if isinstance(owner, _REAL_SYNC) or _holds_real_lock(owner):
            return _SYNC_WARNING.format(name=_sync_name(owner))
    if site.kind == "global":
        value = frame.value(("global", site.name))
    elif site.kind == "with" or site.owner is None:
        return None
    else:
        value = frame.value(("attr", site.owner, site.name))
    name = _REAL_CLOCKS.get(id(value))
    return None if name is None else _CLOCK_WARNING.format(name=name)


def _holds_real_lock(obj: Any) -> bool:
    """A ``queue.Queue`` or ``threading.Barrier`` made before the run (over real locks)."""
    if isinstance(obj, queue.Queue):
        return isinstance(getattr(obj, "mutex", None), _REAL_SYNC)
    if isinstance(obj, threading.Barrier):
        return isinstance(getattr(obj, "_cond", None), _REAL_SYNC)
    return False


def _sync_name(obj: Any) -> str:
    kind = type(obj)
    if kind is _REAL_LOCK:
        return "threading.Lock"
    if kind is _REAL_RLOCK:
        return "threading.RLock"
    return f"{kind.__module__}.{kind.__qualname__}"


_by_mode: dict[tuple[bool, bool, frozenset[int]], tuple[CodeCache, CodeCache]] = {}


def _caches(lines: bool, accesses: bool, racing: frozenset[int]) -> tuple[CodeCache, CodeCache]:
    """The offsets a tracer of this mode acts at and counts at, per code object: shared by
    the runs of a search (each has a tracer of its own), a few modes kept."""
    mode = (lines, accesses, racing)
    known = _by_mode.get(mode)
    if known is None:
        if len(_by_mode) >= 8:
            _by_mode.clear()
        known = _by_mode[mode] = (CodeCache(), CodeCache())
    return known


class Tracer:
    """What one run traces (see the module's docstring)."""

    __slots__ = ("_counted", "_offsets", "accesses", "checked", "lines", "pending", "racing",
                 "unseen")

    def __init__(self, *, lines: bool = False, accesses: bool = False,
                 racing: frozenset[int] = frozenset()) -> None:
        self.lines = lines
        self.accesses = accesses
        self.racing = racing if SWITCHES else frozenset()
        self._offsets, self._counted = _caches(lines, accesses, self.racing)
        self.checked: set[int] = set()  # sites checked for escapes (see _escape)
        self.pending = Pending()  # what one instruction leaves for a later one
        # A step whose instruction the tracer could not look at (the user's code was at
        # its recursion limit, where the tracer has no room): it depends on everything.
        self.unseen: Step | None = None

    def depends_on_everything(self) -> None:
        """Give the step the tracer could not look into an ``ANY`` effect (SCHED-42)."""
        step, self.unseen = self.unseen, None
        if step is not None:
            step.footprint.append(Effect(ANY, WRITE, "unseen"))

    def offsets(self, code: Any) -> frozenset[int]:
        """The byte offsets of ``code`` at which this tracer acts."""
        known: frozenset[int] | None = self._offsets.get(id(code))
        if known is None:
            found = set(shared_stores(code)) if self.lines else set()
            sites = access_sites(code)
            if self.accesses:
                found.update(sites)
            elif self.racing:
                found.update(o for o, s in sites.items() if s.site_key in self.racing)
            known = self._offsets.put(code, frozenset(found))
        return known

    def counted(self, code: Any) -> frozenset[int]:
        """The offsets of ``code`` where the instruction only counts an access in a step
        the search repeats (no point there, a site that leaves nothing for a later
        instruction: ``_access``), for the accelerator to do so without a Python call."""
        known: frozenset[int] | None = self._counted.get(id(code))
        if known is None:
            stores = shared_stores(code) if self.lines else {}
            known = self._counted.put(code, frozenset(
                offset for offset, site in access_sites(code).items()
                if self.accesses and offset not in stores and site.site_key not in self.racing
                and carries_nothing(site, code)))
        return known

    @property
    def mode(self) -> tuple[bool, bool, frozenset[int]]:
        return self.lines, self.accesses, self.racing

    def wants(self, code: Any) -> bool:
        """True when ``code`` has an instruction this tracer acts on."""
        return bool(self.offsets(code))

    def instruction(self, ex: Execution, code: Any, offset: int, frame: Any) -> bool:
        """The instruction at ``offset`` is about to run; False when there is nothing to do
        there (for this tracer, ever)."""
        if self.unseen is not None:
            self.depends_on_everything()
        acted = False
        if self.lines:
            what = shared_stores(code).get(offset)
            if what is not None:
                ex.callback_point("store", what)
                acted = True
        site = access_sites(code).get(offset) if (self.accesses or self.racing) else None
        if site is None:
            return acted
        if site.site_key in self.racing:
            ex.callback_point("access", site.name)
            acted = True
        if self.accesses:
            _access(ex, site, frame)
            acted = True
        return acted

    # The OS thread's state, and CPython's "inside a trace callback" state on it, for the
    # run to leave and re-enter around switches (``Execution.point``): foreign functions,
    # which make no call event of their own.  None where a point cannot switch (3.10).
    thread_state: Any = _get_tstate if SWITCHES else None
    stop_tracing: Any = _enter_tracing if SWITCHES else None
    resume_tracing: Any = _leave_tracing if SWITCHES else None
    # Whether engine code gains by running untraced where no point needs it (a shim's
    # factory, the driver's pick): under settrace (3.11) every instruction of a traced
    # thread takes the tracing path; under sys.monitoring (3.12+) a location with nothing
    # to do is disabled once, and running it untraced only keeps it from being disabled.
    untraced_pays: bool = SWITCHES and sys.version_info < (3, 12)

    def install(self, ex: Execution) -> None:
        _install(self)

    def uninstall(self) -> None:
        self.depends_on_everything()
        _uninstall()


_holders = 0  # sessions whose runs share the installed tracing (see hold)


def hold() -> None:
    """A session of runs begins: what its runs install stays installed from one run to the
    next, until its ``release`` (where installing is costly: ``sys.monitoring``)."""
    global _holders
    _holders += 1


if sys.version_info >= (3, 12):
    _TOOL_ID = 4  # sys.monitoring ids 0-5 exist; 4 and 5 are free for tools like this one
    _registered = False
    # Where the tracers installed since the last restart_events all act (see _acts_within):
    # an instruction disabled since then is one no tracer since acts on.
    _acting: Any = None
    # id -> user code with INSTRUCTION events switched on (by id: a code object hashes its
    # whole content, and this is looked up at every line event).
    _instrumented: dict[int, Any] = {}

    def _instrument(code: Any, tracer: Tracer) -> None:
        if id(code) not in _instrumented and tracer.wants(code):
            _instrumented[id(code)] = code
            sys.monitoring.set_local_events(_TOOL_ID, code, sys.monitoring.events.INSTRUCTION)

    # id(frame) -> program_frame(frame), for the stdlib's traced frames: decided at the
    # frame's start, which comes before any of its instructions, so a frame reusing a dead
    # one's address overwrites its entry first (RACE-12).
    _program_frames: dict[int, bool] = {}

    def _start_event(code: Any, offset: int) -> Any:
        traced = is_traced(code)
        if not traced:
            return sys.monitoring.DISABLE
        ex = current_execution()
        if ex is None or ex.tracer is None:
            return None
        if traced == LIBRARY:
            frame = sys._getframe(1)
            if not program_frame(frame):  # (not instrumented until a program's frame runs it)
                _program_frames[id(frame)] = False
                return None
            _program_frames[id(frame)] = True
        _instrument(code, ex.tracer)
        return None

    def _line_event(code: Any, line: int) -> Any:
        """A line begins: in the user's code, a point at line granularity; any other code's
        lines are disabled.  (A line point's hot path: the lookups are inlined.)"""
        if not _user_code_cache.get(id(code)) and not is_user_code(code):
            return sys.monitoring.DISABLE
        ex = current_execution()
        if ex is not None:
            tracer = ex.tracer
            if tracer is not None:
                if id(code) not in _instrumented:
                    _instrument(code, tracer)
                if tracer.lines and (stay_accelerated is None
                                     or not stay_accelerated(ex, "line", "", True)):
                    ex.callback_point("line")
        return None

    def _line_callback() -> Callable[[Any, int], Any]:
        """``_line_event``, or the accelerator's: its hot path in C, the rest ``_line_event``'s."""
        if ACCELERATED is None:
            return _line_event
        ACCELERATED.configure_lines(_line_event, _user_code_cache, _instrumented,
                                    greenlet.getcurrent, TaskGreenlet)
        return ACCELERATED.line_event

    def _instruction_event(code: Any, offset: int) -> Any:
        ex = current_execution()
        if ex is None or ex.tracer is None:
            return None
        frame = sys._getframe(1)
        if (_traced_cache.get(id(code)) == LIBRARY and offset in access_sites(code)
                and not _program_frames.get(id(frame), False)):
            return None  # (another frame of this code may be the program's: RACE-12)
        tracer, recorder = ex.tracer, ex.recorder
        try:
            if (recorder is not None and recorder.names_again is not None and ex.races is None
                    and tracer.unseen is None and offset in tracer.counted(code)
                    and recorder.accesses + 1 not in recorder.names_again):
                recorder.accesses += 1  # all ``_access`` does there (see Tracer.counted)
                return None
            if not tracer.instruction(ex, code, offset, frame):
                return sys.monitoring.DISABLE
        except RecursionError:  # (no room: nothing called here, see Tracer.unseen)
            task = ex.current
            ex.tracer.unseen = None if task is None else task.step
        return None

    def _install(tracer: Tracer) -> None:
        global _registered, _acting
        mon = sys.monitoring
        if not _registered:
            owner = mon.get_tool(_TOOL_ID)
            if owner is None:
                mon.use_tool_id(_TOOL_ID, "coordkit")
            elif owner != "coordkit":
                raise RuntimeError(unavailable())
            mon.register_callback(_TOOL_ID, mon.events.LINE, _line_callback())
            mon.register_callback(_TOOL_ID, mon.events.PY_START, _start_event)
            mon.register_callback(_TOOL_ID, mon.events.INSTRUCTION, _instruction_event)
            _registered = True
        if _acting is None or not _acts_within(tracer.mode, _acting):
            # Instructions disabled for another tracer may matter to this one.
            mon.restart_events()
            _acting = tracer.mode
        else:
            _acting = _meet(_acting, tracer.mode)
        # PY_START in line mode too: without it, 3.13 gives no LINE event for a body on its
        # ``def``/``lambda`` line (CPython gh-155992), so ``Thread(target=lambda: ...)`` would
        # run with neither a point nor an access seen (SCHED-57).
        mon.set_events(_TOOL_ID, mon.events.PY_START | (mon.events.LINE if tracer.lines else 0))

    def _acts_within(mode: Any, acting: Any) -> bool:
        """A tracer of ``mode`` acts only at instructions where ``acting`` does (lines: every
        shared store; accesses: every access site; else the racing sites)."""
        lines, accesses, racing = mode
        if (lines and not acting[0]) or (accesses and not acting[1]):
            return False
        return accesses or acting[1] or racing <= acting[2]

    def _meet(a: Any, b: Any) -> Any:
        """The mode that acts where both ``a`` and ``b`` do."""
        if a[1] and b[1]:
            racing = frozenset()
        elif a[1] or b[1]:
            racing = b[2] if a[1] else a[2]
        else:
            racing = a[2] & b[2]
        return a[0] and b[0], a[1] and b[1], racing

    def unavailable() -> str | None:
        """Why tracing cannot run now (another tool holds its id), or None."""
        owner = sys.monitoring.get_tool(_TOOL_ID)
        if owner is None or owner == "coordkit":
            return None
        return (f"tracing the user's code needs sys.monitoring tool id {_TOOL_ID}, which "
                f"{owner!r} is using; run without it, or with granularity='sync' and races='ignore'")

    def _uninstall() -> None:
        """Switch every event off and give the tool id back: nothing of coordkit stays
        registered after a run, or, while a session holds tracing (``hold``), after the
        session's last run (a profiler or debugger may want the id).  Between a session's
        runs the events stay on: switching them off un-instruments every code object, and
        the next run would pay again for every location it had disabled (SCHED-65)."""
        global _registered, _acting
        if not _registered or _holders:
            return
        mon = sys.monitoring
        mon.set_events(_TOOL_ID, 0)
        _program_frames.clear()
        while _instrumented:
            mon.set_local_events(_TOOL_ID, _instrumented.popitem()[1], 0)
        for event in (mon.events.LINE, mon.events.PY_START, mon.events.INSTRUCTION):
            mon.register_callback(_TOOL_ID, event, None)
        if mon.get_tool(_TOOL_ID) == "coordkit":
            mon.free_tool_id(_TOOL_ID)
        _registered = False
        _acting = None

    def release() -> None:
        """A session that held tracing (``hold``) ends: the last one out uninstalls."""
        global _holders
        _holders -= 1
        if not _holders:
            _uninstall()

else:

    def release() -> None:
        """A session that held tracing (``hold``) ends (``sys.settrace`` is per run)."""
        global _holders
        _holders -= 1

    def _local_trace(ex: Execution, tracer: Tracer, offsets: frozenset[int], _code: Any = None) -> Any:
        """The trace function of one frame: every opcode event comes here, so it does as
        little as it can where the tracer has nothing to do."""

        def trace(frame: Any, event: str, arg: Any) -> Any:
            if event == "opcode":
                if frame.f_lasti in offsets:
                    try:
                        tracer.instruction(ex, frame.f_code, frame.f_lasti, frame)
                    except RecursionError:  # (no room: nothing called here, see unseen)
                        task = ex.current
                        tracer.unseen = None if task is None else task.step
            elif event == "line":
                ex.callback_point("line")
            # (Itself, as the frame holds it: a closure naming itself would be a cycle
            # through the run, left to the collector, SCHED-60.)
            return frame.f_trace

        return trace

    def _global_trace(frame: Any, event: str, arg: Any) -> Any:
        """Every call of the traced thread comes here: is_traced's lookup is inlined.
        Answers ``_NEVER_TRACED`` for code never traced, else the frame's local trace or None.
        (No call deeper than ``offsets``: it runs at the user's recursion depth.)"""
        code = frame.f_code
        traced = _traced_cache.get(id(code))
        if traced is None:
            traced = is_traced(code)
        if event != "call" or not traced:
            return _NEVER_TRACED
        ex = current_execution()
        if ex is None or ex.tracer is None:
            return None
        tracer = ex.tracer
        offsets = tracer.offsets(frame.f_code)
        if traced == LIBRARY and (not offsets or not program_frame(frame)):
            return None
        lines = frame.f_trace_lines = tracer.lines and traced == USER
        if offsets:
            frame.f_trace_opcodes = True
        elif not lines:
            return None
        return _local(ex, tracer, offsets, frame.f_code)

    def _instruction(ex: Execution, tracer: Tracer, frame: Any) -> None:
        """The accelerator's opcode event at an offset the tracer acts at."""
        try:
            tracer.instruction(ex, frame.f_code, frame.f_lasti, frame)
        except RecursionError:  # (no room: nothing called here, see unseen)
            task = ex.current
            tracer.unseen = None if task is None else task.step

    def _accelerated_local(ex: Execution, tracer: Tracer, offsets: frozenset[int], code: Any) -> Any:
        """What ``_local_trace`` does, in C: the accelerator sets it as the frame's trace."""
        return ACCELERATED.Local(ex.callback_point, _instruction, ex, tracer, offsets,
                                 tracer.counted(code))

    # The accelerator's C global trace function calls _global_trace at a call event: it
    # never asks again about a code object answered NEVER, and sets the Local it gets; the
    # user's code whose offsets the run's tracer knows it decides alone, as _global_trace.
    _SETTRACE = getattr(ACCELERATED, "settrace", None)
    if _SETTRACE is not None:
        ACCELERATED.configure_calls(_traced_cache, USER, _instruction, greenlet.getcurrent,
                                    TaskGreenlet)
    _NEVER_TRACED = None if _SETTRACE is None else ACCELERATED.NEVER
    _local = _local_trace if _SETTRACE is None else _accelerated_local

    def unavailable() -> str | None:
        return None

    def _install(tracer: Tracer) -> None:
        if _SETTRACE is None:
            sys.settrace(_global_trace)
        else:
            _SETTRACE(_global_trace)

    def _uninstall() -> None:
        sys.settrace(None)
