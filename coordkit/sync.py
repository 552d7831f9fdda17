"""The seam between coordkit's primitives and the controlled scheduler.

Everything in coordkit that locks, waits, sleeps or reads the clock goes through
this module. Outside a controlled run each name gives the real stdlib object;
inside one (``coordkit.explore`` / ``coordkit.replay``) it gives the scheduler's
shim, so that the same code runs one thread at a time, parks instead of
blocking, and sees virtual time.

``Thread`` is the stdlib class itself: a controlled run takes over ``start``,
``join`` and ``is_alive`` of every ``threading.Thread`` (subclasses included)
for its duration, so no wrapper class is needed.
"""

from __future__ import annotations

import threading
import time as _time
from collections.abc import Callable
from typing import Any

__all__ = [
    "Barrier",
    "BoundedSemaphore",
    "Condition",
    "Event",
    "Lock",
    "RLock",
    "Semaphore",
    "Thread",
    "current_thread",
    "monotonic",
    "note",
    "perf_counter",
    "sleep",
    "time",
]

# The real objects, captured before any controlled run can patch the stdlib.
real_Lock = threading.Lock
real_RLock = threading.RLock
real_Condition = threading.Condition
real_Event = threading.Event
real_Semaphore = threading.Semaphore
real_BoundedSemaphore = threading.BoundedSemaphore
real_Barrier = threading.Barrier
real_current_thread = threading.current_thread
real_sleep = _time.sleep
real_monotonic = _time.monotonic
real_time = _time.time
real_perf_counter = _time.perf_counter

Thread = threading.Thread

# Set by coordkit.engine.runtime while a controlled run is active: a zero-argument
# callable returning the running Execution when the caller is one of its
# threads, else None.  A plain function keeps this module free of imports.
controller: Callable[[], Any] = lambda: None  # noqa: E731


def Lock() -> Any:  # noqa: N802 - stdlib-shaped factory
    """A mutual-exclusion lock (``threading.Lock`` outside a controlled run)."""
    ex = controller()
    return real_Lock() if ex is None else ex.shims.Lock()


def RLock() -> Any:  # noqa: N802
    """A reentrant lock (``threading.RLock`` outside a controlled run)."""
    ex = controller()
    return real_RLock() if ex is None else ex.shims.RLock()


def Condition(lock: Any = None) -> Any:  # noqa: N802
    """A condition variable over ``lock`` (a new RLock when omitted)."""
    ex = controller()
    return real_Condition(lock) if ex is None else ex.shims.Condition(lock)


def Event() -> Any:  # noqa: N802
    """A settable flag that threads can wait on."""
    ex = controller()
    return real_Event() if ex is None else ex.shims.Event()


def Semaphore(value: int = 1) -> Any:  # noqa: N802
    """A counting semaphore."""
    ex = controller()
    return real_Semaphore(value) if ex is None else ex.shims.Semaphore(value)


def BoundedSemaphore(value: int = 1) -> Any:  # noqa: N802
    """A semaphore that refuses to be released above its initial value."""
    ex = controller()
    return real_BoundedSemaphore(value) if ex is None else ex.shims.BoundedSemaphore(value)


def Barrier(parties: int, action: Callable[[], Any] | None = None, timeout: float | None = None) -> Any:  # noqa: N802
    """A barrier for ``parties`` threads."""
    ex = controller()
    if ex is None:
        return real_Barrier(parties, action, timeout)
    return ex.shims.Barrier(parties, action, timeout)


def current_thread() -> threading.Thread:
    """The ``Thread`` object of the caller."""
    ex = controller()
    return real_current_thread() if ex is None else ex.current_thread_object()


def shown(obj: Any) -> None:
    """``obj`` (a queue, a Coordinator) describes itself with ``_ck_state()``: a recording
    run shows its state at every step from now on; costs nothing outside one."""
    ex = controller()
    if ex is not None and ex.record:
        ex.show(obj)


def note(operation: str, target: Any) -> None:
    """Mark the start of a high-level operation (``enqueue`` on a queue, ``join`` on a
    coordinator) so that recorded runs show it; costs nothing outside a recording run."""
    ex = controller()
    if ex is not None and ex.record:
        ex.note(operation, target)


def sleep(seconds: float) -> None:
    """Sleep; inside a controlled run this costs virtual time only."""
    ex = controller()
    if ex is None:
        real_sleep(seconds)
    else:
        ex.sleep(seconds)


def monotonic() -> float:
    """A monotonic clock in seconds; virtual inside a controlled run."""
    ex = controller()
    return real_monotonic() if ex is None else ex.clock.monotonic()


def time() -> float:
    """Wall-clock seconds since the epoch; virtual inside a controlled run."""
    ex = controller()
    return real_time() if ex is None else ex.clock.time()


def perf_counter() -> float:
    """A high-resolution counter; virtual inside a controlled run."""
    ex = controller()
    return real_perf_counter() if ex is None else ex.clock.monotonic()
