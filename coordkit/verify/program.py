"""One configuration as a program: threads that run their operation lists, recorded (FORMAL-21).

A ``Configuration`` is data: the primitive's factory and its arguments, one
list of ``Op`` per thread, the model its history is checked against and the
rule checks run at the end of every run.  ``program(config)`` is the
zero-argument function DPOR explores: it builds the primitive, starts the
threads, joins them, and then checks.  A check that fails raises, so the run
fails and DPOR reports the schedule.

Operations are recorded on a logical clock, not the virtual one: computation
takes no virtual time (SCHED-8), so every call would get the same stamp.  One
thread runs at a time, so a counter read before a call and after it orders
the calls as the schedule ran them (FORMAL-22).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from coordkit import sync
from coordkit.history import History, Outcome, assert_linearizable

__all__ = ["Configuration", "Op", "Recorder", "Trial", "program"]


@dataclass(frozen=True)
class Op:
    """One call of a thread's list: ``kind`` names the method, ``arg`` its argument.

    ``timeout`` is passed as the call's ``timeout=``; ``sleep`` seconds of virtual
    time pass before the call (a timed wait fires only when every other thread
    waits, SCHED-9, so a sleep orders a call after the others have blocked).
    """

    kind: str
    arg: Any = None
    timeout: float | None = None
    sleep: float = 0.0

    def __str__(self) -> str:
        arg = "" if self.arg is None else repr(self.arg)
        text = f"{self.kind}({arg}{'' if self.timeout is None else f', timeout={self.timeout:g}'})"
        return f"sleep {self.sleep:g}; {text}" if self.sleep else text


class Recorder:
    """Records calls with a logical clock; ``history()`` turns them into a ``History``.

    No lock: under the scheduler one thread runs at a time, and a lock here would
    add scheduling points that DPOR would have to order.
    """

    def __init__(self) -> None:
        self.clock = 0
        self.calls: list[tuple[Hashable, str, Any, int, int | None, Outcome | None]] = []

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def add(self, thread: Hashable, kind: str, arg: Any, call: int, ret: int | None,
            outcome: Outcome | None) -> None:
        self.calls.append((thread, kind, arg, call, ret, outcome))

    def history(self) -> History:
        history = History()
        for call in self.calls:
            history.add(*call)
        return history


@dataclass
class Trial:
    """What one run did: the primitive, each thread's results, the recording."""

    config: Configuration
    target: Any
    recorder: Recorder = field(default_factory=Recorder)
    results: dict[str, list[Outcome | None]] = field(default_factory=dict)
    threads: dict[str, threading.Thread] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def result(self, thread: str, index: int) -> Outcome | None:
        """The outcome of the ``index``-th op of ``thread`` (None: pending)."""
        return self.results[thread][index]


Executor = Callable[[Trial, str, Op], "Outcome | None"]


@dataclass(frozen=True)
class Configuration:
    """A row of the verification table (FORMAL-20, FORMAL-21).

    ``factory(*args)`` makes the primitive; a mutant run replaces ``factory``
    (``with_factory``) and nothing else.  ``threads`` holds one op list per
    thread, run by ``execute`` (one call each); ``setup`` prepares the trial
    once its threads exist and before they start, and ``finish`` runs in the
    main thread after they ended (a final read, a join).  ``build(config)``,
    when given, makes the trial's target instead of ``factory(*args)`` (a
    runner row's queue; its ``setup`` makes the runner with ``factory``).
    ``thread_exceptions_fail`` False lets a thread die of an exception the row
    expects (RUNNER-4 step 5).  ``model()`` is the pure model the recorded
    history must be linearizable against (None: the rule checks alone); each of
    ``checks`` raises ``AssertionError`` when a rule of ``rules`` is broken.
    """

    name: str
    primitive: str
    factory: Callable[..., Any]
    args: tuple[Any, ...]
    threads: tuple[tuple[Op, ...], ...]
    execute: Executor
    rules: tuple[str, ...]
    model: Callable[[], Any] | None = None
    checks: tuple[Callable[[Trial], None], ...] = ()
    setup: Callable[[Trial], None] | None = None
    finish: Callable[[Trial], None] | None = None
    build: Callable[[Configuration], Any] | None = None
    thread_exceptions_fail: bool = True
    profile: str = "ci"
    more_threads: str = ""  # threads the primitive starts itself, for the shape
    made: str = ""  # how the primitive is made, when ``factory(*args)`` does not say it

    def with_factory(self, factory: Callable[..., Any]) -> Configuration:
        """The same configuration with another primitive class (a mutant)."""
        return replace(self, factory=factory)

    @property
    def shape(self) -> str:
        """Threads x operations, e.g. ``3x(2,1,1)``, and the threads the primitive starts."""
        shape = f"{len(self.threads)}x({','.join(str(len(t)) for t in self.threads)})"
        return f"{shape} + {self.more_threads}" if self.more_threads else shape

    def describe(self) -> str:
        """The op lists, one thread after another: ``T0: enqueue(1); T1: dequeue()``."""
        return " | ".join(f"T{i}: " + "; ".join(map(str, ops)) for i, ops in enumerate(self.threads))


def _thread_body(trial: Trial, name: str, ops: Sequence[Op]) -> Callable[[], None]:
    def body() -> None:
        results = trial.results[name]
        for op in ops:
            if op.sleep:
                sync.sleep(op.sleep)
            results.append(trial.config.execute(trial, name, op))

    return body


def program(config: Configuration) -> Callable[[], None]:
    """The function DPOR explores: one run of ``config``, checked at its end (FORMAL-21)."""

    def run() -> None:
        target = config.build(config) if config.build is not None else config.factory(*config.args)
        trial = Trial(config, target)
        for i, ops in enumerate(config.threads):
            name = f"T{i}"
            trial.results[name] = []
            trial.threads[name] = threading.Thread(target=_thread_body(trial, name, ops), name=name)
        if config.setup is not None:
            config.setup(trial)
        threads = list(trial.threads.values())
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if config.finish is not None:
            config.finish(trial)
        check(trial)

    return run


def check(trial: Trial) -> None:
    """The end of a run: the history against the model, then the rule checks (FORMAL-23)."""
    config = trial.config
    if config.model is not None:
        assert_linearizable(trial.recorder.history(), config.model(), context=config.name)
    for rule in config.checks:
        rule(trial)
