"""A state machine for QueueRunner: each runner thread's life, and who closes the queue.

The machine builds a queue, optionally a coordinator, and a runner whose
enqueue ops it controls: each op waits at a gate until a rule tells it what
to do on this call (enqueue an element, raise the queue-closed exception,
raise an error, or raise a ``BaseException``).  Other rules consume from the
queue, close it from outside, request a stop, and create threads again.
After every rule the machine compares the runner's threads (alive or not,
how they died), ``exceptions_raised``, the queue and the coordinator with
``coordkit.stateful.models.RunnerModel``.

Bind your own runner::

    class MyRunnerMachine(QueueRunnerMachine):
        runner_factory = MyQueueRunner   # runner_factory(queue, enqueue_ops)

    TestMyRunner = MyRunnerMachine.TestCase
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from coordkit.coordinator import Coordinator
from coordkit.engine.trace import Choices
from coordkit.models import CoordinatorModel, Err, QueueModel, RunnerModel, StopReason
from coordkit.queue_runner import QueueRunner
from coordkit.queues import FIFOQueue
from coordkit.stateful._machine import SCHEDULES, ModelMachine, factory, weighted
from coordkit.stateful.coordinator import Exhausted, Reported

__all__ = [
    "CloseQueue",
    "Consume",
    "CreateThreads",
    "Instruct",
    "InstructAll",
    "Interrupted",
    "NewRunner",
    "QueueRunnerMachine",
    "RequestStop",
]

_ACTIONS = ("enqueue", "exhausted", "error", "interrupt")


class Interrupted(BaseException):
    """A ``BaseException`` an enqueue op raises: not reported, not kept (RUNNER-10)."""


@dataclass(frozen=True)
class CreateThreads:
    """``create_threads(coord, daemon=True, start=True)`` (RUNNER-2, RUNNER-3, RUNNER-OLD-2)."""


@dataclass(frozen=True)
class Instruct:
    """The op waiting at its gate (chosen by ``which`` among them) does ``action`` on this
    call: ``enqueue`` a new element, raise the queue-closed exception (``exhausted``),
    raise a ``Reported`` (``error``) or raise an ``Interrupted`` (``interrupt``)."""

    which: int = 0
    action: str = "enqueue"


@dataclass(frozen=True)
class Consume:
    """A consumer calls ``queue.dequeue()`` (it may wait)."""


@dataclass(frozen=True)
class CloseQueue:
    """Someone else closes the fed queue (RUNNER-7c)."""

    cancel_pending_enqueues: bool = False


@dataclass(frozen=True)
class RequestStop:
    """``coord.request_stop()``, with a ``Reported`` when ``error`` (RUNNER-5)."""

    error: bool = False


@dataclass(frozen=True)
class InstructAll:
    """Every op waiting at its gate does ``action`` at once; any order is allowed (MACH-4)."""

    action: str = "enqueue"


@dataclass(frozen=True)
class NewRunner:
    """Once every op thread of the runner has ended, start over with a new queue,
    coordinator and runner built as before, and create its threads; otherwise
    nothing happens."""

    def __repr__(self) -> str:
        return "NewRunner()"


# One rule for every kind of step (see queues.py: swarm testing switches rules
# off).  Ops are told what to do far more often than the queue is closed or a
# stop is requested, and most instructions enqueue, so threads spend a while
# feeding the queue, which consumers keep from staying full; then
# ``NewRunner`` starts another life.
_WEIGHTED_ACTIONS = ["enqueue"] * 6 + ["exhausted", "error", "interrupt"]
STEPS = weighted(
    (2, lambda: st.just(CreateThreads())),
    (8, lambda: st.builds(Instruct, st.integers(0, 2), st.sampled_from(_WEIGHTED_ACTIONS))),
    (4, lambda: st.builds(InstructAll, st.sampled_from(["exhausted", "enqueue", "exhausted", "error"]))),
    (4, lambda: st.just(Consume())),
    (1, lambda: st.builds(CloseQueue, st.booleans())),
    (1, lambda: st.builds(RequestStop, st.booleans())),
    (2, lambda: st.just(NewRunner())),
)


class QueueRunnerMachine(ModelMachine[RunnerModel]):
    """Checks a queue runner against ``RunnerModel`` (RUNNER-2..7, RUNNER-10, RUNNER-OLD-2).

    ``runner_factory(queue, enqueue_ops)`` must return a runner (BYO-4) that
    uses ``queue.close()`` as its close op,
    ``queue.close(cancel_pending_enqueues=True)`` as its cancel op and
    ``(OutOfRangeError,)`` as its queue-closed exception types, with
    ``create_threads(coord=None, daemon=False, start=False)`` returning the
    threads (one per op in op order, then the close-on-stop thread when there
    is a coordinator) and ``exceptions_raised``; an optional
    ``statistics().running_threads`` is checked too.  The queue comes from
    ``queue_factory(capacity)`` and the coordinator from
    ``coordinator_factory()`` (coordkit's by default).
    """

    runner_factory: Callable[..., Any] | None = QueueRunner
    queue_factory: Callable[..., Any] | None = FIFOQueue
    coordinator_factory: Callable[[], Any] | None = Coordinator

    def __init__(self) -> None:
        super().__init__()
        self.queue: Any = None
        self.coord: Any = None
        self.runner: Any = None
        self._actions: list[list[tuple[str, Any]]] = []
        self._gates: list[Any] = []
        self._threads: dict[Any, Any] = {}  # model key -> thread object
        self._deaths_before = 0
        self._create_ops: set[int] = set()
        self._made: list[BaseException] = []  # exceptions made by the machine (kept alive)
        self._elements = itertools.count()
        self._tags = itertools.count(1)

    @initialize(capacity=st.sampled_from([2, 1, 3]), ops=st.integers(1, 3), with_coordinator=st.booleans())
    def create_runner(self, capacity: int, ops: int, with_coordinator: bool) -> None:
        """A queue, an optional coordinator and a runner of ``ops`` controlled ops, whose
        threads are created and started at once (MACH-1)."""
        self._params = (capacity, ops, with_coordinator)
        self._fresh_runner()

    def _fresh_runner(self) -> None:
        capacity, ops, with_coordinator = self._params
        self.queue = self.run_call(lambda: factory(self, "queue_factory")(capacity))
        self.coord = self.run_call(factory(self, "coordinator_factory")) if with_coordinator else None
        self._gates = [self.run_call(lambda: threading.Semaphore(0)) for _ in range(ops)]
        self._actions = [[] for _ in range(ops)]
        enqueue_ops = [self._op(i) for i in range(ops)]
        make = factory(self, "runner_factory")
        self.runner = self.run_call(lambda: make(self.queue, enqueue_ops))
        self._threads = {}
        self._deaths_before = len(self.thread_deaths())
        coord = CoordinatorModel() if with_coordinator else None
        self.models = [RunnerModel(QueueModel(capacity), ops, coord)]
        self._on_createthreads(CreateThreads(), None)

    def _op(self, i: int) -> Callable[[], None]:
        gate, actions, queue = self._gates[i], self._actions[i], self.queue

        def op() -> None:
            gate.acquire()
            what, value = actions.pop(0)
            if what == "enqueue":
                queue.enqueue(value)
            else:
                raise value

        op.__name__ = f"op{i}"
        return op

    # -- rules --------------------------------------------------------------------------

    @rule(op=STEPS, choices=SCHEDULES)
    def step(self, op: Any, choices: Choices) -> None:
        """One step: create threads, instruct one op or all at once, consume, close the
        queue, request a stop, or start over (MACH-2).

        A step that does not apply (no op waits at its gate, no coordinator) does nothing.
        """
        getattr(self, f"_on_{type(op).__name__.lower()}")(op, choices)

    def _on_instructall(self, op: InstructAll, choices: Choices) -> None:
        if not self.can_race(len(self._at_gate())):
            for i in self._at_gate():
                if i in self._at_gate():
                    self._instruct_op(i, op.action, choices)
            return
        events = []
        for i in self._at_gate():
            events.append(self._instruct(i, op.action))
            self.harness.spawn(self._gates[i].release, f"release op{i}")
        if events:
            self.settle_world(choices)
            self.check_step(f"{op!r}", events, choices)

    def _on_newrunner(self, op: NewRunner, choices: Choices) -> None:
        if any(model.running for model in self.models):
            return
        # Consumers still waiting on the old queue wait for ever, in the
        # implementation and (having no entry) in the model alike.
        self._fresh_runner()

    def _on_createthreads(self, op: CreateThreads, choices: Choices | None) -> None:
        key = self.new_key()
        runner, coord = self.runner, self.coord
        self._create_ops.add(key)
        call = self.spawn_op(key, "create_threads()",
                             lambda: runner.create_threads(coord, daemon=True, start=True))
        self.settle_world(choices)
        self.check_step("create_threads()", [("create", lambda m: m.create_threads(key))], choices)
        if call.outcome[0] == "ok":
            model = self.models[0]
            keys = [t.key for t in model.threads if t.key[0] == model.sets]
            self._threads.update(zip(keys, call.result()))

    def _at_gate(self) -> list[int]:
        common = set(self.models[0].at_gate()) if self.models else set()
        for model in self.models[1:]:
            common &= set(model.at_gate())
        return sorted(common)

    def _on_instruct(self, op: Instruct, choices: Choices) -> None:
        gate = self._at_gate()
        if not gate:
            return
        self._instruct_op(gate[op.which % len(gate)], op.action, choices)

    def _instruct_op(self, i: int, action: str, choices: Choices) -> None:
        event = self._instruct(i, action)
        self.harness.start(self._gates[i].release, f"release op{i}", choices)
        self.check_step(f"instruct(op{i}, {action!r})", [event], choices)

    def _instruct(self, i: int, action: str) -> tuple[str, Callable[[RunnerModel], Any]]:
        if action == "enqueue":
            x = next(self._elements)
            self._actions[i].append(("enqueue", x))
            return f"op{i} enqueues {x}", lambda m: m.instruct_enqueue(i, x)
        kind = {"exhausted": Exhausted, "error": Reported, "interrupt": Interrupted}[action]
        exc = kind(f"e{next(self._tags)}")
        self._made.append(exc)
        self._actions[i].append(("raise", exc))
        return f"op{i} raises {exc!r}", lambda m: m.instruct_raise(i, exc)

    def _on_consume(self, op: Consume, choices: Choices) -> None:
        key = self.new_key()
        self.spawn_op(key, "dequeue()", self.queue.dequeue)
        self.settle_world(choices)
        self.check_step("consume()", [("dequeue", lambda m: m.consume(key))], choices)

    def _on_closequeue(self, op: CloseQueue, choices: Choices) -> None:
        key = self.new_key()
        queue, cancel = self.queue, op.cancel_pending_enqueues
        self.spawn_op(key, f"close({cancel})", lambda: queue.close(cancel_pending_enqueues=cancel))
        self.settle_world(choices)
        self.check_step(f"{op!r}", [("close", lambda m: m.close_queue(key, cancel))], choices)

    def _on_requeststop(self, op: RequestStop, choices: Choices) -> None:
        if self.coord is None:
            return
        key = self.new_key()
        coord = self.coord
        exc = Reported(f"e{next(self._tags)}") if op.error else None
        if exc is not None:
            self._made.append(exc)
        self.spawn_op(key, f"request_stop({exc!r})", lambda: coord.request_stop(exc))
        self.settle_world(choices)
        self.check_step(f"request_stop({exc!r})", [
            ("stop", lambda m: m.request_stop(key, StopReason(exc)))], choices)

    # -- comparing ----------------------------------------------------------------------------

    def _mine(self, exc: BaseException) -> bool:
        return any(exc is made for made in self._made)

    def _describe(self, exc: BaseException | None) -> Any:
        """Exceptions the machine made compare by identity; the queue's by type."""
        if exc is None:
            return None
        return ("is", id(exc)) if self._mine(exc) else ("type", type(exc).__name__)

    def same_value(self, key: int, expected: Any, actual: Any) -> bool:
        if key in self._create_ops:  # the threads: as many as the model's, in that order
            return isinstance(actual, (list, tuple)) and len(actual) == len(expected)
        return super().same_value(key, expected, actual)

    def same_error(self, expected: Err, actual: BaseException) -> bool:
        if expected.exc is not None and not self._mine(expected.exc):
            return isinstance(actual, expected.type)
        return super().same_error(expected, actual)

    def observe(self) -> Any:
        queue, coord, runner = self.queue, self.coord, self.runner
        threads = dict(self._threads)

        def read() -> dict[str, Any]:
            seen: dict[str, Any] = {"size": queue.size(), "closed": queue.is_closed()}
            stats = getattr(runner, "statistics", None)
            seen["running"] = stats().running_threads if callable(stats) else None
            seen["raised"] = list(runner.exceptions_raised)
            seen["alive"] = {key: t.is_alive() for key, t in threads.items()}
            if coord is not None:
                seen["stop"] = coord.should_stop()
                try:
                    coord.raise_requested_exception()
                    seen["record"] = None
                except BaseException as exc:  # the recorded exception
                    seen["record"] = exc
            return seen

        seen = self.run_call(read)
        seen["deaths"] = [exc for _, exc in self.thread_deaths()[self._deaths_before:]]
        return seen

    def state_problems(self, model: RunnerModel, seen: Any) -> list[str]:
        problems = []
        if seen["size"] != model.queue.size():
            problems.append(f"queue size() is {seen['size']}, the model says {model.queue.size()}")
        if seen["closed"] != model.queue.closed:
            problems.append(f"queue is_closed() is {seen['closed']}, the model says {model.queue.closed}")
        if seen["running"] is not None and seen["running"] != model.running:
            problems.append(f"running threads: {seen['running']}, the model says {model.running}")
        raised = Counter(self._describe(e) for e in seen["raised"])
        if raised != Counter(self._describe(e) for e in model.exceptions_raised):
            problems.append(
                f"exceptions_raised is {seen['raised']}, the model says {model.exceptions_raised}")
        expected_alive = model.alive()
        for key, alive in seen["alive"].items():
            if alive != expected_alive.get(key):
                problems.append(f"thread {key} is {'alive' if alive else 'ended'}, "
                                f"the model says {'alive' if expected_alive.get(key) else 'ended'}")
        deaths = Counter(self._describe(e) for e in seen["deaths"])
        if deaths != Counter(self._describe(e) for _, e in model.died):
            problems.append(f"threads died of {seen['deaths']}, the model says {[e for _, e in model.died]}")
        if model.coord is not None:
            if seen["stop"] != model.coord.stop:
                problems.append(f"should_stop() is {seen['stop']}, the model says {model.coord.stop}")
            if self._describe(seen["record"]) != self._describe(model.coord.recorded):
                problems.append(f"the recorded exception is {seen['record']!r}, "
                                f"the model says {model.coord.recorded!r}")
        return problems
