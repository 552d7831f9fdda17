"""Units of work: a range of schedule indices, what was learned before them, and what
their runs report back (PAR-2, PAR-3).

A unit is everything a process needs to run its schedules alone; a summary is what
the parent merges, in index order, exactly as it would count the run itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordkit import sync
from coordkit.engine.races import Race
from coordkit.engine.run import Run, RunOptions, Session
from coordkit.engine.schedulers import PCTScheduler, Scheduler

__all__ = ["NEVER", "Learned", "Summary", "Unit", "epoch_end", "resume", "run_unit"]

# No failure found yet: the stop index workers compare their next schedule with.
NEVER = 2**62


def epoch_end(run_index: int) -> int:
    """The index after the last run of ``run_index``'s learning epoch (PAR-2)."""
    return 1 << run_index.bit_length()


@dataclass(frozen=True)
class Learned:
    """What the runs before an epoch taught the search: PCT's count of choice points and,
    at auto granularity, the sites seen racing (they become scheduling points)."""

    k: int = 1
    racing: frozenset[int] = frozenset()

    def after(self, summaries: list[Summary], *, auto: bool) -> Learned:
        """What is known once ``summaries``' runs have run too."""
        k = max([self.k, *(s.choices for s in summaries)])
        racing = self.racing
        if auto:
            racing = racing.union(*(race.sites for s in summaries for race in s.races))
        return Learned(k, racing)


def resume(scheduler: Scheduler, learned: Learned) -> None:
    """Give a fresh scheduler what the search had learned before its epoch."""
    if isinstance(scheduler, PCTScheduler):
        scheduler.k = scheduler.seen = max(scheduler.k, learned.k)


@dataclass
class Summary:
    """What one run reports to the search (the fields ``_Search.ran`` counts)."""

    index: int
    leaked: list[str]
    pruned: int
    races: list[Race]
    warnings: list[str]
    choices: int
    detected: int
    failure: str | None  # "kind: message" of a failed run
    scheduler_error: Exception | None = None

    @classmethod
    def of(cls, index: int, run: Run, detected: int) -> Summary:
        failure = None if run.failure is None else f"{run.failure.kind.value}: {run.failure.message}"
        error = run.scheduler_error
        return cls(index, list(run.leaked), run.pruned, list(run.races or ()), list(run.warnings),
                   len(run.choices), detected, failure,
                   None if error is None else RuntimeError(f"in a worker: {error!r}"))


@dataclass(frozen=True)
class Unit:
    """Schedules ``start``..``stop - 1`` of one exploration, for a worker to run."""

    fn: Any
    options: dict[str, Any]  # RunOptions' fields, but the caller's thread and the racing sites
    scheduler: Scheduler  # a fresh one, copied to the worker
    learned: Learned
    start: int
    stop: int
    time_left: float | None

    def run_options(self) -> RunOptions:
        return RunOptions(**self.options, racing=self.learned.racing)

    @property
    def label(self) -> str:
        """What the unit runs, for messages."""
        return f"schedules {self.start}..{self.stop - 1}"

    def work(self, stop_above: Callable[[], int], *,
             come_back: Callable[[], bool] = lambda: False) -> list[Summary]:
        """In a worker: the unit's runs (``run_unit``); schedules have no subtree to give
        away, so ``come_back`` (PAR-24) does not shorten them."""
        return run_unit(self, stop_above)


def sendable_options(options: RunOptions) -> dict[str, Any]:
    """``options`` as a worker rebuilds them (its own caller thread; racing per unit)."""
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
            if f.name not in ("caller_thread", "racing")}


def run_unit(unit: Unit, stop_above: Callable[[], int]) -> list[Summary]:
    """In a worker: run the unit's schedules in order, up to the first that fails, the
    lowest failing index any worker has found (``stop_above()``), or the time left (PAR-3)."""
    scheduler = unit.scheduler
    resume(scheduler, unit.learned)
    deadline = None if unit.time_left is None else sync.real_monotonic() + unit.time_left
    summaries: list[Summary] = []
    with Session(unit.run_options(), quiet=True) as session:
        session.learning = False  # what runs teach takes effect at epochs (PAR-2)
        for index in range(unit.start, unit.stop):
            if index > stop_above() or (deadline is not None and sync.real_monotonic() >= deadline):
                break
            detected = session.detected_runs
            run = session.run(unit.fn, scheduler, run_index=index)
            summaries.append(Summary.of(index, run, session.detected_runs - detected))
            if run.failure is not None:
                break
    return summaries
