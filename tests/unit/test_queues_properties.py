"""Property tests: random operation sequences against small sequential models, and a
threaded run in which nothing may be lost or duplicated.

Single-threaded, no call can be left waiting, so each call's outcome is fully
determined by the state before it; the models say what it must be.  A positive
timeout makes the call go through the waiting path (attempt, flush, deadline,
withdrawal) instead of the shortcut, so both paths are compared with the model.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordkit import (
    CancelledError,
    DeadlineExceededError,
    FIFOQueue,
    OutOfRangeError,
    PaddingFIFOQueue,
    PriorityQueue,
    RandomShuffleQueue,
)

TIMEOUTS = st.sampled_from([0, 0.001])
COUNTS = st.integers(0, 6)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("enqueue"), st.just(1), TIMEOUTS),
        st.tuples(st.just("enqueue_many"), COUNTS, TIMEOUTS),
        st.tuples(st.just("dequeue"), st.just(1), TIMEOUTS),
        st.tuples(st.just("dequeue_many"), COUNTS, TIMEOUTS),
        st.tuples(st.just("dequeue_up_to"), COUNTS, TIMEOUTS),
        st.tuples(st.just("close"), st.just(0), TIMEOUTS),
        st.tuples(st.just("close_cancel"), st.just(0), TIMEOUTS),
    ),
    max_size=40,
)


def outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except (CancelledError, OutOfRangeError, DeadlineExceededError) as e:
        return type(e).__name__, str(e)


class SequentialModel:
    """What one thread sees (Q-ENQ-2..4, Q-DEQ-1..5, Q-CLOSE-2, Q-TIMEOUT-2/3).

    ``stored`` is a list of elements; ``pick(k)`` says which k come out next.
    """

    def __init__(self, capacity: int, reserve: int = 0) -> None:
        self.capacity = capacity if capacity >= 0 else 10**9
        self.reserve = reserve
        self.closed = False
        self.stored: list[Any] = []

    def available(self) -> int:
        return len(self.stored) - (0 if self.closed else self.reserve)

    def enqueue_many(self, items: list[Any], timeout: float) -> tuple[str, Any]:
        if not items:
            return "ok", None
        if self.closed:
            return "CancelledError", None
        room = self.capacity - len(self.stored)
        if timeout == 0 and room < len(items):
            return "DeadlineExceededError", None  # never waits, leaves no trace
        self.stored += items[: max(room, 0)]  # Q-ENQ-3: stored elements stay
        return ("ok" if room >= len(items) else "DeadlineExceededError"), None

    def dequeue_batch(self, n: int, up_to: bool) -> tuple[str, int]:
        """(what happens, how many come out)."""
        if n == 0:
            return "ok", 0
        if self.available() >= n:
            return "ok", n
        if self.closed:
            if up_to and self.stored:
                return "ok", len(self.stored)
            return "OutOfRangeError", 0
        return "DeadlineExceededError", 0  # a partial batch was put back (DEV-Q-1)

    def close(self, cancel: bool) -> str:
        if self.closed and not cancel:
            return "CancelledError"
        self.closed = True
        return "ok"


def run_against_model(q: Any, model: SequentialModel, ops: Any, check_taken: Any) -> None:
    """Drive ``q`` and ``model`` with the same operations and compare."""
    serial = 0

    def element() -> int:
        nonlocal serial
        serial += 1
        return serial

    for op, count, timeout in ops:
        if op == "enqueue":
            x = element()
            kind, _ = outcome(q.enqueue, x, timeout=timeout)
            expected, _ = model.enqueue_many([x], timeout)
            assert kind == expected, (op, kind, expected)
        elif op == "enqueue_many":
            items = [element() for _ in range(count)]
            kind, _ = outcome(q.enqueue_many, items, timeout=timeout)
            expected, _ = model.enqueue_many(items, timeout)
            assert kind == expected, (op, kind, expected)
        elif op in ("dequeue", "dequeue_many", "dequeue_up_to"):
            up_to = op == "dequeue_up_to"
            expected, k = model.dequeue_batch(count, up_to)
            if op == "dequeue":
                kind, got = outcome(q.dequeue, timeout=timeout)
                taken = [got] if kind == "ok" else []
            else:
                kind, got = outcome(getattr(q, op), count, timeout=timeout)
                taken = got if kind == "ok" else []
            assert kind == expected, (op, count, kind, expected)
            assert len(taken) == k
            check_taken(model, taken)
            if kind == "OutOfRangeError":
                assert f"(requested {count}, current size {len(model.stored)})" in got
        else:
            kind, _ = outcome(q.close, cancel_pending_enqueues=op == "close_cancel", timeout=timeout)
            assert kind == model.close(op == "close_cancel")
        # Q-MODEL-5: with one thread, no call is ever left waiting in a list.
        stats = q.statistics()
        assert (stats.pending_enqueues, stats.pending_dequeues, stats.pending_closes) == (0, 0, 0)
        assert stats.held == 0
        assert (stats.size, stats.closed) == (len(model.stored), model.closed)


def take_in_order(model: SequentialModel, taken: list[Any]) -> None:
    assert taken == model.stored[: len(taken)]
    del model.stored[: len(taken)]


def take_any(model: SequentialModel, taken: list[Any]) -> None:
    for x in taken:
        model.stored.remove(x)  # ValueError if it was never stored, or taken twice


@given(st.sampled_from([-1, 0, 1, 3, 5]), OPS)
def test_fifo_matches_sequential_model(capacity: int, ops: Any) -> None:
    """Q-ENQ-2, Q-ENQ-3, Q-ENQ-4, Q-DEQ-1, Q-DEQ-4, Q-DEQ-5, Q-CLOSE-2, Q-TIMEOUT-2,
    Q-TIMEOUT-3, Q-MODEL-5: exact outcomes and order."""
    run_against_model(FIFOQueue(capacity), SequentialModel(capacity), ops, take_in_order)


@given(st.sampled_from([-1, 1, 4]), OPS)
def test_padding_queue_of_scalars_matches_sequential_model(capacity: int, ops: Any) -> None:
    """PAD-7: apart from padding, a PaddingFIFOQueue is a FIFOQueue."""
    q = PaddingFIFOQueue(capacity, ["int64"], [()])

    class Adapter:
        def __getattr__(self, name: str) -> Any:
            return getattr(q, name)

        def enqueue_many(self, items: list[int], timeout: float) -> None:
            q.enqueue_many((items,), timeout=timeout)

    run_against_model(Adapter(), SequentialModel(capacity), ops, take_in_order)


@given(st.sampled_from([-1, 3, 6]), st.integers(0, 2), st.integers(0, 2**32), OPS)
def test_shuffle_queue_conserves_elements(capacity: int, reserve: int, seed: int, ops: Any) -> None:
    """RSQ-2, RSQ-3, Q-API-8: outcomes as the model says; every element comes out once."""
    q = RandomShuffleQueue(capacity, reserve, seed=seed)
    run_against_model(q, SequentialModel(capacity, reserve), ops, take_any)


@given(st.integers(0, 2**32), OPS)
def test_shuffle_queue_is_deterministic_per_seed(seed: int, ops: Any) -> None:
    """RSQ-5: the same seed and the same calls give the same results."""
    logs = []
    for _ in range(2):
        q, log = RandomShuffleQueue(5, 1, seed=seed), []
        for op, count, timeout in ops:
            if op == "enqueue_many":
                log.append(outcome(q.enqueue_many, list(range(count)), timeout=timeout))
            elif op in ("dequeue_many", "dequeue_up_to"):
                log.append(outcome(getattr(q, op), count, timeout=timeout))
            elif op == "dequeue":
                log.append(outcome(q.dequeue, timeout=timeout))
            elif op == "enqueue":
                log.append(outcome(q.enqueue, 7, timeout=timeout))
        logs.append(log)
    assert logs[0] == logs[1]


@given(st.sampled_from([-1, 2, 5]), OPS, st.randoms(use_true_random=False))
def test_priority_queue_conserves_elements_smallest_first(
    capacity: int, ops: Any, rnd: random.Random
) -> None:
    """PQ-2, PQ-4, PQ-5, Q-API-8: each dequeued element was stored, once, and had the
    smallest priority at the time; batches are sorted."""
    q = PriorityQueue(capacity)

    class Adapter:
        def __getattr__(self, name: str) -> Any:
            return getattr(q, name)

        def enqueue(self, x: int, timeout: float) -> None:
            q.enqueue((x % 3, x), timeout=timeout)

        def enqueue_many(self, items: list[int], timeout: float) -> None:
            q.enqueue_many([(x % 3, x) for x in items], timeout=timeout)

        def dequeue(self, timeout: float) -> int:
            return q.dequeue(timeout=timeout)[1]

        def dequeue_many(self, n: int, timeout: float) -> list[int]:
            return self._unwrap(q.dequeue_many(n, timeout=timeout))

        def dequeue_up_to(self, n: int, timeout: float) -> list[int]:
            return self._unwrap(q.dequeue_up_to(n, timeout=timeout))

        @staticmethod
        def _unwrap(batch: list[tuple[int, int]]) -> list[int]:
            assert [p for p, _ in batch] == sorted(p for p, _ in batch)
            return [x for _, x in batch]

    def take_smallest(model: SequentialModel, taken: list[int]) -> None:
        for x in taken:
            assert x % 3 == min(y % 3 for y in model.stored)
            model.stored.remove(x)

    run_against_model(Adapter(), SequentialModel(capacity), ops, take_smallest)


# -- many threads: nothing lost, nothing duplicated --------------------------------


def make_queue(kind: str, capacity: int) -> Any:
    if kind == "fifo":
        return FIFOQueue(capacity)
    if kind == "shuffle":
        return RandomShuffleQueue(capacity, 2, seed=1)
    if kind == "padding":
        return PaddingFIFOQueue(capacity, ["int64"], [()])
    return PriorityQueue(capacity)


@pytest.mark.parametrize("kind", ["fifo", "shuffle", "padding", "priority"])
@pytest.mark.parametrize("cancel_early", [False, True])
def test_threads_never_lose_or_duplicate(kind: str, cancel_early: bool) -> None:
    """Q-ENQ-3, Q-DEQ-6, Q-TIMEOUT-2, Q-CLOSE-3, Q-API-8: producers and consumers with
    random timeouts; whatever the interleaving, every element of a successful enqueue
    comes out exactly once, a failed enqueue_many contributes a prefix of its batch,
    and nothing comes out that was not put in."""
    q = make_queue(kind, 4)
    wrap = (lambda x: (x % 5, x)) if kind == "priority" else (lambda x: x)
    unwrap = (lambda e: e[1]) if kind == "priority" else (lambda e: e)
    timeouts = [None, 0, 0.0005, 0.002]
    accepted: list[list[int]] = []  # batches whose call succeeded
    attempted: list[list[int]] = []  # batches whose call failed
    consumed: list[int] = []
    lock = threading.Lock()

    def produce(p: int) -> None:
        rng = random.Random(p)
        base = p * 10_000
        for j in range(60):
            batch = [base + j * 10 + i for i in range(rng.choice([1, 1, 2, 3, 6]))]
            try:
                if len(batch) == 1 and rng.random() < 0.5:
                    q.enqueue(wrap(batch[0]), timeout=rng.choice(timeouts))
                elif kind == "padding":
                    q.enqueue_many((batch,), timeout=rng.choice(timeouts))
                else:
                    q.enqueue_many([wrap(x) for x in batch], timeout=rng.choice(timeouts))
            except DeadlineExceededError:
                with lock:
                    attempted.append(batch)
            except CancelledError:
                with lock:
                    attempted.append(batch)
                return
            else:
                with lock:
                    accepted.append(batch)

    def consume(c: int) -> None:
        rng = random.Random(100 + c)
        while True:
            op = rng.choice(["one", "many", "up_to"])
            try:
                if op == "one":
                    got = [unwrap(q.dequeue(timeout=rng.choice(timeouts)))]
                else:
                    got = [unwrap(e) for e in getattr(q, "dequeue_" + op)(
                        rng.randint(0, 3), timeout=rng.choice(timeouts)
                    )]
            except DeadlineExceededError:
                continue
            except OutOfRangeError:
                if q.size() == 0:  # closed and drained
                    return
                continue
            with lock:
                consumed.extend(got)
                if cancel_early and len(consumed) > 100:
                    q.close(cancel_pending_enqueues=True)

    producers = [threading.Thread(target=produce, args=(p,), daemon=True) for p in range(4)]
    consumers = [threading.Thread(target=consume, args=(c,), daemon=True) for c in range(4)]
    for t in producers + consumers:
        t.start()
    for t in producers:
        t.join(60)
        assert not t.is_alive()
    q.close(cancel_pending_enqueues=True)
    for t in consumers:
        t.join(60)
        assert not t.is_alive()

    assert q.statistics().size == 0
    counts = Counter(consumed)
    assert all(n == 1 for n in counts.values()), "an element came out twice"
    for batch in accepted:
        assert all(counts[x] == 1 for x in batch), "an accepted element was lost"
    for batch in attempted:
        present = [counts[x] == 1 for x in batch]
        assert present == sorted(present, reverse=True), "not a prefix of the batch"
    produced = {x for b in accepted + attempted for x in b}
    assert set(consumed) <= produced
    assert len(consumed) >= 100  # the run did real work
