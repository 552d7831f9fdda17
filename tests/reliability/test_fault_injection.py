"""Faults injected where coordkit calls code that may fail: the scheduler, the shims and
the runtime under them, an invariant, a progress callback and the strategy's hooks.

200 cases, drawn from one seed: each raises at a random call (the k-th, counted across
the exploration's runs, shrinking included).  Every case must end with a clear outcome
(the injected exception raised by ``explore``, or reported as the failure of the run it
broke, or a coordkit error), with the stdlib restored, no thread left, and the next
``explore`` working (ENGINE-7, SCHED-13, ENGINE-2).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import coordkit
from coordkit.engine import runtime, shims
from coordkit.engine.schedulers import RandomScheduler
from coordkit.errors import ScheduleError
from tests.reliability._support import broken_after, stdlib_snapshot, thread_idents

CASES = 200
SEED = 20261125
SUMMARY: list[str] = []  # for the session's terminal summary (conftest.py)


class Injected(Exception):
    """The fault: raised once, at the k-th call of the place it is injected into."""


class InjectedBase(BaseException):
    """The same, as a BaseException (what ``except Exception`` does not catch)."""


@dataclass
class Fault:
    """Raise ``kind`` at the ``at``-th call; ``fired`` says whether it did."""

    at: int
    kind: type[BaseException]
    calls: int = 0
    fired: BaseException | None = None

    def tick(self) -> None:
        self.calls += 1
        if self.calls == self.at and self.fired is None:
            self.fired = self.kind(f"injected at call {self.at}")
            raise self.fired

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def faulty(*args: Any, **kwargs: Any) -> Any:
            self.tick()
            return fn(*args, **kwargs)

        return faulty


def program() -> None:
    """Three threads over a lock, a condition, an event, a semaphore and a queue."""
    import queue

    lock, event, sem = threading.Lock(), threading.Event(), threading.Semaphore(1)
    cond, items = threading.Condition(lock), queue.SimpleQueue()
    state = {"n": 0}

    def producer() -> None:
        for i in range(2):
            with cond:
                state["n"] += 1
                cond.notify()
            items.put(i)
        event.set()

    def consumer() -> None:
        with cond:
            cond.wait_for(lambda: state["n"] >= 1, timeout=5)
        with sem:
            items.get(timeout=5)
        event.wait(timeout=5)

    threads = [threading.Thread(target=producer), threading.Thread(target=consumer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


SHIM_METHODS = [
    (shims.Lock, "_take"), (shims.Lock, "_free"), (shims.Lock, "release"),
    (shims.RLock, "acquire"), (shims.Condition, "wait"), (shims.Condition, "notify"),
    (shims.Event, "set"), (shims.Event, "wait"), (shims.Semaphore, "acquire"),
    (shims.Semaphore, "release"), (shims.SimpleQueue, "put"), (shims.SimpleQueue, "get"),
    (runtime.Execution, "point"), (shims, "point_of"), (runtime.Execution, "block"),
    (runtime.Execution, "wake"),
    (runtime.Execution, "spawn"),
]


class FaultyScheduler(RandomScheduler):
    """A strategy whose ``choose``, ``begin`` or ``end`` fails at a chosen call."""

    def __init__(self, seed: int, fault: Fault, hook: str) -> None:
        super().__init__(seed)
        self.fault, self.hook = fault, hook

    def begin(self, run_index: int) -> None:
        if self.hook == "begin":
            self.fault.tick()
        super().begin(run_index)

    def choose(self, point: Any, enabled: Any) -> int:
        if self.hook == "choose":
            self.fault.tick()
        return super().choose(point, enabled)

    def end(self, run: Any) -> None:
        if self.hook == "end":
            self.fault.tick()
        super().end(run)


def _scheduler_case(rng: random.Random, fault: Fault, monkeypatch: Any) -> dict[str, Any]:
    hook = rng.choice(["choose", "choose", "begin", "end"])
    return {"strategy": FaultyScheduler(rng.randrange(1000), fault, hook), "label": f"scheduler.{hook}"}


def _shim_case(rng: random.Random, fault: Fault, monkeypatch: Any) -> dict[str, Any]:
    cls, name = rng.choice(SHIM_METHODS)
    monkeypatch.setattr(cls, name, fault.wrap(getattr(cls, name)))
    # The wrapper stands in for engine code, which is never traced; defined in a test, at
    # line or auto granularity it would be traced as the program's own code.
    return {"strategy": rng.choice(["pct", "random", "dfs"]), "granularity": "sync",
            "label": f"shims: {cls.__name__}.{name}"}


def _invariant_case(rng: random.Random, fault: Fault, monkeypatch: Any) -> dict[str, Any]:
    return {"invariant": fault.wrap(lambda: True), "label": "invariant"}


def _progress_case(rng: random.Random, fault: Fault, monkeypatch: Any) -> dict[str, Any]:
    return {"progress": fault.wrap(lambda runs, elapsed: None), "label": "progress"}


def _strategy_case(rng: random.Random, fault: Fault, monkeypatch: Any) -> dict[str, Any]:
    """The hypothesis strategy: its runs replay drawn choices; the replay fails."""
    from coordkit.engine.schedulers import ReplayScheduler

    monkeypatch.setattr(ReplayScheduler, "choose", fault.wrap(ReplayScheduler.choose))
    return {"strategy": "hypothesis", "label": "hypothesis strategy"}


SOURCES = [_scheduler_case, _shim_case, _invariant_case, _progress_case, _strategy_case]


def _outcome(fault: Fault, call: Callable[[], Any]) -> str:
    """How the exploration ended: "clear" or a description of what was unclear."""
    try:
        result = call()
    except (Injected, InjectedBase) as exc:
        return "clear" if exc is fault.fired else f"another injected fault: {exc!r}"
    except ScheduleError:
        return "clear"
    except Exception as exc:
        return f"unclear: {type(exc).__name__}: {exc}"
    if fault.fired is None:
        return "clear" if result.failure is None else f"a failure with no fault: {result.failure}"
    failure = result.failure
    if failure is None:
        return "the fault fired and explore passed"
    if failure.exception is fault.fired or "injected at call" in failure.message:
        return "clear"
    # The fault broke what the program relied on (a lock left half-released): a deadlock,
    # a step limit or another exception in a run the fault ran through is what it did.
    return "clear" if failure.kind in ("deadlock", "step_limit", "exception", "timeout") else (
        f"unclear failure: {failure.kind}: {failure.message}")


def _one_case(index: int, rng: random.Random, monkeypatch: Any) -> tuple[str, str]:
    source = SOURCES[index % len(SOURCES)]
    fault = Fault(at=rng.randint(1, 80), kind=rng.choice([Injected, Injected, InjectedBase]))
    before, idents = stdlib_snapshot(), thread_idents()
    with monkeypatch.context() as patch:
        options = source(rng, fault, patch)
        label = options.pop("label")
        outcome = _outcome(fault, lambda: coordkit.explore(
            program, max_schedules=25, seed=index, run_timeout=5.0, **options))
    problems = broken_after(before, idents)
    if problems:
        outcome = f"broken: {problems}"
    return label, outcome


def test_200_injected_faults_each_end_clearly_and_leave_nothing_behind(monkeypatch):
    rng = random.Random(SEED)
    outcomes = [_one_case(i, rng, monkeypatch) for i in range(CASES)]
    bad = [(i, label, outcome) for i, (label, outcome) in enumerate(outcomes) if outcome != "clear"]
    for i, label, outcome in bad:
        print(f"case {i} ({label}): {outcome[:200]!r}")
    totals = Counter(label.split(":")[0].split(".")[0] for label, _ in outcomes)
    SUMMARY[:] = [f"fault injection: {CASES - len(bad)}/{CASES} clear; by source: {dict(totals)}"]
    print("\n" + SUMMARY[0])
    assert not bad, "\n".join(f"case {i} ({label}): {outcome[:300]}" for i, label, outcome in bad)


@pytest.mark.parametrize("kind", [Injected, InjectedBase])
def test_a_scheduler_that_fails_at_its_first_choice_raises_that_exception(kind):
    fault = Fault(at=1, kind=kind)
    before, idents = stdlib_snapshot(), thread_idents()
    with pytest.raises(kind) as caught:
        coordkit.explore(program, strategy=FaultyScheduler(1, fault, "choose"), max_schedules=5)
    assert caught.value is fault.fired
    assert broken_after(before, idents) == []


def test_the_hypothesis_strategy_reports_a_failure_that_does_not_happen_twice():
    calls = {"n": 0}

    def fails_once() -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise Injected("only the third run fails")

    result = coordkit.explore(fails_once, strategy="hypothesis", max_schedules=20, seed=1)
    assert result.failure is not None and "only the third run fails" in result.failure.message


def test_progress_that_raises_under_the_hypothesis_strategy_raises_that_exception():
    def progress(runs: int, elapsed: float) -> None:
        if runs == 4:
            raise Injected("progress")

    with pytest.raises(Injected, match="progress"):
        coordkit.explore(program, strategy="hypothesis", max_schedules=20, seed=1, progress=progress)


class CountingScheduler(RandomScheduler):
    """A strategy written in the user's code, with lines and memory accesses of its own."""

    def __init__(self) -> None:
        super().__init__(3)
        self.calls = {"choose": 0}

    def choose(self, point: Any, enabled: Any) -> int:
        self.calls["choose"] += 1
        total = sum(range(3))
        return super().choose(point, enabled) if total == 3 else 0


def test_a_scheduler_written_in_user_code_takes_no_scheduling_points_of_its_own():
    # ENGINE-2: at the default granularity the user's code is traced; the scheduler's own
    # lines must not become scheduling points (a point inside choose asks choose again).
    scheduler = CountingScheduler()
    result = coordkit.explore(program, strategy=scheduler, max_schedules=5)
    assert result.ok and scheduler.calls["choose"] > 0
