"""Orderly shutdown on SIGINT and SIGTERM: the first signal asks, the second insists.

Python delivers SIGINT to the main thread as a KeyboardInterrupt wherever it
happens to be, and SIGTERM kills the process outright; either way the worker
threads get no chance to finish. ``stop_on_signals(coord)`` changes that for the
duration of a ``with`` block (the rules are SIG-1..8 in ``specs/pipeline.md``)::

    coord = coordkit.Coordinator()
    with coordkit.stop_on_signals(coord, grace_period_secs=30):
        threads = start_workers(coord)
        coord.join(threads)

* The first SIGINT or SIGTERM becomes ``coord.request_stop()``: the threads see
  ``should_stop()`` and finish; the main thread carries on.
* A second signal, or the grace period running out after the first, is an
  immediate stop: KeyboardInterrupt (SIGINT) or SystemExit(128 + signal
  number) is raised in the main thread.
* Leaving the block restores the handlers that were there before.

The handler itself takes no lock: a handler runs in the main thread between two
bytecodes, possibly while that thread holds the coordinator's lock, so calling
``request_stop`` from it could deadlock. It only appends to a
``queue.SimpleQueue`` (documented as safe to call from signal handlers); a
helper thread takes the signal from there and calls ``request_stop``. That queue
is the one wait here that does not go through ``coordkit.sync``: signal handlers
cannot be installed inside a controlled run anyway (SCHED-4), and this function
refuses to try.
"""

from __future__ import annotations

import _thread
import logging
import math
import numbers
import queue
import signal
import threading
from collections.abc import Iterable
from types import FrameType, TracebackType
from typing import Any

from coordkit import sync
from coordkit._waiting import watch_signals

__all__ = ["SignalStop", "stop_on_signals"]

logger = logging.getLogger("coordkit")

_DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_UNCATCHABLE = {getattr(signal, name) for name in ("SIGKILL", "SIGSTOP") if hasattr(signal, name)}
_EXIT = object()  # tells the helper thread that the block is over


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class SignalStop:
    """The context manager ``stop_on_signals`` returns (SIG-1..8); enter it once.

    ``received`` lists the handled signals that arrived, in order (an expired
    grace period counts as the first signal arriving again).
    """

    def __init__(
        self,
        coord: Any,
        grace_period_secs: float | None = 120,
        signals: Iterable[int] = _DEFAULT_SIGNALS,
    ) -> None:
        if not callable(getattr(coord, "request_stop", None)):
            raise TypeError(f"stop_on_signals(coord) must be a Coordinator; got {coord!r}")
        if grace_period_secs is not None:
            if isinstance(grace_period_secs, bool) or not isinstance(grace_period_secs, numbers.Real):
                raise TypeError(
                    "stop_on_signals(grace_period_secs) must be a number of seconds or None; "
                    f"got {grace_period_secs!r}"
                )
            if math.isnan(grace_period_secs) or grace_period_secs < 0:
                raise ValueError(
                    f"stop_on_signals(grace_period_secs) must be >= 0 or None; got {grace_period_secs!r}"
                )
        self._coord = coord
        self._grace = None if grace_period_secs is None else float(grace_period_secs)
        self._signals = self._check_signals(signals)
        # What the handler hands to the helper thread: signal numbers, then _EXIT.
        self._mailbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        # Appended to by the handler only (list.append takes no Python-level lock).
        self._received: list[int] = []
        # Guards _exiting between __exit__ and the helper thread's escalation.
        self._lock = sync.Lock()
        self._exiting = False
        self._entered = False
        self._previous: dict[int, Any] = {}
        self._helper: threading.Thread | None = None

    @staticmethod
    def _check_signals(signals: object) -> tuple[int, ...]:
        if isinstance(signals, (str, bytes)) or not isinstance(signals, Iterable):
            raise TypeError(
                f"stop_on_signals(signals) must be an iterable of signal numbers; got {signals!r}"
            )
        result = tuple(dict.fromkeys(signals))
        if not result:
            raise ValueError(f"stop_on_signals(signals) must name at least one signal; got {signals!r}")
        valid = signal.valid_signals()
        for signum in result:
            if isinstance(signum, bool) or not isinstance(signum, int) or signum not in valid:
                raise ValueError(f"stop_on_signals(signals): {signum!r} is not a signal number")
            if signum in _UNCATCHABLE:
                raise ValueError(f"stop_on_signals(signals): {_signal_name(signum)} cannot be caught")
        return result

    @property
    def received(self) -> list[int]:
        """The handled signals received so far, in order (a copy)."""
        return list(self._received)

    # -- the handler: main thread, between two bytecodes; no locks ----------------------

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._exiting:
            return  # the block is ending; its handlers are about to be restored (SIG-6)
        self._received.append(signum)
        if len(self._received) == 1:
            self._mailbox.put(signum)  # SimpleQueue.put is safe in a signal handler
            return
        self._stop_now(signum)

    @staticmethod
    def _stop_now(signum: int) -> None:
        """The immediate stop (SIG-3): KeyboardInterrupt for SIGINT, else SystemExit."""
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    # -- the helper thread ------------------------------------------------------------------

    def _watch(self) -> None:
        signum = self._mailbox.get()
        if signum is _EXIT:
            return
        name = _signal_name(signum)
        grace = "no time limit" if self._grace is None else f"{self._grace:g} s"
        logger.warning(
            "Received %s: requesting a stop; threads get %s to finish (send it again to stop at once)",
            name,
            grace,
        )
        self._coord.request_stop()
        try:
            if self._mailbox.get(timeout=self._grace) is _EXIT:
                return
        except queue.Empty:
            pass
        with self._lock:
            if not self._exiting:
                logger.error("The threads did not finish within %s of %s: stopping at once", grace, name)
                _interrupt_main(signum)  # our handler takes it as the second signal (SIG-4)

    # -- the block ----------------------------------------------------------------------------

    def __enter__(self) -> SignalStop:
        if self._entered:
            raise RuntimeError("a stop_on_signals() block can be entered only once; make a new one")
        if sync.controller() is not None:
            raise RuntimeError(
                "stop_on_signals() cannot install signal handlers inside a controlled run "
                "(coordkit.explore/replay); use it outside the run"
            )
        me = sync.current_thread()
        if me is not threading.main_thread():
            raise RuntimeError(f"stop_on_signals() must be entered in the main thread; got {me.name!r}")
        self._entered = True
        self._helper = sync.Thread(target=self._watch, name="coordkit-signal-watcher", daemon=True)
        self._helper.start()
        watch_signals(True)  # SIG-8: ended with the helper thread, in _restore
        try:
            for signum in self._signals:
                self._previous[signum] = signal.signal(signum, self._handle)
        except BaseException:
            self._restore()
            raise
        return self

    def _restore(self) -> None:
        """Put the previous handlers back and end the helper thread (SIG-5, SIG-6)."""
        with self._lock:
            self._exiting = True  # from here on the handler ignores every signal
        if hasattr(signal, "pthread_sigmask"):
            # Any syscall will do: a signal the helper thread sent to this thread
            # before it saw _exiting is delivered on return, to our handler, not
            # to the previous one (which might end the process).
            signal.pthread_sigmask(signal.SIG_BLOCK, [])
        errors: list[BaseException] = []
        for signum, previous in reversed(list(self._previous.items())):
            # None: installed from C; it cannot be put back from Python.
            handler = signal.SIG_DFL if previous is None else previous
            # signal.signal() first runs the handlers of pending signals; if
            # another module's handler raises there, the change did not happen:
            # try once more, and raise the first error at the end.
            for _ in range(2):
                try:
                    signal.signal(signum, handler)
                    break
                except BaseException as e:
                    errors.append(e)
        self._previous.clear()
        self._mailbox.put(_EXIT)
        if self._helper is not None:
            self._helper.join()
            self._helper = None
            watch_signals(False)
        if errors:
            raise errors[0]

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # A second signal can still raise here, before _restore() marks the
        # block as ending: restore anyway, then let that interrupt go on.
        interrupt: BaseException | None = None
        while True:
            try:
                self._restore()
                break
            except (KeyboardInterrupt, SystemExit) as e:
                if interrupt is None:
                    interrupt = e
        if interrupt is not None:
            raise interrupt


def _interrupt_main(signum: int) -> None:
    """Deliver ``signum`` to the main thread, interrupting a blocking wait there."""
    if hasattr(signal, "pthread_kill"):
        # A real signal: it also breaks a lock acquire the main thread is blocked in,
        # which _thread.interrupt_main() alone would not.
        signal.pthread_kill(threading.main_thread().ident, signum)  # type: ignore[arg-type]
    else:  # pragma: no cover - Windows
        _thread.interrupt_main(signum)


def stop_on_signals(
    coord: Any,
    grace_period_secs: float | None = 120,
    signals: Iterable[int] = _DEFAULT_SIGNALS,
) -> SignalStop:
    """A ``with`` block in which SIGINT/SIGTERM stop ``coord``'s threads in order (SIG-1..8).

    * Entering (main thread only, outside a controlled run) installs a handler
      for each of ``signals`` and remembers the handlers it replaces (SIG-1).
    * The first signal calls ``coord.request_stop()`` through a helper thread;
      the handler itself takes no lock and returns at once (SIG-2).
    * A second signal raises KeyboardInterrupt (SIGINT) or
      SystemExit(128 + signal number) in the main thread (SIG-3).
    * If the block is still running ``grace_period_secs`` after the first
      signal, that is treated as a second signal (SIG-4); None waits for ever.
    * Leaving the block, however it ends, puts the previous handlers back
      (SIG-5, SIG-6); exceptions are never swallowed.

    Raises:
        TypeError / ValueError: a bad argument, naming it and its value.
        RuntimeError: (on entering) not the main thread, or inside a
            controlled run (SIG-7).
    """
    return SignalStop(coord, grace_period_secs, signals)
