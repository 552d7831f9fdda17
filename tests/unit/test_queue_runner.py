"""QueueRunner and the runner registry against specs/queue_runner.md.

Each test names the rules it checks; ports of TensorFlow's queue_runner_test.py
keep TensorFlow's test name in the docstring. The runner's own rules are tested
with `FakeQueue`, a small stand-in written here with TensorFlow's close and
cancel behaviour; `test_*_real_queue` tests use coordkit.queues.FIFOQueue.

Every test runs inside a fresh `queue_runner_scope()` (the autouse fixture), so
no runner leaks into the process-wide registry. Blocking is arranged with
threading events and bounded waits (10 s caps), never with sleeps.
"""

from __future__ import annotations

import functools
import logging
import threading

import pytest

from coordkit import (
    CancelledError,
    Coordinator,
    DeadlineExceededError,
    FIFOQueue,
    OutOfRangeError,
    QueueRunner,
    QueueRunnerRegistry,
    add_queue_runner,
    explore,
    get_queue_runner_registry,
    queue_runner_scope,
    start_queue_runners,
)
from coordkit.queue_runner import op_name

CAP = 10.0

# Runner threads without a coordinator re-raise on purpose (RUNNER-4 step 5);
# pytest reports such thread deaths as warnings. The tests that expect them
# capture them with `thread_deaths` instead.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


@pytest.fixture(autouse=True)
def fresh_registry():
    """RUNNER-12: every test gets its own registry; nothing leaks between tests."""
    with queue_runner_scope() as registry:
        yield registry


@pytest.fixture
def thread_deaths(monkeypatch):
    """Collects (thread name, exception) for threads that die of an exception."""
    deaths = []
    monkeypatch.setattr(
        threading, "excepthook", lambda args: deaths.append((args.thread.name, args.exc_value))
    )
    return deaths


class FakeQueue:
    """A bounded FIFO with TensorFlow's close rules, enough for the runner's rules.

    * enqueue blocks while full; on a closed queue it raises CancelledError;
    * close() keeps pending enqueues waiting; close(cancel_pending_enqueues=True)
      makes them raise CancelledError; closing twice without cancel raises;
    * dequeue blocks while empty and open; on a closed, empty queue it raises
      OutOfRangeError; a timeout raises DeadlineExceededError.
    """

    def __init__(self, capacity=100, name="fifo_queue"):
        self.name = name
        self.capacity = capacity
        self.items = []
        self.closed = False
        self.cancelled = False
        self.close_calls = []  # the cancel_pending_enqueues flag of each close()
        self.blocked_enqueuers = 0
        self.cond = threading.Condition()

    def enqueue(self, item):
        with self.cond:
            if self.closed:
                raise CancelledError(f"FIFOQueue '{self.name}' is closed.")
            while len(self.items) >= self.capacity:
                self.blocked_enqueuers += 1
                self.cond.notify_all()
                try:
                    self.cond.wait(CAP)
                finally:
                    self.blocked_enqueuers -= 1
                if self.cancelled:
                    raise CancelledError("Enqueue operation was cancelled")
            self.items.append(item)
            self.cond.notify_all()

    def dequeue(self, timeout=CAP):
        with self.cond:
            if not self.cond.wait_for(lambda: self.items or self.closed, timeout):
                raise DeadlineExceededError("Timed out waiting for notification")
            if not self.items:
                raise OutOfRangeError(
                    f"FIFOQueue '{self.name}' is closed and has insufficient elements "
                    "(requested 1, current size 0)"
                )
            item = self.items.pop(0)
            self.cond.notify_all()
            return item

    def close(self, cancel_pending_enqueues=False):
        with self.cond:
            self.close_calls.append(cancel_pending_enqueues)
            if self.closed and not cancel_pending_enqueues:
                raise CancelledError(f"Queue '{self.name}' is already closed.")
            self.closed = True
            if cancel_pending_enqueues:
                self.cancelled = True
            self.cond.notify_all()

    def wait_for(self, predicate):
        with self.cond:
            assert self.cond.wait_for(lambda: predicate(self), CAP)

    def is_closed(self):
        return self.closed

    def size(self):
        return len(self.items)


class CountUpTo:
    """TF's CountUpTo as an op: adds one until `limit`, then raises OutOfRangeError."""

    def __init__(self, limit, name="CountUpTo:0", queue=None):
        self.limit = limit
        self.name = name
        self.value = 0
        self.queue = queue
        self._lock = threading.Lock()

    def __call__(self):
        with self._lock:
            if self.value >= self.limit:
                raise OutOfRangeError(f"Reached limit of {self.limit}")
            self.value += 1
            if self.queue is not None:
                self.queue.enqueue(self.value)


class MockOp:
    """TF's _MockOp: an op that fails every time."""

    def __init__(self, name, error=ValueError):
        self.name = name
        self.error = error
        self.calls = 0

    def __call__(self):
        self.calls += 1
        raise self.error("Operation not in the graph")


class Gate:
    """An op that blocks until opened, then raises `exc` (or returns, if exc is None)."""

    def __init__(self, name, exc=None):
        self.name = name
        self.exc = exc
        self.opened = threading.Event()
        self.entered = threading.Event()

    def __call__(self):
        self.entered.set()
        assert self.opened.wait(CAP)
        if self.exc is not None:
            raise self.exc


def join_all(threads):
    for t in threads:
        t.join(CAP)
        assert not t.is_alive(), t.name


# -- construction (RUNNER-1, RUNNER-11) -----------------------------------------------------


def test_defaults_and_properties():
    """RUNNER-1; RUNNER-OLD-3 (only OutOfRangeError means "closed" by default)."""
    q = FakeQueue(name="qr1q")
    op = CountUpTo(3)
    qr = QueueRunner(q, [op])
    assert qr.queue is q
    assert qr.enqueue_ops == [op]
    assert qr.queue_closed_exception_types == (OutOfRangeError,)
    assert qr.exceptions_raised == []
    assert qr.name == "qr1q"
    q.name = "renamed"
    assert qr.name == "renamed"  # read from the queue each time
    qr.close_op()
    assert q.close_calls == [False]
    qr.cancel_op()
    assert q.close_calls == [False, True]


def test_enqueue_ops_are_copied():
    """RUNNER-1."""
    ops = [CountUpTo(1)]
    qr = QueueRunner(FakeQueue(), ops)
    ops.append(CountUpTo(2))
    assert len(qr.enqueue_ops) == 1
    qr.enqueue_ops.append(None)
    assert len(qr.enqueue_ops) == 1


def test_explicit_ops_and_types():
    """RUNNER-1."""
    close, cancel = (lambda: None), (lambda: None)
    qr = QueueRunner(
        FakeQueue(),
        (CountUpTo(1),),
        close_op=close,
        cancel_op=cancel,
        queue_closed_exception_types=(OutOfRangeError, CancelledError, StopIteration),
    )
    assert qr.close_op is close and qr.cancel_op is cancel
    assert qr.queue_closed_exception_types == (OutOfRangeError, CancelledError, StopIteration)


def test_queue_without_close_needs_both_ops():
    """RUNNER-1."""

    class Named:
        name = "named"

    with pytest.raises(TypeError, match="close_op"):
        QueueRunner(Named(), [CountUpTo(1)])
    qr = QueueRunner(Named(), [CountUpTo(1)], close_op=lambda: None, cancel_op=lambda: None)
    assert qr.name == "named"


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"queue": None}, ValueError, "Must provide queue and enqueue_ops."),
        ({"enqueue_ops": None}, ValueError, "Must provide queue and enqueue_ops."),
        ({"enqueue_ops": []}, ValueError, "Must provide queue and enqueue_ops."),
        ({"enqueue_ops": ()}, ValueError, "Must provide queue and enqueue_ops."),
        ({"queue": object()}, TypeError, "'name'"),
        ({"enqueue_ops": CountUpTo(1)}, TypeError, "wrap a single op"),
        ({"enqueue_ops": "op"}, TypeError, "'op'"),
        ({"enqueue_ops": [CountUpTo(1), 42]}, TypeError, "enqueue_ops[1]) must be callable; got 42"),
        ({"close_op": "close"}, TypeError, "close_op"),
        ({"cancel_op": 3}, TypeError, "cancel_op"),
    ],
    ids=[
        "no-queue",
        "no-ops",
        "empty-list",
        "empty-tuple",
        "nameless-queue",
        "single-op",
        "string-ops",
        "non-callable-op",
        "bad-close",
        "bad-cancel",
    ],
)
def test_constructor_rejects_bad_input(kwargs, error, text):
    """RUNNER-1, DEV-RUNNER-3."""
    args = {"queue": FakeQueue(), "enqueue_ops": [CountUpTo(1)], **kwargs}
    with pytest.raises(error) as raised:
        QueueRunner(**args)
    assert text in str(raised.value)


@pytest.mark.parametrize(
    "bad",
    [(), [OutOfRangeError], (ValueError(),), (OutOfRangeError, "x"), OutOfRangeError, (int,)],
    ids=["empty-tuple", "list", "instance", "string", "bare-class", "non-exception"],
)
def test_closed_exception_types_must_be_a_non_empty_tuple_of_classes(bad):
    """RUNNER-1, DEV-RUNNER-3: one clear TypeError showing the value (TF's is a format bug)."""
    with pytest.raises(TypeError) as raised:
        QueueRunner(FakeQueue(), [CountUpTo(1)], queue_closed_exception_types=bad)
    message = str(raised.value)
    assert message.startswith("queue_closed_exception_types, when provided, must be a non-empty")
    assert repr(bad) in message


def test_op_names():
    """RUNNER-11."""

    def enqueue_rows():
        pass

    class Anonymous:
        def __call__(self):
            pass

        def __repr__(self):
            return "<anon>"

    assert op_name(CountUpTo(1, name="enq:0")) == "enq:0"
    assert op_name(MockOp(name=7)) == "7"
    assert op_name(enqueue_rows) == "enqueue_rows"
    assert op_name(lambda: None) == "<lambda>"
    assert op_name(Anonymous()) == "<anon>"
    part = functools.partial(print, 1)
    assert op_name(part) == repr(part)


# -- threads (RUNNER-2, RUNNER-3, RUNNER-OLD-1, RUNNER-OLD-2) ----------------------------------


def test_basic():
    """RUNNER-3, RUNNER-4. testBasic: one CountUpTo(3) op ends cleanly on OutOfRange."""
    q = FakeQueue()
    op = CountUpTo(3)
    qr = QueueRunner(q, [op])
    threads = qr.create_threads()
    assert [t.name for t in threads] == ["QueueRunnerThread-fifo_queue-CountUpTo:0"]
    assert not threads[0].daemon and not threads[0].is_alive()  # create_threads defaults
    for t in threads:
        t.start()
    join_all(threads)
    assert op.value == 3
    assert qr.exceptions_raised == []
    assert q.close_calls == [False]  # the last (only) thread closed the queue, keeping enqueues
    assert qr.statistics().running_threads == 0


def test_two_ops():
    """RUNNER-3, RUNNER-4. testTwoOps: two named threads; the queue is closed once, by the last."""
    q = FakeQueue()
    op0, op1 = CountUpTo(3, name="CountUpTo:0"), CountUpTo(30, name="CountUpTo_1:0")
    qr = QueueRunner(q, [op0, op1])
    threads = qr.create_threads(start=True)
    assert [t.name for t in threads] == [
        "QueueRunnerThread-fifo_queue-CountUpTo:0",
        "QueueRunnerThread-fifo_queue-CountUpTo_1:0",
    ]
    join_all(threads)
    assert (op0.value, op1.value) == (3, 30)
    assert q.close_calls == [False]
    assert qr.exceptions_raised == []


def test_close_runs_only_when_the_last_thread_leaves():
    """RUNNER-4: the first queue-closed exit lowers the count without closing."""
    q = FakeQueue()
    first, second = Gate("first", OutOfRangeError("a")), Gate("second", OutOfRangeError("b"))
    qr = QueueRunner(q, [first, second])
    threads = qr.create_threads(start=True)
    first.opened.set()
    threads[0].join(CAP)
    assert q.close_calls == [] and qr.statistics().running_threads == 1
    second.opened.set()
    join_all(threads)
    assert q.close_calls == [False]


def test_queue_closed_subclasses_count():
    """RUNNER-4: a subclass of a queue-closed type is a quiet exit too."""

    class Exhausted(OutOfRangeError):
        pass

    q = FakeQueue()
    qr = QueueRunner(q, [Gate("op", Exhausted("done"))])
    gate = qr.enqueue_ops[0]
    gate.opened.set()
    join_all(qr.create_threads(start=True))
    assert q.close_calls == [False] and qr.exceptions_raised == []


def test_duplicate_ops_give_duplicate_names():
    """RUNNER-3."""
    op = CountUpTo(4, name="enq")
    qr = QueueRunner(FakeQueue(name="dup"), [op, op])
    threads = qr.create_threads(start=True)
    assert [t.name for t in threads] == ["QueueRunnerThread-dup-enq"] * 2
    join_all(threads)
    assert op.value == 4


def test_flags_order_and_registration_with_a_coordinator():
    """RUNNER-3: op threads in order, then close_on_stop; all registered; daemon/start flags."""
    q = FakeQueue(name="qr5q")
    coord = Coordinator()
    ops = [Gate("failing"), Gate("forever")]
    qr = QueueRunner(q, ops)
    threads = qr.create_threads(coord, daemon=True)
    assert [t.name for t in threads] == [
        "QueueRunnerThread-qr5q-failing",
        "QueueRunnerThread-qr5q-forever",
        "QueueRunnerThread-qr5q-close_on_stop",
    ]
    assert all(t.daemon and not t.is_alive() for t in threads)
    assert coord.statistics().registered_threads == tuple(threads)
    coord.request_stop()  # nothing started: let the runner's count drop by running them
    for t in threads:
        t.start()
    coord.join(stop_grace_period_secs=CAP)


def test_create_threads_checks_coord():
    """RUNNER-3."""
    qr = QueueRunner(FakeQueue(), [CountUpTo(1)])
    with pytest.raises(TypeError, match="register_thread"):
        qr.create_threads(coord=object())
    assert qr.statistics().running_threads == 0  # nothing was counted


def test_ignore_multi_starts_raises():
    """RUNNER-OLD-2, RUNNER-2, DEV-RUNNER-2. testIgnoreMultiStarts: TF returns [] here."""
    qr = QueueRunner(FakeQueue(), [CountUpTo(3)])
    threads = qr.create_threads()
    assert len(threads) == 1
    # Created but not started: still counted.
    assert qr.statistics().running_threads == 1
    with pytest.raises(RuntimeError) as raised:
        qr.create_threads()
    assert str(raised.value) == (
        "Threads are already running from a previous call to Threads() for this queue runner."
    )
    # Once the first set has run and ended, a new set can be made.
    threads[0].start()
    join_all(threads)
    again = qr.create_threads(start=True)
    assert len(again) == 1
    join_all(again)


def test_one_count_per_runner_across_coordinators():
    """RUNNER-OLD-1, DEV-RUNNER-1: no per-session counts; a second coordinator does not help."""
    qr = QueueRunner(FakeQueue(), [Gate("op", OutOfRangeError("x"))])
    gate = qr.enqueue_ops[0]
    coord_a, coord_b = Coordinator(), Coordinator()
    threads = qr.create_threads(coord_a, start=True)
    assert gate.entered.wait(CAP)
    with pytest.raises(RuntimeError, match="already running"):
        qr.create_threads(coord_b)
    gate.opened.set()
    coord_a.request_stop()
    coord_a.join(threads, stop_grace_period_secs=CAP)


def test_threads_resets_exceptions():
    """RUNNER-2, RUNNER-4. testThreads: one good and one bad op; the list is fresh each time."""
    q = FakeQueue()
    qr = QueueRunner(q, [CountUpTo(3), MockOp("bad_op")])
    threads = qr.create_threads(start=True)
    join_all(threads)
    first = qr.exceptions_raised
    assert len(first) == 1
    threads = qr.create_threads(start=True)
    join_all(threads)
    second = qr.exceptions_raised
    assert len(second) == 1
    assert second[0] is not first[0]


# -- the runner loop (RUNNER-4, RUNNER-7, RUNNER-10) -----------------------------------------


def test_exceptions_captured(thread_deaths, caplog):
    """RUNNER-4, RUNNER-7a. testExceptionsCaptured: no coordinator; the errors are kept."""
    q = FakeQueue()
    ops = [MockOp("bad_op"), MockOp("bad_op_2")]
    qr = QueueRunner(q, ops)
    with caplog.at_level(logging.ERROR, logger="coordkit"):
        threads = qr.create_threads(start=True)
        join_all(threads)
    exceptions = qr.exceptions_raised
    assert len(exceptions) == 2
    assert all("Operation not in the graph" in str(e) for e in exceptions)
    # Re-raised: both threads died of their exception.
    assert sorted(name for name, _ in thread_deaths) == [t.name for t in threads]
    assert {id(e) for _, e in thread_deaths} == {id(e) for e in exceptions}
    assert caplog.text.count("Exception in QueueRunner: Operation not in the graph") == 2
    assert q.close_calls == []  # RUNNER-7a: nobody closed the queue
    assert qr.statistics().running_threads == 0


@pytest.mark.parametrize("error_last", [True, False])
def test_error_last_leaves_the_queue_open(thread_deaths, error_last):
    """RUNNER-7a: the close op runs only if the last thread leaves through a queue-closed error.

    A runner dying of an error without a coordinator leaves the queue open, and a
    consumer waiting for more elements waits until its timeout.
    """
    q = FakeQueue()
    quiet, failing = Gate("quiet", OutOfRangeError("end")), Gate("failing", ValueError("bad"))
    qr = QueueRunner(q, [quiet, failing])
    threads = dict(zip(["quiet", "failing"], qr.create_threads(start=True)))
    order = ["quiet", "failing"] if error_last else ["failing", "quiet"]
    for name in order:
        {"quiet": quiet, "failing": failing}[name].opened.set()
        threads[name].join(CAP)
        assert not threads[name].is_alive()
    assert [type(e) for e in qr.exceptions_raised] == [ValueError]
    if error_last:
        assert q.close_calls == [] and not q.is_closed()
        with pytest.raises(DeadlineExceededError):
            q.dequeue(timeout=0.05)  # the consumer is left waiting
    else:
        assert q.close_calls == [False] and q.is_closed()
        with pytest.raises(OutOfRangeError):
            q.dequeue()


def test_request_stop_on_exception():
    """RUNNER-4, RUNNER-5. testRequestStopOnException: the error goes to the coordinator."""
    q = FakeQueue()
    qr = QueueRunner(q, [MockOp("not_an_op")])
    coord = Coordinator()
    threads = qr.create_threads(coord, start=True)
    with pytest.raises(ValueError, match="Operation not in the graph"):
        coord.join(stop_grace_period_secs=CAP)
    assert qr.exceptions_raised == []  # reported, not kept
    assert not any(t.is_alive() for t in threads)
    assert q.close_calls == [True]  # close_on_stop cancelled; close_op never ran


def test_respect_coord_should_stop():
    """RUNNER-6, RUNNER-3. testRespectCoordShouldStop: stopped before the start."""
    q = FakeQueue()
    op = CountUpTo(3)
    qr = QueueRunner(q, [op])
    coord = Coordinator()
    coord.request_stop()
    threads = qr.create_threads(coord)
    assert [t.name for t in threads] == [
        "QueueRunnerThread-fifo_queue-CountUpTo:0",
        "QueueRunnerThread-fifo_queue-close_on_stop",
    ]
    for t in threads:
        t.start()
    coord.join(stop_grace_period_secs=CAP)
    assert op.value == 0
    assert q.close_calls == [True]
    assert qr.statistics().running_threads == 0


def test_leaving_on_stop_never_runs_close_op():
    """RUNNER-7b, RUNNER-4: a stop request is a quiet exit; only cancel_op closes the queue."""
    q = FakeQueue(capacity=10**9)
    qr = QueueRunner(q, [functools.partial(q.enqueue, 1.0)])
    coord = Coordinator()
    threads = qr.create_threads(coord, start=True)
    q.wait_for(lambda qq: qq.size() > 0)
    coord.request_stop()
    coord.join(stop_grace_period_secs=CAP)
    assert q.close_calls == [True]
    assert not any(t.is_alive() for t in threads)
    assert qr.statistics().running_threads == 0


def test_close_on_stop_lives_until_the_stop():
    """RUNNER-5: the close-on-stop thread waits for the stop, then cancels."""
    q = FakeQueue()
    qr = QueueRunner(q, [CountUpTo(2)])
    coord = Coordinator()
    runner, closer = qr.create_threads(coord, start=True)
    runner.join(CAP)
    assert not runner.is_alive()
    assert closer.is_alive()  # input used up, but no stop yet
    assert q.close_calls == [False]
    coord.request_stop()
    coord.join(stop_grace_period_secs=CAP)
    assert q.close_calls == [False, True]


def test_grace_period():
    """RUNNER-5. testGracePeriod: cancelling frees a runner blocked in a full queue."""
    q = FakeQueue(capacity=2)
    qr = QueueRunner(q, [functools.partial(q.enqueue, 1.0)])
    coord = Coordinator()
    threads = qr.create_threads(coord, start=True)
    q.wait_for(lambda qq: qq.size() == 2 and qq.blocked_enqueuers == 1)
    assert q.dequeue() == 1.0
    q.wait_for(lambda qq: qq.size() == 2 and qq.blocked_enqueuers == 1)
    coord.request_stop()
    # The runner gets CancelledError, reports it, and it is dropped: the stop came first.
    coord.join(threads, stop_grace_period_secs=1.0)
    assert coord.statistics().exc_info is None


def test_user_close_is_an_error_for_the_runner(thread_deaths):
    """RUNNER-7c, RUNNER-OLD-3: someone else's close makes the next enqueue fail with CancelledError."""
    q = FakeQueue(capacity=10**9)  # never full: a plain close must not wait behind it
    first_enqueue = threading.Event()

    def enqueue():
        q.enqueue(1)
        first_enqueue.set()

    qr = QueueRunner(q, [enqueue])
    threads = qr.create_threads(start=True)
    assert first_enqueue.wait(CAP)
    q.close()
    join_all(threads)
    assert [type(e) for e in qr.exceptions_raised] == [CancelledError]
    assert "is closed" in str(qr.exceptions_raised[0])


def test_user_close_with_cancelled_as_closed_type_is_quiet():
    """RUNNER-7c, RUNNER-4: listing CancelledError makes it a quiet exit (close errors ignored)."""
    q = FakeQueue(capacity=10**9)  # never full: a plain close must not wait behind it
    first_enqueue = threading.Event()

    def enqueue():
        q.enqueue(1)
        first_enqueue.set()

    qr = QueueRunner(q, [enqueue], queue_closed_exception_types=(OutOfRangeError, CancelledError))
    threads = qr.create_threads(start=True)
    assert first_enqueue.wait(CAP)
    q.close()
    join_all(threads)
    assert qr.exceptions_raised == []
    # close_op ran and failed ("already closed"); the failure was ignored.
    assert q.close_calls == [False, False]


def test_close_and_cancel_errors_are_ignored(caplog):
    """RUNNER-4, RUNNER-5."""

    def broken():
        raise RuntimeError("close failed")

    q = FakeQueue()
    qr = QueueRunner(q, [CountUpTo(1)], close_op=broken, cancel_op=broken)
    coord = Coordinator()
    with caplog.at_level(logging.DEBUG, logger="coordkit"):
        threads = qr.create_threads(coord, start=True)
        threads[0].join(CAP)
        coord.request_stop()
        coord.join(stop_grace_period_secs=CAP)
    assert caplog.text.count("Ignored exception: close failed") == 2


@pytest.mark.parametrize("with_coord", [False, True])
def test_base_exceptions_are_not_reported(thread_deaths, with_coord):
    """RUNNER-10: SystemExit from an op ends the thread; not reported, not kept, not closed."""
    q = FakeQueue()
    qr = QueueRunner(q, [MockOp("exit", error=SystemExit)])
    coord = Coordinator() if with_coord else None
    threads = qr.create_threads(coord, start=True)
    threads[0].join(CAP)
    assert not threads[0].is_alive()
    assert qr.exceptions_raised == []
    assert qr.statistics().running_threads == 0
    assert q.close_calls == []
    if coord is not None:
        assert not coord.should_stop()
        coord.request_stop()
        coord.join(stop_grace_period_secs=CAP)


def test_real_dequeue_enqueue_with_fake_queues():
    """RUNNER-4. testRealDequeueEnqueue: a runner moving q0 into q1 closes q1 when q0 ends."""
    q0, q1 = FakeQueue(name="q0"), FakeQueue(name="q1")

    def move():
        q1.enqueue(q0.dequeue())

    qr = QueueRunner(q1, [move])
    threads = qr.create_threads(start=True)
    q0.enqueue(10.0)
    assert q1.dequeue() == 10.0
    q0.enqueue(10.0)
    q0.close()
    assert q1.dequeue() == 10.0
    with pytest.raises(OutOfRangeError, match="is closed"):
        q1.dequeue()
    join_all(threads)


# -- the registry (RUNNER-9, RUNNER-12, RUNNER-13) ----------------------------------------------


def test_name_and_scope_filter(fresh_registry):
    """RUNNER-9. testName: the runner's name is the queue's; collections filter by scope."""
    qr = QueueRunner(FakeQueue(name="scope/queue"), [CountUpTo(1)])
    other = QueueRunner(FakeQueue(name="elsewhere/queue"), [CountUpTo(1)])
    assert qr.name == "scope/queue"
    add_queue_runner(qr)
    add_queue_runner(other)
    assert fresh_registry.get() == [qr, other]
    assert fresh_registry.get(scope="scope") == [qr]
    assert fresh_registry.get(scope="^else") == [other]
    assert fresh_registry.collections() == ["queue_runners"]


def test_start_queue_runners(fresh_registry):
    """RUNNER-9. testStartQueueRunners: daemon threads, started, run to completion."""
    op = CountUpTo(3)
    q = FakeQueue()
    add_queue_runner(QueueRunner(q, [op]))
    threads = start_queue_runners()
    assert len(threads) == 1 and threads[0].daemon
    join_all(threads)
    assert op.value == 3 and q.close_calls == [False]


def test_start_queue_runners_with_coord_and_flags(fresh_registry):
    """RUNNER-9, RUNNER-3: arguments are passed on to create_threads, runner by runner."""
    qa, qb = FakeQueue(name="a"), FakeQueue(name="b")
    add_queue_runner(QueueRunner(qa, [CountUpTo(2, name="opa")]), collection="mine")
    add_queue_runner(QueueRunner(qb, [CountUpTo(2, name="opb")]), collection="mine")
    coord = Coordinator()
    threads = start_queue_runners(coord, daemon=False, start=False, collection="mine")
    assert [t.name for t in threads] == [
        "QueueRunnerThread-a-opa",
        "QueueRunnerThread-a-close_on_stop",
        "QueueRunnerThread-b-opb",
        "QueueRunnerThread-b-close_on_stop",
    ]
    assert not any(t.daemon or t.is_alive() for t in threads)
    for t in threads:
        t.start()
    coord.request_stop()
    coord.join(stop_grace_period_secs=CAP)
    assert start_queue_runners(collection="queue_runners") == []


def test_start_queue_runners_takes_no_session():
    """RUNNER-9, DEV-RUNNER-6: a ported `start_queue_runners(sess, ...)` call fails clearly."""
    with pytest.raises(TypeError, match=r"start_queue_runners\(coord\) must be a Coordinator"):
        start_queue_runners("NotASession")


def test_exceptions_raised_is_a_copy(thread_deaths):
    """RUNNER-4, DEV-RUNNER-4: the property returns a snapshot; TF returns the live list."""
    qr = QueueRunner(FakeQueue(), [MockOp("bad")])
    join_all(qr.create_threads(start=True))
    snapshot = qr.exceptions_raised
    snapshot.clear()
    assert len(qr.exceptions_raised) == 1
    assert qr.exceptions_raised is not qr.exceptions_raised


def test_start_queue_runners_warns_when_empty(caplog):
    """RUNNER-9."""
    with caplog.at_level(logging.WARNING, logger="coordkit"):
        assert start_queue_runners(collection="nothing-here") == []
    assert "no queue runners were defined" in caplog.text
    assert "'nothing-here'" in caplog.text


def test_start_queue_runners_propagates_a_refusal(fresh_registry):
    """RUNNER-9, RUNNER-OLD-2: a runner whose threads are still counted stops the loop."""
    qr = QueueRunner(FakeQueue(), [CountUpTo(1)])
    add_queue_runner(qr)
    pending = start_queue_runners(start=False)
    with pytest.raises(RuntimeError, match="already running"):
        start_queue_runners()
    for t in pending:
        t.start()
    join_all(pending)


def test_each_runner_once_per_collection(fresh_registry):
    """RUNNER-13, DEV-RUNNER-5: TF would list it twice; here start_queue_runners would then fail."""
    qr = QueueRunner(FakeQueue(), [CountUpTo(1)])
    add_queue_runner(qr)
    add_queue_runner(qr)
    add_queue_runner(qr, collection="other")
    assert fresh_registry.get() == [qr]
    assert fresh_registry.get("other") == [qr]
    join_all(start_queue_runners())


def test_registry_rejects_bad_values(fresh_registry):
    """RUNNER-13."""
    with pytest.raises(TypeError, match="QueueRunner"):
        add_queue_runner("not a runner")
    with pytest.raises(TypeError, match="collection"):
        add_queue_runner(QueueRunner(FakeQueue(), [CountUpTo(1)]), collection=3)
    with pytest.raises(TypeError, match="QueueRunnerRegistry"), queue_runner_scope(registry={}):
        pass
    assert fresh_registry.collections() == []


def test_scopes_nest_and_restore(fresh_registry):
    """RUNNER-12, DEV-RUNNER-5: the current registry is a context variable with scopes."""
    assert get_queue_runner_registry() is fresh_registry
    outer_qr = QueueRunner(FakeQueue(name="outer"), [CountUpTo(1)])
    add_queue_runner(outer_qr)
    with queue_runner_scope() as inner:
        assert get_queue_runner_registry() is inner and inner is not fresh_registry
        assert inner.get() == []
        add_queue_runner(QueueRunner(FakeQueue(name="inner"), [CountUpTo(1)]))
        mine = QueueRunnerRegistry()
        with queue_runner_scope(mine) as given:
            assert given is mine and get_queue_runner_registry() is mine
        assert get_queue_runner_registry() is inner
    assert get_queue_runner_registry() is fresh_registry
    assert fresh_registry.get() == [outer_qr]
    with pytest.raises(KeyError), queue_runner_scope():
        raise KeyError("restored on error too")
    assert get_queue_runner_registry() is fresh_registry


def test_scope_covers_only_its_thread(fresh_registry):
    """RUNNER-12: a thread started inside a scope sees the process-wide registry."""
    seen = []
    t = threading.Thread(target=lambda: seen.append(get_queue_runner_registry()))
    t.start()
    t.join(CAP)
    assert seen and seen[0] is not fresh_registry


def test_tests_do_not_touch_the_process_registry():
    """RUNNER-12: the autouse scope keeps the process-wide registry empty."""
    seen = []
    t = threading.Thread(target=lambda: seen.append(get_queue_runner_registry()))
    t.start()
    t.join(CAP)
    assert seen[0].collections() == []


# -- with the real queue (coordkit.queues.FIFOQueue) ---------------------------------------


class Entries:
    """Counts calls of an op and lets a test wait for the n-th one."""

    def __init__(self, op, name):
        self.op = op
        self.name = name
        self.count = 0
        self.cond = threading.Condition()

    def __call__(self):
        with self.cond:
            self.count += 1
            self.cond.notify_all()
        self.op()

    def wait_for(self, n):
        with self.cond:
            assert self.cond.wait_for(lambda: self.count >= n, CAP)


def test_real_dequeue_enqueue_real_queue():
    """RUNNER-4. testRealDequeueEnqueue with FIFOQueue: closing q0 makes the runner close q1."""
    q0 = FIFOQueue(10, name="q0")
    q1 = FIFOQueue(10, name="q1")

    def dequeue_enqueue():
        q1.enqueue(q0.dequeue())

    qr = QueueRunner(q1, [dequeue_enqueue])
    threads = qr.create_threads(start=True)
    assert threads[0].name == "QueueRunnerThread-q1-dequeue_enqueue"
    q0.enqueue(10.0)
    assert q1.dequeue(timeout=CAP) == 10.0
    q0.enqueue(10.0)
    q0.close()
    assert q1.dequeue(timeout=CAP) == 10.0
    with pytest.raises(OutOfRangeError, match="is closed"):
        q1.dequeue(timeout=CAP)
    join_all(threads)
    assert q1.is_closed() and qr.exceptions_raised == []


def test_grace_period_real_queue():
    """RUNNER-5. testGracePeriod with FIFOQueue(2): the stop cancels the blocked enqueue."""
    q = FIFOQueue(2)
    op = Entries(functools.partial(q.enqueue, 1.0), name="enqueue")
    qr = QueueRunner(q, [op])
    coord = Coordinator()
    threads = qr.create_threads(coord, start=True)
    op.wait_for(3)  # two elements in, the third enqueue under way (it blocks: full)
    assert q.dequeue(timeout=CAP) == 1.0
    op.wait_for(4)
    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=1.0)
    assert q.is_closed()
    assert coord.statistics().exc_info is None  # the runner's CancelledError came too late


def test_basic_real_queue():
    """RUNNER-3, RUNNER-4: a CountUpTo op feeding FIFOQueue; the queue ends closed."""
    q = FIFOQueue(-1)
    op = CountUpTo(3, queue=q)
    qr = QueueRunner(q, [op])
    threads = qr.create_threads(start=True)
    join_all(threads)
    assert q.dequeue_many(3, timeout=CAP) == [1, 2, 3]
    with pytest.raises(OutOfRangeError):
        q.dequeue(timeout=CAP)


def test_error_last_leaves_a_consumer_waiting_real_queue(thread_deaths):
    """RUNNER-7a: with FIFOQueue, a consumer asking for more than is there times out."""
    q = FIFOQueue(-1, name="qr3q")
    feeder = CountUpTo(3, queue=q)
    failing = Gate("failing", ValueError("bad"))
    qr = QueueRunner(q, [feeder, failing])
    threads = qr.create_threads(start=True)
    threads[0].join(CAP)  # the feeder leaves through OutOfRange first: no close yet
    failing.opened.set()
    threads[1].join(CAP)
    assert not q.is_closed()
    with pytest.raises(DeadlineExceededError):
        q.dequeue_many(4, timeout=0.05)


def test_user_close_real_queue(thread_deaths):
    """RUNNER-7c: a user's close() of the fed FIFOQueue fails the runner with CancelledError."""
    q = FIFOQueue(-1, name="qr7q")
    op = Entries(functools.partial(q.enqueue, 1), name="enqueue")
    qr = QueueRunner(q, [op])
    threads = qr.create_threads(start=True)
    op.wait_for(2)
    q.close()
    join_all(threads)
    assert [type(e) for e in qr.exceptions_raised] == [CancelledError]
    assert "is closed" in str(qr.exceptions_raised[0])


# -- under the controlled scheduler ---------------------------------------------------------


def test_grace_period_in_every_interleaving():
    """RUNNER-5, RUNNER-6: stop, cancel and join agree in every explored schedule."""

    def scenario():
        q = FIFOQueue(2)
        coord = Coordinator()
        qr = QueueRunner(q, [functools.partial(q.enqueue, 1.0)])
        threads = qr.create_threads(coord, start=True)
        q.dequeue()
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=120)
        assert q.is_closed()
        assert qr.statistics().running_threads == 0

    result = explore(scenario, max_schedules=100, seed=0)
    assert result.ok, result.failure


def test_error_last_is_a_deadlock_for_the_consumer():
    """RUNNER-7a: the explorer reports the consumer left waiting on the open queue."""

    def scenario():
        q = FIFOQueue(-1, name="feed")
        qr = QueueRunner(q, [CountUpTo(2, queue=q), MockOp("failing")])
        qr.create_threads(start=True)
        while True:  # a consumer that reads until the input ends
            try:
                q.dequeue()
            except OutOfRangeError:
                return

    result = explore(scenario, max_schedules=50, seed=0, fail_on_thread_exception=False)
    assert result.failure is not None and result.failure.kind == "deadlock"
