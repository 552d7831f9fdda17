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

import dis
import os
import sys
import sysconfig
from typing import TYPE_CHECKING, Any

from coordkit.engine.accesses import Frame, Site, access_sites, location_of
from coordkit.engine.runtime import current_execution

if TYPE_CHECKING:
    from coordkit.engine.runtime import Execution

__all__ = ["SWITCHES", "Tracer", "is_user_code", "unavailable"]

_LIBRARY_ROOTS = tuple(
    os.path.realpath(p) + os.sep
    for p in {
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["platstdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # coordkit itself
    }
)
_user_code_cache: dict[Any, bool] = {}
STACK_DEPTH = 3  # frames of the user's code kept for each side of a race


def is_user_code(code: Any) -> bool:
    """True for code the user wrote (not the stdlib, installed packages or coordkit)."""
    known = _user_code_cache.get(code)
    if known is None:
        fn = code.co_filename
        # "<string>" and friends are generated code (dataclass methods, namedtuples).
        known = not fn.startswith("<") and not os.path.realpath(fn).startswith(_LIBRARY_ROOTS)
        _user_code_cache[code] = known
    return known


# Writes that another thread can see: everything but STORE_FAST and friends (locals).
_SHARED_STORES = frozenset(
    name for name in dis.opmap
    if name.startswith(("STORE_", "DELETE_")) and "FAST" not in name
)
_stores_cache: dict[Any, dict[int, str]] = {}


def shared_stores(code: Any) -> dict[int, str]:
    """Byte offset -> what is written, for each store of ``code`` into shared state."""
    known = _stores_cache.get(code)
    if known is None:
        known = {}
        prefix: list[int] = []  # EXTENDED_ARG offsets that lead into the next instruction
        for ins in dis.get_instructions(code):
            if ins.opname == "EXTENDED_ARG":
                prefix.append(ins.offset)
                continue
            if ins.opname in _SHARED_STORES:
                what = ins.argval if isinstance(ins.argval, str) else "[]"
                for offset in (*prefix, ins.offset):
                    known[offset] = what
            prefix = []
        _stores_cache[code] = known
    return known


if sys.version_info >= (3, 11):
    import ctypes

    _get_tstate = ctypes.pythonapi.PyThreadState_Get
    _get_tstate.restype = ctypes.c_void_p
    _leave_tracing = ctypes.pythonapi.PyThreadState_LeaveTracing
    _leave_tracing.argtypes = [ctypes.c_void_p]
    _enter_tracing = ctypes.pythonapi.PyThreadState_EnterTracing
    _enter_tracing.argtypes = [ctypes.c_void_p]
    SWITCHES = True
else:
    SWITCHES = False


def _point(ex: Execution, kind: str = "line", target: str = "") -> None:
    if not ex.killing:
        # CPython turns tracing off while a trace or monitoring callback runs. A switch
        # to another thread from in here would leave that thread untraced, so leave the
        # "inside a callback" state for the duration of the scheduling point.
        _leave_tracing(_get_tstate())
        try:
            ex.point(kind, target)
        finally:
            _enter_tracing(_get_tstate())


def _stack(frame: Any) -> tuple[str, ...]:
    out = []
    f = frame
    while f is not None and len(out) < STACK_DEPTH:
        code = f.f_code
        if is_user_code(code):
            out.append(f"{os.path.basename(code.co_filename)}:{f.f_lineno} in {code.co_name}")
        f = f.f_back
    return tuple(out)


def _access(ex: Execution, site: Site, frame: Any) -> None:
    """Hand the access at ``site`` to the run, if the location can be named."""
    where = location_of(site, Frame(frame))
    if where is not None:
        owner, field, keep = where
        ex.access(owner, field, keep, site, _stack(frame))


class Tracer:
    """What one run traces (see the module's docstring)."""

    __slots__ = ("accesses", "lines", "racing")

    def __init__(self, *, lines: bool = False, accesses: bool = False,
                 racing: frozenset[int] = frozenset()) -> None:
        self.lines = lines
        self.accesses = accesses
        self.racing = racing if SWITCHES else frozenset()

    @property
    def mode(self) -> tuple[bool, bool, frozenset[int]]:
        return self.lines, self.accesses, self.racing

    def wants(self, code: Any) -> bool:
        """True when ``code`` has an instruction this tracer acts on."""
        if self.lines and shared_stores(code):
            return True
        if self.accesses:
            return bool(access_sites(code))
        racing = self.racing
        return bool(racing) and any(s.site_key in racing for s in access_sites(code).values())

    def instruction(self, ex: Execution, code: Any, offset: int, frame: Any) -> bool:
        """The instruction at ``offset`` is about to run; False when there is nothing to do
        there (for this tracer, ever)."""
        acted = False
        if self.lines:
            what = shared_stores(code).get(offset)
            if what is not None:
                _point(ex, "store", what)
                acted = True
        site = access_sites(code).get(offset) if (self.accesses or self.racing) else None
        if site is None:
            return acted
        if site.site_key in self.racing:
            _point(ex, "access", site.name)
            acted = True
        if self.accesses:
            _access(ex, site, frame)
            acted = True
        return acted

    def install(self, ex: Execution) -> None:
        _install(self)

    def uninstall(self) -> None:
        _uninstall()


if sys.version_info >= (3, 12):
    _TOOL_ID = 4  # sys.monitoring ids 0-5 exist; 4 and 5 are free for tools like this one
    _registered = False
    _last_mode: Any = None
    _instrumented: set[Any] = set()  # user code with INSTRUCTION events switched on

    def _instrument(code: Any, tracer: Tracer) -> None:
        if code not in _instrumented and tracer.wants(code):
            _instrumented.add(code)
            sys.monitoring.set_local_events(_TOOL_ID, code, sys.monitoring.events.INSTRUCTION)

    def _start_event(code: Any, offset: int) -> Any:
        if not is_user_code(code):
            return sys.monitoring.DISABLE
        ex = current_execution()
        if ex is not None and ex.tracer is not None:
            _instrument(code, ex.tracer)
        return None

    def _line_event(code: Any, line: int) -> Any:
        if not is_user_code(code):
            return sys.monitoring.DISABLE
        ex = current_execution()
        if ex is not None and ex.tracer is not None:
            _instrument(code, ex.tracer)
            if ex.tracer.lines:
                _point(ex)
        return None

    def _instruction_event(code: Any, offset: int) -> Any:
        ex = current_execution()
        if ex is None or ex.tracer is None:
            return None
        if not ex.tracer.instruction(ex, code, offset, sys._getframe(1)):
            return sys.monitoring.DISABLE
        return None

    def _install(tracer: Tracer) -> None:
        global _registered, _last_mode
        mon = sys.monitoring
        if not _registered:
            owner = mon.get_tool(_TOOL_ID)
            if owner is None:
                mon.use_tool_id(_TOOL_ID, "coordkit")
            elif owner != "coordkit":
                raise RuntimeError(unavailable())
            mon.register_callback(_TOOL_ID, mon.events.LINE, _line_event)
            mon.register_callback(_TOOL_ID, mon.events.PY_START, _start_event)
            mon.register_callback(_TOOL_ID, mon.events.INSTRUCTION, _instruction_event)
            _registered = True
        if tracer.mode != _last_mode:
            # Locations disabled for another tracer may matter to this one.
            mon.restart_events()
            _last_mode = tracer.mode
        mon.set_events(_TOOL_ID, mon.events.LINE if tracer.lines else mon.events.PY_START)

    def unavailable() -> str | None:
        """Why tracing cannot run now (another tool holds its id), or None."""
        owner = sys.monitoring.get_tool(_TOOL_ID)
        if owner is None or owner == "coordkit":
            return None
        return (f"tracing the user's code needs sys.monitoring tool id {_TOOL_ID}, which "
                f"{owner!r} is using; run without it, or with granularity='sync' and races='ignore'")

    def _uninstall() -> None:
        """Switch every event off and give the tool id back: nothing of coordkit stays
        registered between runs (a profiler or debugger may want the id)."""
        global _registered, _last_mode
        if not _registered:
            return
        mon = sys.monitoring
        mon.set_events(_TOOL_ID, 0)
        while _instrumented:
            mon.set_local_events(_TOOL_ID, _instrumented.pop(), 0)
        for event in (mon.events.LINE, mon.events.PY_START, mon.events.INSTRUCTION):
            mon.register_callback(_TOOL_ID, event, None)
        if mon.get_tool(_TOOL_ID) == "coordkit":
            mon.free_tool_id(_TOOL_ID)
        _registered = False
        _last_mode = None

else:

    def _local_trace(frame: Any, event: str, arg: Any) -> Any:
        ex = current_execution()
        if ex is None or ex.tracer is None:
            return _local_trace
        if event == "opcode":
            ex.tracer.instruction(ex, frame.f_code, frame.f_lasti, frame)
        elif event == "line" and ex.tracer.lines:
            _point(ex)
        return _local_trace

    def _global_trace(frame: Any, event: str, arg: Any) -> Any:
        if event != "call" or not is_user_code(frame.f_code):
            return None
        ex = current_execution()
        if ex is None or ex.tracer is None:
            return None
        tracer = ex.tracer
        frame.f_trace_lines = tracer.lines
        if tracer.wants(frame.f_code):
            frame.f_trace_opcodes = True
        elif not tracer.lines:
            return None
        return _local_trace

    def unavailable() -> str | None:
        return None

    def _install(tracer: Tracer) -> None:
        sys.settrace(_global_trace)

    def _uninstall() -> None:
        sys.settrace(None)
