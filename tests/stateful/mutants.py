"""Deliberately broken queues, coordinators and runners: each machine must catch each one (MUT-1).

Every mutant is a small subclass of a reference class (or a patched copy of
one method) with exactly one bug, named for what it gets wrong.  ``MUTANTS``
lists them with the machine that must catch them; ``test_mutants.py`` runs
that machine against each and records how many examples it took.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordkit.coordinator import Coordinator
from coordkit.errors import CancelledError, DeadlineExceededError, OutOfRangeError
from coordkit.queue_runner import QueueRunner
from coordkit.queues import (
    _COMPLETE,
    _NO_WAIT,
    _TIMED_OUT,
    FIFOQueue,
    PaddingFIFOQueue,
    PriorityQueue,
    RandomShuffleQueue,
    _Attempt,
    _deadline,
)

# ---------------------------------------------------------------------------
# Queues
# ---------------------------------------------------------------------------


class CloseDoesNotWakeWaiters(FIFOQueue):
    """close() takes effect but never runs the dequeue list: waiting dequeuers sleep on."""

    def close(self, cancel_pending_enqueues: bool = False, timeout: float | None = None) -> None:
        deadline = None if timeout is None else _deadline(timeout)
        with self._mutex:
            if cancel_pending_enqueues:
                self._set_closed()
                for attempt in self._enqueue_waiters:
                    attempt.error = CancelledError("Enqueue operation was cancelled")
                    self._finish(attempt)
                self._enqueue_waiters.clear()
                return  # BUG: no flush, so waiting dequeuers never see the close
            if deadline == _NO_WAIT and self._enqueue_waiters:
                raise DeadlineExceededError(_TIMED_OUT)
            attempt = _Attempt(self._close_step)
            attempt.is_close = True
            self._enqueue_waiters.append(attempt)
            self._run(self._enqueue_waiters)  # BUG: the dequeue list is not run
            self._await(attempt, deadline)


class PartialBatchLostOnClose(FIFOQueue):
    """A dequeue_many that fails on a closed queue drops the elements it held."""

    def _put_back(self, taken: list[Any]) -> None:
        if not self._closed:
            super()._put_back(taken)
        # BUG: once closed, what a failing batch held is lost


class LaterWaiterServedFirst(FIFOQueue):
    """Waiting dequeuers are served newest first."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._dequeue_waiters = _NewestFirst()


class _NewestFirst(deque):  # type: ignore[type-arg]
    def append(self, attempt: Any) -> None:
        self.appendleft(attempt)  # BUG: a new waiter goes to the head


class PlainCloseCancelsPendingEnqueues(FIFOQueue):
    """close() without cancel_pending_enqueues cancels the waiting enqueues anyway."""

    def close(self, cancel_pending_enqueues: bool = False, timeout: float | None = None) -> None:
        super().close(cancel_pending_enqueues=True, timeout=timeout)  # BUG


class TimeoutDropsElement(FIFOQueue):
    """A dequeue_many that times out loses the elements it held (TensorFlow's DEV-Q-1)."""

    def _withdraw(self, attempt: _Attempt) -> None:
        attempt.taken = []  # BUG: nothing to put back
        super()._withdraw(attempt)


class TimedOutCloseForgotten(FIFOQueue):
    """A plain close that times out leaves the line and never takes effect."""

    def _withdraw(self, attempt: _Attempt) -> None:
        if attempt.is_close:
            attempt.finished = None
            self._enqueue_waiters.remove(attempt)  # BUG: Q-CLOSE-6 keeps it in line
            self._flush()
            return
        super()._withdraw(attempt)


class ClosedQueueRefusesToDrain(FIFOQueue):
    """A single dequeue on a closed queue fails even while elements remain."""

    def _dequeue_step(self, attempt: _Attempt) -> int:
        if self._closed:
            attempt.error = OutOfRangeError("closed")  # BUG: Q-CLOSE-5 says drain first
            return _COMPLETE
        return super()._dequeue_step(attempt)

    def dequeue(self, timeout: float | None = None) -> Any:
        if self.is_closed():
            raise OutOfRangeError("closed")  # BUG (the shortcut path)
        return super().dequeue(timeout)


class RacyDequeue(FIFOQueue):
    """dequeue() checks for an element and takes it in two critical sections.

    Alone it is correct; two dequeuers racing for the last element can both
    pass the check, and the loser finds the queue empty.  Only an
    interleaving inside one step shows it (MACH-4, MACH-5).
    """

    def dequeue(self, timeout: float | None = None) -> Any:
        with self._mutex:
            ready = not self._dequeue_waiters and len(self._queue) > self._reserve
        if not ready:
            return super().dequeue(timeout)
        with self._mutex:  # BUG: the element may be gone by now
            element = self._get()
            if self._enqueue_waiters:
                self._flush()
        return element


class RacyEnqueue(FIFOQueue):
    """enqueue() checks for room and stores the element in two critical sections.

    Alone it is correct; two enqueuers racing for the last free slot can both
    pass the check and overfill the queue.  Only an interleaving inside one
    step shows it (MACH-4, MACH-5).
    """

    def enqueue(self, vals: Any, timeout: float | None = None) -> None:
        with self._mutex:
            room = not self._enqueue_waiters and not self._closed and len(self._queue) < self._capacity
        if not room:
            super().enqueue(vals, timeout)
            return
        with self._mutex:  # BUG: the slot may be gone by now
            self._put(vals)
            if self._dequeue_waiters:
                self._flush()


class MinAfterDequeueIgnoredWhileOpen(RandomShuffleQueue):
    """A RandomShuffleQueue that lets the open queue drain below min_after_dequeue."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reserve = 0  # BUG: RSQ-2


class _PaddingQueue(PaddingFIFOQueue):
    """The PaddingFIFOQueueMachine's queue: an int64 id and an int64 vector of any length."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, dtypes=["int64", "int64"], shapes=[(), (None,)])


class BatchesNotPadded(_PaddingQueue):
    """dequeue_many and dequeue_up_to return the vectors as they were, not padded (PAD-3)."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self._sig._partial = False  # BUG: batches are built like a FIFOQueue's


class PaddedWithOnes(_PaddingQueue):
    """Batches are padded to the right length, but with 1 instead of the dtype's zero (PAD-3)."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        pad = self._sig._pad
        self._sig._pad = lambda column, spec, fill: pad(column, spec, 1)  # BUG: fill is 0


class PriorityBatchesTakenPiecemeal(PriorityQueue):
    """A PriorityQueue dequeue_many that takes elements as they come, like a FIFO."""

    _whole_batches = False  # BUG: PQ-4


# ---------------------------------------------------------------------------
# Coordinators
# ---------------------------------------------------------------------------


class FirstExceptionOverwritten(Coordinator):
    """Every exception reported replaces the recorded one: the last reporter wins."""

    def request_stop(self, ex: Any = None) -> None:
        handled = sys.exc_info()
        self._check_stop_reason(ex)
        ex = self._filter(ex)
        with self._lock:
            if self._joined and ex is not None:
                raise ex[1] if isinstance(ex, tuple) else (handled[1] or ex)
            if ex is not None:  # BUG: COORD-4 records only with the first stop request
                if isinstance(ex, tuple):
                    self._exc_info = ex
                elif handled[1] is not None:
                    self._exc_info = handled
                else:
                    self._exc_info = (type(ex), ex, ex.__traceback__)
            self._stop_event.set()
            self._stop_or_ended.notify_all()


class CleanStopReRaised(Coordinator):
    """Clean-stop exceptions are recorded like any other, so join re-raises them."""

    def _filter(self, ex: Any) -> Any:
        return ex  # BUG: COORD-3


class JoinIgnoresRegisteredThreads(Coordinator):
    """join() waits only for the threads passed to it, not the registered ones."""

    def join(self, threads: Any = None, stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:
        with self._lock:
            registered = dict(self._registered_threads)
            self._registered_threads.clear()  # BUG: COORD-12's snapshot loses them
        try:
            super().join(threads, stop_grace_period_secs, ignore_live_threads)
        finally:
            with self._lock:
                if not self._joined:
                    self._registered_threads.update(registered)


class RecordForgottenAfterJoin(Coordinator):
    """join() raises the recorded exception once, then forgets it (COORD-15 keeps it)."""

    def join(self, threads: Any = None, stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:
        try:
            super().join(threads, stop_grace_period_secs, ignore_live_threads)
        except BaseException:
            with self._lock:
                self._exc_info = None  # BUG
            raise


class ReportAfterJoinSwallowed(Coordinator):
    """request_stop(ex) after a join is ignored instead of raising ex (COORD-7)."""

    def request_stop(self, ex: Any = None) -> None:
        if self._joined and ex is not None:
            ex = None  # BUG
        super().request_stop(ex)


class StopVisibleBeforeRecord(Coordinator):
    """request_stop sets the stop, lets go of the lock, and only then records.

    Alone it is correct; a join woken by the stop can finish in between and
    miss the exception.  Only an interleaving inside one step shows it.
    """

    def request_stop(self, ex: Any = None) -> None:
        handled = sys.exc_info()
        self._check_stop_reason(ex)
        ex = self._filter(ex)
        with self._lock:
            if self._joined and ex is not None:
                raise ex[1] if isinstance(ex, tuple) else (handled[1] or ex)
            if self._stop_event.is_set():
                return
            first = self._exc_info is None
            self._stop_event.set()
            self._stop_or_ended.notify_all()
        if ex is not None and first:
            with self._lock:  # BUG: too late for a join that already looked
                if isinstance(ex, tuple):
                    self._exc_info = ex
                elif handled[1] is not None:
                    self._exc_info = handled
                else:
                    self._exc_info = (type(ex), ex, ex.__traceback__)


# ---------------------------------------------------------------------------
# Queue runners
# ---------------------------------------------------------------------------


class RunnerNeverClosesQueue(QueueRunner):
    """The last runner thread to see the input end does not close the queue."""

    def __init__(self, queue: Any, enqueue_ops: Any, **kwargs: Any) -> None:
        super().__init__(queue, enqueue_ops, close_op=lambda: None, **kwargs)  # BUG: RUNNER-4 step 3


class CancelNeverRunsOnStop(QueueRunner):
    """The close-on-stop thread waits for the stop and then does nothing."""

    def _close_on_stop(self, coord: Any) -> None:
        coord.wait_for_stop()  # BUG: RUNNER-5's cancel op is not called


class ExceptionsRaisedNotFilled(QueueRunner):
    """Errors of runner threads without a coordinator are logged but not kept."""

    @property
    def exceptions_raised(self) -> list[BaseException]:
        return []  # BUG: RUNNER-4 step 5

    def statistics(self) -> Any:
        stats = super().statistics()
        return type(stats)(stats.running_threads, 0)


class CloseOnFirstExhaustion(QueueRunner):
    """The first thread to see the input end closes the queue, not the last."""

    def _run(self, op: Callable[[], Any], coord: Any) -> None:
        def closing_op() -> Any:
            try:
                return op()
            except self._queue_closed_exception_types:
                self._call_ignoring_errors(self._close_op)  # BUG: others may still feed it
                raise

        super()._run(closing_op, coord)


class RunnerIgnoresStop(QueueRunner):
    """Runner threads never look at the coordinator before calling their op again."""

    def _run(self, op: Callable[[], Any], coord: Any) -> None:
        super()._run(op, _Unstoppable(coord) if coord is not None else None)


@dataclass
class _Unstoppable:
    coord: Any

    def should_stop(self) -> bool:
        return False  # BUG: RUNNER-4 step 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.coord, name)


class RacyRunnerCount(QueueRunner):
    """A thread leaving through a queue-closed exception reads the count and
    writes it back in two critical sections; two such exits can lose one
    decrement, and then nobody closes the queue.  Only an interleaving inside
    one step shows it."""

    def _run(self, op: Callable[[], Any], coord: Any) -> None:
        try:
            while True:
                if coord is not None and coord.should_stop():
                    break
                try:
                    op()
                except self._queue_closed_exception_types:
                    with self._lock:
                        runs = self._runs
                    with self._lock:  # BUG: the count may have changed meanwhile
                        self._runs = runs - 1
                        if self._runs == 0:
                            self._call_ignoring_errors(self._close_op)
                    return
        except Exception as e:
            if coord is not None:
                coord.request_stop(e)
            else:
                with self._lock:
                    self._exceptions_raised.append(e)
                    self._runs -= 1
                raise
            with self._lock:
                self._runs -= 1
            return
        except BaseException:
            with self._lock:
                self._runs -= 1
            raise
        with self._lock:
            self._runs -= 1



# ---------------------------------------------------------------------------
# Which machine must catch which mutant
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """A buggy class, the machine that must catch it, and the factory attribute to bind.

    ``race`` marks a bug that only an interleaving inside one step shows: a
    check and an act in two critical sections.
    """

    factory: Callable[..., Any]
    machine: str  # a machine class name in coordkit.stateful
    attribute: str
    race: bool = False

    @property
    def name(self) -> str:
        return getattr(self.factory, "__name__", repr(self.factory))

    def bind(self) -> type:
        """The machine subclassed and bound to the mutant, as a user binds their class (BYO-1)."""
        import coordkit.stateful as stateful

        base = getattr(stateful, self.machine)
        return type(f"{self.name}Machine", (base,), {self.attribute: staticmethod(self.factory)})


def _shuffle(cls: type) -> Callable[..., Any]:
    def make(capacity: int, min_after_dequeue: int) -> Any:
        return cls(capacity, min_after_dequeue, seed=0)

    make.__name__ = cls.__name__
    return make


# Not listed: ``TimedOutCloseForgotten``.  The machine does catch it (after 41
# examples derandomized), but not reliably within the budget: with random seeds
# only 5 runs in 16 caught it within 100 examples, and 6 not within 300.  It
# needs a plain close with a timeout to time out while enqueues wait on a full
# queue, and before they are served; ``test_machines.py``
# (``test_a_forgotten_timed_out_close_is_caught``) drives that state directly.
#
# ``StopVisibleBeforeRecord`` stays at the race budget (MUT-3): derandomized it
# takes 209 examples.  With random seeds it is caught within 100 in about 20 runs
# of 24 (mean about 55), and the same with clear_stop drawn twice as often as
# now, so 209 is an unlucky seed rather than a rule weight to tune.
MUTANTS = [
    Mutant(CloseDoesNotWakeWaiters, "FIFOQueueMachine", "queue_factory"),
    Mutant(PartialBatchLostOnClose, "FIFOQueueMachine", "queue_factory"),
    Mutant(LaterWaiterServedFirst, "FIFOQueueMachine", "queue_factory"),
    Mutant(PlainCloseCancelsPendingEnqueues, "FIFOQueueMachine", "queue_factory"),
    Mutant(TimeoutDropsElement, "FIFOQueueMachine", "queue_factory"),
    Mutant(ClosedQueueRefusesToDrain, "FIFOQueueMachine", "queue_factory"),
    Mutant(RacyDequeue, "FIFOQueueMachine", "queue_factory", race=True),
    Mutant(RacyEnqueue, "FIFOQueueMachine", "queue_factory", race=True),
    Mutant(_shuffle(MinAfterDequeueIgnoredWhileOpen), "RandomShuffleQueueMachine", "queue_factory"),
    Mutant(BatchesNotPadded, "PaddingFIFOQueueMachine", "queue_factory"),
    Mutant(PaddedWithOnes, "PaddingFIFOQueueMachine", "queue_factory"),
    Mutant(PriorityBatchesTakenPiecemeal, "PriorityQueueMachine", "queue_factory"),
    Mutant(FirstExceptionOverwritten, "CoordinatorMachine", "coordinator_factory"),
    Mutant(CleanStopReRaised, "CoordinatorMachine", "coordinator_factory"),
    Mutant(JoinIgnoresRegisteredThreads, "CoordinatorMachine", "coordinator_factory"),
    Mutant(RecordForgottenAfterJoin, "CoordinatorMachine", "coordinator_factory"),
    Mutant(ReportAfterJoinSwallowed, "CoordinatorMachine", "coordinator_factory"),
    Mutant(StopVisibleBeforeRecord, "CoordinatorMachine", "coordinator_factory", race=True),
    Mutant(RunnerNeverClosesQueue, "QueueRunnerMachine", "runner_factory"),
    Mutant(CancelNeverRunsOnStop, "QueueRunnerMachine", "runner_factory"),
    Mutant(ExceptionsRaisedNotFilled, "QueueRunnerMachine", "runner_factory"),
    Mutant(CloseOnFirstExhaustion, "QueueRunnerMachine", "runner_factory"),
    Mutant(RunnerIgnoresStop, "QueueRunnerMachine", "runner_factory"),
    Mutant(RacyRunnerCount, "QueueRunnerMachine", "runner_factory", race=True),
]
