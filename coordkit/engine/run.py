"""The one way to run a schedule: ``Session.run(fn, scheduler) -> Run``.

``explore``, ``replay``, the ``Harness``, the stateful machines and every CLI
verb run schedules through a ``Session``; nothing else drives an ``Execution``.

A session holds what the runs of one call share: the patched stdlib and a
private worker thread.  Every run happens on the worker, one controlled thread
at a time, with a step budget and a wall-clock watchdog, so the caller can give
up on a run that blocks outside the scheduler instead of hanging with it.  Every
thread a run starts is ended before ``run`` returns.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import gc
import inspect
import math
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from coordkit import sync
from coordkit.engine import tracing
from coordkit.engine.cause import Preemption
from coordkit.engine.patch import StdlibPatch, fresh_thread_names, restore_thread_names
from coordkit.engine.points import Step
from coordkit.engine.races import Race, RaceDetector
from coordkit.engine.runtime import (
    FINISHED,
    Event,
    Execution,
    Failure,
    QuietLoggers,
    WatchdogTimeout,
)
from coordkit.engine.schedulers import Scheduler
from coordkit.engine.schedulers.base import check_no_arguments
from coordkit.engine.shims import Shims
from coordkit.engine.trace import MAX_STEPS
from coordkit.errors import FailureKind, UncontrolledBlockingError

__all__ = ["MAX_STEPS", "Interrupted", "OpenRun", "Run", "RunOptions", "Session", "check_loop_modes",
           "check_program", "program"]

GRANULARITIES = ("auto", "sync", "line")
RACE_MODES = ("report", "fail", "ignore")
# Race detection costs: it runs in the first LEARNING_RUNS runs of a session and in every
# DETECT_EVERY-th after (and in every run that is recorded or fails on a race), which is
# enough to learn where a program races.
LEARNING_RUNS = 8
DETECT_EVERY = 16


def check_positive(name: str, value: Any, *, integer: bool = True, finite: bool = False,
                   allow_none: bool = False) -> None:
    """A clear ValueError naming ``name`` unless ``value`` is a positive int (or, with
    ``integer=False``, number; with ``finite``, not infinite), or None when allowed."""
    if value is None and allow_none:
        return
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0 or (
            finite and not math.isfinite(value)):
        what = "a positive integer" if integer else (
            "a positive, finite number" if finite else "a positive number")
        raise ValueError(f"{name} must be {what}, got {value!r}")


def check_loop_modes(cancel: Any, adversarial: Any, strategy: Any = "pct") -> None:
    """The event loops' opt-in modes, checked the same way at every entry point (AIO-47):
    ``cancel`` None or ``"tasks"`` (AIO-41) and ``adversarial`` a bool (AIO-44), else an
    error naming the argument and the value; ``cancel="tasks"`` with a ``strategy`` other
    than the default ``"pct"`` is a ValueError, since the cancellation search runs in place
    of the strategy and would ignore it (AIO-48)."""
    if cancel is not None and not (isinstance(cancel, str) and cancel == "tasks"):
        raise ValueError(f"cancel must be None or 'tasks', got {cancel!r}")
    if not isinstance(adversarial, bool):
        raise TypeError(f"adversarial must be a bool, got {adversarial!r}")
    if cancel == "tasks" and not (isinstance(strategy, str) and strategy == "pct"):
        raise ValueError(f"cancel='tasks' runs its own search in place of the strategy, so "
                         f"strategy={strategy!r} would be ignored: leave strategy out")


def check_program(name: str, fn: Any) -> None:
    """A clear TypeError naming ``name`` and the value unless ``fn`` is a program a run can
    run (AIO-1): a zero-argument callable, an ``async def`` function among them.  A
    coroutine object (``main()`` for ``main``) has already begun and can run only once; an
    async generator function makes no coroutine to run."""
    if inspect.iscoroutine(fn):
        fn.close()  # refused: it will never be awaited, and must not warn that it was not
        raise TypeError(f"{name} must be a zero-argument callable or an async def function, "
                        f"got a coroutine object {fn!r}: pass the function itself "
                        f"({fn.__qualname__}, not {fn.__qualname__}())")
    if inspect.isasyncgenfunction(fn):
        raise TypeError(f"{name} must be a zero-argument callable or an async def function, "
                        f"got an async generator function {fn!r}, which makes no coroutine "
                        "to run: wrap it in an async def that iterates it")
    check_no_arguments(name, fn)


def program(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` as a run runs it (AIO-1): called; when it returns a coroutine (it is an
    ``async def``, or a lambda around one), the coroutine is run to its end by
    ``asyncio.run`` on coordkit's loop, and its value is the program's."""

    def run_program() -> Any:
        result = fn()
        if inspect.iscoroutine(result):
            from coordkit.engine.aio import run_coroutine

            return run_coroutine(result)
        return result

    run_program.__qualname__ = getattr(fn, "__qualname__", type(fn).__name__)
    run_program.__wrapped__ = fn  # type: ignore[attr-defined]
    return run_program


@dataclass(frozen=True)
class RunOptions:
    """What shapes every run of one call (checked when made)."""

    max_steps: int = MAX_STEPS
    run_timeout: float = 10.0
    granularity: str = "sync"
    invariant: Callable[[], Any] | None = None
    fail_on_thread_exception: bool = True
    caller_thread: threading.Thread = field(default_factory=sync.real_current_thread)
    races: str = "report"
    racing: frozenset[int] = frozenset()  # sites scheduled from the start (a trace's)
    cancel: bool = False  # event loops offer to cancel each task at its suspensions (AIO-40)
    adversarial: bool = False  # event loops may run any ready callback next (AIO-44)

    def __post_init__(self) -> None:
        check_positive("max_steps", self.max_steps)
        check_positive("run_timeout", self.run_timeout, integer=False, finite=True)
        if not isinstance(self.granularity, str) or self.granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {GRANULARITIES}, got {self.granularity!r}")
        if not isinstance(self.races, str) or self.races not in RACE_MODES:
            raise ValueError(f"races must be one of {RACE_MODES}, got {self.races!r}")
        if self.granularity == "line" and not tracing.SWITCHES:
            raise NotImplementedError(
                "granularity='line' needs Python 3.11 or newer (it switches threads from inside "
                "trace callbacks, which needs PyThreadState_LeaveTracing)"
            )
        if self.traces and tracing.unavailable():
            raise RuntimeError(tracing.unavailable())
        if self.invariant is not None and not callable(self.invariant):
            raise TypeError(f"invariant must be a callable or None, got {self.invariant!r}")
        if not isinstance(self.fail_on_thread_exception, bool):
            raise TypeError(
                f"fail_on_thread_exception must be a bool, got {self.fail_on_thread_exception!r}")
        if not isinstance(self.adversarial, bool):
            raise TypeError(f"adversarial must be a bool, got {self.adversarial!r}")

    @property
    def traces(self) -> bool:
        """True when runs may trace the user's code (lines, accesses, racing sites)."""
        return self.granularity != "sync" or self.races != "ignore"

    def execution(self, scheduler: Any, *, record: bool, snapshots: bool = False, footprints: bool = False,
                  detect: bool = False, racing: frozenset[int] = frozenset()) -> Execution:
        """A new Execution shaped by these options: with a race detector when ``detect``,
        with scheduling points at the ``racing`` sites at auto granularity."""
        racing = racing if self.granularity == "auto" else frozenset()
        watch = detect or footprints
        tracer = None
        if self.granularity == "line" or watch or racing:
            tracer = tracing.Tracer(lines=self.granularity == "line", accesses=watch, racing=racing)
        ex = Execution(
            scheduler,
            shims=Shims,
            tracer=tracer,
            max_steps=self.max_steps,
            record=record,
            snapshots=snapshots,
            footprints=footprints,
            caller_thread=self.caller_thread,
            fail_on_thread_exception=self.fail_on_thread_exception,
            races=RaceDetector() if detect else None,
        )
        ex.invariant = self.invariant
        ex.fail_on_race = detect and self.races == "fail"
        ex.after_points = self.granularity == "auto"
        ex.cancel_tasks = self.cancel
        ex.reorder_ready = self.adversarial
        if footprints and tracer is not None and ex.recorder is not None:
            ex.recorder.memory_traced = True  # line steps report their accesses (SCHED-31)
        return ex


@dataclass(slots=True)
class Run:
    """What one run of one schedule did."""

    options: RunOptions
    failure: Failure | None
    choices: list[tuple[int, int]]  # (enabled threads, index chosen) per choice point
    steps: int
    preemptions: int
    virtual_time: float
    thread_names: list[str]
    events: list[Event]  # recorded rows (empty unless recorded)
    footprints: list[Step] | None  # every step's shared effects (when asked for)
    leaked: list[str]  # threads that could not be ended
    pruned: bool  # the scheduler abandoned it as a repeat of explored work
    scheduler_error: BaseException | None  # a replay that diverged, a non-deterministic program
    races: list[Race] | None  # the races it saw (None: race detection was off)
    racing: frozenset[int]  # the sites that were scheduling points in it (auto granularity)
    warnings: list[str]  # what the run could not control or see
    preempted: list[Preemption]  # its preemptions, where and for whom (recorded runs only)
    snapshots: list[dict[str, Any]] = field(default_factory=list)  # the world at each row's step
    deviations: list[str] = field(default_factory=list)  # from the program's own order (AIO-40)
    task_names: list[str] = field(default_factory=list)  # asyncio tasks, in order (AIO-46)

    @classmethod
    def of(cls, ex: Execution, options: RunOptions) -> Run:
        recorder = ex.recorder
        tracer = ex.tracer
        # Positional, in field order: one is made for every run of an exploration.
        return cls(
            options, ex.failure, ex.choices, ex.steps, ex.preemptions, ex.clock.now,
            [t.name for t in ex.tasks], ex.events, None if recorder is None else recorder.steps,
            ex.leaked, ex.pruned, ex.scheduler_error,
            None if ex.races is None else ex.races.races,
            frozenset() if tracer is None else tracer.racing, ex.warnings, ex.preempted,
            [] if recorder is None or recorder.snapshots is None else list(recorder.snapshots),
            ex.deviations, ex.task_names,
        )

    @property
    def choice_values(self) -> list[int]:
        return [c for _, c in self.choices]


# How often the caller looks up from waiting for the worker, and how long stopping the
# worker may take before it is abandoned (a Ctrl-C ends an exploration within a second).
_POLL = 0.25
# How long a run told it is overdue has to reach a scheduling step before it is interrupted.
_GRACE = 0.5
STOP_WITHIN = 0.8


class Interrupted(WatchdogTimeout):
    """Raised in the worker when its caller was interrupted (Ctrl-C): the run in progress
    ends as a run the watchdog stopped does (its threads are ended), and the job stops at
    the end of that run instead of starting another."""


def _raise_in(thread: threading.Thread, exc: type[BaseException]) -> None:
    """Raise ``exc`` in ``thread`` at its next bytecode."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(exc))


class _Job:
    """One job handed to the worker: its own ``done`` signal, so that a signal a stopped
    job gives late can never be taken for the next job's."""

    __slots__ = ("done", "ended", "error", "fn", "result")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.ended = False
        self.result: Any = None
        self.error: BaseException | None = None

    def execute(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:
            self.error = exc
        self.ended = True
        self.done.release()

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


class _Worker:
    """A private OS thread that runs controlled executions, so the caller can give up on
    one that blocks outside the scheduler instead of hanging with it."""

    def __init__(self) -> None:
        self._go = _thread.allocate_lock()
        self._go.acquire()
        self._job: _Job | None = None
        self._thread: threading.Thread | None = threading.Thread(
            target=self._loop, name="coordkit-worker", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            try:
                self._go.acquire()
                job = self._job
                if job is None:
                    return
                job.execute()
            except WatchdogTimeout:  # arrived just after the job ended
                continue

    def run(self, fn: Callable[[], Any], timeout: float,
            started: Callable[[], float | None] | None = None,
            stopping: Callable[[], bool] = lambda: True,
            overdue: Callable[[float], bool] = lambda seconds: False) -> Any:
        """Run ``fn`` on the worker; stop a run that overruns ``timeout`` seconds.

        ``started()`` says when the run in progress began (None between runs); without
        it the whole job is one run.  An overrunning run is first told so (``overdue``,
        True if there was a run to tell): one still taking scheduling steps ends at its
        next (SCHED-64).  One that takes none for ``_GRACE`` seconds more is interrupted;
        if that fails too it is abandoned, and ``UncontrolledBlockingError`` says where it
        is stuck.  When the caller is interrupted while it waits (Ctrl-C), the job is
        stopped (``stop``) before the interruption goes on.
        """
        job = self._job = _Job(fn)
        self._go.release()
        if self._wait(job, timeout, started, stopping, overdue):
            return job.outcome()
        return self._interrupt(job, timeout)

    def _wait(self, job: _Job, timeout: float, started: Callable[[], float | None] | None,
              stopping: Callable[[], bool], overdue: Callable[[float], bool]) -> bool:
        """Wait for the job to end (True) or its run to overrun ``timeout`` and not stop
        when told (False), in short waits: a signal sent from the worker thread reaches the
        caller's handler only when the caller next runs Python code.  Interrupted, stop the
        job first."""
        job_started = sync.real_monotonic()
        told: float | None = None  # when the run told it was overdue began
        try:
            while not job.done.acquire(timeout=min(timeout, _POLL)) and not job.ended:
                began = job_started if started is None else started()
                if began is None or sync.real_monotonic() - began < timeout:
                    continue
                if told != began and overdue(timeout):
                    told = began
                elif told != began or sync.real_monotonic() - began >= timeout + _GRACE:
                    return False
            return True
        except BaseException:  # KeyboardInterrupt, or what a signal handler raised
            self.stop(job, stopping)
            raise

    def stop(self, job: _Job, stopping: Callable[[], bool]) -> None:
        """Stop ``job`` within ``STOP_WITHIN`` seconds, discarding its outcome.

        ``stopping()`` tells the job to start no further run, and says whether the run in
        progress may be interrupted now (not between runs, nor while a run ends its
        threads, which must all end); if so ``Interrupted`` is raised in the worker, again
        at each look (a program can swallow one).  A worker that has not stopped in time
        is abandoned.
        """
        deadline = sync.real_monotonic() + STOP_WITHIN
        while not job.ended:
            if stopping() and self._thread is not None:
                _raise_in(self._thread, Interrupted)
            if job.done.acquire(timeout=_POLL / 5):
                return
            if sync.real_monotonic() >= deadline:
                self._abandon()
                return

    def _interrupt(self, job: _Job, timeout: float) -> Any:
        assert self._thread is not None
        ident = self._thread.ident
        _raise_in(self._thread, WatchdogTimeout)
        if job.done.acquire(timeout=max(1.0, min(timeout, 5.0))) or job.ended:
            return job.outcome()
        frame = sys._current_frames().get(ident)  # type: ignore[arg-type]
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no stack)"
        self._abandon()
        raise UncontrolledBlockingError(
            f"a controlled run exceeded its wall-clock budget of {timeout:g}s and could not be "
            "interrupted: a thread is blocked outside the scheduler (an object created before "
            "the run, or a C extension that blocks). Where it is stuck:\n" + stack
        )

    def _abandon(self) -> None:
        """Give up on the worker: it is a daemon and holds nothing of the caller's; when
        (if ever) its job ends, it finds no next job and exits."""
        self._thread = None
        self._job = None
        try:
            self._go.release()
        except RuntimeError:  # not yet taken by the worker: it will find no job
            pass

    @property
    def ident(self) -> int | None:
        return None if self._thread is None else self._thread.ident

    @property
    def alive(self) -> bool:
        return self._thread is not None

    def close(self) -> None:
        thread = self._thread
        if thread is not None:
            self._abandon()  # no next job: it exits
            thread.join(timeout=5.0)


class Session:
    """The patched stdlib and the worker thread, shared by the runs of one call.

    The caller hands the worker whole jobs (an exploration loop, a harness step);
    runs inside a job execute directly on the worker, and the watchdog times each
    run from its start.
    """

    def __init__(self, options: RunOptions, *, quiet: bool = False) -> None:
        self.options = options
        self._patch = StdlibPatch()
        self._worker: _Worker | None = None
        self._run_started: float | None = None
        self._current: Execution | None = None
        self.interrupted = False  # the caller was interrupted: no run starts after this
        self._thread_names: Any = None
        # An exploration runs the same code hundreds of times: coordkit's own log
        # records (a QueueRunner's "Exception in QueueRunner") would repeat as often.
        self._quiet = QuietLoggers(("coordkit",) if quiet else ())
        # Auto granularity: the sites seen racing so far become scheduling points of the
        # runs after (``learning``); a replay keeps the set it was given.
        self.racing: frozenset[int] = options.racing
        self.learning = options.granularity == "auto"
        self.detected_runs = 0
        self._collector: list[bool] = []  # the run in progress holds the collector: was it on

    def __enter__(self) -> Session:
        self._thread_names = threading._counter  # type: ignore[attr-defined]
        self._patch.__enter__()
        try:
            self._quiet.__enter__()
        except BaseException:
            self._patch.__exit__()
            raise
        tracing.hold()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._worker is not None:
                self._worker.close()
        finally:
            tracing.release()  # the session's runs are over (SCHED-65)
            self._release_collector()  # a run abandoned in the worker never gave it back
            # A run that was abandoned or interrupted may not have put the numbering back.
            threading._counter = self._thread_names  # type: ignore[attr-defined]
            self._patch.__exit__()
            self._quiet.__exit__(None, None, None)

    def call(self, job: Callable[[], Any], *, per_run: bool = False) -> Any:
        """Run ``job`` on the worker under the watchdog: the whole job is timed, or with
        ``per_run`` each ``run`` inside it."""
        if self._worker is None or not self._worker.alive:
            self._worker = _Worker()
        started = (lambda: self._run_started) if per_run else None
        return self._worker.run(job, self.options.run_timeout, started, self._stopping,
                                self._overdue)

    def _overdue(self, seconds: float) -> bool:
        """The run in progress has overrun its wall-clock budget: tell it (SCHED-64)."""
        ex = self._current
        if ex is None or ex.killing or ex.finished:
            return False
        ex.overdue(seconds)
        return True

    def _stopping(self) -> bool:
        """The caller was interrupted: no run starts after this one; True when the worker
        may be interrupted now (not while a run ends its threads, which must all end)."""
        self.interrupted = True
        ex = self._current
        return ex is not None and not ex.killing and not ex.finished

    def run(self, fn: Callable[[], Any], scheduler: Scheduler, *, run_index: int = 0,
            record: bool = False, snapshots: bool = False, footprints: bool = False) -> Run:
        """Run ``fn`` once under ``scheduler``: ``begin``, the run, ``end``; a ``record``ed
        run keeps rows, and ``snapshots`` of the world at each step (for the viewer)."""
        worker = self._worker
        if worker is None or _thread.get_ident() != worker.ident:
            try:
                return self.call(lambda: self.run(fn, scheduler, run_index=run_index, record=record,
                                                  snapshots=snapshots, footprints=footprints),
                                 per_run=True)
            except UncontrolledBlockingError as exc:
                return self.abandoned(exc)
        if self.interrupted:
            raise Interrupted()
        footprints = footprints or getattr(scheduler, "needs_footprints", False)
        scheduler.begin(run_index)
        detect = self._detects(run_index, record=record)
        self.detected_runs += detect
        ex = self._current = self.options.execution(scheduler, record=record, snapshots=snapshots,
                                                    footprints=footprints,
                                                    detect=detect, racing=self.racing)
        if footprints and ex.recorder is not None and ex.recorder.steps is not None:
            observe = getattr(scheduler, "observe", None)
            if observe is not None:
                ex.recorder.known = observe(ex.recorder.steps) or ()
                ex.replayed = scheduler.replayed() if hasattr(scheduler, "replayed") else ()
        saved = fresh_thread_names()
        self._run_started = sync.real_monotonic()
        try:
            with self._collector_held():
                ex.run(program(fn))
        finally:
            self._run_started = None
            restore_thread_names(saved)
        if self.interrupted:  # the run was cut short: what it found is not a finding
            raise Interrupted()
        run = Run.of(ex, self.options)
        ex.close()
        if run.races and self.learning:
            self.racing = self.racing.union(*(race.sites for race in run.races))
        if run.scheduler_error is None:
            try:
                scheduler.end(run)
            except Exception as exc:  # a strict replay that the program ended early
                run.scheduler_error = exc
        return run

    @contextlib.contextmanager
    def _collector_held(self) -> Iterator[None]:
        """No garbage collection inside a run unless the program asks for one (SCHED-60):
        the cyclic collector is off while the run runs, and what was on is on again after
        it, failing or not.  A collection at a moment the allocation counts pick would run
        finalizers (a task's, a generator's, an earlier run's objects') at different steps
        in runs of one schedule.  Between runs it collects as the counts say: a collection
        of our own before each run would reset the youngest count, and the older
        generations, never due, would keep every earlier run's garbage.  The program's own
        ``gc.collect()``, ``gc.enable()`` and ``gc.disable()`` work as ever."""
        was = gc.isenabled()
        gc.disable()
        hold = [was]
        self._collector = hold
        try:
            yield
        finally:
            if self._collector is hold:
                self._release_collector()

    def _release_collector(self) -> None:
        """The collector as it was before the run that holds it, if one does."""
        if self._collector:
            (gc.enable if self._collector[0] else gc.disable)()
        self._collector = []

    def _detects(self, run_index: int, *, record: bool) -> bool:
        """Whether this run detects races (see ``LEARNING_RUNS``)."""
        options = self.options
        if options.races == "ignore" and options.granularity != "auto":
            return False  # (footprints trace memory accesses without a race detector)
        if options.races == "fail" or record:
            return True
        return run_index < LEARNING_RUNS or run_index % DETECT_EVERY == 0

    def abandoned(self, exc: UncontrolledBlockingError) -> Run:
        """The run the worker was abandoned in, as a timeout failure."""
        ex = self._current
        assert ex is not None
        ex.failure = Failure(FailureKind.TIMEOUT, str(exc).split("\n", 1)[0], exception=exc,
                             details=str(exc))
        # Its threads live on in the abandoned worker, the stuck one among them.
        ex.leaked.extend(t.name for t in ex.tasks if t.state is not FINISHED)
        return Run.of(ex, self.options)


class OpenRun:
    """An open-ended run that the caller advances step by step (what the Harness drives).

    It does not end when its threads do: ``settle`` runs every runnable thread
    until all are parked or done, and a deadline fires only once ``horizon`` lets it.
    """

    def __init__(self, session: Session, scheduler: Scheduler) -> None:
        self._session = session
        ex = self._ex = session._current = session.options.execution(scheduler, record=False)
        ex.fail_on_thread_exception = False
        ex.open_ended = True

        def init() -> None:
            from greenlet import getcurrent

            ex._driver = getcurrent()

        session.call(init)

    @property
    def execution(self) -> Execution:
        return self._ex

    def spawn(self, body: Callable[[], Any], name: str) -> Any:
        """A new runnable thread (it runs at the next ``drive``); call on the worker."""
        return self._ex.spawn(body, name, daemon=True)

    def drive(self, *, steps: int, horizon: float, first: Callable[[], Any] | None = None) -> None:
        """On the worker: ``first()``, then run until settled, with ``steps`` more steps
        at most and deadlines up to ``horizon`` firing; the clock then stands at ``horizon``."""
        ex = self._ex

        def job() -> None:
            if first is not None:
                first()
            ex.set_step_limit(ex.steps + steps)
            ex.horizon = horizon
            with self._session._collector_held():  # each step, as a run (SCHED-60)
                ex.drive()
            if ex.failure is None and ex.clock.now < horizon:
                ex.clock.now = horizon

        self._session.call(job)

    def call(self, job: Callable[[], Any]) -> Any:
        return self._session.call(job)

    def pending(self) -> list[str]:
        return [f"{t.name}: {t.waiting_on}" for t in self._ex.tasks
                if t.state is not FINISHED and t.waiting_on]

    def close(self) -> None:
        self._session.call(self._ex.end)

