"""Operation histories from real threads, and a linearizability checker.

Record what each thread did, with the real clock, then ask whether some
sequential order of those operations explains every outcome::

    from coordkit import history

    h = history.History()
    q = history.RecordingQueue(FIFOQueue(10), h)   # or record by hand:
    with h.record("enqueue", 1) as op:             # thread = the current thread's name
        queue.enqueue(1)
        op.ok()
    ...
    history.assert_linearizable(h, history.FIFOModel())

The rules, with their ids, are in ``specs/history.md``:

* an operation is one call: who made it (``thread``), what (``kind``, ``arg``),
  when it was called and when it returned (``time.perf_counter_ns`` of the real
  clock), and what came out (an ``Outcome``); an operation that never returned is
  *pending* (HIST-1..4);
* a *model* is a pure sequential description: ``init()`` gives the first state
  and ``apply(state, op)`` gives ``(new_state, expected_outcome)``; a model may
  add ``successors(state, op)`` for operations whose effect the caller cannot
  see (HIST-5);
* a history is *linearizable* when some total order of its completed operations
  (and of any of its pending ones), consistent with real time, makes every
  outcome the model's (HIST-6);
* ``check`` decides it with a Wing-Gong search in Lowe's just-in-time form,
  memoised on (set of linearized operations, model state) (HIST-7), and when the
  answer is no, reports the first operation that cannot be linearized and the
  smallest window of overlapping operations that cannot be ordered (HIST-8).

``FIFOModel`` is the sequential model of a FIFO queue with close (HIST-9,
HIST-10). The checker itself knows nothing about queues: any object with
``init`` and ``apply`` is a model.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "BLOCKED",
    "FIFOModel",
    "History",
    "Model",
    "NotLinearizableError",
    "Operation",
    "OperationRecorder",
    "Outcome",
    "RecordingQueue",
    "Report",
    "SearchBudgetExceeded",
    "SequentialModel",
    "check",
    "assert_linearizable",
]


# ---------------------------------------------------------------------------
# Outcomes and operations (HIST-1)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a call produced: a returned value, or the name of the exception it raised.

    Errors compare by exception class name only (``"OutOfRangeError"``), never
    by message, so that a model can predict them.
    """

    is_error: bool
    value: Any = None

    @classmethod
    def ok(cls, value: Any = None) -> Outcome:
        """A call that returned ``value``."""
        return cls(False, value)

    @classmethod
    def error(cls, exc: BaseException | type[BaseException] | str) -> Outcome:
        """A call that raised ``exc`` (an exception, an exception class, or a class name)."""
        if isinstance(exc, str):
            name = exc
        elif isinstance(exc, type) and issubclass(exc, BaseException):
            name = exc.__name__
        elif isinstance(exc, BaseException):
            name = type(exc).__name__
        else:
            raise TypeError(
                f"Outcome.error(exc): exc must be an exception, an exception class or a class "
                f"name; got {exc!r}"
            )
        return cls(True, name)

    def __repr__(self) -> str:
        return f"raise {self.value}" if self.is_error else f"-> {self.value!r}"


class _Blocked:
    """The type of ``BLOCKED``."""

    _instance: _Blocked | None = None

    def __new__(cls) -> _Blocked:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "BLOCKED"


BLOCKED: Any = _Blocked()
"""What ``apply`` returns as the expected outcome of a call that cannot take
effect in this state (it would wait): no recorded outcome equals it (HIST-5)."""


@dataclass(frozen=True)
class Operation:
    """One call made by one thread (HIST-1).

    ``call`` and ``ret`` are ``time.perf_counter_ns()`` readings taken just
    before the call and just after it ended.  ``ret is None`` marks a *pending*
    operation: it may have taken effect at any moment after ``call``, or never
    (HIST-4); its ``outcome`` is then None or the outcome it will eventually
    have.
    """

    index: int
    thread: Hashable
    kind: str
    arg: Any
    call: int
    ret: int | None
    outcome: Outcome | None

    @property
    def pending(self) -> bool:
        """True when the operation has no return time (HIST-4)."""
        return self.ret is None

    def precedes(self, other: Operation) -> bool:
        """Real-time order: self returned strictly before other was called (HIST-2)."""
        return self.ret is not None and self.ret < other.call

    def describe(self, origin: int = 0) -> str:
        """One line: thread, call, outcome and interval in microseconds from ``origin``."""
        arg = "" if self.arg is None else repr(self.arg)
        end = "pending" if self.ret is None else f"{(self.ret - origin) / 1000:g}"
        outcome = "(no outcome)" if self.outcome is None else repr(self.outcome)
        return (
            f"#{self.index} [{self.thread}] {self.kind}({arg}) {outcome}"
            f"  @ {(self.call - origin) / 1000:g}..{end} us"
        )


# ---------------------------------------------------------------------------
# Recording (HIST-3)
# ---------------------------------------------------------------------------


class OperationRecorder:
    """The handle ``History.record`` yields: say how the call ended.

    Exactly one of ``ok``, ``error`` or ``pending`` may be called, once.  If the
    block raises before any of them, the exception is recorded (HIST-3).
    """

    __slots__ = ("_arg", "_call", "_history", "_kind", "_outcome", "_pending", "_thread", "done")

    def __init__(self, history: History, thread: Hashable, kind: str, arg: Any) -> None:
        self._history = history
        self._thread = thread
        self._kind = kind
        self._arg = arg
        self._outcome: Outcome | None = None
        self._pending = False
        self.done = False
        self._call = time.perf_counter_ns()

    def _set(self, outcome: Outcome | None, pending: bool) -> None:
        if self.done:
            raise RuntimeError(
                f"the outcome of {self._kind}({self._arg!r}) was already recorded as "
                f"{'pending' if self._pending else self._outcome!r}"
            )
        self.done = True
        self._outcome = outcome
        self._pending = pending

    def ok(self, value: Any = None) -> None:
        """The call returned ``value``."""
        self._set(Outcome.ok(value), False)

    def error(self, exc: BaseException | type[BaseException] | str) -> None:
        """The call raised ``exc``."""
        self._set(Outcome.error(exc), False)

    def pending(self, outcome: Outcome | None = None) -> None:
        """The call's effect may happen later, or never: record it without a return (HIST-4).

        For example a plain ``close(timeout=...)`` that timed out stays in line
        and takes effect later (Q-CLOSE-6).  ``outcome`` is the outcome it will
        have if it takes effect, when known.
        """
        self._set(outcome, True)

    def _finish(self) -> None:
        ret = None if self._pending else time.perf_counter_ns()
        self._history._add(self._thread, self._kind, self._arg, self._call, ret, self._outcome)


class History:
    """A thread-safe log of operations (HIST-1, HIST-3).

    Record with ``record`` (a context manager) or through ``RecordingQueue``;
    read with ``operations()``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _ops
        self._ops: list[Operation] = []

    def __len__(self) -> int:
        with self._lock:
            return len(self._ops)

    def operations(self) -> list[Operation]:
        """A copy of the recorded operations, in the order they ended."""
        with self._lock:
            return list(self._ops)

    def _add(
        self,
        thread: Hashable,
        kind: str,
        arg: Any,
        call: int,
        ret: int | None,
        outcome: Outcome | None,
    ) -> None:
        with self._lock:
            self._ops.append(Operation(len(self._ops), thread, kind, arg, call, ret, outcome))

    def add(
        self,
        thread: Hashable,
        kind: str,
        arg: Any,
        call: int,
        ret: int | None,
        outcome: Outcome | None,
    ) -> Operation:
        """Add a hand-built operation (times in any integer unit, ``ret=None`` = pending)."""
        _check_kind(kind)
        if not isinstance(call, int) or isinstance(call, bool):
            raise TypeError(f"History.add(call): call must be an int time; got {call!r}")
        if ret is not None:
            if not isinstance(ret, int) or isinstance(ret, bool):
                raise TypeError(f"History.add(ret): ret must be an int time or None; got {ret!r}")
            if ret < call:
                raise ValueError(f"History.add(ret): ret={ret!r} is before call={call!r}")
            if outcome is None:
                raise ValueError(
                    f"History.add(outcome): a completed operation ({kind}, ret={ret!r}) needs an "
                    "Outcome; use ret=None for a pending one"
                )
        if outcome is not None and not isinstance(outcome, Outcome):
            raise TypeError(f"History.add(outcome): outcome must be an Outcome or None; got {outcome!r}")
        self._add(thread, kind, arg, call, ret, outcome)
        with self._lock:
            return self._ops[-1]

    @contextlib.contextmanager
    def record(
        self, kind: str, arg: Any = None, *, thread: Hashable | None = None
    ) -> Iterator[OperationRecorder]:
        """Record one call made inside the block (HIST-3).

        The call time is read on entry, the return time on exit.  Inside, call
        ``op.ok(value)``, ``op.error(exc)`` or ``op.pending()``.  A block that
        ends normally without any of them records ``ok(None)``; an exception
        escaping the block is recorded as the call's error and propagates.
        ``thread`` defaults to the current thread's name.
        """
        _check_kind(kind)
        if thread is None:
            thread = threading.current_thread().name
        op = OperationRecorder(self, thread, kind, arg)
        try:
            yield op
        except BaseException as exc:
            if not op.done:
                op.error(exc)
            raise
        else:
            if not op.done:
                op.ok(None)
        finally:
            op._finish()


def _check_kind(kind: object) -> None:
    if not isinstance(kind, str) or not kind:
        raise TypeError(f"kind must be a non-empty string naming the operation; got {kind!r}")


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
# Models (HIST-5)
# ---------------------------------------------------------------------------


@runtime_checkable
class Model(Protocol):
    """A pure sequential model (HIST-5).

    ``init()`` returns the first state; ``apply(state, op)`` returns
    ``(new_state, expected_outcome)`` for ``op`` taking effect in ``state``, or
    ``(state, BLOCKED)`` when it cannot take effect there (it would wait).
    States must be hashable and must never be mutated.  A model may also define
    ``successors(state, op) -> Iterable[state]``: every state ``op`` may leave
    behind when its recorded outcome is ``op.outcome`` (None for a pending
    operation with no known outcome); when it does not, the checker derives it
    from ``apply``.

    Optional search hints, which change the speed and never the verdict:
    ``prepare(operations)`` (the whole history, or None to switch hints drawn
    from it off), ``read_only(op)`` (True when ``op`` leaves every state it
    fits in unchanged) and ``candidate_key(op)`` (the order in which to try the
    operations that may go next).  See ``FIFOModel`` and HIST-5, HIST-7.
    """

    def init(self) -> Hashable: ...

    def apply(self, state: Any, op: Operation) -> tuple[Any, Any]: ...


class SequentialModel:
    """A convenient base class: ``successors`` derived from ``apply`` (HIST-5)."""

    def init(self) -> Hashable:  # pragma: no cover - abstract
        raise NotImplementedError

    def apply(self, state: Any, op: Operation) -> tuple[Any, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def successors(self, state: Any, op: Operation) -> Iterable[Any]:
        """The states ``op`` can leave: apply's, when its expected outcome is the recorded one."""
        return _default_successors(self, state, op)


def _default_successors(model: Any, state: Any, op: Operation) -> list[Any]:
    new_state, expected = model.apply(state, op)
    if expected is BLOCKED:
        return []
    if op.outcome is None or expected == op.outcome:
        return [new_state]
    return []


_TIMEOUT = "DeadlineExceededError"
_DEQUEUES = ("dequeue", "dequeue_many", "dequeue_up_to")
_CANCELLED = "CancelledError"
_OUT_OF_RANGE = "OutOfRangeError"


class FIFOModel(SequentialModel):
    """A FIFO queue with close, as a pure sequential model (HIST-9, HIST-10).

    The state is ``(items, closed)`` with ``items`` a tuple, oldest first.
    Operation kinds and arguments are those ``RecordingQueue`` records:
    ``enqueue(x)``, ``enqueue_many(batch)``, ``dequeue()``, ``dequeue_many(n)``,
    ``dequeue_up_to(n)``, ``size()``, ``is_closed()`` and
    ``close(cancel_pending_enqueues)``.

    ``capacity`` (None: not modelled) makes ``enqueue`` wait while the queue
    holds ``capacity`` elements.  Use it, like ``size``, only in histories
    without ``enqueue_many``, ``dequeue_many`` and ``dequeue_up_to``: those
    calls hold or push elements part way, which coordkit's queues (like
    TensorFlow's) make visible to ``size()`` and to the capacity (HIST-10).

    ``check`` gives the model search hints drawn from the whole history through
    ``prepare`` (HIST-7); they live on the instance, so use one instance per
    check running at a time.
    """

    KINDS = frozenset(
        {"enqueue", "enqueue_many", "dequeue", "dequeue_many", "dequeue_up_to", "size", "is_closed", "close"}
    )

    def __init__(self, capacity: int | None = None, initial: Iterable[Hashable] = ()) -> None:
        if capacity is not None and (
            isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0
        ):
            raise ValueError(f"FIFOModel(capacity) must be None or an int >= 0; got {capacity!r}")
        self.capacity = capacity
        self._initial = tuple(initial)
        self._seen: dict[Any, tuple[int, int]] = {}  # elements dequeues returned (see prepare)
        self._only_seen_prefix = False
        self._dequeued_during: dict[Any, tuple[float, float]] | None = None

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
        taken: dict[Any, tuple[int, int]] = {}  # element -> (call of its dequeue, place in batch)
        if operations is None:  # no hints
            self._seen, self._only_seen_prefix, self._dequeued_during = taken, False, None
            return
        for op in operations:
            outcome = op.outcome
            if outcome is None or outcome.is_error:
                continue
            try:
                if op.kind == "dequeue":
                    taken.setdefault(outcome.value, (op.call, 0))
                elif op.kind in ("dequeue_many", "dequeue_up_to"):
                    for place, element in enumerate(outcome.value):
                        taken.setdefault(element, (op.call, place))
            except TypeError:
                continue  # unhashable elements: no hint
        self._seen = taken
        enqueued: list[Any] = []
        for op in operations:
            if op.kind == "enqueue":
                enqueued.append(op.arg)
            elif op.kind == "enqueue_many" and op.arg is not None:
                enqueued.extend(op.arg)
        try:
            distinct = len(set(enqueued)) == len(enqueued)
        except TypeError:
            distinct = False
        unknown_dequeues = any(
            op.outcome is None and op.kind in ("dequeue", "dequeue_many", "dequeue_up_to")
            for op in operations
        )
        self._only_seen_prefix = distinct and not unknown_dequeues and not any(
            op.kind == "size" for op in operations
        )
        # Each element's dequeue interval, when every element is enqueued once
        # and comes out at most once: used to refuse enqueue orders that the
        # dequeues' real-time order already rules out (see successors).
        intervals: dict[Any, tuple[float, float]] = {}
        once = distinct and not unknown_dequeues
        for op in operations if once else ():
            outcome = op.outcome
            if outcome is None or outcome.is_error or op.kind not in _DEQUEUES:
                continue
            ret = math.inf if op.ret is None else op.ret
            try:
                for element in (outcome.value,) if op.kind == "dequeue" else outcome.value:
                    if element in intervals:
                        once = False
                    intervals[element] = (op.call, ret)
            except TypeError:
                once = False  # not a batch, or unhashable elements: no hint
        self._dequeued_during = intervals if once else None

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

    def init(self) -> tuple[tuple[Any, ...], bool]:
        """An open queue holding ``initial`` (empty by default)."""
        return (self._initial, False)

    def apply(self, state: tuple[tuple[Any, ...], bool], op: Operation) -> tuple[Any, Any]:
        """The effect and expected outcome of ``op`` in ``state`` (HIST-9)."""
        items, closed = state
        kind = op.kind
        if kind == "enqueue":
            if closed:
                return state, Outcome.error(_CANCELLED)
            if self.capacity is not None and len(items) >= self.capacity:
                return state, BLOCKED
            return (items + (op.arg,), closed), Outcome.ok(None)
        if kind == "enqueue_many":
            batch = tuple(op.arg)
            if not batch:
                return state, Outcome.ok(None)  # even when closed (Q-ENQ-4)
            if closed:
                return state, Outcome.error(_CANCELLED)
            return (items + batch, closed), Outcome.ok(None)
        if kind == "dequeue":
            if items:
                return (items[1:], closed), Outcome.ok(items[0])
            return state, Outcome.error(_OUT_OF_RANGE) if closed else BLOCKED
        if kind in ("dequeue_many", "dequeue_up_to"):
            n = _check_n(op)
            if n == 0:
                return state, Outcome.ok(())
            if len(items) >= n:
                return (items[n:], closed), Outcome.ok(items[:n])
            if not closed:
                return state, BLOCKED
            if kind == "dequeue_up_to" and items:
                return ((), closed), Outcome.ok(items)
            return state, Outcome.error(_OUT_OF_RANGE)
        if kind == "size":
            return state, Outcome.ok(len(items))
        if kind == "is_closed":
            return state, Outcome.ok(closed)
        if kind == "close":
            if op.arg:  # cancel_pending_enqueues=True never fails (Q-CLOSE-2)
                return (items, True), Outcome.ok(None)
            if closed:
                return state, Outcome.error(_CANCELLED)
            return (items, True), Outcome.ok(None)
        raise ValueError(
            f"FIFOModel cannot apply operation kind {kind!r} (#{op.index}); expected one of "
            f"{sorted(self.KINDS)}"
        )

    def read_only(self, op: Operation) -> bool:
        """Whether ``op`` leaves every state in which it fits unchanged (HIST-7).

        True for ``size``, ``is_closed``, calls that timed out (but
        ``enqueue_many``), failures that need a closed queue (OutOfRangeError,
        CancelledError of an ``enqueue`` or a plain ``close``), and empty batches.
        The checker linearizes such a call as soon as it fits, without branching.
        """
        return _fifo_read_only(op)

    def successors(self, state: tuple[tuple[Any, ...], bool], op: Operation) -> list[Any]:
        """Adds what ``apply`` cannot say: timeouts and failed batches (HIST-9).

        * A call that raised DeadlineExceededError had no effect, except an
          ``enqueue_many``, which may have pushed any prefix of its batch first
          (Q-ENQ-3, Q-TIMEOUT-2).
        * An ``enqueue_many`` that raised CancelledError pushed some prefix: a
          non-empty one while the queue was open, or nothing once it was closed.
        * A pending ``enqueue_many`` may have pushed any prefix.
        """
        outcome = op.outcome
        items, closed = state
        if op.kind == "enqueue_many" and (outcome is None or outcome.is_error):
            batch = tuple(op.arg)
            name = None if outcome is None else outcome.value
            if name not in (None, _TIMEOUT, _CANCELLED):
                return []
            # The prefix lengths k this call may have pushed, shortest first.
            lengths: list[int] = []
            if name != _CANCELLED or closed:
                lengths.append(0)
            if not closed:
                lengths.extend(range(1, len(batch) + 1))
            # Try first the prefix whose elements the history shows coming out:
            # the order changes how fast the search is, never its verdict.
            seen = 0
            while seen < len(batch) and batch[seen] in self._seen:
                seen += 1
            if self._only_seen_prefix:
                # Every enqueued element is distinct and nothing can take an
                # element out unseen: an element pushed but never returned stays
                # in the queue for good, in front of every later one, so the
                # shortest prefix that holds every element seen fits whenever a
                # longer one does (see prepare).
                lengths = [k for k in lengths if k >= seen][:1]
            elif seen in lengths:
                lengths.remove(seen)
                lengths.insert(0, seen)
            return self._in_dequeue_order(items, [(items + batch[:k], closed) for k in lengths])
        if outcome is not None and outcome.is_error and outcome.value == _TIMEOUT:
            if op.kind not in self.KINDS:
                self.apply(state, op)  # raises the unknown-kind error
            return [state]
        result = _default_successors(self, state, op)
        if op.kind in ("enqueue", "enqueue_many"):
            return self._in_dequeue_order(items, result)
        return result

    def _in_dequeue_order(self, items: tuple[Any, ...], states: list[Any]) -> list[Any]:
        """Drop the states whose new elements could not come out in their queue order.

        A hint (see prepare): with every element enqueued once and returned at most
        once, an element appended behind ``y`` comes out after ``y``, so its
        dequeue must not end before ``y``'s begins; and behind an element that
        never comes out, no element can come out at all.
        """
        during = self._dequeued_during
        if during is None:
            return states
        kept = []
        for state in states:
            new_items = state[0]
            if len(new_items) == len(items):
                kept.append(state)
                continue
            latest_call = -math.inf  # the latest dequeue call of an element ahead
            for y in items:
                found = during.get(y)
                latest_call = math.inf if found is None else max(latest_call, found[0])
                if latest_call == math.inf:
                    break
            fits = True
            for a in new_items[len(items) :]:
                found = during.get(a)
                if found is None:
                    latest_call = math.inf
                elif found[1] < latest_call:
                    fits = False
                    break
                else:
                    latest_call = max(latest_call, found[0])
            if fits:
                kept.append(state)
        return kept


def _fifo_read_only(op: Operation) -> bool:
    outcome = op.outcome
    if outcome is None:
        return op.kind in ("size", "is_closed")
    kind, error = op.kind, outcome.value if outcome.is_error else None
    if kind in ("size", "is_closed"):
        return True
    if error == _TIMEOUT:
        return kind != "enqueue_many"
    if kind in ("dequeue_many", "dequeue_up_to") and op.arg == 0:
        return True
    if kind == "enqueue_many" and not outcome.is_error:
        return not tuple(op.arg)
    if error == _OUT_OF_RANGE:
        return kind in ("dequeue", "dequeue_many", "dequeue_up_to")
    if error == _CANCELLED:
        return kind == "enqueue" or (kind == "close" and not op.arg)
    return False


def _check_n(op: Operation) -> int:
    n = op.arg
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"{op.kind}(n) needs an int n >= 0 as the operation's arg; got {n!r} (#{op.index})")
    return n


# ---------------------------------------------------------------------------
# The checker (HIST-6, HIST-7, HIST-8)
# ---------------------------------------------------------------------------


class SearchBudgetExceeded(RuntimeError):
    """The search tried more steps than ``max_steps`` without an answer (HIST-7)."""


@dataclass
class Report:
    """The checker's answer (HIST-8).

    When ``linearizable`` is False:

    * ``op`` is the first operation that cannot be linearized: the one whose
      return is the earliest event that no linearization of the history up to
      it can pass;
    * ``window`` is a smallest set of operations, ``op`` included, that overlap
      ``op`` in real time and together with everything that returned before
      ``op`` was called cannot be ordered, while without ``op`` they can;
    * ``states`` are the model states from which the search tried ``op`` and
      failed at that point (at most ``max_states``), and ``expected`` the
      outcome the model gives ``op`` in each;
    * ``approximate`` is True when the searches that pin these down (run
      without the model's whole-history hints) ran out of ``max_steps``: then
      ``op`` is where the hinted search got stuck and ``window`` is not shrunk.
    """

    linearizable: bool
    operations: int
    steps: int
    order: list[Operation] = field(default_factory=list)
    op: Operation | None = None
    window: list[Operation] = field(default_factory=list)
    states: list[Any] = field(default_factory=list)
    expected: list[Any] = field(default_factory=list)
    approximate: bool = False

    def __bool__(self) -> bool:
        return self.linearizable

    def explain(self) -> str:
        """A readable account of the verdict."""
        if self.linearizable:
            return f"linearizable: {self.operations} operations, {self.steps} search steps"
        assert self.op is not None
        origin = min(o.call for o in self.window)
        lines = [
            f"NOT linearizable ({self.operations} operations, {self.steps} search steps).",
            f"First operation that cannot be linearized: {self.op.describe(origin)}",
            f"Smallest window that cannot be ordered ({len(self.window)} operations, "
            "after everything that returned before it):",
            *(("  " + o.describe(origin)) for o in self.window),
            "Model states when it was tried, and what the model expected of it there:",
            *(f"  {s!r}: {e!r}" for s, e in zip(self.states, self.expected)),
        ]
        if self.approximate:
            lines.append("(approximate: the search budget ran out while pinning down the window)")
        return "\n".join(lines)


class NotLinearizableError(AssertionError):
    """Raised by ``assert_linearizable``; ``report`` holds the details (HIST-8)."""

    def __init__(self, report: Report, context: str = "") -> None:
        self.report = report
        text = report.explain()
        super().__init__(f"{context}\n{text}" if context else text)


_INF = math.inf


@dataclass
class _Entry:
    op: Operation
    ret: float  # the return time in this search; inf when optional
    optional: bool  # may stay unlinearized (pending, or returns after the prefix)


@dataclass
class _Result:
    ok: bool
    steps: int
    order: list[int]
    stuck_at: int  # event position of the furthest return the search could not pass
    stuck_op: int  # entry index of that return's operation
    stuck_states: list[Any]


def _successor_fn(model: Any) -> Callable[[Any, Operation], Iterable[Any]]:
    successors = getattr(model, "successors", None)
    if callable(successors):
        return successors
    return lambda state, op: _default_successors(model, state, op)


def _search(
    entries: Sequence[_Entry], model: Any, init: Any, max_steps: int | None, max_states: int
) -> _Result:
    """Wing and Gong's linearizability search, Lowe's just-in-time form, memoised (HIST-7).

    Events (calls and returns) sorted by time form a doubly linked list.  The
    *candidates* are the operations whose calls come before the first return
    still in the list: exactly the operations that may be linearized next.  The
    search linearizes one (applies it to the model and unlinks its call and
    return), and when none fits it is stuck at that first return and
    backtracks.  Candidates are tried in order of their return times, so a
    call that waited long (and so probably took effect late) is tried last.
    A configuration, the set of linearized operations (a bit mask) plus the
    model state, is explored at most once.
    """
    successors = _successor_fn(model)
    read_only_fn = getattr(model, "read_only", None)
    n = len(entries)
    # Events: (time, 0 for call / 1 for return, op). At equal times calls sort
    # first, so equal stamps count as overlapping (HIST-2).
    events = sorted(
        [(e.op.call, 0, i) for i, e in enumerate(entries)] + [(e.ret, 1, i) for i, e in enumerate(entries)]
    )
    size = len(events)
    head = size  # sentinel
    nxt = [*range(1, size), -1, 0 if size else -1]
    prv = [head, *range(size - 1), -1]
    is_call = [kind == 0 for _, kind, _ in events]
    ev_op = [i for _, _, i in events]
    call_pos = [0] * n
    ret_pos = [0] * n
    for pos, (_, kind, i) in enumerate(events):
        if kind == 0:
            call_pos[i] = pos
        else:
            ret_pos[i] = pos
    optional = [e.optional for e in entries]
    ops = [e.op for e in entries]
    hint_fn = getattr(model, "candidate_key", None)
    hint = [(hint_fn(op), op.call) for op in ops] if callable(hint_fn) else None
    read_only = [bool(read_only_fn(op)) if callable(read_only_fn) else False for op in ops]

    def unlink(pos: int) -> None:
        p, q = prv[pos], nxt[pos]
        nxt[p] = q
        if q != -1:
            prv[q] = p

    def relink(pos: int) -> None:
        p, q = prv[pos], nxt[pos]
        nxt[p] = pos
        if q != -1:
            prv[q] = pos

    def candidates() -> tuple[list[int], int]:
        """The operations that may go next, in the order to try; and the first return's position."""
        found = []
        pos = nxt[head]
        while pos != -1 and is_call[pos]:
            found.append(ev_op[pos])
            pos = nxt[pos]
        if hint is not None:
            found.sort(key=hint.__getitem__)
        return found, pos

    required = n - sum(optional)
    cache: set[tuple[int, Any]] = set()
    # Frames: (candidates, index of the one linearized, its successor states,
    # index of the next successor to try, state before it).  A read-only
    # operation linearized at once leaves a frame with no successors left, and
    # no further candidates (see the main loop).
    stack: list[tuple[list[int], int, list[Any], int, Any]] = []
    state = init
    mask = 0
    done_required = 0
    steps = 0
    stuck_at, stuck_op, stuck_states = -1, -1, []

    def descend(cands: list[int], ci: int, alts: list[Any] | None, ai: int) -> bool:
        """Linearize the first untried (candidate, successor) from (ci, ai) on; False if none."""
        nonlocal state, mask, done_required
        while ci < len(cands):
            i = cands[ci]
            if alts is None:
                alts = list(successors(state, ops[i]))
            bit = 1 << i
            while ai < len(alts):
                after = alts[ai]
                ai += 1
                key = (mask | bit, after)
                if key in cache:
                    continue
                cache.add(key)
                stack.append((cands, ci, alts, ai, state))
                state = after
                mask |= bit
                if not optional[i]:
                    done_required += 1
                unlink(call_pos[i])
                unlink(ret_pos[i])
                return True
            ci, alts, ai = ci + 1, None, 0
        return False

    def stuck(first_return: int) -> None:
        """The current configuration cannot get past ``first_return``: keep the furthest."""
        nonlocal stuck_at, stuck_op, stuck_states
        if first_return > stuck_at:
            stuck_at, stuck_op, stuck_states = first_return, ev_op[first_return], []
        if first_return == stuck_at and len(stuck_states) < max_states and state not in stuck_states:
            stuck_states.append(state)

    def _linearize_read_only(cands: list[int]) -> bool | None:
        """Linearize a read-only candidate that fits now, without branching.

        If an operation fits in this state and leaves every state it fits in
        unchanged (the model's ``read_only``), then whenever some linearization
        goes on from here, one goes on with that operation first: moving it
        forward changes no other state.  So it is linearized at once and the
        other candidates are not tried here.  Returns True when it did that,
        False when that configuration was already explored (so this one fails
        too), None when there is no such candidate.
        """
        nonlocal state, mask, done_required
        for i in cands:
            if not read_only[i]:
                continue
            alts = list(successors(state, ops[i]))
            if len(alts) != 1 or alts[0] != state:
                continue
            key = (mask | (1 << i), state)
            if key in cache:
                return False
            cache.add(key)
            stack.append(([i], 0, alts, 1, state))  # nothing else to try in this frame
            mask |= 1 << i
            if not optional[i]:
                done_required += 1
            unlink(call_pos[i])
            unlink(ret_pos[i])
            return True
        return None

    while True:
        if done_required == required:
            return _Result(True, steps, [frame[0][frame[1]] for frame in stack], -1, -1, [])
        steps += 1
        if max_steps is not None and steps > max_steps:
            raise SearchBudgetExceeded(
                f"the linearizability search gave up after max_steps={max_steps} steps "
                f"({n} operations); raise max_steps or check a shorter history"
            )
        cands, first_return = candidates()
        forced = _linearize_read_only(cands)
        if forced is True or (forced is None and descend(cands, 0, None, 0)):
            continue
        stuck(first_return)
        # Backtrack until some frame has another (candidate, successor) to try.
        while True:
            if not stack:
                return _Result(False, steps, [], stuck_at, stuck_op, stuck_states)
            cands, ci, alts, ai, before = stack.pop()
            i = cands[ci]
            relink(ret_pos[i])
            relink(call_pos[i])
            mask &= ~(1 << i)
            if not optional[i]:
                done_required -= 1
            state = before
            steps += 1
            if descend(cands, ci, alts, ai):
                break
            stuck(candidates()[1])  # this configuration is exhausted too


def _entries(ops: Sequence[Operation], cut: float = _INF) -> list[_Entry]:
    """Search entries for ``ops`` seen up to time ``cut``: later returns become optional."""
    result = []
    for op in ops:
        if op.ret is None or op.ret > cut:
            result.append(_Entry(op, _INF, True))
        else:
            result.append(_Entry(op, float(op.ret), False))
    return result


def _as_operations(history: History | Iterable[Operation]) -> list[Operation]:
    if isinstance(history, History):
        return history.operations()
    if isinstance(history, (str, bytes)) or not isinstance(history, Iterable):
        raise TypeError(
            f"history must be a History or an iterable of Operation; got {history!r}"
        )
    ops = list(history)
    for op in ops:
        if not isinstance(op, Operation):
            raise TypeError(f"history must contain only Operation objects; got {op!r}")
        if op.ret is not None and op.ret < op.call:
            raise ValueError(f"history: operation {op.describe()} returned before it was called")
    return ops


def _check_model(model: object) -> None:
    if not (callable(getattr(model, "init", None)) and callable(getattr(model, "apply", None))):
        raise TypeError(
            f"model must have init() and apply(state, op) (see coordkit.history.Model); got {model!r}"
        )


def check(
    history: History | Iterable[Operation],
    model: Any,
    *,
    max_steps: int | None = 5_000_000,
    max_states: int = 5,
    minimize: bool = True,
) -> Report:
    """Decide whether ``history`` is linearizable with respect to ``model`` (HIST-6..8).

    Returns a ``Report`` (true in a boolean context when linearizable).  When
    it is, ``report.order`` is one linearization.  When it is not, the report
    names the first operation that cannot be linearized and the smallest
    window around it (HIST-8); ``minimize=False`` skips shrinking the window
    (it is then every operation overlapping that one).

    Raises:
        TypeError: ``history`` or ``model`` is not what is described above.
        ValueError: ``max_steps`` or ``max_states`` is not a positive int.
        SearchBudgetExceeded: the search took more than ``max_steps`` steps.
    """
    ops = _as_operations(history)
    _check_model(model)
    prepare = getattr(model, "prepare", None)
    if callable(prepare):
        prepare(ops)
    bad_steps = isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
    if max_steps is not None and bad_steps:
        raise ValueError(f"check(max_steps) must be None or an int >= 1; got {max_steps!r}")
    if isinstance(max_states, bool) or not isinstance(max_states, int) or max_states < 1:
        raise ValueError(f"check(max_states) must be an int >= 1; got {max_states!r}")
    init = model.init()
    entries = _entries(ops)
    result = _search(entries, model, init, max_steps, max_states)
    if result.ok:
        return Report(True, len(ops), result.steps, [entries[i].op for i in result.order])

    # The report is about prefixes and parts of the history, so hints drawn
    # from the whole history no longer hold: switch them off (HIST-5, HIST-8).
    if callable(prepare):
        prepare(None)
    steps = result.steps
    approximate = False
    try:
        exact = _search(entries, model, init, max_steps, max_states)
        steps += exact.steps
        assert not exact.ok, "a model's hints changed the verdict"
        result = exact
    except SearchBudgetExceeded:
        approximate = True
    failed = entries[result.stuck_op].op
    assert failed.ret is not None
    cut = failed.ret
    # The prefix up to the failing return: later calls are irrelevant, later
    # returns become optional.
    prefix = [op for op in ops if op.call <= cut]
    before = [op for op in prefix if op.ret is not None and op.ret < failed.call]
    window = [op for op in prefix if not (op.ret is not None and op.ret < failed.call)]

    def linearizable(sub: list[Operation]) -> bool:
        nonlocal steps
        r = _search(_entries(before + sub, cut), model, init, max_steps, 1)
        steps += r.steps
        return r.ok

    if minimize and not approximate:
        kept = list(window)
        try:
            for op in sorted(window, key=lambda o: o.call, reverse=True):
                if op is failed:
                    continue
                trial = [o for o in kept if o is not op]
                if not linearizable(trial) and linearizable([o for o in trial if o is not failed]):
                    kept = trial
        except SearchBudgetExceeded:
            approximate = True
        window = kept
    window.sort(key=lambda o: (o.call, o.index))
    expected = [model.apply(s, failed)[1] for s in result.stuck_states]
    return Report(
        False, len(ops), steps, [], failed, window, list(result.stuck_states), expected, approximate
    )


def assert_linearizable(
    history: History | Iterable[Operation],
    model: Any,
    context: str = "",
    **options: Any,
) -> Report:
    """``check``, raising ``NotLinearizableError`` (an AssertionError) with the report when it fails.

    ``context`` (for example the seed of a stress run) starts the message.
    """
    report = check(history, model, **options)
    if not report:
        raise NotLinearizableError(report, context)
    return report
