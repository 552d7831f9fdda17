"""Line granularity: a scheduling point before every source line of the user's code,
and before every store of the user's code into shared state.

Races on unsynchronised state only show up if the scheduler may switch between
reading a value and writing it back.  A point at the start of each line lets it
switch between ``tmp = c.v`` and ``c.v = tmp + 1``; a point just before each store
to a global, an attribute, a subscript or a closure cell (not to a local) lets it
switch inside ``x += 1`` too, which reads and writes on one line.  Lines of the
standard library, of installed packages and of coordkit itself run without
interruption; their synchronisation operations are scheduling points anyway.

Python 3.12+ uses ``sys.monitoring`` (cheap, and disabled per location for
code that is not the user's, and for instructions that are not stores); 3.11
uses ``sys.settrace`` with opcode events on the worker thread.
"""

from __future__ import annotations

import dis
import os
import sys
import sysconfig
from typing import TYPE_CHECKING, Any

from coordkit.engine.runtime import current_execution

if TYPE_CHECKING:
    from coordkit.engine.runtime import Execution

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
    SUPPORTED = True
else:
    SUPPORTED = False


def _on_line(ex: Execution, kind: str = "line", target: str = "") -> None:
    if ex.tracer is not None and not ex.killing:
        # CPython turns tracing off while a trace or monitoring callback runs. A switch
        # to another thread from in here would leave that thread untraced, so leave the
        # "inside a callback" state for the duration of the scheduling point.
        _leave_tracing(_get_tstate())
        try:
            ex.point(kind, target)
        finally:
            _enter_tracing(_get_tstate())


if sys.version_info >= (3, 12):
    _TOOL_ID = 4  # sys.monitoring ids 0-5 exist; 4 and 5 are free for tools like this one
    _registered = False
    _instrumented: set[Any] = set()  # user code with INSTRUCTION events switched on

    def _line_event(code: Any, line: int) -> Any:
        if not is_user_code(code):
            return sys.monitoring.DISABLE
        if code not in _instrumented and shared_stores(code):
            _instrumented.add(code)
            sys.monitoring.set_local_events(_TOOL_ID, code, sys.monitoring.events.INSTRUCTION)
        ex = current_execution()
        if ex is not None:
            _on_line(ex)
        return None

    def _instruction_event(code: Any, offset: int) -> Any:
        what = shared_stores(code).get(offset)
        if what is None:
            return sys.monitoring.DISABLE
        ex = current_execution()
        if ex is not None:
            _on_line(ex, "store", what)
        return None

    def install(ex: Execution) -> None:
        global _registered
        mon = sys.monitoring
        if not _registered:
            owner = mon.get_tool(_TOOL_ID)
            if owner is None:
                mon.use_tool_id(_TOOL_ID, "coordkit")
            elif owner != "coordkit":
                raise RuntimeError(unavailable())
            mon.register_callback(_TOOL_ID, mon.events.LINE, _line_event)
            mon.register_callback(_TOOL_ID, mon.events.INSTRUCTION, _instruction_event)
            _registered = True
        mon.set_events(_TOOL_ID, mon.events.LINE)

    def unavailable() -> str | None:
        """Why line granularity cannot run now (another tool holds its id), or None."""
        owner = sys.monitoring.get_tool(_TOOL_ID)
        if owner is None or owner == "coordkit":
            return None
        return (f"granularity='line' needs sys.monitoring tool id {_TOOL_ID}, which {owner!r} "
                "is using; run without it")

    def uninstall() -> None:
        """Switch every event off and give the tool id back: nothing of coordkit stays
        registered between runs (a profiler or debugger may want the id)."""
        global _registered
        if not _registered:
            return
        mon = sys.monitoring
        mon.set_events(_TOOL_ID, 0)
        while _instrumented:
            mon.set_local_events(_TOOL_ID, _instrumented.pop(), 0)
        mon.register_callback(_TOOL_ID, mon.events.LINE, None)
        mon.register_callback(_TOOL_ID, mon.events.INSTRUCTION, None)
        if mon.get_tool(_TOOL_ID) == "coordkit":
            mon.free_tool_id(_TOOL_ID)
        _registered = False

else:

    def _local_trace(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            ex = current_execution()
            if ex is not None:
                _on_line(ex)
        elif event == "opcode":
            what = shared_stores(frame.f_code).get(frame.f_lasti)
            if what is not None:
                ex = current_execution()
                if ex is not None:
                    _on_line(ex, "store", what)
        return _local_trace

    def _global_trace(frame: Any, event: str, arg: Any) -> Any:
        if event == "call" and is_user_code(frame.f_code):
            if shared_stores(frame.f_code):
                frame.f_trace_opcodes = True
            return _local_trace
        return None

    def unavailable() -> str | None:
        return None

    def install(ex: Execution) -> None:
        sys.settrace(_global_trace)

    def uninstall() -> None:
        sys.settrace(None)
