"""The queue model: the scheduling rules every queue class shares (MODEL-3, MODEL-4).

``QueueModel`` follows ``specs/queues.md`` (Q-MODEL-1..5, Q-ENQ-*, Q-DEQ-*,
Q-CLOSE-*, Q-TIMEOUT-*), coordkit's deviations from TensorFlow included; which
element comes out is the business of its store (``coordkit.models.storage``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from coordkit.errors import CancelledError, DeadlineExceededError, OutOfRangeError
from coordkit.models.outcome import Err, ModelError, Ok, Outcome
from coordkit.models.storage import NO_PICK, ORDERS, Attempt, Store

__all__ = ["QueueModel", "Statistics"]

# What a step of an attempt achieved (Q-MODEL-2).
_WAIT, _PROGRESS, _DONE = 0, 1, 2


@dataclass(frozen=True)
class Statistics:
    """What ``statistics()`` of a queue reports in a model state (Q-API-8).

    The fields of ``coordkit.queues.QueueStatistics``, under the same names; the
    models do not import the implementation, so compare the two field by field.
    """

    size: int
    """Elements stored (Q-API-6)."""
    closed: bool
    """Whether a close has taken effect."""
    pending_enqueues: int
    """``enqueue``/``enqueue_many`` calls waiting in the enqueue list."""
    pending_dequeues: int
    """Dequeue calls waiting in the dequeue list."""
    pending_closes: int
    """Plain ``close()`` calls waiting in the enqueue list (Q-CLOSE-1)."""
    held: int
    """Elements taken by waiting batch dequeues, not in ``size``."""


class QueueModel:
    """The scheduling model every queue class shares (Q-MODEL-1..5), on a choice of storage.

    ``order`` is ``"fifo"`` (FIFOQueue, PaddingFIFOQueue), ``"shuffle"``
    (RandomShuffleQueue, with ``min_after_dequeue``) or ``"priority"``
    (PriorityQueue; elements are tuples whose first item is the priority).
    A negative capacity is unbounded (Q-API-2).

    Where the implementation may choose (which element a RandomShuffleQueue
    hands out, how a PriorityQueue breaks ties), the model takes the choice
    from ``picks``, a mapping from op to the value the implementation returned,
    if the rules allow that choice, and otherwise a choice of its own, which
    then differs from what the implementation returned (MODEL-5).

    Timeouts run on virtual time: ``timeout`` is in seconds from ``now``;
    ``advance`` fires the deadlines that fall due, one at a time, in order
    (MODEL-4).
    """

    def __init__(self, capacity: int, order: str = "fifo", min_after_dequeue: int = 0) -> None:
        if order not in ORDERS:
            raise ValueError(f"order must be one of {sorted(ORDERS)}, got {order!r}")
        self.capacity: float = math.inf if capacity < 0 else capacity
        self.order = order
        self.min_after_dequeue = min_after_dequeue
        self.store: Store = ORDERS[order]()
        self.closed = False
        # How many elements a dequeue must leave while open (RSQ-2); 0 once closed (RSQ-3).
        self.reserve = min_after_dequeue
        self.enqueuers: list[Attempt] = []
        self.dequeuers: list[Attempt] = []
        self.results: dict[Hashable, Outcome] = {}
        self.now = 0.0
        self.picks: dict[Hashable, Any] = {}
        self.accepted = 0  # elements ever stored (Q-API-8: each is stored, held or returned)

    @classmethod
    def at_rest(cls, capacity: int, order: str = "fifo", min_after_dequeue: int = 0,
                contents: Iterable[Any] = (), closed: bool = False) -> QueueModel:
        """A queue with no waiting call that stores ``contents``, closed if ``closed``.

        ``contents`` are stored in the order given (the arrival order, for a FIFO
        queue) and count as accepted (Q-API-8); a closed queue keeps no reserve
        (RSQ-3).  Nothing is checked against the capacity: this is a state the
        caller knows the queue was in, not a sequence of calls.
        """
        model = cls(capacity, order, min_after_dequeue)
        model.store.extend(contents)
        model.accepted = model.store.size()
        if closed:
            model._set_closed()
        return model

    # -- copying and comparing candidate states ---------------------------------

    def copy(self) -> QueueModel:
        """An independent copy, with the results so far and no picks (MODEL-1)."""
        new = object.__new__(QueueModel)
        new.__dict__.update(self.__dict__)
        new.store = self.store.copy()
        new.enqueuers = [a.copy() for a in self.enqueuers]
        new.dequeuers = [a.copy() for a in self.dequeuers]
        new.results = dict(self.results)
        new.picks = {}
        return new

    def key(self) -> tuple[Any, ...]:
        """Equal keys mean equal futures (results already observed are left out)."""
        return (self.store.key(), self.closed, self.reserve, self.now,
                tuple(a.key() for a in self.enqueuers), tuple(a.key() for a in self.dequeuers))

    # -- what can be observed -----------------------------------------------------

    def size(self) -> int:
        """Stored elements only; held ones and those of waiting enqueues are not counted (Q-API-6)."""
        return self.store.size()

    def contents(self) -> list[Any]:
        """The stored elements (in order for FIFO; sorted for the other orders)."""
        return self.store.contents()

    def statistics(self) -> Statistics:
        """What ``QueueBase.statistics()`` reports in this state, field by field (Q-API-8)."""
        closes = sum(1 for a in self.enqueuers if a.kind == "close")
        return Statistics(
            size=self.store.size(),
            closed=self.closed,
            pending_enqueues=len(self.enqueuers) - closes,
            pending_dequeues=len(self.dequeuers),
            pending_closes=closes,
            held=sum(a.held for a in self.dequeuers),
        )

    def pending(self) -> list[Hashable]:
        """The operations still waiting, enqueue list first, each in arrival order."""
        return [a.op for a in self.enqueuers + self.dequeuers if a.op is not None]

    def deadlines(self) -> list[float]:
        """The deadlines of the waiting operations."""
        return [a.deadline for a in self.enqueuers + self.dequeuers if a.deadline is not None]

    def describe(self) -> str:
        """The state in one line, for failure reports."""

        def attempt(a: Attempt) -> str:
            who = "(timed-out close)" if a.op is None else f"{a.op}"
            extra = f" items={list(a.items)}" if a.kind == "enqueue" else ""
            if a.kind.startswith("dequeue_"):
                extra = f" missing={a.remaining} held={a.held}"
            due = f" deadline={a.deadline:g}" if a.deadline is not None else ""
            return f"{who}:{a.kind}{extra}{due}"

        return (
            f"{self.order} queue, capacity {self.capacity}, {'closed' if self.closed else 'open'}, "
            f"now={self.now:g}, stored={self.contents()}, "
            f"enqueue list=[{', '.join(map(attempt, self.enqueuers))}], "
            f"dequeue list=[{', '.join(map(attempt, self.dequeuers))}]"
        )

    # -- operations ---------------------------------------------------------------

    def enqueue(self, op: Hashable, element: Any, timeout: float | None = None) -> None:
        """``enqueue(element)`` (Q-ENQ-2)."""
        self._enqueue(op, [element], timeout)

    def enqueue_many(self, op: Hashable, elements: Iterable[Any], timeout: float | None = None) -> None:
        """``enqueue_many(elements)``: one by one as room appears (Q-ENQ-3).

        An empty batch succeeds at once, even on a closed queue (Q-ENQ-4).
        """
        items = list(elements)
        if not items:
            self.results[op] = Ok(None)
            return
        self._enqueue(op, items, timeout)

    def _enqueue(self, op: Hashable, items: list[Any], timeout: float | None) -> None:
        # Q-TIMEOUT-3: with timeout=0 the call must be able to finish at once.
        if timeout == 0 and (
            self.enqueuers
            or (not self.closed and self.store.size() + len(items) > self.capacity)
        ):
            self.results[op] = Err(DeadlineExceededError, "timeout=0 and the call would wait")
            return
        self._join(self.enqueuers, Attempt(op, "enqueue", items=tuple(items)), timeout)

    def dequeue(self, op: Hashable, timeout: float | None = None) -> None:
        """``dequeue()`` (Q-DEQ-1, RSQ-2)."""
        if timeout == 0 and (
            self.dequeuers or (not self.closed and self.store.size() <= self.reserve)
        ):
            self.results[op] = Err(DeadlineExceededError, "timeout=0 and the call would wait")
            return
        self._join(self.dequeuers, Attempt(op, "dequeue"), timeout)

    def dequeue_many(self, op: Hashable, n: int, timeout: float | None = None, up_to: bool = False) -> None:
        """``dequeue_many(n)``, or ``dequeue_up_to(n)`` with ``up_to`` (Q-DEQ-2..6, PQ-4, PQ-5).

        ``n == 0`` returns an empty batch at once, even on a closed queue.
        """
        if n == 0:
            self.results[op] = Ok([])
            return
        if timeout == 0 and (
            self.dequeuers or (not self.closed and self.store.size() - self.reserve < n)
        ):
            self.results[op] = Err(DeadlineExceededError, "timeout=0 and the call would wait")
            return
        kind = "dequeue_up_to" if up_to else "dequeue_many"
        self._join(self.dequeuers, Attempt(op, kind, remaining=n), timeout)

    def dequeue_up_to(self, op: Hashable, n: int, timeout: float | None = None) -> None:
        """``dequeue_up_to(n)`` (Q-DEQ-5, PQ-5)."""
        self.dequeue_many(op, n, timeout, up_to=True)

    def close(self, op: Hashable, cancel: bool = False, timeout: float | None = None) -> None:
        """``close(cancel_pending_enqueues=cancel)`` (Q-CLOSE-1..6).

        A plain close waits its turn in the enqueue list.  A cancelling close
        acts at once: it closes, fails every attempt of the enqueue list with
        CancelledError (plain closes included), lets the dequeuers see the
        closed queue, and never fails itself.
        """
        if cancel:
            self._set_closed()
            for attempt in self.enqueuers:
                self._finish(attempt, Err(CancelledError, "cancelled by a cancelling close"))
            self.enqueuers.clear()
            self.results[op] = Ok(None)
            self._flush()
            return
        if timeout == 0 and self.enqueuers:
            self.results[op] = Err(DeadlineExceededError, "timeout=0 and enqueues are waiting")
            return
        self._join(self.enqueuers, Attempt(op, "close"), timeout)

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass; due deadlines fire in order (Q-TIMEOUT-1, -2).

        Raises ModelError if two deadlines fall on the same instant: which of
        the two woken callers acts first is a scheduling decision, and the
        outcome can depend on it.
        """
        target = self.now + seconds
        while True:
            due = [a for a in self.enqueuers + self.dequeuers
                   if a.deadline is not None and a.deadline <= target]
            if not due:
                break
            first = min(due, key=lambda a: a.deadline)  # type: ignore[arg-type, return-value]
            if sum(1 for a in due if a.deadline == first.deadline) > 1:
                raise ModelError(
                    f"two deadlines at {first.deadline:g}: give waiting calls distinct deadlines")
            self.now = first.deadline  # type: ignore[assignment]
            self._expire(first)
        self.now = target

    # -- the flush loop ----------------------------------------------------------------

    def _join(self, waiters: list[Attempt], attempt: Attempt, timeout: float | None) -> None:
        if timeout is not None and timeout > 0:
            attempt.deadline = self.now + timeout
        waiters.append(attempt)
        self._flush()

    def _finish(self, attempt: Attempt, outcome: Outcome) -> None:
        if attempt.op is not None:
            self.results[attempt.op] = outcome

    def _set_closed(self) -> None:
        self.closed = True
        self.reserve = 0

    def _flush(self) -> None:
        """Run the enqueue list, then the dequeue list, while either moves (Q-MODEL-2)."""
        moved = True
        while moved:
            moved = self._run(self.enqueuers)
            moved = self._run(self.dequeuers) or moved

    def _run(self, waiters: list[Attempt]) -> bool:
        """Only the head of a list acts; a blocked head holds up the rest (Q-MODEL-3)."""
        moved = False
        while waiters:
            attempt = waiters[0]
            outcome = self._step(attempt)
            if outcome != _DONE:
                return moved or outcome == _PROGRESS
            waiters.pop(0)
            moved = True
        return moved

    def _step(self, attempt: Attempt) -> int:
        """What the attempt does when its turn comes; it reads the state now (Q-MODEL-4)."""
        if attempt.kind == "enqueue":
            return self._enqueue_step(attempt)
        if attempt.kind == "close":
            return self._close_step(attempt)
        if attempt.kind == "dequeue":
            return self._dequeue_step(attempt)
        return self._dequeue_many_step(attempt)

    def _enqueue_step(self, attempt: Attempt) -> int:
        # Q-ENQ-2, Q-ENQ-3: store one by one while there is room; what is stored stays.
        if self.closed:
            self._finish(attempt, Err(CancelledError, "the queue is closed"))
            return _DONE
        outcome = _WAIT
        while self.store.size() < self.capacity:
            self.store.push(attempt.items[0])
            attempt.items = attempt.items[1:]
            self.accepted += 1
            if not attempt.items:
                self._finish(attempt, Ok(None))
                return _DONE
            outcome = _PROGRESS
        return outcome

    def _close_step(self, attempt: Attempt) -> int:
        # Q-CLOSE-1, Q-CLOSE-2; a timed-out close (op None) tells no one (Q-CLOSE-6).
        if self.closed:
            self._finish(attempt, Err(CancelledError, "the queue is already closed"))
        else:
            self._set_closed()
            self._finish(attempt, Ok(None))
        return _DONE

    def _dequeue_step(self, attempt: Attempt) -> int:
        # Q-DEQ-1, RSQ-2, RSQ-3; dequeuers are never cancelled (Q-CLOSE-4).
        if self.store.size() > self.reserve:
            self._finish(attempt, Ok(self.store.dequeue(self.picks.get(attempt.op, NO_PICK))))
            return _DONE
        if self.closed:
            self._finish(attempt, Err(OutOfRangeError, "closed and empty"))
            return _DONE
        return _WAIT

    def _dequeue_many_step(self, attempt: Attempt) -> int:
        size = self.store.size()
        if self.closed and size < attempt.remaining:
            # Q-DEQ-4: put back what was taken; up_to takes the rest instead (Q-DEQ-5, PQ-5).
            self.store.put_back(attempt)
            if attempt.kind == "dequeue_up_to" and self.store.size():
                attempt.remaining = self.store.size()
            else:
                self._finish(attempt, Err(OutOfRangeError, "closed with too few elements"))
                return _DONE
        available = self.store.size() - self.reserve
        whole = self.order == "priority"  # PQ-4: all n at once, or nothing
        if available <= 0 or (whole and available < attempt.remaining):
            return _WAIT
        while True:
            # Q-DEQ-3: take elements as they become available, and hold them.
            self.store.take(attempt)
            attempt.remaining -= 1
            if attempt.remaining == 0:
                batch = self.store.batch(attempt, self.picks.get(attempt.op, NO_PICK))
                self._finish(attempt, Ok(batch))
                return _DONE
            available -= 1
            if available == 0:
                return _PROGRESS

    def _expire(self, attempt: Attempt) -> None:
        """A deadline fires: the attempt leaves its list (Q-TIMEOUT-2)."""
        self._finish(attempt, Err(DeadlineExceededError, "timed out"))
        attempt.deadline = None
        if attempt.kind == "close":
            attempt.op = None  # stays in line and still takes effect (Q-CLOSE-6)
            return
        if attempt.kind == "enqueue":
            self.enqueuers.remove(attempt)  # what it stored stays (Q-ENQ-3)
        else:
            self.dequeuers.remove(attempt)
            self.store.put_back(attempt)  # Q-DEQ-6
        self._flush()


