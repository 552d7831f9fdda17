"""The pure queue model as a history model (MODEL-8): its two adapters, ``QueueHistoryModel``
(states are frozen models) and ``history.FIFOModel`` (states are ``(items, closed)``, answers
asked once per shape), agree on every sequential run, and it checks histories of the queues
that pick (RSQ, PriorityQueue)."""

from __future__ import annotations

import itertools
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordkit import history
from coordkit.errors import OutOfRangeError
from coordkit.models import storage
from coordkit.queues import FIFOQueue, PriorityQueue, RandomShuffleQueue
from coordkit.stateful.models import QueueHistoryModel

Outcome = history.Outcome
_BATCH_KINDS = ("enqueue_many", "dequeue_many", "dequeue_up_to")


def operation(kind, arg=None, outcome=None, index=0):
    return history.Operation(index, "T", kind, arg, 0, None, outcome)


def as_fifo_state(state):
    """A QueueHistoryModel state in FIFOModel's form: (items, closed)."""
    return tuple(state.model.contents()), state.model.closed


# A call, and how its recorded outcome differs from the expected one: "same" (the
# model's own), "timeout" (DeadlineExceededError), "cancelled" (CancelledError),
# "pending" (no outcome) or "wrong" (a value no model expects).
# Elements go in more often than they come out, and closes are rare, so that the
# queue is often non-empty, and non-empty when it closes.
_WEIGHTED = (["enqueue"] * 4 + ["enqueue_many"] * 3 + ["dequeue", "dequeue_many", "dequeue_up_to"] * 2
             + ["close", "size", "is_closed"])
_STEPS = st.tuples(
    st.sampled_from(_WEIGHTED), st.integers(0, 3), st.booleans(),
    st.sampled_from(["same"] * 4 + ["timeout", "cancelled", "pending", "wrong"]),
)


def _ops(steps):
    """Operations with distinct elements, in the order of ``steps``."""
    fresh = itertools.count(1)
    for kind, n, cancel, variant in steps:
        if kind == "enqueue":
            arg = next(fresh)
        elif kind == "enqueue_many":
            arg = tuple(next(fresh) for _ in range(n))
        elif kind in ("dequeue_many", "dequeue_up_to"):
            arg = n
        elif kind == "close":
            arg = cancel
        else:
            arg = None
        yield kind, arg, variant


# Every run ends by closing and draining, so that batches meet a closed queue that
# still holds a few elements.
_TAIL = [("close", 0, False, "same"), ("dequeue_up_to", 3, False, "same"),
         ("dequeue_many", 2, False, "same"), ("dequeue", 0, False, "same")]


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(_STEPS, max_size=30), capacity=st.sampled_from([None, None, None, 0, 1, 2, 3]))
def test_fifo_model_and_the_stateful_queue_model_agree(steps, capacity):
    # MODEL-8, HIST-5a, HIST-9: the two adapters of the queue model give the same outcome, the same
    # state and the same successors (timeouts, failed and pending batches) for every call
    _check_agreement(steps, capacity, batches_with_capacity=False)


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(_STEPS, max_size=30), capacity=st.sampled_from([0, 1, 2, 3]))
def test_fifo_model_fills_in_the_queue_models_answer_for_every_call_kind(steps, capacity):
    # MODEL-8, HIST-9: FIFOModel's answers, asked once per shape with positions for
    # elements, are the queue model's even for batch calls on a bounded queue (a bound
    # HIST-10 says a real history cannot be checked against, but the model still answers)
    _check_agreement(steps, capacity, batches_with_capacity=True)


def _check_agreement(steps, capacity, batches_with_capacity):
    fifo, queue = history.FIFOModel(capacity=capacity), QueueHistoryModel(capacity=capacity)
    f_state, q_state = fifo.init(), queue.init()
    for i, (kind, arg, variant) in enumerate(_ops(steps + _TAIL)):
        if capacity is not None and kind in _BATCH_KINDS and not batches_with_capacity:
            continue  # HIST-10: a bound is modelled only without batch calls
        plain = operation(kind, arg, index=i)
        f_new, f_expected = fifo.apply(f_state, plain)
        q_new, q_expected = queue.apply(q_state, plain)
        assert f_expected == q_expected, (kind, arg, f_state, q_state)
        assert f_new == as_fifo_state(q_new), (kind, arg)
        recorded = {
            "same": None if f_expected is history.BLOCKED else f_expected,
            "timeout": Outcome.error("DeadlineExceededError"),
            "cancelled": Outcome.error("CancelledError"),
            "pending": None,
            "wrong": Outcome.ok("never enqueued"),
        }[variant]
        op = operation(kind, arg, recorded, index=i)
        f_successors = set(fifo.successors(f_state, op))
        q_successors = {as_fifo_state(s) for s in queue.successors(q_state, op)}
        assert f_successors == q_successors, (kind, arg, variant, f_state)
        f_state, q_state = f_new, q_new


def test_the_fifo_model_has_no_rules_of_its_own(monkeypatch):
    # HIST-5a, HIST-9: the queue model is the one description of the rules: make its FIFO
    # store hand out the newest element, and both adapters expect that too.  (FIFOModel's
    # search hints assume FIFO order, so it is asked directly, not through check.)
    fifo = _hand_built(("A", "enqueue", 1, Outcome.ok()), ("A", "enqueue", 2, Outcome.ok()),
                       ("B", "dequeue", None, Outcome.ok(1)))
    lifo = _hand_built(("A", "enqueue", 1, Outcome.ok()), ("A", "enqueue", 2, Outcome.ok()),
                       ("B", "dequeue", None, Outcome.ok(2)))
    take = operation("dequeue")
    assert history.FIFOModel().apply(((1, 2), False), take) == (((2,), False), Outcome.ok(1))
    assert history.check(fifo, QueueHistoryModel()) and not history.check(lifo, QueueHistoryModel())
    monkeypatch.setattr(storage._FifoStore, "dequeue", lambda self, pick: self.items.pop())
    assert history.FIFOModel().apply(((1, 2), False), take) == (((1,), False), Outcome.ok(2))
    assert not history.check(fifo, QueueHistoryModel()) and history.check(lifo, QueueHistoryModel())


def test_unknown_kinds_and_bad_arguments_are_refused():
    # MODEL-8: the adapter names what it cannot apply, as FIFOModel does (HIST-9, HIST-11)
    model = QueueHistoryModel()
    with pytest.raises(ValueError, match="'peek'"):
        model.apply(model.init(), operation("peek"))
    with pytest.raises(ValueError, match="n"):
        model.apply(model.init(), operation("dequeue_many", -1))
    with pytest.raises(ValueError, match="capacity"):
        QueueHistoryModel(capacity=-1)
    with pytest.raises(ValueError, match="order"):
        QueueHistoryModel(order="lifo")


def _hand_built(*ops):
    h = history.History()
    for t, (thread, kind, arg, outcome) in enumerate(ops):
        h.add(thread, kind, arg, call=2 * t, ret=2 * t + 1, outcome=outcome)
    return h


def test_shuffle_histories_are_checked_as_multisets_with_min_after_dequeue():
    # MODEL-8, RSQ-2, RSQ-3, RSQ-4: any stored element may come out, but not below
    # min_after_dequeue while the queue is open
    h = _hand_built(("A", "enqueue", 1, Outcome.ok()), ("A", "enqueue", 2, Outcome.ok()),
                    ("B", "dequeue", None, Outcome.ok(2)))
    assert not history.check(h, history.FIFOModel())
    assert history.check(h, QueueHistoryModel(order="shuffle"))
    assert history.check(h, QueueHistoryModel(order="shuffle", min_after_dequeue=1))
    report = history.check(h, QueueHistoryModel(order="shuffle", min_after_dequeue=2))
    assert not report and report.op.kind == "dequeue"
    closed = _hand_built(("A", "enqueue", 1, Outcome.ok()), ("A", "close", False, Outcome.ok()),
                         ("B", "dequeue", None, Outcome.ok(1)),
                         ("B", "dequeue", None, Outcome.error(OutOfRangeError)))
    assert history.check(closed, QueueHistoryModel(order="shuffle", min_after_dequeue=2))
    invented = _hand_built(("A", "enqueue", 1, Outcome.ok()), ("B", "dequeue", None, Outcome.ok(7)))
    assert not history.check(invented, QueueHistoryModel(order="shuffle"))


def test_priority_histories_take_the_smallest_priority_first():
    # MODEL-8, PQ-2, PQ-4: the smallest priority comes out first, a batch in priority order
    h = _hand_built(("A", "enqueue", (2, "a"), Outcome.ok()), ("A", "enqueue", (1, "b"), Outcome.ok()),
                    ("B", "dequeue", None, Outcome.ok((2, "a"))))
    assert not history.check(h, QueueHistoryModel(order="priority"))
    batch = _hand_built(("A", "enqueue", (2, "a"), Outcome.ok()), ("A", "enqueue", (1, "b"), Outcome.ok()),
                        ("B", "dequeue_many", 2, Outcome.ok(((1, "b"), (2, "a")))))
    assert history.check(batch, QueueHistoryModel(order="priority"))
    # A pending dequeue called before (1, "b") arrived may have taken it: any allowed pick.
    h.add("C", "dequeue", None, call=1, ret=None, outcome=None)
    assert history.check(h, QueueHistoryModel(order="priority"))


def _run_threads(queue, h, elements, consumers=2):
    q = history.RecordingQueue(queue, h)
    chunks = [elements[i::2] for i in range(2)]

    def produce(chunk):
        for k, x in enumerate(chunk):
            if k % 3 == 2:
                q.enqueue_many([x])
            else:
                q.enqueue(x)

    def consume():
        try:
            while True:
                q.dequeue_up_to(2) if threading.current_thread().name.endswith("0") else q.dequeue()
        except OutOfRangeError:
            pass

    producers = [threading.Thread(target=produce, args=(c,)) for c in chunks]
    takers = [threading.Thread(target=consume, name=f"consumer-{i}") for i in range(consumers)]
    for t in producers + takers:
        t.start()
    for t in producers:
        t.join(10)
    q.close()
    for t in takers:
        t.join(10)
    assert not any(t.is_alive() for t in producers + takers)


@pytest.mark.parametrize("order", ["fifo", "shuffle", "priority"])
def test_histories_of_real_threads_are_linearizable(order):
    # MODEL-8, HIST-6: the three orders, recorded from real threads, pass; a FIFO history
    # gets the same verdict from both models
    h = history.History()
    if order == "fifo":
        queue, elements = FIFOQueue(4), list(range(40))
    elif order == "shuffle":
        queue, elements = RandomShuffleQueue(6, 2, seed=1), list(range(40))
    else:
        queue, elements = PriorityQueue(4), [(i % 3, i) for i in range(40)]
    _run_threads(queue, h, elements)
    model = QueueHistoryModel(order=order, min_after_dequeue=2 if order == "shuffle" else 0)
    history.assert_linearizable(h, model)
    if order == "fifo":
        history.assert_linearizable(h, history.FIFOModel())
