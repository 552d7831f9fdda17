"""``explore`` runs a program under many schedules; ``replay`` re-runs one exactly.

Every run happens on a private worker thread, one controlled thread at a time,
with a step budget and a wall-clock watchdog; every thread a run starts is
ended before the run returns.  A failure found by any strategy is shrunk to
fewer context switches before it is reported, and reported with the trace
string that replays it.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import random
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from coordkit import sync
from coordkit._runtime import Chooser, Event, Execution, Failure, WatchdogTimeout, quiet_loggers
from coordkit._shims import StdlibPatch, fresh_thread_names, restore_thread_names
from coordkit.errors import Deadlock, StepLimitExceeded, UncontrolledBlockingError
from coordkit.schedulers import DFSScheduler, ReplayScheduler, Scheduler, make_scheduler
from coordkit.trace import Schedule, render_table

__all__ = ["Choices", "ExploreResult", "FoundFailure", "RunReport", "explore", "replay", "run"]

_GRANULARITIES = ("sync", "line")
MAX_STEPS = 20_000  # the default step budget of a run


@dataclass(frozen=True)
class Choices:
    """A lenient schedule: choice indices (0 keeps the current thread), reduced modulo the
    number of candidates; missing ones are 0.  What ``coordkit.schedules()`` generates."""

    values: tuple[int, ...] = ()

    def __repr__(self) -> str:
        return f"Choices({list(self.values)!r})"


@dataclass
class RunReport:
    """What one recorded run did: its steps, threads, schedule and outcome."""

    events: list[Event]
    thread_names: list[str]
    schedule: Schedule
    failure: Failure | None
    steps: int
    preemptions: int
    virtual_time: float

    @property
    def trace(self) -> str:
        return self.schedule.encode()

    def table(self) -> str:
        """The run as a table: one row per step, one column per thread."""
        steps = [e.step for e in self.events if e.kind != "call"]
        failing = steps[-1] if self.failure is not None and steps else None
        return render_table(self.events, self.thread_names, failing_step=failing)


@dataclass
class FoundFailure:
    """A failing schedule, shrunk, with everything needed to understand and replay it."""

    kind: str
    message: str
    exception: BaseException | None
    trace: str
    report: RunReport
    details: str
    schedules_run: int
    shrink_runs: int
    original_preemptions: int
    strategy: str
    seed: int | None
    target: str = "fn"
    invariant: str | None = None  # the invariant's name, when that is what failed
    thread: str | None = None  # the thread that raised, for an exception

    @property
    def preemptions(self) -> int:
        return self.report.preemptions

    def replay_line(self) -> str:
        invariant = "" if self.invariant is None else f", invariant={self.invariant}"
        return f"coordkit.replay({self.target}, {self.trace!r}{invariant})"

    def __str__(self) -> str:
        kind = self.kind.replace("_", " ")
        head = (
            f"coordkit found {'an' if kind[0] in 'aeiou' else 'a'} {kind} after {self.schedules_run} "
            f"schedule(s) (strategy {self.strategy}"
            + (f", seed {self.seed}" if self.seed is not None else "")
            + f"); shrunk from {self.original_preemptions} to {self.preemptions} preemption(s) "
            f"in {self.shrink_runs} runs."
        )
        parts = [head, "", f"  {self.message}"]
        if self.kind == "exception" and self.thread is not None:
            parts.append(f"  raised in thread {self.thread!r}")
        parts += ["", self.report.table()]
        if self.details:
            parts += ["", self.details.rstrip()]
        parts += ["", "Replay it exactly (e.g. as a regression test):", f"    {self.replay_line()}"]
        return "\n".join(parts)


@dataclass
class ExploreResult:
    """The outcome of ``explore``: ``failure`` is None when no schedule failed."""

    failure: FoundFailure | None
    schedules_run: int
    exhausted: bool
    strategy: str
    seed: int | None
    elapsed: float
    pruned: int = 0
    leaked_threads: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def __str__(self) -> str:
        if self.failure is not None:
            return str(self.failure)
        space = "; the bounded space is exhausted" if self.exhausted else ""
        seed = "" if self.seed is None else f", seed {self.seed}"
        return (
            f"no failure in {self.schedules_run} schedule(s) (strategy {self.strategy}{seed}, "
            f"{self.elapsed:.2f}s){space}"
        )


# -- running one schedule -------------------------------------------------------


class _Worker:
    """A private OS thread that runs controlled executions, so the caller can give up on
    one that blocks outside the scheduler instead of hanging with it."""

    def __init__(self) -> None:
        self._go = _thread.allocate_lock()
        self._go.acquire()
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._job: Callable[[], Any] | None = None
        self._result: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="coordkit-worker", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            try:
                self._go.acquire()
                job = self._job
                if job is None:
                    return
                try:
                    self._result, self._error = job(), None
                except BaseException as exc:
                    self._result, self._error = None, exc
                self._done.release()
            except WatchdogTimeout:  # arrived just after the job ended
                continue

    def run(self, job: Callable[[], Any], timeout: float,
            started: Callable[[], float | None] | None = None) -> Any:
        """Run ``job`` on the worker; interrupt a run that overruns ``timeout`` seconds.

        ``started()`` says when the run in progress began (None between runs); without
        it the whole job is one run.  A run that cannot be interrupted is abandoned and
        ``UncontrolledBlockingError`` says where it is stuck.
        """
        self._job = job
        job_started = sync.real_monotonic()
        self._go.release()
        poll = min(timeout, 0.25) if started is not None else timeout
        while not self._done.acquire(timeout=poll):
            began = job_started if started is None else started()
            if began is not None and sync.real_monotonic() - began >= timeout:
                return self._interrupt(timeout)
        return self._finish()

    def _interrupt(self, timeout: float) -> Any:
        assert self._thread is not None
        ident = self._thread.ident
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(ident), ctypes.py_object(WatchdogTimeout)
        )
        if self._done.acquire(timeout=max(1.0, min(timeout, 5.0))):
            return self._finish()
        frame = sys._current_frames().get(ident)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no stack)"
        self._thread = None  # abandoned: it is a daemon and holds nothing of the caller's
        raise UncontrolledBlockingError(
            f"a controlled run exceeded its wall-clock budget of {timeout:g}s and could not be "
            "interrupted: a thread is blocked outside the scheduler (an object created before "
            "the run, or a C extension that blocks). Where it is stuck:\n" + stack
        )

    @property
    def ident(self) -> int | None:
        return None if self._thread is None else self._thread.ident

    def _finish(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._result

    @property
    def alive(self) -> bool:
        return self._thread is not None

    def close(self) -> None:
        if self._thread is not None:
            self._job = None
            self._go.release()
            self._thread.join(timeout=5.0)


@dataclass
class _Options:
    max_steps: int
    run_timeout: float
    granularity: str
    invariant: Callable[[], Any] | None
    fail_on_thread_exception: bool
    caller_thread: threading.Thread


class _Session:
    """The patched stdlib and the worker thread, shared by the runs of one call.

    The caller hands the worker whole jobs (an exploration loop, a harness step);
    runs inside a job execute directly on the worker, and the watchdog times each
    run from ``run_started``.
    """

    def __init__(self, options: _Options, *, quiet: bool = False) -> None:
        self.options = options
        self._patch = StdlibPatch()
        self._worker: _Worker | None = None
        self.run_started: float | None = None
        self.current: Execution | None = None
        # An exploration runs the same code hundreds of times: coordkit's own log
        # records (a QueueRunner's "Exception in QueueRunner") would repeat as often.
        self._quiet = quiet_loggers(("coordkit",)) if quiet else contextlib.nullcontext()

    def __enter__(self) -> _Session:
        self._patch.__enter__()
        self._quiet.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._worker is not None:
            self._worker.close()
        self._patch.__exit__()
        self._quiet.__exit__(None, None, None)

    def call(self, job: Callable[[], Any], *, per_run: bool = False) -> Any:
        """Run ``job`` on the worker under the watchdog: the whole job is timed, or with
        ``per_run`` each ``run`` inside it."""
        if self._worker is None or not self._worker.alive:
            self._worker = _Worker()
        started = (lambda: self.run_started) if per_run else None
        return self._worker.run(job, self.options.run_timeout, started)

    def run(self, fn: Callable[[], Any], chooser: Chooser, *, record: bool = False) -> Execution:
        """One controlled run of ``fn``; on the worker if called from outside it."""
        worker = self._worker
        if worker is None or _thread.get_ident() != worker.ident:
            try:
                return self.call(lambda: self.run(fn, chooser, record=record), per_run=True)
            except UncontrolledBlockingError as exc:
                return self._abandoned(exc)
        opts = self.options
        ex = Execution(
            chooser,
            max_steps=opts.max_steps,
            record=record,
            caller_thread=opts.caller_thread,
            fail_on_thread_exception=opts.fail_on_thread_exception,
            line_granularity=opts.granularity == "line",
        )
        ex.invariant = opts.invariant
        self.current = ex
        saved = fresh_thread_names()
        self.run_started = sync.real_monotonic()
        try:
            return ex.run(fn)
        finally:
            self.run_started = None
            restore_thread_names(saved)

    def _abandoned(self, exc: UncontrolledBlockingError) -> Execution:
        """The run the worker was abandoned in, marked as a timeout failure."""
        ex = self.current
        assert ex is not None
        ex.failure = Failure("timeout", str(exc).split("\n", 1)[0], exception=exc, details=str(exc))
        return ex


# -- shrinking ------------------------------------------------------------------


def _same_failure(a: Failure, b: Failure | None) -> bool:
    if b is None or a.kind != b.kind:
        return False
    if a.kind == "exception":
        return type(a.exception) is type(b.exception)
    return True


def _shrink(session: _Session, fn: Callable[[], Any], failure: Failure, choices: list[int],
            *, max_runs: int, time_budget: float) -> tuple[list[int], int]:
    """Greedily make ``choices`` smaller (fewer non-zero entries, smaller values) while the
    same kind of failure still happens.  Returns the smallest choices and the runs used."""
    runs = 0
    deadline = sync.real_monotonic() + time_budget

    def fails(candidate: list[int]) -> bool:
        nonlocal runs
        runs += 1
        ex = session.run(fn, ReplayScheduler(candidate, strict=False))
        return ex.chooser_error is None and _same_failure(failure, ex.failure)

    def budget_left() -> bool:
        return runs < max_runs and sync.real_monotonic() < deadline

    best = list(choices)
    while best and best[-1] == 0:
        best.pop()
    improved = True
    while improved and budget_left():
        improved = False
        # Shorter: everything after a cut becomes 0 (no more preemptions there).
        lo, hi = 0, len(best)
        while lo < hi and budget_left():
            mid = (lo + hi) // 2
            if fails(best[:mid]):
                hi = mid
            else:
                lo = mid + 1
        if hi < len(best):
            best, improved = best[:hi], True
        # Fewer choice points: delete one, moving the later ones earlier.
        i = len(best) - 1
        while i >= 0 and budget_left():
            candidate = best[:i] + best[i + 1 :]
            if fails(candidate):
                best, improved = candidate, True
            i = min(i, len(best)) - 1
        # Fewer preemptions: zero each non-zero choice, last first.
        for i in range(len(best) - 1, -1, -1):
            if not budget_left():
                break
            if best[i]:
                candidate = best[:i] + [0] + best[i + 1 :]
                if fails(candidate):
                    best, improved = candidate, True
        # Move a preemption elsewhere while dropping another: finds schedules the
        # local passes cannot reach because both changes are needed at once.
        nonzero = [i for i, c in enumerate(best) if c]
        if len(nonzero) > 1:
            for i in nonzero:
                if improved or not budget_left():
                    break
                for j in range(len(best) + 8):
                    if j == i or not budget_left():
                        continue
                    candidate = [0 if k == i else c for k, c in enumerate(best)]
                    candidate += [0] * (j + 1 - len(candidate))
                    for k in nonzero:
                        if k != i and k != j:
                            candidate[k] = 0
                    candidate[j] = candidate[j] or best[i]
                    if sum(1 for c in candidate if c) < len(nonzero) and fails(candidate):
                        best, improved = candidate, True
                        break
        # Smaller values.
        for i in range(len(best)):
            if not budget_left():
                break
            for v in range(1, best[i]):
                candidate = best[:i] + [v] + best[i + 1 :]
                if fails(candidate):
                    best, improved = candidate, True
                    break
        while best and best[-1] == 0:
            best.pop()
    return best, runs


# -- the public entry points -------------------------------------------------------


def _target_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or "fn"


def _check_positive(name: str, value: Any, *, allow_none: bool = False, integer: bool = True) -> None:
    if value is None and allow_none:
        return
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:
        what = "a positive integer" if integer else "a positive number"
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _options(fn: Any, max_steps: int, run_timeout: float, granularity: str,
             invariant: Any, fail_on_thread_exception: bool) -> _Options:
    if not callable(fn):
        raise TypeError(f"fn must be a zero-argument callable, got {fn!r}")
    _check_positive("max_steps", max_steps)
    _check_positive("run_timeout", run_timeout, integer=False)
    if granularity not in _GRANULARITIES:
        raise ValueError(f"granularity must be one of {_GRANULARITIES}, got {granularity!r}")
    if granularity == "line":
        from coordkit._lines import SUPPORTED

        if not SUPPORTED:
            raise NotImplementedError(
                "granularity='line' needs Python 3.11 or newer (it switches threads from inside "
                "trace callbacks, which needs PyThreadState_LeaveTracing)"
            )
    if invariant is not None and not callable(invariant):
        raise TypeError(f"invariant must be a callable or None, got {invariant!r}")
    return _Options(max_steps, float(run_timeout), granularity, invariant,
                    fail_on_thread_exception, sync.real_current_thread())


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
    granularity: str = "sync",
    invariant: Callable[[], Any] | None = None,
    shrink: bool = True,
    fail_on_thread_exception: bool = True,
    progress: Callable[[int, float], Any] | None = None,
) -> ExploreResult:
    """Run the zero-argument callable ``fn`` under up to ``max_schedules`` schedules.

    ``fn`` and every thread it starts run one at a time under the chosen
    strategy (``"pct"`` with bug depth ``depth``, ``"random"``, ``"dfs"``
    bounded by ``max_preemptions`` with sleep-set reduction, or
    ``"hypothesis"``).  A run fails when a thread raises, every live thread is
    blocked (deadlock), it takes more than ``max_steps`` steps, or
    ``invariant()`` (checked at every step) returns false or raises.  The
    first failure is shrunk to fewer preemptions and returned as
    ``result.failure``; ``result.failure.trace`` replays it with ``replay``.

    ``time_budget`` caps the whole exploration in wall-clock seconds;
    ``run_timeout`` caps one run (a watchdog ends a run stuck outside the
    scheduler).  ``seed=None`` picks a seed and reports it in the result.
    """
    options = _options(fn, max_steps, run_timeout, granularity, invariant, fail_on_thread_exception)
    _check_positive("max_schedules", max_schedules)
    _check_positive("depth", depth)
    _check_positive("time_budget", time_budget, allow_none=True, integer=False)
    if max_preemptions is not None and (isinstance(max_preemptions, bool)
                                        or not isinstance(max_preemptions, int) or max_preemptions < 0):
        raise ValueError(f"max_preemptions must be a non-negative integer or None, got {max_preemptions!r}")
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int or None, got {seed!r}")
    if strategy == "hypothesis":
        return _explore_with_hypothesis(fn, options, max_schedules, seed, shrink, time_budget)
    scheduler = make_scheduler(strategy, seed=seed, depth=depth, max_preemptions=max_preemptions)
    if isinstance(scheduler, DFSScheduler):
        seed = None  # a systematic search draws nothing at random: no seed to report
    clock = sync.real_monotonic
    started = clock()
    deadline = None if time_budget is None else started + time_budget
    state = {"runs": 0, "pruned": 0}
    leaked: list[str] = []

    def loop() -> Execution | None:
        # Runs on the worker thread: one hand-off per exploration, not per schedule.
        while state["runs"] < max_schedules:
            scheduler.begin(state["runs"])
            ex = session.run(fn, scheduler)
            state["runs"] += 1
            scheduler.end(ex)
            leaked.extend(ex.leaked)
            if progress is not None:
                progress(state["runs"], clock() - started)
            if ex.chooser_error is not None:
                raise ex.chooser_error
            state["pruned"] += ex.pruned
            if ex.failure is not None:
                return ex
            if scheduler.exhausted or (deadline is not None and clock() > deadline):
                return None
        return None

    with _Session(options, quiet=True) as session:
        try:
            found = session.call(loop, per_run=True)
        except UncontrolledBlockingError as exc:
            found = session._abandoned(exc)
            state["runs"] += 1
        failure = None
        if found is not None:
            failure = session.call(
                lambda: _report(session, fn, found, state["runs"], shrink, scheduler.name, seed),
                per_run=True,
            )
    return ExploreResult(
        failure=failure,
        schedules_run=state["runs"],
        exhausted=scheduler.exhausted and found is None,
        strategy=scheduler.name,
        seed=seed,
        elapsed=clock() - started,
        pruned=state["pruned"],
        leaked_threads=leaked,
    )


def _report(session: _Session, fn: Callable[[], Any], found: Execution, runs: int, shrink: bool,
            strategy: str, seed: int | None, extra_shrink_runs: int = 0) -> FoundFailure:
    assert found.failure is not None
    choices = [c for _, c in found.choices]
    original = sum(1 for c in choices if c)
    shrink_runs = extra_shrink_runs
    if shrink and found.failure.kind != "timeout":
        choices, used = _shrink(session, fn, found.failure, choices, max_runs=2000, time_budget=10.0)
        shrink_runs += used
    if found.failure.kind == "timeout":
        final = found  # replaying it would only hit the wall-clock budget again
    else:
        final = session.run(fn, ReplayScheduler(choices, strict=False), record=True)
    if not _same_failure(found.failure, final.failure):
        # The program does not fail the same way twice (it reads real time or randomness):
        # report the failure as found, without a recorded table.
        final = found
    report = _run_report(final)
    failure = final.failure
    assert failure is not None
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
        target=_target_name(fn),
        invariant=(_target_name(session.options.invariant)
                   if failure.kind == "invariant" and session.options.invariant else None),
        thread=failure.thread,
    )


def _run_report(ex: Execution) -> RunReport:
    return RunReport(
        events=list(ex.events),
        thread_names=[t.name for t in ex.tasks],
        schedule=Schedule.from_choices(
            ex.choices,
            granularity="line" if ex.line_granularity else "sync",
            fail_on_thread_exception=ex.fail_on_thread_exception,
            max_steps=None if ex.max_steps == MAX_STEPS else ex.max_steps,
            invariant=ex.failure is not None and ex.failure.kind == "invariant",
        ),
        failure=ex.failure,
        steps=ex.steps,
        preemptions=ex.preemptions,
        virtual_time=ex.clock.now,
    )


def _explore_with_hypothesis(fn: Callable[[], Any], options: _Options, max_schedules: int,
                             seed: int, shrink: bool, time_budget: float | None) -> ExploreResult:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hyp_seed

    from coordkit.strategies import schedules

    started = sync.real_monotonic()
    runs = 0
    first: list[Execution] = []

    class _Found(Exception):
        pass

    with _Session(options, quiet=True) as session:

        @settings(
            max_examples=max_schedules,
            database=None,
            deadline=None,
            phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @hyp_seed(seed)
        @given(schedules())
        def body(choices: Choices) -> None:
            nonlocal runs
            runs += 1
            ex = session.run(fn, ReplayScheduler(choices.values, strict=False))
            if ex.chooser_error is not None:
                raise ex.chooser_error
            if ex.failure is not None:
                if not first:
                    first.append(ex)
                if _same_failure(first[0].failure, ex.failure):  # type: ignore[arg-type]
                    raise _Found(choices)

        def job() -> FoundFailure | None:
            try:
                body()
            except _Found as found_exc:
                choices = found_exc.args[0]
                ex = session.run(fn, ReplayScheduler(choices.values, strict=False))
                if ex.failure is None:
                    ex = first[0]
                return _report(session, fn, ex, runs, shrink, "hypothesis", seed)
            return None

        failure = session.call(job, per_run=True)
    return ExploreResult(failure, runs, False, "hypothesis", seed, sync.real_monotonic() - started)


def replay(
    fn: Callable[[], Any],
    trace: str | Schedule | Choices | Sequence[int],
    *,
    strict: bool = True,
    max_steps: int | None = None,
    run_timeout: float = 10.0,
    granularity: str | None = None,
    invariant: Callable[[], Any] | None = None,
    fail_on_thread_exception: bool | None = None,
) -> RunReport:
    """Re-run ``fn`` under exactly the schedule ``trace`` and raise what that run raised.

    A thread's exception is re-raised as it was; a deadlock raises ``Deadlock``;
    a step limit ``StepLimitExceeded``; an invariant ``AssertionError``.  When
    the schedule no longer matches the program (``strict``), ``TraceDivergedError``
    names the choice point where it stopped matching.  Returns a ``RunReport``
    when the run passes, e.g. once the bug is fixed.

    ``granularity``, ``fail_on_thread_exception`` and ``max_steps`` default to
    what the trace recorded (a trace string or ``Schedule``), else to
    ``explore``'s defaults; a ``granularity`` that contradicts the trace's is an
    error, since the schedule could not match.
    """
    recorded = Schedule.decode(trace) if isinstance(trace, str) else trace
    if isinstance(recorded, Schedule):
        if granularity is not None and granularity != recorded.granularity:
            raise ValueError(
                f"granularity={granularity!r}, but the trace was recorded with "
                f"granularity={recorded.granularity!r}; leave granularity out to use the trace's"
            )
        if recorded.invariant and invariant is None and strict:
            raise ValueError(
                "the trace is of a run that failed on its invariant; pass the same "
                "invariant= to replay it"
            )
        granularity = recorded.granularity
        if fail_on_thread_exception is None:
            fail_on_thread_exception = recorded.fail_on_thread_exception
        max_steps = max_steps or recorded.max_steps
    options = _options(
        fn, max_steps or MAX_STEPS, run_timeout, granularity or "sync", invariant,
        True if fail_on_thread_exception is None else fail_on_thread_exception,
    )
    if isinstance(recorded, Schedule):
        scheduler = ReplayScheduler(recorded.choices, strict=strict)
    elif isinstance(trace, Choices):
        scheduler = ReplayScheduler(trace.values, strict=False)
    elif isinstance(trace, Sequence) and all(isinstance(c, int) for c in trace):
        scheduler = ReplayScheduler(list(trace), strict=False)
    else:
        raise TypeError(
            f"trace must be a trace string, a Schedule, Choices or a list of ints, got {trace!r}"
        )
    with _Session(options) as session:
        scheduler.begin(0)
        ex = session.run(fn, scheduler, record=True)
        scheduler.end(ex)
    if ex.chooser_error is not None:
        raise ex.chooser_error
    report = _run_report(ex)
    failure = ex.failure
    if failure is None:
        return report
    if failure.kind == "exception" and failure.exception is not None:
        raise failure.exception
    text = f"{failure.message}\n\n{report.table()}\n{failure.details}".rstrip()
    if failure.kind == "deadlock":
        raise Deadlock(text)
    if failure.kind == "step_limit":
        raise StepLimitExceeded(text)
    if failure.kind == "timeout":
        raise UncontrolledBlockingError(text)
    raise AssertionError(text)


def run(
    fn: Callable[[], Any],
    schedule: str | Schedule | Choices | Sequence[int] = (),
    *,
    max_steps: int | None = None,
    run_timeout: float = 10.0,
    granularity: str | None = None,
    fail_on_thread_exception: bool | None = None,
) -> Any:
    """Run ``fn`` once under the controlled scheduler and return what it returned.

    Threads take turns in round-robin order (or follow ``schedule``, replayed
    leniently, with the options it recorded unless given here), time is
    virtual, and the run raises what ``replay`` would: the thread's exception,
    ``Deadlock``, ``StepLimitExceeded``.
    """
    box: dict[str, Any] = {}

    def body() -> None:
        box["value"] = fn()

    body.__qualname__ = _target_name(fn)
    replay(body, schedule, strict=False, max_steps=max_steps, run_timeout=run_timeout,
           granularity=granularity, fail_on_thread_exception=fail_on_thread_exception)
    return box.get("value")
