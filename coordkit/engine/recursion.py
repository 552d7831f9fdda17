"""Recursion room: a controlled thread may recurse as deep as a real one (SCHED-40).

A real thread's code starts at the bottom of its own stack.  A controlled thread is a
greenlet, which counts its depth on from the greenlet that first switched to it: the
runtime's driver, below which lie the engine's frames and whatever called the run.  So
while a run is active, the interpreter's recursion limit is raised by that difference,
and put back afterwards (unless the program set a limit of its own meanwhile).  Runs in
several OS threads at once share one raise: the first sets it, the last takes it back.
"""

from __future__ import annotations

import _thread
import sys
from types import FrameType

__all__ = ["room_for_threads"]

# What a controlled thread's code has below it beyond the frame passed in, less what a
# real thread's has: the driver's loop (Execution._drive), the greenlet's start, and the
# runtime's frames of a thread (Execution._task_main, the patched Thread._ck_run), against
# threading's _bootstrap, _bootstrap_inner and run.  Checked, on every supported Python,
# by a test that recurses to within a few frames of a real thread's room.  From 3.12 a
# call into C (the greenlet's switch and start) counts against the limit as well.
_BELOW = 2 if sys.version_info < (3, 12) else 5

_lock = _thread.allocate_lock()  # made at import: a real lock, never a controlled one
_users = 0
_restore: tuple[int, int] | None = None  # (the limit to put back, the limit set)


def _depth(frame: FrameType | None) -> int:
    n = 0
    while frame is not None:
        n += 1
        frame = frame.f_back
    return n


class room_for_threads:  # noqa: N801 (used as a function: ``with room_for_threads(frame):``)
    """Raise the recursion limit by what ``driver``, the frame that begins each thread's
    first step, and the runtime's frames of a thread cost beyond a real thread's.  Only the
    outermost entry raises it, so only that one walks the stack: a nested entry (a run's
    ``end`` inside its ``run``) costs a lock and a count."""

    __slots__ = ("_driver",)

    def __init__(self, driver: FrameType) -> None:
        self._driver = driver

    def __enter__(self) -> None:
        global _users, _restore
        with _lock:
            if _users == 0:
                extra = max(0, _depth(self._driver) + _BELOW)
                limit = sys.getrecursionlimit()
                _restore = (limit, limit + extra)
                sys.setrecursionlimit(limit + extra)
            _users += 1

    def __exit__(self, *exc: object) -> None:
        global _users, _restore
        with _lock:
            _users -= 1
            if _users == 0 and _restore is not None:
                if sys.getrecursionlimit() == _restore[1]:
                    sys.setrecursionlimit(_restore[0])
                _restore = None
