"""RandomShuffleQueue: construction checks, min_after_dequeue, the pick, seeds.

Scenarios from TensorFlow's random_shuffle_queue_test.py are named after their tests.
"""

from __future__ import annotations

import random

import pytest
from test_queues_support import Call, drain, wait_pending

from coordkit import (
    CancelledError,
    DeadlineExceededError,
    InvalidArgumentError,
    OutOfRangeError,
    RandomShuffleQueue,
)


def test_construction_checks() -> None:
    """RSQ-1 (TF probe R1)."""
    with pytest.raises(InvalidArgumentError, match=r"^min_after_dequeue 10 must be < capacity 10$"):
        RandomShuffleQueue(10, 10)
    with pytest.raises(InvalidArgumentError, match=r"^min_after_dequeue 11 must be < capacity 10$"):
        RandomShuffleQueue(10, 11)
    with pytest.raises(InvalidArgumentError, match=r"^min_after_dequeue -1 must be >= 0$"):
        RandomShuffleQueue(10, -1)
    with pytest.raises(InvalidArgumentError, match=r"^min_after_dequeue 0 must be < capacity 0$"):
        RandomShuffleQueue(0, 0)
    RandomShuffleQueue(-1, 5)  # unbounded: fine


def test_min_after_dequeue_while_open() -> None:
    """RSQ-2 (TF probe R2): a dequeue needs size > min_after_dequeue."""
    q = RandomShuffleQueue(10, 2, seed=1)
    q.enqueue_many([1, 2, 3, 4])
    q.dequeue()
    q.dequeue()
    assert q.size() == 2
    with pytest.raises(DeadlineExceededError):
        q.dequeue(timeout=0.02)
    with pytest.raises(DeadlineExceededError):
        q.dequeue_many(1, timeout=0)
    q.enqueue_many([5, 6, 7])
    assert len(q.dequeue_many(3)) == 3
    assert q.size() == 2


def test_dequeue_many_holds_what_it_may_take() -> None:
    """RSQ-2, Q-DEQ-3 (TF probe R2b): size 3, min_after_dequeue 1, dequeue_many(4)
    takes 2 and waits; the close puts them back (appended) and fails it."""
    q = RandomShuffleQueue(10, 1, seed=2, name="r2b")
    q.enqueue_many([1, 2, 3])
    waiting = Call(q.dequeue_many, 4)
    wait_pending(q, dequeues=1)
    stats = q.statistics()
    assert (stats.size, stats.held) == (1, 2)
    q.close()
    waiting.raised(
        OutOfRangeError,
        "RandomShuffleQueue 'r2b' is closed and has insufficient elements "
        "(requested 2, current size 1)",
    )
    assert sorted(drain(q)) == [1, 2, 3]  # testBlockingDequeueManyFromClosedQueueWithElementsRemaining


def test_timed_out_dequeue_many_gives_back() -> None:
    """RSQ-2, Q-DEQ-6, DEV-Q-1: TF probe R2b lost 2 elements here; coordkit keeps them."""
    q = RandomShuffleQueue(10, 1, seed=3)
    q.enqueue_many([1, 2, 3])
    with pytest.raises(DeadlineExceededError):
        q.dequeue_many(4, timeout=0.02)
    assert q.size() == 3


def test_min_after_dequeue_is_ignored_once_closed() -> None:
    """RSQ-3 (testDequeueFromClosedQueue: all 4 drain after the close; probe R2)."""
    q = RandomShuffleQueue(10, 2, seed=4, name="r2")
    q.enqueue_many([1, 2, 3, 4])
    q.close()
    assert sorted(q.dequeue() for _ in range(4)) == [1, 2, 3, 4]
    with pytest.raises(
        OutOfRangeError,
        match=r"^RandomShuffleQueue 'r2' is closed and has insufficient elements "
        r"\(requested 1, current size 0\)$",
    ):
        q.dequeue()


def test_close_lifts_min_after_dequeue_for_a_waiting_dequeue() -> None:
    """RSQ-3, Q-CLOSE-4 (testBlockingDequeueFromClosedQueue)."""
    q = RandomShuffleQueue(10, 2, seed=5)
    q.enqueue_many([1, 2])
    waiting = Call(q.dequeue)
    wait_pending(q, dequeues=1)
    q.close()
    assert waiting.value() in (1, 2)
    assert q.size() == 1


def test_dequeue_up_to_smaller_than_min_after_dequeue() -> None:
    """RSQ-3, Q-DEQ-5 (testBlockingDequeueUpToSmallerThanMinAfterDequeue,
    testBlockingDequeueUpToFromClosedQueueReturnsRemainder; probe R2)."""
    q = RandomShuffleQueue(10, 4, seed=6)
    q.enqueue_many([1, 2, 3])
    waiting = Call(q.dequeue_up_to, 5)
    wait_pending(q, dequeues=1)
    assert q.statistics().held == 0  # 3 <= min_after_dequeue: nothing may be taken
    q.close()
    assert sorted(waiting.value()) == [1, 2, 3]


def test_pick_is_swap_remove_driven_by_random() -> None:
    """RSQ-4, RSQ-5: picks are random.Random(seed).randrange(size) with swap-remove,
    one at a time inside a batch too."""
    q = RandomShuffleQueue(-1, 0, seed=1729)
    q.enqueue_many(range(20))
    got = q.dequeue_many(5) + [q.dequeue() for _ in range(15)]

    rng, model, expected = random.Random(1729), list(range(20)), []
    for _ in range(20):
        i = rng.randrange(len(model))
        model[i], model[-1] = model[-1], model[i]
        expected.append(model.pop())
    assert got == expected


def test_same_seed_same_order() -> None:
    """RSQ-5, DEV-Q-4: deterministic per seed, before and after the close
    (testDequeueInDifferentOrders)."""

    def run(seed: int | None) -> list[int]:
        q = RandomShuffleQueue(-1, 3, seed=seed)
        q.enqueue_many(range(20))
        got = [q.dequeue() for _ in range(10)]
        q.close()
        return got + q.dequeue_up_to(20)

    assert run(1729) == run(1729)
    assert run(1729) != run(87539319)
    assert sorted(run(1729)) == list(range(20))
    # seed=None draws fresh randomness (20! orders: equal only by a miracle).
    assert run(None) != run(None)


def test_messages_use_the_class_name() -> None:
    """RSQ-6 (TF probe R4)."""
    q = RandomShuffleQueue(10, 0, name="r4")
    q.close()
    with pytest.raises(CancelledError, match=r"^RandomShuffleQueue 'r4' is closed\.$"):
        q.enqueue(1)
    with pytest.raises(OutOfRangeError, match=r"^RandomShuffleQueue 'r4' is closed"):
        q.dequeue_many(2)
    typed = RandomShuffleQueue(10, 0, ["int32"])
    with pytest.raises(InvalidArgumentError, match=r"^RandomShuffleQueue's DequeueMany and DequeueUpTo"):
        typed.dequeue_many(1)
