"""Ports of real, fixed races whose racing accesses are made inside the stdlib's Python
code (RACE-12): an event loop's flags set by one thread through the loop's methods and
read by the thread running it, a log handler's stream swapped under an ``emit``, a
scheduler's queue, a ``concurrent.futures`` Future's state.

Same format as ``programs.py``: each keeps the upstream mechanism in a few lines; the
citation names the upstream issue or pull request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import logging
import sched
import threading
import time

from tests.realbugs.programs import RealBug, _bug, run_threads


def loop_stop_from_thread(fixed: bool) -> None:
    """jupyterhub/jupyterhub#1525: the loop running in a thread is stopped with
    ``loop.stop()`` from another one; ``stop`` only sets the loop's ``_stopping``, and a
    loop already waiting for work never wakes to see it (a hang at ``join``); fixed by
    handing the stop to the loop (``add_callback``, i.e. ``call_soon_threadsafe``)."""
    loop = asyncio.new_event_loop()
    done = []
    serving = threading.Thread(target=loop.run_forever)
    serving.start()
    loop.call_soon_threadsafe(done.append, "request")
    if fixed:
        loop.call_soon_threadsafe(loop.stop)
    else:
        loop.stop()
    serving.join()
    loop.close()


def call_on_closed_loop(fixed: bool) -> None:
    """zigpy/bellows#727: the loop's thread closes its loop and then clears
    ``self.loop``; ``force_stop`` in another thread checks ``self.loop is None`` and
    calls ``call_soon_threadsafe`` (to cancel the loop's tasks) on a loop closed in
    between (RuntimeError: Event loop is closed); fixed by taking the loop once, checking
    ``is_closed()`` and tolerating a close that comes after the check."""
    cancelled: list = []

    class LoopThread:
        def __init__(self) -> None:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.new_event_loop()

        def run(self) -> None:
            loop = self.loop
            assert loop is not None
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()
            self.loop = None

        def force_stop(self) -> None:
            if not fixed:
                if self.loop is not None:
                    self.loop.call_soon_threadsafe(cancelled.append, "tasks")
                return
            loop = self.loop
            if loop is None or loop.is_closed():
                return
            try:
                loop.call_soon_threadsafe(cancelled.append, "tasks")
            except RuntimeError:
                pass  # (closed after the check: the thread is on its way out)

    worker = LoopThread()
    run_threads(worker.run, worker.force_stop)


def rotate_under_emit(fixed: bool) -> None:
    """Open-Shu/shu#60: a handler's rotation closes and replaces ``self.stream`` without
    the handler's lock, while ``StreamHandler.emit`` in another thread writes to the
    stream it read (ValueError: I/O operation on closed file); fixed by rotating under
    ``self.acquire()``."""
    errors: list = []

    class RotatingHandler(logging.StreamHandler):
        def rotate(self) -> None:
            if fixed:
                self.acquire()
            try:
                old, self.stream = self.stream, io.StringIO()
                old.close()
            finally:
                if fixed:
                    self.release()

        def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's)
            errors.append(record.getMessage())

    handler = RotatingHandler(io.StringIO())
    record = logging.LogRecord("app", logging.INFO, __file__, 1, "served", None, None)
    try:
        run_threads(lambda: handler.handle(record), handler.rotate)
    finally:
        _forget(handler)
    assert not errors, f"lost to a closed stream: {errors}"


def _forget(handler: logging.Handler) -> None:
    """Out of logging's list for its exit-time flush: a report of the run may keep the
    handler alive, and its lock is the run's, unusable after it."""
    logging._handlerList[:] = [ref for ref in logging._handlerList  # type: ignore[attr-defined]
                               if ref() is not handler]


def scheduler_cancel_run(fixed: bool) -> None:
    """phluentmed/event-scheduler#12: ``cancel`` of an event that the scheduler's thread
    has run meanwhile: the check that the event is still queued and the removal are two
    steps (ValueError from the queue's ``remove``); fixed by tolerating an event that is
    gone.  Here on ``sched.scheduler``, whose ``run`` pops under the scheduler's lock."""
    scheduler = sched.scheduler(time.monotonic, time.sleep)
    ran = []
    event = scheduler.enter(0, 1, ran.append, ("tick",))

    def cancel() -> None:
        if fixed:
            try:
                scheduler.cancel(event)
            except ValueError:
                pass  # (it ran meanwhile)
        elif event in scheduler.queue:
            scheduler.cancel(event)

    run_threads(lambda: scheduler.run(blocking=False), cancel)


def future_set_after_cancel(fixed: bool) -> None:
    """vllm-project/vllm-omni#5983: the result pump checks ``not fut.done()`` and then
    calls ``fut.set_result``, while the consumer cancels the future in between
    (concurrent.futures.InvalidStateError, which kills the pump); fixed by making the
    set tolerate a future that ended in the gap."""
    future: concurrent.futures.Future = concurrent.futures.Future()

    def pump() -> None:
        if fixed:
            try:
                future.set_result("output")
            except concurrent.futures.InvalidStateError:
                pass  # (cancelled meanwhile: nobody waits for it)
        elif not future.done():
            future.set_result("output")

    run_threads(pump, future.cancel)


STDLIB_BUGS: list[RealBug] = [
    _bug("loop_stop_from_thread", "jupyterhub/jupyterhub#1525", "loop flag",
         loop_stop_from_thread),
    _bug("call_on_closed_loop", "zigpy/bellows#727", "loop flag", call_on_closed_loop,
         lock_free_fix=True),
    _bug("rotate_under_emit", "Open-Shu/shu#60", "handler state", rotate_under_emit),
    _bug("scheduler_cancel_run", "phluentmed/event-scheduler#12", "check-then-act",
         scheduler_cancel_run),
    _bug("future_set_after_cancel", "vllm-project/vllm-omni#5983", "check-then-act",
         future_set_after_cancel),
]
