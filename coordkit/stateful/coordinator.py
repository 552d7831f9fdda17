"""A state machine for the Coordinator's stop, exception and join rules.

The machine creates one coordinator inside a ``coordkit.Harness`` and a
handful of worker threads: *stubborn* workers end only when a rule tells them
to (normally, or by raising inside ``coord.stop_on_exception()``), and
*stop-aware* workers run ``coord.wait_for_stop()`` and end with the stop.
Rules request stops with and without exceptions (alone or racing each
other), clear the stop, join with a grace period, wait for the stop and let
virtual time pass.  After every rule each call is compared with
``coordkit.stateful.models.CoordinatorModel``, and so are ``should_stop()``,
``joined``, the recorded exception, the registered threads, which workers are
alive and which died of an exception.

Bind your own coordinator::

    class MyCoordinatorMachine(CoordinatorMachine):
        coordinator_factory = MyCoordinator

    TestMyCoordinator = MyCoordinatorMachine.TestCase
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from coordkit.coordinator import Coordinator
from coordkit.engine.trace import Choices
from coordkit.errors import OutOfRangeError
from coordkit.models import CoordinatorModel, Err, StopReason
from coordkit.stateful._machine import SCHEDULES, Advance, ModelMachine, factory, weighted

__all__ = [
    "ClearStop",
    "CoordinatorMachine",
    "EndWorker",
    "Exhausted",
    "Handled",
    "Join",
    "RaceStops",
    "RaiseRequested",
    "RegisterWorker",
    "Reported",
    "StartWorker",
    "Stop",
    "WaitForStop",
]

_STOP_KINDS = ("plain", "error", "clean", "triple", "handled", "handled_clean")


class Reported(RuntimeError):
    """An error a rule reports to the coordinator (compared by identity)."""


class Handled(RuntimeError):
    """The error being handled where a rule calls ``request_stop`` (COORD-5)."""


class Exhausted(OutOfRangeError):
    """A clean-stop exception: a subclass of the default clean type (COORD-3)."""


@dataclass(frozen=True)
class Stop:
    """One ``request_stop`` call, as a rule argument.

    ``plain``: ``request_stop()``; ``error``: ``request_stop(Reported(...))``;
    ``clean``: ``request_stop(Exhausted(...))``; ``triple``: a
    ``sys.exc_info()`` triple of a ``Reported``; ``handled``: passes a
    ``Reported`` from inside ``except Handled``; ``handled_clean``: passes an
    ``Exhausted`` from inside ``except Handled``.
    """

    kind: str = "plain"

    def __post_init__(self) -> None:
        if self.kind not in _STOP_KINDS:
            raise ValueError(f"Stop kind must be one of {_STOP_KINDS}, got {self.kind!r}")

    def __repr__(self) -> str:
        return f"Stop({self.kind!r})"


@dataclass(frozen=True)
class StartWorker:
    """Start worker ``worker-<i>``: stop-aware (``until_stop``) or stubborn; registered or not."""

    until_stop: bool = False
    register: bool = True


@dataclass(frozen=True)
class EndWorker:
    """Let a live stubborn worker end (chosen by ``which`` among them): normally, or with
    ``fail`` by raising a ``Reported`` inside ``stop_on_exception()`` (COORD-9)."""

    which: int = 0
    fail: bool = False


@dataclass(frozen=True)
class RegisterWorker:
    """``register_thread`` an existing worker (chosen by ``which``), alive or not (COORD-11)."""

    which: int = 0


@dataclass(frozen=True)
class ClearStop:
    """``clear_stop()`` (COORD-8)."""


@dataclass(frozen=True)
class RaiseRequested:
    """``raise_requested_exception()`` (COORD-16)."""


@dataclass(frozen=True)
class WaitForStop:
    """``wait_for_stop(timeout)`` (COORD-10)."""

    timeout: float | None = None


@dataclass(frozen=True)
class Join:
    """``join(threads, stop_grace_period_secs=grace, ignore_live_threads=...)`` where
    ``threads`` is None, ``"all"`` (every worker) or ``"first"`` (worker-0).

    The grace period is never 0: a stop-aware worker would race the check.
    """

    threads: str | None = None
    grace: float = 1
    ignore_live_threads: bool = False


@dataclass(frozen=True)
class RaceStops:
    """Several stop requests, and optionally a ``join``, started at once (MACH-4).

    While a join started earlier still waits they run one after another
    instead: a join woken by the first stop may finish between two requests,
    which no order of the requests describes.  So they do when there would be
    too many candidate models (``can_race``).
    """

    stops: tuple[Stop, ...]
    join: Join | None = None

    def __init__(self, stops: Any, join: Join | None = None) -> None:
        object.__setattr__(self, "stops", tuple(stops))
        object.__setattr__(self, "join", join)

    def __repr__(self) -> str:
        return f"RaceStops({list(self.stops)!r}" + (f", join={self.join!r})" if self.join else ")")


STOPS = st.sampled_from([Stop(kind) for kind in _STOP_KINDS])
_WHICH = st.integers(0, 3)


def _joins() -> st.SearchStrategy[Join]:
    return st.builds(Join, st.sampled_from([None, "all", "first"]), st.sampled_from([1, 4]), st.booleans())


# One rule for every kind of step (see queues.py: swarm testing switches rules
# off).  ``clear_stop`` comes about as often as a stop request, so that an
# example goes through several stop-join-clear cycles.
STEPS = weighted(
    (3, lambda: STOPS),
    (3, lambda: st.builds(StartWorker, st.booleans(), st.booleans())),
    (2, lambda: st.builds(EndWorker, _WHICH, st.booleans())),
    (2, _joins),
    (2, lambda: st.builds(Advance, st.sampled_from([1, 0, 2]))),
    (2, lambda: st.just(ClearStop())),
    (1, lambda: st.builds(RegisterWorker, _WHICH)),
    (1, lambda: st.just(RaiseRequested())),
    (1, lambda: st.builds(WaitForStop, st.sampled_from([None, 0, 1, 2.5]))),
    (3, lambda: st.builds(RaceStops, st.lists(STOPS, min_size=1, max_size=3), _joins())),
    (1, lambda: st.builds(RaceStops, st.lists(STOPS, min_size=2, max_size=3), st.none())),
)


class CoordinatorMachine(ModelMachine[CoordinatorModel]):
    """Checks a coordinator against ``CoordinatorModel`` (COORD-2..17).

    ``coordinator_factory()`` must return a new coordinator whose clean-stop
    types are TensorFlow's default, ``(OutOfRangeError,)`` (BYO-3), with:
    ``request_stop(ex=None)`` (an exception, a ``sys.exc_info()`` triple or
    None), ``clear_stop()``, ``should_stop()``, ``wait_for_stop(timeout=None)``,
    ``register_thread(t)``, ``join(threads=None, stop_grace_period_secs=...,
    ignore_live_threads=False)``, ``raise_requested_exception()``,
    ``stop_on_exception()`` and a ``joined`` attribute.  An optional
    ``statistics()`` with ``registered_threads`` and ``exc_info`` is checked
    too.  ``join`` must report stragglers in a RuntimeError whose message
    names them (the workers are called ``worker-<i>``).
    """

    coordinator_factory: Callable[[], Any] | None = Coordinator

    def __init__(self) -> None:
        super().__init__()
        self.coord: Any = None
        self.workers: list[Any] = []
        self.stubborn: list[bool] = []
        self._gates: list[Any] = []
        self._fail: dict[int, BaseException] = {}
        self._tags = 0

    @initialize()
    def create_coordinator(self) -> None:
        """A coordinator created inside the harness (MACH-1)."""
        make = factory(self, "coordinator_factory")
        self.coord = self.run_call(make)
        self.models = [CoordinatorModel()]

    # -- rules -------------------------------------------------------------------------

    @rule(op=STEPS, choices=SCHEDULES)
    def step(self, op: Any, choices: Choices) -> None:
        """One step: a coordinator call in a new controlled thread (it may stay waiting),
        a worker starting, ending or being registered, or time passing (MACH-2)."""
        getattr(self, f"_on_{type(op).__name__.lower()}")(op, choices)

    def _on_racestops(self, op: RaceStops, choices: Choices) -> None:
        count = len(op.stops) + (op.join is not None)
        if any(m.joins for m in self.models) or not self.can_race(count):
            for stop in op.stops:
                self._on_stop(stop, choices)
            if op.join is not None:
                self._on_join(op.join, choices)
            return
        events = [self._stop_event(stop) for stop in op.stops]
        if op.join is not None:
            events.append(self._join_event(op.join))
        self.settle_world(choices)
        self.check_step(f"{op!r}", events, choices)

    # -- workers --------------------------------------------------------------------------

    def _on_startworker(self, op: StartWorker, choices: Choices) -> None:
        i = len(self.workers)
        coord, until_stop, register = self.coord, op.until_stop, op.register
        gate = self.run_call(threading.Event)

        def stubborn() -> None:
            with coord.stop_on_exception():
                gate.wait()
                if i in self._fail:
                    raise self._fail[i]

        def make() -> Any:
            t = threading.Thread(target=coord.wait_for_stop if until_stop else stubborn,
                                 name=f"worker-{i}", daemon=True)
            if register:
                coord.register_thread(t)
            t.start()
            return t

        self.workers.append(self.run_call(make))
        self.stubborn.append(not until_stop)
        self._gates.append(gate)
        self.check_step(f"{op!r} as worker-{i}", [
            ("start", lambda m: m.thread_started(i, register=register, until_stop=until_stop))])

    def _live_stubborn(self) -> list[int]:
        live = [i for i, s in enumerate(self.stubborn) if s]
        for model in self.models:
            live = [i for i in live if model.alive.get(i)]
        return live

    def _on_endworker(self, op: EndWorker, choices: Choices) -> None:
        live = self._live_stubborn()
        if not live:
            return  # nothing to end
        i = live[op.which % len(live)]
        if op.fail:
            exc = self._fail[i] = self._exception(Reported)
            event = ("fail", lambda m: m.thread_failed(i, exc))
        else:
            event = ("end", lambda m: m.thread_ended(i))
        self.harness.start(self._gates[i].set, f"release worker-{i}", choices)
        self.check_step(f"{op!r}: worker-{i}", [event], choices)

    def _on_registerworker(self, op: RegisterWorker, choices: Choices) -> None:
        if not self.workers:
            return
        i = op.which % len(self.workers)
        t, coord = self.workers[i], self.coord
        self.run_call(lambda: coord.register_thread(t))
        self.check_step(f"{op!r}: worker-{i}", [("register", lambda m: m.register(i))])

    # -- coordinator calls -----------------------------------------------------------------

    def _on_stop(self, op: Stop, choices: Choices) -> None:
        event = self._stop_event(op)
        self.settle_world(choices)
        self.check_step(f"request_stop({op!r})", [event], choices)

    def _stop_event(self, stop: Stop) -> tuple[str, Callable[[CoordinatorModel], Any]]:
        """Spawn a ``request_stop`` call; return its model event."""
        key = self.new_key()
        fn, reason = self._stop_call(stop)
        self.spawn_op(key, f"request_stop({stop!r})", fn)
        return f"op{key} {stop!r}", lambda m: m.request_stop(key, reason)

    def _exception(self, kind: type[BaseException]) -> BaseException:
        self._tags += 1
        return kind(f"e{self._tags}")

    def _stop_call(self, stop: Stop) -> tuple[Callable[[], Any], StopReason]:
        coord = self.coord
        kind = stop.kind
        if kind == "plain":
            return coord.request_stop, StopReason()
        passed = self._exception(Exhausted if kind in ("clean", "handled_clean") else Reported)
        if kind in ("error", "clean"):
            return (lambda: coord.request_stop(passed)), StopReason(passed)
        if kind == "triple":
            return (lambda: coord.request_stop((type(passed), passed, None))), StopReason(passed, triple=True)
        handled = self._exception(Handled)

        def while_handling() -> None:
            try:
                raise handled
            except Handled:
                coord.request_stop(passed)

        return while_handling, StopReason(passed, handled=handled)

    def _call(self, label: str, fn: Callable[[], Any], event: Callable[[CoordinatorModel, int], Any],
              choices: Choices) -> None:
        key = self.new_key()
        self.spawn_op(key, label, fn)
        self.settle_world(choices)
        self.check_step(label, [(label, lambda m: event(m, key))], choices)

    def _on_clearstop(self, op: ClearStop, choices: Choices) -> None:
        self._call("clear_stop()", self.coord.clear_stop, lambda m, key: m.clear_stop(key), choices)

    def _on_raiserequested(self, op: RaiseRequested, choices: Choices) -> None:
        self._call("raise_requested_exception()", self.coord.raise_requested_exception,
                   lambda m, key: m.raise_requested_exception(key), choices)

    def _on_waitforstop(self, op: WaitForStop, choices: Choices) -> None:
        coord, timeout = self.coord, op.timeout
        self._call(f"wait_for_stop({timeout})", lambda: coord.wait_for_stop(timeout),
                   lambda m, key: m.wait_for_stop(key, timeout), choices)

    def _on_join(self, op: Join, choices: Choices) -> None:
        event = self._join_event(op)
        self.settle_world(choices)
        self.check_step(f"{op!r}", [event], choices)

    def _join_event(self, op: Join) -> tuple[str, Callable[[CoordinatorModel], Any]]:
        """Spawn ``join`` with the registered threads plus none, all or the first worker
        (COORD-12..15); return its model event."""
        n = len(self.workers)
        indexes = {None: [], "all": list(range(n)), "first": [0] if n else []}[op.threads]
        objects = None if op.threads is None else [self.workers[i] for i in indexes]
        coord, grace, ignore = self.coord, op.grace, op.ignore_live_threads
        key = self.new_key()
        self.spawn_op(key, f"{op!r}",
                      lambda: coord.join(objects, stop_grace_period_secs=grace, ignore_live_threads=ignore))
        return f"op{key} {op!r}", lambda m: m.join(key, indexes, grace, ignore)

    def _on_advance(self, op: Advance, choices: Choices) -> None:
        self.advance(op, choices)

    # -- comparing ---------------------------------------------------------------------------

    def same_error(self, expected: Err, actual: BaseException) -> bool:
        if expected.detail is not None:  # COORD-15: the stragglers, by name
            named = {int(n) for n in re.findall(r"\bworker-(\d+)\b", str(actual))}
            return isinstance(actual, expected.type) and named == set(expected.detail)
        return super().same_error(expected, actual)

    def observe(self) -> Any:
        coord, workers = self.coord, list(self.workers)
        index = {id(t): i for i, t in enumerate(workers)}

        def read() -> tuple[Any, ...]:
            stats = coord.statistics() if callable(getattr(coord, "statistics", None)) else None
            if stats is not None:
                record = stats.exc_info[1] if stats.exc_info else None
                registered = tuple(index.get(id(t), repr(t)) for t in stats.registered_threads)
            else:
                try:
                    coord.raise_requested_exception()
                    record = None
                except BaseException as exc:  # the recorded exception
                    record = exc
                registered = None
            return (coord.should_stop(), coord.joined, record, registered,
                    [t.is_alive() for t in workers])

        deaths = [(name, exc) for name, exc in self.thread_deaths()]
        return (*self.run_call(read), deaths, self.harness.now)

    def state_problems(self, model: CoordinatorModel, observed: Any) -> list[str]:
        stop, joined, record, registered, alive, deaths, now = observed
        problems = []
        if stop != model.stop:
            problems.append(f"should_stop() is {stop}, the model says {model.stop}")
        if joined != model.joined:
            problems.append(f"joined is {joined}, the model says {model.joined}")
        if record is not model.recorded:
            problems.append(f"the recorded exception is {record!r}, the model says {model.recorded!r}")
        if registered is not None and list(registered) != model.registered:
            problems.append(
                f"the registered threads are {list(registered)}, the model says {model.registered}")
        expected_alive = [bool(model.alive.get(i)) for i in range(len(alive))]
        if alive != expected_alive:
            problems.append(f"workers alive: {alive}, the model says {expected_alive}")
        expected_deaths = [(f"worker-{i}", exc) for i, exc in model.died]
        if [(n, id(e)) for n, e in deaths] != [(n, id(e)) for n, e in expected_deaths]:
            problems.append(f"threads that died: {deaths}, the model says {expected_deaths}")
        if now != model.now:
            problems.append(f"the harness clock is at {now}, the model at {model.now}")
        return problems
