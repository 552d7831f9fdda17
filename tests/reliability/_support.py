"""What every reliability test checks after the call it made: nothing left patched, no
thread left running, and the next exploration works."""

from __future__ import annotations

import _thread
import logging
import os
import queue
import signal
import sys
import threading
import time
from typing import Any

import coordkit
from coordkit.engine.patch import StdlibPatch

# Every name a run patches (and what else a run touches), read through its module, so
# a snapshot compares the objects the names hold.
_NAMES = {
    threading: ("Lock", "RLock", "Condition", "Event", "Semaphore", "BoundedSemaphore", "Barrier",
                "current_thread", "get_ident", "get_native_id", "local", "enumerate",
                "active_count", "excepthook", "_counter"),
    _thread: ("start_new_thread", "allocate_lock", "LockType", "RLock", "get_ident", "_count"),
    queue: ("Queue", "SimpleQueue"),
    time: ("sleep", "monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns",
           "time_ns"),
    os: ("fork",),
    sys: ("unraisablehook", "excepthook"),
}


def stdlib_snapshot() -> dict[str, Any]:
    """The objects the stdlib names hold now, the signal handlers, the trace hooks."""
    snap = {f"{mod.__name__}.{name}": getattr(mod, name)
            for mod, names in _NAMES.items() for name in names if hasattr(mod, name)}
    snap["signal.SIGINT"] = signal.getsignal(signal.SIGINT)
    snap["signal.SIGTERM"] = signal.getsignal(signal.SIGTERM)
    snap["sys.gettrace"] = sys.gettrace()
    snap["StdlibPatch._active"] = StdlibPatch._active
    snap["coordkit logger disabled"] = logging.getLogger("coordkit").disabled
    return snap


def changed(before: dict[str, Any]) -> list[str]:
    """The names whose object differs from ``before``."""
    after = stdlib_snapshot()
    return [name for name in before if after.get(name) is not before[name]]


def tiny() -> None:
    """A known-good program: two threads and a lock."""
    lock = threading.Lock()
    box = [0]

    def bump() -> None:
        with lock:
            box[0] += 1

    t = threading.Thread(target=bump)
    t.start()
    bump()
    t.join()
    assert box[0] == 2


def next_explore_works() -> str | None:
    """None when a known-good exploration passes as it should; else what went wrong."""
    try:
        result = coordkit.explore(tiny, max_schedules=3, seed=1)
    except BaseException as exc:  # anything at all is the breakage being looked for
        return f"the next explore raised {type(exc).__name__}: {exc}"
    if not result.ok or result.schedules_run != 3:
        return f"the next explore gave {result}"
    return None


def threads_left(before: set[int], wait: float = 2.0) -> list[str]:
    """Threads alive now that were not in ``before`` (a worker that is ending is given
    ``wait`` seconds to go)."""
    deadline = time.monotonic() + wait
    while True:
        extra = [t for t in threading.enumerate() if t.ident not in before]
        if not extra or time.monotonic() > deadline:
            return [t.name for t in extra]
        extra[0].join(timeout=0.05)


def broken_after(before: dict[str, Any], idents: set[int]) -> list[str]:
    """Everything that is not as it was (empty when all is well)."""
    problems = [f"{name} not restored" for name in changed(before)]
    problems += [f"thread left: {name}" for name in threads_left(idents)]
    failure = next_explore_works()
    if failure is not None:
        problems.append(failure)
    return problems


def thread_idents() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.ident is not None}
