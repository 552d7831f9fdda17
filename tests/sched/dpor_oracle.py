"""The soundness oracle for DPOR (SCHED-37): an unreduced exhaustive search, and the
set of outcomes a search reaches.

``Enumerate`` tries every choice at every choice point (no sleep sets, no
partial-order reduction; with ``max_preemptions=k``, every choice that keeps the run
within ``k`` preemptions: SCHED-71's oracle): its own few lines, so that a bug in the
reduced search cannot hide in a shared plain mode.  ``outcomes`` runs a program under a
scheduler until the scheduler is exhausted and returns the set of outcomes: for a
run that passed, what the program reported (``report(value)``); for one that
failed, the failure kind and exception type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordkit.engine.dpor import HappensBefore
from coordkit.engine.points import Point
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import DFSScheduler, Scheduler

_REPORTED: list[Any] = []


def report(value: Any) -> None:
    """What a program calls, at its end, with its final state (compared across searches)."""
    _REPORTED.append(value)


class Enumerate(Scheduler):
    """Every choice at every choice point: the unreduced search; with ``max_preemptions``,
    every choice within that many preemptions (a choice other than the default, index 0,
    while the running thread could go on, is one)."""

    name = "enumerate"

    def __init__(self, max_preemptions: int | None = None) -> None:
        self.max_preemptions = max_preemptions
        self._prefix: list[int] = []
        # Per choice point of the run: (choices, the one made, preemptions before it,
        # whether a choice other than the default is a preemption).
        self._seen: list[tuple[int, int, int, bool]] = []
        self._k = 0
        self._preemptions = 0
        self.done = False

    def begin(self, run_index: int) -> None:
        self._k = 0
        self._seen = []
        self._preemptions = 0

    def choose(self, point: Point, enabled: list[Point]) -> int:
        k = self._k
        self._k += 1
        idx = self._prefix[k] if k < len(self._prefix) else 0
        preempts = any(p.thread == point.thread for p in enabled)
        self._seen.append((len(enabled), idx, self._preemptions, preempts))
        self._preemptions += bool(idx) and preempts
        return idx

    def end(self, run: Any) -> None:
        seen, bound = self._seen, self.max_preemptions
        while seen:
            n, last, before, preempts = seen.pop()
            if last + 1 < n and (bound is None or before + preempts <= bound):
                self._prefix = [c for _, c, _, _ in seen] + [last + 1]
                return
        self.done = True

    @property
    def exhausted(self) -> bool:
        return self.done


def outcome(run: Any) -> tuple:
    failure = run.failure
    if failure is not None:
        return ("failed", str(failure.kind), type(failure.exception).__name__)
    return ("passed", _REPORTED[-1] if _REPORTED else None)


def outcomes(program: Callable[[], Any], scheduler: Scheduler, *, granularity: str = "sync",
             max_runs: int = 50_000, counted: Callable[[], bool] = lambda: True,
             session: Session | None = None) -> tuple[set, int]:
    """Run ``program`` under ``scheduler`` until it is exhausted: the set of outcomes of
    the runs for which ``counted()`` held when they began (not abandoned ones), and the
    number of runs."""
    if session is None:
        with Session(RunOptions(granularity=granularity, max_steps=2_000), quiet=True) as session:
            return outcomes(program, scheduler, max_runs=max_runs, counted=counted, session=session)
    seen: set = set()
    runs = 0

    def loop() -> None:
        nonlocal runs
        while not scheduler.exhausted:
            if runs >= max_runs:
                raise AssertionError(f"not exhausted in {max_runs} runs")
            counts = counted()
            _REPORTED.clear()
            run = session.run(program, scheduler, run_index=runs)
            runs += 1
            if run.scheduler_error is not None:
                raise run.scheduler_error
            if counts and not run.pruned:
                seen.add(outcome(run))

    session.call(loop, per_run=True)  # each run under the watchdog, not the whole search
    return seen, runs


class CheckedDPOR(DFSScheduler):
    """DPOR that checks what it keeps from run to run (SCHED-33): each run is recorded
    whole, its first ``_fresh`` steps must equal the last run's (the same operations,
    footprints and memory labels), and the kept happens-before analysis must equal one
    made from scratch."""

    checked = 0

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recorded: list[list[tuple]] = []  # each run's steps (see ``KeptDPOR``)

    def observe(self, steps):
        self._last_run = list(self._history)
        super().observe(steps)
        self._known = ()  # record every step: the prefix is compared, not assumed
        return ()

    def _add_backtracks(self, steps):
        self.recorded.append([(s.point, s.footprint, s.choice) for s in steps])
        fresh = self._fresh
        assert [(s.point, s.footprint, s.choice) for s in steps[:fresh]] == [
            (s.point, s.footprint, s.choice) for s in self._last_run[:fresh]]
        kept_view = self._hb._view  # the last run's: whether the kept analysis still holds
        super()._add_backtracks(steps)
        scratch = HappensBefore(lock_aware=self._hb.lock_aware)
        scratch._view = kept_view
        scratch.reanalyse(steps, races_from=fresh)
        kept = self._hb
        width = len(scratch.clock[0]) if scratch.clock else 0  # kept clocks may have more room
        assert all(not any(c[width:]) for c in kept.clock)
        assert ([c[:width] for c in kept.clock], kept.pos, kept.tid, kept.stutter) == (
            scratch.clock, scratch.pos, scratch.tid, scratch.stutter)
        assert kept.races == scratch.races
        CheckedDPOR.checked += 1


class KeptDPOR(DFSScheduler):
    """DPOR as a search runs it, each run's known prefix taken from the last run and not
    recorded again (SCHED-68); ``recorded`` has each run's steps, to compare with
    ``CheckedDPOR``'s, which records every step."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recorded: list[list[tuple]] = []

    def _add_backtracks(self, steps):
        self.recorded.append([(s.point, s.footprint, s.choice) for s in steps])
        super()._add_backtracks(steps)


_UNREDUCED: dict[tuple[Callable[[], Any], str], tuple[set, int]] = {}


def unreduced(program: Callable[[], Any], *, granularity: str = "sync",
              max_runs: int = 50_000, session: Session | None = None) -> tuple[set, int]:
    """The outcomes of the unreduced search (kept: several tests ask for the same ones)."""
    key = (program, granularity)
    if key not in _UNREDUCED:
        _UNREDUCED[key] = outcomes(program, Enumerate(), granularity=granularity, max_runs=max_runs,
                                   session=session)
    return _UNREDUCED[key]


def learn_racing(program: Callable[[], Any], session: Session, *, max_runs: int) -> None:
    """SCHED-52: at auto granularity, the racing sites of ``program`` become scheduling points of
    the runs after the one that saw them race (SCHED-33's search starts over when they
    change): run the unreduced search, detecting races in every run and starting over
    after each run that found a new site, until one search finds none; then keep the
    set, so that both searches compared run the same program's choice points."""
    runs = 0

    def loop() -> None:
        nonlocal runs
        scheduler = Enumerate()
        while not scheduler.exhausted:
            if runs >= max_runs:
                raise AssertionError(f"not exhausted in {max_runs} runs (learning racing sites)")
            racing = session.racing
            _REPORTED.clear()
            session.run(program, scheduler, run_index=0)  # run 0 detects races
            runs += 1
            if session.racing != racing:
                scheduler = Enumerate()

    session.call(loop, per_run=True)
    session.learning = False


def compare(program: Callable[[], Any], *, granularity: str = "sync",
            max_runs: int = 50_000, reuse: bool = False,
            equivalence: str = "trace") -> tuple[set, set, int, int]:
    """The outcomes of DPOR (its unbounded level, exploring ``equivalence``'s classes) and
    of the unreduced search, with the schedules each ran; with ``reuse``, also SCHED-68's
    check (one more DPOR search)."""
    with Session(RunOptions(granularity=granularity, max_steps=2_000), quiet=True) as session:
        if granularity == "auto":
            learn_racing(program, session, max_runs=max_runs)
        full, full_runs = unreduced(program, granularity=granularity, max_runs=max_runs,
                                    session=session)
        dpor = CheckedDPOR(max_preemptions=None, equivalence=equivalence)
        reduced, reduced_runs = outcomes(program, dpor, max_runs=max_runs, session=session,
                                         counted=lambda: dpor.bound is None)
        if reuse:
            kept = KeptDPOR(max_preemptions=None, equivalence=equivalence)
            outcomes(program, kept, max_runs=max_runs, session=session)
            # SCHED-68: a run that takes its prefix from the last run has the steps,
            # footprints and choices of one that records every step.
            assert kept.recorded == dpor.recorded
    return reduced, full, reduced_runs, full_runs
