"""Timeouts, their effects, and cancellation (which coordkit maps to timeouts).

Some tests replace ``coordkit.sync.Condition`` and ``coordkit.sync.monotonic``
(the seam the controlled scheduler uses) to make a race happen on purpose.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from test_queues_support import Call, drain, wait_pending

from coordkit import (
    CancelledError,
    DeadlineExceededError,
    FIFOQueue,
    PriorityQueue,
    RandomShuffleQueue,
    sync,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_deadlines_use_the_sync_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Q-TIMEOUT-1: the deadline is read from coordkit.sync.monotonic (virtual time
    in a controlled run): a clock that jumps makes a long timeout expire at once."""
    clock = FakeClock()
    reads = iter([0.0, 5000.0, 5000.0])
    monkeypatch.setattr(sync, "monotonic", lambda: clock.now + next(reads))
    q = FIFOQueue(10)
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match=r"^Timed out waiting for notification$"):
        q.dequeue(timeout=1000)
    assert time.monotonic() - start < 5
    assert q.statistics().pending_dequeues == 0


def test_positive_timeout_does_not_delay_a_ready_call() -> None:
    """Q-TIMEOUT-1: a call that can finish at once does."""
    q = FIFOQueue(10)
    start = time.monotonic()
    q.enqueue(1, timeout=100)
    q.enqueue_many([2, 3], timeout=100)
    assert q.dequeue_many(3, timeout=100) == [1, 2, 3]
    assert time.monotonic() - start < 5


def test_a_finished_call_wins_over_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Q-TIMEOUT-4: the attempt completes while its caller waits and the clock passes
    the deadline in the same moment: the caller gets the element, not a timeout."""
    clock = FakeClock()
    monkeypatch.setattr(sync, "monotonic", clock)
    q = FIFOQueue(10)
    q.enqueue(1)

    class CompletingCondition:
        def __init__(self, lock: Any) -> None:
            self._lock = lock

        def wait(self, timeout: float | None = None) -> bool:
            self._lock.release()
            try:
                q.enqueue(2)  # completes the waiting dequeue_many(2)
            finally:
                self._lock.acquire()
            clock.now += 1000  # ... and the deadline passes
            return False

        def notify(self, n: int = 1) -> None:
            pass

    monkeypatch.setattr(sync, "Condition", CompletingCondition)
    assert q.dequeue_many(2, timeout=5) == [1, 2]
    assert q.statistics().size == 0


class Interrupt(BaseException):
    pass


def interrupting_condition(lock: Any) -> Any:
    class InterruptingCondition:
        def wait(self, timeout: float | None = None) -> bool:
            raise Interrupt

        def notify(self, n: int = 1) -> None:
            pass

    return InterruptingCondition()


def test_an_interrupted_wait_withdraws_the_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Q-TIMEOUT-5: an exception in the wait (think KeyboardInterrupt) withdraws the
    attempt as a timeout would, then propagates."""
    q = FIFOQueue(2)
    waiting = Call(q.enqueue_many, [10, 20, 30, 40])  # stores 2, then waits
    wait_pending(q, enqueues=1)
    monkeypatch.setattr(sync, "Condition", interrupting_condition)
    # A plain close stays in line (Q-CLOSE-6).
    with pytest.raises(Interrupt):
        q.close()
    assert q.statistics().pending_closes == 1
    with pytest.raises(Interrupt):
        q.enqueue(50)
    monkeypatch.undo()
    assert q.statistics().pending_enqueues == 1  # only the thread's enqueue_many

    p = FIFOQueue(10)
    p.enqueue_many([1, 2])
    monkeypatch.setattr(sync, "Condition", interrupting_condition)
    with pytest.raises(Interrupt):
        p.dequeue_many(3)
    monkeypatch.undo()
    stats = p.statistics()
    assert (stats.size, stats.held, stats.pending_dequeues) == (2, 0, 0)  # put back
    assert p.dequeue_many(2) == [1, 2]

    assert q.dequeue_many(4) == [10, 20, 30, 40]
    waiting.value()
    assert q.is_closed()  # the interrupted close took effect after the enqueue_many


def test_timed_out_partial_batch_goes_back_to_the_front(monkeypatch: pytest.MonkeyPatch) -> None:
    """Q-DEQ-6, DEV-Q-1, Q-TIMEOUT-2: TensorFlow drops the 2 held elements (probe Q7:
    size 0 afterwards); coordkit puts them back in order, in front, and the dequeue
    waiting behind the timed-out head gets the first of them."""
    q = FIFOQueue(10)
    head = Call(q.dequeue_many, 3, timeout=0.5)
    wait_pending(q, dequeues=1)
    q.enqueue_many([1, 2])
    # Normally this dequeue waits behind the head until the head times out; if the
    # machine is slow enough for the head to time out first, it must still get 1.
    behind = Call(q.dequeue)
    head.raised(DeadlineExceededError)
    assert behind.value() == 1
    q.enqueue(3)
    q.close()
    assert drain(q) == [2, 3]


def test_timed_out_partial_batch_of_a_shuffle_queue() -> None:
    """Q-DEQ-6: a RandomShuffleQueue appends them; nothing is lost either way."""
    q = RandomShuffleQueue(10, 0, seed=9)
    head = Call(q.dequeue_up_to, 5, timeout=0.2)
    wait_pending(q, dequeues=1)
    q.enqueue_many([1, 2, 3])
    head.raised(DeadlineExceededError)
    q.close()
    assert sorted(drain(q)) == [1, 2, 3]


def test_timed_out_priority_batch_held_nothing() -> None:
    """Q-TIMEOUT-2, PQ-4: nothing to give back."""
    q = PriorityQueue(10)
    q.enqueue_many([(1, "a"), (0, "b")])
    with pytest.raises(DeadlineExceededError):
        q.dequeue_many(3, timeout=0.02)
    assert q.dequeue_many(2) == [(0, "b"), (1, "a")]


def test_timed_out_plain_close_still_happens() -> None:
    """Q-CLOSE-6, DEV-Q-7: TensorFlow's close() returned only when the close happened
    (probe X6: 1.0 s with a 0.3 s timeout); coordkit returns at the deadline and the
    close stays in line."""
    q = FIFOQueue(1)
    q.enqueue(1)
    blocked = Call(q.enqueue, 2)
    wait_pending(q, enqueues=1)
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match=r"^Timed out waiting for notification$"):
        q.close(timeout=0.05)
    assert time.monotonic() - start < 5
    assert not q.is_closed()
    assert q.statistics().pending_closes == 1
    late = Call(q.enqueue, 3)  # lines up behind the close
    wait_pending(q, enqueues=2, closes=1)
    assert q.dequeue() == 1
    blocked.value()
    late.raised(CancelledError, "is closed.")
    assert q.is_closed()
    assert q.statistics().pending_closes == 0
    assert drain(q) == [2]


def test_timed_out_close_then_second_close() -> None:
    """Q-CLOSE-6, Q-CLOSE-2: the abandoned close runs first; the next plain close
    finds the queue closed; a cancelling close would have cancelled it silently."""
    q = FIFOQueue(1, name="c")
    q.enqueue(1)
    blocked = Call(q.enqueue, 2)
    wait_pending(q, enqueues=1)
    with pytest.raises(DeadlineExceededError):
        q.close(timeout=0.01)
    second = Call(q.close)
    wait_pending(q, closes=2)
    q.dequeue()
    blocked.value()
    second.raised(CancelledError, "Queue 'c' is already closed.")

    r = FIFOQueue(1)
    r.enqueue(1)
    with pytest.raises(DeadlineExceededError):
        r.enqueue(2, timeout=0)
    stuck = Call(r.enqueue, 2)
    wait_pending(r, enqueues=1)
    with pytest.raises(DeadlineExceededError):
        r.close(timeout=0.01)
    r.close(cancel_pending_enqueues=True)
    stuck.raised(CancelledError, "Enqueue operation was cancelled")
    assert r.statistics().pending_closes == 0
    assert r.is_closed()


def test_close_with_timeout_zero() -> None:
    """Q-TIMEOUT-3: a plain close that would wait fails at once and is not queued."""
    q = FIFOQueue(1)
    q.enqueue(1)
    blocked = Call(q.enqueue, 2)
    wait_pending(q, enqueues=1)
    with pytest.raises(DeadlineExceededError):
        q.close(timeout=0)
    assert q.statistics().pending_closes == 0
    q.dequeue()
    blocked.value()
    assert not q.is_closed()
    q.close(timeout=0)
    assert q.is_closed()


def test_timeout_zero_on_shuffle_queue_respects_min_after_dequeue() -> None:
    """Q-TIMEOUT-3, RSQ-2: 'available' means above min_after_dequeue while open."""
    q = RandomShuffleQueue(10, 2, seed=1)
    q.enqueue_many([1, 2, 3])
    assert q.dequeue(timeout=0) in (1, 2, 3)
    with pytest.raises(DeadlineExceededError):
        q.dequeue(timeout=0)
    with pytest.raises(DeadlineExceededError):
        q.dequeue_up_to(1, timeout=0)
    q.close()
    assert len(q.dequeue_many(2, timeout=0)) == 2


def test_timeouts_replace_session_cancellation() -> None:
    """Q-CANCEL-1, DEV-Q-10 (testResetOfBlockingOperation): blocked dequeue,
    dequeue_many, enqueue and enqueue_many are released by their timeouts with
    DeadlineExceededError, never "Dequeue operation was cancelled"; the queue stays
    open and usable."""
    empty, full = FIFOQueue(5), FIFOQueue(5)
    full.enqueue_many([1, 2, 3, 4, 5])
    calls: list[Call] = [
        Call(empty.dequeue, timeout=0.1),
        Call(empty.dequeue_many, 1, timeout=0.1),
        Call(full.enqueue, 6, timeout=0.1),
        Call(full.enqueue_many, [6, 7], timeout=0.1),
    ]
    for call in calls:
        call.raised(DeadlineExceededError, "Timed out waiting for notification")
    for q in (empty, full):
        stats = q.statistics()
        assert (stats.closed, stats.pending_enqueues, stats.pending_dequeues) == (False, 0, 0)
    empty.enqueue(37)
    assert empty.dequeue() == 37
    assert full.dequeue_many(5) == [1, 2, 3, 4, 5]


def test_op_that_must_wait_fails_at_once_with_timeout_zero() -> None:
    """Q-CANCEL-2, Q-TIMEOUT-3: the counterpart of an op whose step is already
    cancelled: no waiting, no effect, not even a partial enqueue_many."""
    q = FIFOQueue(3)
    q.enqueue(0)
    start = time.monotonic()
    calls: list[Callable[[], Any]] = [
        lambda: q.enqueue_many([1, 2, 3], timeout=0),
        lambda: q.dequeue_many(2, timeout=0),
    ]
    for call in calls:
        with pytest.raises(DeadlineExceededError):
            call()
    assert time.monotonic() - start < 5
    assert q.dequeue_many(1) == [0]
    assert q.statistics().size == 0
