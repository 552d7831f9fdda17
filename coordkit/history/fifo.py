"""``FIFOModel``: the queue model for FIFO queues, with plain states and search hints.

The rules are the pure queue model's (``coordkit.models.QueueModel``), run
through ``QueueHistoryModel`` (MODEL-8, HIST-9).  This module adds only speed:
states that are plain tuples, the model's answers kept as templates (a FIFO
queue never looks at its elements), and search hints drawn from the whole
history (HIST-7), which change how fast the search is, never its verdict.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from coordkit.history.queues import BATCH_DEQUEUES, DEQUEUES, QueueHistoryModel, check_n
from coordkit.history.records import BLOCKED, Operation, Outcome
from coordkit.models.outcome import Ok
from coordkit.models.outcome import Outcome as ModelOutcome
from coordkit.models.queues import QueueModel
from coordkit.models.storage import NO_PICK

__all__ = ["FIFOModel"]

_MISSING = object()


def _take(pool: tuple[Any, ...], where: slice | tuple[int, ...]) -> tuple[Any, ...]:
    """The elements of ``pool`` at ``where``."""
    if where.__class__ is slice:
        return pool[where]  # type: ignore[index]
    return tuple(map(pool.__getitem__, where))  # type: ignore[arg-type]


def _where(positions: list[int], numbers: list[int]) -> slice | tuple[int, ...]:
    """``positions`` as a slice when they are consecutive, else as a tuple.

    ``numbers`` is ``list(range(k))`` for some ``k`` past every position (its int
    objects are the ones the positions are, so comparing is quick).
    """
    if not positions:
        return slice(0, 0)
    first, last = positions[0], positions[0] + len(positions)
    if positions == numbers[first:last]:
        return slice(first, last)
    return tuple(positions)


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
        self._answers: dict[tuple[Any, ...], Any] = {}  # the model's answers, by shape (see _answer)
        self._numbers: list[int] = []  # 0, 1, 2, ...: the positions standing for elements in _ask

    # -- states: (items, closed) ----------------------------------------------------------

    def init(self) -> tuple[tuple[Any, ...], bool]:
        """An open queue holding ``initial`` (empty by default)."""
        return (self._initial, False)

    def _peek(self, state: tuple[tuple[Any, ...], bool]) -> QueueModel:
        return self._at_rest(state[0], state[1])

    def _closed(self, state: tuple[tuple[Any, ...], bool]) -> bool:
        return state[1]

    def _state(self, model: QueueModel) -> tuple[tuple[Any, ...], bool]:
        return (tuple(model.contents()), model.closed)

    # -- the model's answers, kept per shape of call ---------------------------------------

    def apply(self, state: tuple[tuple[Any, ...], bool], op: Operation) -> tuple[Any, Any]:
        """The effect and expected outcome of ``op`` in ``state``: the queue model's (HIST-9)."""
        found = self._answer(state, op, None)
        if found is None:
            return state, BLOCKED
        (where, closed, _, expected), pool = found
        if expected.__class__ is int:  # the element at that position
            expected = Outcome.ok(pool[expected])
        elif expected.__class__ is slice or expected.__class__ is tuple:  # a batch: those elements
            expected = Outcome.ok(_take(pool, expected))
        return (_take(pool, where), closed), expected

    def _run(self, state: tuple[tuple[Any, ...], bool], op: Operation, pick: Any = NO_PICK,
             arg: Any = None) -> tuple[Any, ModelOutcome | None]:
        """``QueueHistoryModel._run``, through the model's answer for the state's shape."""
        found = self._answer(state, op, arg)
        if found is None:
            return None, None
        (where, closed, result, _), pool = found
        if isinstance(result, Ok) and op.kind in DEQUEUES:
            value = result.value
            result = Ok(pool[value] if op.kind == "dequeue" else [pool[i] for i in value])
        return (_take(pool, where), closed), result

    def _answer(self, state: tuple[tuple[Any, ...], bool], op: Operation,
                arg: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
        """The model's answer to ``op`` (``arg`` replacing its argument) in ``state``.

        A FIFO queue never looks at its elements: its store only moves them
        (``coordkit.models.storage``), and it has no pick to make (MODEL-5).  So
        what a call does depends only on how many elements are stored, whether
        the queue is closed, and the call's kind and size.  The model is asked
        once for each such shape, with the positions ``0, 1, ...`` as elements,
        and its answer is kept as positions in ``pool``: the stored elements,
        then those the call adds.  Returns (answer, pool), or None when the
        call waits.
        """
        items, closed = state
        kind = op.kind
        given = op.arg if arg is None else arg
        added: tuple[Any, ...] = ()
        if kind == "enqueue":
            added, shape = (given,), None
        elif kind == "enqueue_many":
            added = tuple(given)
            shape = len(added)
        elif kind in BATCH_DEQUEUES:
            shape = check_n(op)
        else:
            shape = bool(given) if kind == "close" else None
        key = (len(items), closed, kind, shape)
        answer = self._answers.get(key, _MISSING)
        if answer is _MISSING:
            answer = self._answers[key] = self._ask(len(items), closed, op, len(added))
        if answer is None:
            return None
        return answer, items + added if added else items

    def _ask(self, stored: int, closed: bool, op: Operation, added: int) -> tuple[Any, ...] | None:
        """Run ``op`` on the queue model storing the positions ``0 .. stored-1``, adding ``added`` more.

        None when the call waits; else where the new contents come from (a
        slice or positions), whether the queue is then closed, the model's
        outcome, and the expected history outcome: an ``Outcome``, or the
        position of the element a dequeue returned, or where a batch comes from
        (a slice or positions).
        """
        numbers = self._numbers
        if len(numbers) < stored + added:
            numbers.extend(range(len(numbers), 2 * (stored + added)))
        arg: Any = op.arg
        if op.kind == "enqueue":
            arg = numbers[stored]
        elif op.kind == "enqueue_many":
            arg = numbers[stored:stored + added]
        model = self._at_rest(numbers[:stored], closed)
        result = self._call(model, op, arg)
        if result is None:
            return None
        expected: Any = self._outcome(op, result)
        if op.kind == "dequeue" and not expected.is_error:
            expected = expected.value  # the position of the element returned
        elif op.kind in BATCH_DEQUEUES and not expected.is_error:
            expected = _where(list(expected.value), numbers)  # the positions of the batch returned
        return _where(model.contents(), numbers), model.closed, result, expected

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
        unknown_dequeues = any(op.outcome is None and op.kind in DEQUEUES for op in operations)
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
            elif op.kind in BATCH_DEQUEUES:
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
        if outcome is None or outcome.is_error or op.kind not in DEQUEUES:
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
