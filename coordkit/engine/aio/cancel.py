"""Cancellation injected at a task's suspension points (AIO-40, AIO-41): the loop's side.

With ``explore(fn, cancel="tasks")`` every loop of the run offers, at each of its
iterations, to cancel each task that stands suspended at an ``await`` it has not been
offered at yet, as an outside timeout or a shutdown would.  Each offer is a controlled
daemon thread of the run's, one per task (``Task-2 canceller``), made runnable for that
iteration only with the point ``cancel <what>``: the scheduler may run it before the loop
goes on (the task is cancelled) or not.  Chosen, it asks the loop to cancel the task; the
loop's thread calls ``task.cancel()`` right after its scheduling point, before the ready
handles run.  A choice of the scheduler's like any other, so replay strings, shrinking
(to the fewest cancellations) and the recorded table see it.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from typing import Any

from coordkit.engine.aio.chain import await_chain
from coordkit.engine.frames import is_machinery, place
from coordkit.engine.runtime import Execution
from coordkit.engine.task import Task, WaitQueue, new_point

__all__ = ["CANCEL", "Canceller", "suspension"]

CANCEL = "cancel"  # the point at which a task's canceller is offered

_ASYNCIO_DIR = os.path.dirname(asyncio.__file__) + os.sep


def suspension(task: asyncio.Task[Any]) -> str | None:
    """Where ``task`` stands suspended at an ``await`` (``client.py:41 in fetch``, the
    innermost frame of the program's code), or None: it is done, not yet started, or not
    a coroutine's task."""
    coro = task.get_coro()
    if task.done() or not inspect.iscoroutine(coro):
        return None
    if inspect.getcoroutinestate(coro) != inspect.CORO_SUSPENDED:
        return None
    chain = [link for link in await_chain(task)
             if not link[1].startswith(_ASYNCIO_DIR) and not is_machinery(link[1])]
    if not chain:
        return None
    qualname, filename, line = chain[-1]
    return place(filename, line, qualname.rsplit(".", 1)[-1])


def _state(task: asyncio.Task[Any]) -> tuple[str, Any]:
    """How a suspended task waits: on a future not yet done, or woken (what it awaited is
    done, or it yielded) and about to resume."""
    waiter = getattr(task, "_fut_waiter", None)
    if waiter is not None and not waiter.done():
        return "while it waited", waiter
    return "after what it awaited was done, before it resumed", waiter


class _Offer:
    """One task's canceller: its thread, and the iteration it is offered at."""

    __slots__ = ("idle", "iteration", "thread", "what")

    def __init__(self) -> None:
        self.thread: Task | None = None
        self.idle = WaitQueue()
        self.iteration = -1
        self.what = ""


class Canceller:
    """A loop's cancellation offers (AIO-40): ``offer`` before the loop's scheduling
    point, ``deliver`` after it, on the loop's thread."""

    def __init__(self, loop: Any, ex: Execution) -> None:
        self._loop = loop
        self._ex = ex
        self._tasks: list[asyncio.Task[Any]] = []  # in creation order: the same in every run
        self._offers: dict[asyncio.Task[Any], _Offer] = {}
        self._offered_at: dict[asyncio.Task[Any], tuple[str, str, int]] = {}
        self._chosen: list[tuple[asyncio.Task[Any], str]] = []

    def made(self, task: asyncio.Task[Any]) -> None:
        self._tasks.append(task)

    def offer(self) -> None:
        """Offer each task suspended at an await it was not offered at (AIO-40)."""
        self._tasks = [task for task in self._tasks if not task.done()]
        for task in self._tasks:
            where = suspension(task)
            if where is None:
                continue
            state, waiter = _state(task)
            key = (where, state, id(waiter))
            if self._offered_at.get(task) == key:
                continue
            self._offered_at[task] = key
            coro = task.get_coro()
            what = (f"{task.get_name()} {getattr(coro, '__name__', '?')!r} at {where}, "
                    f"{state}")
            self._offer(task, what)

    def _offer(self, task: asyncio.Task[Any], what: str) -> None:
        ex = self._ex
        offer = self._offers.get(task)
        if offer is None:
            offer = self._offers[task] = _Offer()
            def body() -> None:
                self._cancel(task, offer)

            body._ck_foreign = True  # type: ignore[attr-defined]  # a thread with no Thread
            body._ck_helper = True  # type: ignore[attr-defined]  # coordkit's own thread
            offer.thread = ex.spawn(body, f"{task.get_name()} canceller", daemon=True)
        offer.iteration = self._loop._iteration
        offer.what = what
        thread = offer.thread
        assert thread is not None
        thread.pt = new_point((thread.tid, CANCEL, what, False, ex.steps))
        offer.idle.unpark_all(ex)

    def _cancel(self, task: asyncio.Task[Any], offer: _Offer) -> None:
        """The canceller's life: chosen at the iteration that offered it, it asks the loop
        to cancel the task; chosen later (the loop went on), it does nothing."""
        loop = self._loop
        while True:
            if offer.iteration == loop._iteration and not loop.is_closed():
                self._chosen.append((task, offer.what))
            offer.idle.park(self._ex, f"{task.get_name()} canceller: not offered")

    def deliver(self) -> None:
        """On the loop's thread: cancel the tasks whose cancellers were chosen, as an
        outside ``task.cancel()`` would; the run's deviations say so (AIO-42)."""
        chosen, self._chosen = self._chosen, []
        ex = self._ex
        for task, what in chosen:
            if task.done():
                continue
            ex.deviations.append(f"cancelled {what}")
            if ex.recorder is not None and ex.recorder.rows:
                ex.note(f"cancels {what}:", task.get_name(), in_step=True)
            task.cancel()
