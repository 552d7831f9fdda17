"""Pure models of the queue, coordinator and runner rules.

A model is a sequential, deterministic description of a spec: plain data, no
threads, no locks, no clock of its own (``now`` is a number the caller moves
with ``advance``).  Each public method is one operation, identified by an
``op`` key chosen by the caller.  After the method returns, ``results`` holds
the outcome of every operation that has completed so far: the new one if it
finished at once, and every pending operation the change released.  An
operation that is still waiting has no entry.  That is the whole contract
(MODEL-1, MODEL-2): *given this state and this operation, what does every
pending operation do now*.

Outcomes are ``Ok(value)`` or ``Err(type, ...)``.  A model never raises for a
legal sequence of operations; ``ModelError`` means the caller asked for
something the model does not cover (such as two timeouts due at the same
virtual instant, whose order only a scheduler could decide).

The rules are coordkit's, deviations included (``specs/queues.md``,
``specs/coordinator.md``, ``specs/queue_runner.md``); each method names the
rule ids it follows.  ``specs/stateful.md`` says how the state machines in
``coordkit.stateful`` use these models.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from coordkit import history
from coordkit.errors import CancelledError, DeadlineExceededError, OutOfRangeError
from coordkit.queues import QueueStatistics

__all__ = [
    "CoordinatorModel",
    "Err",
    "ModelError",
    "Ok",
    "Outcome",
    "QueueHistoryModel",
    "QueueModel",
    "RunnerModel",
    "StopReason",
]


class ModelError(Exception):
    """The caller asked a model for something it does not describe."""


@dataclass(frozen=True)
class Ok:
    """The operation returned ``value``."""

    value: Any = None

    def __str__(self) -> str:
        return f"returns {self.value!r}"


@dataclass(frozen=True)
class Err:
    """The operation raised an instance of ``type``.

    ``exc`` is the very object expected when the rules fix it (COORD-17: ``join``
    re-raises the recorded exception itself); ``detail`` carries what else a
    checker may compare (the straggler threads of COORD-15).
    """

    type: type[BaseException]
    why: str = ""
    exc: BaseException | None = None
    detail: Any = None

    def __str__(self) -> str:
        what = f"{self.exc!r}" if self.exc is not None else self.type.__name__
        return f"raises {what}" + (f" ({self.why})" if self.why else "")


Outcome = Ok | Err

# A key for the picks of a model step that the implementation has not made.
_NO_PICK = object()


# ---------------------------------------------------------------------------
# Queues
# ---------------------------------------------------------------------------


class _Attempt:
    """One call waiting in a waiter list (Q-MODEL-1); cheap to copy (tuples only)."""

    __slots__ = ("deadline", "held", "items", "kind", "op", "remaining", "taken")

    def __init__(self, op: Hashable | None, kind: str, items: tuple[Any, ...] = (),
                 remaining: int = 0) -> None:
        self.op = op  # None: a timed-out plain close that no one waits for (Q-CLOSE-6)
        self.kind = kind  # "enqueue", "close", "dequeue", "dequeue_many" or "dequeue_up_to"
        self.items = items  # enqueue: elements not pushed yet
        self.remaining = remaining  # batch dequeue: elements still missing
        self.taken: tuple[Any, ...] = ()  # batch dequeue, FIFO order: the held elements
        self.held = 0  # batch dequeue: how many elements it holds
        self.deadline: float | None = None

    def copy(self) -> _Attempt:
        new = _Attempt.__new__(_Attempt)
        new.op, new.kind, new.items, new.remaining = self.op, self.kind, self.items, self.remaining
        new.taken, new.held, new.deadline = self.taken, self.held, self.deadline
        return new

    def key(self) -> tuple[Any, ...]:
        return (self.op, self.kind, self.items, self.remaining, self.taken, self.held, self.deadline)


class _FifoStore:
    """FIFOQueue and PaddingFIFOQueue: elements in arrival order, exactly known."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def copy(self) -> _FifoStore:
        new = _FifoStore()
        new.items = list(self.items)
        return new

    def key(self) -> tuple[Any, ...]:
        return tuple(self.items)

    def size(self) -> int:
        return len(self.items)

    def push(self, element: Any) -> None:
        self.items.append(element)

    def take(self, attempt: _Attempt) -> None:
        attempt.taken += (self.items.pop(0),)
        attempt.held += 1

    def dequeue(self, pick: Any) -> Any:
        return self.items.pop(0)

    def batch(self, attempt: _Attempt, pick: Any) -> list[Any]:
        batch, attempt.taken, attempt.held = list(attempt.taken), (), 0
        return batch

    def put_back(self, attempt: _Attempt) -> None:
        # Q-DEQ-4, Q-DEQ-6: at the front, in their original order.
        self.items[0:0] = attempt.taken
        attempt.taken, attempt.held = (), 0

    def contents(self) -> list[Any]:
        return list(self.items)


def _is_sub_multiset(part: Iterable[Any], whole: Iterable[Any]) -> bool:
    try:
        return not (Counter(part) - Counter(whole))
    except TypeError:  # unhashable values cannot be ours
        return False


def _remove_each(pool: list[Any], elements: Iterable[Any]) -> None:
    for element in elements:
        pool.remove(element)


class _ShuffleStore:
    """RandomShuffleQueue: which element comes out is the implementation's pick (RSQ-4).

    ``pool`` holds every element stored *or* held by the waiting head of the
    dequeue list; only how many are held is known until the batch completes.
    Then the implementation's batch must be a sub-multiset of the pool.
    """

    def __init__(self) -> None:
        self.pool: list[Any] = []
        self.held = 0

    def copy(self) -> _ShuffleStore:
        new = _ShuffleStore()
        new.pool, new.held = list(self.pool), self.held
        return new

    def key(self) -> tuple[Any, ...]:
        return (tuple(sorted(self.pool, key=repr)), self.held)

    def size(self) -> int:
        return len(self.pool) - self.held

    def push(self, element: Any) -> None:
        self.pool.append(element)

    def take(self, attempt: _Attempt) -> None:
        attempt.held += 1
        self.held += 1

    def dequeue(self, pick: Any) -> Any:
        if self.held:
            raise ModelError("a single dequeue completed while a batch was held")
        element = pick if pick is not _NO_PICK and pick in self.pool else self.pool[0]
        self.pool.remove(element)
        return element

    def batch(self, attempt: _Attempt, pick: Any) -> list[Any]:
        count = attempt.held
        self.held -= count
        attempt.held = 0
        if isinstance(pick, list) and len(pick) == count and _is_sub_multiset(pick, self.pool):
            batch = list(pick)
        else:
            batch = self.pool[:count]
        _remove_each(self.pool, batch)
        return batch

    def put_back(self, attempt: _Attempt) -> None:
        # RSQ: the held elements are appended; their order is not modelled.
        self.held -= attempt.held
        attempt.held = 0

    def contents(self) -> list[Any]:
        return sorted(self.pool, key=repr)


class _PriorityStore:
    """PriorityQueue of ``(priority, ...)`` tuples: the smallest priority comes out first.

    Ties are the implementation's pick (PQ-2 fixes libstdc++'s order; the model
    accepts any element of the smallest priority), and a batch must hold the
    ``n`` smallest priorities, sorted (PQ-2, PQ-4).
    """

    def __init__(self) -> None:
        self.items: list[Any] = []

    def copy(self) -> _PriorityStore:
        new = _PriorityStore()
        new.items = list(self.items)
        return new

    def key(self) -> tuple[Any, ...]:
        return tuple(sorted(self.items, key=repr))

    def size(self) -> int:
        return len(self.items)

    def push(self, element: Any) -> None:
        self.items.append(element)

    def take(self, attempt: _Attempt) -> None:
        attempt.held += 1  # resolved by batch() in the same step (PQ-4)

    def dequeue(self, pick: Any) -> Any:
        lowest = min(element[0] for element in self.items)
        if pick is _NO_PICK or pick not in self.items or pick[0] != lowest:
            pick = next(element for element in self.items if element[0] == lowest)
        self.items.remove(pick)
        return pick

    def batch(self, attempt: _Attempt, pick: Any) -> list[Any]:
        count, attempt.held = attempt.held, 0
        best = sorted(self.items, key=lambda element: element[0])[:count]
        if not (
            isinstance(pick, list)
            and len(pick) == count
            and _is_sub_multiset(pick, self.items)
            and [element[0] for element in pick] == [element[0] for element in best]
        ):
            pick = best
        _remove_each(self.items, pick)
        return list(pick)

    def put_back(self, attempt: _Attempt) -> None:
        if attempt.held:
            raise ModelError("a PriorityQueue batch never holds elements while it waits (PQ-4)")

    def contents(self) -> list[Any]:
        return sorted(self.items, key=repr)


_STORES = {"fifo": _FifoStore, "shuffle": _ShuffleStore, "priority": _PriorityStore}

# What a step of an attempt achieved (Q-MODEL-2).
_WAIT, _PROGRESS, _DONE = 0, 1, 2


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
        if order not in _STORES:
            raise ValueError(f"order must be one of {sorted(_STORES)}, got {order!r}")
        self.capacity: float = math.inf if capacity < 0 else capacity
        self.order = order
        self.min_after_dequeue = min_after_dequeue
        self.store: Any = _STORES[order]()
        self.closed = False
        # How many elements a dequeue must leave while open (RSQ-2); 0 once closed (RSQ-3).
        self.reserve = min_after_dequeue
        self.enqueuers: list[_Attempt] = []
        self.dequeuers: list[_Attempt] = []
        self.results: dict[Hashable, Outcome] = {}
        self.now = 0.0
        self.picks: dict[Hashable, Any] = {}
        self.accepted = 0  # elements ever stored (Q-API-8: each is stored, held or returned)

    # -- copying and comparing candidate states ---------------------------------

    def copy(self) -> QueueModel:
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

    def statistics(self) -> QueueStatistics:
        """What ``QueueBase.statistics()`` reports in this state (Q-API-8)."""
        closes = sum(1 for a in self.enqueuers if a.kind == "close")
        return QueueStatistics(
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
        def attempt(a: _Attempt) -> str:
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
        self._join(self.enqueuers, _Attempt(op, "enqueue", items=tuple(items)), timeout)

    def dequeue(self, op: Hashable, timeout: float | None = None) -> None:
        """``dequeue()`` (Q-DEQ-1, RSQ-2)."""
        if timeout == 0 and (
            self.dequeuers or (not self.closed and self.store.size() <= self.reserve)
        ):
            self.results[op] = Err(DeadlineExceededError, "timeout=0 and the call would wait")
            return
        self._join(self.dequeuers, _Attempt(op, "dequeue"), timeout)

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
        self._join(self.dequeuers, _Attempt(op, kind, remaining=n), timeout)

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
        self._join(self.enqueuers, _Attempt(op, "close"), timeout)

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

    def _join(self, waiters: list[_Attempt], attempt: _Attempt, timeout: float | None) -> None:
        if timeout is not None and timeout > 0:
            attempt.deadline = self.now + timeout
        waiters.append(attempt)
        self._flush()

    def _finish(self, attempt: _Attempt, outcome: Outcome) -> None:
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

    def _run(self, waiters: list[_Attempt]) -> bool:
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

    def _step(self, attempt: _Attempt) -> int:
        """What the attempt does when its turn comes; it reads the state now (Q-MODEL-4)."""
        if attempt.kind == "enqueue":
            return self._enqueue_step(attempt)
        if attempt.kind == "close":
            return self._close_step(attempt)
        if attempt.kind == "dequeue":
            return self._dequeue_step(attempt)
        return self._dequeue_many_step(attempt)

    def _enqueue_step(self, attempt: _Attempt) -> int:
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

    def _close_step(self, attempt: _Attempt) -> int:
        # Q-CLOSE-1, Q-CLOSE-2; a timed-out close (op None) tells no one (Q-CLOSE-6).
        if self.closed:
            self._finish(attempt, Err(CancelledError, "the queue is already closed"))
        else:
            self._set_closed()
            self._finish(attempt, Ok(None))
        return _DONE

    def _dequeue_step(self, attempt: _Attempt) -> int:
        # Q-DEQ-1, RSQ-2, RSQ-3; dequeuers are never cancelled (Q-CLOSE-4).
        if self.store.size() > self.reserve:
            self._finish(attempt, Ok(self.store.dequeue(self.picks.get(attempt.op, _NO_PICK))))
            return _DONE
        if self.closed:
            self._finish(attempt, Err(OutOfRangeError, "closed and empty"))
            return _DONE
        return _WAIT

    def _dequeue_many_step(self, attempt: _Attempt) -> int:
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
                batch = self.store.batch(attempt, self.picks.get(attempt.op, _NO_PICK))
                self._finish(attempt, Ok(batch))
                return _DONE
            available -= 1
            if available == 0:
                return _PROGRESS

    def _expire(self, attempt: _Attempt) -> None:
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


# ---------------------------------------------------------------------------
# The queue model as a sequential model for coordkit.history (MODEL-8)
# ---------------------------------------------------------------------------


class _Snapshot:
    """A ``QueueModel`` with no waiting call, frozen: a state of ``QueueHistoryModel``.

    Equal and hashed by ``QueueModel.key()``; the model inside is never changed.
    """

    __slots__ = ("_key", "model")

    def __init__(self, model: QueueModel) -> None:
        self.model = model
        self._key = model.key()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Snapshot) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"({tuple(self.model.contents())!r}, {'closed' if self.model.closed else 'open'})"


_H_TIMEOUT, _H_CANCELLED = "DeadlineExceededError", "CancelledError"
_H_DEQUEUES = ("dequeue", "dequeue_many", "dequeue_up_to")


class QueueHistoryModel:
    """``QueueModel`` as a model for ``coordkit.history.check`` (MODEL-8, HIST-5).

    The history checker needs ``init()`` and ``apply(state, op)``; this adapter
    gives them from the very model the state machines use, so a history of a
    FIFOQueue, PaddingFIFOQueue (``order="fifo"``), RandomShuffleQueue
    (``order="shuffle"``, with ``min_after_dequeue``) or PriorityQueue
    (``order="priority"``) is checked against the same rules.  A state is a
    ``QueueModel`` with no waiting call; an operation takes effect by running
    it on a copy with no timeout, and a call the copy leaves waiting is
    ``BLOCKED``.  Where the implementation picks the element (RSQ-4, PQ-2), the
    recorded value is the pick, accepted if the rules allow it (MODEL-5); a
    pending dequeue may have taken any element allowed.

    Operation kinds and arguments are ``RecordingQueue``'s, as for
    ``history.FIFOModel`` (HIST-9), including the effects of timed-out, failed
    and pending calls.  ``capacity`` None (the default) is unbounded; a bound
    is meaningful only in histories without batch calls (HIST-10).
    ``history.FIFOModel`` is faster on FIFO histories (it has search hints);
    ``tests/stateful/test_models.py`` checks that the two agree.
    """

    KINDS = history.FIFOModel.KINDS

    def __init__(self, capacity: int | None = None, order: str = "fifo", min_after_dequeue: int = 0,
                 initial: Iterable[Any] = ()) -> None:
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int)
                                     or capacity < 0):
            raise ValueError(f"QueueHistoryModel(capacity) must be None or an int >= 0; got {capacity!r}")
        if order not in _STORES:
            raise ValueError(f"QueueHistoryModel(order) must be one of {sorted(_STORES)}; got {order!r}")
        self.capacity = capacity
        self.order = order
        self.min_after_dequeue = min_after_dequeue
        self._initial = tuple(initial)

    def init(self) -> _Snapshot:
        """An open queue holding ``initial`` (empty by default)."""
        model = QueueModel(-1 if self.capacity is None else self.capacity, self.order, self.min_after_dequeue)
        for element in self._initial:
            model.store.push(element)
            model.accepted += 1
        return _Snapshot(model)

    def _run(self, state: _Snapshot, op: history.Operation, pick: Any = _NO_PICK,
             arg: Any = None) -> tuple[_Snapshot | None, Outcome | None]:
        """Run ``op`` on a copy of ``state``: (new state, result), or (None, None) if it waits."""
        model = state.model.copy()
        key = object()  # no operation of the model's own can have this key
        if pick is not _NO_PICK:
            model.picks = {key: pick}
        kind = op.kind
        if kind == "enqueue":
            model.enqueue(key, op.arg)
        elif kind == "enqueue_many":
            model.enqueue_many(key, tuple(op.arg if arg is None else arg))
        elif kind == "dequeue":
            model.dequeue(key)
        elif kind in ("dequeue_many", "dequeue_up_to"):
            model.dequeue_many(key, history._check_n(op), up_to=kind == "dequeue_up_to")
        elif kind == "close":
            model.close(key, cancel=bool(op.arg))
        else:
            raise ValueError(f"QueueHistoryModel cannot apply operation kind {kind!r} (#{op.index}); "
                             f"expected one of {sorted(self.KINDS)}")
        result = model.results.pop(key, None)
        if result is None:
            return None, None
        model.picks = {}
        return _Snapshot(model), result

    @staticmethod
    def _outcome(op: history.Operation, result: Outcome) -> history.Outcome:
        if isinstance(result, Err):
            return history.Outcome.error(result.type)
        if op.kind in ("dequeue_many", "dequeue_up_to"):
            return history.Outcome.ok(tuple(result.value))
        return history.Outcome.ok(result.value)

    def apply(self, state: _Snapshot, op: history.Operation) -> tuple[Any, Any]:
        """The effect and expected outcome of ``op`` in ``state``; the recorded value is the pick."""
        if op.kind == "size":
            return state, history.Outcome.ok(state.model.size())
        if op.kind == "is_closed":
            return state, history.Outcome.ok(state.model.closed)
        pick = _NO_PICK
        outcome = op.outcome
        if outcome is not None and not outcome.is_error and op.kind in _H_DEQUEUES:
            value = outcome.value
            pick = list(value) if op.kind != "dequeue" and isinstance(value, (list, tuple)) else value
        new, result = self._run(state, op, pick)
        if new is None or result is None:
            return state, history.BLOCKED
        return new, self._outcome(op, result)

    def read_only(self, op: history.Operation) -> bool:
        """As ``FIFOModel.read_only``: the same calls leave every state unchanged (HIST-7)."""
        return history._fifo_read_only(op)

    def successors(self, state: _Snapshot, op: history.Operation) -> list[Any]:
        """Every state ``op`` may leave for its recorded outcome (HIST-5, HIST-9)."""
        outcome = op.outcome
        closed = state.model.closed
        if op.kind == "enqueue_many" and (outcome is None or outcome.is_error):
            name = None if outcome is None else outcome.value
            if name not in (None, _H_TIMEOUT, _H_CANCELLED):
                return []
            batch = tuple(op.arg)
            lengths = [0] if name != _H_CANCELLED or closed else []
            if not closed:
                lengths += range(1, len(batch) + 1)
            found = []
            for k in lengths:
                if k == 0:
                    found.append(state)
                    continue
                new, result = self._run(state, op, arg=batch[:k])
                if new is not None and isinstance(result, Ok):
                    found.append(new)
            return found
        if outcome is not None and outcome.is_error and outcome.value == _H_TIMEOUT:
            if op.kind not in self.KINDS:
                self.apply(state, op)  # raises the unknown-kind error
            return [state]
        if outcome is None and op.kind in _H_DEQUEUES and self.order != "fifo":
            return self._any_pick(state, op)
        return history._default_successors(self, state, op)

    def _any_pick(self, state: _Snapshot, op: history.Operation) -> list[Any]:
        """A pending dequeue of a queue that picks: every state an allowed pick leaves."""
        contents = sorted(state.model.contents(), key=lambda x: (x[0], repr(x)) if self.order == "priority"
                          else repr(x))
        if op.kind == "dequeue":
            picks: Iterable[Any] = [_NO_PICK, *dict.fromkeys(contents)]
        else:
            n = history._check_n(op)
            sizes = {r for r in (n, len(contents)) if 0 < r <= len(contents)}
            combinations = dict.fromkeys(c for r in sizes for c in itertools.combinations(contents, r))
            picks = [_NO_PICK, *(list(c) for c in combinations)]
        found: dict[_Snapshot, None] = {}
        for pick in picks:
            new, _ = self._run(state, op, pick)
            if new is not None:
                found[new] = None
        return list(found)


# ---------------------------------------------------------------------------
# Coordinator
# ---------------------------------------------------------------------------


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
        return (self.stop, id(self.recorded), self.joined, tuple(self.registered),
                tuple(sorted(self.alive.items(), key=repr)), self.now,
                tuple(sorted((repr(op), j.phase, j.deadline) for op, j in self.joins.items())),
                tuple(sorted((repr(op), d) for op, d in self.waits.items())))

    def pending(self) -> list[Hashable]:
        return [*self.joins, *self.waits]

    def deadlines(self) -> list[float]:
        """The deadlines of waiting ``wait_for_stop`` calls and of joins in their grace period."""
        return [d for d in self.waits.values() if d is not None] + [
            j.deadline for j in self.joins.values() if j.deadline is not None]

    def describe(self) -> str:
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


# ---------------------------------------------------------------------------
# QueueRunner
# ---------------------------------------------------------------------------


@dataclass
class _RunnerThread:
    """One thread of a runner, as the model follows it."""

    key: Hashable  # what the caller calls it
    op_index: int | None  # None: the close-on-stop thread
    state: str = "gate"  # "gate" (inside its op, waiting), "enqueue" (queue op pending), "ended"
    pending: Hashable | None = None  # the queue op it waits on
    counted: bool = True  # still counted in the runner's running threads

    def copy(self) -> _RunnerThread:
        return _RunnerThread(self.key, self.op_index, self.state, self.pending, self.counted)


class RunnerModel:
    """A QueueRunner feeding a ``QueueModel``, with an optional ``CoordinatorModel``.

    Each enqueue op is a callable that waits at a gate until it is told what
    to do on this call: enqueue an element (``instruct_enqueue``) or raise an
    exception (``instruct_raise``).  The model follows each runner thread
    through RUNNER-4: after an op returns it leaves if the coordinator asked
    for a stop; a queue-closed exception lowers the count and the last such
    exit runs the close op; another ``Exception`` goes to the coordinator or,
    without one, to ``exceptions_raised`` (and ends the thread through
    ``threading.excepthook``); a ``BaseException`` ends the thread quietly
    (RUNNER-10).  With a coordinator, a close-on-stop thread cancels pending
    enqueues once a stop is requested (RUNNER-5, RUNNER-6).

    The three models share one ``results`` mapping, so every operation key
    (consumers, closes, stop requests, ``create_threads``) is looked up in one
    place.  Exceptions the queue makes are represented by instances the model
    makes; compare those by type.
    """

    def __init__(self, queue: QueueModel, n_ops: int, coord: CoordinatorModel | None = None,
                 queue_closed_exception_types: tuple[type[BaseException], ...] = (OutOfRangeError,)) -> None:
        self.queue = queue
        self.coord = coord
        self.n_ops = n_ops
        self.closed_types = queue_closed_exception_types
        self.results: dict[Hashable, Outcome] = queue.results
        if coord is not None:
            coord.results = self.results
        self.running = 0  # RUNNER-OLD-1
        self.exceptions_raised: list[BaseException] = []
        self.threads: list[_RunnerThread] = []
        self.died: list[tuple[Hashable, BaseException]] = []
        self.sets = 0
        self._internal = 0

    def copy(self) -> RunnerModel:
        new = object.__new__(RunnerModel)
        new.__dict__.update(self.__dict__)
        new.queue = self.queue.copy()
        new.results = new.queue.results
        if self.coord is not None:
            new.coord = self.coord.copy()
            new.coord.results = new.results
        new.exceptions_raised = list(self.exceptions_raised)
        new.threads = [t.copy() for t in self.threads]
        new.died = list(self.died)
        return new

    def key(self) -> tuple[Any, ...]:
        return (self.queue.key(), None if self.coord is None else self.coord.key(), self.running,
                tuple((t.key, t.state, t.pending, t.counted) for t in self.threads),
                tuple(sorted(repr(e) for e in self.exceptions_raised)), self.sets)

    def describe(self) -> str:
        threads = ", ".join(f"{t.key}:{t.state}" for t in self.threads)
        coord = "" if self.coord is None else f"; coordinator: {self.coord.describe()}"
        return (f"running={self.running} threads=[{threads}] exceptions_raised={self.exceptions_raised}; "
                f"queue: {self.queue.describe()}{coord}")

    def alive(self) -> dict[Hashable, bool]:
        return {t.key: t.state != "ended" for t in self.threads}

    def at_gate(self) -> list[int]:
        """The op indexes whose thread waits at its gate for an instruction."""
        return [t.op_index for t in self.threads if t.state == "gate" and t.op_index is not None]

    # -- operations ---------------------------------------------------------------

    def create_threads(self, op: Hashable) -> list[Hashable]:
        """``create_threads(coord, start=True)`` (RUNNER-2, RUNNER-3, RUNNER-OLD-2).

        Returns the keys of the new threads: ``(set, i)`` for op ``i``, then
        ``(set, "close_on_stop")`` with a coordinator.
        """
        if self.running > 0:
            self.results[op] = Err(RuntimeError, "threads of the previous call are still running")
            return []
        self.running = self.n_ops
        self.exceptions_raised = []
        self.sets += 1
        new = [_RunnerThread((self.sets, i), i) for i in range(self.n_ops)]
        if self.coord is not None:
            new.append(_RunnerThread((self.sets, "close_on_stop"), None, counted=False))
        self.threads += new
        self.results[op] = Ok([t.key for t in new])
        for t in new:
            if t.op_index is not None and self.coord is not None and self.coord.stop:
                self._end(t)  # RUNNER-6: leaves before calling its op
            elif t.op_index is None and self.coord is not None and self.coord.stop:
                self._cancel(t)
        self._settle()
        return [t.key for t in new]

    def instruct_enqueue(self, op_index: int, element: Any) -> None:
        """The op waiting at gate ``op_index`` enqueues ``element`` (it may wait for room)."""
        t = self._at_gate(op_index)
        t.state, t.pending = "enqueue", self._internal_key()
        self.queue.enqueue(t.pending, element)
        self._settle()

    def instruct_raise(self, op_index: int, exc: BaseException) -> None:
        """The op waiting at gate ``op_index`` raises ``exc``."""
        self._raised(self._at_gate(op_index), exc)
        self._settle()

    def consume(self, op: Hashable) -> None:
        """A consumer calls ``queue.dequeue()``."""
        self.queue.dequeue(op)
        self._settle()

    def close_queue(self, op: Hashable, cancel: bool = False) -> None:
        """Someone else closes the fed queue (RUNNER-7c)."""
        self.queue.close(op, cancel)
        self._settle()

    def request_stop(self, op: Hashable, reason: StopReason = StopReason()) -> None:
        """Someone asks the coordinator to stop."""
        assert self.coord is not None
        self._request_stop(op, reason)
        self._settle()

    # -- the runner threads (RUNNER-4) ----------------------------------------------

    def _internal_key(self) -> tuple[str, int]:
        self._internal += 1
        return ("runner", self._internal)

    def _at_gate(self, op_index: int) -> _RunnerThread:
        for t in self.threads:
            if t.op_index == op_index and t.state == "gate":
                return t
        raise ModelError(f"no thread of op {op_index} waits at its gate")

    def _returned(self, t: _RunnerThread) -> None:
        if self.coord is not None and self.coord.stop:
            self._end(t)  # RUNNER-4 step 1, RUNNER-7b: nothing is closed
        else:
            t.state, t.pending = "gate", None

    def _raised(self, t: _RunnerThread, exc: BaseException) -> None:
        if isinstance(exc, self.closed_types):
            # RUNNER-4 step 3: the last thread out closes the queue (errors ignored).
            self._end(t)
            if self.running == 0:
                key = self._internal_key()
                self.queue.close(key)
                if key not in self.results:
                    raise ModelError("the close op would wait; not modelled")
                del self.results[key]
            return
        if isinstance(exc, Exception):
            if self.coord is not None:
                self._request_stop(None, StopReason(exc, handled=exc))  # step 4
            else:
                self.exceptions_raised.append(exc)  # step 5
                self.died.append((t.key, exc))
        else:
            self.died.append((t.key, exc))  # RUNNER-10
        self._end(t)

    def _end(self, t: _RunnerThread) -> None:
        t.state, t.pending = "ended", None
        if t.counted:
            t.counted = False
            self.running -= 1

    def _request_stop(self, op: Hashable | None, reason: StopReason) -> None:
        assert self.coord is not None
        was = self.coord.stop
        self.coord.request_stop(op, reason)
        if self.coord.stop and not was:
            for t in self.threads:
                if t.op_index is None and t.state != "ended":
                    self._cancel(t)

    def _cancel(self, t: _RunnerThread) -> None:
        """The close-on-stop thread runs the cancel op and ends (RUNNER-5)."""
        key = self._internal_key()
        self.queue.close(key, cancel=True)
        del self.results[key]
        t.state = "ended"

    def _settle(self) -> None:
        """Let every runner thread whose queue op completed go on (until none can)."""
        moved = True
        while moved:
            moved = False
            for t in self.threads:
                if t.state == "enqueue" and t.pending in self.results:
                    outcome = self.results.pop(t.pending)
                    moved = True
                    if isinstance(outcome, Ok):
                        self._returned(t)
                    else:
                        self._raised(t, outcome.type(outcome.why))
