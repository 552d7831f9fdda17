"""coordkit.history against specs/history.md (HIST-1..11).

Hand-built histories with known verdicts, a generic model that is not a queue,
and deliberately broken queues run on real threads whose histories must be
rejected (the checker has teeth).
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from dataclasses import replace
from typing import Any

import pytest

from coordkit import FIFOQueue
from coordkit.errors import CancelledError, DeadlineExceededError, OutOfRangeError
from coordkit.history import (
    BLOCKED,
    FIFOModel,
    History,
    NotLinearizableError,
    Operation,
    Outcome,
    RecordingQueue,
    SearchBudgetExceeded,
    SequentialModel,
    assert_linearizable,
    check,
)

OK = Outcome.ok
ERR = Outcome.error
JOIN_TIMEOUT = 30.0


def hist(*rows: tuple) -> History:
    """rows: (thread, kind, arg, call, ret, outcome); ret None = pending."""
    h = History()
    for row in rows:
        h.add(*row)
    return h


def fifo_verdict(h: History, **model: Any) -> bool:
    return bool(check(h, FIFOModel(**model)))


# ---------------------------------------------------------------------------
# HIST-1..4: recording
# ---------------------------------------------------------------------------


def test_record_reads_times_and_outcomes_hist_1_hist_3() -> None:
    """HIST-1, HIST-3: call/return times around the block; ok, error, default ok(None)."""
    h = History()
    with h.record("enqueue", 7) as op:
        op.ok()
    with h.record("size") as op:
        op.ok(1)
    with h.record("noop", thread="T9"):
        pass
    with pytest.raises(OutOfRangeError), h.record("dequeue"):
        raise OutOfRangeError("closed")
    ops = h.operations()
    assert [o.kind for o in ops] == ["enqueue", "size", "noop", "dequeue"]
    assert [o.index for o in ops] == [0, 1, 2, 3]
    assert ops[0].arg == 7 and ops[0].outcome == OK(None)
    assert ops[1].outcome == OK(1)
    assert ops[2].thread == "T9" and ops[2].outcome == OK(None)
    assert ops[3].outcome == ERR("OutOfRangeError") == ERR(OutOfRangeError) == ERR(OutOfRangeError("x"))
    assert ops[0].thread == threading.current_thread().name
    for a, b in itertools.pairwise(ops):
        assert a.call <= a.ret < b.call <= b.ret  # type: ignore[operator]
        assert a.precedes(b) and not b.precedes(a)


def test_outcome_recorded_once_hist_3() -> None:
    """HIST-3: saying twice how a call ended is a RuntimeError naming the first outcome."""
    h = History()
    with pytest.raises(RuntimeError, match="already recorded"), h.record("enqueue", 1) as op:
        op.ok()
        op.error(CancelledError)
    assert h.operations()[0].outcome == OK(None)


def test_errors_compare_by_class_name_hist_1() -> None:
    """HIST-1: error outcomes compare by class name, not by message."""
    assert ERR(CancelledError("a")) == ERR(CancelledError("b")) == ERR("CancelledError")
    assert ERR(CancelledError) != ERR(OutOfRangeError)
    assert OK(1) != ERR("1") and OK((1, 2)) == OK((1, 2))


def test_overlap_is_not_order_hist_2() -> None:
    """HIST-2: equal stamps or intersecting intervals overlap; only ret < call orders."""
    h = hist(
        ("A", "enqueue", 1, 0, 10, OK()),
        ("B", "enqueue", 2, 10, 20, OK()),  # call == A.ret: overlaps A
        ("C", "enqueue", 3, 21, 30, OK()),
    )
    a, b, c = h.operations()
    assert not a.precedes(b) and not b.precedes(a)
    assert a.precedes(c) and b.precedes(c)
    # Because A and B overlap, 2 may come out before 1.
    h.add("D", "dequeue", None, 40, 50, OK(2))
    h.add("D", "dequeue", None, 60, 70, OK(1))
    assert fifo_verdict(h)


def test_pending_operation_may_or_may_not_take_effect_hist_4() -> None:
    """HIST-4: a pending enqueue may have happened (its element is seen) or not."""
    seen = hist(("A", "enqueue", 1, 0, None, None), ("B", "dequeue", None, 5, 10, OK(1)))
    assert fifo_verdict(seen)
    unseen = hist(("A", "enqueue", 1, 0, None, None), ("B", "size", None, 5, 10, OK(0)))
    assert fifo_verdict(unseen)
    # But not before its call.
    early = hist(("B", "dequeue", None, 0, 10, OK(1)), ("A", "enqueue", 1, 20, None, None))
    assert not fifo_verdict(early)


def test_timed_out_plain_close_is_recorded_pending_hist_4() -> None:
    """HIST-4 (Q-CLOSE-6): RecordingQueue records a timed-out plain close as pending; it
    takes effect later, and the history stays linearizable."""
    h = History()
    q = RecordingQueue(FIFOQueue(1), h)
    q.enqueue("a")
    blocked_started = threading.Event()
    errors: list[BaseException] = []

    def blocked_enqueue() -> None:
        blocked_started.set()
        try:
            q.enqueue("b", timeout=JOIN_TIMEOUT)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=blocked_enqueue)
    t.start()
    assert blocked_started.wait(JOIN_TIMEOUT)
    # Wait until the enqueue is really in line (a snapshot, no sleeping).
    _wait_until(lambda: q.queue.statistics().pending_enqueues == 1)
    with pytest.raises(DeadlineExceededError):
        q.close(timeout=0.01)  # behind the enqueue: times out, stays in line
    assert not q.is_closed()
    assert q.dequeue() == "a"  # room: b goes in, then the close happens
    t.join(JOIN_TIMEOUT)
    assert not t.is_alive() and not errors
    assert q.is_closed()
    with pytest.raises(CancelledError):
        q.enqueue("c")
    assert q.dequeue() == "b"
    close = next(o for o in h.operations() if o.kind == "close")
    assert close.pending and close.outcome is None
    assert_linearizable(h, FIFOModel(capacity=1))


def _wait_until(predicate: Any, timeout: float = JOIN_TIMEOUT) -> None:
    """Wait until ``predicate()`` holds: a state another thread changes inside the queue,
    which offers no notification, so it is re-checked every millisecond up to a deadline."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        assert time.monotonic() < deadline, "the condition never held"
        pause.wait(0.001)


# ---------------------------------------------------------------------------
# HIST-5: generic models
# ---------------------------------------------------------------------------


class RegisterModel:
    """A read/write register: no successors(), no base class (HIST-5)."""

    def init(self) -> int:
        return 0

    def apply(self, state: int, op: Operation) -> tuple[int, Outcome]:
        if op.kind == "write":
            return op.arg, OK(None)
        return state, OK(state)


def test_any_object_with_init_and_apply_is_a_model_hist_5() -> None:
    """HIST-5: the checker is generic: the classic register examples."""
    good = hist(
        ("A", "write", 1, 0, 10, OK()),
        ("B", "read", None, 5, 15, OK(0)),  # overlaps the write: may read the old value
        ("C", "read", None, 12, 20, OK(1)),
    )
    assert check(good, RegisterModel())
    bad = hist(
        ("A", "write", 1, 0, 10, OK()),
        ("B", "read", None, 5, 15, OK(1)),
        ("C", "read", None, 16, 20, OK(0)),  # after a read of 1, reads 0: impossible
    )
    report = check(bad, RegisterModel())
    assert not report
    assert report.op is not None and report.op.thread == "C"
    assert report.states == [1] and report.expected == [OK(1)]


class CounterModel(SequentialModel):
    """An increment whose result may be lost (nondeterminism through successors)."""

    def init(self) -> int:
        return 0

    def apply(self, state: int, op: Operation) -> tuple[int, Outcome]:
        if op.kind == "inc":
            return state + 1, OK(None)
        return state, OK(state)

    def successors(self, state: int, op: Operation) -> list[int]:
        if op.kind == "inc" and op.outcome == ERR("DeadlineExceededError"):
            return [state, state + 1]  # may or may not have counted
        return super().successors(state, op)


def test_successors_express_invisible_effects_hist_5() -> None:
    """HIST-5: successors() lets one recorded outcome lead to several states."""
    for read in (0, 1):
        h = hist(
            ("A", "inc", None, 0, 10, ERR("DeadlineExceededError")),
            ("B", "get", None, 20, 30, OK(read)),
        )
        assert check(h, CounterModel())
    h = hist(("A", "inc", None, 0, 10, ERR("DeadlineExceededError")), ("B", "get", None, 20, 30, OK(2)))
    assert not check(h, CounterModel())


def test_blocked_means_not_here_hist_5() -> None:
    """HIST-5: BLOCKED is never a recorded outcome: an open, empty queue's dequeue must wait
    for an enqueue that overlaps it."""
    assert FIFOModel().apply(((), False), Operation(0, "A", "dequeue", None, 0, 1, OK(1)))[1] is BLOCKED
    waits = hist(("A", "dequeue", None, 0, 50, OK(1)), ("B", "enqueue", 1, 20, 30, OK()))
    assert fifo_verdict(waits)
    too_early = hist(("A", "dequeue", None, 0, 10, OK(1)), ("B", "enqueue", 1, 20, 30, OK()))
    assert not fifo_verdict(too_early)


# ---------------------------------------------------------------------------
# HIST-6, HIST-9: FIFO verdicts on tiny histories
# ---------------------------------------------------------------------------

LINEARIZABLE = {
    "sequential fifo": [
        ("A", "enqueue", 1, 0, 1, OK()),
        ("A", "enqueue", 2, 2, 3, OK()),
        ("B", "dequeue", None, 4, 5, OK(1)),
        ("B", "dequeue", None, 6, 7, OK(2)),
    ],
    "concurrent dequeues take either": [
        ("A", "enqueue_many", (1, 2), 0, 1, OK()),
        ("B", "dequeue", None, 2, 10, OK(2)),
        ("C", "dequeue", None, 3, 9, OK(1)),
    ],
    "dequeue overlapping its enqueue": [
        ("A", "dequeue", None, 0, 10, OK(1)),
        ("B", "enqueue", 1, 5, 6, OK()),
    ],
    "close then drain then out of range": [
        ("A", "enqueue", 1, 0, 1, OK()),
        ("A", "close", False, 2, 3, OK()),
        ("B", "enqueue", 2, 4, 5, ERR(CancelledError)),
        ("B", "dequeue", None, 6, 7, OK(1)),
        ("B", "dequeue", None, 8, 9, ERR(OutOfRangeError)),
        ("B", "is_closed", None, 10, 11, OK(True)),
    ],
    "second plain close fails, cancel close never does": [
        ("A", "close", False, 0, 1, OK()),
        ("A", "close", False, 2, 3, ERR(CancelledError)),
        ("A", "close", True, 4, 5, OK()),
    ],
    "empty enqueue_many on a closed queue (Q-ENQ-4)": [
        ("A", "close", True, 0, 1, OK()),
        ("A", "enqueue_many", (), 2, 3, OK()),
    ],
    "dequeue_up_to returns the remainder once closed": [
        ("A", "enqueue_many", (1, 2), 0, 1, OK()),
        ("A", "close", False, 2, 3, OK()),
        ("B", "dequeue_many", 3, 4, 5, ERR(OutOfRangeError)),
        ("B", "dequeue_up_to", 3, 6, 7, OK((1, 2))),
        ("B", "dequeue_up_to", 3, 8, 9, ERR(OutOfRangeError)),
    ],
    "dequeue_many waits for the enqueue that completes it": [
        ("B", "dequeue_many", 2, 0, 20, OK((1, 2))),
        ("A", "enqueue", 1, 1, 2, OK()),
        ("A", "enqueue", 2, 3, 4, OK()),
    ],
    "timed-out enqueue_many pushed a prefix (Q-ENQ-3)": [
        ("A", "enqueue_many", (1, 2, 3), 0, 10, ERR(DeadlineExceededError)),
        ("B", "dequeue", None, 11, 12, OK(1)),
        ("B", "dequeue", None, 13, 14, OK(2)),
        ("B", "size", None, 15, 16, OK(0)),
    ],
    "cancelled enqueue_many pushed a prefix before the close (Q-CLOSE-3)": [
        ("A", "enqueue_many", (1, 2, 3), 0, 10, ERR(CancelledError)),
        ("B", "close", True, 5, 6, OK()),
        ("B", "dequeue", None, 11, 12, OK(1)),
        ("B", "dequeue", None, 13, 14, ERR(OutOfRangeError)),
    ],
    "timed-out calls change nothing (Q-TIMEOUT-2)": [
        ("A", "enqueue", 1, 0, 1, OK()),
        ("B", "dequeue", None, 2, 3, ERR(DeadlineExceededError)),
        ("B", "dequeue_many", 2, 4, 5, ERR(DeadlineExceededError)),
        ("B", "enqueue", 9, 6, 7, ERR(DeadlineExceededError)),
        ("B", "dequeue", None, 8, 9, OK(1)),
        ("B", "size", None, 10, 11, OK(0)),
    ],
}

NOT_LINEARIZABLE = {
    "out of order": [
        ("A", "enqueue", 1, 0, 1, OK()),
        ("A", "enqueue", 2, 2, 3, OK()),
        ("B", "dequeue", None, 4, 5, OK(2)),
    ],
    "duplicate": [
        ("A", "enqueue", 1, 0, 1, OK()),
        ("B", "dequeue", None, 2, 10, OK(1)),
        ("C", "dequeue", None, 3, 9, OK(1)),
    ],
    "from nowhere": [("B", "dequeue", None, 0, 1, OK(5))],
    "enqueue succeeds after close": [
        ("A", "close", False, 0, 1, OK()),
        ("A", "enqueue", 1, 2, 3, OK()),
    ],
    "out of range while an element is left": [
        ("A", "enqueue", 1, 0, 1, OK()),
        ("A", "close", False, 2, 3, OK()),
        ("B", "dequeue", None, 4, 5, ERR(OutOfRangeError)),
    ],
    "lost element": [
        ("A", "enqueue", 1, 0, 1, OK()),
        ("B", "size", None, 2, 3, OK(0)),
    ],
    "prefix with a hole": [
        ("A", "enqueue_many", (1, 2, 3), 0, 10, ERR(DeadlineExceededError)),
        ("B", "dequeue", None, 11, 12, OK(2)),
    ],
    "cancelled enqueue_many pushed after a close that preceded it": [
        ("B", "close", True, 0, 1, OK()),
        ("A", "enqueue_many", (1, 2), 2, 10, ERR(CancelledError)),
        ("B", "dequeue", None, 11, 12, OK(1)),
    ],
    "a cancelled enqueue with the queue open": [("A", "enqueue", 1, 0, 1, ERR(CancelledError))],
    "dequeue_many returns too few while open": [
        ("A", "enqueue", 1, 0, 1, OK()),
        ("B", "dequeue_up_to", 2, 2, 3, OK((1,))),
    ],
}


@pytest.mark.parametrize("name", sorted(LINEARIZABLE))
def test_linearizable_fifo_histories_hist_6_hist_9(name: str) -> None:
    """HIST-6, HIST-9: each history has an order that explains every outcome."""
    report = check(hist(*LINEARIZABLE[name]), FIFOModel())
    assert report, report.explain()
    assert sorted(o.index for o in report.order) == list(range(len(LINEARIZABLE[name])))


@pytest.mark.parametrize("name", sorted(NOT_LINEARIZABLE))
def test_non_linearizable_fifo_histories_hist_6_hist_9(name: str) -> None:
    """HIST-6, HIST-9: no order explains these; the report says which call is wrong."""
    report = check(hist(*NOT_LINEARIZABLE[name]), FIFOModel())
    assert not report
    assert report.op is not None and report.op in report.window
    with pytest.raises(NotLinearizableError, match="NOT linearizable"):
        assert_linearizable(hist(*NOT_LINEARIZABLE[name]), FIFOModel(), context=name)


def test_capacity_is_modelled_on_request_hist_9() -> None:
    """HIST-9: with capacity=2 a third enqueue cannot complete before a dequeue."""
    rows = [
        ("A", "enqueue", 1, 0, 1, OK()),
        ("A", "enqueue", 2, 2, 3, OK()),
        ("A", "enqueue", 3, 4, 5, OK()),
    ]
    assert fifo_verdict(hist(*rows))
    assert not fifo_verdict(hist(*rows), capacity=2)
    waited = [*rows[:2], ("A", "enqueue", 3, 4, 20, OK()), ("B", "dequeue", None, 10, 11, OK(1))]
    assert fifo_verdict(hist(*waited), capacity=2)


def test_unknown_kind_names_it_hist_9() -> None:
    """HIST-9: FIFOModel refuses kinds it does not know, naming the kind."""
    with pytest.raises(ValueError, match="'peek'"):
        check(hist(("A", "peek", None, 0, 1, OK(None))), FIFOModel())


def test_size_is_not_linearizable_with_partial_batches_hist_10() -> None:
    """HIST-10 (Q-DEQ-3, Q-API-6): on the real queue, a waiting dequeue_many holds what it
    took outside size(), so size() reads 0 right after an enqueue completed, before the
    batch is complete: no single moment explains it.  Without size() the same run is fine.
    """
    q = FIFOQueue(-1)
    h = History()
    rq = RecordingQueue(q, h)
    got: list[Any] = []
    started = threading.Event()

    def consumer() -> None:
        started.set()
        got.append(rq.dequeue_many(2, timeout=JOIN_TIMEOUT))

    t = threading.Thread(target=consumer)
    t.start()
    assert started.wait(JOIN_TIMEOUT)
    _wait_until(lambda: q.statistics().pending_dequeues == 1)
    rq.enqueue("a")  # taken at once by the waiting dequeue_many, which holds it
    assert rq.size() == 0
    rq.enqueue("b")
    t.join(JOIN_TIMEOUT)
    assert not t.is_alive() and got == [["a", "b"]]
    report = check(h, FIFOModel())
    assert not report
    assert report.op is not None and report.op.kind == "size"
    assert report.expected == [OK(1)]
    without_size = [op for op in h.operations() if op.kind != "size"]
    assert check(without_size, FIFOModel())


# ---------------------------------------------------------------------------
# HIST-7: the search
# ---------------------------------------------------------------------------


def test_search_budget_hist_7() -> None:
    """HIST-7: the search stops with SearchBudgetExceeded after max_steps."""
    rows = [(f"T{i}", "enqueue", i, 0, 100, OK()) for i in range(8)]
    rows += [(f"T{i}", "dequeue", None, 200, 300, OK(i)) for i in range(8)]
    h = hist(*rows)
    with pytest.raises(SearchBudgetExceeded, match="max_steps=3"):
        check(h, FIFOModel(), max_steps=3)
    assert check(h, FIFOModel())


def test_memoisation_keeps_wide_histories_cheap_hist_7() -> None:
    """HIST-7: 12 concurrent enqueue(0), then 12 concurrent dequeues, then a wrong dequeue.

    Every order of the enqueues leads to the same state, so the cache on (linearized
    set, state) cuts 12! orders to 2**12 configurations; the wrong last dequeue forces
    the search to exhaust them all before it can say no.
    """
    n = 12
    rows = [(f"T{i}", "enqueue", 0, 0, 100, OK()) for i in range(n)]
    rows += [(f"U{i}", "dequeue", None, 200, 300, OK(0)) for i in range(n)]
    report = check(hist(*rows), FIFOModel(), max_steps=500_000)
    assert report, report.explain()
    bad = [*rows, ("V", "dequeue", None, 400, 401, OK(0))]
    report = check(hist(*bad), FIFOModel(), max_steps=500_000)
    assert not report and report.steps < 500_000


# ---------------------------------------------------------------------------
# HIST-8: the report
# ---------------------------------------------------------------------------


def test_report_names_first_failure_and_smallest_window_hist_8() -> None:
    """HIST-8: the op, its window (overlapping ops that matter), the states, the expectation."""
    h = hist(
        ("A", "enqueue", 1, 0, 10, OK()),
        ("B", "enqueue", 2, 20, 30, OK()),
        ("C", "dequeue", None, 40, 50, OK(2)),  # wrong: 1 is first
        ("D", "enqueue", 3, 45, 60, OK()),  # overlaps C but plays no part
        ("E", "dequeue", None, 70, 80, OK(7)),  # also wrong, but later
    )
    report = check(h, FIFOModel())
    assert not report
    ops = h.operations()
    assert report.op is ops[2]
    assert report.window == [ops[2]]
    # D overlaps C, so C was tried with and without 3 enqueued.
    assert sorted(report.states) == [((1, 2), False), ((1, 2, 3), False)]
    assert report.expected == [OK(1), OK(1)]
    text = report.explain()
    assert "[C] dequeue() -> 2" in text and "((1, 2), False): -> 1" in text


def test_report_is_approximate_when_its_searches_run_out_hist_8() -> None:
    """HIST-8, HIST-5: the verdict uses whole-history hints (6 timed-out batches whose
    elements never come out: one prefix each); the report's searches do not (4**6
    prefixes), so with a small budget the report says it is approximate."""
    h = History()
    for i in range(6):
        batch = (10 * i, 10 * i + 1, 10 * i + 2)
        h.add("P", "enqueue_many", batch, 10 * i, 10 * i + 5, ERR(DeadlineExceededError))
    h.add("C", "dequeue", None, 60, 65, OK(99))
    quick = check(h, FIFOModel(), max_steps=300)
    assert not quick and quick.approximate and quick.op is h.operations()[6]
    assert "approximate" in quick.explain()
    full = check(h, FIFOModel())
    assert not full and not full.approximate and full.op is h.operations()[6]
    assert full.window == [h.operations()[6]]


def test_window_keeps_the_overlapping_ops_that_conflict_hist_8() -> None:
    """HIST-8: two overlapping dequeues of one element: both are in the window."""
    h = hist(
        ("A", "enqueue", 1, 0, 10, OK()),
        ("B", "dequeue", None, 20, 40, OK(1)),
        ("C", "dequeue", None, 30, 50, OK(1)),
        ("D", "size", None, 35, 36, OK(0)),  # overlaps C; consistent either way
    )
    report = check(h, FIFOModel())
    assert not report
    ops = h.operations()
    assert report.op is ops[2]
    assert report.window == [ops[1], ops[2]]


def test_later_calls_play_no_part_hist_8() -> None:
    """HIST-8: the verdict on the first failure ignores operations called after it."""
    h = hist(
        ("A", "enqueue", 1, 0, 10, OK()),
        ("B", "dequeue", None, 20, 30, OK(9)),
        *[("C", "enqueue", i, 40 + 2 * i, 41 + 2 * i, OK()) for i in range(50)],
    )
    report = check(h, FIFOModel())
    assert report.op is h.operations()[1] and len(report.window) == 1


# ---------------------------------------------------------------------------
# HIST-11: bad arguments
# ---------------------------------------------------------------------------


def test_bad_arguments_name_the_argument_hist_11() -> None:
    """HIST-11: every error names the argument and the value."""
    with pytest.raises(TypeError, match=r"history must be a History.*42"):
        check(42, FIFOModel())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"only Operation objects.*'x'"):
        check(["x"], FIFOModel())  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"model must have init\(\) and apply.*object"):
        check(History(), object())
    with pytest.raises(ValueError, match=r"max_steps.*0"):
        check(History(), FIFOModel(), max_steps=0)
    with pytest.raises(ValueError, match=r"max_states.*-1"):
        check(History(), FIFOModel(), max_states=-1)
    h = History()
    with pytest.raises(TypeError, match=r"kind must be a non-empty string.*''"), h.record(""):
        pass
    with pytest.raises(TypeError, match=r"kind.*None"):
        h.add("A", None, 1, 0, 1, OK())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"call must be an int.*1.5"):
        h.add("A", "enqueue", 1, 1.5, 2, OK())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ret=1 is before call=5"):
        h.add("A", "enqueue", 1, 5, 1, OK())
    with pytest.raises(ValueError, match=r"#0 .*returned before it was called"):
        check([Operation(0, "A", "size", None, 5, 4, OK(0))], FIFOModel())
    with pytest.raises(ValueError, match=r"needs an Outcome"):
        h.add("A", "enqueue", 1, 0, 1, None)
    with pytest.raises(TypeError, match=r"outcome must be an Outcome.*'ok'"):
        h.add("A", "enqueue", 1, 0, 1, "ok")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Outcome.error\(exc\).*3"):
        Outcome.error(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"capacity.*-2"):
        FIFOModel(capacity=-2)
    with pytest.raises(ValueError, match=r"dequeue_many\(n\).*'2'"):
        check(hist(("A", "dequeue_many", "2", 0, 1, OK(()))), FIFOModel())
    with pytest.raises(TypeError, match=r"RecordingQueue\(history\).*None"):
        RecordingQueue(FIFOQueue(1), None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"RecordingQueue\(key\).*5"):
        RecordingQueue(FIFOQueue(1), History(), key=5)  # type: ignore[arg-type]
    assert len(h) == 0


# ---------------------------------------------------------------------------
# Teeth: deliberately broken queues on real threads are caught
# ---------------------------------------------------------------------------


class SwappingQueue(FIFOQueue):
    """Broken on purpose: every 5th take returns the second element instead of the first."""

    def _init_storage(self) -> None:
        super()._init_storage()
        self._takes = 0

    def _get(self) -> Any:
        self._takes += 1
        if self._takes % 5 == 0 and len(self._queue) >= 2:
            first = self._queue.popleft()
            second = self._queue.popleft()
            self._queue.appendleft(first)
            return second
        return self._queue.popleft()


class DuplicatingQueue(FIFOQueue):
    """Broken on purpose: the 7th take returns the head without removing it."""

    def _init_storage(self) -> None:
        super()._init_storage()
        self._takes = 0

    def _get(self) -> Any:
        self._takes += 1
        if self._takes == 7:
            return self._queue[0]
        return self._queue.popleft()


class LosingQueue(FIFOQueue):
    """Broken on purpose: the 20th element stored is dropped silently."""

    def _init_storage(self) -> None:
        super()._init_storage()
        self._puts = 0

    def _put(self, element: Any) -> None:
        self._puts += 1
        if self._puts != 20:
            self._queue.append(element)


def _run_threads(targets: list[Any]) -> None:
    errors: list[BaseException] = []

    def wrap(fn: Any) -> Any:
        def run() -> None:
            try:
                fn()
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        return run

    threads = [threading.Thread(target=wrap(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "worker threads hung"
    assert not errors, errors


def _producer_then_consumer(queue: FIFOQueue, n: int) -> History:
    """One producer thread enqueues 0..n-1; once it is done, one consumer thread drains."""
    h = History()
    rq = RecordingQueue(queue, h)
    produced = threading.Event()

    def produce() -> None:
        for i in range(n):
            rq.enqueue(i, timeout=JOIN_TIMEOUT)
        rq.close()
        produced.set()

    def consume() -> None:
        assert produced.wait(JOIN_TIMEOUT)
        while True:
            try:
                rq.dequeue(timeout=JOIN_TIMEOUT)
            except OutOfRangeError:
                return

    _run_threads([produce, consume])
    return h


def _concurrent(queue: FIFOQueue, producers: int, consumers: int, per_producer: int, seed: int) -> History:
    """Producers and consumers at once (random batch sizes), then a close and a drain."""
    h = History()
    rq = RecordingQueue(queue, h)
    go = threading.Barrier(producers + consumers)
    remaining = [producers * per_producer]
    lock = threading.Lock()

    def produce(p: int) -> None:
        rng = random.Random(seed * 100 + p)
        go.wait()
        i = 0
        while i < per_producer:
            k = min(rng.randint(1, 3), per_producer - i)
            if k == 1:
                rq.enqueue((p, i), timeout=JOIN_TIMEOUT)
            else:
                rq.enqueue_many([(p, i + j) for j in range(k)], timeout=JOIN_TIMEOUT)
            i += k

    def consume(c: int) -> None:
        rng = random.Random(seed * 100 + 50 + c)
        go.wait()
        while True:
            with lock:
                if remaining[0] <= 0:
                    return
                want = min(rng.randint(1, 2), remaining[0])
                remaining[0] -= want
            if want == 1:
                rq.dequeue(timeout=JOIN_TIMEOUT)
            else:
                rq.dequeue_many(want, timeout=JOIN_TIMEOUT)

    _run_threads(
        [lambda p=p: produce(p) for p in range(producers)]
        + [lambda c=c: consume(c) for c in range(consumers)]
    )
    return h


def test_real_fifo_queue_histories_are_linearizable_hist_6() -> None:
    """HIST-6: the same workloads on the real FIFOQueue pass (the control experiment)."""
    assert_linearizable(_producer_then_consumer(FIFOQueue(-1), 40), FIFOModel())
    assert_linearizable(_concurrent(FIFOQueue(4), 3, 3, 40, seed=1), FIFOModel())


def test_out_of_order_queue_is_rejected_hist_8() -> None:
    """HIST-8: a queue that returns the second element on every 5th take is caught, and the
    report points at the first wrong dequeue."""
    h = _producer_then_consumer(SwappingQueue(-1), 40)
    report = check(h, FIFOModel())
    assert not report
    assert report.op is not None and report.op.kind == "dequeue" and report.op.outcome == OK(5)
    assert report.expected == [OK(4)]


def test_duplicating_queue_is_rejected_under_concurrency_hist_8() -> None:
    """HIST-8: a queue that hands out one element twice is caught with 3 producers and
    3 consumers running at once (each element is unique, so no order explains it)."""
    h = _concurrent(DuplicatingQueue(4), 3, 3, 20, seed=2)
    with pytest.raises(NotLinearizableError) as info:
        assert_linearizable(h, FIFOModel(), context="duplicating queue")
    assert info.value.report.op is not None


def test_losing_queue_is_rejected_hist_8() -> None:
    """HIST-8: a queue that drops the last element stored is caught: the drain ends with
    OutOfRangeError while the model still holds the element."""
    h = _producer_then_consumer(LosingQueue(-1), 20)
    report = check(h, FIFOModel())
    assert not report
    assert report.op is not None and report.op.outcome == ERR(OutOfRangeError)
    assert report.states == [((19,), True)]


# ---------------------------------------------------------------------------
# HIST-6, HIST-7: the search agrees with brute force, with and without hints
# ---------------------------------------------------------------------------


class PlainFIFO:
    """FIFOModel without its search hints (no prepare, read_only, candidate_key)."""

    def __init__(self, capacity: int | None = None) -> None:
        self._model = FIFOModel(capacity=capacity)

    def init(self) -> Any:
        return self._model.init()

    def apply(self, state: Any, op: Operation) -> Any:
        return self._model.apply(state, op)

    def successors(self, state: Any, op: Operation) -> Any:
        return self._model.successors(state, op)


def brute_force(ops: list[Operation], model: Any) -> bool:
    """HIST-6 by definition: every subset of the pending ops, every order."""
    completed = [o for o in ops if not o.pending]
    pending = [o for o in ops if o.pending]
    for r in range(len(pending) + 1):
        for extra in itertools.combinations(pending, r):
            chosen = completed + list(extra)
            for order in itertools.permutations(chosen):
                if any(b.precedes(a) for i, a in enumerate(order) for b in order[i + 1 :]):
                    continue
                states = [model.init()]
                for op in order:
                    states = [n for s in states for n in model.successors(s, op)]
                    if not states:
                        break
                if states:
                    return True
    return False


def random_history(rng: random.Random) -> list[Operation]:
    """A small random FIFO history: a sequential run with (sometimes) a wrong outcome,
    stretched into overlapping intervals, sometimes with a pending call."""
    model = FIFOModel(capacity=rng.choice((None, 2)))
    threads = rng.randint(2, 3)
    script = []
    next_element = 0
    for t in range(threads):
        for _ in range(rng.randint(1, 3 if threads == 2 else 2)):
            kind = rng.choice(
                ("enqueue", "enqueue", "enqueue_many", "dequeue", "dequeue", "dequeue_many",
                 "dequeue_up_to", "size", "close")
            )
            if kind == "enqueue":
                arg: Any = next_element
                next_element += 1
            elif kind == "enqueue_many":
                arg = tuple(range(next_element, next_element + rng.randint(0, 2)))
                next_element += len(arg)
            elif kind in ("dequeue_many", "dequeue_up_to"):
                arg = rng.randint(0, 2)
            elif kind == "close":
                arg = rng.random() < 0.3
            else:
                arg = None
            script.append((t, kind, arg))
    # A random interleaving of the threads' scripts, run on the model.
    queues = {t: [s for s in script if s[0] == t] for t in range(threads)}
    order = []
    while any(queues.values()):
        t = rng.choice([t for t, q in queues.items() if q])
        order.append(queues[t].pop(0))
    state = model.init()
    ops = []
    last_ret = dict.fromkeys(range(threads), -1)
    for k, (t, kind, arg) in enumerate(order):
        probe = Operation(k, t, kind, arg, 0, 0, None)
        after, expected = model.apply(state, probe)
        if expected is BLOCKED or rng.random() < 0.1:
            expected = ERR(DeadlineExceededError)
            if kind == "enqueue_many" and arg and not state[1]:
                after = (state[0] + arg[: rng.randint(0, len(arg))], state[1])
            else:
                after = state
        if rng.random() < 0.15:  # a wrong outcome
            expected = rng.choice(
                (OK(None), OK(0), OK(1), OK((0,)), ERR(OutOfRangeError), ERR(CancelledError))
            )
        state = after
        point = 100 * (k + 1)
        call = max(last_ret[t] + 1, point - rng.randint(0, 150))
        ret = max(call, point + rng.randint(0, 150))
        pending = rng.random() < 0.05
        ops.append(Operation(k, t, kind, arg, call, None if pending else ret, None if pending else expected))
        last_ret[t] = 10**9 if pending else ret
    return [op for op in ops if op.call < 10**9]


def test_search_agrees_with_brute_force_hist_6_hist_7() -> None:
    """HIST-6, HIST-7: on 1,500 small random histories (half of them or so linearizable),
    check() gives the brute-force verdict, with the model's hints and without them."""
    rng = random.Random(20261122)
    verdicts = []
    for _ in range(1500):
        ops = random_history(rng)
        for capacity in (None, 2):
            expected = brute_force(ops, PlainFIFO(capacity))
            hinted = check(ops, FIFOModel(capacity=capacity))
            plain = check(ops, PlainFIFO(capacity))
            assert bool(hinted) == bool(plain) == expected, [o.describe() for o in ops]
            verdicts.append(expected)
            if not expected:
                check_window(ops, hinted, PlainFIFO(capacity))
    assert 0.2 < sum(verdicts) / len(verdicts) < 0.8, sum(verdicts) / len(verdicts)


def check_window(ops: list[Operation], report: Any, model: Any) -> None:
    """HIST-8 by definition, with brute force: in the history up to the failing return
    (later returns become pending), the window after everything that returned before
    the failing call cannot be ordered, and can be without the failing call."""
    failed = report.op
    cut = failed.ret

    def upto(sub: list[Operation]) -> list[Operation]:
        return [o if o.ret is not None and o.ret <= cut else replace(o, ret=None) for o in sub]

    before = [o for o in ops if o.ret is not None and o.ret < failed.call]
    assert failed in report.window
    assert all(o.call <= cut and o not in before for o in report.window)
    assert not brute_force(upto(before + report.window), model)
    assert brute_force(upto(before + [o for o in report.window if o is not failed]), model)
    # And no earlier return already fails: the prefix just before it can be ordered.
    earlier = [o for o in ops if o.call <= cut]
    assert brute_force(
        [o if o.ret is not None and o.ret < cut else replace(o, ret=None) for o in earlier], model
    )
