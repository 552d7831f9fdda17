"""Coordinator and LooperThread: TensorFlow's thread-stopping protocol.

The rules are numbered in ``specs/coordinator.md`` (``COORD-n``, ``LOOP-n``) and
the places where coordkit departs from TensorFlow are listed there as
``DEV-COORD-n``. In short:

* any thread may ask every thread to stop (``request_stop``), optionally
  handing over the exception that made it stop; the *first stop request* wins
  and only it can record an exception;
* ``join`` waits for the threads, gives them a grace period once a stop has
  been requested, then re-raises the recorded exception (or reports the
  threads that would not stop).

Every lock, event, clock read and wait goes through ``coordkit.sync`` so that
the controlled scheduler can run this code one thread at a time on virtual
time. Nothing here polls: ``join`` parks in a ``WaitQueue`` (``coordkit._waiting``)
that a stop request and the end of each watched thread notify, and
``wait_for_stop`` is one ``Event.wait``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import numbers
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from coordkit import sync
from coordkit._waiting import WaitQueue, deadline_after, time_left
from coordkit.errors import OutOfRangeError

__all__ = ["Coordinator", "CoordinatorStatistics", "LooperThread"]

logger = logging.getLogger("coordkit")

ExcInfo = tuple[type[BaseException] | None, BaseException, TracebackType | None]
StopReason = BaseException | ExcInfo | None


@dataclass(frozen=True)
class CoordinatorStatistics:
    """A consistent snapshot of a Coordinator's state (taken under its lock).

    ``exc_info`` is the recorded ``(type, value, traceback)`` triple, or None.
    ``registered_threads`` is in registration order.
    """

    stop_requested: bool
    joined: bool
    exc_info: ExcInfo | None
    registered_threads: tuple[Any, ...]


def _is_thread_like(obj: object) -> bool:
    return (
        callable(getattr(obj, "is_alive", None))
        and callable(getattr(obj, "join", None))
        and hasattr(obj, "name")
    )


def _check_thread(obj: object, what: str) -> None:
    if not _is_thread_like(obj):
        raise TypeError(
            f"{what} must be a thread (an object with is_alive(), join(timeout) and name, "
            f"such as threading.Thread); got {obj!r}"
        )


def _check_timeout(value: object, what: str) -> float | None:
    """Return a timeout as a float, None for "no limit" (None or +inf)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number of seconds or None; got {value!r}")
    seconds = float(value)
    if math.isnan(seconds):
        raise ValueError(f"{what} must be a number of seconds, not NaN; got {value!r}")
    return None if seconds == math.inf else seconds


def _check_clean_types(types: object) -> tuple[type[BaseException], ...]:
    if isinstance(types, (str, bytes)) or not isinstance(types, Iterable):
        raise TypeError(
            "clean_stop_exception_types must be an iterable of exception classes "
            f"(for example (OutOfRangeError,)) or None; got {types!r}"
        )
    result = tuple(types)
    for t in result:
        if not (isinstance(t, type) and issubclass(t, BaseException)):
            raise TypeError(
                f"clean_stop_exception_types must contain only exception classes; got {t!r} in {types!r}"
            )
    return result


def _check_join_threads(threads: object) -> list[Any]:
    if threads is None:
        return []
    if not isinstance(threads, Iterable) or _is_thread_like(threads):
        raise TypeError(f"join(threads) must be an iterable of threads or None; got {threads!r}")
    result = list(threads)
    for t in result:
        _check_thread(t, "each element of join(threads)")
    return result


class Coordinator:
    """Lets a set of threads stop together and report why (COORD-1..21).

    Typical use::

        coord = Coordinator()
        threads = [Thread(target=work, args=(coord,)) for _ in range(4)]
        for t in threads:
            t.start()
        coord.join(threads)          # re-raises what a worker reported

        def work(coord):
            with coord.stop_on_exception():
                while not coord.should_stop():
                    ...

    Args:
        clean_stop_exception_types: exception classes that stop the threads
            without being reported: ``request_stop(ex)`` with an instance of one
            of them (or of a subclass) acts as ``request_stop()``. Any iterable
            of exception classes; ``None`` means ``(OutOfRangeError,)`` and
            ``[]`` means that nothing is a clean stop (COORD-1, COORD-3).

    Raises:
        TypeError: ``clean_stop_exception_types`` is not an iterable of
            exception classes (DEV-COORD-5).
    """

    def __init__(self, clean_stop_exception_types: Iterable[type[BaseException]] | None = None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (OutOfRangeError,)
        self._clean_stop_exception_types = _check_clean_types(clean_stop_exception_types)
        # Guards every attribute below except the stop event's own flag.
        self._lock = sync.Lock()
        # Set by the first request_stop(); cleared only by clear_stop(). Waited
        # on by wait_for_stop() and by join()'s first phase.
        self._stop_event = sync.Event()
        # Notified (under _lock) when a stop is requested and when a watcher
        # thread sees a thread end; both phases of join() wait in it, so they
        # need no polling.
        self._stop_or_ended = WaitQueue(self._lock)
        # Threads a watcher thread is joining (or will join). Each thread is
        # watched once, whatever the number of join() calls: two joins of one
        # thread at once can fail inside CPython before 3.13.
        self._watched: set[Any] = set()
        # Watcher threads whose thread has ended, not yet joined: the next join()
        # to wake takes them and joins each, so that no watcher of an ended thread
        # outlives the join() that waited for it (COORD-13).
        self._idle_watchers: list[Any] = []
        # The (type, value, traceback) triple join() re-raises, or None.
        self._exc_info: ExcInfo | None = None
        # True from the end of a join() until clear_stop().
        self._joined = False
        # Threads join() waits for when called without arguments. A dict used
        # as an ordered set: registration order is the order join() reports.
        self._registered_threads: dict[Any, None] = {}
        sync.shown(self)  # a recorded replay shows its state at each step

    @property
    def clean_stop_exception_types(self) -> tuple[type[BaseException], ...]:
        """The exception classes treated as a clean stop (COORD-1)."""
        return self._clean_stop_exception_types

    # -- stopping -------------------------------------------------------------

    def _filter(self, ex: StopReason) -> StopReason:
        """None if ``ex`` is a clean stop, else ``ex`` unchanged (COORD-3)."""
        value = ex[1] if isinstance(ex, tuple) else ex
        if isinstance(value, self._clean_stop_exception_types):
            return None
        return ex

    def request_stop(self, ex: StopReason = None) -> None:
        """Ask every thread to stop; optionally record why (COORD-3..7).

        ``ex`` may be None, an exception, or a ``sys.exc_info()`` triple.

        * A clean-stop exception (COORD-3) counts as ``None``.
        * Only the first stop request can record anything: once the stop is
          set, later exceptions are dropped, even when the first request
          carried none (COORD-4).
        * A triple is recorded as it is. An exception passed while an
          exception is being handled records ``sys.exc_info()``, the handled
          one, as TensorFlow does; outside an ``except`` block it records
          ``ex`` itself (COORD-5, COORD-6, DEV-COORD-1).
        * After ``join()`` (until ``clear_stop()``) an exception is raised at
          once instead of being recorded; ``None`` just sets the stop (COORD-7).

        Raises:
            TypeError: ``ex`` is none of the three accepted forms (COORD-18).
            BaseException: the exception itself, after ``join()`` (COORD-7).
        """
        sync.note("request_stop", self)
        handled = sys.exc_info()
        self._check_stop_reason(ex)
        ex = self._filter(ex)
        with self._lock:
            if self._joined:
                if isinstance(ex, tuple):
                    raise ex[1]
                if ex is not None:
                    raise handled[1] if handled[1] is not None else ex
            if self._stop_event.is_set():
                return
            if ex is not None and self._exc_info is None:
                if isinstance(ex, tuple):
                    self._exc_info = ex
                elif handled[1] is not None:
                    self._exc_info = handled  # type: ignore[assignment]
                else:
                    self._exc_info = (type(ex), ex, ex.__traceback__)
                logger.info(
                    "Error reported to Coordinator: %s, %s",
                    type(self._exc_info[1]),
                    self._exc_info[1],
                    exc_info=self._exc_info,
                )
            self._stop_event.set()
            self._stop_or_ended.notify_all()

    @staticmethod
    def _check_stop_reason(ex: object) -> None:
        if ex is None or isinstance(ex, BaseException):
            return
        if isinstance(ex, tuple) and len(ex) == 3 and isinstance(ex[1], BaseException):
            return
        raise TypeError(
            "request_stop(ex): ex must be None, an exception, or a sys.exc_info() triple "
            f"holding an exception; got {ex!r}"
        )

    def clear_stop(self) -> None:
        """Forget the stop, the recorded exception and the joined state (COORD-8).

        The registered threads are kept.
        """
        sync.note("clear_stop", self)
        with self._lock:
            self._joined = False
            self._exc_info = None
            self._stop_event.clear()

    def _ck_state(self) -> dict[str, Any]:
        """What coordkit's viewer shows of the coordinator: plain values, read without the
        lock (a snapshot is taken while every other thread is stopped at a scheduling point)."""
        exc = self._exc_info[1] if self._exc_info else None
        return {"panel": "other", "kind": "Coordinator", "label": "Coordinator",
                "stop requested": self._stop_event.is_set(), "joined": self._joined,
                "exception": None if exc is None else f"{type(exc).__name__}: {exc}",
                "registered threads": [getattr(t, "name", "?") for t in self._registered_threads]}

    def should_stop(self) -> bool:
        """True once a stop has been requested (and not cleared) (COORD-2)."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """Report any exception of the body to ``request_stop`` and swallow it (COORD-9).

        Everything is caught, ``SystemExit`` and ``KeyboardInterrupt`` included,
        and passed on as ``sys.exc_info()``; code after the ``with`` block runs.
        """
        try:
            yield
        except BaseException:
            self.request_stop(sys.exc_info())  # type: ignore[arg-type]

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Block until a stop is requested or ``timeout`` seconds pass (COORD-10).

        Returns True if the stop is set, False on timeout. ``None`` waits for
        ever; a timeout of 0 or less checks once without waiting.
        """
        seconds = _check_timeout(timeout, "wait_for_stop(timeout)")
        if seconds is None:
            return self._stop_event.wait()
        return self._stop_event.wait(max(seconds, 0.0))

    # -- threads --------------------------------------------------------------

    def register_thread(self, thread: Any) -> None:
        """Add ``thread`` to the set ``join()`` waits for; duplicates are ignored (COORD-11)."""
        _check_thread(thread, "register_thread(thread)")
        with self._lock:
            self._registered_threads[thread] = None

    def join(
        self,
        threads: Iterable[Any] | None = None,
        stop_grace_period_secs: float = 120,
        ignore_live_threads: bool = False,
    ) -> None:
        """Wait for the threads, then re-raise the recorded exception (COORD-12..15).

        The threads are the registered ones plus ``threads``, snapshotted at
        the call; threads registered later are not waited for.

        1. Wait until every thread has ended or a stop is requested. With live
           threads and no stop request this waits for ever: ``join`` does not
           request a stop itself.
        2. If threads are still alive, give them ``stop_grace_period_secs``
           more, returning as soon as the last one ends.
        3. Mark the coordinator joined and forget the registered threads. Then
           raise the recorded exception if there is one (the same instance on
           every ``join`` until ``clear_stop``); else, if threads are still
           alive, raise ``RuntimeError("Coordinator stopped with threads still
           running: <names>")``, or only log that with ``ignore_live_threads``.

        Raises:
            TypeError / ValueError: ``threads`` is not an iterable of threads,
                or the grace period is not a number >= 0 (COORD-19).
            RuntimeError: threads outlived the grace period.
            BaseException: the exception recorded by ``request_stop``.
        """
        sync.note("join", self)
        grace = _check_timeout(stop_grace_period_secs, "join(stop_grace_period_secs)")
        if grace is not None and grace < 0:
            raise ValueError(f"join(stop_grace_period_secs) must be >= 0; got {stop_grace_period_secs!r}")
        if not isinstance(ignore_live_threads, bool):  # a str like "no" would be truthy
            raise TypeError(f"join(ignore_live_threads) must be a bool; got {ignore_live_threads!r}")
        extra = _check_join_threads(threads)
        with self._lock:
            snapshot = list(dict.fromkeys([*self._registered_threads, *extra]))

        # The calling thread cannot end while it is in here: never wait on it,
        # but it still counts as alive (COORD-20).
        me = sync.current_thread()
        others = [t for t in snapshot if t is not me]
        includes_me = len(others) != len(snapshot)

        live = self._watch_live(others)
        with self._lock:
            # Phase 1 (COORD-13): until every thread ended or a stop is requested. A
            # caller in the snapshot is alive, so then only a stop ends it (COORD-20).
            self._stop_or_ended.wait(
                lambda: self._stop_event.is_set() or not (includes_me or self._watching(live))
            )
            # Phase 2 (COORD-14): the grace period, measured from here.
            self._stop_or_ended.wait(lambda: not self._watching(live), deadline_after(grace))
            idle, self._idle_watchers = self._idle_watchers, []
        for watcher in idle:  # each is joined by this join only: its work is done
            watcher.join()
        self._end_join(snapshot, ignore_live_threads)

    def _watch_live(self, threads: list[Any]) -> list[Any]:
        """Return the live ``threads``, after starting a watcher for those not yet watched.

        Watcher threads join the live threads (never the caller) and notify as each
        one ends; a stop request notifies too. Nothing else joins a thread.
        """
        live = [t for t in threads if t.is_alive()]
        with self._lock:
            unwatched = [t for t in live if t not in self._watched]
            self._watched.update(unwatched)
        # One watcher per thread: a watcher joining one thread must not keep another's end
        # unseen (a join of a subset waits for exactly its own threads).
        for t in unwatched:
            sync.Thread(
                target=self._watch,
                args=(t,),
                name="coordkit-join-watcher",
                daemon=True,
            ).start()
        return live

    def _end_join(self, snapshot: list[Any], ignore_live_threads: bool) -> None:
        """The outcome of a join (COORD-15): mark it joined, then raise what it must."""
        stragglers = [t.name for t in snapshot if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads.clear()
            if self._exc_info is not None:
                raise self._exc_info[1]
            if stragglers:
                message = "Coordinator stopped with threads still running: " + " ".join(stragglers)
                if not ignore_live_threads:
                    raise RuntimeError(message)
                logger.info(message)

    def _watching(self, threads: list[Any]) -> bool:
        """Whether a watcher is still waiting for one of ``threads`` (under _lock)."""
        return any(t in self._watched for t in threads)

    def _watch(self, thread: Any) -> None:
        """The body of a watcher thread: join ``thread``, then notify, and leave itself
        for a join() to join."""
        try:
            thread.join()
        finally:
            with self._lock:
                self._watched.discard(thread)
                self._idle_watchers.append(sync.current_thread())
                self._stop_or_ended.notify_all()

    @property
    def joined(self) -> bool:
        """True from the end of a ``join()`` until ``clear_stop()`` (COORD-16)."""
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raise the recorded exception, if any; change nothing (COORD-16)."""
        with self._lock:
            if self._exc_info is not None:
                raise self._exc_info[1]

    def statistics(self) -> CoordinatorStatistics:
        """A consistent snapshot of the state, for tests and models (COORD-21)."""
        with self._lock:
            return CoordinatorStatistics(
                stop_requested=self._stop_event.is_set(),
                joined=self._joined,
                exc_info=self._exc_info,
                registered_threads=tuple(self._registered_threads),
            )


class LooperThread(sync.Thread):
    """A daemon thread that calls ``run_loop()`` until the coordinator stops (LOOP-1..6).

    ``run_loop()`` calls ``target(*args, **kwargs)``; subclasses may override
    ``start_loop``, ``run_loop`` and ``stop_loop`` instead. With
    ``timer_interval_secs=None`` the calls come back to back; with a number T
    they come at t0, t0+T, t0+2T, ... on the monotonic clock, late ticks being
    run back to back to catch up.

    The thread registers itself with ``coord`` in the constructor, and any
    exception of a hook or of the target is reported to ``coord`` (the thread
    then ends without calling ``stop_loop``).

    Raises:
        ValueError: ``coord`` is not a Coordinator; ``args`` or ``kwargs``
            without ``target``; a negative ``timer_interval_secs`` (LOOP-1, LOOP-6).
        TypeError: a ``target`` that is not callable, or a non-numeric interval.
    """

    def __init__(
        self,
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable[..., Any] | None = None,
        args: Iterable[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
    ):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        interval = _check_timeout(timer_interval_secs, "LooperThread(timer_interval_secs)")
        if interval is not None and interval < 0:
            raise ValueError(
                f"LooperThread(timer_interval_secs) must be >= 0 or None; got {timer_interval_secs!r}"
            )
        if target is None and (args or kwargs):
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        if target is not None and not callable(target):
            raise TypeError(f"LooperThread(target) must be callable; got {target!r}")
        if args is not None and not isinstance(args, Iterable):
            raise TypeError(f"LooperThread(args) must be an iterable or None; got {args!r}")
        if kwargs is not None and not isinstance(kwargs, Mapping):
            raise TypeError(f"LooperThread(kwargs) must be a mapping or None; got {kwargs!r}")
        super().__init__(daemon=True)
        self._coord = coord
        # None means back to back; +inf behaves as "once, then wait for the stop".
        self._timer_interval_secs = None if timer_interval_secs is None else float(timer_interval_secs)
        self._loop_target = target
        self._loop_args = tuple(args or ())
        self._loop_kwargs = dict(kwargs or {})
        coord.register_thread(self)

    @staticmethod
    def loop(
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable[..., Any],
        args: Iterable[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> LooperThread:
        """Build a LooperThread calling ``target``, start it and return it (LOOP-5)."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        """``start_loop``, the loop, ``stop_loop``, all inside ``stop_on_exception`` (LOOP-2)."""
        coord = self._coord
        with coord.stop_on_exception():
            self.start_loop()
            interval = self._timer_interval_secs
            if interval is None:
                while not coord.should_stop():
                    self.run_loop()
            else:
                next_time = sync.monotonic()
                while not coord.wait_for_stop(time_left(next_time)):
                    next_time += interval
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once when the thread starts, before the first ``run_loop``."""

    def stop_loop(self) -> None:
        """Called once after the loop ends because of a stop request."""

    def run_loop(self) -> None:
        """One iteration: calls ``target(*args, **kwargs)`` when a target was given."""
        if self._loop_target is not None:
            self._loop_target(*self._loop_args, **self._loop_kwargs)
