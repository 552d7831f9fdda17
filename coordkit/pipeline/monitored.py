"""The monitored run: start the queue runners, stop cleanly at the end of the input
(PIPE-5, PIPE-6, MON-n)."""

from __future__ import annotations

import contextlib
import math
import numbers
from types import TracebackType
from typing import Any

from coordkit.coordinator import Coordinator
from coordkit.errors import OutOfRangeError
from coordkit.pipeline._ops import logger
from coordkit.queue_runner import (
    QUEUE_RUNNERS,
    get_queue_runner_registry,
)

# -- PIPE-5, PIPE-6: the monitored run ------------------------------------------------------

#: Exceptions of the body that mean "the input ran out": a clean stop (MON-4).
END_OF_INPUT: tuple[type[BaseException], ...] = (OutOfRangeError, StopIteration)


class MonitoredRun:
    """Start the registered queue runners under a Coordinator; stop and join on exit.

    The coordkit counterpart of ``MonitoredSession`` and
    ``Supervisor.managed_session`` (MON-1..8)::

        with MonitoredRun(grace_period_secs=120) as run:
            while not run.should_stop():
                train_step(get_batch())

    * Entering makes a fresh ``Coordinator()`` (OutOfRangeError counts as a
      clean stop) and, if ``collection`` of the current runner registry is not
      empty, starts its runners: daemon threads, registered with the
      coordinator (MON-2).
    * ``should_stop()`` asks the coordinator (MON-3).
    * An ``OutOfRangeError`` or ``StopIteration`` leaving the body is the end
      of the input: a clean stop, not re-raised (MON-4).
    * Leaving requests a stop and joins the threads with ``grace_period_secs``
      (MON-5), then raises the first real exception: one a thread reported to
      the coordinator before the body failed, else the body's own, even after
      an earlier clean stop; threads still alive after the grace period raise
      RuntimeError unless ``ignore_live_threads`` (MON-6, MON-7).
    * A KeyboardInterrupt or SystemExit leaving the body requests the stop and
      goes on at once, without waiting for the threads (MON-8).

    Args:
        grace_period_secs: how long the threads get to finish after the stop
            request; None waits for ever. Default 120, as in TensorFlow.
        ignore_live_threads: only log the threads that outlive the grace
            period instead of raising RuntimeError (MonitoredSession's choice).
        collection: the registry collection whose runners are started.

    Raises:
        TypeError / ValueError: a bad argument, naming it and its value.
    """

    def __init__(
        self,
        grace_period_secs: float | None = 120,
        ignore_live_threads: bool = False,
        collection: str = QUEUE_RUNNERS,
    ) -> None:
        if grace_period_secs is not None:
            if isinstance(grace_period_secs, bool) or not isinstance(grace_period_secs, numbers.Real):
                raise TypeError(
                    f"MonitoredRun(grace_period_secs) must be a number of seconds or None; "
                    f"got {grace_period_secs!r}"
                )
            if math.isnan(grace_period_secs) or grace_period_secs < 0:
                raise ValueError(
                    f"MonitoredRun(grace_period_secs) must be >= 0 or None; got {grace_period_secs!r}"
                )
        if not isinstance(ignore_live_threads, bool):
            raise TypeError(f"MonitoredRun(ignore_live_threads) must be a bool; got {ignore_live_threads!r}")
        if not isinstance(collection, str):
            raise TypeError(f"MonitoredRun(collection) must be a string; got {collection!r}")
        self._grace_period_secs = grace_period_secs
        self._ignore_live_threads = ignore_live_threads
        self._collection = collection
        self._coord: Coordinator | None = None
        self._threads: list[Any] = []

    @property
    def coord(self) -> Coordinator:
        """The run's coordinator; register your own threads with it to have them joined."""
        if self._coord is None:
            raise RuntimeError("MonitoredRun.coord is available only once the run is entered")
        return self._coord

    @property
    def threads(self) -> list[Any]:
        """The queue-runner threads this run started (a copy)."""
        return list(self._threads)

    def should_stop(self) -> bool:
        """True once any thread (or the body) has requested a stop (MON-3)."""
        return self.coord.should_stop()

    def request_stop(self, ex: BaseException | None = None) -> None:
        """Ask every thread to stop, optionally recording why (``Coordinator.request_stop``)."""
        self.coord.request_stop(ex)

    def __enter__(self) -> MonitoredRun:
        if self._coord is not None:
            raise RuntimeError("a MonitoredRun can be entered only once; make a new one")
        self._coord = coord = Coordinator()
        registry = get_queue_runner_registry()
        if registry.get(self._collection):
            try:
                self._threads = registry.start(coord=coord, collection=self._collection)
            except BaseException:
                # A runner refused (its earlier threads still run): stop the ones
                # already started, which would otherwise wait for a stop for ever.
                coord.request_stop()
                with contextlib.suppress(Exception):
                    coord.join(stop_grace_period_secs=self._grace_period_secs, ignore_live_threads=True)
                raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        coord = self.coord
        if exc is not None and not isinstance(exc, Exception):
            # KeyboardInterrupt, SystemExit: stop at once, do not wait (MON-8).
            coord.request_stop()
            return False
        body_failed = exc is not None and not isinstance(exc, END_OF_INPUT)
        # The first stop wins (COORD-4): a body error is recorded only if no
        # stop came before it; one a thread reported earlier is raised instead.
        coord.request_stop(exc if body_failed else None)
        try:
            coord.join(
                stop_grace_period_secs=self._grace_period_secs,
                ignore_live_threads=self._ignore_live_threads,
            )
        except Exception as joined:
            if body_failed and (joined is exc or _is_straggler(joined)):
                if joined is not exc:
                    logger.warning("%s", joined)
                return False  # the body's own exception goes on, with its traceback
            raise
        # A clean join: the body's end of input is swallowed; a body error that
        # came after an earlier clean stop is re-raised all the same (DEV-PIPE-4).
        return not body_failed

def _is_straggler(error: BaseException) -> bool:
    return isinstance(error, RuntimeError) and str(error).startswith(
        "Coordinator stopped with threads still running"
    )
