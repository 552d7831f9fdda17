"""State machines for the queue rules: FIFO, RandomShuffle, PaddingFIFO and Priority queues.

Each machine creates one queue inside a ``coordkit.Harness`` and runs queue
calls in controlled threads.  A call that must wait stays pending (parked in
the runtime) until a later rule releases it; ``advance`` lets virtual time
pass so that timeouts fire.  After every rule the machine compares each call
that finished, each call still waiting, ``size()``, ``is_closed()`` and (when
the queue has it) ``statistics()`` with ``coordkit.stateful.models.QueueModel``.

Point a machine at your own queue class by subclassing it::

    from coordkit.stateful import FIFOQueueMachine

    class MyQueueMachine(FIFOQueueMachine):
        queue_factory = MyQueue          # called as queue_factory(capacity)

    TestMyQueue = MyQueueMachine.TestCase

The protocol the queue must meet is in ``QueueMachine``'s docstring and in
``specs/stateful.md`` (BYO-2).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from coordkit.engine.trace import Choices
from coordkit.models import QueueModel
from coordkit.queues import FIFOQueue, PaddingFIFOQueue, PriorityQueue, RandomShuffleQueue
from coordkit.stateful._machine import SCHEDULES, Advance, ModelMachine, factory, weighted

__all__ = [
    "Advance",
    "Contend",
    "FIFOQueueMachine",
    "NewQueue",
    "Race",
    "PaddingFIFOQueueMachine",
    "PriorityQueueMachine",
    "QueueMachine",
    "QueueOp",
    "RandomShuffleQueueMachine",
]

_KINDS = ("enqueue", "enqueue_many", "dequeue", "dequeue_many", "dequeue_up_to", "close", "cancel_close")


@dataclass(frozen=True)
class Garbled:
    """A returned value that ``QueueMachine.decode`` could not read; it equals no expected value."""

    text: str


@dataclass(frozen=True)
class QueueOp:
    """One queue call, as a rule argument: ``QueueOp("dequeue_many", n=2, timeout=0)``.

    ``kind`` is one of enqueue, enqueue_many (``n`` new elements), dequeue,
    dequeue_many, dequeue_up_to (``n`` elements), close (plain) and
    cancel_close (``close(cancel_pending_enqueues=True)``).  The elements are
    made by the machine: distinct ints, ``(priority, int)`` tuples for a
    PriorityQueue, ``(int, vector)`` pairs for a PaddingFIFOQueue.
    """

    kind: str
    n: int = 1
    timeout: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"QueueOp kind must be one of {_KINDS}, got {self.kind!r}")

    def __repr__(self) -> str:
        args = [repr(self.kind)]
        if self.kind in ("enqueue_many", "dequeue_many", "dequeue_up_to"):
            args.append(f"n={self.n}")
        if self.timeout is not None:
            args.append(f"timeout={self.timeout!r}")
        return f"QueueOp({', '.join(args)})"


@dataclass(frozen=True)
class Race:
    """A step that starts several calls at once; any order of them is allowed (MACH-4)."""

    ops: tuple[QueueOp, ...]

    def __init__(self, ops: Any) -> None:
        object.__setattr__(self, "ops", tuple(ops))

    def __repr__(self) -> str:
        return f"Race({list(self.ops)!r})"


@dataclass(frozen=True)
class Contend:
    """A race at the boundary: one more ``enqueue`` than there are free slots, or one
    more ``dequeue`` than there are elements to take (between 2 and 4 calls).

    Check-then-act bugs live exactly there: two callers both see the last slot
    (or element) free.  When nothing is within reach, a call that never waits
    (``timeout=0``) first frees a slot or adds an element.  Everything is read
    from the model, so the same program always does the same.
    """

    kind: str = "enqueue"

    def __repr__(self) -> str:
        return f"Contend({self.kind!r})"


@dataclass(frozen=True)
class NewQueue:
    """A step that replaces a closed queue, on which no call waits any more, by a new
    one from the factory with the same arguments; on an open queue it does nothing.

    A closed queue has little left to show, so an example gets several queue lives.
    """

    def __repr__(self) -> str:
        return "NewQueue()"


# Calls that add or take elements come far more often than closes, so that a
# queue spends a while open with calls waiting on both lists before it
# closes; then ``NewQueue`` starts another life.  Most calls have a timeout
# and about one step in seven lets time pass, so waiting calls also time
# out.  All of it is one rule: Hypothesis's swarm testing switches whole
# rules off per example, which would otherwise starve many examples of
# races, of time or of new queues.
_WEIGHTED_KINDS = (
    ["enqueue"] * 18 + ["enqueue_many"] * 6 + ["dequeue"] * 6 + ["dequeue_many"] * 16
    + ["dequeue_up_to"] * 10 + ["close", "cancel_close"] * 3
)
# 0 never waits (Q-TIMEOUT-3); the others fire under ``Advance``.
TIMEOUTS = st.sampled_from([None, None, 0, 1, 2.5, 4, 1.5, 2, 3])


def _calls() -> st.SearchStrategy[QueueOp]:
    return st.builds(QueueOp, kind=st.sampled_from(_WEIGHTED_KINDS), n=st.integers(1, 4), timeout=TIMEOUTS)


def _batches() -> st.SearchStrategy[QueueOp]:
    # A batch that times out while it holds elements must give them back
    # (Q-DEQ-6): these batch dequeues mostly have a positive timeout.
    return st.builds(QueueOp, kind=st.sampled_from(["dequeue_many", "dequeue_up_to"]), n=st.integers(2, 4),
                     timeout=st.sampled_from([None, 1, 2.5, 4, 1.5, 2, 3]))


# Racing calls have no timeout: their deadlines would coincide.  Two races in
# three are between calls of one kind, the classic shape of a race: mostly
# enqueuers racing for the last free slots, or dequeuers for the last elements.
_RACER = st.builds(QueueOp, kind=st.sampled_from(_WEIGHTED_KINDS), n=st.integers(0, 3))
_TWIN = st.builds(QueueOp, kind=st.sampled_from(
    ["enqueue"] * 3 + ["dequeue"] * 3 + ["enqueue_many", "dequeue_many", "dequeue_up_to", "close"]),
    n=st.integers(0, 3))


def _twins() -> st.SearchStrategy[Race]:
    return st.tuples(_TWIN, st.integers(2, 3)).map(lambda pair: Race([pair[0]] * pair[1]))


STEPS = weighted(
    (8, _calls),
    (2, _batches),
    (2, _twins),
    (4, lambda: st.builds(Contend, st.sampled_from(["enqueue", "dequeue"]))),
    (1, lambda: st.lists(_RACER, min_size=2, max_size=3).map(Race)),
    (3, lambda: st.builds(Advance, st.sampled_from([1, 2, 0, 3]))),
    (1, lambda: st.just(NewQueue())),
)


def _checked_capacities(cls: type) -> tuple[int, ...]:
    """``cls.capacities`` as a tuple, or a TypeError naming the machine class (BYO-2)."""
    capacities = getattr(cls, "capacities", None)
    try:
        values = tuple(capacities)  # type: ignore[arg-type]
    except TypeError:
        values = ()
    if not values or any(isinstance(c, bool) or not isinstance(c, int) for c in values):
        raise TypeError(f"{cls.__name__}.capacities must be a non-empty tuple of ints "
                        f"(negative: unbounded); got {capacities!r}")
    return values


class QueueMachine(ModelMachine[QueueModel]):
    """Runs queue calls in controlled threads and checks them against ``QueueModel``.

    ``queue_factory(capacity)`` must return a new queue with coordkit's queue
    methods (BYO-2), with the semantics of ``specs/queues.md``.  The capacity
    comes from the ``capacities`` attribute (negative: unbounded; 0: every
    enqueue waits for a dequeuer), which a subclass may narrow.  The queue has:

    - ``enqueue(x, timeout=None)``, ``enqueue_many(xs, timeout=None)``,
      ``dequeue(timeout=None)``, ``dequeue_many(n, timeout=None)``,
      ``dequeue_up_to(n, timeout=None)``,
      ``close(cancel_pending_enqueues=False, timeout=None)``, ``size()`` and
      ``is_closed()``; ``timeout=`` is only passed when it is not None;
    - errors from ``coordkit.errors``: CancelledError, OutOfRangeError,
      DeadlineExceededError (or subclasses);
    - optionally ``statistics()`` returning an object with ``size``,
      ``closed``, ``pending_enqueues``, ``pending_dequeues``,
      ``pending_closes`` and ``held``; whichever of these it has are checked.

    Its locks, conditions and clocks must be created when the factory runs
    (the machine calls it inside the harness), from ``threading``, ``time`` or
    ``coordkit.sync``; plain ``threading`` code needs no change (BYO-5).
    """

    queue_factory: Callable[..., Any] | None = None
    order = "fifo"
    # The capacities the queues of an example get, drawn uniformly from this
    # tuple (a value listed twice comes twice as often).  Negative is unbounded
    # (an enqueue never waits); 0 stores nothing, so every enqueue waits until a
    # dequeuer takes its element.  Narrow it for a queue without some mode, for
    # example ``capacities = (1, 2, 3, -1)`` for one that has no capacity 0 (BYO-2).
    capacities: tuple[int, ...] = (2, 1, 3, 2, 1, 0, -1)

    def __init__(self) -> None:
        super().__init__()
        self.queue: Any = None
        self._elements = itertools.count()
        self._batch_ops: set[int] = set()
        self._dequeue_ops: set[int] = set()  # single dequeues
        self._created: set[Any] = set()  # every element the machine made
        self.returned: Counter[Any] = Counter()

    # -- how elements look for this queue class -------------------------------------------

    def element(self, i: int) -> Any:
        """The i-th element the machine enqueues."""
        return i

    def _new_element(self) -> Any:
        x = self.element(next(self._elements))
        self._created.add(x)
        return x

    def enqueue_argument(self, element: Any) -> Any:
        """What ``enqueue`` is passed for this element."""
        return element

    def batch_argument(self, elements: list[Any]) -> Any:
        """What ``enqueue_many`` is passed for these elements."""
        return elements

    def decode(self, key: int, value: Any) -> Any:
        """What dequeue call ``key`` returned, as the model's elements: a batch as a list.

        A value that cannot be read as an answer of the call decodes to a
        ``Garbled`` value, which equals nothing the model expects.
        """
        if key in self._batch_ops:
            return list(value) if isinstance(value, (list, tuple)) else Garbled(repr(value))
        return value

    def make_model(self, capacity: int) -> QueueModel:
        """The model of a new queue made by ``queue_factory(capacity)``."""
        return QueueModel(capacity, self.order)

    # -- set-up ------------------------------------------------------------------------------

    @classmethod
    def _creation_rule(cls) -> Callable[..., None]:
        """The ``@initialize`` rule that creates the queue, drawing from ``cls.capacities``."""

        def create_queue(self: QueueMachine, capacity: int) -> None:
            """A queue of this capacity (negative: unbounded), created inside the harness (MACH-1)."""
            self._fresh_queue(capacity)

        create_queue._from_capacities = True  # type: ignore[attr-defined]
        return initialize(capacity=st.sampled_from(_checked_capacities(cls)))(create_queue)  # type: ignore[no-any-return]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every subclass draws from its own ``capacities`` (BYO-2): the rule is
        # rebuilt for it, so narrowing the attribute is all a user has to do.
        super().__init_subclass__(**kwargs)
        inherited = getattr(cls, "create_queue", None)
        if "create_queue" not in vars(cls) and getattr(inherited, "_from_capacities", False):
            cls.create_queue = cls._creation_rule()  # type: ignore[method-assign]

    def _fresh_queue(self, *params: Any) -> None:
        """A new queue from the factory, and its model, at the harness's current time."""
        self._params = params
        make = factory(self, "queue_factory")
        self.queue = self.run_call(lambda: make(*params))
        model = self.make_model(*params)
        model.now = self.harness.now
        self.models = [model]
        self.returned = Counter()

    # -- rules ---------------------------------------------------------------------------------

    @rule(op=STEPS, choices=SCHEDULES)
    def step(self, op: QueueOp | Race | Contend | Advance | NewQueue, choices: Choices) -> None:
        """One step (MACH-2): a queue call in a new controlled thread, which may stay
        waiting; a ``Race`` of calls started at once, or ``Contend`` for the last slots
        or elements (MACH-4); ``Advance(n)``: virtual time passes and due calls time
        out; ``NewQueue()``: a closed queue on which nothing waits is replaced by a
        new one (MACH-7).

        A race runs its calls one after another instead when the orders of
        earlier races still undecided, times the orders of this one, would be too
        many candidate models (``can_race``).
        """
        if isinstance(op, QueueOp):
            self._step([op], choices)
        elif isinstance(op, Race):
            if self.can_race(len(op.ops)):
                self._step(list(op.ops), choices)
            else:
                for call in op.ops:
                    self._step([call], choices)
        elif isinstance(op, Contend):
            self._contend(op.kind, choices)
        elif isinstance(op, Advance):
            self.advance(op, choices)
        elif all(m.closed and not m.pending() for m in self.models):
            self._fresh_queue(*self._params)
            self.check_step(repr(op), [])

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def nothing_lost_or_duplicated(self) -> None:
        """Every returned element was enqueued and came out once; the rest are stored or held."""
        if self.queue is None:
            return
        duplicates = [x for x, count in self.returned.items() if count > 1]
        assert not duplicates, f"elements returned twice: {duplicates}"
        invented = [x for x in self.returned if x not in self._created]
        assert not invented, f"elements returned that were never enqueued: {invented}"
        model = self.models[0]
        stats = model.statistics()
        assert model.accepted == stats.size + stats.held + sum(self.returned.values()), (
            f"{model.accepted} elements were accepted, but {stats.size} are stored, {stats.held} held "
            f"and {sum(self.returned.values())} returned"
        )

    # -- running a step ------------------------------------------------------------------------

    def _contend(self, kind: str, choices: Choices) -> None:
        """Move an open queue to the boundary (one element within reach, or one free
        slot) with a call that never waits, then race one caller too many for it."""
        model = self.models[0]
        if not model.closed and kind == "dequeue" and not model.dequeuers and model.size() <= model.reserve:
            self._step([QueueOp("enqueue", timeout=0)], None)
        elif (not model.closed and kind == "enqueue" and not model.enqueuers
              and model.size() >= model.capacity):
            self._step([QueueOp("dequeue", timeout=0)], None)
        model = self.models[0]
        free = model.capacity - model.size() if kind == "enqueue" else model.size() - model.reserve
        self.step(Race([QueueOp(kind)] * int(min(max(free + 1, 2), 4))), choices)

    def _timeout(self, timeout: float | None) -> float | None:
        """A timeout whose deadline no waiting call shares (MACH-6); 0 and None as they are."""
        if not timeout:
            return timeout
        now = self.models[0].now
        taken = {d for model in self.models for d in model.deadlines()}
        while now + timeout in taken:
            timeout += 0.125
        return timeout

    def _step(self, ops: list[QueueOp], choices: Choices) -> None:
        events = []
        for op in ops:
            key = self.new_key()
            fn, event = self._call(key, op)
            self.spawn_op(key, repr(op), fn)
            events.append((f"op{key} {op!r}", event))
        self.settle_world(choices)
        label = repr(ops[0]) if len(ops) == 1 else f"race({ops!r})"
        self.check_step(label, events, choices)

    def _call(self, key: int, op: QueueOp) -> tuple[Callable[[], Any], Callable[[QueueModel], Any]]:
        q = self.queue
        timeout = self._timeout(op.timeout)
        kw: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        kind = op.kind
        if kind == "enqueue":
            x = self._new_element()
            arg = self.enqueue_argument(x)
            return (lambda: q.enqueue(arg, **kw)), (lambda m: m.enqueue(key, x, timeout))
        if kind == "enqueue_many":
            xs = [self._new_element() for _ in range(op.n)]
            arg = self.batch_argument(xs)
            return (lambda: q.enqueue_many(arg, **kw)), (lambda m: m.enqueue_many(key, xs, timeout))
        if kind == "dequeue":
            self._dequeue_ops.add(key)
            return (lambda: q.dequeue(**kw)), (lambda m: m.dequeue(key, timeout))
        if kind in ("dequeue_many", "dequeue_up_to"):
            self._batch_ops.add(key)
            n, up_to = op.n, kind == "dequeue_up_to"
            method = q.dequeue_up_to if up_to else q.dequeue_many
            return (lambda: method(n, **kw)), (lambda m: m.dequeue_many(key, n, timeout, up_to))
        cancel = kind == "cancel_close"
        ckw = {"cancel_pending_enqueues": True, **kw} if cancel else kw
        return (lambda: q.close(**ckw)), (lambda m: m.close(key, cancel, timeout))

    # -- comparing ------------------------------------------------------------------------------

    def _decoded(self, key: int, value: Any) -> Any:
        if key in self._batch_ops or key in self._dequeue_ops:
            return self.decode(key, value)
        return value

    def picks(self, model: QueueModel, values: dict[int, Any]) -> None:
        model.picks = {key: self._decoded(key, value) for key, value in values.items()}

    def same_value(self, key: int, expected: Any, actual: Any) -> bool:
        return bool(self._decoded(key, actual) == expected)

    def check_step(self, step: str, events: Any, choices: Choices | None = None) -> None:
        finished = {key: t.operation.outcome for key, t in self._tracked.items()}
        super().check_step(step, events, choices)
        for key, outcome in finished.items():
            if outcome[0] == "ok" and key not in self._tracked and outcome[1] is not None:
                value = outcome[1]
                decoded = self._decoded(key, value)
                self.returned.update(decoded if key in self._batch_ops else [decoded])

    def observe(self) -> Any:
        q = self.queue

        def read() -> tuple[Any, ...]:
            stats = q.statistics() if callable(getattr(q, "statistics", None)) else None
            return q.size(), q.is_closed(), stats

        return (*self.run_call(read), self.harness.now)

    def state_problems(self, model: QueueModel, observed: Any) -> list[str]:
        size, closed, stats, now = observed
        problems = []
        if size != model.size():
            problems.append(f"size() is {size}, the model says {model.size()}")
        if closed != model.closed:
            problems.append(f"is_closed() is {closed}, the model says {model.closed}")
        if stats is not None:
            expected = model.statistics()
            for name in ("size", "closed", "pending_enqueues", "pending_dequeues", "pending_closes", "held"):
                if hasattr(stats, name) and getattr(stats, name) != getattr(expected, name):
                    problems.append(f"statistics().{name} is {getattr(stats, name)}, "
                                    f"the model says {getattr(expected, name)}")
        if now != model.now:
            problems.append(f"the harness clock is at {now}, the model at {model.now}")
        return problems


QueueMachine.create_queue = QueueMachine._creation_rule()  # type: ignore[method-assign]


class FIFOQueueMachine(QueueMachine):
    """FIFOQueue (untyped): exact order, both waiter lists, close, cancel, timeouts, put-back."""

    queue_factory = FIFOQueue


def _padding_queue(capacity: int) -> PaddingFIFOQueue:
    return PaddingFIFOQueue(capacity, dtypes=["int64", "int64"], shapes=[(), (None,)])


class PaddingFIFOQueueMachine(QueueMachine):
    """PaddingFIFOQueue: FIFO behaviour (PAD-7) and padding (PAD-3, PAD-4, PAD-5).

    ``queue_factory(capacity)`` must return a two-component queue: an int64
    scalar (the element's number ``i``) and an int64 vector of unknown length,
    ``shapes=[(), (None,)]``.  Element ``i`` is ``(i, [i + 1] * w)`` with a width
    ``w`` of 0, 1 or 2, so the elements of a batch usually differ in length.
    ``enqueue`` is passed that pair; ``enqueue_many`` a pair of columns,
    ``([i, j, ...], [[i + 1] * w, [j + 1] * w, ...])``, whose vectors share one
    width, as a rectangular batch must.  ``dequeue`` must return the pair as it
    was enqueued (PAD-4); ``dequeue_many`` and ``dequeue_up_to`` the two columns,
    every vector padded with 0 to the longest in the batch (PAD-3), and two
    empty columns for ``n=0`` (PAD-5).  Anything else counts as a wrong value.
    """

    queue_factory = staticmethod(_padding_queue)

    def __init__(self) -> None:
        super().__init__()
        self._widths: dict[int, int] = {}

    def _payload(self, i: int, width: int | None = None) -> list[int]:
        w = self._widths[i]
        return [i + 1] * w + [0] * ((w if width is None else width) - w)

    def enqueue_argument(self, element: Any) -> Any:
        self._widths[element] = element % 3
        return (element, self._payload(element))

    def batch_argument(self, elements: list[Any]) -> Any:
        width = elements[0] % 3 if elements else 0
        for x in elements:
            self._widths[x] = width
        return (list(elements), [self._payload(x) for x in elements])

    def decode(self, key: int, value: Any) -> Any:
        try:
            return self._decode(key, value)
        except TypeError:  # unhashable or non-iterable parts
            return Garbled(repr(value))

    def _decode(self, key: int, value: Any) -> Any:
        garbled = Garbled(repr(value))
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            return garbled
        first, second = value
        if key not in self._batch_ops:  # PAD-4: exactly as enqueued
            ok = first in self._widths and second == self._payload(first)
            return first if ok else garbled
        if not isinstance(first, (list, tuple)) or not isinstance(second, (list, tuple)):
            return garbled
        ids = list(first)
        if len(second) != len(ids) or any(i not in self._widths for i in ids):
            return garbled
        width = max((self._widths[i] for i in ids), default=0)
        if list(map(list, second)) != [self._payload(i, width) for i in ids]:  # PAD-3
            return garbled
        return ids


def _shuffle_queue(capacity: int, min_after_dequeue: int) -> RandomShuffleQueue:
    return RandomShuffleQueue(capacity, min_after_dequeue, seed=0)


class RandomShuffleQueueMachine(QueueMachine):
    """RandomShuffleQueue: any stored element may come out (compared as multisets, RSQ-4),
    ``min_after_dequeue`` holds while open (RSQ-2) and not after close (RSQ-3).

    Here ``queue_factory(capacity, min_after_dequeue)`` takes two arguments.
    It should be deterministic (a fixed seed), or Hypothesis cannot replay a
    failure.
    """

    queue_factory = staticmethod(_shuffle_queue)
    order = "shuffle"
    # min_after_dequeue (1 or 0) must stay below the capacity: it is lowered to
    # capacity - 1 for a capacity of 1, and a capacity of 0 cannot be used.
    capacities = (2, 3, -1)

    @classmethod
    def _creation_rule(cls) -> Callable[..., None]:
        capacities = _checked_capacities(cls)
        if 0 in capacities:
            raise TypeError(f"{cls.__name__}.capacities cannot hold 0: a RandomShuffleQueue "
                            f"needs min_after_dequeue < capacity")

        def create_queue(self: QueueMachine, capacity: int, min_after_dequeue: int) -> None:
            """A queue of this capacity and min_after_dequeue, created inside the harness (MACH-1)."""
            if capacity >= 0:
                min_after_dequeue = min(min_after_dequeue, capacity - 1)
            self._fresh_queue(capacity, min_after_dequeue)

        create_queue._from_capacities = True  # type: ignore[attr-defined]
        return initialize(capacity=st.sampled_from(capacities),  # type: ignore[no-any-return]
                          min_after_dequeue=st.sampled_from([1, 0]))(create_queue)

    def make_model(self, capacity: int, min_after_dequeue: int = 0) -> QueueModel:  # type: ignore[override]
        return QueueModel(capacity, "shuffle", min_after_dequeue)


class PriorityQueueMachine(QueueMachine):
    """PriorityQueue of ``(priority, i)`` tuples: smallest priority first, ties in any order,
    ``dequeue_many`` takes nothing until ``n`` are stored (PQ-2, PQ-4, PQ-5)."""

    queue_factory = PriorityQueue
    order = "priority"

    def element(self, i: int) -> Any:
        return ((-i) % 3, i)  # priorities 0, 2, 1, 0, 2, 1, ...: ties and inversions
