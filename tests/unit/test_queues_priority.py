"""PriorityQueue: the priority component, libstdc++ tie order, whole batches.

Scenarios from TensorFlow's priority_queue_test.py are named after their tests.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_queues_support import Call, wait_pending

from coordkit import (
    CancelledError,
    DeadlineExceededError,
    InvalidArgumentError,
    OutOfRangeError,
    PriorityQueue,
)

# -- an independent model of std::priority_queue ----------------------------------
# Written from libstdc++'s bits/stl_heap.h (__push_heap, __adjust_heap, pop_heap)
# with TensorFlow's comparison: a goes after b when a's priority is larger.


def _std_push_heap(c: list, hole: int, top: int, value: Any, comp: Callable) -> None:
    parent = (hole - 1) // 2
    while hole > top and comp(c[parent], value):
        c[hole] = c[parent]
        hole = parent
        parent = (hole - 1) // 2
    c[hole] = value


def _std_adjust_heap(c: list, hole: int, length: int, value: Any, comp: Callable) -> None:
    top = hole
    second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if comp(c[second], c[second - 1]):
            second -= 1
        c[hole] = c[second]
        hole = second
    if (length & 1) == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        c[hole] = c[second - 1]
        hole = second - 1
    _std_push_heap(c, hole, top, value, comp)


class StdPriorityQueue:
    def __init__(self) -> None:
        self.c: list = []

    @staticmethod
    def comp(a: Any, b: Any) -> bool:
        return a[0] > b[0]

    def push(self, x: Any) -> None:
        self.c.append(x)
        _std_push_heap(self.c, len(self.c) - 1, 0, self.c[-1], self.comp)

    def pop(self) -> Any:
        c = self.c
        if len(c) > 1:
            value = c[-1]
            c[-1] = c[0]
            _std_adjust_heap(c, 0, len(c) - 1, value, self.comp)
        return c.pop()


def test_model_reproduces_tensorflow() -> None:
    """PQ-2: the oracle itself matches the orders TF 2.21 produced (probes PQ4, PQ1)."""
    m = StdPriorityQueue()
    for tag in range(10):
        m.push((0, tag))
    assert [m.pop()[1] for _ in range(10)] == [0, 2, 6, 9, 8, 5, 7, 4, 1, 3]


# -- order ---------------------------------------------------------------------------


def test_ties_come_out_in_libstdcxx_order() -> None:
    """PQ-2: 10 equal priorities, tags 0..9 (TF probe PQ4), one by one and as a batch."""
    expected = [0, 2, 6, 9, 8, 5, 7, 4, 1, 3]
    q = PriorityQueue(-1)
    for tag in range(10):
        q.enqueue((0, tag))
    assert [q.dequeue()[1] for _ in range(10)] == expected
    typed = PriorityQueue(-1, ["int32"], shapes=[()])
    typed.enqueue_many(([0] * 10, list(range(10))))
    assert typed.dequeue_many(10) == ([0] * 10, expected)


def test_mixed_priorities() -> None:
    """PQ-2: TF probe PQ1, smallest first, negative before 0, ties not FIFO."""
    q = PriorityQueue(-1, ["string"], shapes=[()])
    for priority, tag in zip([5, 1, 3, 1, -2, 3, 1], "abcdefg"):
        q.enqueue((priority, tag))
    assert q.dequeue_many(7) == (
        [-2, 1, 1, 1, 3, 3, 5],
        [b"e", b"g", b"b", b"d", b"f", b"c", b"a"],
    )


@given(
    st.lists(
        st.one_of(st.tuples(st.just("push"), st.integers(-3, 3)), st.just(("pop", 0))),
        max_size=60,
    )
)
def test_order_matches_std_priority_queue(ops: list[tuple[str, int]]) -> None:
    """PQ-2: any interleaving of pushes and pops (few distinct priorities, many ties)
    gives std::priority_queue's order."""
    q, model = PriorityQueue(-1), StdPriorityQueue()
    for serial, (op, priority) in enumerate(ops):
        if op == "push":
            q.enqueue((priority, serial))
            model.push((priority, serial))
        elif model.c:
            assert q.dequeue() == model.pop()
    assert q.dequeue_up_to(0) == []
    q.close()
    rest = q.dequeue_up_to(len(model.c)) if model.c else []
    assert rest == [model.pop() for _ in range(len(rest))]


def test_round_trip_insert_read_once_sorts() -> None:
    """PQ-2 (testRoundTripInsertReadOnceSorts, testRoundTripInsertOnceReadOnceSorts)."""
    rng = random.Random(3)
    priorities = [rng.randrange(-50, 50) for _ in range(100)]
    q = PriorityQueue(2000, ["string", "int32"], shapes=[(), ()])
    for i, p in enumerate(priorities):
        q.enqueue((p, str(p), i))
    got_priorities, got_strings, _ = q.dequeue_many(100)
    assert got_priorities == sorted(priorities)
    assert got_strings == [str(p).encode() for p in sorted(priorities)]


def test_round_trip_insert_once_read_many_sorts() -> None:
    """PQ-2 (testRoundTripInsertOnceReadManySorts, testRoundTripInsertOnceReadOnceLotsSorts)."""
    rng = random.Random(4)
    priorities = [rng.randrange(1000) for _ in range(1000)]
    q = PriorityQueue(2000, ["int64"], shapes=[()])
    q.enqueue_many((priorities, priorities))
    batches = [q.dequeue_many(100)[0] for _ in range(5)]
    singles = [q.dequeue()[0] for _ in range(500)]
    assert [p for b in batches for p in b] + singles == sorted(priorities)


def test_round_trip_multithreaded_sorts() -> None:
    """PQ-2 (testRoundTripInsertMultiThreadedReadOnceSorts,
    testRoundTripInsertManyMultiThreadedReadManyMultithreadedSorts)."""
    q = PriorityQueue(2000, ["int64"], shapes=[()])
    rng = random.Random(5)
    chunks = [[rng.randrange(100) for _ in range(10)] for _ in range(10)]
    for call in [Call(q.enqueue_many, (chunk, chunk)) for chunk in chunks]:
        call.value()
    readers = [Call(q.dequeue_many, 10) for _ in range(10)]
    batches = [r.value()[0] for r in readers]
    assert all(b == sorted(b) for b in batches)  # every batch is sorted
    assert sorted(p for b in batches for p in b) == sorted(p for c in chunks for p in c)


def test_fills_capacity_multithreaded() -> None:
    """PQ-4 (testRoundTripFillsCapacityMultiThreadedEnqueueAndDequeue): capacity 10,
    40 threads each doing enqueue_many and dequeue_many of at most 9."""
    q = PriorityQueue(10, ["int64"], shapes=[()])
    rng = random.Random(6)
    counts = [rng.randrange(1, 10) for _ in range(20)]
    enqueuers = [Call(q.enqueue_many, ([k] * k, [k] * k)) for k in counts]
    dequeuers = [Call(q.dequeue_many, k) for k in counts]
    for call in enqueuers:
        call.value()
    got = sorted(p for call in dequeuers for p in call.value()[0])
    assert got == sorted(p for k in counts for p in [k] * k)


# -- components and checks ----------------------------------------------------------


def test_priority_component_comes_first() -> None:
    """PQ-1: dtypes start with int64; shapes start with () when given."""
    q = PriorityQueue(10, ["string", "float32"], shapes=[(), (2,)], names=["p", "s", "f"])
    assert q.dtypes == ["int64", "string", "float32"]
    assert q.shapes == [(), (), (2,)]
    q.enqueue({"p": 3, "s": "x", "f": [1, 2]})
    assert q.dequeue() == {"p": 3, "s": b"x", "f": [1.0, 2.0]}
    with pytest.raises(ValueError, match=r"same length as dtypes, received len\(shapes\)=3, len\(dtypes\)=2"):
        PriorityQueue(10, ["string"], shapes=[(), ()])


def test_shapes_none_works() -> None:
    """PQ-1, DEV-Q-8: TensorFlow raises TypeError for shapes=None."""
    q = PriorityQueue(10, ["string"])
    assert q.shapes == [None, None]
    q.enqueue((2, "b"))
    q.enqueue((1, "a"))
    assert q.dequeue() == (1, b"a")


def test_untyped_elements() -> None:
    """PQ-7: (priority, ...) tuples; lists become tuples; bool priorities count as ints."""
    q = PriorityQueue(10)
    q.enqueue([2, "two", {"any": "object"}])
    q.enqueue((True, "one"))
    q.enqueue_many([(3, "three"), [0]])
    assert q.dequeue_many(4) == [(0,), (1, "one"), (2, "two", {"any": "object"}), (3, "three")]
    for bad in (5, (), [], "text"):
        with pytest.raises(InvalidArgumentError, match=r"\(priority, \.\.\.\) tuple"):
            q.enqueue(bad)
    for bad_priority in ("x", 1.0, None, [1]):
        with pytest.raises(TypeError, match=r"^Expected int64, but got "):
            q.enqueue((bad_priority, "v"))
    with pytest.raises(TypeError):
        q.enqueue_many([(1, "ok"), ("bad", "v")])
    assert q.size() == 0  # the whole batch is validated first (Q-ENQ-1)


def test_inserting_non_int64_fails() -> None:
    """PQ-3 (testInsertingNonInt64Fails)."""
    q = PriorityQueue(10, ["string"], shapes=[()])
    with pytest.raises(TypeError, match=r"^Expected int64, but got a of type 'str'\.$"):
        q.enqueue(("a", "b"))
    with pytest.raises(TypeError, match=r"^Expected int64, but got 1\.5"):
        q.enqueue_many(([1.5], ["b"]))


def test_inserting_non_scalar_fails() -> None:
    """PQ-3 (testInsertingNonScalarFails)."""
    q = PriorityQueue(10, ["string"], shapes=[()])
    with pytest.raises(
        InvalidArgumentError, match=r"^Shape mismatch in tuple component 0\. Expected \[\], got \[2\]$"
    ):
        q.enqueue(([1, 2], "b"))
    with pytest.raises(InvalidArgumentError, match=r"component 0\. Expected \[2\], got \[2,2\]$"):
        q.enqueue_many(([[1, 2], [3, 4]], ["a", "b"]))
    no_shapes = PriorityQueue(10, ["string"])
    message = r"^Expected the priority element to be a scalar, but received shape: \[2\]$"
    with pytest.raises(InvalidArgumentError, match=message):
        no_shapes.enqueue(([1, 2], "b"))
    with pytest.raises(InvalidArgumentError, match=message):
        no_shapes.enqueue_many(([[1, 2]], ["b"]))


def test_enqueue_on_closed_queue() -> None:
    """PQ-3: CancelledError "PriorityQueue '<name>' is closed."."""
    q = PriorityQueue(10, name="pq")
    q.close()
    with pytest.raises(CancelledError, match=r"^PriorityQueue 'pq' is closed\.$"):
        q.enqueue((1, "x"))


def test_no_shapes_message() -> None:
    """PQ-6: a typed queue without shapes cannot batch."""
    q = PriorityQueue(10, ["string"])
    message = r"^PriorityQueue's DequeueMany requires the components to have specified shapes\.$"
    with pytest.raises(InvalidArgumentError, match=message):
        q.dequeue_many(0)
    with pytest.raises(InvalidArgumentError, match=message):
        q.dequeue_up_to(2)


# -- whole batches and the close ----------------------------------------------------


def test_dequeue_many_takes_nothing_until_n_are_stored() -> None:
    """PQ-4: a timed-out dequeue_many leaves the queue as it was (TF probe PQ1)."""
    q = PriorityQueue(10)
    q.enqueue_many([(2, "b"), (1, "a")])
    waiting = Call(q.dequeue_many, 3)
    wait_pending(q, dequeues=1)
    stats = q.statistics()
    assert (stats.size, stats.held) == (2, 0)
    q.enqueue((0, "z"))
    assert waiting.value() == [(0, "z"), (1, "a"), (2, "b")]
    q.enqueue_many([(2, "b"), (1, "a")])
    with pytest.raises(DeadlineExceededError):
        q.dequeue_many(3, timeout=0.02)
    assert q.size() == 2


def test_dequeue_many_larger_than_capacity_never_completes() -> None:
    """PQ-4: n > capacity waits for ever (TF probe X2)."""
    q = PriorityQueue(2)
    q.enqueue((0, "a"))
    q.enqueue((1, "b"))
    with pytest.raises(DeadlineExceededError):
        q.enqueue((2, "c"), timeout=0.02)
    with pytest.raises(DeadlineExceededError):
        q.dequeue_many(3, timeout=0.02)
    assert q.size() == 2


def test_dequeue_many_on_closed_queue_with_too_few() -> None:
    """PQ-4: OutOfRangeError "requested n, current size s"; nothing is taken."""
    q = PriorityQueue(10, name="pq")
    q.enqueue_many([(1, "a"), (2, "b")])
    waiting = Call(q.dequeue_many, 3)
    wait_pending(q, dequeues=1)
    q.close()
    waiting.raised(
        OutOfRangeError,
        "PriorityQueue 'pq' is closed and has insufficient elements (requested 3, current size 2)",
    )
    assert q.size() == 2
    assert q.dequeue_many(2) == [(1, "a"), (2, "b")]


def test_dequeue_up_to_after_close_returns_the_rest() -> None:
    """PQ-5, DEV-Q-2: TensorFlow loses the 2 elements and reports "requested 3, current
    size 0" (TF probe PQ3); coordkit returns them, sorted."""
    q = PriorityQueue(10, ["int64"], shapes=[()], name="pq3")
    q.enqueue_many(([5, 1, 3, 2, 4], [50, 10, 30, 20, 40]))
    q.close()
    assert q.dequeue_up_to(3) == ([1, 2, 3], [10, 20, 30])  # exactly enough: as in TF
    assert q.dequeue_up_to(5) == ([4, 5], [40, 50])
    with pytest.raises(
        OutOfRangeError,
        match=r"^PriorityQueue 'pq3' is closed and has insufficient elements "
        r"\(requested 5, current size 0\)$",
    ):
        q.dequeue_up_to(5)
    assert q.dequeue_up_to(0) == ([], [])


def test_waiting_dequeue_up_to_gets_the_rest_at_close() -> None:
    """PQ-5: a dequeue_up_to waiting on the open queue returns the rest when it closes."""
    q = PriorityQueue(10)
    waiting = Call(q.dequeue_up_to, 5)
    wait_pending(q, dequeues=1)
    q.enqueue_many([(2, "b"), (1, "a")])
    wait_pending(q, dequeues=1)
    q.close()
    assert waiting.value() == [(1, "a"), (2, "b")]
