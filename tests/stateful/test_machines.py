"""The machines as a user meets them: binding, plain threading, failure output, races.

These tests run short, fixed programs (the calls Hypothesis's own failure
output prints) or tiny Hypothesis runs, so they are fast and deterministic.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.stateful import run_state_machine_as_test

import coordkit.stateful as stateful
from coordkit import FIFOQueue, OutOfRangeError, QueueRunner, RandomShuffleQueue
from coordkit.queues import _TIMED_OUT, DeadlineExceededError
from coordkit.stateful import (
    Advance,
    Choices,
    Contend,
    CoordinatorMachine,
    CreateThreads,
    FIFOQueueMachine,
    InstructAll,
    Join,
    QueueMachine,
    QueueOp,
    QueueRunnerMachine,
    RaceStops,
    RandomShuffleQueueMachine,
    StartWorker,
    StepFailure,
    Stop,
)
from coordkit.stateful._machine import SCHEDULES
from tests.stateful import mutants

QUICK = settings(max_examples=15, derandomize=True, database=None, deadline=None,
                 suppress_health_check=list(HealthCheck))


@contextlib.contextmanager
def machine(cls: type) -> Iterator[Any]:
    state = cls()
    try:
        yield state
    finally:
        state.teardown()


def a_short_fifo_program(cls: type) -> None:
    with machine(cls) as state:
        state.create_queue(capacity=1)
        state.step(QueueOp("dequeue"), Choices([]))
        state.step(QueueOp("enqueue_many", n=3), Choices([]))
        state.step(QueueOp("close"), Choices([]))
        state.step(QueueOp("dequeue_many", n=3), Choices([]))


# -- binding your own class (BYO-1) ---------------------------------------------------------------


def fifo_function(capacity: int) -> FIFOQueue:
    return FIFOQueue(capacity)


@pytest.mark.parametrize(
    "value",
    [FIFOQueue, fifo_function, lambda capacity: FIFOQueue(capacity), staticmethod(fifo_function)],
    ids=["class", "function", "lambda", "staticmethod"],
)
def test_one_attribute_binds_a_machine_to_a_class_or_function(value):
    # BYO-1: a plain function stored on the class is not turned into a method
    bound = type("Bound", (FIFOQueueMachine,), {"queue_factory": value})
    a_short_fifo_program(bound)
    assert bound.TestCase.__name__ == "Bound.TestCase"


def test_an_unbound_machine_says_how_to_bind_it():
    # BYO-1
    expected = "subclass the machine and set queue_factory"
    with machine(QueueMachine) as state, pytest.raises(TypeError, match=expected):
        state.create_queue(capacity=1)


# -- which capacities, and narrowing them (BYO-2) ----------------------------------------------------


def capacities_drawn(base: type, capacities: tuple[int, ...] | None, examples: int = 40) -> set[int]:
    """The capacities a derandomized run of ``base`` (narrowed to ``capacities``) passes its factory."""
    seen: set[int] = set()

    def make(capacity: int, *rest: int) -> Any:
        seen.add(capacity)
        if capacities is not None and capacity not in capacities:
            raise AssertionError(f"capacity {capacity} is not in {capacities}")
        return factory(capacity, *rest)

    factory = {FIFOQueueMachine: FIFOQueue, RandomShuffleQueueMachine: RandomShuffleQueue}[base]
    attrs: dict[str, Any] = {"queue_factory": staticmethod(make)}
    if capacities is not None:
        attrs["capacities"] = capacities
    bound = type("Narrowed", (base,), attrs)
    run_state_machine_as_test(bound, settings=settings(QUICK, max_examples=examples, stateful_step_count=3))
    return seen


def test_the_default_capacities_include_zero_and_unbounded():
    # BYO-2: capacities (2, 1, 3, 2, 1, 0, -1); RandomShuffleQueueMachine (2, 3, -1)
    assert FIFOQueueMachine.capacities == (2, 1, 3, 2, 1, 0, -1)
    assert {0, -1} <= capacities_drawn(FIFOQueueMachine, None) <= {0, 1, 2, 3, -1}
    assert {-1} < capacities_drawn(RandomShuffleQueueMachine, None) <= {2, 3, -1}


def test_a_subclass_narrows_the_capacities():
    # BYO-2: a queue without a capacity-0 mode sets capacities = (1, 2, 3, -1)
    assert len(capacities_drawn(FIFOQueueMachine, (1, 2, 3, -1))) > 2  # the factory refuses 0
    assert capacities_drawn(RandomShuffleQueueMachine, (1, -1)) == {1, -1}
    # a subclass of a narrowed machine keeps its parent's capacities
    narrowed = type("Narrowed", (FIFOQueueMachine,), {"capacities": (3,)})
    again = type("Again", (narrowed,), {})
    assert again.create_queue is not FIFOQueueMachine.create_queue


@pytest.mark.parametrize("value", [(), [1, "2"], 3, (True,)])
def test_bad_capacities_are_refused_when_the_subclass_is_defined(value):
    # BYO-2
    with pytest.raises(TypeError, match="capacities"):
        type("Bad", (FIFOQueueMachine,), {"capacities": value})
    with pytest.raises(TypeError, match="capacities"):
        type("Bad", (RandomShuffleQueueMachine,), {"capacities": (2, 0)})


def test_the_padding_machine_pads_batches_of_mixed_widths():
    # BYO-2, PAD-3, PAD-4: elements (i, [i + 1] * w); a batch comes back as padded columns
    with machine(stateful.PaddingFIFOQueueMachine) as state:
        state.create_queue(capacity=-1)
        for _ in range(3):
            state.step(QueueOp("enqueue"), Choices([]))  # widths 0, 1, 2
        state.step(QueueOp("enqueue_many", n=2), Choices([]))  # one width, 0
        state.step(QueueOp("dequeue"), Choices([]))
        assert state.decode(99, (1, [2])) == 1
        assert state.decode(99, (1, [2, 0])) == stateful.queues.Garbled("(1, [2, 0])")  # PAD-4
        state.step(QueueOp("dequeue_up_to", n=4), Choices([]))
        assert sorted(state.returned) == [0, 1, 2, 3, 4]
        state._batch_ops.add(99)
        assert state.decode(99, ([1, 2], [[2, 0], [3, 3]])) == [1, 2]
        assert isinstance(state.decode(99, ([1, 2], [[2], [3, 3]])), stateful.queues.Garbled)
        assert isinstance(state.decode(99, ([1, 2], [[2, 1], [3, 3]])), stateful.queues.Garbled)


# -- plain threading, no change (BYO-5) -------------------------------------------------------------


class ThreadingFIFOQueue(FIFOQueue):
    """coordkit's queue logic waiting on ``threading`` and ``time`` directly, not on coordkit.sync."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self._mutex = threading.Lock()

    def _await(self, attempt: Any, deadline: float | None) -> Any:
        if not attempt.done:
            finished = attempt.finished = threading.Condition(self._mutex)
            try:
                while not attempt.done:
                    if deadline is None:
                        finished.wait()
                        continue
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise DeadlineExceededError(_TIMED_OUT)
                    finished.wait(remaining)
            except BaseException:
                if not attempt.done:
                    self._withdraw(attempt)
                raise
        if attempt.error is not None:
            raise attempt.error
        return attempt.result


class PlainCoordinator:
    """A coordinator written from the protocol alone (BYO-3), on threading and time only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a stop, or a join's threads ended
        self._stopped = threading.Event()
        self._exc: BaseException | None = None
        self._joined = False
        self._threads: list[threading.Thread] = []

    @property
    def joined(self) -> bool:
        return self._joined

    def should_stop(self) -> bool:
        return self._stopped.is_set()

    def request_stop(self, ex: Any = None) -> None:
        handled = sys.exc_info()[1]
        value = ex[1] if isinstance(ex, tuple) else ex
        if isinstance(value, OutOfRangeError):
            value = None
        report = value if isinstance(ex, tuple) or handled is None else handled
        with self._lock:
            if self._joined and value is not None:
                raise report
            if self._stopped.is_set():
                return
            if value is not None and self._exc is None:
                self._exc = report
            self._stopped.set()
            self._changed.notify_all()

    def clear_stop(self) -> None:
        with self._lock:
            self._joined, self._exc = False, None
            self._stopped.clear()

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        return self._stopped.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            if thread not in self._threads:
                self._threads.append(thread)

    def raise_requested_exception(self) -> None:
        with self._lock:
            if self._exc is not None:
                raise self._exc

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        try:
            yield
        except BaseException:
            self.request_stop(sys.exc_info())

    def join(self, threads: Any = None, stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:
        with self._lock:
            snapshot = list(dict.fromkeys([*self._threads, *(threads or ())]))
        live = [t for t in snapshot if t.is_alive()]
        if live and not self._stopped.is_set():
            ended: list[bool] = []

            def watch() -> None:
                for t in live:
                    t.join()
                with self._lock:
                    ended.append(True)
                    self._changed.notify_all()

            threading.Thread(target=watch, daemon=True).start()
            with self._lock:
                while not ended and not self._stopped.is_set():
                    self._changed.wait()
        deadline = time.monotonic() + stop_grace_period_secs
        for t in snapshot:
            remaining = deadline - time.monotonic()
            if t.is_alive() and remaining > 0:
                t.join(remaining)
        stragglers = [t.name for t in snapshot if t.is_alive()]
        with self._lock:
            self._joined = True
            self._threads.clear()
            if self._exc is not None:
                raise self._exc
            if stragglers and not ignore_live_threads:
                raise RuntimeError("Coordinator stopped with threads still running: " + " ".join(stragglers))


class ThreadingQueueRunner(QueueRunner):
    """coordkit's runner logic with a ``threading.Lock``."""

    def __init__(self, queue: Any, enqueue_ops: Any) -> None:
        super().__init__(queue, enqueue_ops)
        self._lock = threading.Lock()


@pytest.mark.parametrize(
    ("base", "attribute", "value"),
    [
        (FIFOQueueMachine, "queue_factory", ThreadingFIFOQueue),
        (CoordinatorMachine, "coordinator_factory", PlainCoordinator),
        (QueueRunnerMachine, "runner_factory", ThreadingQueueRunner),
    ],
    ids=["queue", "coordinator", "runner"],
)
def test_plain_threading_implementations_work_unchanged(base, attribute, value):
    # BYO-5, BYO-2, BYO-3, BYO-4: objects created by the factory inside the harness are controlled
    bound = type(f"Plain{base.__name__}", (base,), {attribute: value})
    run_state_machine_as_test(bound, settings=QUICK)


def test_the_plain_coordinator_is_still_checked():
    # BYO-3: the same coordinator with COORD-4 broken is caught
    class Overwriting(PlainCoordinator):
        def request_stop(self, ex: Any = None) -> None:
            super().request_stop(ex)
            value = ex[1] if isinstance(ex, tuple) else ex
            if value is not None and not isinstance(value, OutOfRangeError) and not self._joined:
                self._exc = value  # the last report wins

    bound = type("Overwriting", (CoordinatorMachine,), {"coordinator_factory": Overwriting})
    with pytest.raises(StepFailure, match="the recorded exception is"):
        run_state_machine_as_test(bound, settings=settings(QUICK, max_examples=100, phases=[Phase.generate]))


def test_a_seeded_shuffle_queue_replays_the_same():
    # BYO-6: the default RandomShuffleQueue factory has a fixed seed, so a program repeats exactly
    def outcomes() -> list[Any]:
        with machine(RandomShuffleQueueMachine) as state:
            state.create_queue(capacity=-1, min_after_dequeue=0)
            state.step(QueueOp("enqueue_many", n=4), Choices([]))
            for _ in range(3):
                state.step(QueueOp("dequeue"), Choices([]))
            return sorted(state.returned.elements())

    assert outcomes() == outcomes() and len(outcomes()) == 3
    queue = RandomShuffleQueue(5, 0, seed=0)
    assert queue.dequeue_many(0) == []


# -- what a failure prints (MACH-5) -----------------------------------------------------------------


def test_a_failure_prints_a_program_that_runs_and_fails_again():
    # MACH-5: Hypothesis's program (with each step's schedule) plus the step's report
    bound = type("LaterWaiterMachine", (FIFOQueueMachine,), {"queue_factory": mutants.LaterWaiterServedFirst})
    quick_shrink = settings(QUICK, max_examples=100, stateful_step_count=8,
                            phases=[Phase.generate, Phase.shrink])
    with pytest.raises(StepFailure) as caught:
        run_state_machine_as_test(bound, settings=quick_shrink)
    message = str(caught.value)
    assert "the implementation broke the rules in step" in message
    assert "schedule of this step: Choices([" in message and "model after the step" in message
    program = "\n".join(getattr(caught.value, "__notes__", []))
    assert "state = LaterWaiterMachine()" in program and "state.teardown()" in program
    assert "state.step(choices=Choices([])" in program or "state.step(choices=context_switches([" in program
    lines = [line for line in program.splitlines() if line.startswith("state")]
    namespace: dict[str, Any] = {"LaterWaiterMachine": bound}
    exec("from coordkit.stateful import *", namespace)
    with pytest.raises(StepFailure):
        exec("\n".join(lines), namespace)  # the failing step also ends the harness


def test_a_broken_step_reports_the_disagreeing_operations():
    # MACH-2, MACH-3: a pending call that should have finished, and the observed state
    bound = type("NoWake", (FIFOQueueMachine,), {"queue_factory": mutants.CloseDoesNotWakeWaiters})
    with machine(bound) as state:
        state.create_queue(capacity=2)
        state.step(QueueOp("dequeue"), Choices([]))
        with pytest.raises(StepFailure) as caught:
            state.step(QueueOp("cancel_close"), Choices([]))
    assert "QueueOp('dequeue'): the model says it raises OutOfRangeError" in str(caught.value)
    assert "but it is still waiting" in str(caught.value)
    assert "threads waiting in the implementation: op1 QueueOp('dequeue')" in str(caught.value)


# -- rules the random search rarely reaches, checked directly -------------------------------------


def test_a_forgotten_timed_out_close_is_caught():
    # MACH-6, MODEL-3: Q-CLOSE-6 (and DEV-Q-7) through the machine, on a fixed program
    bound = type("ForgetsClose", (FIFOQueueMachine,), {"queue_factory": mutants.TimedOutCloseForgotten})
    with machine(bound) as state:
        state.create_queue(capacity=1)
        state.step(QueueOp("enqueue"), Choices([]))
        state.step(QueueOp("enqueue"), Choices([]))  # waits for room
        state.step(QueueOp("close", timeout=1), Choices([]))  # waits behind it
        with pytest.raises(StepFailure, match="pending_closes is 0, the model says 1"):
            state.step(Advance(1), Choices([]))


def test_deadlines_are_kept_apart():
    # MACH-6: two calls asked for the same timeout get deadlines 1/8 s apart
    with machine(FIFOQueueMachine) as state:
        state.create_queue(capacity=1)
        state.step(QueueOp("dequeue", timeout=1), Choices([]))
        state.step(QueueOp("dequeue", timeout=1), Choices([]))
        assert sorted(state.models[0].deadlines()) == [1.0, 1.125]
        state.step(Advance(2), Choices([]))
        assert state.harness.now == 1.125 and state.models[0].pending() == []


def test_a_new_queue_replaces_a_closed_idle_one():
    # MACH-7
    with machine(FIFOQueueMachine) as state:
        state.create_queue(capacity=1)
        old = state.queue
        state.step(stateful.NewQueue(), Choices([]))
        assert state.queue is old  # still open: nothing happens
        state.step(QueueOp("cancel_close"), Choices([]))
        state.step(stateful.NewQueue(), Choices([]))
        assert state.queue is not old and not state.models[0].closed


# -- races: found and shrunk (MACH-4, MACH-5) --------------------------------------------------------


def race_fails(bound: type, prefix: Any, race: Any, choices: Choices) -> bool:
    with machine(bound) as state:
        prefix(state)
        try:
            state.step(race, choices)
        except StepFailure:
            return True
        return False


@pytest.mark.parametrize(
    ("name", "base", "attribute", "factory", "prefix", "race"),
    [
        ("enqueuers overfill", FIFOQueueMachine, "queue_factory", mutants.RacyEnqueue,
         lambda s: s.create_queue(capacity=1), Contend("enqueue")),
        ("dequeuers share one element", FIFOQueueMachine, "queue_factory", mutants.RacyDequeue,
         lambda s: s.create_queue(capacity=2), Contend("dequeue")),
        ("a join misses the record", CoordinatorMachine, "coordinator_factory",
         mutants.StopVisibleBeforeRecord,
         lambda s: s.create_coordinator(), RaceStops([Stop("error")], join=Join())),
        ("two exits lose a count", QueueRunnerMachine, "runner_factory", mutants.RacyRunnerCount,
         lambda s: s.create_runner(capacity=2, ops=2, with_coordinator=False), InstructAll("exhausted")),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_a_race_inside_one_step_is_found_and_shrunk_to_one_switch(
    name, base, attribute, factory, prefix, race
):
    # MACH-4, MACH-5, MUT-3: only some interleavings of the racing calls break the rules;
    # Hypothesis finds one among the step's schedules and shrinks it to a single context switch
    bound = type("Racy", (base,), {attribute: factory})
    assert not race_fails(bound, prefix, race, Choices([]))  # no context switch: no bug
    smallest = find(SCHEDULES, lambda c: race_fails(bound, prefix, race, c),
                    settings=settings(max_examples=300, database=None, derandomize=True))
    assert sum(1 for v in smallest.values if v) == 1
    reference = type("Reference", (base,), {})
    assert not race_fails(reference, prefix, race, smallest)


def test_races_keep_every_order_the_implementation_may_have_taken():
    # MACH-4: two racing enqueues of a full queue leave two candidate orders until a dequeue decides
    with machine(FIFOQueueMachine) as state:
        state.create_queue(capacity=1)
        state.step(QueueOp("enqueue"), Choices([]))
        state.step(stateful.Race([QueueOp("enqueue"), QueueOp("enqueue")]), Choices([]))
        assert len(state.models) == 2
        for _ in range(3):
            state.step(QueueOp("dequeue"), Choices([]))
        assert len(state.models) == 1


def test_coordinator_stops_race_while_no_join_waits():
    # MACH-4: with a join waiting, racing stop requests run one after another
    with machine(CoordinatorMachine) as state:
        state.create_coordinator()
        state.step(StartWorker(until_stop=False, register=True), Choices([]))
        state.step(Join(), Choices([]))
        state.step(RaceStops([Stop("error"), Stop("plain")]), Choices([0, 1]))
        assert state.models[0].recorded is not None and len(state.models) == 1


def test_runner_threads_are_created_with_every_new_runner():
    # MACH-1: each runner life starts with its threads at their gates
    with machine(QueueRunnerMachine) as state:
        state.create_runner(capacity=1, ops=2, with_coordinator=True)
        assert state.models[0].at_gate() == [0, 1]
        state.step(CreateThreads(), Choices([]))  # refused: the first set still runs
        assert state.models[0].sets == 1


def test_import_coordkit_stateful_is_explicit():
    # MACH-1: ``import coordkit`` leaves Hypothesis alone; ``coordkit.stateful`` brings it
    code = ("import sys, coordkit; a = 'hypothesis' in sys.modules; import coordkit.stateful; "
            "print(a, 'hypothesis' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]

