"""Many producers and consumers on every queue class, on real OS threads.

Producers enqueue single elements and batches, consumers dequeue single
elements and batches (dequeue_many, dequeue_up_to); every call draws a timeout
(0, short, or none); a closer thread closes the queue at a random moment, with or
without cancelling the pending enqueues, sometimes with a timeout (Q-CLOSE-6),
sometimes twice.  Afterwards:

* conservation: every element enqueued successfully comes out exactly once, and a
  failed enqueue_many leaves only a prefix of its batch (Q-ENQ-3, Q-DEQ-6,
  Q-TIMEOUT-4), checked by ``Ledger``;
* the queue is quiet: no pending enqueue, dequeue or close, nothing held;
* for the FIFO queues, the recorded history is linearizable against FIFOModel
  (HIST-6, HIST-9); with single operations only, ``size()`` and the capacity are
  checked too (HIST-10);
* no hang (pytest-timeout and join deadlines) and no leaked thread (conftest).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from coordkit import FIFOQueue, PaddingFIFOQueue, PriorityQueue, RandomShuffleQueue
from coordkit.errors import CancelledError, DeadlineExceededError, OutOfRangeError
from coordkit.history import FIFOModel, History, RecordingQueue, assert_linearizable

from ._support import JOIN_TIMEOUT_SECS, Ledger, run_workers
from .conftest import SCALE, scaled

pytestmark = pytest.mark.timeout(max(120, int(120 * SCALE)))

TIMEOUTS = (0, 0.0005, 0.002, 0.01, None)


@dataclass
class QueueKind:
    """How to build one queue class's elements and read them back."""

    name: str
    make: Callable[[], Any]
    capacity: int
    element: Callable[[int], Any] = lambda i: i
    batch: Callable[[list[int]], Any] = lambda ids: list(ids)
    key: Callable[[Any], Any] = lambda x: x
    batch_key: Callable[[Any], list[Any]] = lambda b: list(b)
    check_single: Callable[[Any], None] = lambda x: None
    check_batch: Callable[[Any], None] = lambda b: None
    fifo: bool = False
    rows: dict[int, list[int]] = field(default_factory=dict)


def fifo_kind() -> QueueKind:
    return QueueKind("FIFOQueue", lambda: FIFOQueue(5), 5, fifo=True)


def padding_kind() -> QueueKind:
    """Typed: (id, row) with a row of variable length; batches are padded (PAD-3)."""
    rows: dict[int, list[int]] = {}
    kind = QueueKind(
        "PaddingFIFOQueue",
        lambda: PaddingFIFOQueue(5, ["int64", "int64"], [(), (None,)]),
        5,
        fifo=True,
        rows=rows,
    )

    def element(i: int) -> Any:
        rows[i] = [i % 97] * (i % 3)
        return (i, rows[i])

    def batch(ids: list[int]) -> Any:
        width = ids[0] % 3  # one width per batch: a batch must be rectangular
        for i in ids:
            rows[i] = [i % 97] * width
        return (list(ids), [rows[i] for i in ids])

    def check_single(x: Any) -> None:
        i, row = x
        assert row == rows[i], f"element {i} came out as {row}, went in as {rows[i]}"

    def check_batch(b: Any) -> None:
        ids, padded = b
        width = max((len(rows[i]) for i in ids), default=0)
        for i, row in zip(ids, padded):
            assert row == rows[i] + [0] * (width - len(rows[i])), (i, row, rows[i], width)

    kind.element, kind.batch, kind.check_single, kind.check_batch = element, batch, check_single, check_batch
    kind.key = lambda x: x[0]
    kind.batch_key = lambda b: list(b[0])
    return kind


def shuffle_kind(seed: int) -> QueueKind:
    return QueueKind("RandomShuffleQueue", lambda: RandomShuffleQueue(8, 2, seed=seed), 8)


def priority_kind() -> QueueKind:
    """Untyped (priority, id) tuples; a batch comes out sorted by priority (PQ-2)."""

    def check_batch(b: Any) -> None:
        priorities = [e[0] for e in b]
        assert priorities == sorted(priorities), f"batch not in priority order: {b}"

    return QueueKind(
        "PriorityQueue",
        lambda: PriorityQueue(6),
        6,
        element=lambda i: (i % 5, i),
        batch=lambda ids: [(i % 5, i) for i in ids],
        key=lambda x: x[1],
        batch_key=lambda b: [e[1] for e in b],
        check_batch=check_batch,
    )


class Progress:
    """Counts producer operations, so the closer can act after a random number of them."""

    def __init__(self, producers: int) -> None:
        self._cond = threading.Condition()  # guards both counters
        self._ops = 0
        self._producers_left = producers

    def tick(self) -> None:
        with self._cond:
            self._ops += 1
            self._cond.notify_all()

    def producer_done(self) -> None:
        with self._cond:
            self._producers_left -= 1
            self._cond.notify_all()

    def wait(self, ops: int) -> None:
        with self._cond:
            ok = self._cond.wait_for(
                lambda: self._ops >= ops or self._producers_left == 0, JOIN_TIMEOUT_SECS
            )
            assert ok, "producers made no progress"


def run_queue_stress(
    kind: QueueKind,
    seed: int,
    producers: int,
    consumers: int,
    ops_per_producer: int,
    batches: bool = True,
    record: bool = False,
) -> None:
    """The workload described in the module docstring; asserts everything it promises."""
    context = f"{kind.name} seed={seed}"
    queue = kind.make()
    history = History()
    q: Any = RecordingQueue(queue, history, kind.key, kind.batch_key) if record else queue
    ledger = Ledger()
    progress = Progress(producers)

    def producer(p: int) -> None:
        rng = random.Random(f"{seed}:producer:{p}")
        next_id = p * 1_000_000
        try:
            for _ in range(ops_per_producer):
                k = rng.choice((1, 1, 2, 3, 4)) if batches else 1
                ids = list(range(next_id, next_id + k))
                next_id += k
                timeout = rng.choice(TIMEOUTS)
                single = k == 1 and (not batches or rng.random() < 0.7)
                try:
                    if single:
                        q.enqueue(kind.element(ids[0]), timeout=timeout)
                    else:
                        q.enqueue_many(kind.batch(ids), timeout=timeout)
                except DeadlineExceededError:
                    if not single:
                        ledger.maybe(ids)  # a failed single enqueue leaves nothing
                except CancelledError:
                    if not single:
                        ledger.maybe(ids)
                    return  # the queue is closed
                else:
                    ledger.put(ids)
                finally:
                    progress.tick()
        finally:
            progress.producer_done()

    def consumer(c: int) -> None:
        rng = random.Random(f"{seed}:consumer:{c}")
        while True:
            r = rng.random()
            timeout = rng.choice(TIMEOUTS)
            try:
                if not batches:
                    if r < 0.15:
                        q.size()
                        continue
                    if r < 0.2:
                        q.is_closed()
                        continue
                if not batches or r < 0.5:
                    x = q.dequeue(timeout=timeout)
                    kind.check_single(x)
                    ledger.got([kind.key(x)])
                else:
                    n = rng.randint(0, 3)
                    if r < 0.75:
                        b = q.dequeue_many(n, timeout=timeout)
                    else:
                        b = q.dequeue_up_to(n, timeout=timeout)
                    kind.check_batch(b)
                    ledger.got(kind.batch_key(b))
            except DeadlineExceededError:
                continue
            except OutOfRangeError:
                if not batches or r < 0.5 or r >= 0.75:
                    return  # dequeue / dequeue_up_to: closed and empty
                # dequeue_many: closed with too few left; go on with other calls

    def closer() -> None:
        rng = random.Random(f"{seed}:closer")
        progress.wait(rng.randint(0, producers * ops_per_producer))
        mode = rng.choice(("plain", "cancel", "plain-timeout"))
        try:
            if mode == "cancel":
                q.close(cancel_pending_enqueues=True)
            else:
                q.close(timeout=0.001 if mode == "plain-timeout" else None)
        except DeadlineExceededError:
            pass  # stays in line and takes effect later (Q-CLOSE-6)
        if rng.random() < 0.3:
            try:
                q.close(cancel_pending_enqueues=rng.random() < 0.5, timeout=JOIN_TIMEOUT_SECS)
            except CancelledError:
                pass  # "already closed" (Q-CLOSE-2)

    run_workers(
        [lambda p=p: producer(p) for p in range(producers)]
        + [lambda c=c: consumer(c) for c in range(consumers)]
        + [closer],
        [f"producer-{p}" for p in range(producers)]
        + [f"consumer-{c}" for c in range(consumers)]
        + ["closer"],
    )

    stats = queue.statistics()
    assert stats.closed, f"{context}: queue not closed after the closer ran: {stats}"
    assert (stats.pending_enqueues, stats.pending_dequeues, stats.pending_closes, stats.held) == (
        0,
        0,
        0,
        0,
    ), f"{context}: calls still pending with every worker gone: {stats}"
    assert stats.size == 0, f"{context}: consumers stopped with {stats.size} elements left"
    # The consumers stopped at "closed and empty"; a final drain must agree.
    with pytest.raises(OutOfRangeError):
        q.dequeue_up_to(100, timeout=0)
    ledger.check(context)
    assert ledger.out, f"{context}: nothing was ever dequeued"
    print(f"{context}: {len(ledger.definite)} elements in, {len(ledger.out)} out", end="")
    if record:
        model = FIFOModel() if batches else FIFOModel(capacity=kind.capacity)
        started = time.perf_counter()
        # The search is close to linear on these histories; the budget only guards a runaway.
        budget = max(5_000_000, 1_000 * len(history))
        report = assert_linearizable(history, model, context=context, max_steps=budget)
        print(
            f", {report.operations} calls linearizable"
            f" ({report.steps} steps, {time.perf_counter() - started:.2f} s)",
            end="",
        )
    print()


@pytest.mark.parametrize(
    "kind_name", ["FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "PriorityQueue"]
)
def test_producers_consumers_closes_cancels_timeouts(kind_name: str, seed: int) -> None:
    """Every queue class: 4 producers, 4 consumers, a closer; conservation and quiet end.

    The FIFO classes are also recorded and checked for linearizability (HIST-6).
    """
    kind = {
        "FIFOQueue": fifo_kind,
        "PaddingFIFOQueue": padding_kind,
        "RandomShuffleQueue": lambda: shuffle_kind(seed),
        "PriorityQueue": priority_kind,
    }[kind_name]()
    # Recorded runs also pay for the linearizability check; the others get more rounds.
    rounds = 6 if kind.fifo else 25
    for r in range(rounds):
        run_queue_stress(
            kind,
            seed + r,
            producers=4,
            consumers=4,
            ops_per_producer=scaled(400),
            record=kind.fifo,
        )


def test_fifo_size_and_capacity_are_linearizable_with_single_calls(seed: int) -> None:
    """HIST-10: with single enqueues and dequeues only, size(), is_closed() and the capacity
    are linearizable too, with closes and timeouts at random moments."""
    for r in range(6):
        run_queue_stress(
            fifo_kind(),
            seed + r,
            producers=3,
            consumers=3,
            ops_per_producer=scaled(400),
            batches=False,
            record=True,
        )
