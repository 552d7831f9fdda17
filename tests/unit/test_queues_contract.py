"""Behaviour every queue class shares, run against each of them.

As in CPython's lock_tests.py, ``QueueContract`` holds the tests and each
``Test*`` subclass at the bottom names the queue under test.  Elements are ints
``i`` (a PriorityQueue stores ``(i, "v<i>")``, so increasing ints come out in
insertion order); a RandomShuffleQueue (min_after_dequeue 0) is compared as a
multiset.  Most scenarios are the semantic ones of TensorFlow's
fifo_queue_test.py and its siblings, named after them.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from test_queues_support import Call, drain, wait_pending

from coordkit import (
    CancelledError,
    DeadlineExceededError,
    FIFOQueue,
    InvalidArgumentError,
    OutOfRangeError,
    PaddingFIFOQueue,
    PriorityQueue,
    RandomShuffleQueue,
)


class QueueContract:
    ordered = True  # elements come out in insertion order
    takes_as_arrives = True  # dequeue_many holds a partial batch (False: PQ-4)
    class_name = "FIFOQueue"
    batch_class_name = "FIFOQueue"

    def make(self, capacity: int = -1, name: str = "q") -> Any:
        raise NotImplementedError

    def e(self, i: int) -> Any:
        """The enqueue argument for element i."""
        return i

    def many(self, items: list[int]) -> Any:
        """The enqueue_many argument for these elements."""
        return list(items)

    def v(self, x: Any) -> int:
        """A dequeued element back to its int."""
        return x

    def batch(self, b: Any) -> list[int]:
        """A dequeue_many result back to a list of ints."""
        return list(b)

    def same(self, got: list[int], expected: list[int]) -> None:
        if self.ordered:
            assert got == expected
        else:
            assert sorted(got) == sorted(expected)

    def drained(self, q: Any) -> list[int]:
        return [self.v(x) for x in drain(q)]

    def fill(self, q: Any, items: range | list[int]) -> None:
        for i in items:
            q.enqueue(self.e(i))

    def take(self, q: Any, count: int) -> list[int]:
        return [self.v(q.dequeue()) for _ in range(count)]

    # -- basics (fifo_queue_test: testEnqueue, testDequeue, testQueueSize*) --------

    def test_enqueue_dequeue_in_order(self) -> None:
        """Q-ENQ-2, Q-DEQ-1: what goes in comes out (testEnqueue, testDequeue)."""
        q = self.make(10)
        self.fill(q, [10, 20, 30])
        self.same(self.take(q, 3), [10, 20, 30])

    def test_size_counts_stored_elements(self) -> None:
        """Q-API-6 (testQueueSizeEmpty, testQueueSizeAfterEnqueueAndDequeue, testDoesNotLoseValue)."""
        q = self.make(10)
        assert q.size() == 0
        q.enqueue(self.e(1))
        assert q.size() == 1
        assert q.size() == 1  # asking does not change it
        q.dequeue()
        assert q.size() == 0

    def test_enqueue_many(self) -> None:
        """Q-ENQ-3: two batches of 4 come out as 8 elements (testEnqueueMany)."""
        q = self.make(10)
        q.enqueue_many(self.many([1, 2, 3, 4]))
        q.enqueue_many(self.many([5, 6, 7, 8]))
        self.same(self.take(q, 8), [1, 2, 3, 4, 5, 6, 7, 8])

    def test_empty_enqueue_many_succeeds_even_when_closed(self) -> None:
        """Q-ENQ-4 (testEmptyEnqueueMany; TF probe Q1)."""
        q = self.make(10)
        q.enqueue_many(self.many([]))
        assert q.size() == 0
        q.close()
        q.enqueue_many(self.many([]))
        assert q.size() == 0

    def test_dequeue_many_zero_returns_empty_batch(self) -> None:
        """Q-DEQ-2 step 3: n == 0 returns at once, even on a closed, empty queue
        (testEmptyDequeueMany, testEmptyDequeueUpTo)."""
        q = self.make(10)
        assert self.batch(q.dequeue_many(0)) == []
        q.enqueue(self.e(1))
        assert self.batch(q.dequeue_up_to(0)) == []
        assert q.size() == 1
        q.dequeue()
        q.close()
        assert self.batch(q.dequeue_many(0)) == []
        assert self.batch(q.dequeue_up_to(0)) == []

    def test_dequeue_many_and_up_to_without_blocking(self) -> None:
        """Q-DEQ-3, Q-DEQ-5 (testDequeueMany, testDequeueUpToNoBlocking)."""
        q = self.make(10)
        q.enqueue_many(self.many(list(range(10))))
        first, second = self.batch(q.dequeue_many(4)), self.batch(q.dequeue_up_to(4))
        assert (len(first), len(second), q.size()) == (4, 4, 2)
        q.close()
        self.same(first + second + self.drained(q), list(range(10)))

    def test_negative_n_is_invalid(self) -> None:
        """Q-DEQ-2 step 1, Q-ARG-2: TensorFlow's wording."""
        q = self.make(10)
        q.close()  # checked before anything else
        with pytest.raises(InvalidArgumentError, match=r"^DequeueManyOp requested -1 < 0 elements$"):
            q.dequeue_many(-1)
        with pytest.raises(InvalidArgumentError, match=r"^DequeueUpToOp requested -3 < 0 elements$"):
            q.dequeue_up_to(-3)

    def test_queues_do_not_share(self) -> None:
        """Q-API-1: two queues are independent (testQueuesDontShare)."""
        q1, q2 = self.make(10), self.make(10)
        q1.enqueue(self.e(1))
        assert q2.size() == 0
        assert self.v(q1.dequeue()) == 1

    def test_negative_capacity_is_unbounded(self) -> None:
        """Q-API-2 (TF probe Q3: capacity -1 took 100000 items)."""
        q = self.make(-1)
        q.enqueue_many(self.many(list(range(20_000))))
        assert q.size() == 20_000

    def test_capacity_zero_never_stores(self) -> None:
        """Q-API-2: with capacity 0 every enqueue waits (TF probe Q3)."""
        if isinstance(self.make(1), RandomShuffleQueue):
            pytest.skip("RSQ-1: min_after_dequeue 0 must be < capacity 0")
        q = self.make(0)
        with pytest.raises(DeadlineExceededError):
            q.enqueue(self.e(1), timeout=0.02)
        with pytest.raises(DeadlineExceededError):
            q.enqueue(self.e(1), timeout=0)
        assert q.statistics().size == 0
        assert q.statistics().pending_enqueues == 0
        # A cancelling close is the other way out.
        waiting = Call(q.enqueue, self.e(2))
        wait_pending(q, enqueues=1)
        q.close(cancel_pending_enqueues=True)
        waiting.raised(CancelledError, "Enqueue operation was cancelled")

    # -- closed queues -----------------------------------------------------------

    def test_enqueue_to_closed_queue(self) -> None:
        """Q-ENQ-2, DEV-Q-14: CancelledError "<Class> '<name>' is closed."
        (testEnqueueToClosedQueue, testEnqueueManyToClosedQueue)."""
        q = self.make(10, name="my_queue")
        q.close()
        with pytest.raises(CancelledError, match=rf"^{self.class_name} 'my_queue' is closed\.$"):
            q.enqueue(self.e(1))
        with pytest.raises(CancelledError, match=rf"^{self.class_name} 'my_queue' is closed\.$"):
            q.enqueue_many(self.many([1, 2]))
        assert q.size() == 0

    def test_dequeue_from_closed_queue(self) -> None:
        """Q-DEQ-1, Q-CLOSE-5: drain, then OutOfRangeError (testDequeueFromClosedQueue)."""
        q = self.make(10, name="dq")
        self.fill(q, [1, 2, 3, 4])
        q.close()
        assert q.is_closed()
        self.same(self.take(q, 4), [1, 2, 3, 4])
        with pytest.raises(
            OutOfRangeError,
            match=rf"^{self.class_name} 'dq' is closed and has insufficient elements "
            r"\(requested 1, current size 0\)$",
        ):
            q.dequeue()
        assert q.is_closed()  # for ever

    def test_closing_twice(self) -> None:
        """Q-CLOSE-2: a plain close of a closed queue fails; a cancelling one never does."""
        q = self.make(10, name="twice")
        q.close()
        with pytest.raises(CancelledError, match=r"^Queue 'twice' is already closed\.$"):
            q.close()
        q.close(cancel_pending_enqueues=True)
        q.close(cancel_pending_enqueues=True)
        assert q.is_closed()

    def test_blocking_dequeue_from_closed_empty_queue(self) -> None:
        """Q-CLOSE-4: a waiting dequeue gets OutOfRangeError, not CancelledError
        (testBlockingDequeueFromClosedEmptyQueue)."""
        for cancel in (False, True):
            q = self.make(10)
            waiting = Call(q.dequeue)
            wait_pending(q, dequeues=1)
            q.close(cancel_pending_enqueues=cancel)
            waiting.raised(OutOfRangeError, "is closed and has insufficient elements")

    def test_blocking_dequeue_from_closed_queue(self) -> None:
        """Q-CLOSE-4, Q-CLOSE-5 (testBlockingDequeueFromClosedQueue)."""
        q = self.make(10)
        self.fill(q, [1, 2, 3, 4])

        def drain_all() -> list[int]:
            got = self.take(q, 4)
            try:
                q.dequeue()
            except OutOfRangeError:
                return got
            raise AssertionError("the fifth dequeue should fail")

        drainer = Call(drain_all)
        wait_pending(q, dequeues=1)  # waiting for a fifth element
        q.close()
        self.same(drainer.value(), [1, 2, 3, 4])

    def test_blocking_dequeue_many_from_closed_queue(self) -> None:
        """Q-CLOSE-5, Q-DEQ-4 (testBlockingDequeueManyFromClosedQueue)."""
        q = self.make(10)
        q.enqueue_many(self.many([1, 2, 3, 4]))
        self.same(self.batch(q.dequeue_many(4)), [1, 2, 3, 4])
        waiting = Call(q.dequeue_many, 4)
        wait_pending(q, dequeues=1)
        q.close()
        waiting.raised(
            OutOfRangeError,
            f"{self.batch_class_name} 'q' is closed and has insufficient elements "
            "(requested 4, current size 0)",
        )

    def test_blocking_dequeue_many_but_not_all_from_closed_queue(self) -> None:
        """Q-DEQ-4: with 1 left, dequeue_many(3) reports requested 3, current size 1
        (testBlockingDequeueManyButNotAllFromClosedQueue; TF probe Q1)."""
        q = self.make(10)
        q.enqueue_many(self.many([1, 2, 3, 4]))
        first = self.batch(q.dequeue_many(3))
        q.close()
        with pytest.raises(OutOfRangeError, match=r"\(requested 3, current size 1\)$"):
            q.dequeue_many(3)
        assert q.size() == 1
        self.same(first + self.take(q, 1), [1, 2, 3, 4])

    def test_dequeue_up_to_from_closed_queue_returns_remainder(self) -> None:
        """Q-DEQ-5 (testDequeueUpToFromClosedQueueReturnsRemainder; TF probe Q12)."""
        q = self.make(10)
        q.enqueue_many(self.many([1, 2, 3, 4, 5]))
        got = [self.batch(q.dequeue_up_to(2))]
        q.close()
        got += [self.batch(q.dequeue_up_to(2)), self.batch(q.dequeue_up_to(2))]
        assert [len(b) for b in got] == [2, 2, 1]
        self.same([x for b in got for x in b], [1, 2, 3, 4, 5])
        with pytest.raises(OutOfRangeError, match=r"\(requested 2, current size 0\)$"):
            q.dequeue_up_to(2)

    def test_blocking_dequeue_many_and_up_to_from_closed_empty_queue(self) -> None:
        """Q-CLOSE-4, Q-DEQ-5 (testBlockingDequeueManyFromClosedEmptyQueue,
        testBlockingDequeueUpToFromClosedEmptyQueue)."""
        q = self.make(10)
        many = Call(q.dequeue_many, 4)
        up_to = Call(q.dequeue_up_to, 4)
        wait_pending(q, dequeues=2)
        q.close()
        many.raised(OutOfRangeError, "(requested 4, current size 0)")
        up_to.raised(OutOfRangeError, "(requested 4, current size 0)")

    def test_close_cancel_fails_waiting_enqueue_list(self) -> None:
        """Q-CLOSE-3: waiting enqueues, a half-done enqueue_many, a queued plain close
        and an enqueue behind it all fail with "Enqueue operation was cancelled"
        (TF probes X1, Q4b, Q4c; testResetOfBlockingOperation-style)."""
        q = self.make(3)
        q.enqueue(self.e(1))
        batch = Call(q.enqueue_many, self.many([10, 20, 30, 40]))  # 2 fit
        wait_pending(q, enqueues=1)
        single = Call(q.enqueue, self.e(50))
        wait_pending(q, enqueues=2)
        plain_close = Call(q.close)
        wait_pending(q, enqueues=2, closes=1)
        behind = Call(q.enqueue, self.e(60))
        wait_pending(q, enqueues=3, closes=1)
        assert not q.is_closed()

        q.close(cancel_pending_enqueues=True)  # returns at once, never fails
        for call in (batch, single, plain_close, behind):
            call.raised(CancelledError, "Enqueue operation was cancelled")
        assert q.is_closed()
        stats = q.statistics()
        assert (stats.pending_enqueues, stats.pending_closes) == (0, 0)
        # The elements the half-done enqueue_many stored stay.
        self.same(self.drained(q), [1, 10, 20])

    def test_close_cancel_lets_dequeuers_fail_out_of_range(self) -> None:
        """Q-CLOSE-4: TF probe Q5, with a cancelling close."""
        q = self.make(10, name="q5")
        one = Call(q.dequeue)
        wait_pending(q, dequeues=1)
        two = Call(q.dequeue_many, 2)
        wait_pending(q, dequeues=2)
        q.close(cancel_pending_enqueues=True)
        one.raised(
            OutOfRangeError,
            f"{self.class_name} 'q5' is closed and has insufficient elements "
            "(requested 1, current size 0)",
        )
        two.raised(OutOfRangeError, "(requested 2, current size 0)")

    def test_blocking_enqueue_before_close(self) -> None:
        """Q-CLOSE-1, Q-MODEL-1: a close behind a waiting enqueue waits for it
        (testBlockingEnqueueBeforeClose; TF probe Q4)."""
        q = self.make(4)
        self.fill(q, [10, 20, 30, 40])
        blocked = Call(q.enqueue, self.e(50))
        wait_pending(q, enqueues=1)
        closing = Call(q.close)
        wait_pending(q, enqueues=1, closes=1)
        assert not q.is_closed()
        assert not closing.finished()
        # Enqueues issued now line up behind the close and fail once it runs.
        late = Call(q.enqueue, self.e(60))
        wait_pending(q, enqueues=2, closes=1)

        first = self.v(q.dequeue())  # room: the enqueue, then the close, then "late"
        # Q-DEQ-5: the flush that closed the queue resolved every enqueue behind it.
        assert q.statistics().pending_enqueues == 0
        closing.value()
        blocked.value()
        late.raised(CancelledError, "is closed.")
        assert q.is_closed()
        self.same([first, *self.drained(q)], [10, 20, 30, 40, 50])

    def test_blocking_enqueue_many_before_close(self) -> None:
        """Q-CLOSE-1: a waiting enqueue_many larger than the room finishes first
        (testBlockingEnqueueManyBeforeClose, RSQ testBlockingEnqueueManyToClosedQueue)."""
        q = self.make(4)
        self.fill(q, [10, 20, 30])
        batch = Call(q.enqueue_many, self.many([50, 60, 70]))
        wait_pending(q, enqueues=1)
        closing = Call(q.close)
        wait_pending(q, closes=1)
        assert q.size() == 4  # 50 is in
        assert not q.is_closed()
        got = self.take(q, 2)  # room for 60 and 70
        batch.value()
        closing.value()
        assert q.is_closed()
        self.same(got + self.drained(q), [10, 20, 30, 50, 60, 70])

    def test_queued_closes_read_the_flag_when_they_run(self) -> None:
        """Q-MODEL-4, Q-CLOSE-2: two closes queued while the queue is open; the
        second finds it closed when its turn comes."""
        q = self.make(1, name="late")
        q.enqueue(self.e(1))
        blocked = Call(q.enqueue, self.e(2))
        wait_pending(q, enqueues=1)
        first = Call(q.close)
        wait_pending(q, closes=1)
        second = Call(q.close)
        wait_pending(q, closes=2)
        q.dequeue()
        blocked.value()
        first.value()
        second.raised(CancelledError, "Queue 'late' is already closed.")

    def test_enqueue_many_larger_than_capacity_with_concurrent_dequeue_many(self) -> None:
        """Q-ENQ-3, Q-DEQ-4 (testEnqueueManyLargerThanCapacityWithConcurrentDequeueMany)."""
        q = self.make(4)
        batch = Call(q.enqueue_many, self.many([1, 2, 3, 4, 5]))
        wait_pending(q, enqueues=1)
        first = self.batch(q.dequeue_many(3))
        batch.value()
        q.close()
        with pytest.raises(OutOfRangeError, match=r"\(requested 3, current size 2\)$"):
            q.dequeue_many(3)
        self.same(first + self.drained(q), [1, 2, 3, 4, 5])  # the rest is still there

    # -- waiting and the model ---------------------------------------------------

    def test_waiting_dequeuers_served_in_arrival_order(self) -> None:
        """Q-MODEL-3 (TF probe Q8)."""
        q = self.make(10)
        calls = []
        for k in range(3):
            calls.append(Call(q.dequeue))
            wait_pending(q, dequeues=k + 1)
        for i in (1, 2, 3):
            q.enqueue(self.e(i))
        assert [self.v(c.value()) for c in calls] == [1, 2, 3]

    def test_waiting_enqueuers_served_in_arrival_order(self) -> None:
        """Q-MODEL-3 (TF probe Q8: enqueue waiters drained in order)."""
        q = self.make(1)
        q.enqueue(self.e(0))
        calls = []
        for k in (1, 2, 3):
            calls.append(Call(q.enqueue, self.e(k)))
            wait_pending(q, enqueues=k)
        got = self.take(q, 4)
        for c in calls:
            c.value()
        assert got == [0, 1, 2, 3]

    def test_head_of_line_blocking(self) -> None:
        """Q-MODEL-3, Q-DEQ-3, Q-API-6: a dequeue_many(3) at the head holds 2 and a
        later dequeue waits (TF probe Q8); a PriorityQueue holds nothing (PQ-4)."""
        q = self.make(10)
        head = Call(q.dequeue_many, 3)
        wait_pending(q, dequeues=1)
        self.fill(q, [7, 8])
        behind = Call(q.dequeue)
        wait_pending(q, dequeues=2)
        stats = q.statistics()
        if self.takes_as_arrives:
            assert (stats.size, stats.held) == (0, 2)
        else:
            assert (stats.size, stats.held) == (2, 0)
        q.enqueue(self.e(9))
        self.same(self.batch(head.value()), [7, 8, 9])
        wait_pending(q, dequeues=1)
        assert not behind.finished()
        q.enqueue(self.e(10))
        assert self.v(behind.value()) == 10

    def test_flush_loop_cascades(self) -> None:
        """Q-MODEL-2, Q-MODEL-5: a dequeue_many frees room, the waiting enqueue
        moves in, the dequeue_many takes it, all within one call."""
        if not self.takes_as_arrives:
            pytest.skip("PQ-4: a PriorityQueue dequeue_many takes nothing early")
        q = self.make(1)
        q.enqueue(self.e(1))
        blocked = Call(q.enqueue, self.e(2))
        wait_pending(q, enqueues=1)
        head = Call(q.dequeue_many, 3)
        wait_pending(q, dequeues=1)
        # The registering call ran the lists until neither moved.
        stats = q.statistics()
        assert (stats.pending_enqueues, stats.size, stats.held) == (0, 0, 2)
        blocked.value()
        q.enqueue(self.e(3))
        assert q.statistics().pending_dequeues == 0  # served inside enqueue
        self.same(self.batch(head.value()), [1, 2, 3])

    def test_big_dequeue_many(self) -> None:
        """Q-DEQ-3: dequeue_many(4) on a capacity-2 queue (testBigDequeueMany)."""
        if not self.takes_as_arrives:
            pytest.skip("PQ-4: cannot complete with n > capacity")
        q = self.make(2)
        head = Call(q.dequeue_many, 4)
        wait_pending(q, dequeues=1)
        self.fill(q, [1, 2, 3, 4])
        self.same(self.batch(head.value()), [1, 2, 3, 4])

    def test_big_enqueue_many(self) -> None:
        """Q-ENQ-3: enqueue_many(10) into capacity 5 streams (testBigEnqueueMany)."""
        q = self.make(5)
        batch = Call(q.enqueue_many, self.many(list(range(10))))
        wait_pending(q, enqueues=1)
        assert q.size() == 5
        got = []
        # Each dequeue moves the next element in before it returns.
        for expected_size in (5, 5, 5, 5, 5, 5, 4, 3, 2, 1):
            assert q.size() == expected_size
            got.append(self.v(q.dequeue()))
        batch.value()
        self.same(got, list(range(10)))

    def test_dequeuers_take_first_elements_of_a_waiting_enqueue_many(self) -> None:
        """Q-ENQ-3: the first elements are out before the batch completes."""
        q = self.make(2)
        batch = Call(q.enqueue_many, self.many([1, 2, 3]))
        wait_pending(q, enqueues=1)
        first = self.v(q.dequeue())
        assert q.statistics().pending_enqueues == 0  # 3 moved in at once
        batch.value()
        self.same([first, *self.take(q, 2)], [1, 2, 3])

    def test_blocking_dequeue_many_and_up_to(self) -> None:
        """Q-DEQ-3, Q-DEQ-5 (testBlockingDequeueMany, testBlockingDequeueUpTo)."""
        q = self.make(10)
        many = Call(q.dequeue_many, 4)
        wait_pending(q, dequeues=1)
        up_to = Call(q.dequeue_up_to, 4)
        wait_pending(q, dequeues=2)
        q.enqueue_many(self.many([1, 2, 3, 4]))
        q.enqueue_many(self.many([5, 6, 7, 8]))
        self.same(self.batch(many.value()), [1, 2, 3, 4])
        self.same(self.batch(up_to.value()), [5, 6, 7, 8])

    def test_dequeue_up_to_waits_for_n_while_open(self) -> None:
        """Q-DEQ-5: no early return while open (TF probe Q11)."""
        q = self.make(10)
        self.fill(q, [1, 2])
        with pytest.raises(DeadlineExceededError):
            q.dequeue_up_to(5, timeout=0.02)
        assert q.size() == 2  # DEV-Q-1: put back

    def test_enqueue_and_blocking_dequeue(self) -> None:
        """Q-DEQ-1 (testEnqueueAndBlockingDequeue)."""
        q = self.make(3)
        consumer = Call(self.take, q, 4)
        wait_pending(q, dequeues=1)
        for i in (10, 20, 30, 40):
            q.enqueue(self.e(i))
        self.same(consumer.value(), [10, 20, 30, 40])

    def test_blocking_enqueue_to_full_queue(self) -> None:
        """Q-ENQ-2 (testBlockingEnqueueToFullQueue, testBlockingEnqueueManyToFullQueue)."""
        q = self.make(4)
        self.fill(q, [10, 20, 30, 40])
        one = Call(q.enqueue, self.e(50))
        wait_pending(q, enqueues=1)
        batch = Call(q.enqueue_many, self.many([60, 70]))
        wait_pending(q, enqueues=2)
        got = self.take(q, 7)
        one.value()
        batch.value()
        self.same(got, [10, 20, 30, 40, 50, 60, 70])

    # -- timeouts ------------------------------------------------------------------

    def test_dequeue_with_timeout(self) -> None:
        """Q-TIMEOUT-1 (testDequeueWithTimeout; TF probe Q7)."""
        q = self.make(10)
        start = time.monotonic()
        with pytest.raises(DeadlineExceededError, match=r"^Timed out waiting for notification$"):
            q.dequeue(timeout=0.05)
        assert time.monotonic() - start >= 0.05
        with pytest.raises(TimeoutError):
            q.dequeue(timeout=0.01)

    def test_reusable_after_timeout(self) -> None:
        """Q-DEQ-7 (testReusableAfterTimeout)."""
        q = self.make(10)
        for _ in range(2):
            with pytest.raises(DeadlineExceededError):
                q.dequeue(timeout=0.01)
        q.enqueue(self.e(37))
        assert self.v(q.dequeue()) == 37
        assert q.statistics().pending_dequeues == 0

    def test_timed_out_enqueues_leave_full_queue_as_it_was(self) -> None:
        """Q-TIMEOUT-2 (TF probe Q7: enqueue and enqueue_many on a full queue)."""
        q = self.make(2)
        self.fill(q, [1, 2])
        with pytest.raises(DeadlineExceededError):
            q.enqueue(self.e(3), timeout=0.02)
        with pytest.raises(DeadlineExceededError):
            q.enqueue_many(self.many([4, 5]), timeout=0.02)
        q.close()
        self.same(self.drained(q), [1, 2])

    def test_timed_out_enqueue_many_keeps_what_it_stored(self) -> None:
        """Q-ENQ-3, Q-TIMEOUT-2 (TF probe Q7b)."""
        q = self.make(3)
        q.enqueue(self.e(0))
        with pytest.raises(DeadlineExceededError):
            q.enqueue_many(self.many([1, 2, 3, 4]), timeout=0.02)
        q.close()
        self.same(self.drained(q), [0, 1, 2])

    def test_timeout_zero_never_waits(self) -> None:
        """Q-TIMEOUT-3, Q-CANCEL-2: finish at once or fail without a trace."""
        q = self.make(3)
        with pytest.raises(DeadlineExceededError):
            q.dequeue(timeout=0)
        with pytest.raises(DeadlineExceededError):
            q.dequeue_many(1, timeout=0)
        q.enqueue(self.e(1), timeout=0)
        q.enqueue_many(self.many([2, 3]), timeout=0)
        with pytest.raises(DeadlineExceededError):
            q.enqueue(self.e(4), timeout=0)
        with pytest.raises(DeadlineExceededError):
            q.dequeue_many(4, timeout=0)
        assert q.size() == 3
        got = [self.v(q.dequeue(timeout=0))]
        # The whole batch must fit in the free room now.
        with pytest.raises(DeadlineExceededError):
            q.enqueue_many(self.many([5, 6]), timeout=0)
        assert q.size() == 2
        got += self.batch(q.dequeue_many(2, timeout=0))
        self.same(got, [1, 2, 3])
        stats = q.statistics()
        assert (stats.pending_enqueues, stats.pending_dequeues, stats.held) == (0, 0, 0)
        # On a closed queue the answer is immediate: remainder or OutOfRange.
        q.enqueue(self.e(7))
        q.close(timeout=0)
        self.same(self.batch(q.dequeue_up_to(5, timeout=0)), [7])
        with pytest.raises(OutOfRangeError):
            q.dequeue(timeout=0)
        with pytest.raises(CancelledError):
            q.enqueue(self.e(8), timeout=0)

    def test_timeout_zero_behind_a_waiter_fails(self) -> None:
        """Q-TIMEOUT-3: someone ahead in the list means waiting, even if the queue
        could serve this call (Q-MODEL-3)."""
        q = self.make(10)
        head = Call(q.dequeue_many, 3)
        wait_pending(q, dequeues=1)
        self.fill(q, [1, 2])
        with pytest.raises(DeadlineExceededError):
            q.dequeue(timeout=0)
        q.enqueue(self.e(3))
        self.same(self.batch(head.value()), [1, 2, 3])

    def test_timed_out_head_lets_the_next_attempt_move(self) -> None:
        """Q-TIMEOUT-2: a close queued behind a timed-out enqueue takes effect."""
        q = self.make(1)
        q.enqueue(self.e(1))
        blocked = Call(q.enqueue, self.e(2), timeout=0.5)
        wait_pending(q, enqueues=1)
        # Normally the close queues behind the enqueue and is released by its
        # timeout; on a very slow machine it may find the list empty: same outcome.
        closing = Call(q.close)
        blocked.raised(DeadlineExceededError)
        closing.value()
        assert q.is_closed()
        self.same(self.drained(q), [1])

    # -- many threads (FIFOQueueParallelTests) -----------------------------------

    def test_parallel_enqueue(self) -> None:
        """Q-ENQ-2, Q-API-8: one thread per element, none lost or duplicated."""
        q = self.make(-1)
        calls = [Call(q.enqueue, self.e(i)) for i in range(50)]
        for c in calls:
            c.value()
        assert sorted(self.take(q, 50)) == list(range(50))

    def test_parallel_dequeue(self) -> None:
        """Q-DEQ-1 (testParallelDequeue)."""
        q = self.make(-1)
        q.enqueue_many(self.many(list(range(50))))
        calls = [Call(q.dequeue) for _ in range(50)]
        assert sorted(self.v(c.value()) for c in calls) == list(range(50))

    def test_parallel_enqueue_many_and_dequeue_many(self) -> None:
        """Q-ENQ-3, Q-DEQ-3 (testParallelEnqueueMany, testParallelDequeueMany)."""
        q = self.make(-1)
        calls = [Call(q.enqueue_many, self.many(list(range(i * 10, i * 10 + 10)))) for i in range(10)]
        for c in calls:
            c.value()
        takers = [Call(q.dequeue_many, 10) for _ in range(10)]
        got = [x for c in takers for x in self.batch(c.value())]
        assert sorted(got) == list(range(100))

    def test_parallel_dequeue_up_to(self) -> None:
        """Q-DEQ-5: 10 threads of dequeue_up_to(101) on 1000 closed elements
        (testParallelDequeueUpTo)."""
        q = self.make(-1)
        q.enqueue_many(self.many(list(range(1000))))
        q.close()

        def take_all() -> list[int]:
            got: list[int] = []
            while True:
                try:
                    got += self.batch(q.dequeue_up_to(101))
                except OutOfRangeError:
                    return got

        calls = [Call(take_all) for _ in range(10)]
        got = [x for c in calls for x in c.value()]
        assert sorted(got) == list(range(1000))

    def test_parallel_enqueue_and_dequeue(self) -> None:
        """Q-MODEL-3: 10 producers and 10 consumers at capacity 5
        (testParallelEnqueueAndDequeue); totals conserved."""
        q = self.make(5)

        def produce(k: int) -> None:
            for i in range(k * 100, k * 100 + 100):
                q.enqueue(self.e(i))

        producers = [Call(produce, k) for k in range(10)]
        consumers = [Call(self.take, q, 100) for _ in range(10)]
        for c in producers:
            c.value()
        got = [x for c in consumers for x in c.value()]
        assert sorted(got) == list(range(1000))
        assert q.statistics().size == 0

    def test_mixture_of_enqueue_and_enqueue_many(self) -> None:
        """Q-ENQ-3, Q-MODEL-3: one producer mixing both keeps the order
        (testMixtureOfEnqueueAndEnqueueMany, testMixtureOfDequeueAndDequeueMany)."""
        q = self.make(8)
        sizes = [1, 0, 3, 5, 1, 8, 2, 0, 4, 7, 1]  # 0: a single enqueue
        total = sum(s or 1 for s in sizes)

        def produce() -> None:
            i = 0
            for s in sizes:
                if s == 0:
                    q.enqueue(self.e(i))
                    i += 1
                else:
                    q.enqueue_many(self.many(list(range(i, i + s))))
                    i += s

        producer = Call(produce)
        got: list[int] = []
        for s in sizes:
            got += self.batch(q.dequeue_many(s)) if s else [self.v(q.dequeue())]
        producer.value()
        assert len(got) == total
        self.same(got, list(range(total)))


class TestFIFOQueue(QueueContract):
    def make(self, capacity: int = -1, name: str = "q") -> Any:
        return FIFOQueue(capacity, name=name)


class TestTypedFIFOQueue(QueueContract):
    def make(self, capacity: int = -1, name: str = "q") -> Any:
        return FIFOQueue(capacity, ["int64"], shapes=[()], name=name)

    def many(self, items: list[int]) -> Any:
        return (list(items),)


class TestPaddingFIFOQueue(QueueContract):
    batch_class_name = "PaddingFIFOQueue"

    def make(self, capacity: int = -1, name: str = "q") -> Any:
        return PaddingFIFOQueue(capacity, ["int64"], shapes=[()], name=name)

    def many(self, items: list[int]) -> Any:
        return (list(items),)


class TestRandomShuffleQueue(QueueContract):
    ordered = False
    class_name = batch_class_name = "RandomShuffleQueue"

    def make(self, capacity: int = -1, name: str = "q") -> Any:
        return RandomShuffleQueue(capacity, 0, seed=42, name=name)

    def test_waiting_enqueuers_served_in_arrival_order(self) -> None:
        """Q-MODEL-3: one element at a time, so the order is the arrival order."""
        q = self.make(1)
        q.enqueue(0)
        calls = []
        for k in (1, 2, 3):
            calls.append(Call(q.enqueue, k))
            wait_pending(q, enqueues=k)
        assert [q.dequeue() for _ in range(4)] == [0, 1, 2, 3]


class TestPriorityQueue(QueueContract):
    takes_as_arrives = False
    class_name = batch_class_name = "PriorityQueue"

    def make(self, capacity: int = -1, name: str = "q") -> Any:
        return PriorityQueue(capacity, name=name)

    def e(self, i: int) -> Any:
        return (i, f"v{i}")

    def many(self, items: list[int]) -> Any:
        return [(i, f"v{i}") for i in items]

    def v(self, x: Any) -> int:
        assert x == (x[0], f"v{x[0]}")
        return x[0]

    def batch(self, b: Any) -> list[int]:
        return [self.v(x) for x in b]


def test_contract_runs_on_every_class() -> None:
    """Q-API-1: the shared behaviour is checked for all four classes."""
    classes = {type(cls().make(1)) for cls in QueueContract.__subclasses__()}
    assert classes == {FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue, PriorityQueue}


def test_threads_do_not_outlive_the_contract() -> None:
    """Helpers' threads are daemons; nothing here should still be waiting."""
    assert all(t.daemon for t in threading.enumerate() if t is not threading.main_thread())
