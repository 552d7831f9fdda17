"""``explore``: run a program under many schedules, and shrink the first failure.

The loop over schedules, its budgets and progress live here; running one
schedule is ``Session.run``, shrinking is ``shrink``, reporting is ``report``.
A failure found by any strategy is shrunk to fewer context switches before it
is reported, with the trace string that replays it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Literal

from coordkit import sync
from coordkit.engine.parallel import (
    check_cluster,
    check_sendable,
    check_workers,
    search_indexed,
    search_split,
)
from coordkit.engine.races import Race
from coordkit.engine.report import ExploreResult, FoundFailure, RunReport, same_failure, target_name
from coordkit.engine.run import (
    MAX_STEPS,
    Run,
    RunOptions,
    Session,
    check_loop_modes,
    check_positive,
    check_program,
)
from coordkit.engine.schedulers import DFSScheduler, ReplayScheduler, Scheduler, make_scheduler
from coordkit.engine.schedulers.base import check_int
from coordkit.engine.schedulers.cancel import CancelScheduler
from coordkit.engine.shrink import Bound, plural_preemptions, prove_minimal
from coordkit.engine.shrink import shrink as shrink_choices
from coordkit.errors import FailureKind, UncontrolledBlockingError

__all__ = ["SHRINK_STOPPED", "explore", "run_options", "shrink_bound_seconds"]

Progress = Callable[[int, float], Any]

# The wall clock of an exploration's budget (a module attribute, so a test can give it
# a clock of its own).
clock: Callable[[], float] = sync.real_monotonic

# What a failure's ``minimality`` says when ``time_budget`` ran out while it was shrunk.
SHRINK_STOPPED = "shrinking stopped at time_budget, not known to be minimal"

ShrinkBudget = float | Literal["auto"] | None


def shrink_bound_seconds(shrink_budget: ShrinkBudget, find_seconds: float) -> float | None:
    """How long shrinking may take (SCHED-77): ``"auto"``, whichever is larger, 1 s or 5x
    the time the failure took to find; a number, that many seconds; None, no bound."""
    if shrink_budget == "auto":
        return max(1.0, 5.0 * find_seconds)
    return shrink_budget  # type: ignore[return-value]


def run_options(fn: Any, *, max_steps: int = MAX_STEPS, run_timeout: float = 10.0,
                granularity: str = "sync", invariant: Any = None,
                fail_on_thread_exception: bool = True, races: str = "report",
                racing: frozenset[int] = frozenset(), cancel: bool = False,
                adversarial: bool = False) -> RunOptions:
    """Check ``fn`` and the options of its runs."""
    check_program("fn", fn)
    if isinstance(run_timeout, int) and not isinstance(run_timeout, bool):
        run_timeout = float(run_timeout)
    return RunOptions(max_steps, run_timeout, granularity, invariant, fail_on_thread_exception,
                      races=races, racing=racing, cancel=cancel, adversarial=adversarial)


def _checked_search_options(strategy: Any, max_schedules: Any, seed: Any, depth: Any,
                            max_preemptions: Any, time_budget: Any, shrink: Any,
                            progress: Any, shrink_budget: Any) -> int:
    """Refuse a bad option of the search itself, naming it; the seed to use."""
    check_positive("max_schedules", max_schedules)
    if not (isinstance(shrink_budget, str) and shrink_budget == "auto"):
        if isinstance(shrink_budget, str):
            raise ValueError(f"shrink_budget must be 'auto', a number of seconds or None, "
                             f"got {shrink_budget!r}")
        check_positive("shrink_budget", shrink_budget, allow_none=True, integer=False)
    check_positive("depth", depth)
    check_positive("time_budget", time_budget, allow_none=True, integer=False)
    check_int("max_preemptions", max_preemptions, 0, allow_none=True)
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int or None, got {seed!r}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable or None, got {progress!r}")
    if not isinstance(shrink, bool):
        raise TypeError(f"shrink must be a bool, got {shrink!r}")
    if not isinstance(strategy, (str, Scheduler)):
        raise TypeError(f"strategy must be 'pct', 'random', 'dfs', 'hypothesis' or a Scheduler, "
                        f"got {strategy!r}")
    return seed


def explore(
    fn: Callable[[], Any],
    *,
    strategy: str | Scheduler = "pct",
    max_schedules: int = 1000,
    seed: int | None = None,
    depth: int = 3,
    max_preemptions: int | None = 2,
    max_steps: int = MAX_STEPS,
    time_budget: float | None = None,
    run_timeout: float = 10.0,
    granularity: str = "auto",
    races: str = "report",
    invariant: Callable[[], Any] | None = None,
    shrink: bool = True,
    shrink_budget: ShrinkBudget = "auto",
    fail_on_thread_exception: bool = True,
    progress: Progress | None = None,
    cancel: str | None = None,
    adversarial: bool = False,
    workers: int | None = None,
    cluster: Any = None,
) -> ExploreResult:
    """Run the zero-argument callable ``fn`` under up to ``max_schedules`` schedules.

    ``fn`` and every thread it starts run one at a time under the chosen
    strategy (``"pct"`` with bug depth ``depth``, ``"random"``, ``"dfs"``, or
    ``"hypothesis"``).  ``"dfs"`` is systematic: with ``max_preemptions=None`` it runs
    DPOR within 0, 1, 2 preemptions, then unbounded; with a bound, every schedule within
    it; ``result.coverage`` says what an exhausted search covered.  A run fails when
    a thread raises, every live thread is blocked (deadlock), it uses up its step
    budget (``max_steps`` scheduling points for each thread it starts), or
    ``invariant()`` (checked at every step) returns false or raises.  The first
    failure is shrunk to fewer preemptions and returned as ``result.failure``;
    ``result.failure.trace`` replays it with ``replay``.

    Shrinking takes at most ``shrink_budget`` seconds (SCHED-77): by default
    (``"auto"``) whichever is larger, 1 s or 5x the time the failure took to find; None
    goes on until done.  Within it, a bounded search proves the shrunk failure minimal
    where it can finish (SCHED-78, SCHED-79): ``result.failure.minimal`` is True when it
    did, and ``result.failure.minimality`` says what was shown.

    ``time_budget`` caps the whole call in wall-clock seconds, for every strategy: no
    run starts after it, and a failure found is shrunk only until it (the result then
    says that shrinking stopped).  ``run_timeout`` caps one run (a watchdog ends a run stuck outside the
    scheduler).  ``seed=None`` picks a seed and reports it in the result.

    ``granularity`` says where a thread may be switched: ``"sync"`` at every
    synchronisation operation, ``"line"`` also before every line and shared store of
    the user's code, ``"auto"`` (the default) at synchronisation and at every access
    that race detection has seen race.  ``races`` says what an unordered pair of
    accesses to shared memory does: ``"report"`` lists it on ``result.races``,
    ``"fail"`` fails the run, ``"ignore"`` does not look (nor learn, except at auto).

    Ctrl-C stops the exploration within a second, with every thread ended and the
    stdlib restored; the ``KeyboardInterrupt`` carries the partial result as
    ``exc.coordkit_result`` (``interrupted=True``: the schedules run, seed, elapsed).

    ``cancel="tasks"`` checks cancellation safety (AIO-40..43) instead of ``strategy``
    (so a ``strategy`` other than the default with it is a ValueError, AIO-48):
    the program runs in its own order, then once for each task at each ``await`` it
    suspended at, cancelled there as an outside timeout would cancel it; the failure
    names the cancellation it depends on, and ``result.coverage`` the pairs covered.

    ``adversarial=True`` lets an event loop run any of the callbacks ready at an iteration
    next, not only the first (AIO-44); a failure that needs it says that stock asyncio
    does not produce its order.

    ``workers=N`` runs the schedules of a ``"random"`` or ``"pct"`` search in N worker
    processes (PAR-1..PAR-6): schedule ``i`` is the same run in any process, and the
    result (the failure at the lowest failing index, its trace, the schedules run) is the
    one the same seed gives without workers.  A ``"dfs"`` search is split into subtrees
    (PAR-17..PAR-21): the same exhausted verdict and classes covered as without workers
    (its counts of schedules may differ), and a failure that does not depend on timing.
    ``fn`` and ``invariant`` must then be importable by name (defined at module level).
    ``cluster=client`` (a ``dask.distributed`` Client) sends the same work to that Dask
    cluster's workers, with the same result (PAR-10..PAR-14, PAR-21); they must import
    ``fn``'s module.
    """
    check_loop_modes(cancel, adversarial, strategy)
    options = run_options(fn, max_steps=max_steps, run_timeout=run_timeout, granularity=granularity,
                          invariant=invariant, fail_on_thread_exception=fail_on_thread_exception,
                          races=races, cancel=cancel == "tasks", adversarial=adversarial)
    seed = _checked_search_options(strategy, max_schedules, seed, depth, max_preemptions,
                                   time_budget, shrink, progress, shrink_budget)
    search = _Search(fn, options, max_schedules, time_budget, progress)
    search.shrink_budget = shrink_budget
    _place_search(search, strategy, workers, cluster, cancel, invariant)
    if cancel == "tasks":
        return _with_cancellations(search, shrink)
    if strategy == "hypothesis":
        return _with_hypothesis(search, seed, shrink)
    return _with_scheduler(search, lambda: make_scheduler(
        strategy, seed=seed, depth=depth, max_preemptions=max_preemptions), seed, shrink)


def _place_search(search: _Search, strategy: Any, workers: Any, cluster: Any, cancel: Any,
                  invariant: Any) -> None:
    """Where ``search``'s runs go: its workers or cluster, checked (PAR-1, PAR-4, PAR-11)."""
    search.cluster = check_cluster(cluster, workers)
    search.workers = _checked_workers(workers, strategy, cancel, search.fn, invariant,
                                      parallel=search.cluster is not None)


def _checked_workers(workers: Any, strategy: Any, cancel: Any, fn: Any, invariant: Any, *,
                     parallel: bool) -> int | None:
    """Refuse bad ``workers`` and what cannot be sent to them (PAR-1, PAR-4); ``parallel``:
    a cluster runs the schedules (PAR-11)."""
    workers = check_workers(workers)
    if not parallel and (workers is None or workers == 1):
        return workers
    if cancel is not None or strategy not in ("random", "pct", "dfs"):
        name, what = ("cluster", "cluster=") if parallel else ("workers", f"workers={workers}")
        raise ValueError(f"{what} runs 'random', 'pct' and 'dfs' searches; "
                         f"strategy={strategy!r} (cancel={cancel!r}) runs in this process: "
                         f"leave {name} unset")
    check_sendable("fn", fn)
    check_sendable("invariant", invariant)
    return workers


def _with_hypothesis(search: _Search, seed: int, shrink: bool) -> ExploreResult:
    from coordkit.engine.hypothesis_search import find_with_hypothesis

    return search.result(lambda session: find_with_hypothesis(
        session, search.fn, search.ran, search.shrank, max_schedules=search.max_schedules,
        seed=seed, shrink=shrink, out_of_time=search.out_of_time), "hypothesis", seed, shrink,
        exhausted=lambda: False)


def _with_scheduler(search: _Search, new_scheduler: Callable[[], Scheduler], seed: int | None,
                    shrink: bool) -> ExploreResult:
    scheduler = new_scheduler()
    if isinstance(scheduler, DFSScheduler):
        seed = None  # a systematic search draws nothing at random: no seed to report
    search.scheduler = scheduler
    return search.result(lambda session: search.loop(session, new_scheduler), scheduler.name, seed,
                         shrink, exhausted=lambda: search.scheduler.exhausted,
                         coverage=lambda: _coverage(search.scheduler, search.options.granularity))


def _with_cancellations(search: _Search, shrink: bool) -> ExploreResult:
    """The cancellation search (AIO-41); a program that offered no cancellation says so
    in a warning (AIO-43), never a silent pass."""
    scheduler = CancelScheduler()
    result = _with_scheduler(search, lambda: scheduler, None, shrink)
    if scheduler.offers == [] and result.failure is None:
        result.warnings.append(
            "cancel='tasks' checked 0 cancellation points: no task of the program stood "
            "suspended at an await (is it asyncio code, run on coordkit's loop?)")
    return result


def _coverage(scheduler: Scheduler, granularity: str) -> str | None:
    """What an exhausted search covered, in the scheduler's words (SCHED-36)."""
    coverage = getattr(scheduler, "coverage", None)
    return coverage(granularity) if callable(coverage) else None


class _Search:
    """One exploration's state: the runs so far, their budgets and progress."""

    def __init__(self, fn: Callable[[], Any], options: RunOptions, max_schedules: int,
                 time_budget: float | None, progress: Progress | None) -> None:
        self.fn = fn
        self.options = options
        self.max_schedules = max_schedules
        self.started = clock()
        self.deadline = None if time_budget is None else self.started + time_budget
        self.progress = progress
        self.runs = 0
        self.shrink_runs = 0  # runs a strategy that shrinks itself made after its failure
        self.pruned = 0
        self.leaked: list[str] = []
        self.scheduler: Any = None
        self.races: dict[Any, Race] = {}
        self.warnings: list[str] = []
        self.workers: int | None = None  # processes for an indexed search (PAR-1)
        self.shrink_budget: ShrinkBudget = "auto"
        self.cluster: Any = None  # a Dask client that runs them instead (PAR-10)

    def ran(self, run: Run) -> None:
        """Count a finished run; raise what its scheduler raised."""
        self.runs += 1
        self.leaked.extend(run.leaked)
        self.pruned += run.pruned
        for race in run.races or ():
            self.races.setdefault(race.identity, race)
        for warning in run.warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)
        if self.progress is not None:
            self.progress(self.runs, clock() - self.started)
        if run.scheduler_error is not None:
            raise run.scheduler_error

    def shrank(self, run: Run) -> None:
        """Count a run a strategy made to shrink its failure (Hypothesis's own shrinking)."""
        self.shrink_runs += 1
        self.leaked.extend(run.leaked)
        if run.scheduler_error is not None:
            raise run.scheduler_error

    def out_of_time(self) -> bool:
        """Whether ``time_budget`` is spent: checked before every run (SCHED-61)."""
        return self.deadline is not None and clock() >= self.deadline

    def loop(self, session: Session, new_scheduler: Callable[[], Scheduler]) -> Run | None:
        """On the worker: run schedules until one fails or a budget is spent.  A systematic
        search starts over when new racing sites become scheduling points: the choice
        points it has enumerated are no longer the program's."""
        scheduler = self.scheduler
        if scheduler.indexed:  # random, PCT: by index, here or in workers (PAR-2)
            return search_indexed(self, session, scheduler, workers=self.workers,
                                  cluster=self.cluster)
        if isinstance(scheduler, DFSScheduler) and (self.cluster is not None or (
                self.workers or 1) > 1):  # DPOR's subtrees in workers (PAR-17)
            return search_split(self, session, new_scheduler, workers=self.workers,
                                cluster=self.cluster)
        while self.runs < self.max_schedules:
            racing = session.racing
            run = session.run(self.fn, scheduler, run_index=self.runs)
            self.ran(run)
            if run.failure is not None:
                return run
            if session.racing != racing and isinstance(scheduler, DFSScheduler):
                scheduler = self.scheduler = new_scheduler()
            elif scheduler.exhausted or self.out_of_time():
                return None
        return None

    def result(self, find: Callable[[Session], Run | None], strategy: str, seed: int | None,
               shrink: bool, *, exhausted: Callable[[], bool],
               coverage: Callable[[], str | None] = lambda: None) -> ExploreResult:
        """Run the search and report on it.  Interrupted (Ctrl-C), it stops within a second
        with the stdlib restored and every thread ended, and the ``KeyboardInterrupt``
        carries the partial result as ``coordkit_result``."""
        session = Session(self.options, quiet=True)
        try:
            with session:
                found = self.find(session, find)
                failure = None
                if found is not None:
                    # Shrinking replays the found run's schedule: its scheduling points must stay.
                    session.racing, session.learning = found.racing, False
                    searched = session.detected_runs
                    try:
                        failure = session.call(
                            lambda: self.report(session, found, shrink, strategy, seed),
                            per_run=True)
                    finally:  # race_runs counts the search's runs, as schedules_run does
                        session.detected_runs = searched
        except (KeyboardInterrupt, SystemExit) as exc:
            exc.coordkit_result = self.outcome(  # type: ignore[union-attr]
                session, None, strategy, seed, False, interrupted=True)
            raise
        done = exhausted() and found is None
        return self.outcome(session, failure, strategy, seed, done,
                            coverage=coverage() if done else None)

    def find(self, session: Session, find: Callable[[Session], Run | None]) -> Run | None:
        try:
            return session.call(lambda: find(session), per_run=True)
        except UncontrolledBlockingError as exc:
            found = session.abandoned(exc)
            self.runs += 1
            self.leaked.extend(found.leaked)
            return found

    def outcome(self, session: Session, failure: FoundFailure | None, strategy: str,
                seed: int | None, exhausted: bool, *, interrupted: bool = False,
                coverage: str | None = None) -> ExploreResult:
        return ExploreResult(
            failure=failure,
            schedules_run=self.runs,
            exhausted=exhausted,
            strategy=strategy,
            seed=seed,
            elapsed=clock() - self.started,
            pruned=self.pruned,
            leaked_threads=self.leaked,
            coverage=coverage,
            granularity=self.options.granularity,
            races=list(self.races.values()),
            race_runs=session.detected_runs,
            racing_sites=len(session.racing),
            warnings=self.warnings,
            interrupted=interrupted,
        )

    def report(self, session: Session, found: Run, shrink: bool, strategy: str,
               seed: int | None) -> FoundFailure:
        """Shrink ``found`` within its bound (SCHED-77), prove it minimal where the bound
        allows (SCHED-78, SCHED-79), and record the shrunk run (on the worker)."""
        assert found.failure is not None
        started = clock()
        bound = Bound(clock, self.shrink_deadline(started), self.out_of_time)
        choices = found.choice_values
        original = sum(1 for c in choices if c)
        minimality: str | None = None
        minimal: bool | None = None
        if found.failure.kind == FailureKind.TIMEOUT:
            final = found  # replaying it would only hit the wall-clock budget again
        else:
            if shrink:
                choices = shrink_choices(session, self.fn, found.failure, choices, bound)
            final = session.run(self.fn, ReplayScheduler(choices, strict=False), record=True)
            if shrink and same_failure(found.failure, final.failure):
                final, minimal, minimality = self.prove(session, found.failure, choices, final,
                                                        bound, started)
        if not same_failure(found.failure, final.failure):
            # The program does not fail the same way twice (it reads real time or randomness):
            # report the failure as found, without a recorded table.
            final, minimal, minimality = found, None, None
        failure = _found_failure(self, RunReport.of(final), self.runs,
                                 self.shrink_runs + bound.runs, original, strategy, seed)
        failure.minimality, failure.minimal = minimality, minimal
        failure.shrink_seconds = clock() - started
        return failure

    def shrink_deadline(self, now: float) -> float | None:
        """When shrinking must end (SCHED-77): ``shrink_budget`` after ``now``, the time to
        find measured on the exploration's clock."""
        seconds = shrink_bound_seconds(self.shrink_budget, now - self.started)
        return None if seconds is None else now + seconds

    def prove(self, session: Session, failure: Any, choices: list[int], final: Run,
              bound: Bound, started: float) -> tuple[Run, bool | None, str]:
        """After shrinking, the bounded searches below the shrunk run's preemptions
        (SCHED-78); what ``time_budget`` cut short says so (SCHED-62)."""
        if self.out_of_time():
            return final, None, SHRINK_STOPPED
        within = ("shrink_budget=None" if bound.deadline is None
                  else f"the shrink bound ({bound.deadline - started:.1f} s, shrink_budget)")
        proof = prove_minimal(session, self.fn, failure, choices, final.preemptions, bound,
                              within=within)
        if not proof.minimal and self.out_of_time():
            return final, None, SHRINK_STOPPED
        if proof.choices != choices:
            again = session.run(self.fn, ReplayScheduler(proof.choices, strict=False),
                                record=True)
            if not same_failure(failure, again.failure):
                return final, False, (f"not minimal: a schedule with "
                                      f"{plural_preemptions(proof.preemptions)} failed this way once, "
                                      "but not when replayed")
            final = again
        return final, proof.minimal or None, proof.statement


def _found_failure(search: _Search, report: RunReport, runs: int, shrink_runs: int, original: int,
                   strategy: str, seed: int | None) -> FoundFailure:
    failure = report.failure
    assert failure is not None
    invariant = search.options.invariant
    return FoundFailure(
        kind=failure.kind,
        message=failure.message,
        exception=failure.exception,
        trace=report.trace,
        report=report,
        details=failure.details,
        schedules_run=runs,
        shrink_runs=shrink_runs,
        original_preemptions=original,
        strategy=strategy,
        seed=seed,
        target=target_name(search.fn),
        invariant=(target_name(invariant)
                   if failure.kind == FailureKind.INVARIANT and invariant is not None else None),
        thread=failure.thread,
    )
