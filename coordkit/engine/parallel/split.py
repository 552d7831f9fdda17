"""DPOR across workers: the search tree split into subtrees, with work stealing
(PAR-17..PAR-21).

A unit of work (``Job``) is a subtree search (``DFSScheduler.rooted``/``subtree``): the
choice points down to its root are another search's, and its runs search below them.
A worker runs a job for at most ``slice`` runs and sends back what is left of it (its
path, with the branches not yet begun), the backtrack points its runs added above its
root, and what its runs found.  The coordinator keeps every job that is not running;
when a worker is free and no job waits, it splits one: the shallowest branch not yet
begun becomes a job of its own (the frontier is split where the subtrees are largest).
A backtrack point above a root goes to the job that owns that choice point (the one
whose path holds it; if that job is running, once it comes back), or, when none holds
it any more, becomes a job of its own.  So every branch a sequential search would
take at a choice point is taken by some job, and the parallel search covers every
class of runs the sequential one covers (PAR-18).

The levels of an unbounded search (bounds 0, 1, 2, then none) are searched one after
another, each split.  A failure does not stop its level: the level is finished and the
failing run reported is the one with the least ``class_key`` (fewest steps first), a
function of the failing class, not of which worker found what first (PAR-20).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from coordkit import sync
from coordkit.engine.dpor import HappensBefore
from coordkit.engine.parallel.executor import Executor
from coordkit.engine.parallel.units import Summary
from coordkit.engine.points import Step
from coordkit.engine.run import Run, RunOptions, Session
from coordkit.engine.schedulers import DFSScheduler, ReplayScheduler

__all__ = ["BACK", "SLICE", "Inline", "Job", "JobReport", "SplitSearch", "class_key"]

# Runs a job makes before it comes back to be split (each job costs a Session and a first
# run analysed whole, ~2.7 ms: at 16 runs a job that was 10% of the jobs' CPU) ...
SLICE = 128
# ... or, while a worker waits with no job to take, once it has made this many (PAR-24) ...
BACK = 16
# ... and a job dispatched while a worker would stay idle: it comes back soon, with branches.
SHORT = 4

ClassKey = tuple[int, tuple[tuple[tuple[int, int, str], ...], ...]]


def class_key(steps: Sequence[Step]) -> ClassKey:
    """A run's equivalence class (PAR-19): its number of steps, and the Foata normal form
    of its happens-before order over (thread, the step's index in its thread, operation).
    Runs that differ only in the order of independent steps have the same key.  Steps
    that only began to wait (SCHED-32) are left out: an equivalent run may not take them."""
    hb = HappensBefore(steps)
    level: list[int] = []
    kept: list[int] = []
    per_thread: dict[int, int] = {}
    layers: dict[int, list[tuple[int, int, str]]] = {}
    for j, step in enumerate(steps):
        if hb.stutter[j]:
            level.append(0)
            continue
        here = 1 + max((level[i] for i in kept if hb.hb(i, j)), default=0)
        level.append(here)
        kept.append(j)
        t = step.point.thread
        per_thread[t] = per_thread.get(t, 0) + 1
        layers.setdefault(here, []).append((t, per_thread[t], step.point.op))
    return len(kept), tuple(tuple(sorted(layers[k])) for k in sorted(layers))


@dataclass
class Found:
    """A failing run a job found: its class, its choices, its summary's index."""

    key: ClassKey
    choices: list[int]
    index: int


@dataclass
class JobReport:
    """What a job sends back: the search as it stands (its path, the branches left), the
    backtrack points added above its root, and its runs."""

    scheduler: DFSScheduler
    above: list[tuple[int, int]]
    summaries: list[Summary]
    schedules: int
    classes: int
    found: list[Found] = field(default_factory=list)
    keys: list[ClassKey] = field(default_factory=list)
    cpu: float = 0.0  # CPU seconds the job took in its worker (the parallel cost, PAR-21)
    pid: int = 0  # the worker's process
    process_cpu: float = 0.0  # CPU seconds of that process so far, its start-up included


@dataclass(frozen=True)
class Job:
    """Up to ``runs`` runs of the subtree search ``scheduler``, numbered from ``first``."""

    fn: Any
    options: dict[str, Any]
    racing: frozenset[int]
    scheduler: DFSScheduler
    first: int
    runs: int
    time_left: float | None
    keys: bool = False  # send back every complete run's class key (for tests)
    back: int = BACK  # runs made before it may come back when asked (PAR-24)

    @property
    def label(self) -> str:
        s = self.scheduler
        return f"the DPOR subtree under choices {list(s.key(s.root))} (level {s.level})"

    def work(self, stop_above: Callable[[], int], session: Session | None = None, *,
             come_back: Callable[[], bool] = lambda: False) -> JobReport:
        """In a worker (or in ``session``): the job's runs; stops early when its subtree is
        done, its time is up, the search is stopped (``stop_above() < 0``), or it has made
        ``back`` runs and is asked to come back (``come_back()``: a worker is idle, PAR-24)."""
        if session is not None:
            return self._runs(session, stop_above, come_back)
        with Session(RunOptions(**self.options, racing=self.racing), quiet=True) as own:
            own.learning = False  # what runs teach is merged by the coordinator
            return self._runs(own, stop_above, come_back)

    def _runs(self, session: Session, stop_above: Callable[[], int],
              come_back: Callable[[], bool]) -> JobReport:
        scheduler = self.scheduler
        deadline = None if self.time_left is None else sync.real_monotonic() + self.time_left
        report = JobReport(scheduler, [], [], 0, 0)
        cpu = time.process_time()
        for index in range(self.first, self.first + self.runs):
            if scheduler.subtree_done or stop_above() < 0 or (
                    deadline is not None and sync.real_monotonic() >= deadline) or (
                    index - self.first >= self.back and come_back()):
                break
            detected = session.detected_runs
            classes = scheduler.classes
            run = session.run(self.fn, scheduler, run_index=index)
            report.summaries.append(Summary.of(index, run, session.detected_runs - detected))
            if run.scheduler_error is not None:
                break
            steps = run.footprints or ()
            if run.failure is not None:
                report.found.append(Found(class_key(steps), run.choice_values, index))
            elif self.keys and not run.pruned and scheduler.classes > classes:
                report.keys.append(class_key(steps))
        report.above = scheduler.above()
        report.schedules, report.classes = scheduler.schedules, scheduler.classes
        scheduler.schedules = scheduler.classes = 0
        report.cpu = time.process_time() - cpu
        report.pid, report.process_cpu = os.getpid(), time.process_time()
        return report


class Inline(Executor):
    """Jobs run in this process, in ``session``, each when it is waited for, in an order
    drawn from ``seed``: the split search's bookkeeping under every order a pool could
    give, for tests (PAR-19)."""

    calls_back = True

    def __init__(self, session: Session, workers: int, seed: int) -> None:
        self.session = session
        self.workers = workers
        self.warnings: list[str] = []
        self._random = random.Random(seed)
        self._back = False

    def submit(self, unit: Any) -> Any:
        return object()

    def wait(self, pending: Iterable[Any], timeout: float) -> list[Any]:
        return [self._random.choice(list(pending))]

    def outcome(self, handle: Any, unit: Any, pending: dict[Any, Any]) -> Any:
        return unit.work(lambda: 0, self.session, come_back=lambda: self._back)

    def stop_above(self, index: int | None) -> None:
        pass

    def come_back(self, wanted: bool) -> None:
        self._back = wanted


class SplitSearch:
    """The coordinator of one split search (PAR-17..PAR-21).

    ``run_options`` and ``racing`` are what every job's session runs with; ``budget()``
    says how many more runs may start (0: none), ``time_left()`` the seconds left (None:
    no limit), ``ran(summary)`` counts a run.  ``keys``: collect every complete run's
    class key in ``self.keys`` (a test's view of the classes covered)."""

    def __init__(self, fn: Any, options: dict[str, Any], racing: frozenset[int],
                 executor: Executor, *, ran: Callable[[Summary], None],
                 budget: Callable[[], int], time_left: Callable[[], float | None],
                 stopping: Callable[[], bool] = lambda: False, slice: int = SLICE,
                 back: int = BACK, keys: bool = False) -> None:
        self.fn, self.options, self.racing = fn, options, racing
        self.executor = executor
        self.ran, self.budget, self.time_left, self.stopping = ran, budget, time_left, stopping
        # A backend that cannot ask a job back gets short jobs, to balance (PAR-24).
        self.slice, self.back = (slice if executor.calls_back else min(slice, back)), back
        self.want_keys = keys
        self.keys: set[ClassKey] = set()
        self.next_index = 0
        self.schedules = self.classes = 0  # of the level searched last
        self.cpu = 0.0  # CPU seconds of every job, in its worker
        # Each worker process's CPU seconds, start-up included, when it sent its last job.
        self.cpu_by_worker: dict[int, float] = {}
        self.jobs = 0  # jobs run
        self.found: list[Found] = []
        self.learned: frozenset[int] = frozenset()  # racing sites the runs saw (auto)

    def search(self, scheduler: DFSScheduler, learn: bool = False) -> bool:
        """Search every level of ``scheduler``'s search; True when each was exhausted
        (``scheduler`` is then marked exhausted, with the last level's counts).  Stops
        after the level in which a failure was found (``self.found``), and, with
        ``learn``, after the level in which a run saw a racing site not yet a scheduling
        point (``self.learned``: the search must start over with it, RACE-6)."""
        for level in range(scheduler.levels):
            with self.executor.watching(f"level {level} of the DPOR search"):
                if not self._level(scheduler.at_level(level), learn):
                    return False
            if self.found or self.learned:
                return False
        scheduler.finish(self.schedules, self.classes)
        return True

    def _level(self, first: DFSScheduler, learn: bool) -> bool:
        """One level, split; True when every job of it finished its subtree."""
        self.schedules = self.classes = 0
        self.keys = set()
        state = _Level(self)
        state.parked.append(first)
        executor = self.executor
        executor.stop_above(None)
        try:
            while state.parked or state.running:
                state.dispatch()
                if not state.running:
                    return False  # out of budget or time with jobs left
                # A worker idle with no job to take: ask the running ones back (PAR-24).
                executor.come_back(not state.parked and len(state.running) < executor.workers)
                for handle in executor.wait(state.running, timeout=0.1):
                    job = state.running.pop(handle, None)
                    if job is None:
                        continue  # lost with a worker that died: submitted again
                    report = executor.outcome(handle, job, state.running)
                    if isinstance(report, JobReport):  # (else submitted again: PAR-5)
                        state.back(job, report, learn)
                if self.stopping():
                    raise KeyboardInterrupt
        finally:
            executor.come_back(False)
            executor.stop_above(-1 if state.running else None)
            executor.cancel(state.running)
        return True

    def failing(self, session: Session) -> Run:
        """The reported failure (PAR-20): the found run of least class key, run again
        here to be shrunk and reported (PAR-8)."""
        best = min(self.found, key=lambda f: (f.key, f.choices))
        run = session.run(self.fn, ReplayScheduler(best.choices, strict=False),
                          run_index=best.index)
        if run.failure is None:
            raise RuntimeError(
                f"a DPOR schedule failed in a worker process but not when run again here "
                f"(choices {best.choices}): the program does not behave the same in every "
                "run of a schedule (does it read real time, randomness or process-wide state?)")
        return run


class _Level:
    """One level's jobs: parked (here), running (a handle each), and the backtrack
    points waiting for a running job to come back (PAR-18)."""

    def __init__(self, search: SplitSearch) -> None:
        self.search = search
        self.parked: list[DFSScheduler] = []
        self.running: dict[Any, Job] = {}
        self.waiting: dict[int, list[tuple[DFSScheduler, int, int]]] = {}
        self.claimed: set[tuple[tuple[int, ...], int]] = set()

    def dispatch(self) -> None:
        """Give every free worker a job, splitting parked ones when too few wait."""
        search = self.search
        workers = search.executor.workers
        while self.parked and len(self.parked) + len(self.running) < workers:
            part = next((p for p in (s.split() for s in self.parked) if p is not None), None)
            if part is None:
                break
            self._claim(part)
            self.parked.append(part)
        while self.parked and len(self.running) < workers:
            runs = min(search.slice, search.budget() - sum(j.runs for j in self.running.values()))
            if runs <= 0:
                return
            time_left = search.time_left()
            if time_left is not None and time_left <= 0:
                return
            scheduler = self.parked.pop(0)
            if not self.parked and len(self.running) + 1 < workers:
                runs = min(runs, SHORT)  # a worker is left idle: split this job soon
            # Numbered from the runs made so far, as in one process: jobs running at once
            # share numbers, so the first runs of a search all detect races (LEARNING_RUNS).
            job = Job(search.fn, search.options, search.racing, scheduler, search.next_index,
                      runs, time_left, search.want_keys, search.back)
            self.running[search.executor.submit(job)] = job

    def back(self, job: Job, report: JobReport, learn: bool) -> None:
        """A job came back: count its runs, park what is left of it, place its backtrack
        points above its root and those that waited for it."""
        search = self.search
        search.next_index += len(report.summaries)
        for summary in report.summaries:
            search.ran(summary)
            if learn:
                seen = frozenset().union(*(race.sites for race in summary.races))
                search.learned |= seen - search.racing
        search.schedules += report.schedules
        search.cpu += report.cpu
        search.cpu_by_worker[report.pid] = max(search.cpu_by_worker.get(report.pid, 0.0),
                                               report.process_cpu)
        search.jobs += 1
        search.classes += report.classes
        search.found.extend(report.found)
        search.keys.update(report.keys)
        scheduler = report.scheduler
        if not scheduler.subtree_done:
            self.claimed.update(scheduler.claims())
            self.parked.append(scheduler)
        for depth, thread in report.above:
            self._place(scheduler, depth, thread)
        for source, depth, thread in self.waiting.pop(id(job), []):
            self._place(source, depth, thread, came_back=True)

    def _place(self, source: DFSScheduler, depth: int, thread: int,
               came_back: bool = False) -> None:
        """Backtrack point ``(depth, thread)`` above ``source``'s root: to the search that
        owns that choice point, or a job of its own if none does any more."""
        key = source.key(depth)
        if (key, thread) in self.claimed or not source.may_take(depth, thread):
            return
        for parked in self.parked:
            node = parked.owns(key)
            if node is not None:
                if thread not in node.done:
                    node.backtrack.add(thread)
                self.claimed.add((key, thread))
                return
        if not came_back:
            for job in self.running.values():
                if job.scheduler.owns(key) is not None:  # as it was sent: wait for it
                    # (by the job, not its handle: a job lost with its worker keeps it)
                    self.waiting.setdefault(id(job), []).append((source, depth, thread))
                    return
        part = source.rooted(depth, thread)
        self._claim(part)
        self.parked.append(part)

    def _claim(self, part: DFSScheduler) -> None:
        """``part``'s root branch is taken: by it."""
        self.claimed.add((part.key(part.root - 1), part.key(part.root)[-1]))
