"""The pure models on their own: small sequences whose outcomes the specs fix (MODEL-1..7)."""

from __future__ import annotations

import ast
import dataclasses
import sys
import threading
from pathlib import Path

import pytest

import coordkit.models
from coordkit.errors import CancelledError, DeadlineExceededError, OutOfRangeError
from coordkit.models.queues import Statistics
from coordkit.queues import QueueStatistics
from coordkit.stateful.models import (
    CoordinatorModel,
    Err,
    ModelError,
    Ok,
    QueueModel,
    RunnerModel,
    StopReason,
)


def outcome_types(model: QueueModel) -> dict:
    return {op: (o.type if isinstance(o, Err) else o.value) for op, o in model.results.items()}


# -- purity ------------------------------------------------------------------------------------


def test_a_model_is_plain_data_that_copies_and_replays():
    # MODEL-1: no threads, same operations -> same state; copies are independent
    before = threading.active_count()

    def run() -> QueueModel:
        m = QueueModel(2)
        m.dequeue_many("a", 3, timeout=2)
        m.enqueue("b", 1)
        m.enqueue_many("c", [2, 3, 4])
        m.advance(5)
        return m

    first, second = run(), run()
    assert first.key() == second.key() and first.results == second.results
    copy = first.copy()
    copy.enqueue("d", 9)
    assert first.key() != copy.key() and "d" not in first.results
    assert threading.active_count() == before


def test_the_models_import_nothing_but_the_errors():
    # MODEL-1: coordkit.models imports neither Hypothesis, nor an implementation, nor a
    # checker: of coordkit, only coordkit.errors and its own modules (at any depth, so a
    # function-level import counts too)
    package = Path(coordkit.models.__file__).parent
    found = {}
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update((alias.name, path.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found[node.module] = path.name
    assert "coordkit.models.queues" in found  # the scan sees the package's own imports
    foreign = {name: where for name, where in found.items()
               if name.split(".")[0] not in sys.stdlib_module_names
               and name != "coordkit.errors" and not name.startswith("coordkit.models.")}
    assert not foreign, foreign


def test_statistics_have_the_implementations_fields():
    # MODEL-1, Q-API-8: the model's statistics() answers field by field what the
    # implementation's reports, under the same names
    assert [f.name for f in dataclasses.fields(Statistics)] == [
        f.name for f in dataclasses.fields(QueueStatistics)]


def test_results_hold_every_operation_released_by_a_step():
    # MODEL-2: a waiting call has no entry; the step that releases it adds it
    m = QueueModel(1)
    m.dequeue("d1")
    m.dequeue("d2")
    assert m.results == {} and m.pending() == ["d1", "d2"]
    m.enqueue_many("e", [10, 11])
    assert m.results == {"e": Ok(None), "d1": Ok(10), "d2": Ok(11)}


# -- the queue model (MODEL-3) --------------------------------------------------------------------


def test_head_of_line_blocking_and_arrival_order():
    # MODEL-3 (Q-MODEL-3): a dequeue_many holding 2 keeps a later dequeue waiting
    m = QueueModel(5)
    m.dequeue_many("many", 3)
    m.dequeue("one")
    m.enqueue_many("e", [1, 2])
    assert m.results == {"e": Ok(None)}
    assert m.size() == 0 and m.statistics().held == 2
    m.enqueue("f", 3)
    assert m.results["many"] == Ok([1, 2, 3]) and "one" not in m.results


def test_plain_close_waits_its_turn_and_cancel_acts_at_once():
    # MODEL-3 (Q-CLOSE-1, Q-CLOSE-3, Q-CLOSE-4)
    m = QueueModel(1)
    m.enqueue("e1", 1)
    m.enqueue("e2", 2)  # waits for room
    m.close("c1")  # waits behind e2
    m.enqueue("e3", 3)  # behind the close
    assert not m.closed and m.statistics().pending_closes == 1
    m.dequeue("d")
    assert outcome_types(m) == {"e1": None, "e2": None, "c1": None, "e3": CancelledError, "d": 1}
    assert m.closed and m.contents() == [2]

    m = QueueModel(1)
    m.enqueue("e1", 1)
    m.enqueue("e2", 2)
    m.close("plain")
    m.close("cancel", cancel=True)
    assert outcome_types(m) == {"e1": None, "e2": CancelledError, "plain": CancelledError, "cancel": None}
    m.dequeue_many("batch", 3)
    assert m.results["batch"].type is OutOfRangeError and m.contents() == [1]


def test_partial_batch_put_back_in_order_and_up_to_takes_the_rest():
    # MODEL-3 (Q-DEQ-4, Q-DEQ-5)
    m = QueueModel(4)
    m.dequeue_up_to("up", 4)
    m.enqueue_many("e", [1, 2])
    m.dequeue("later")
    m.close("c")
    assert m.results["up"] == Ok([1, 2]) and isinstance(m.results["later"], Err)


def test_timeouts_fire_in_order_and_put_back():
    # MODEL-4 (Q-TIMEOUT-2, Q-DEQ-6): the batch gives its element back, then the next dequeue gets it
    m = QueueModel(3)
    m.dequeue_many("batch", 2, timeout=1)
    m.dequeue("single", timeout=2)
    m.enqueue("e", 7)
    assert m.statistics().held == 1
    m.advance(1.5)
    assert m.results["batch"].type is DeadlineExceededError
    assert m.results["single"] == Ok(7) and m.now == 1.5


def test_timeout_zero_never_waits_and_leaves_no_trace():
    # MODEL-4 (Q-TIMEOUT-3)
    m = QueueModel(1)
    m.enqueue("e", 1)
    m.enqueue("full", 2, timeout=0)
    m.dequeue_many("short", 2, timeout=0)
    assert outcome_types(m) == {"e": None, "full": DeadlineExceededError, "short": DeadlineExceededError}
    assert m.pending() == [] and m.contents() == [1]


def test_a_timed_out_close_stays_in_line():
    # MODEL-3 (Q-CLOSE-6, DEV-Q-7)
    m = QueueModel(1)
    m.enqueue("e1", 1)
    m.enqueue("e2", 2)
    m.close("c", timeout=1)
    m.advance(1)
    assert m.results["c"].type is DeadlineExceededError and not m.closed
    assert m.statistics().pending_closes == 1
    m.dequeue("d")
    assert m.closed and m.statistics().pending_closes == 0


def test_two_deadlines_at_one_instant_are_refused():
    # MODEL-4: which woken caller acts first would decide the outcome
    m = QueueModel(1)
    m.dequeue("a", timeout=1)
    m.dequeue("b", timeout=1)
    with pytest.raises(ModelError, match="two deadlines"):
        m.advance(2)


def test_shuffle_picks_are_the_implementations_within_the_rules():
    # MODEL-5 (RSQ-2, RSQ-4): any stored element, min_after_dequeue while open, a multiset
    m = QueueModel(4, "shuffle", min_after_dequeue=1)
    m.enqueue_many("e", [1, 2, 3])
    m.picks = {"d": 3}
    m.dequeue("d")
    assert m.results["d"] == Ok(3)
    m.picks = {"bad": 99}  # not stored: the model picks for itself, so the outcome differs
    m.dequeue("bad")
    assert m.results["bad"] != Ok(99)
    m.dequeue("held back")  # one element must stay while open
    assert "held back" not in m.results and m.size() == 1
    m.close("c")
    assert "held back" in m.results and m.size() == 0


def test_priority_picks_take_the_smallest_priorities_whole():
    # MODEL-5 (PQ-2, PQ-4)
    m = QueueModel(5, "priority")
    m.dequeue_many("batch", 3)
    m.enqueue_many("e", [(2, "a"), (0, "b")])
    assert "batch" not in m.results and m.statistics().held == 0  # nothing taken until 3 are stored
    m.picks = {"batch": [(0, "b"), (1, "c"), (2, "a")]}
    m.enqueue("f", (1, "c"))
    assert m.results["batch"] == Ok([(0, "b"), (1, "c"), (2, "a")])
    m = QueueModel(5, "priority")
    m.enqueue_many("e", [(2, "a"), (0, "b"), (0, "c")])
    m.picks = {"batch": [(0, "c"), (0, "b")]}
    m.dequeue_many("batch", 2)
    assert m.results["batch"] == Ok([(0, "c"), (0, "b")])


# -- the coordinator model (MODEL-6) --------------------------------------------------------------


def test_first_stop_wins_and_clean_stops_record_nothing():
    # MODEL-6 (COORD-3, COORD-4)
    m = CoordinatorModel()
    m.request_stop("clean", StopReason(OutOfRangeError("done")))
    m.request_stop("late", StopReason(RuntimeError("too late")))
    assert m.stop and m.recorded is None
    m.clear_stop("clear")
    first, second = RuntimeError("first"), ValueError("second")
    m.request_stop("a", StopReason(first))
    m.request_stop("b", StopReason(second, triple=True))
    assert m.recorded is first


def test_handled_exception_is_recorded_and_join_reraises_until_clear():
    # MODEL-6 (COORD-5, COORD-15, COORD-17, COORD-8)
    m = CoordinatorModel()
    passed, handled = RuntimeError("passed"), KeyError("handled")
    m.request_stop("s", StopReason(passed, handled=handled))
    m.join("j1")
    m.join("j2")
    assert m.results["j1"].exc is handled and m.results["j2"].exc is handled and m.joined
    m.raise_requested_exception("r")
    assert m.results["r"].exc is handled
    m.clear_stop()
    assert not m.joined and m.recorded is None and not m.stop


def test_request_stop_after_join_raises_back():
    # MODEL-6 (COORD-7): the exception comes straight back; None still stops
    m = CoordinatorModel()
    m.join("j")
    exc = RuntimeError("after")
    m.request_stop("s", StopReason(exc))
    assert m.results["s"].exc is exc and not m.stop
    m.request_stop("plain")
    assert m.stop and m.results["plain"] == Ok(None)


def test_join_phases_and_grace_period():
    # MODEL-6 (COORD-12, COORD-13, COORD-14, COORD-15)
    m = CoordinatorModel()
    m.thread_started("stubborn", register=True)
    m.thread_started("polite", register=True, until_stop=True)
    m.join("j", grace=4)
    assert "j" not in m.results  # phase one: nobody stopped, nobody ended
    m.request_stop("s")
    assert not m.alive["polite"] and "j" not in m.results  # phase two: 4 s for the stubborn one
    m.advance(3)
    assert "j" not in m.results
    m.advance(1)
    assert m.results["j"].type is RuntimeError and m.results["j"].detail == ("stubborn",)
    assert m.registered == [] and m.joined


def test_a_thread_failing_after_join_dies_of_its_exception():
    # MODEL-6 (COORD-9 with COORD-7)
    m = CoordinatorModel()
    m.thread_started("w")
    m.join("j", threads=[])
    exc = RuntimeError("boom")
    m.thread_failed("w", exc)
    assert m.died == [("w", exc)] and not m.alive["w"]


# -- the runner model (MODEL-7) --------------------------------------------------------------------


def test_last_exhausted_thread_closes_the_queue():
    # MODEL-7 (RUNNER-4 step 3, RUNNER-2, RUNNER-OLD-2)
    m = RunnerModel(QueueModel(2), 2)
    threads = m.create_threads("create")
    assert threads == [(1, 0), (1, 1)] and m.at_gate() == [0, 1]
    m.create_threads("again")
    assert m.results["again"].type is RuntimeError
    m.instruct_enqueue(0, "x")
    m.instruct_raise(0, OutOfRangeError("done"))
    assert not m.queue.closed and m.running == 1
    m.instruct_raise(1, OutOfRangeError("done"))
    assert m.queue.closed and m.running == 0 and m.queue.contents() == ["x"]


def test_errors_without_a_coordinator_are_kept_and_kill_the_thread():
    # MODEL-7 (RUNNER-4 step 5, RUNNER-10, RUNNER-7a)
    m = RunnerModel(QueueModel(2), 2)
    m.create_threads("c")
    err, interrupt = ValueError("bad"), KeyboardInterrupt()
    m.instruct_raise(0, err)
    m.instruct_raise(1, interrupt)
    assert m.exceptions_raised == [err] and [e for _, e in m.died] == [err, interrupt]
    assert not m.queue.closed  # nobody left through a queue-closed exception


def test_a_stop_cancels_pending_enqueues_through_the_close_on_stop_thread():
    # MODEL-7 (RUNNER-5, RUNNER-4 step 1, RUNNER-7b)
    m = RunnerModel(QueueModel(1), 2, CoordinatorModel())
    m.create_threads("c")
    m.instruct_enqueue(0, "a")  # stored
    m.instruct_enqueue(1, "b")  # waits for room
    m.request_stop("stop")
    assert m.queue.closed and m.running == 1  # op 0 is still at its gate
    assert m.alive() == {(1, 0): True, (1, 1): False, (1, "close_on_stop"): False}
    assert m.coord is not None and m.coord.recorded is None  # the CancelledError came too late
    m.instruct_enqueue(0, "c")
    assert m.running == 0 and m.queue.contents() == ["a"]


def test_stop_before_start_leaves_at_once():
    # MODEL-7 (RUNNER-6)
    m = RunnerModel(QueueModel(1), 2, CoordinatorModel())
    m.request_stop("stop")
    m.create_threads("c")
    assert m.running == 0 and m.queue.closed and not any(m.alive().values())
