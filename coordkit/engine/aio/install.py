"""How a run installs its loop: the event-loop policy's methods, patched by ``patch``.

Every way a program gets a new loop goes through the default policy:
``asyncio.run`` and ``asyncio.Runner`` (without a ``loop_factory``) and
``asyncio.new_event_loop`` call ``new_event_loop``, ``asyncio.get_event_loop``
calls ``get_event_loop``.  Inside a run these make and keep coordkit's loops, one
current loop per controlled thread, in the run's own table; outside a run they are
asyncio's own (AIO-2).  What asyncio and ``concurrent.futures`` only log or warn of
inside a run (a coroutine never awaited, a done callback's exception) is its failure.
"""

from __future__ import annotations

import concurrent.futures._base as _futures
import gc
import sys
import threading
import warnings
import weakref
from asyncio import base_events, events, runners
from typing import Any

from coordkit.engine.aio.loop import ControlledLoop, fail
from coordkit.engine.failures import loop_failure
from coordkit.engine.runtime import Execution, current_execution

__all__ = ["PATCHES"]

_Policy = events.BaseDefaultEventLoopPolicy
_real_new_event_loop = _Policy.new_event_loop
_real_get_event_loop = _Policy.get_event_loop
_real_set_event_loop = _Policy.set_event_loop

# Per run: each controlled thread's current loop (set_event_loop), by thread id; a thread
# that called set_event_loop (even with None) is in the table.
_CURRENT: weakref.WeakKeyDictionary[Execution, dict[int, Any]] = weakref.WeakKeyDictionary()


def _new_event_loop(policy: Any) -> Any:
    ex = current_execution()
    if ex is None:
        return _real_new_event_loop(policy)
    return ControlledLoop(ex)


def _set_event_loop(policy: Any, loop: Any) -> None:
    ex = current_execution()
    if ex is None or ex.current is None:
        _real_set_event_loop(policy, loop)
        return
    if loop is not None and not isinstance(loop, events.AbstractEventLoop):
        raise TypeError(f"loop must be an instance of AbstractEventLoop or None, not "
                        f"'{type(loop).__name__}'")
    _CURRENT.setdefault(ex, {})[ex.current.tid] = loop


def _get_event_loop(policy: Any) -> Any:
    """The calling thread's current loop; the main thread's is made at its first call,
    as asyncio's policy makes it."""
    ex = current_execution()
    if ex is None or ex.current is None:
        return _real_get_event_loop(policy)
    loops = _CURRENT.setdefault(ex, {})
    tid = ex.current.tid
    if tid not in loops and threading.current_thread() is threading.main_thread():
        loops[tid] = policy.new_event_loop()
    loop = loops.get(tid)
    if loop is None:
        raise RuntimeError(f"There is no current event loop in thread "
                           f"{threading.current_thread().name!r}.")
    return loop


_real_warn_unawaited = warnings._warn_unawaited_coroutine  # type: ignore[attr-defined]


def _warn_unawaited_coroutine(coro: Any) -> None:
    """A coroutine never awaited, inside a run: the run's failure (AIO-6); outside,
    Python's RuntimeWarning."""
    ex = current_execution()
    if ex is None or ex.current is None:
        _real_warn_unawaited(coro)
        return
    if ex.killing:
        return  # made by a run cut short: not the program's to report
    name = getattr(coro, "__qualname__", None) or repr(coro)
    message = f"coroutine {name!r} was never awaited"
    if _COLLECTING:  # an object in a cycle, maybe an earlier run's: not this run's failure
        ex.warn(message + " (found by the garbage collector, which may have collected an "
                "earlier run's coroutine: not counted as this run's failure)")
        return
    fail(ex, loop_failure(message, RuntimeWarning(message), ex.current.name))


_COLLECTING: list[bool] = []


def _collecting(phase: str, info: Any) -> None:
    if phase == "start":
        _COLLECTING.append(True)
    elif _COLLECTING:
        _COLLECTING.pop()


gc.callbacks.append(_collecting)


def _refused(loop: Any, made_by: str) -> RuntimeError:
    """The error for a loop that is not coordkit's, run inside a run (AIO-8)."""
    return RuntimeError(
        f"{loop!r} is not coordkit's event loop, and cannot run inside a controlled run "
        f"(it was made {made_by}): make the loop inside the run with asyncio.run, "
        "asyncio.Runner or asyncio.new_event_loop, with neither a loop_factory nor an "
        "event-loop policy of the program's")


_real_module_new_event_loop = events.new_event_loop


def _module_new_event_loop() -> Any:
    """``asyncio.new_event_loop()``: inside a run, a loop that the program's own event-loop
    policy makes (uvloop's, any that does not derive from asyncio's) is refused, and
    closed, before anything runs on it (AIO-8)."""
    loop = _real_module_new_event_loop()
    if current_execution() is not None and not isinstance(loop, ControlledLoop):
        loop.close()
        raise _refused(loop, "by an event-loop policy of the program's")
    return loop


_real_lazy_init = getattr(getattr(runners, "Runner", None), "_lazy_init", None)


def _lazy_init(runner: Any) -> None:
    """``asyncio.Runner`` (3.11+; ``asyncio.run`` from 3.12): inside a run, a loop its
    ``loop_factory`` makes that is not coordkit's is refused and closed, and the runner
    closed with it, before anything runs on it (AIO-8)."""
    _real_lazy_init(runner)
    loop = runner._loop
    if current_execution() is not None and not isinstance(loop, ControlledLoop):
        runner._loop = None
        runner._state = runners._State.CLOSED
        loop.close()
        raise _refused(loop, "by a loop_factory of the program's")


_real_run_forever = base_events.BaseEventLoop.run_forever


def _run_forever(loop: Any) -> None:
    """A loop that is not coordkit's, run inside a run, would block in a real ``select()``
    outside the scheduler: refused at once, naming it (AIO-8)."""
    if current_execution() is not None and not isinstance(loop, ControlledLoop):
        raise _refused(loop, "before the run")
    _real_run_forever(loop)


_CALLBACK_FAILED = "exception calling callback for %r"


class _FuturesLogger:
    """``concurrent.futures``' logger inside a session: a done callback's exception, which
    a ``Future`` only logs ("exception calling callback for ..."), raised in a run's
    thread, is the run's failure, as AIO-6 makes a loop callback's (AIO-36).  Everything
    else goes to the real logger."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def exception(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        ex = current_execution()
        exc = sys.exc_info()[1]
        if (msg != _CALLBACK_FAILED or exc is None or ex is None or ex.current is None
                or ex.killing or ex.finished):
            self._real.exception(msg, *args, **kwargs)
            return
        future = args[0] if args else None
        fail(ex, loop_failure(f"exception calling callback for a {type(future).__name__}",
                              exc, ex.current.name, f"future: {future!r}"))


PATCHES: list[tuple[Any, str, Any]] = [
    (_Policy, "new_event_loop", _new_event_loop),
    (_Policy, "set_event_loop", _set_event_loop),
    (_Policy, "get_event_loop", _get_event_loop),
    (base_events.BaseEventLoop, "run_forever", _run_forever),
    (events, "new_event_loop", _module_new_event_loop),
    *([(runners.Runner, "_lazy_init", _lazy_init)] if _real_lazy_init is not None else []),
    # The interpreter looks it up at each coroutine it finalizes unawaited.
    (warnings, "_warn_unawaited_coroutine", _warn_unawaited_coroutine),
    # Read at each call (``LOGGER.exception``, ``_base.LOGGER``) by concurrent.futures.
    (_futures, "LOGGER", _FuturesLogger(_futures.LOGGER)),
]
