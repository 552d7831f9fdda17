"""Adversarial mode (AIO-44): any ready callback may run next, not only the first.

Stock asyncio runs the handles ready at an iteration in FIFO order, and coordkit's loop
keeps that order by default (AIO-4, AIO-5).  With ``explore(fn, adversarial=True)``,
before each of an iteration's handles while two or more of them are left, the loop
offers its reorder actor (a controlled daemon thread of the run's, "EventLoop#1
reorder") and makes a scheduling point; each step of the actor moves the next handle
behind the others left, so the scheduler, by how long it lets the actor run, picks which
of them runs next.  A failure that needed such a step says it depends on an order stock
asyncio does not produce.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordkit.engine.points import ANY, WRITE
from coordkit.engine.runtime import Execution
from coordkit.engine.task import Task, WaitQueue

__all__ = ["NOT_STOCK", "Reorder"]

NOT_STOCK = "found only in adversarial mode: stock asyncio runs ready callbacks in FIFO order"


class Reorder:
    """A loop's reorder actor and its offers (AIO-44)."""

    def __init__(self, loop: Any, ex: Execution, describe: Callable[[Any], str]) -> None:
        self._loop = loop
        self._ex = ex
        self._describe = describe
        self._label = f"{loop._ck_label} reorder"
        self._thread: Task | None = None
        self._idle = WaitQueue()
        self._pick = 0  # how many picks the loop made; an offer is good for one
        self._offered = -1
        self._window = 0  # the handles left of this iteration's, at the front of the queue
        self._moved = 0

    def before(self, left: int) -> None:
        """Before the loop runs the next of its iteration's ``left`` handles: with two or
        more left, offer the actor and make a scheduling point of the loop's thread."""
        if left < 2:
            return
        ex = self._ex
        self._pick += 1
        self._offered, self._window, self._moved = self._pick, left, 0
        ahead = self._describe(self._loop._ready[0])
        if self._thread is None:
            body = self._reorder
            self._thread = ex.spawn(body, self._label, daemon=True)
        else:
            self._idle.unpark_all(ex)
        ex.point("callback", self._loop._ck_label)
        self._offered = -1
        if ex.recorder is not None:  # the handle runs code whose effects are not known
            ex.recorder.effect(ex.current, ANY, "loop", WRITE)
        if self._moved:
            ex.deviations.append(
                f"{self._describe(self._loop._ready[0])} ran before {ahead}, queued ahead of "
                f"it ({NOT_STOCK})")

    def _reorder(self) -> None:
        """The actor's life: chosen while its offer stands, it moves the next handle
        behind the others left (a scheduling point after each move); then it waits for
        the next offer.  Chosen later, it does nothing."""
        ex = self._ex
        while True:
            while self._offered == self._pick and self._moved < self._window - 1:
                if ex.recorder is not None:
                    ex.recorder.effect(ex.current, ANY, "reorder", WRITE)
                ready = self._loop._ready
                ready.insert(self._window - 1, ready.popleft())
                self._moved += 1
                if ex.recorder is not None and ex.recorder.rows:
                    ex.note("puts next:", self._describe(ready[0]), in_step=True)
                ex.point("reorder", self._loop._ck_label)
            self._idle.park(ex, f"{self._label}: not offered")

    _reorder._ck_foreign = True  # type: ignore[attr-defined]  # a thread with no Thread
    _reorder._ck_helper = True  # type: ignore[attr-defined]  # coordkit's own thread
