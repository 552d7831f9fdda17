"""Reference implementations of TensorFlow 1.x's queues.

``FIFOQueue``, ``RandomShuffleQueue``, ``PaddingFIFOQueue`` and ``PriorityQueue``
behave as TensorFlow's queue kernels do, down to the surprising parts: a plain
``close()`` waits behind the enqueues already in line, ``enqueue_many`` is not
atomic, ``dequeue_many`` takes elements as they arrive and gives them back on
close, ties in a ``PriorityQueue`` come out in libstdc++ heap order.  The rules,
with their ids and the deliberate differences from TensorFlow, are in
``specs/queues.md``.

The four classes share one core in two layers.  ``_QueueKernel`` models
TensorFlow's ``queue_base.cc``: every call that cannot finish at once becomes an
*attempt* in one of two waiter lists (enqueues and plain closes; dequeues), each
list is served strictly in arrival order from its head, and after every change a
flush loop runs both lists until neither can move.  ``QueueBase`` is the API on
top: argument checks, the fast path of a call nobody is ahead of, and entering
the line.  Subclasses only say how elements are stored and picked (four hooks,
as in CPython's ``queue.py``).  What an element is (TensorFlow's dtypes, shapes
and padding) lives in ``coordkit._queue_elements``.

Everything that locks, waits or reads the clock goes through ``coordkit.sync``
(a waiting call parks in a ``coordkit._waiting.WaitQueue``), so that the
controlled scheduler can run the same code one thread at a time with virtual
time.  Create a queue inside the run that uses it.
"""

from __future__ import annotations

import math
import operator
import random
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordkit import sync
from coordkit._queue_elements import AnyObject, Shape, priority_signature, signature
from coordkit._waiting import WaitQueue, deadline_after
from coordkit.errors import (
    CancelledError,
    DeadlineExceededError,
    InvalidArgumentError,
    OutOfRangeError,
)

__all__ = [
    "FIFOQueue",
    "PaddingFIFOQueue",
    "PriorityQueue",
    "QueueBase",
    "QueueStatistics",
    "RandomShuffleQueue",
]

_TIMED_OUT = "Timed out waiting for notification"

# The capacity that stands for "unbounded" (TensorFlow uses INT_MAX).
_UNBOUNDED = sys.maxsize

# The deadline of a call with timeout=0: it has always passed, and such a call
# never joins a waiter list (Q-TIMEOUT-3).
_NO_WAIT = -math.inf

# What a step of an attempt achieved (Q-MODEL-2).
_NO_PROGRESS = 0  # nothing changed; the list stops here
_PROGRESS = 1  # something changed, but the attempt still waits; the list stops here
_COMPLETE = 2  # the attempt is finished (successfully or not); try the next one


# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------


def _as_int(argument: str, value: Any) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{argument} must be an int, got {value!r} of type '{type(value).__name__}'")
    return operator.index(value)


def _deadline(timeout: Any) -> float | None:
    """The monotonic deadline of a ``timeout=`` in seconds (Q-TIMEOUT-1, Q-ARG-3)."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(
            f"timeout must be a number of seconds or None, got {timeout!r} "
            f"of type '{type(timeout).__name__}'"
        )
    if not timeout >= 0:  # also rejects NaN
        raise InvalidArgumentError(
            f"timeout must be a non-negative number of seconds or None, got {timeout!r}"
        )
    if timeout == 0:
        return _NO_WAIT
    return deadline_after(timeout)


# ---------------------------------------------------------------------------
# Snapshots and attempts
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueStatistics:
    """A consistent snapshot of a queue, for invariant checkers and tests."""

    size: int
    """Elements stored in the queue (what ``size()`` returns)."""
    closed: bool
    """Whether a close has taken effect (what ``is_closed()`` returns)."""
    pending_enqueues: int
    """``enqueue``/``enqueue_many`` calls waiting in the enqueue list."""
    pending_dequeues: int
    """``dequeue``/``dequeue_many``/``dequeue_up_to`` calls waiting in the dequeue list."""
    pending_closes: int
    """Plain ``close()`` calls waiting in the enqueue list (Q-CLOSE-1)."""
    held: int
    """Elements taken by waiting ``dequeue_many``/``dequeue_up_to`` calls, not in ``size``."""


class _Attempt:
    """One call waiting in a waiter list (Q-MODEL-1)."""

    __slots__ = (
        "done",
        "error",
        "finished",
        "is_close",
        "items",
        "pushed",
        "remaining",
        "result",
        "step",
        "taken",
        "up_to",
    )

    def __init__(self, step: Callable[[_Attempt], int]) -> None:
        self.step = step  # the queue's step function for this kind of call
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        # The caller's WaitQueue ("this call is finished"), notified once when the
        # flush loop finishes the attempt; made only when the caller has to wait.
        self.finished: Any = None
        self.is_close = False
        self.items: list[Any] = []  # enqueue: the elements to push
        self.pushed = 0  # enqueue: how many of them are in the queue already
        self.remaining = 0  # dequeue_many: how many it still needs
        self.up_to = False  # dequeue_up_to rather than dequeue_many
        self.taken: list[Any] = []  # dequeue_many: elements taken so far, in order


# ---------------------------------------------------------------------------
# The kernel: waiter lists and the flush loop
# ---------------------------------------------------------------------------


class _QueueKernel:
    """TensorFlow's queue kernel (``queue_base.cc``): the stored elements, two
    waiter lists and the flush loop that serves them (Q-MODEL-1..4).

    Every call that cannot finish at once becomes an attempt at the back of one
    list; only the head of a list may act, and after every change ``_flush`` runs
    both lists until neither moves.  Every method but ``__init__`` is called with
    the mutex held.  Subclasses say how elements are stored and picked (the four
    storage hooks) and how TensorFlow names them in messages.
    """

    # TensorFlow's class names in error messages: enqueue and single dequeue use
    # _class_name, dequeue_many and dequeue_up_to use _batch_class_name (PAD-7).
    _class_name = "FIFOQueue"
    _batch_class_name = "FIFOQueue"
    # A PriorityQueue dequeue_many takes nothing until it can take all (PQ-4).
    _whole_batches = False

    def __init__(self, capacity: int, name: str) -> None:
        self._name = name
        self._capacity = capacity
        # One lock, as in CPython's queue.py: it must be held whenever the stored
        # elements, the flags or the waiter lists are read or changed.  There is
        # no queue-wide condition: a caller that has to wait parks in a WaitQueue
        # of its own over this lock (_Attempt.finished, "this call is finished"),
        # notified once when the flush loop finishes its attempt, so that a
        # completion wakes only its owner.
        self._mutex = sync.Lock()
        # Attempts of enqueue, enqueue_many and plain close, in arrival order.
        self._enqueue_waiters: deque[_Attempt] = deque()
        # Attempts of dequeue, dequeue_many and dequeue_up_to, in arrival order.
        self._dequeue_waiters: deque[_Attempt] = deque()
        # Set when a close takes effect; never cleared.
        self._closed = False
        # How many elements a dequeue must leave in the open queue
        # (min_after_dequeue for a RandomShuffleQueue, else 0; 0 once closed).
        self._reserve = 0
        self._init_storage()

    # -- storage hooks -----------------------------------------------------------

    def _init_storage(self) -> None:
        """Create ``self._queue``, a sized container of the stored elements."""
        self._queue: Any = deque()

    def _put(self, element: Any) -> None:
        self._queue.append(element)

    def _get(self) -> Any:
        return self._queue.popleft()

    def _put_back(self, taken: list[Any]) -> None:
        """Return the elements of an unfinished dequeue_many, first taken at the front."""
        self._queue.extendleft(reversed(taken))

    # -- the flush loop and the waiting --------------------------------------------

    def _set_closed(self) -> None:
        self._closed = True
        self._reserve = 0  # min_after_dequeue no longer applies (RSQ-3)

    def _finish(self, attempt: _Attempt) -> None:
        attempt.done = True
        if attempt.finished is not None:
            attempt.finished.notify()

    def _flush(self) -> None:
        """Run both waiter lists until neither makes progress (Q-MODEL-2)."""
        moved = True
        while moved:
            moved = self._run(self._enqueue_waiters)
            moved = self._run(self._dequeue_waiters) or moved

    def _run(self, waiters: deque[_Attempt]) -> bool:
        """Run one list from its head; only the head may act (Q-MODEL-3)."""
        moved = False
        while waiters:
            attempt = waiters[0]
            outcome = attempt.step(attempt)
            if outcome != _COMPLETE:
                return moved or outcome == _PROGRESS
            waiters.popleft()
            self._finish(attempt)
            moved = True
        return moved

    def _wait_in_line(self, waiters: deque[_Attempt], attempt: _Attempt, deadline: float | None) -> Any:
        """Put ``attempt`` at the back of ``waiters`` and wait until it is finished.

        With ``timeout=0`` a call that would have to wait fails at once: someone
        is ahead of it, or the queue is open (Q-TIMEOUT-3).  On a closed queue
        it joins the line and the flush loop finishes it with its error.
        """
        if deadline == _NO_WAIT and (waiters or not self._closed):
            raise DeadlineExceededError(_TIMED_OUT)
        waiters.append(attempt)
        self._flush()
        return self._await(attempt, deadline)

    def _await(self, attempt: _Attempt, deadline: float | None) -> Any:
        """Wait until the flush loop finishes ``attempt``; return its result or raise.

        At the deadline (or on any exception, such as KeyboardInterrupt, while
        waiting) the attempt is withdrawn first, so nothing is lost.
        """
        if not attempt.done:
            attempt.finished = WaitQueue(self._mutex)
            if not attempt.finished.wait(
                lambda: attempt.done, deadline, withdraw=lambda: self._withdraw(attempt)
            ):
                raise DeadlineExceededError(_TIMED_OUT)
        if attempt.error is not None:
            raise attempt.error
        return attempt.result

    def _withdraw(self, attempt: _Attempt) -> None:
        """Take back an unfinished attempt whose caller stopped waiting."""
        attempt.finished = None
        if attempt.is_close:
            return  # a close stays in line and still takes effect (DEV-Q-7)
        if attempt.step == self._enqueue_step:
            self._enqueue_waiters.remove(attempt)  # pushed elements stay (Q-ENQ-3)
        else:
            self._dequeue_waiters.remove(attempt)
            if attempt.taken:
                self._put_back(attempt.taken)  # TensorFlow drops them (DEV-Q-1)
                attempt.taken = []
        # The attempts behind it may be able to move now.
        self._flush()

    # -- step functions: what an attempt does when its turn comes (Q-MODEL-4) -----

    def _enqueue_step(self, attempt: _Attempt) -> int:
        if self._closed:
            attempt.error = CancelledError(f"{self._class_name} '{self._name}' is closed.")
            return _COMPLETE
        outcome = _NO_PROGRESS
        items = attempt.items
        while len(self._queue) < self._capacity:
            self._put(items[attempt.pushed])
            attempt.pushed += 1
            if attempt.pushed == len(items):
                return _COMPLETE
            outcome = _PROGRESS
        return outcome

    def _close_step(self, attempt: _Attempt) -> int:
        if self._closed:
            attempt.error = CancelledError(f"Queue '{self._name}' is already closed.")
        else:
            self._set_closed()
        return _COMPLETE

    def _dequeue_step(self, attempt: _Attempt) -> int:
        if len(self._queue) > self._reserve:
            attempt.result = self._get()
            return _COMPLETE
        if self._closed:
            attempt.error = OutOfRangeError(
                f"{self._class_name} '{self._name}' is closed and has insufficient elements "
                f"(requested 1, current size {len(self._queue)})"
            )
            return _COMPLETE
        return _NO_PROGRESS

    def _dequeue_many_step(self, attempt: _Attempt) -> int:
        size = len(self._queue)
        if self._closed and size < attempt.remaining:
            # Not enough will ever come: give back what was taken (Q-DEQ-4).
            if attempt.taken:
                self._put_back(attempt.taken)
                attempt.taken = []
            if attempt.up_to and self._queue:
                # Take everything that is left instead (Q-DEQ-5, PQ-5).
                attempt.remaining = len(self._queue)
            else:
                attempt.error = OutOfRangeError(
                    f"{self._batch_class_name} '{self._name}' is closed and has insufficient "
                    f"elements (requested {attempt.remaining}, current size {size})"
                )
                return _COMPLETE
        available = len(self._queue) - self._reserve
        if available <= 0 or (self._whole_batches and available < attempt.remaining):
            return _NO_PROGRESS
        taken = attempt.taken
        while True:
            taken.append(self._get())
            attempt.remaining -= 1
            if attempt.remaining == 0:
                attempt.result = taken
                attempt.taken = []
                return _COMPLETE
            available -= 1
            if available == 0:
                return _PROGRESS


# ---------------------------------------------------------------------------
# The API
# ---------------------------------------------------------------------------


class QueueBase(_QueueKernel):
    """The API shared by every queue class: enqueue, dequeue, close, timeouts.

    Each call checks its arguments and converts its elements before it takes the
    lock, finishes at once when nobody is ahead of it and it can (the fast path),
    and otherwise waits in line in the kernel.  Subclasses set the class-level
    names used in error messages and override the storage hooks ``_init_storage``,
    ``_put``, ``_get`` and ``_put_back``.
    """

    _no_shapes_message = (
        "FIFOQueue's DequeueMany and DequeueUpTo require the components to have "
        "specified shapes."
    )

    def __init__(self, capacity: int, signature: Any, name: str) -> None:
        capacity = _as_int("capacity", capacity)
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {name!r}")
        super().__init__(capacity if capacity >= 0 else _UNBOUNDED, name)
        # What an element is: how to convert, check, unpack and batch it.
        self._sig = signature
        # Elements are stored exactly as given (no conversion, no unpacking).
        self._raw = type(signature) is AnyObject
        sync.shown(self)  # a recorded replay shows its items and closed flag at each step

    # -- properties --------------------------------------------------------------

    @property
    def name(self) -> str:
        """The name given at construction; error messages quote it."""
        return self._name

    @property
    def dtypes(self) -> list[str] | None:
        """The component dtype names, or None for an untyped queue."""
        return self._sig.dtypes

    @property
    def shapes(self) -> list[Shape | None] | None:
        """The component shapes (None where unknown), or None for an untyped queue."""
        return self._sig.shapes

    @property
    def names(self) -> list[str] | None:
        """The component names, or None."""
        return self._sig.names

    def _ck_state(self) -> dict[str, Any]:
        """What coordkit's viewer shows of the queue: plain values, read without the lock (a
        snapshot is taken while every other thread is stopped at a scheduling point)."""
        return {"panel": "queue", "kind": type(self).__name__, "label": f"{self._name!r}",
                "items": list(self._queue), "size": len(self._queue),
                "capacity": None if self._capacity == _UNBOUNDED else self._capacity,
                "closed": self._closed, "pending enqueues": len(self._enqueue_waiters),
                "pending dequeues": len(self._dequeue_waiters)}

    def __repr__(self) -> str:
        with self._mutex:
            size, closed = len(self._queue), self._closed
        return f"<{type(self).__name__} {self._name!r} size={size} closed={closed}>"

    # -- enqueue -----------------------------------------------------------------

    def enqueue(self, vals: Any, timeout: float | None = None) -> None:
        """Add one element, waiting while the queue is full.

        Raises CancelledError if the queue is closed when this call's turn comes,
        or if ``close(cancel_pending_enqueues=True)`` runs while it waits, and
        DeadlineExceededError if ``timeout`` seconds pass first (``timeout=0``:
        never wait).  Calls waiting for room are served in arrival order.
        """
        sync.note("enqueue", self)
        element = vals if self._raw else self._sig.element(vals)
        deadline = None if timeout is None else _deadline(timeout)
        with self._mutex:
            if not self._enqueue_waiters and not self._closed and len(self._queue) < self._capacity:
                self._put(element)
                if self._dequeue_waiters:
                    self._flush()
                return
            self._wait_in_enqueue_list([element], deadline)

    def enqueue_many(self, vals: Any, timeout: float | None = None) -> None:
        """Add a batch of elements one at a time, as room appears.

        Not atomic: consumers may take the first elements before the last are in,
        a batch larger than the capacity works, and the elements already pushed
        stay if the call fails or times out half way.  An empty batch succeeds at
        once, even on a closed queue.  Errors as for ``enqueue``.
        """
        sync.note("enqueue_many", self)
        items = self._sig.elements(vals)
        deadline = None if timeout is None else _deadline(timeout)
        if not items:
            return
        with self._mutex:
            if (
                not self._enqueue_waiters
                and not self._closed
                and len(self._queue) + len(items) <= self._capacity
            ):
                for element in items:
                    self._put(element)
                if self._dequeue_waiters:
                    self._flush()
                return
            self._wait_in_enqueue_list(items, deadline)

    def _wait_in_enqueue_list(self, items: list[Any], deadline: float | None) -> None:
        attempt = _Attempt(self._enqueue_step)
        attempt.items = items
        self._wait_in_line(self._enqueue_waiters, attempt, deadline)

    # -- dequeue -----------------------------------------------------------------

    def dequeue(self, timeout: float | None = None) -> Any:
        """Remove and return one element, waiting until there is one.

        Raises OutOfRangeError once the queue is closed and empty, and
        DeadlineExceededError if ``timeout`` seconds pass first (``timeout=0``:
        never wait).  Calls waiting for elements are served in arrival order.
        """
        sync.note("dequeue", self)
        deadline = None if timeout is None else _deadline(timeout)
        with self._mutex:
            if not self._dequeue_waiters and len(self._queue) > self._reserve:
                element = self._get()
                if self._enqueue_waiters:
                    self._flush()
            else:
                attempt = _Attempt(self._dequeue_step)
                element = self._wait_in_line(self._dequeue_waiters, attempt, deadline)
        return element if self._raw else self._sig.unpack(element)

    def dequeue_many(self, n: int, timeout: float | None = None) -> Any:
        """Remove and return exactly ``n`` elements as one batch.

        While waiting, the call takes elements as they arrive (they leave
        ``size()``) and holds up every later dequeue.  If the queue is or becomes
        closed with too few elements, it puts back what it took, at the front in
        order, and raises OutOfRangeError.  A timeout puts them back too.
        """
        sync.note("dequeue_many", self)
        return self._dequeue_batch(n, timeout, up_to=False)

    def dequeue_up_to(self, n: int, timeout: float | None = None) -> Any:
        """Like ``dequeue_many`` while the queue is open; once it is closed,
        return whatever is left (1 to ``n`` elements), or raise OutOfRangeError
        if nothing is left."""
        sync.note("dequeue_up_to", self)
        return self._dequeue_batch(n, timeout, up_to=True)

    def _dequeue_batch(self, n: int, timeout: float | None, up_to: bool) -> Any:
        n = _as_int("n", n)
        if n < 0:
            op = "DequeueUpToOp" if up_to else "DequeueManyOp"
            raise InvalidArgumentError(f"{op} requested {n} < 0 elements")
        if not self._sig.can_batch:
            raise InvalidArgumentError(self._no_shapes_message)
        deadline = None if timeout is None else _deadline(timeout)
        if n == 0:
            return self._sig.batch([])
        with self._mutex:
            if not self._dequeue_waiters and len(self._queue) - self._reserve >= n:
                taken = [self._get() for _ in range(n)]
                if self._enqueue_waiters:
                    self._flush()
            else:
                attempt = _Attempt(self._dequeue_many_step)
                attempt.remaining = n
                attempt.up_to = up_to
                taken = self._wait_in_line(self._dequeue_waiters, attempt, deadline)
        return self._sig.batch(taken)

    # -- close -------------------------------------------------------------------

    def close(self, cancel_pending_enqueues: bool = False, timeout: float | None = None) -> None:
        """Close the queue: later enqueues fail; dequeues drain what is left.

        A plain close waits in line behind the enqueues already waiting, takes
        effect after them (``is_closed()`` is False until then), and raises
        CancelledError if the queue is already closed by then.  If ``timeout``
        seconds pass first it raises DeadlineExceededError, but stays in line and
        still takes effect later.

        ``cancel_pending_enqueues=True`` closes at once and never fails: every
        waiting enqueue (and waiting plain close) fails with CancelledError.
        Waiting dequeues are never cancelled; they get what is left or
        OutOfRangeError.
        """
        sync.note("close", self)
        if not isinstance(cancel_pending_enqueues, bool):  # a str like "no" would be truthy
            raise TypeError(
                f"cancel_pending_enqueues must be a bool, got {cancel_pending_enqueues!r}"
            )
        deadline = None if timeout is None else _deadline(timeout)
        with self._mutex:
            if cancel_pending_enqueues:
                self._set_closed()
                for attempt in self._enqueue_waiters:
                    attempt.error = CancelledError("Enqueue operation was cancelled")
                    self._finish(attempt)
                self._enqueue_waiters.clear()
                self._flush()
                return
            if deadline == _NO_WAIT and self._enqueue_waiters:
                raise DeadlineExceededError(_TIMED_OUT)
            attempt = _Attempt(self._close_step)
            attempt.is_close = True
            self._enqueue_waiters.append(attempt)
            self._flush()
            self._await(attempt, deadline)

    # -- state: size, closed flag, snapshot --------------------------------------

    def is_closed(self) -> bool:
        """Whether a close has taken effect (a queued plain close has not)."""
        sync.note("is_closed", self)
        with self._mutex:
            return self._closed

    def size(self) -> int:
        """The number of elements stored; elements held by a waiting dequeue_many
        and elements of a waiting enqueue are not counted."""
        with self._mutex:
            return len(self._queue)

    def statistics(self) -> QueueStatistics:
        """A consistent snapshot of size, closed flag and waiters."""
        with self._mutex:
            closes = sum(1 for attempt in self._enqueue_waiters if attempt.is_close)
            return QueueStatistics(
                size=len(self._queue),
                closed=self._closed,
                pending_enqueues=len(self._enqueue_waiters) - closes,
                pending_dequeues=len(self._dequeue_waiters),
                pending_closes=closes,
                held=sum(len(attempt.taken) for attempt in self._dequeue_waiters),
            )


# ---------------------------------------------------------------------------
# The four queue classes
# ---------------------------------------------------------------------------


class FIFOQueue(QueueBase):
    """A queue that hands out elements in the order they were enqueued.

    ``capacity < 0`` means unbounded; ``capacity == 0`` is allowed but every
    enqueue then waits.  Without ``dtypes`` an element is any Python object;
    with them, TensorFlow's component model applies (see ``specs/queues.md``).
    """

    def __init__(
        self,
        capacity: int,
        dtypes: Any = None,
        shapes: Any = None,
        names: Any = None,
        name: str = "fifo_queue",
    ) -> None:
        super().__init__(capacity, signature(dtypes, shapes, names), name)


class PaddingFIFOQueue(QueueBase):
    """A FIFOQueue whose shapes may have None dimensions.

    ``dequeue_many`` and ``dequeue_up_to`` pad every component to the largest
    size in the batch along its None dimensions, with 0, 0.0, False or b"";
    a single ``dequeue`` returns the element as it was enqueued.
    """

    _batch_class_name = "PaddingFIFOQueue"

    def __init__(
        self,
        capacity: int,
        dtypes: Any,
        shapes: Any,
        names: Any = None,
        name: str = "padding_fifo_queue",
    ) -> None:
        if dtypes is None:
            raise TypeError("PaddingFIFOQueue needs dtypes; got dtypes=None")
        super().__init__(capacity, signature(dtypes, shapes, names, partial=True), name)


class RandomShuffleQueue(QueueBase):
    """A queue that hands out a uniformly random stored element.

    While the queue is open a dequeue leaves at least ``min_after_dequeue``
    elements behind; once it is closed everything can be dequeued.  The same
    ``seed`` gives the same order; ``seed=None`` gives a fresh order each time.
    """

    _class_name = _batch_class_name = "RandomShuffleQueue"
    _no_shapes_message = (
        "RandomShuffleQueue's DequeueMany and DequeueUpTo require the components to "
        "have specified shapes."
    )

    def __init__(
        self,
        capacity: int,
        min_after_dequeue: int,
        dtypes: Any = None,
        shapes: Any = None,
        names: Any = None,
        seed: int | None = None,
        name: str = "random_shuffle_queue",
    ) -> None:
        min_after_dequeue = _as_int("min_after_dequeue", min_after_dequeue)
        if seed is not None:
            seed = _as_int("seed", seed)
        super().__init__(capacity, signature(dtypes, shapes, names), name)
        if min_after_dequeue < 0:
            raise InvalidArgumentError(f"min_after_dequeue {min_after_dequeue} must be >= 0")
        if min_after_dequeue >= self._capacity:
            raise InvalidArgumentError(
                f"min_after_dequeue {min_after_dequeue} must be < capacity {self._capacity}"
            )
        self._reserve = min_after_dequeue
        self._random = random.Random(seed)

    def _init_storage(self) -> None:
        self._queue = []

    def _get(self) -> Any:
        # Swap-remove a random element (RSQ-4).
        queue = self._queue
        index = self._random.randrange(len(queue))
        last = queue.pop()
        if index == len(queue):
            return last
        element = queue[index]
        queue[index] = last
        return element

    def _put_back(self, taken: list[Any]) -> None:
        self._queue.extend(reversed(taken))  # appended, as the kernel does


class PriorityQueue(QueueBase):
    """A queue that hands out the element with the smallest priority first.

    Every element starts with an int priority: untyped, an element is a tuple
    ``(priority, ...)``; typed, ``types`` lists the other components and the
    dtypes become ``["int64", *types]``.  Ties come out in the order of
    libstdc++'s ``std::priority_queue``, as in TensorFlow (not FIFO).  A
    ``dequeue_many(n)`` takes nothing until ``n`` elements are stored.
    """

    _class_name = _batch_class_name = "PriorityQueue"
    _no_shapes_message = (
        "PriorityQueue's DequeueMany requires the components to have specified shapes."
    )
    _whole_batches = True

    def __init__(
        self,
        capacity: int,
        types: Any = None,
        shapes: Any = None,
        names: Any = None,
        name: str = "priority_queue",
    ) -> None:
        super().__init__(capacity, priority_signature(types, shapes, names), name)

    def _init_storage(self) -> None:
        self._queue = []  # a heap ordered by element[0], in libstdc++'s layout

    # libstdc++'s push_heap and pop_heap, with std::priority_queue's comparison
    # "a goes after b" being a[0] > b[0].  heapq would order ties differently.

    def _sift_up(self, hole: int, top: int, element: Any) -> None:
        heap = self._queue
        priority = element[0]
        parent = (hole - 1) // 2
        while hole > top and heap[parent][0] > priority:
            heap[hole] = heap[parent]
            hole = parent
            parent = (hole - 1) // 2
        heap[hole] = element

    def _put(self, element: Any) -> None:
        self._queue.append(element)
        self._sift_up(len(self._queue) - 1, 0, element)

    def _get(self) -> Any:
        heap = self._queue
        length = len(heap) - 1  # the heap shrinks to this
        if length == 0:
            return heap.pop()
        top, element = heap[0], heap[length]
        heap[length] = top
        # __adjust_heap: move the hole at 0 down to a leaf, then sift element up.
        hole = child = 0
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if heap[child][0] > heap[child - 1][0]:
                child -= 1
            heap[hole] = heap[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            heap[hole] = heap[child - 1]
            hole = child - 1
        self._sift_up(hole, 0, element)
        return heap.pop()

    def _put_back(self, taken: list[Any]) -> None:
        for element in taken:
            self._put(element)
