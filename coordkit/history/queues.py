"""Queues in histories: recording a queue's calls, and the queue model as a history model.

``RecordingQueue`` records every call of a queue (HIST-3, HIST-4).
``QueueHistoryModel`` offers the pure ``coordkit.models.QueueModel``, the
model the state machines of ``coordkit.stateful`` use, to ``check`` (MODEL-8,
HIST-5): what a call does is the model's rule, and only the model's.  This
module adds what a history cannot show (which effects a call that timed out,
failed part way or is still pending may have had: HIST-9), and ``FIFOModel``
adds search hints for FIFO queues (HIST-7), which change the speed of the
search, never its verdict.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from coordkit.history.records import BLOCKED, History, Operation, Outcome
from coordkit.history.search import SequentialModel, default_successors
from coordkit.models.outcome import Err, Ok
from coordkit.models.outcome import Outcome as ModelOutcome
from coordkit.models.queues import QueueModel
from coordkit.models.storage import NO_PICK, ORDERS

__all__ = ["QueueHistoryModel", "RecordingQueue"]


# ---------------------------------------------------------------------------
# A recording wrapper for queues
# ---------------------------------------------------------------------------


class RecordingQueue:
    """Wraps a coordkit queue (or any object with its methods) and records every call.

    Batches are recorded as tuples: the ``enqueue_many`` argument and the
    ``dequeue_many``/``dequeue_up_to`` results.  A plain ``close`` that times out
    is recorded as pending, since it still takes effect later (Q-CLOSE-6, HIST-4).
    Errors are recorded and re-raised.  ``key`` maps each element to what the
    history stores (for example the id inside a typed element); batches are
    mapped element by element with ``batch_key``, which defaults to mapping
    ``key`` over a list of elements.
    """

    def __init__(
        self,
        queue: Any,
        history: History,
        key: Callable[[Any], Any] | None = None,
        batch_key: Callable[[Any], Sequence[Any]] | None = None,
    ) -> None:
        if not isinstance(history, History):
            raise TypeError(f"RecordingQueue(history) must be a History; got {history!r}")
        if key is not None and not callable(key):
            raise TypeError(f"RecordingQueue(key) must be callable or None; got {key!r}")
        if batch_key is not None and not callable(batch_key):
            raise TypeError(f"RecordingQueue(batch_key) must be callable or None; got {batch_key!r}")
        self.queue = queue
        self.history = history
        self._key = key if key is not None else (lambda x: x)
        self._batch_key = batch_key if batch_key is not None else (lambda b: [self._key(x) for x in b])

    def enqueue(self, vals: Any, timeout: float | None = None) -> None:
        """``queue.enqueue``, recorded as ``enqueue(key(vals))``."""
        with self.history.record("enqueue", self._key(vals)):
            self.queue.enqueue(vals, timeout=timeout)

    def enqueue_many(self, vals: Any, timeout: float | None = None) -> None:
        """``queue.enqueue_many``, recorded with the batch as a tuple."""
        with self.history.record("enqueue_many", tuple(self._batch_key(vals))):
            self.queue.enqueue_many(vals, timeout=timeout)

    def dequeue(self, timeout: float | None = None) -> Any:
        """``queue.dequeue``, recorded as returning ``key(element)``."""
        with self.history.record("dequeue") as op:
            value = self.queue.dequeue(timeout=timeout)
            op.ok(self._key(value))
            return value

    def _batch(self, kind: str, n: int, timeout: float | None) -> Any:
        with self.history.record(kind, n) as op:
            value = getattr(self.queue, kind)(n, timeout=timeout)
            op.ok(tuple(self._batch_key(value)))
            return value

    def dequeue_many(self, n: int, timeout: float | None = None) -> Any:
        """``queue.dequeue_many``, recorded as returning a tuple of keys."""
        return self._batch("dequeue_many", n, timeout)

    def dequeue_up_to(self, n: int, timeout: float | None = None) -> Any:
        """``queue.dequeue_up_to``, recorded as returning a tuple of keys."""
        return self._batch("dequeue_up_to", n, timeout)

    def size(self) -> int:
        """``queue.size``, recorded."""
        with self.history.record("size") as op:
            value = self.queue.size()
            op.ok(value)
            return value

    def is_closed(self) -> bool:
        """``queue.is_closed``, recorded."""
        with self.history.record("is_closed") as op:
            value = self.queue.is_closed()
            op.ok(value)
            return value

    def close(self, cancel_pending_enqueues: bool = False, timeout: float | None = None) -> None:
        """``queue.close``, recorded with ``cancel_pending_enqueues`` as the argument."""
        with self.history.record("close", bool(cancel_pending_enqueues)) as op:
            try:
                self.queue.close(cancel_pending_enqueues=cancel_pending_enqueues, timeout=timeout)
            except TimeoutError:
                if not cancel_pending_enqueues:
                    op.pending()
                raise


# ---------------------------------------------------------------------------
# The queue model as a history model (MODEL-8, HIST-9)
# ---------------------------------------------------------------------------

_TIMEOUT = "DeadlineExceededError"
_CANCELLED = "CancelledError"
_OUT_OF_RANGE = "OutOfRangeError"
DEQUEUES = ("dequeue", "dequeue_many", "dequeue_up_to")
BATCH_DEQUEUES = ("dequeue_many", "dequeue_up_to")
_READS = ("size", "is_closed")
_KEY = object()  # the key of the one call a model copy runs: no key of the model's own


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


def check_n(op: Operation) -> int:
    """The ``n`` of a batch dequeue: an int of at least 0 (HIST-11)."""
    n = op.arg
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"{op.kind}(n) needs an int n >= 0 as the operation's arg; got {n!r} (#{op.index})")
    return n


class QueueHistoryModel(SequentialModel):
    """The pure ``coordkit.models.QueueModel`` as a model for ``check`` (MODEL-8, HIST-5, HIST-9).

    Every rule of what a call does is the queue model's, the one the state
    machines of ``coordkit.stateful`` use: a state is a ``QueueModel`` with no
    waiting call, and an operation takes effect by running it on a copy with
    no timeout; a call the copy leaves waiting is ``BLOCKED``.  So a history
    of a FIFOQueue or PaddingFIFOQueue (``order="fifo"``), a
    RandomShuffleQueue (``order="shuffle"``, with ``min_after_dequeue``) or a
    PriorityQueue (``order="priority"``) is checked against the same rules.
    Where the implementation picks the element (RSQ-4, PQ-2), the recorded
    value is the pick, accepted if the rules allow it (MODEL-5); a pending
    dequeue may have taken any element allowed.

    What this adapter adds is what a history cannot show (HIST-9): a call that
    raised DeadlineExceededError changed nothing, except an ``enqueue_many``,
    which may have stored any prefix of its batch first (Q-ENQ-3,
    Q-TIMEOUT-2); one that raised CancelledError stored a non-empty prefix
    while the queue was open, or nothing once it was closed; a pending one
    may have stored any prefix.

    Operation kinds and arguments are ``RecordingQueue``'s (``KINDS``).
    ``capacity`` None (the default) is unbounded; a bound is meaningful only
    in histories without batch calls (HIST-10).  ``FIFOModel`` is the same
    model for FIFO queues, with ``(items, closed)`` states and search hints.
    """

    KINDS = frozenset(
        {"enqueue", "enqueue_many", "dequeue", "dequeue_many", "dequeue_up_to", "size", "is_closed", "close"}
    )

    def __init__(self, capacity: int | None = None, order: str = "fifo", min_after_dequeue: int = 0,
                 initial: Iterable[Any] = ()) -> None:
        name = type(self).__name__
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int)
                                     or capacity < 0):
            raise ValueError(f"{name}(capacity) must be None or an int >= 0; got {capacity!r}")
        if order not in ORDERS:
            raise ValueError(f"{name}(order) must be one of {sorted(ORDERS)}; got {order!r}")
        self.capacity = capacity
        self.order = order
        self.min_after_dequeue = min_after_dequeue
        self._initial = tuple(initial)

    # -- states: how a state and a QueueModel at rest stand for each other -------

    def _at_rest(self, contents: Iterable[Any], closed: bool) -> QueueModel:
        capacity = -1 if self.capacity is None else self.capacity
        return QueueModel.at_rest(capacity, self.order, self.min_after_dequeue, contents, closed)

    def _peek(self, state: Any) -> QueueModel:
        """The model in ``state``, to read, never to change."""
        return state.model

    def _closed(self, state: Any) -> bool:
        """Whether the queue is closed in ``state``."""
        return self._peek(state).closed

    def _model(self, state: Any) -> QueueModel:
        """A model in ``state`` that may be changed."""
        return self._peek(state).copy()

    def _state(self, model: QueueModel) -> Any:
        """The state a model at rest stands for."""
        return _Snapshot(model)

    def init(self) -> Any:
        """An open queue holding ``initial`` (empty by default)."""
        return self._state(self._at_rest(self._initial, False))

    # -- running one call on the model ----------------------------------------------

    def _run(self, state: Any, op: Operation, pick: Any = NO_PICK,
             arg: Any = None) -> tuple[Any, ModelOutcome | None]:
        """Run ``op`` on a model in ``state``: (new state, result), or (None, None) if it waits.

        ``pick`` is the element (or batch) the implementation returned (MODEL-5);
        ``arg``, when not None, replaces the operation's argument.
        """
        if op.kind in _READS:
            return state, self._call(self._peek(state), op, op.arg)
        model = self._model(state)
        if pick is not NO_PICK:
            model.picks = {_KEY: pick}
        result = self._call(model, op, op.arg if arg is None else arg)
        if result is None:
            return None, None
        model.picks = {}
        return self._state(model), result

    def _call(self, model: QueueModel, op: Operation, arg: Any) -> ModelOutcome | None:
        """Call ``op``'s method of ``model`` with ``arg``: the outcome, or None while it waits."""
        kind = op.kind
        if kind == "size":
            return Ok(model.size())
        if kind == "is_closed":
            return Ok(model.closed)
        if kind == "enqueue":
            model.enqueue(_KEY, arg)
        elif kind == "enqueue_many":
            model.enqueue_many(_KEY, tuple(arg))
        elif kind == "dequeue":
            model.dequeue(_KEY)
        elif kind in BATCH_DEQUEUES:
            model.dequeue_many(_KEY, check_n(op), up_to=kind == "dequeue_up_to")
        elif kind == "close":
            model.close(_KEY, cancel=bool(arg))
        else:
            raise ValueError(f"{type(self).__name__} cannot apply operation kind {kind!r} (#{op.index}); "
                             f"expected one of {sorted(self.KINDS)}")
        return model.results.pop(_KEY, None)

    @staticmethod
    def _outcome(op: Operation, result: ModelOutcome) -> Outcome:
        """The model's outcome as a history records it (batches as tuples, errors by name)."""
        if isinstance(result, Err):
            return Outcome.error(result.type)
        if op.kind in BATCH_DEQUEUES:
            return Outcome.ok(tuple(result.value))
        return Outcome.ok(result.value)

    def apply(self, state: Any, op: Operation) -> tuple[Any, Any]:
        """The effect and expected outcome of ``op`` in ``state``; a recorded value is the pick."""
        pick = NO_PICK
        outcome = op.outcome
        # A FIFO queue leaves the implementation no pick (MODEL-5).
        if outcome is not None and not outcome.is_error and op.kind in DEQUEUES and self.order != "fifo":
            value = outcome.value
            pick = list(value) if op.kind != "dequeue" and isinstance(value, (list, tuple)) else value
        new, result = self._run(state, op, pick)
        if result is None:
            return state, BLOCKED
        return new, self._outcome(op, result)

    # -- what a history cannot show (HIST-9) ------------------------------------------

    def read_only(self, op: Operation) -> bool:
        """Whether ``op`` leaves every state in which it fits unchanged (a hint, HIST-7).

        True for ``size``, ``is_closed``, calls that timed out (but
        ``enqueue_many``), failures that need a closed queue (OutOfRangeError,
        CancelledError of an ``enqueue`` or a plain ``close``), and empty
        batches.  The checker linearizes such a call as soon as it fits, without
        branching; ``tests/unit/test_history.py`` checks that this never changes
        a verdict.
        """
        outcome = op.outcome
        kind = op.kind
        if outcome is None:
            return kind in ("size", "is_closed")
        error = outcome.value if outcome.is_error else None
        if kind in ("size", "is_closed"):
            return True
        if error == _TIMEOUT:
            return kind != "enqueue_many"
        if kind in BATCH_DEQUEUES and op.arg == 0:
            return True
        if kind == "enqueue_many" and not outcome.is_error:
            return not tuple(op.arg)
        if error == _OUT_OF_RANGE:
            return kind in DEQUEUES
        if error == _CANCELLED:
            return kind == "enqueue" or (kind == "close" and not op.arg)
        return False

    def successors(self, state: Any, op: Operation) -> list[Any]:
        """Every state ``op`` may leave for its recorded outcome (HIST-5, HIST-9)."""
        outcome = op.outcome
        if op.kind == "enqueue_many" and (outcome is None or outcome.is_error):
            return self._stored_prefixes(state, op)
        if outcome is not None and outcome.is_error and outcome.value == _TIMEOUT:
            if op.kind not in self.KINDS:
                self.apply(state, op)  # raises the unknown-kind error
            return [state]
        if outcome is None and op.kind in DEQUEUES and self.order != "fifo":
            return self._any_pick(state, op)
        found = default_successors(self, state, op)
        if op.kind == "enqueue" or op.kind == "enqueue_many":
            return self._plausible(state, found)
        return found

    def _stored_prefixes(self, state: Any, op: Operation) -> list[Any]:
        """An ``enqueue_many`` that timed out, was cancelled or is pending: the prefixes it stored.

        Any prefix (the empty one included) after a timeout or while pending; a
        non-empty one while the queue was open, or nothing once it was closed,
        after CancelledError (Q-ENQ-3, Q-CLOSE-3, Q-TIMEOUT-2).  Each prefix
        runs on the model as a whole ``enqueue_many``; one the model would keep
        waiting is left out.
        """
        outcome = op.outcome
        name = None if outcome is None else outcome.value
        if name not in (None, _TIMEOUT, _CANCELLED):
            return []
        batch = tuple(op.arg)
        closed = self._closed(state)
        lengths = [0] if name != _CANCELLED or closed else []
        if not closed:
            lengths += range(1, len(batch) + 1)
        found = []
        for k in self._prefixes_to_try(batch, lengths):
            if k == 0:
                found.append(state)
                continue
            new, result = self._run(state, op, arg=batch[:k])
            if new is not None and isinstance(result, Ok):
                found.append(new)
        return self._plausible(state, found)

    def _any_pick(self, state: Any, op: Operation) -> list[Any]:
        """A pending dequeue of a queue that picks: every state an allowed pick leaves (MODEL-5)."""
        contents = sorted(self._peek(state).contents(),
                          key=lambda x: (x[0], repr(x)) if self.order == "priority" else repr(x))
        if op.kind == "dequeue":
            picks: Iterable[Any] = [NO_PICK, *dict.fromkeys(contents)]
        else:
            n = check_n(op)
            sizes = {r for r in (n, len(contents)) if 0 < r <= len(contents)}
            combinations = dict.fromkeys(c for r in sizes for c in itertools.combinations(contents, r))
            picks = [NO_PICK, *(list(c) for c in combinations)]
        found: dict[Any, None] = {}
        for pick in picks:
            new, _ = self._run(state, op, pick)
            if new is not None:
                found[new] = None
        return list(found)

    # -- search hints: none here (FIFOModel has some) -------------------------------------

    def _prefixes_to_try(self, batch: tuple[Any, ...], lengths: list[int]) -> list[int]:
        """The prefix lengths of a failed ``enqueue_many`` to try, in order (a hint, HIST-7)."""
        return lengths

    def _plausible(self, state: Any, states: list[Any]) -> list[Any]:
        """The states an enqueue may leave that can still lead to an answer (a hint, HIST-7)."""
        return states
