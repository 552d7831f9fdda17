"""coordkit's event loop: a ``BaseEventLoop`` whose iterations are scheduling points.

It is stock asyncio (its handles, tasks, futures, timers and executors are
``BaseEventLoop``'s) with three things replaced:

* ``time()`` is the run's virtual clock, the one ``time.monotonic()`` reads (AIO-3);
* ``_run_once`` never calls ``select()``: an iteration with ready handles is a
  scheduling point of the loop's thread; one without parks the thread (a controlled
  wait the scheduler sees) until the first timer is due or another thread hands the
  loop a callback (AIO-3, AIO-4);
* ``call_soon_threadsafe`` is a scheduling point of the calling thread, and wakes the
  parked loop through the runtime instead of a self-pipe (AIO-4).

The C running-loop slot is per OS thread, and every controlled thread shares one:
``RunningLoops`` gives each controlled thread its own (AIO-2).
"""

from __future__ import annotations

import asyncio
import heapq
from asyncio import base_events, events
from typing import Any

import greenlet

from coordkit.engine.points import ANY, WRITE
from coordkit.engine.runtime import Execution, current_execution
from coordkit.engine.task import MONOTONIC_ORIGIN, WaitQueue

__all__ = ["ControlledLoop", "RunningLoops"]

_set_running_loop = events._set_running_loop


class RunningLoops:
    """Which loop each controlled thread is running (AIO-2).

    ``asyncio`` keeps the running loop in the OS thread's state, which every controlled
    thread of a run shares: a greenlet trace hook puts the switched-to thread's loop (or
    None) there at every switch, while any loop of coordkit's runs on this OS thread."""

    running = 0
    _previous: Any = None

    @classmethod
    def enter(cls, loop: ControlledLoop) -> greenlet.greenlet:
        glet = greenlet.getcurrent()
        if cls.running == 0:
            cls._previous = greenlet.settrace(cls._switched)
        cls.running += 1
        glet._ck_loop = loop  # type: ignore[attr-defined]
        return glet

    @classmethod
    def leave(cls, glet: greenlet.greenlet) -> None:
        glet._ck_loop = None  # type: ignore[attr-defined]
        cls.running -= 1
        if cls.running == 0:
            greenlet.settrace(cls._previous)
            cls._previous = None

    @staticmethod
    def _switched(event: str, args: Any) -> None:
        if event == "switch" or event == "throw":
            _set_running_loop(getattr(args[1], "_ck_loop", None))


class ControlledLoop(asyncio.BaseEventLoop):
    """The event loop every loop a run's program makes is (AIO-2): stock asyncio on the
    run's clock and scheduler (see the module docstring)."""

    def __init__(self, ex: Execution) -> None:
        super().__init__()
        self._ex = ex
        self._ck_label = ex.names.label("EventLoop")
        self._arrivals = WaitQueue()  # the loop's thread, parked in its select

    def __repr__(self) -> str:
        return (f"<coordkit {self._ck_label} running={self.is_running()} "
                f"closed={self.is_closed()} debug={self.get_debug()}>")

    def time(self) -> float:
        """The run's virtual ``time.monotonic()`` (AIO-3)."""
        return self._ex.clock.monotonic()

    def run_forever(self) -> None:
        glet = RunningLoops.enter(self)
        try:
            super().run_forever()
        finally:
            RunningLoops.leave(glet)

    def call_soon_threadsafe(self, callback: Any, *args: Any, context: Any = None) -> Any:
        """A scheduling point of the calling thread (the arrival may come before or after
        any step of the loop's thread), then the handle, and a wake-up of the loop (AIO-4)."""
        ex = self._ex
        if current_execution() is ex and ex.current is not None:
            ex.point("call_soon_threadsafe", self._ck_label)
        return super().call_soon_threadsafe(callback, *args, context=context)

    def _write_to_self(self) -> None:
        if current_execution() is self._ex and self._arrivals:
            self._arrivals.unpark_all(self._ex)

    def _process_events(self, event_list: Any) -> None:
        """No selector, no events (real I/O is not modelled)."""

    def _run_once(self) -> None:
        """One iteration: a scheduling point (or a controlled wait when nothing is ready),
        the timers that are due moved to the ready queue, then exactly the handles ready
        now run, in FIFO order (AIO-3, AIO-4)."""
        self._drop_cancelled_timers()
        ex = self._ex
        if self._ready or self._stopping:
            ex.point("loop", self._ck_label)
        else:
            self._select()
        self._move_due_timers()
        if ex.recorder is not None:
            # The handles run code whose effects are not known: dependent on everything.
            ex.recorder.effect(ex.current, ANY, "loop", WRITE)
        ready = self._ready
        for _ in range(len(ready)):
            handle = ready.popleft()
            if not handle._cancelled:
                handle._run()

    def _select(self) -> None:
        """Nothing is ready: a scheduling point, then park until the first timer is due
        (virtual time passes only as the runtime's autojump lets it) or an arrival."""
        ex = self._ex
        ex.point("select", self._ck_label)
        if self._ready or self._stopping:
            return  # another thread's call_soon_threadsafe came first
        deadline = None
        if self._scheduled:
            deadline = self._scheduled[0]._when - MONOTONIC_ORIGIN
            if deadline <= ex.clock.now:
                return
        what = f"{self._ck_label} select" + ("" if deadline is None else f" (next timer at "
                                              f"t={deadline:g})")
        self._arrivals.park(ex, what, deadline)

    def _move_due_timers(self) -> None:
        end = self.time() + self._clock_resolution
        scheduled = self._scheduled
        while scheduled and scheduled[0]._when < end:
            handle = heapq.heappop(scheduled)
            handle._scheduled = False
            self._ready.append(handle)

    def _drop_cancelled_timers(self) -> None:
        """What ``BaseEventLoop._run_once`` does first: forget cancelled timers."""
        scheduled = self._scheduled
        count = len(scheduled)
        if (count > base_events._MIN_SCHEDULED_TIMER_HANDLES and self._timer_cancelled_count / count
                > base_events._MIN_CANCELLED_TIMER_HANDLES_FRACTION):
            kept = []
            for handle in scheduled:
                if handle._cancelled:
                    handle._scheduled = False
                else:
                    kept.append(handle)
            heapq.heapify(kept)
            self._scheduled = kept
            self._timer_cancelled_count = 0
            return
        while scheduled and scheduled[0]._cancelled:
            self._timer_cancelled_count -= 1
            heapq.heappop(scheduled)._scheduled = False
