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
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from coordkit.history.records import BLOCKED, History, Operation, Outcome
from coordkit.history.search import SequentialModel, default_successors
from coordkit.models.outcome import Err, Ok
from coordkit.models.outcome import Outcome as ModelOutcome
from coordkit.models.queues import QueueModel
from coordkit.models.storage import NO_PICK, ORDERS

__all__ = ["FIFOModel", "QueueHistoryModel", "RecordingQueue"]


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
_DEQUEUES = ("dequeue", "dequeue_many", "dequeue_up_to")
_BATCH_DEQUEUES = ("dequeue_many", "dequeue_up_to")
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


def _check_n(op: Operation) -> int:
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

    def _model(self, state: Any) -> QueueModel:
        """A model in ``state`` that may be changed."""
        return state.model.copy()

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

        ``pick`` is the element (or batch) the implementation returned, ``arg``
        replaces the batch of an ``enqueue_many``.
        """
        model = self._model(state)
        if pick is not NO_PICK:
            model.picks = {_KEY: pick}
        kind = op.kind
        if kind == "enqueue":
            model.enqueue(_KEY, op.arg)
        elif kind == "enqueue_many":
            model.enqueue_many(_KEY, tuple(op.arg if arg is None else arg))
        elif kind == "dequeue":
            model.dequeue(_KEY)
        elif kind in _BATCH_DEQUEUES:
            model.dequeue_many(_KEY, _check_n(op), up_to=kind == "dequeue_up_to")
        elif kind == "close":
            model.close(_KEY, cancel=bool(op.arg))
        else:
            raise ValueError(f"{type(self).__name__} cannot apply operation kind {kind!r} (#{op.index}); "
                             f"expected one of {sorted(self.KINDS)}")
        result = model.results.pop(_KEY, None)
        if result is None:
            return None, None
        model.picks = {}
        return self._state(model), result

    @staticmethod
    def _outcome(op: Operation, result: ModelOutcome) -> Outcome:
        """The model's outcome as a history records it (batches as tuples, errors by name)."""
        if isinstance(result, Err):
            return Outcome.error(result.type)
        if op.kind in _BATCH_DEQUEUES:
            return Outcome.ok(tuple(result.value))
        return Outcome.ok(result.value)

    def apply(self, state: Any, op: Operation) -> tuple[Any, Any]:
        """The effect and expected outcome of ``op`` in ``state``; a recorded value is the pick."""
        if op.kind == "size":
            return state, Outcome.ok(self._peek(state).size())
        if op.kind == "is_closed":
            return state, Outcome.ok(self._peek(state).closed)
        pick = NO_PICK
        outcome = op.outcome
        if outcome is not None and not outcome.is_error and op.kind in _DEQUEUES and self.order != "fifo":
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
        if kind in _BATCH_DEQUEUES and op.arg == 0:
            return True
        if kind == "enqueue_many" and not outcome.is_error:
            return not tuple(op.arg)
        if error == _OUT_OF_RANGE:
            return kind in _DEQUEUES
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
        if outcome is None and op.kind in _DEQUEUES and self.order != "fifo":
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
        closed = self._peek(state).closed
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
            n = _check_n(op)
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


# ---------------------------------------------------------------------------
# FIFOModel: the queue model for FIFO queues, with search hints (HIST-7, HIST-9)
# ---------------------------------------------------------------------------


class FIFOModel(QueueHistoryModel):
    """``QueueHistoryModel(order="fifo")`` with plain states and search hints (HIST-7, HIST-9).

    The rules are the queue model's (``coordkit.models.QueueModel``), as for
    every ``QueueHistoryModel``; only the form of a state differs: here it is
    ``(items, closed)``, ``items`` a tuple, oldest first.  Operation kinds and
    arguments are those ``RecordingQueue`` records: ``enqueue(x)``,
    ``enqueue_many(batch)``, ``dequeue()``, ``dequeue_many(n)``,
    ``dequeue_up_to(n)``, ``size()``, ``is_closed()`` and
    ``close(cancel_pending_enqueues)``.

    ``capacity`` (None: unbounded) makes a call wait while what it stores does
    not fit.  Use it, like ``size``, only in histories without
    ``enqueue_many``, ``dequeue_many`` and ``dequeue_up_to``: those calls hold
    or push elements part way, which coordkit's queues (like TensorFlow's)
    make visible to ``size()`` and to the capacity (HIST-10).

    ``check`` gives the model search hints drawn from the whole history through
    ``prepare`` (HIST-7); they live on the instance, so use one instance per
    check running at a time.
    """

    def __init__(self, capacity: int | None = None, initial: Iterable[Hashable] = ()) -> None:
        super().__init__(capacity, "fifo", 0, initial)
        self._seen: dict[Any, tuple[int, int]] = {}  # elements dequeues returned (see prepare)
        self._only_seen_prefix = False
        self._dequeued_during: dict[Any, tuple[float, float]] | None = None

    # -- states: (items, closed) ----------------------------------------------------------

    def init(self) -> tuple[tuple[Any, ...], bool]:
        """An open queue holding ``initial`` (empty by default)."""
        return (self._initial, False)

    def _peek(self, state: tuple[tuple[Any, ...], bool]) -> QueueModel:
        return self._at_rest(state[0], state[1])

    def _model(self, state: tuple[tuple[Any, ...], bool]) -> QueueModel:
        return self._at_rest(state[0], state[1])

    def _state(self, model: QueueModel) -> tuple[tuple[Any, ...], bool]:
        return (tuple(model.contents()), model.closed)

    def apply(self, state: tuple[tuple[Any, ...], bool], op: Operation) -> tuple[Any, Any]:
        """The effect and expected outcome of ``op`` in ``state`` (HIST-9)."""
        return super().apply(state, op)

    # -- search hints drawn from the whole history (HIST-5, HIST-7) --------------------------

    def prepare(self, operations: Sequence[Operation] | None) -> None:
        """Note which elements the history's dequeues returned, and when (search hints, HIST-5).

        ``None`` switches the hints off.
        They order the candidates (``candidate_key``) and the prefixes tried for
        a failed ``enqueue_many``; they change the speed, never the verdict.
        When every enqueued element is distinct and the history has no
        ``size()`` call and no dequeue with an unknown outcome, a failed
        ``enqueue_many`` is taken to have pushed the shortest allowed prefix
        that holds every element of its batch the history shows coming out: an
        element that never comes out would stay in front of every later element
        (and keep the queue from being empty) for good, so whenever a longer
        prefix fits, that one fits too.
        """
        if operations is None:  # no hints
            self._seen, self._only_seen_prefix, self._dequeued_during = {}, False, None
            return
        self._seen = _first_dequeues(operations)
        distinct = _all_distinct(operations)
        unknown_dequeues = any(op.outcome is None and op.kind in _DEQUEUES for op in operations)
        self._only_seen_prefix = distinct and not unknown_dequeues and not any(
            op.kind == "size" for op in operations
        )
        once = distinct and not unknown_dequeues
        self._dequeued_during = _dequeue_intervals(operations) if once else None

    def candidate_key(self, op: Operation) -> Any:
        """The search tries an enqueue when the element it adds is taken (a hint, HIST-7).

        In a FIFO queue the order of the enqueues is the order in which their
        elements come out, so an enqueue is keyed by the call time of the
        dequeue that returned its (first) element; every other call, and an
        element never seen, by its own call time.
        """
        if op.kind in ("enqueue", "enqueue_many") and op.arg is not None:
            element = op.arg if op.kind == "enqueue" else next(iter(op.arg), None)
            try:
                found = self._seen.get(element)
            except TypeError:
                found = None
            if found is not None:
                return found
        if op.kind == "close" and op.ret is not None:
            return (op.ret, -1)
        return (op.call, -1)

    def _prefixes_to_try(self, batch: tuple[Any, ...], lengths: list[int]) -> list[int]:
        """Try first the prefix whose elements the history shows coming out (HIST-7).

        The order changes how fast the search is, never its verdict.  With
        every enqueued element distinct and nothing able to take an element out
        unseen, an element pushed but never returned stays in the queue for
        good, in front of every later one, so the shortest prefix that holds
        every element seen fits whenever a longer one does (see prepare).
        """
        seen = 0
        while seen < len(batch) and batch[seen] in self._seen:
            seen += 1
        if self._only_seen_prefix:
            return [k for k in lengths if k >= seen][:1]
        if seen in lengths:
            lengths.remove(seen)
            lengths.insert(0, seen)
        return lengths

    def _plausible(self, state: tuple[tuple[Any, ...], bool], states: list[Any]) -> list[Any]:
        """Drop the states whose new elements could not come out in their queue order (HIST-7).

        A hint (see prepare): with every element enqueued once and returned at most
        once, an element appended behind ``y`` comes out after ``y``, so its
        dequeue must not end before ``y``'s begins; and behind an element that
        never comes out, no element can come out at all.
        """
        during = self._dequeued_during
        if during is None:
            return states
        items = state[0]
        kept = []
        for new in states:
            new_items = new[0]
            if len(new_items) == len(items) or _fits_behind(during, items, new_items[len(items):]):
                kept.append(new)
        return kept


def _first_dequeues(operations: Sequence[Operation]) -> dict[Any, tuple[int, int]]:
    """Each element a dequeue returned: (call time of the first such dequeue, place in its batch)."""
    taken: dict[Any, tuple[int, int]] = {}
    for op in operations:
        outcome = op.outcome
        if outcome is None or outcome.is_error:
            continue
        try:
            if op.kind == "dequeue":
                taken.setdefault(outcome.value, (op.call, 0))
            elif op.kind in _BATCH_DEQUEUES:
                for place, element in enumerate(outcome.value):
                    taken.setdefault(element, (op.call, place))
        except TypeError:
            continue  # unhashable elements: no hint
    return taken


def _all_distinct(operations: Sequence[Operation]) -> bool:
    """Whether every element the history enqueues is enqueued once (and hashable)."""
    enqueued: list[Any] = []
    for op in operations:
        if op.kind == "enqueue":
            enqueued.append(op.arg)
        elif op.kind == "enqueue_many" and op.arg is not None:
            enqueued.extend(op.arg)
    try:
        return len(set(enqueued)) == len(enqueued)
    except TypeError:
        return False


def _dequeue_intervals(operations: Sequence[Operation]) -> dict[Any, tuple[float, float]] | None:
    """Each element's dequeue interval, or None if some element comes out twice.

    Used to refuse enqueue orders that the dequeues' real-time order already
    rules out (see ``FIFOModel._plausible``).
    """
    intervals: dict[Any, tuple[float, float]] = {}
    for op in operations:
        outcome = op.outcome
        if outcome is None or outcome.is_error or op.kind not in _DEQUEUES:
            continue
        ret = math.inf if op.ret is None else op.ret
        try:
            for element in (outcome.value,) if op.kind == "dequeue" else outcome.value:
                if element in intervals:
                    return None
                intervals[element] = (op.call, ret)
        except TypeError:
            return None  # not a batch, or unhashable elements: no hint
    return intervals


def _fits_behind(during: dict[Any, tuple[float, float]], items: tuple[Any, ...],
                 added: tuple[Any, ...]) -> bool:
    """Whether ``added``, appended behind ``items``, can come out after them in real time."""
    latest_call = -math.inf  # the latest dequeue call of an element ahead
    for y in items:
        found = during.get(y)
        latest_call = math.inf if found is None else max(latest_call, found[0])
        if latest_call == math.inf:
            break
    for a in added:
        found = during.get(a)
        if found is None:
            latest_call = math.inf
        elif found[1] < latest_call:
            return False
        else:
            latest_call = max(latest_call, found[0])
    return True
