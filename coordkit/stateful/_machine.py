"""What every coordkit state machine shares: a Harness per example, candidate models, checks.

A machine drives the implementation inside one ``coordkit.Harness`` (MACH-1):
each rule starts operations in controlled threads, lets the world settle
under the rule's ``choices`` (MACH-5), and then checks every operation and the
observable state against the model (MACH-2, MACH-3).

When several operations race in one rule, the implementation may have
ordered them any way.  The machine therefore keeps a small set of candidate
models: after a step, each candidate is advanced by the step's operations in
every order, and only the results that agree with what was observed survive
(MACH-4).  A single operation has one order, so most steps keep one candidate.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine
from hypothesis.strategies import SearchStrategy

from coordkit.engine.harness import Harness, Operation
from coordkit.engine.trace import Choices
from coordkit.errors import StepFailure
from coordkit.models import Err, Ok, Outcome
from coordkit.strategies import schedules

__all__ = [
    "SCHEDULES",
    "Advance",
    "Model",
    "ModelMachine",
    "StepFailure",
    "TimedModel",
    "factory",
    "weighted",
]

# The interleaving of one rule: a few context switches among the threads it
# started or woke.  A rule has few choice points, so switches come early.
SCHEDULES = schedules(max_switches=3, max_gap=8)



class Model(Protocol):
    """What the machine needs of a model (MODEL-1, MODEL-2)."""

    results: dict[Hashable, Outcome]

    def copy(self) -> Any: ...

    def key(self) -> Hashable: ...

    def describe(self) -> str: ...


class TimedModel(Model, Protocol):
    """A model with virtual time (MODEL-4)."""

    now: float

    def deadlines(self) -> list[float]: ...

    def advance(self, seconds: float) -> None: ...


M = TypeVar("M", bound=Model)


def weighted(*parts: tuple[int, Callable[[], SearchStrategy[Any]]]) -> SearchStrategy[Any]:
    """``one_of`` whose branches are drawn in proportion to their weights.

    Each part is ``(weight, make)``; ``make()`` is called ``weight`` times,
    because ``one_of`` keeps only one copy of a strategy object it is given
    several times.  Shrinking goes towards the first part.
    """
    return st.one_of(*[make() for weight, make in parts for _ in range(weight)])


@dataclass(frozen=True)
class Advance:
    """A step that lets virtual time pass up to the ``n``-th earliest deadline of a waiting call.

    Every call due by then times out, in deadline order.  ``n=0`` goes half
    way to the earliest deadline, so nothing may time out; with no deadline
    pending, one second passes.  Counting deadlines rather than seconds means
    a step spent on time is rarely wasted.
    """

    n: int = 1

    def __repr__(self) -> str:
        return f"Advance({self.n})"


def factory(machine: Any, name: str) -> Callable[..., Any]:
    """The callable bound to ``name`` on the machine's class, however it was set (BYO-1).

    A class, a function, a lambda or a ``staticmethod`` all work: a plain
    function stored as a class attribute is *not* turned into a method.
    """
    for klass in type(machine).__mro__:
        if name in vars(klass):
            value = vars(klass)[name]
            if isinstance(value, (staticmethod, classmethod)):
                return value.__get__(None, type(machine))
            if value is None:
                break
            return value  # type: ignore[no-any-return]
    raise TypeError(
        f"{type(machine).__name__}.{name} is not set: subclass the machine and set "
        f"{name} = YourClass (or a function), then TestYours = YourMachine.TestCase"
    )


class _Tracked:
    """One operation the machine started and has not seen finish yet."""

    __slots__ = ("key", "label", "operation")

    def __init__(self, key: int, label: str, operation: Operation) -> None:
        self.key = key
        self.label = label
        self.operation = operation


def describe_actual(outcome: tuple[Any, ...]) -> str:
    if outcome[0] == "pending":
        return "is still waiting"
    if outcome[0] == "ok":
        return f"returned {outcome[1]!r}"
    return f"raised {outcome[1]!r}"


class ModelMachine(RuleBasedStateMachine, Generic[M]):
    """Base class: a Harness per example, tracked operations, candidate models.

    Subclasses create ``self.models = [model]`` in an ``@initialize`` rule and
    implement ``observe`` (read the implementation's state after a step) and
    ``state_problems`` (compare it with one candidate).
    """

    # Most candidate models a step may leave (after deduplication): each machine
    # bounds its races so that this is never exceeded, and dropping one could
    # drop the order that really happened.
    max_candidates = 24

    def __init__(self) -> None:
        super().__init__()
        self.harness = Harness(max_steps_per_call=20_000, run_timeout=30.0)
        self.harness.open()
        self.models: list[M] = []
        self._tracked: dict[int, _Tracked] = {}
        self._next_key = 0

    def teardown(self) -> None:
        self.harness.close()

    # -- hooks for subclasses -------------------------------------------------------------

    def observe(self) -> Any:
        """Read the implementation's observable state (runs inside the harness)."""
        return None

    def state_problems(self, model: M, observed: Any) -> list[str]:
        """How ``observed`` differs from what ``model`` says; empty if it agrees."""
        return []

    def picks(self, model: M, values: dict[int, Any]) -> None:
        """Hand the values the implementation returned to a model that needs them (MODEL-5)."""

    def same_value(self, key: int, expected: Any, actual: Any) -> bool:
        """Whether operation ``key`` returned what the model expects."""
        return bool(expected == actual)

    def same_error(self, expected: Err, actual: BaseException) -> bool:
        """Whether ``actual`` is the exception the model expects: the very object when
        the model names one (COORD-17), else an instance of its type."""
        if expected.exc is not None:
            return actual is expected.exc
        return isinstance(actual, expected.type)

    # -- running operations ---------------------------------------------------------------

    def can_race(self, count: int) -> bool:
        """Whether ``count`` operations may race now: every candidate times every order
        of them stays within ``max_candidates`` (MACH-4)."""
        return len(self.models) * math.factorial(count) <= self.max_candidates

    def new_key(self) -> int:
        self._next_key += 1
        return self._next_key

    def spawn_op(self, key: int, label: str, fn: Callable[[], Any]) -> Operation:
        """Create the controlled thread of an operation; it runs at the next settle (HARN-5)."""
        operation = self.harness.spawn(fn, f"op{key} {label}")
        self._tracked[key] = _Tracked(key, label, operation)
        return operation

    def run_call(self, fn: Callable[[], Any]) -> Any:
        """Run a call that must not block (setup and reads) in a controlled thread."""
        return self.harness.run(fn)

    def settle_world(self, choices: Choices | None) -> None:
        """Let every runnable thread run until all are parked or done (HARN-2)."""
        self.harness.settle(choices)

    def pass_time(self, seconds: float, choices: Choices | None) -> None:
        """Let virtual time pass; due timeouts fire in order (HARN-3)."""
        self.harness.advance(seconds, choices)

    def advance(self, step: Advance, choices: Choices | None) -> None:
        """Let time pass as ``step`` says, in the implementation and in every candidate (HARN-3)."""
        model: TimedModel = self.models[0]  # type: ignore[assignment]
        deadlines = sorted(model.deadlines())
        now = model.now
        if not deadlines:
            seconds = 1.0
        elif step.n == 0:
            seconds = (deadlines[0] - now) / 2
        else:
            seconds = deadlines[min(step.n, len(deadlines)) - 1] - now
        self.pass_time(seconds, choices)
        self.check_step(f"{step!r}", [(f"{seconds:g} seconds pass",
                                       lambda m: m.advance(seconds))], choices)  # type: ignore[attr-defined]

    def check_step(
        self,
        step: str,
        events: Sequence[tuple[str, Callable[[M], Any]]],
        choices: Choices | None = None,
    ) -> None:
        """Compare the implementation, now settled, with the candidates advanced by ``events``.

        ``events`` are (label, apply) pairs, one per operation of the step;
        when there are several, every order is tried (MACH-4).
        """
        observed = self.observe()
        outcomes = {key: t.operation.outcome for key, t in self._tracked.items()}
        values = {key: o[1] for key, o in outcomes.items() if o[0] == "ok"}
        orders = list(itertools.permutations(events)) if len(events) > 1 else [tuple(events)]
        survivors: list[M] = []
        seen: set[Any] = set()
        first_problems: list[str] | None = None
        first_model: M | None = None
        # One candidate and one order (most steps): advance the model in place.
        in_place = len(self.models) == 1 and len(orders) == 1
        for model in self.models:
            for order in orders:
                candidate = model if in_place else model.copy()
                self.picks(candidate, values)
                for _, apply in order:
                    apply(candidate)
                problems = self._operation_problems(candidate, outcomes)
                problems += self.state_problems(candidate, observed)
                if not problems:
                    key = candidate.key()
                    if key not in seen:
                        seen.add(key)
                        survivors.append(candidate)
                elif first_problems is None:
                    first_problems, first_model = problems, candidate
        if not survivors:
            report = self._report(step, events, choices, first_problems or [], first_model)
            # A pasted failing program stops here, before its ``state.teardown()``:
            # end the world now (closing twice is harmless).
            self.harness.close()
            raise StepFailure(report)
        if len(survivors) > self.max_candidates:  # a machine bug: its races must be bounded
            raise RuntimeError(f"{len(survivors)} candidate models; limit the races that create them")
        self.models = survivors
        # Finished operations agree with every survivor: stop tracking them.
        for key, outcome in outcomes.items():
            if outcome[0] != "pending":
                del self._tracked[key]
                for model in self.models:
                    model.results.pop(key, None)

    def _operation_problems(self, model: M, outcomes: dict[int, tuple[Any, ...]]) -> list[str]:
        results = model.results
        problems = []
        for key, actual in outcomes.items():
            expected = results.get(key)
            label = f"op{key} {self._tracked[key].label}"
            if expected is None:
                if actual[0] != "pending":
                    problems.append(f"{label}: the model says it waits, but it {describe_actual(actual)}")
            elif actual[0] == "pending":
                problems.append(f"{label}: the model says it {expected}, but it is still waiting")
            elif isinstance(expected, Ok):
                if actual[0] != "ok" or not self.same_value(key, expected.value, actual[1]):
                    problems.append(
                        f"{label}: the model says it {expected}, but it {describe_actual(actual)}")
            elif actual[0] != "error" or not self.same_error(expected, actual[1]):
                problems.append(f"{label}: the model says it {expected}, but it {describe_actual(actual)}")
        return problems

    def _report(self, step: str, events: Sequence[tuple[str, Any]], choices: Choices | None,
                problems: list[str], model: M | None) -> str:
        lines = [f"{type(self).__name__}: the implementation broke the rules in step {step}"]
        if len(events) > 1:
            lines.append("  racing operations: " + ", ".join(label for label, _ in events)
                         + " (no order of them explains what happened; shown: the first order tried)")
        lines += [f"  - {p}" for p in problems]
        if model is not None:
            lines.append(f"  model after the step: {model.describe()}")
        waiting = self.harness.pending()
        if waiting:
            lines.append("  threads waiting in the implementation: " + "; ".join(waiting))
        lines.append(f"  schedule of this step: {choices!r}")
        return "\n".join(lines)

    def thread_deaths(self) -> list[tuple[str, BaseException]]:
        """Every exception that ended a thread of this example so far (HARN-4)."""
        return self.harness.thread_exceptions
