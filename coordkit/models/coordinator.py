"""The coordinator model: stop requests, the recorded exception, joins (MODEL-6).

``CoordinatorModel`` follows COORD-3..17 of ``specs/coordinator.md``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from coordkit.errors import OutOfRangeError
from coordkit.models.outcome import Err, Ok, Outcome

__all__ = ["CoordinatorModel", "StopReason"]


@dataclass(frozen=True)
class StopReason:
    """What one ``request_stop`` call passes, as the model sees it.

    ``exc`` is the exception passed (``None`` for a plain stop), ``triple``
    whether it was passed as a ``sys.exc_info()`` triple, and ``handled`` the
    exception being handled where the call was made (COORD-5), if any.
    """

    exc: BaseException | None = None
    triple: bool = False
    handled: BaseException | None = None


@dataclass
class _Join:
    """A ``join`` call between its snapshot and its outcome (COORD-12..15)."""

    snapshot: list[Hashable]
    grace: float | None
    ignore_live_threads: bool
    phase: int = 1
    deadline: float | None = None

    def copy(self) -> _Join:
        return _Join(list(self.snapshot), self.grace, self.ignore_live_threads, self.phase, self.deadline)


class CoordinatorModel:
    """The stop and exception state of a Coordinator, its joins and the threads it watches.

    Threads are keys chosen by the caller.  ``thread_started(t, ...)`` makes
    one alive, optionally registers it, and with ``until_stop`` lets it end by
    itself once a stop is requested (a worker whose body is
    ``coord.wait_for_stop()``).  ``thread_ended(t)`` ends it.  Exceptions are
    compared by identity: the model records the object it was given.
    """

    def __init__(
        self, clean_stop_exception_types: Iterable[type[BaseException]] = (OutOfRangeError,)
    ) -> None:
        self.clean_stop_exception_types = tuple(clean_stop_exception_types)
        self.stop = False
        self.recorded: BaseException | None = None
        self.joined = False
        self.registered: list[Hashable] = []
        self.alive: dict[Hashable, bool] = {}
        self.until_stop: set[Hashable] = set()
        self.joins: dict[Hashable, _Join] = {}
        self.waits: dict[Hashable, float | None] = {}
        self.died: list[tuple[Hashable, BaseException]] = []  # threads ended by an exception
        self.results: dict[Hashable, Outcome] = {}
        self.now = 0.0

    def copy(self) -> CoordinatorModel:
        """An independent copy (MODEL-1)."""
        new = object.__new__(CoordinatorModel)
        new.__dict__.update(self.__dict__)
        new.registered = list(self.registered)
        new.alive = dict(self.alive)
        new.until_stop = set(self.until_stop)
        new.joins = {op: j.copy() for op, j in self.joins.items()}
        new.waits = dict(self.waits)
        new.died = list(self.died)
        new.results = dict(self.results)
        return new

    def key(self) -> tuple[Any, ...]:
        """Equal keys mean equal futures (MODEL-1); the recorded exception by identity."""
        return (self.stop, id(self.recorded), self.joined, tuple(self.registered),
                tuple(sorted(self.alive.items(), key=repr)), self.now,
                tuple(sorted((repr(op), j.phase, j.deadline) for op, j in self.joins.items())),
                tuple(sorted((repr(op), d) for op, d in self.waits.items())))

    def pending(self) -> list[Hashable]:
        """The operations still waiting: ``join`` calls, then ``wait_for_stop`` calls."""
        return [*self.joins, *self.waits]

    def deadlines(self) -> list[float]:
        """The deadlines of waiting ``wait_for_stop`` calls and of joins in their grace period."""
        return [d for d in self.waits.values() if d is not None] + [
            j.deadline for j in self.joins.values() if j.deadline is not None]

    def describe(self) -> str:
        """The state in one line, for failure reports."""
        joins = ", ".join(f"{op}: phase {j.phase} of {j.snapshot}"
                          + (f" until {j.deadline:g}" if j.deadline is not None else "")
                          for op, j in self.joins.items())
        return (
            f"stop={self.stop} recorded={self.recorded!r} joined={self.joined} now={self.now:g} "
            f"registered={self.registered} alive={[t for t, a in self.alive.items() if a]} "
            f"joins=[{joins}] waits={list(self.waits)}"
        )

    # -- stopping -----------------------------------------------------------------

    def _is_clean(self, exc: BaseException | None) -> bool:
        return exc is not None and isinstance(exc, self.clean_stop_exception_types)

    def request_stop(self, op: Hashable | None, reason: StopReason = StopReason()) -> Outcome:
        """``request_stop(...)`` (COORD-3..7); returns the outcome too (``op`` may be None).

        A clean-stop exception counts as no exception (COORD-3).  After a join,
        an exception is raised straight back and the stop is not set (COORD-7).
        Otherwise only the first stop request can record anything (COORD-4):
        the handled exception when there is one, else the passed one (COORD-5,
        COORD-6).
        """
        exc = None if self._is_clean(reason.exc) else reason.exc
        outcome: Outcome = Ok(None)
        if self.joined and exc is not None:
            raised = exc if reason.triple or reason.handled is None else reason.handled
            outcome = Err(type(raised), "request_stop after join raises", exc=raised)
        elif not self.stop:
            if exc is not None and self.recorded is None:
                self.recorded = exc if reason.triple or reason.handled is None else reason.handled
            self._set_stop()
        if op is not None:
            self.results[op] = outcome
        return outcome

    def clear_stop(self, op: Hashable | None = None) -> None:
        """``clear_stop()``: forget the stop, the record and ``joined``; keep registrations (COORD-8)."""
        self.stop = False
        self.recorded = None
        self.joined = False
        if op is not None:
            self.results[op] = Ok(None)

    def raise_requested_exception(self, op: Hashable) -> None:
        """Raise the recorded exception, if any; nothing changes (COORD-16, COORD-17)."""
        self.results[op] = (Ok(None) if self.recorded is None
                            else Err(type(self.recorded), "the recorded exception", exc=self.recorded))

    def wait_for_stop(self, op: Hashable, timeout: float | None = None) -> None:
        """``wait_for_stop(timeout)``: True once stopped, False at the deadline (COORD-10)."""
        if self.stop:
            self.results[op] = Ok(True)
        elif timeout is not None and timeout <= 0:
            self.results[op] = Ok(False)
        else:
            self.waits[op] = None if timeout is None else self.now + timeout

    def _set_stop(self) -> None:
        self.stop = True
        for op in list(self.waits):
            self.results[op] = Ok(True)
        self.waits.clear()
        for t in [t for t in self.until_stop if self.alive.get(t)]:
            self._end(t)
        for op, join in list(self.joins.items()):
            if join.phase == 1:
                self._phase_two(op, join)

    # -- threads ------------------------------------------------------------------

    def register(self, thread: Hashable) -> None:
        """``register_thread(t)``: once, in registration order (COORD-11)."""
        if thread not in self.registered:
            self.registered.append(thread)

    def thread_started(self, thread: Hashable, register: bool = False, until_stop: bool = False) -> None:
        """A thread starts (and is registered first, if ``register``)."""
        if register:
            self.register(thread)
        self.alive[thread] = True
        if until_stop:
            self.until_stop.add(thread)
            if self.stop:
                self._end(thread)

    def thread_ended(self, thread: Hashable) -> None:
        """A thread's body returns."""
        self._end(thread)

    def thread_failed(self, thread: Hashable, exc: BaseException) -> None:
        """A thread's body raises ``exc`` inside ``stop_on_exception()`` and ends (COORD-9).

        The exception goes to ``request_stop`` as a triple; after a join that
        call raises it, and it escapes and kills the thread.
        """
        outcome = self.request_stop(None, StopReason(exc, triple=True))
        if isinstance(outcome, Err):
            self.died.append((thread, exc))
        self._end(thread)

    def _end(self, thread: Hashable) -> None:
        self.alive[thread] = False
        for op, join in list(self.joins.items()):
            if not self._live(join):
                self._finish_join(op, join)

    def _live(self, join: _Join) -> list[Hashable]:
        return [t for t in join.snapshot if self.alive.get(t)]

    # -- join -----------------------------------------------------------------------

    def join(self, op: Hashable, threads: Iterable[Hashable] | None = None,
             grace: float | None = 120, ignore_live_threads: bool = False) -> None:
        """``join(threads, stop_grace_period_secs=grace, ignore_live_threads=...)``.

        The snapshot is the registered threads then ``threads``, without
        duplicates (COORD-12).  Phase one waits until every thread has ended or
        a stop is requested (COORD-13); phase two gives live threads ``grace``
        more seconds from that moment (COORD-14); then the outcome (COORD-15).
        """
        snapshot = list(dict.fromkeys([*self.registered, *(threads or ())]))
        join = _Join(snapshot, grace, ignore_live_threads)
        self.joins[op] = join
        if not self._live(join):
            self._finish_join(op, join)
        elif self.stop:
            self._phase_two(op, join)

    def _phase_two(self, op: Hashable, join: _Join) -> None:
        if not self._live(join):
            self._finish_join(op, join)
            return
        join.phase = 2
        join.deadline = None if join.grace is None else self.now + join.grace

    def _finish_join(self, op: Hashable, join: _Join) -> None:
        del self.joins[op]
        self.joined = True
        self.registered.clear()
        stragglers = tuple(self._live(join))
        if self.recorded is not None:
            outcome: Outcome = Err(type(self.recorded), "the recorded exception", exc=self.recorded)
        elif stragglers and not join.ignore_live_threads:
            outcome = Err(RuntimeError, "threads still running", detail=stragglers)
        else:
            outcome = Ok(None)
        self.results[op] = outcome

    def advance(self, seconds: float) -> None:
        """Let virtual time pass: grace periods and ``wait_for_stop`` timeouts end, in order."""
        target = self.now + seconds
        while True:
            due = [(d, 0, op) for op, d in self.waits.items() if d is not None and d <= target]
            due += [(j.deadline, 1, op) for op, j in self.joins.items()
                    if j.deadline is not None and j.deadline <= target]
            if not due:
                break
            when, kind, op = min(due, key=lambda item: (item[0], item[1]))
            self.now = when
            if kind == 0:
                del self.waits[op]
                self.results[op] = Ok(False)
            else:
                self._finish_join(op, self.joins[op])
        self.now = target

