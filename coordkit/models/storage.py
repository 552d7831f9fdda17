"""How a queue model stores its elements: FIFO, shuffled or by priority (MODEL-3, MODEL-5).

The scheduling rules every queue class shares live in ``coordkit.models.queues``;
a store only answers *which* elements come out.  Where the rules leave that
choice to the implementation (RSQ-4, PQ-2), the store takes the
implementation's pick if the rules allow it, and otherwise a choice of its own
(MODEL-5).  The rule ids are those of ``specs/queues.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from typing import Any, Protocol

from coordkit.models.outcome import ModelError

__all__ = ["NO_PICK", "ORDERS", "Attempt", "Store"]

# Passed as the pick when the implementation has made none: the store chooses.
NO_PICK: Any = object()


class Attempt:
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

    def copy(self) -> Attempt:
        """An independent copy."""
        new = Attempt.__new__(Attempt)
        new.op, new.kind, new.items, new.remaining = self.op, self.kind, self.items, self.remaining
        new.taken, new.held, new.deadline = self.taken, self.held, self.deadline
        return new

    def key(self) -> tuple[Any, ...]:
        """Everything about the attempt that decides its future."""
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

    def extend(self, elements: Iterable[Any]) -> None:
        self.items.extend(elements)

    def take(self, attempt: Attempt) -> None:
        attempt.taken += (self.items.pop(0),)
        attempt.held += 1

    def dequeue(self, pick: Any) -> Any:
        return self.items.pop(0)

    def batch(self, attempt: Attempt, pick: Any) -> list[Any]:
        batch, attempt.taken, attempt.held = list(attempt.taken), (), 0
        return batch

    def put_back(self, attempt: Attempt) -> None:
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

    def extend(self, elements: Iterable[Any]) -> None:
        self.pool.extend(elements)

    def take(self, attempt: Attempt) -> None:
        attempt.held += 1
        self.held += 1

    def dequeue(self, pick: Any) -> Any:
        if self.held:
            raise ModelError("a single dequeue completed while a batch was held")
        element = pick if pick is not NO_PICK and pick in self.pool else self.pool[0]
        self.pool.remove(element)
        return element

    def batch(self, attempt: Attempt, pick: Any) -> list[Any]:
        count = attempt.held
        self.held -= count
        attempt.held = 0
        if isinstance(pick, list) and len(pick) == count and _is_sub_multiset(pick, self.pool):
            batch = list(pick)
        else:
            batch = self.pool[:count]
        _remove_each(self.pool, batch)
        return batch

    def put_back(self, attempt: Attempt) -> None:
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

    def extend(self, elements: Iterable[Any]) -> None:
        self.items.extend(elements)

    def take(self, attempt: Attempt) -> None:
        attempt.held += 1  # resolved by batch() in the same step (PQ-4)

    def dequeue(self, pick: Any) -> Any:
        lowest = min(element[0] for element in self.items)
        if pick is NO_PICK or pick not in self.items or pick[0] != lowest:
            pick = next(element for element in self.items if element[0] == lowest)
        self.items.remove(pick)
        return pick

    def batch(self, attempt: Attempt, pick: Any) -> list[Any]:
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

    def put_back(self, attempt: Attempt) -> None:
        if attempt.held:
            raise ModelError("a PriorityQueue batch never holds elements while it waits (PQ-4)")

    def contents(self) -> list[Any]:
        return sorted(self.items, key=repr)


class Store(Protocol):
    """What ``QueueModel`` asks of its storage; ``pick`` is the implementation's choice or NO_PICK."""

    def copy(self) -> Store:
        """An independent copy (MODEL-1)."""

    def key(self) -> tuple[Any, ...]:
        """Everything about the stored elements that decides the future (MODEL-1)."""

    def size(self) -> int:
        """Elements stored, held ones not counted (Q-API-6)."""

    def push(self, element: Any) -> None:
        """Store one element."""

    def extend(self, elements: Iterable[Any]) -> None:
        """Store each element, in order, as ``push`` would."""

    def take(self, attempt: Attempt) -> None:
        """A waiting batch dequeue takes one element and holds it (Q-DEQ-3)."""

    def dequeue(self, pick: Any) -> Any:
        """Remove and return the element that comes out next (Q-DEQ-1, RSQ-4, PQ-2)."""

    def batch(self, attempt: Attempt, pick: Any) -> list[Any]:
        """The batch a complete batch dequeue returns: what it held, in order (Q-DEQ-2, PQ-4)."""

    def put_back(self, attempt: Attempt) -> None:
        """Give back what a batch dequeue held, on close or timeout (Q-DEQ-4, Q-DEQ-6)."""

    def contents(self) -> list[Any]:
        """The stored elements: in order for FIFO, sorted for the other orders."""


ORDERS: dict[str, type[Store]] = {"fifo": _FifoStore, "shuffle": _ShuffleStore, "priority": _PriorityStore}
"""The storage of each ``order`` a ``QueueModel`` takes."""
