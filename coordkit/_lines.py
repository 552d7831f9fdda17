"""Line granularity: a scheduling point before every source line of the user's code.

Races on unsynchronised state (``x += 1`` from two threads) only show up if the
scheduler may switch between lines.  Lines of the standard library, of
installed packages and of coordkit itself run without interruption; their
synchronisation operations are scheduling points anyway.

Python 3.12+ uses ``sys.monitoring`` (cheap, and disabled per location for
code that is not the user's); older versions use ``sys.settrace`` on the
worker thread.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from typing import TYPE_CHECKING, Any

from coordkit._runtime import current_execution

if TYPE_CHECKING:
    from coordkit._runtime import Execution

_LIBRARY_ROOTS = tuple(
    os.path.realpath(p) + os.sep
    for p in {
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["platstdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        os.path.dirname(os.path.abspath(__file__)),
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


def _on_line(ex: Execution) -> None:
    if ex.line_granularity and not ex.killing:
        # CPython turns tracing off while a trace or monitoring callback runs. A switch
        # to another thread from in here would leave that thread untraced, so leave the
        # "inside a callback" state for the duration of the scheduling point.
        _leave_tracing(_get_tstate())
        try:
            ex.point("line", None)
        finally:
            _enter_tracing(_get_tstate())


if sys.version_info >= (3, 12):
    _TOOL_ID = 4  # sys.monitoring ids 0-5 exist; 4 and 5 are free for tools like this one
    _registered = False

    def _line_event(code: Any, line: int) -> Any:
        if not is_user_code(code):
            return sys.monitoring.DISABLE
        ex = current_execution()
        if ex is not None:
            _on_line(ex)
        return None

    def install(ex: Execution) -> None:
        global _registered
        if not _registered:
            mon = sys.monitoring
            if mon.get_tool(_TOOL_ID) is None:
                mon.use_tool_id(_TOOL_ID, "coordkit")
            mon.register_callback(_TOOL_ID, mon.events.LINE, _line_event)
            _registered = True
        sys.monitoring.set_events(_TOOL_ID, sys.monitoring.events.LINE)

    def uninstall() -> None:
        if _registered:
            sys.monitoring.set_events(_TOOL_ID, 0)

else:

    def _local_trace(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            ex = current_execution()
            if ex is not None:
                _on_line(ex)
        return _local_trace

    def _global_trace(frame: Any, event: str, arg: Any) -> Any:
        if event == "call" and is_user_code(frame.f_code):
            return _local_trace
        return None

    def install(ex: Execution) -> None:
        sys.settrace(_global_trace)

    def uninstall() -> None:
        sys.settrace(None)
