"""The controlled runtime: one thread runs at a time, and the scheduler decides which.

A controlled run (an ``Execution``) runs every thread of the program as a
greenlet on one OS thread, so exactly one of them executes at any moment.
Each synchronisation operation calls ``Execution.point`` first, which asks the
scheduler which runnable thread goes next; a thread that must wait parks on a
``WaitQueue`` until another thread unparks it or the virtual clock reaches its
deadline.  Because nothing ever blocks for real, "every live thread is parked"
is observed exactly: that is a deadlock unless a parked thread has a deadline,
in which case the clock jumps to the earliest deadline (autojump).

Vocabulary (see ``points``):

* a *step* runs from one scheduling point of a thread to its next;
* a *choice point* is a point at which more than one thread could run; the
  scheduler's answer is an index into the enabled threads, ordered so that
  ``0`` means "keep running the current thread" (or, if it cannot run, "the
  next thread in round-robin order").  Shrinking towards 0 removes preemptions.

With a race detector (``races``), the run also keeps vector clocks: every
synchronisation a thread does orders it (``RaceDetector.synchronise``, ``wake``,
``spawn``), and every access the tracer reports is checked against them.

This module imports nothing of the engine above it: the stdlib shims and the
tracer are handed to an ``Execution`` by whoever creates it (``run``).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import greenlet

from coordkit import sync
from coordkit.engine.cause import Preemption, is_coordkits, preemption, thread_states
from coordkit.engine.failures import (
    Failure,
    after_return_failure,
    choice_limit_failure,
    deadlock_failure,
    exception_failure,
    invariant_failure,
    race_failure,
    slow_run_failure,
    step_limit_failure,
    watchdog_failure,
)
from coordkit.engine.points import ANY, DAEMONS, ENDS, READ, THREADS, WRITE, Point, access_of, label_of, runs
from coordkit.engine.races import RaceDetector
from coordkit.engine.record import Event, Recorder, shown
from coordkit.engine.recursion import room_for_threads
from coordkit.engine.task import (
    BLOCKED,
    FINISHED,
    RUNNABLE,
    Clock,
    Kill,
    Names,
    Task,
    TaskGreenlet,
    WaitQueue,
    WatchdogTimeout,
    call_excepthook,
    new_point,
)
from coordkit.engine.trace import CHOICES_PER_STEP, TRACE_THREADS

__all__ = [
    "BLOCKED", "FINISHED", "RUNNABLE", "Event", "Execution", "Failure", "Kill", "QuietLoggers",
    "Task", "WaitQueue", "WatchdogTimeout", "current_execution", "point_of",
]

# Choice points in a row that one thread may keep the others waiting before it yields.
FAIRNESS_BOUND = 1000
# Polls in a row (a sleep(0), a wait already due), with every other thread parked, after
# which the clock moves on: to the earliest deadline, or by IDLE_TICK if there is none.
IDLE_YIELDS_BEFORE_TIME_PASSES = 100
IDLE_TICK = 1e-3
# The steps a run's daemon threads may take after the program returned (SCHED-54): a
# daemon still running then is stopped there, with a warning that says so.
AFTER_RETURN_STEPS = 200
# Points that are not operations on a synchronisation object (their obj, if any, names
# memory or the thread itself).
_NOT_SYNCHRONISATION = frozenset({"line", "store", "access", "start"})
# Loggers that report any BaseException a worker thread dies of, and so would report
# the Kill that ends a run's leftover threads (ThreadPoolExecutor's "Exception in worker").
_LOGGERS_THAT_REPORT_KILLS = ("concurrent.futures",)


class _Terminate(BaseException):
    """Internal: unwinds the driver when the run ends from inside a thread."""


class Scheduler(Protocol):
    """What an Execution asks at each choice point (``schedulers.Scheduler`` is one)."""

    def choose(self, point: Point, enabled: list[Point]) -> int: ...


_getcurrent = greenlet.getcurrent


def _accelerator() -> Any:
    """The engine's hot paths compiled (``_ctrace.c``), or None: not built here, or
    ``COORDKIT_PURE_PYTHON=1``.  Either way the same choices are made (SCHED-67)."""
    if os.environ.get("COORDKIT_PURE_PYTHON") == "1":
        return None
    try:
        from coordkit.engine import _ctrace
    except ImportError:
        return None
    _ctrace.configure(Point, RUNNABLE, FAIRNESS_BOUND)
    return _ctrace


ACCELERATED = _accelerator()
# ``stay_accelerated(ex, kind, obj, callback)``: ``ex``'s point where the running thread goes
# on, taken in C (True), or nothing done (False: ``_reach`` takes it); None without the
# accelerator.
stay_accelerated: Callable[[Execution, str, str, bool], bool] | None = (
    None if ACCELERATED is None else ACCELERATED.stay)
# ``enabled_accelerated(tasks, cur)``: ``Execution._enabled(cur)`` in C (None without the
# accelerator): the candidates at every choice point.
enabled_accelerated: Callable[[list[Task], Task | None], list[Point]] | None = (
    None if ACCELERATED is None else ACCELERATED.enabled)


def current_execution() -> Execution | None:
    """The execution whose thread is calling, or None outside a controlled run."""
    try:
        g = _getcurrent()
    except RuntimeError:
        # "greenlet is being finalized": a gc callback (Hypothesis times collections
        # with perf_counter) runs while a finished run's greenlet is freed; whoever is
        # calling, it is not a controlled thread.
        return None
    if type(g) is TaskGreenlet:
        ex = g.task_execution
        if not ex.finished:
            return ex
    return None


if ACCELERATED is not None:  # (the same in C: on 3.11 a traced Python call costs ~2 k)
    current_execution = ACCELERATED.current_execution_of(_getcurrent, TaskGreenlet)
sync.controller = current_execution


class QuietLoggers:
    """Disable the named loggers inside ``with`` (re-entrant per object: each ``with``
    restores what it found).  The loggers are looked up once: a run enters this."""

    __slots__ = ("_loggers", "_saved")

    def __init__(self, names: tuple[str, ...]) -> None:
        self._loggers = [logging.getLogger(name) for name in names]
        self._saved: list[list[bool]] = []

    def __enter__(self) -> None:
        self._saved.append([lg.disabled for lg in self._loggers])
        for lg in self._loggers:
            lg.disabled = True

    def __exit__(self, *exc: object) -> None:
        for lg, was in zip(self._loggers, self._saved.pop()):
            lg.disabled = was


_QUIET_KILL_REPORTS = QuietLoggers(_LOGGERS_THAT_REPORT_KILLS)


def _ran() -> None:
    """A closed run's thread's target, in place of its own (see ``Execution.close``)."""


class Execution:
    """One controlled run of a program under a given scheduler.

    ``shims(execution)`` makes the objects ``coordkit.sync`` hands to its threads;
    ``tracer`` (a ``tracing.Tracer``) is installed in each thread and removed at the
    end; ``races`` (a ``RaceDetector``) orders the run's accesses.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        shims: Callable[[Execution], Any],
        tracer: Any = None,
        max_steps: int = 20_000,
        record: bool = False,
        snapshots: bool = False,
        footprints: bool = False,
        caller_thread: threading.Thread | None = None,
        fail_on_thread_exception: bool = True,
        races: RaceDetector | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.tracer = tracer
        self._budgets(max_steps)
        self.record = record
        self.caller_thread = caller_thread
        self.fail_on_thread_exception = fail_on_thread_exception
        self.races = races
        self.fail_on_race = False
        self.warnings: list[str] = []  # what the run could not control or see
        self._event_loops()
        self.clock = Clock()
        self.shims = shims(self)
        self.tasks: list[Task] = []
        self.current: Task | None = None
        self.steps = 0
        self._choosing(scheduler)
        self._keep(record=record, footprints=footprints, snapshots=snapshots)
        self._ending()
        self.invariant: Callable[[], Any] | None = None
        # The invariant or the scheduler (the caller's code) is running: its operations and
        # accesses are no scheduling points of the program's.
        self._in_callers_code = False
        # A scheduling point runs with tracing off, as inside a trace callback (see
        # callback_point): the thread it switches to, and the caller's code, must run
        # outside that state; ``_tstate`` is the OS thread's (see Tracer.thread_state).
        self.in_callback = False
        self._tstate: int | None = None
        self._stop = False
        # Open-ended mode (the Harness): the run does not end when its threads do, and
        # "nothing can run" means "settled", not "deadlocked".  Deadlines fire only up
        # to the horizon.
        self.open_ended = False
        self.horizon: float | None = None
        self._nondaemon_alive = 0
        self._runnable = 0  # tasks whose state is RUNNABLE (a fast path when only one is)
        self._driver: greenlet.greenlet | None = None
        self._starting: Task | None = None  # a thread whose first step the driver begins
        self.names = Names()  # labels and hashes of what the run creates
        self._outer_excepthook = threading.excepthook

    def _budgets(self, max_steps: int) -> None:
        """The run's step budget, per thread: every thread started adds ``max_steps`` to
        ``step_limit``, so a run of a hundred threads is not stopped as if it were a
        livelock (see ``set_step_limit``); and its wall-clock budget (see ``overdue``)."""
        self.max_steps = max_steps
        self.step_limit = 0
        self.max_choices = 0
        self.overdue_after: float | None = None

    def _event_loops(self) -> None:
        """What the run's event loops may do and report: none yet."""
        # What the run did that the program's own order never does (a cancellation coordkit
        # injected, AIO-40; callbacks out of FIFO order, AIO-44): a failure depends on it.
        self.deviations: list[str] = []
        self.cancel_tasks = False  # event loops offer to cancel tasks (AIO-40)
        self.reorder_ready = False  # event loops may run any ready callback next (AIO-44)
        # Each event loop's tasks and their await chains, asked for at a failure (AIO-45).
        self.task_reports: list[Callable[[], tuple[str, ...]]] = []
        self.task_names: list[str] = []  # the asyncio tasks made, in order (AIO-46)

    def _ending(self) -> None:
        """How the run ends: not yet."""
        self.failure: Failure | None = None
        self.finished = False
        self.killing = False
        self.leaked: list[str] = []
        self.scheduler_error: BaseException | None = None
        self.pruned = False
        self.thread_exceptions: list[tuple[str, BaseException]] = []
        # The step at which the program returned while a daemon could still run (SCHED-53).
        self.returned_at: int | None = None

    def _choosing(self, scheduler: Scheduler) -> None:
        """What the run keeps about its choice points."""
        self.choices: list[tuple[int, int]] = []  # (number of candidates, choice)
        # The scheduler's choices at the first choice points, known before the run
        # (``Scheduler.replayed``): a 0 there is taken without asking.
        self.replayed: Sequence[int] = ()
        self.preemptions = 0
        self._choices_at_step = 0  # len(choices) when the last step began (see _begin_step)
        self._streak = 0  # choice points in a row at which the current thread stayed
        self._idle_yields = 0  # sleep(0)s in a row with no other thread able to run
        # The scheduler is coordkit's own: it runs no code of the user's, traced or not.
        self._scheduler_untraced = type(scheduler).__module__.startswith("coordkit.")
        # Its draw of "the running thread goes on" at a choice point where it comes first,
        # if it has one (see _goes_on).
        self._stays: Callable[[], bool] | None = (
            getattr(scheduler, "stays", None) if self._scheduler_untraced else None)
        self.after_points = False  # points after release/set/notify/put/get/join (RACE-9)

    def _keep(self, *, record: bool, footprints: bool, snapshots: bool) -> None:
        """What the run keeps beyond its outcome (an exploration's runs: nothing): rows
        (``record``), the viewer's ``snapshots``, ``footprints`` for DPOR; and, to explain
        a recorded run's failure, the locks it made (who holds what; held weakly, so a
        replay keeps no object of the program alive), its preemptions (see ``cause``)
        and coordkit's own threads (join watchers, by tid)."""
        self.recorder = (Recorder(rows=record, footprints=footprints, snapshots=snapshots)
                         if record or footprints else None)
        self.locks: weakref.WeakSet[Any] | None = weakref.WeakSet() if record else None
        self.preempted: list[Preemption] = []
        self.helpers: set[int] = set()

    def set_step_limit(self, limit: int) -> None:
        """The run may take ``limit`` steps, and make a bounded number of choices: its
        trace must stay decodable, so that bound grows with the step limit, up to what
        ``trace`` accepts for the run's budget."""
        self.step_limit = limit if self.overdue_after is None else -1
        self.max_choices = CHOICES_PER_STEP * min(limit, self.max_steps * TRACE_THREADS)

    # -- the run's threads as the program sees them ------------------------

    def live_thread_objects(self) -> list[threading.Thread]:
        """The ``Thread`` objects of the run's threads that have not ended, main first."""
        return [self._thread_object(t) for t in self.tasks if t.state is not FINISHED]

    def current_thread_object(self) -> threading.Thread:
        assert self.current is not None
        return self._thread_object(self.current)

    def _thread_object(self, task: Task) -> threading.Thread:
        """The ``Thread`` a task runs as; the main task is the caller's own thread."""
        if task.thread is not None:
            return task.thread
        return self.caller_thread or sync.real_current_thread()

    # -- threads ----------------------------------------------------------

    def spawn(self, target: Callable[[], Any], name: str, daemon: bool, thread: Any = None) -> Task:
        """Create a runnable controlled thread (it runs when the scheduler picks it)."""
        tid = len(self.tasks)
        label = f"T{tid}"
        # Positional (tid, name, daemon, target, label, thread, glet, state, pt): this runs
        # for every thread of every run.
        task = Task(tid, name, daemon, target, label, thread, None, RUNNABLE,
                    new_point((tid, "start", label, False, self.steps)))
        glet = TaskGreenlet(self._task_main, parent=self._driver)
        glet.task = task
        glet.task_execution = self
        task.glet = glet
        self.tasks.append(task)
        if self.races is not None:
            self.races.spawn(None if self.current is None else self.current.tid, tid)
        if self.returned_at is None:  # after the return, the bound is the run's (SCHED-54)
            self.set_step_limit(self.step_limit + self.max_steps)
        if not daemon:
            self._nondaemon_alive += 1
        self._runnable += 1
        if self.recorder is not None:  # tids are handed out in order: starts conflict
            # Its label too: the start's point named the thread it was about to make, which
            # another start may have made first while it stood there (SCHED-49).
            self._footprint(label, "start")
            self._footprint(runs(label), "start")
            self._footprint(THREADS, "start")
            if daemon:
                self._footprint(DAEMONS, "start")
        if self.locks is not None and daemon and is_coordkits(task, None):
            # Known now: a thread that has ended no longer says what it ran.
            self.helpers.add(tid)
        return task

    def _task_main(self) -> None:
        task = self.current
        assert task is not None
        if self.tracer is not None:
            self.tracer.install(self)
            if self._tstate is None and self.tracer.thread_state is not None:
                self._tstate = self.tracer.thread_state()
        if self.recorder is not None:
            self._begin_step(task)
        try:
            task.target()
        except Kill:
            pass
        except (_Terminate, WatchdogTimeout):
            raise
        except BaseException as exc:  # a thread died: the program's failure, not ours
            self._thread_died(task, exc)
        finally:
            tstate = None if self._tstate is None else self.untraced()  # SCHED-88
            try:
                self._thread_ended(task)
            finally:
                if tstate is not None:
                    self.traced_again(tstate)
        # Returning hands control back to the driver, which picks the next thread.

    def _thread_died(self, task: Task, exc: BaseException) -> None:
        self.thread_exceptions.append((task.name, exc))
        task.exception = exc
        if task.thread is not None and threading.excepthook is not self._outer_excepthook:
            # The program installed a hook: call it, as a real thread would.  The one in
            # place when the run began is the caller's (the default prints, pytest's
            # warns): calling it would repeat the report once per schedule.
            call_excepthook(task, exc)
        if self.failure is None and not self.killing and (self.fail_on_thread_exception or task.tid == 0):
            self.failure = exception_failure(task, exc)

    def _thread_ended(self, task: Task) -> None:
        """The thread's last step ends it and wakes its joiners: part of its footprint."""
        if self.recorder is not None:
            self.recorder.effect(task, task, "end")
        if self.races is not None:
            self.races.synchronise(task.tid, task.label, WRITE)
        if task.state is RUNNABLE:  # (a parked one ends only when a finished run unwinds)
            self._runnable -= 1
        task.state = FINISHED
        task.pt = new_point((task.tid, "end", task.label, False, self.steps))
        if self.recorder is not None:
            self._ending_footprint(task)
        if not task.daemon:
            self._nondaemon_alive -= 1
            if self._nondaemon_alive == 0 and self.recorder is not None:
                self._end_of_run(task)
        if task.joiners:
            task.joiners.unpark_all(self)

    def _ending_footprint(self, task: Task) -> None:
        """Which thread's end is the program's end, and so what it cuts off, depends on the
        order of the ends once a daemon has started (SCHED-31): a daemon's start writes
        the daemons, every other thread's end reads them and then the ends, which the end
        that leaves one other thread to end writes.  So a thread's end is never taken as
        commuting with the end after which it would be the program's end, nor with a
        daemon's start; the other ends still commute, and without daemons all do."""
        if task.daemon:
            return
        self._footprint(DAEMONS, "end", READ)
        if any(t.daemon for t in self.tasks):
            self._footprint(ENDS, "end", WRITE if self._nondaemon_alive == 2 else READ)

    def _end_of_run(self, task: Task) -> None:
        """The last non-daemon thread ended: the program's end, which cuts off every daemon
        still alive (SCHED-31).  With one alive, it depends on everything (``ANY``); with
        none, it reads each daemon's end, so that a daemon's end moved after it is a race
        (in that order the daemon is cut off).  Not a daemon's end that this step joined:
        the join reads it already, and ran after it."""
        others = [t for t in self.tasks if t is not task]
        if any(t.state is not FINISHED for t in others):
            self._footprint(ANY, "end of run")  # its daemons take no step after it
            return
        footprint = task.step.footprint if task.step is not None else ()
        joined = {e.obj for e in footprint if e.op == "join"}
        for other in others:
            label = label_of(other)
            if other.daemon and label not in joined:
                self._footprint(label, "end", READ)

    # -- the run ----------------------------------------------------------

    def run(self, fn: Callable[[], Any]) -> Execution:
        """Run ``fn`` as thread T0 until every non-daemon thread ends or a failure, then
        its daemons that can still run until they end, block for good or reach the
        after-return bound (SCHED-53)."""
        self._driver = _getcurrent()
        self._outer_excepthook = threading.excepthook
        main = self.spawn(fn, "MainThread", daemon=False)
        with room_for_threads(sys._getframe()):
            try:
                self._drive(main, until_all_ended=True)
                if self.failure is None and not self._stop and self._daemons_can_run():
                    self._after_return()
            except WatchdogTimeout as exc:
                if self.failure is None:
                    self.failure = watchdog_failure(
                        self.current, exc, line=self.tracer is not None and self.tracer.lines)
            finally:
                if self.failure is not None and self.returned_at is not None:
                    self.failure = after_return_failure(self.failure)
                elif self.returned_at is not None and not self.pruned and self.scheduler_error is None:
                    self._left_running()
                if self.failure is not None and self.locks is not None:
                    self.failure.threads = thread_states(self.tasks, self.locks, self.helpers)
                    self.failure.tasks = tuple(t for tasks in self.task_reports for t in tasks())
                self.end()
        return self

    def warn(self, message: str) -> None:
        """Something the run could not control or see (once per message)."""
        if message not in self.warnings:
            self.warnings.append(message)

    def _program_daemons(self) -> list[Task]:
        """The program's daemon threads that have not ended (coordkit's own left out)."""
        out = []
        for task in self.tasks:
            if task.daemon and task.state is not FINISHED:
                frame = task.glet.gr_frame if task.glet is not None else None
                if not is_coordkits(task, frame):
                    out.append(task)
        return out

    def _daemons_can_run(self) -> bool:
        return any(t.state is RUNNABLE or (t.state is BLOCKED and t.deadline is not None)
                   for t in self._program_daemons())

    def _after_return(self) -> None:
        """The program returned (its last non-daemon thread ended) with a daemon that can
        still run: as in a test process, its daemons go on, under the scheduler, each of
        their steps a step of the run and each switch a choice point (SCHED-53), for at
        most ``AFTER_RETURN_STEPS`` steps (SCHED-54)."""
        self.returned_at = self.steps
        # Only the step limit: the choices allowed (set_step_limit) stay what the trace
        # was sized for, and running out of them after the return is the bound too.
        self.step_limit = self.steps + AFTER_RETURN_STEPS
        self._drive(self._next(self.current), until_all_ended=False)

    def _left_running(self) -> None:
        """The program's daemons that never ended after the return: each is a warning,
        not a failure (SCHED-54); the warning says whether it blocked for good or was
        stopped at the bound."""
        for task in self._program_daemons():
            if task.state is not BLOCKED or task.deadline is not None:
                why = (f"was still running {AFTER_RETURN_STEPS} steps after the program "
                       "returned (the after-return step bound); it was stopped there, and what "
                       "it would have done next was not explored")
            else:
                why = f"never ended: after the program returned it blocked for good on {task.waiting_on}"
            self.warn(f"daemon thread {task.name!r} {why} (stop and join it before returning)")

    def drive(self) -> None:
        """Open-ended mode: run runnable threads until none can run, or a failure."""
        self._driver = _getcurrent()
        self._stop = False
        with room_for_threads(sys._getframe()):
            self._drive(self._next(self.current), until_all_ended=False)

    def _drive(self, nxt: Task | None, *, until_all_ended: bool) -> None:
        """Switch to ``nxt``, and on to whichever thread is next each time control comes
        back: a thread ended, none can run, or one asks for a thread's first step.  Every
        thread's first step is begun here, so that each starts at the recursion depth of
        this frame, as a real thread starts at the bottom of its own stack (SCHED-40):
        a greenlet keeps the depth of whoever first switched to it."""
        try:
            while nxt is not None:
                self.current = nxt
                assert nxt.glet is not None
                nxt.glet.switch()
                starting, self._starting = self._starting, None
                if self._stop or self.failure is not None:
                    return
                if starting is not None:
                    nxt = starting
                    continue
                if until_all_ended and self._nondaemon_alive == 0:
                    return
                # A thread ended (or parked with nothing else runnable): the engine picks the
                # next one untraced, as at a point (SCHED-88).
                tstate = self.untraced_where_it_pays()
                try:
                    nxt = self._next(self.current)
                finally:
                    self.traced_again(tstate)
        except _Terminate:
            pass

    def end(self) -> None:
        """End every thread still alive; nothing started by the run outlives it."""
        self.killing = True
        unwinds = False
        for task in self.tasks:
            # What unwinding does (a thread's end, its finally blocks) is no step of the
            # run's: a footprint holds only what a schedule did (SCHED-30).
            task.step = None
            unwinds = unwinds or (task.glet is not None and not task.glet.dead)
        try:
            if unwinds:  # (most runs end with every thread ended: nothing to unwind)
                with _QUIET_KILL_REPORTS, room_for_threads(sys._getframe()):
                    self._unwind()
        finally:
            self.current = None
            self.finished = True
            # The program may have installed a hook and not put the caller's back: the
            # next run must start as this one did.
            threading.excepthook = self._outer_excepthook
            if self.tracer is not None:
                self.tracer.uninstall()

    def close(self) -> None:
        """The run is over and read (``Run.of``): cut the reference cycles its threads made
        (task - greenlet - execution, task - ``Thread`` - task, the shims - execution, the
        objects the tracer, the recorder and the race detector hold - execution, a thread's
        exception - its traceback's frames - execution), so
        that reference counting frees the run when it is dropped and it leaves the cyclic
        collector nothing to collect between runs (SCHED-60: collecting it cost ~6% of a
        small run).  A thread left running (``leaked``) keeps its links: it may still
        unwind."""
        for task in self.tasks:
            glet = task.glet
            if glet is not None and not glet:  # ended, or never started
                task.glet = None
                task.thread = None
                task.target = _ran
                task.exception = task.parked_on = None  # (a killed waiter's queue holds it)
        self.thread_exceptions = []  # (their tracebacks hold the run's frames)
        self.shims = None
        # The driver is the session worker's main greenlet, and a session's last run outlives
        # that thread: held here, it was found freed by a later collection (a segfault).
        self._driver = None
        if self.leaked:
            return
        # What holds the run's objects, and so the shims that hold the execution: the
        # tracer's pending instruction, the objects the recorder and the race detector keep
        # for their labels (and their weak references' callbacks, which hold them).
        for part in (self.recorder, self.races):
            if part is not None:
                part.close()
        self.tracer = self.races = self.recorder = None

    def _unwind(self) -> None:
        for task in self.tasks:
            glet = task.glet
            if glet is None or glet.dead:
                continue
            self.current = task
            if glet:  # started and suspended: unwind it (its finally blocks run)
                try:
                    glet.throw(Kill())
                except BaseException:
                    pass
            if glet and not glet.dead:
                self.leaked.append(task.name)
            task.state = FINISHED

    def _stop_at_bound(self) -> None:
        """The daemons reached the after-return bound (SCHED-54): the run ends here, as a
        failure does, and cuts off what could run next (an ``ANY`` effect, SCHED-31)."""
        if self.recorder is not None:
            self._footprint(ANY, "end of run")
        self._stop = True
        assert self._driver is not None
        self._resume(self._driver)
        raise Kill()

    def overdue(self, seconds: float) -> None:
        """From the watchdog's thread: the run has run for ``seconds``, its wall-clock
        budget.  It ends at its next scheduling step, as a step budget spent does (the
        step check costs nothing more), failing as a slow run (SCHED-64)."""
        self.overdue_after = seconds
        self.step_limit = -1

    def terminate(self, failure: Failure) -> None:
        """Record ``failure`` and end the run from inside a controlled thread."""
        if self.failure is None:
            self.failure = failure
        self._stop = True
        assert self._driver is not None
        self._resume(self._driver)
        raise Kill()  # a terminated run never resumes its threads, only unwinds them

    # -- scheduling -------------------------------------------------------

    def point(self, kind: str, obj: str = "") -> None:
        """A scheduling point: the current thread is about to do ``kind`` on the object
        labelled ``obj`` (``Lock#2``, ``T1``, a memory location; ``""`` for nothing shared).

        In a traced run it runs with tracing off: the engine is no user code, and every
        call it made would otherwise go through the tracer's call hook."""
        if self.killing or self._in_callers_code:
            return
        if self.in_callback or self._tstate is None:
            # (The C stay reads the Execution's __dict__ directly: cheaper than _reach's
            # frames where the thread goes on.)
            if stay_accelerated is None or not stay_accelerated(self, kind, obj, False):
                self._reach(kind, obj)
            return
        self.tracer.stop_tracing(self._tstate)
        self.in_callback = True
        try:
            self._reach(kind, obj)
        finally:
            self.in_callback = False
            self.tracer.resume_tracing(self._tstate)

    def untraced(self) -> int | None:
        """The running thread goes on in engine code: from here it runs untraced, in the
        trace-callback state a point runs in (on 3.11 a traced thread's every instruction
        takes the tracing path).  Returns what ``traced_again`` takes back: None when the
        thread was untraced already."""
        tstate = self._tstate
        if tstate is None or self.in_callback:
            return None
        self.tracer.stop_tracing(tstate)
        self.in_callback = True
        return tstate

    def untraced_where_it_pays(self) -> int | None:
        """``untraced`` where engine code that makes no point gains by it (3.11's settrace:
        ``Tracer.untraced_pays``); elsewhere None, which ``traced_again`` ignores."""
        if self._tstate is None or not self.tracer.untraced_pays:
            return None
        return self.untraced()

    def traced_again(self, tstate: int | None) -> None:
        """Undo ``untraced`` (given what it returned)."""
        if tstate is not None:
            self.in_callback = False
            self.tracer.resume_tracing(tstate)

    def callback_point(self, kind: str, obj: str = "") -> None:
        """``point`` from inside a trace or monitoring callback, where CPython has turned
        tracing off already (``tracing`` calls it at each line, store and racing access)."""
        if self.killing or self._in_callers_code:
            return
        self.in_callback = True
        try:
            self._reach(kind, obj)
        finally:
            self.in_callback = False

    def _reach(self, kind: str, obj: str) -> None:
        """The current thread reaches a scheduling point (see ``point``)."""
        task = self.current
        assert task is not None
        steps = self.steps = self.steps + 1
        task.pt = new_point((task.tid, kind, obj, task.yielding, steps))
        if steps > self.step_limit:
            if self.returned_at is not None:
                self._stop_at_bound()
            if self.overdue_after is not None:
                self.terminate(slow_run_failure(self.overdue_after, self.steps, self.tasks, task,
                                                kind, obj))
            self.terminate(step_limit_failure(self.step_limit, self.max_steps, self.tasks, task,
                                              kind, obj))
        if self.invariant is not None:
            self._check_invariant(task)
        # _next's answers where the thread goes on, asked here: most points are these, and
        # each frame less is a part of what a point costs (issue 33).
        alive = self._nondaemon_alive > 0 and task.state is RUNNABLE
        if not (alive and (self._runnable == 1 or self._goes_on(task))):
            # (Inline, not a method of its own: a frame less at every switch.  The
            # accelerator's stay does the same two calls after a drawn switch.)
            nxt = self._next(task, asked=alive)
            if nxt is not task:
                self._switch(nxt)
        if self.recorder is not None:
            self._begin_step(task)
            if self.in_callback and self.recorder.snapshots is not None:
                # A snapshot shows the program's objects: their reprs are its code.
                self._traced(self.recorder.point, task, self.clock.now)
            else:
                self.recorder.point(task, self.clock.now)  # it takes effect now (TRACE-7)
        if self.races is not None and obj and kind not in _NOT_SYNCHRONISATION:
            # The thread does its operation now, with no other thread between.
            self.races.synchronise(task.tid, obj, access_of(kind))

    def made(self, obj: Any, kind: str) -> str:
        """A synchronisation object of the run is made: its label (``Lock#2``); a
        recorded run's snapshots show it from now on."""
        self.show(obj)
        return self.names.label(kind)

    def show(self, obj: Any) -> None:
        """A recorded run's snapshots show ``obj`` (it has ``_ck_state()``) from now on."""
        if self.recorder is not None and self.recorder.snapshots is not None:
            self.recorder.snapshots.add(obj)

    def after(self, kind: str, target: Any, *, woke: bool) -> None:
        """A scheduling point just after an operation on ``target`` that ``woke`` another
        thread (``after-release``, ``after-set``, ``after-notify``, ``after-put``) or joined
        an ended one without a point (``after-join``), at auto granularity only (RACE-9).  It
        is a point only when another thread can run: with none, no choice could be made
        there, and the run's steps stay those of sync granularity.

        Whether the point is there depends on other threads (a waiter parked on ``target``
        before the operation, or not), so at auto granularity the operation is marked
        ``wake`` in its footprint, woken or not: DPOR then never takes it to only let a
        later operation on ``target`` proceed, and tries that operation first (SCHED-56)."""
        if not self.after_points or self.killing:
            return
        if self.recorder is not None and self.current is not None:
            self.recorder.effect(self.current, target, "wake", WRITE)
        if woke and self._runnable > 1:
            # No step of its own: it shares the number of the operation it follows, so a
            # run's steps are its operations, as its rows show (TRACE-7).
            self.steps -= 1
            self.point(kind)

    def returned(self, value: Any, *, timeout: float | None = None, text: str | None = None) -> Any:
        """The running thread's operation returns ``value``: shown on its row (TRACE-7)
        as ``text``, or as the value with the ``timeout`` it had when it timed out.
        Returns ``value``."""
        recorder = self.recorder
        if (recorder is not None and recorder.rows and self.current is not None
                and not self.killing and not self.finished and not self._in_callers_code):
            if text is None:
                text = shown(value)
                if timeout is not None and value is False:
                    text += f" (timeout {timeout:g} s at t={self.clock.now:g})"
            recorder.returned(self.current, text, self.clock.now)
        return value

    def effect(self, target: Any, op: str) -> None:
        """Add a shared effect to the running thread's step beyond its opening one (a
        wait's release of the lock, a thread's end)."""
        if self.recorder is not None:
            self.recorder.effect(self.current, target, op)
        if self.races is not None and self.current is not None:
            self.races.synchronise(self.current.tid, label_of(target), access_of(op))

    def observed(self, label: str, op: str) -> None:
        """The running thread reads ``label`` inside its step, with no scheduling point of
        its own (a thread's ``ident``): a read in its footprint, for DPOR only (the race
        detector orders threads by their synchronisation, which this is not)."""
        if (self.recorder is not None and self.current is not None and not self.killing
                and not self._in_callers_code):
            self.recorder.effect(self.current, label, op, READ)

    def changed_nothing(self, target: Any, op: str) -> None:
        """The running thread's ``op`` on ``target`` found it already so (a set of a set
        Event, a wait that returns at once): for DPOR its step only read ``target``
        (SCHED-32).  The race detector still counts the operation as synchronisation:
        the stdlib's does it under a lock."""
        if self.recorder is not None:
            self.recorder.changed_nothing(self.current, target._ck_label, op)

    def access(self, owner: Any, field: Any, keep: Any, site: Any, stack: tuple[Any, ...],
               footprint: bool = True) -> None:
        """The running thread reads or writes shared memory (``site.access``): ``field``
        of ``owner`` (see ``accesses.location_of``), reached through ``stack``; DPOR is
        told too unless not ``footprint`` (a guess its step's ``ANY`` effect covers)."""
        task = self.current
        if task is None or self.killing or self._in_callers_code:
            return
        races = self.races
        if races is not None:
            seen = len(races.races)
            races.access(task.tid, owner, field, keep, site.access, task.name, site, stack)
            if self.fail_on_race and len(races.races) > seen and self.failure is None:
                self.terminate(race_failure(races.races[-1], task))
        recorder = self.recorder
        if footprint and recorder is not None and recorder.steps is not None:
            # One object per owner (an item or attribute conflicts with a whole-object
            # access of its owner): DPOR reads these (SCHED-30).
            recorder.memory(task, owner, keep, field, site.access)

    def _footprint(self, target: str, op: str, access: str = WRITE) -> None:
        """Add to the running thread's step an effect only DPOR reads (SCHED-31, SCHED-32):
        ``ANY``, or a thread's ``.run`` (started, woken, parked, resumed).  Callers check
        that a recorder is kept first: they are on hot paths, and build ``target``."""
        assert self.recorder is not None
        self.recorder.effect(self.current, target, op, access)

    def _begin_step(self, task: Task, *, resumed: bool = False) -> None:
        """``task`` runs again after a decision of ``_next`` (``resumed``: after a wait): a
        new step, tagged with the choice point that picked it (None when it was the only
        thread that could run)."""
        assert self.recorder is not None
        n = len(self.choices)
        self.recorder.begin(task, n - 1 if n > self._choices_at_step else None, resumed=resumed)
        self._choices_at_step = n

    def _check_invariant(self, task: Task) -> None:
        if self.recorder is not None:
            self._footprint(ANY, "invariant")  # it reads whatever it likes (SCHED-31)
        self._in_callers_code = True
        try:
            failure = self._traced(invariant_failure, self.invariant, self.steps, task)
        finally:
            self._in_callers_code = False
        if failure is not None:
            self.terminate(failure)

    def note(self, operation: str, target: Any, *, in_step: bool = False) -> None:
        """Record (not schedule) the start of a high-level operation by the current thread,
        which its next step begins; ``in_step``: what the step it is in does (a loop step's
        handles, AIO-46)."""
        task = self.current
        if task is not None and not self.killing and self.recorder is not None:
            self.recorder.call(task, operation, target, self.clock.now, in_step=in_step)

    @property
    def events(self) -> list[Event]:
        return [] if self.recorder is None else self.recorder.events

    def _switch(self, nxt: Task | None) -> None:
        if nxt is not None and nxt.glet:  # a started thread: straight to it
            self.current = nxt
            self._resume(nxt.glet)
        else:  # nothing can run, or a thread's first step, which the driver begins (_drive)
            self._starting = nxt
            assert self._driver is not None
            self._resume(self._driver)
        # Back in the switching thread: it was picked to run again, or the run is unwinding.
        if self.killing:
            raise Kill()

    def _resume(self, glet: greenlet.greenlet) -> None:
        """Switch to ``glet``; from inside a trace callback, outside it: the callback state
        is the OS thread's, and the thread switched to must run traced."""
        if not self.in_callback:
            glet.switch()
            return
        self.in_callback = False
        self.tracer.resume_tracing(self._tstate)
        try:
            glet.switch()
        finally:
            self.tracer.stop_tracing(self._tstate)
            self.in_callback = True

    def _traced(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``, the caller's code, run traced as at any point: from inside a
        trace callback, outside it (its accesses may warn, see ``tracing._access``)."""
        if not self.in_callback:
            return fn(*args)
        self.in_callback = False
        self.tracer.resume_tracing(self._tstate)
        try:
            return fn(*args)
        finally:
            self.tracer.stop_tracing(self._tstate)
            self.in_callback = True

    def _enabled(self, cur: Task | None) -> list[Point]:
        """The points of the runnable threads, current first, then round-robin by id after
        it; a yielding current thread goes last instead, so that stepping aside is the
        default."""
        tasks = self.tasks
        n = len(tasks)
        start = 0 if cur is None else cur.tid
        out = []
        for i in range(n):
            t = tasks[(start + i) % n]
            if t.state is RUNNABLE:
                out.append(t.pt)
        if cur is not None and cur.yielding and len(out) > 1 and out[0][0] == cur.tid:
            out.append(out.pop(0))
        return out

    def _next(self, cur: Task | None, asked: bool = False) -> Task | None:
        """Pick the next thread to run, advancing time or failing if none can; at a choice
        point (two or more runnable threads) the scheduler picks (``_ask``).  ``asked``: the caller
        asked ``_goes_on`` already (it may draw: asking twice would draw twice)."""
        while True:
            if self._nondaemon_alive == 0 and not self.open_ended and (
                    self.returned_at is None or not self._program_daemons()):
                return None
            if self._runnable == 1 and cur is not None and cur.state is RUNNABLE:
                return cur  # nobody else can run: no choice, and no list to build
            # (A parked or ended thread cannot go on: no call at each block and end.)
            if not asked and cur is not None and cur.state is RUNNABLE and self._goes_on(cur):
                return cur
            asked = False  # a deadline fired: the choice point is a new one
            enabled = (self._enabled(cur) if enabled_accelerated is None
                       else enabled_accelerated(self.tasks, cur))
            if enabled:
                break
            if not self._fire_earliest_deadline():
                # Open-ended: settled, every thread parked or done; after the return: the
                # daemons left blocked for good, a warning (SCHED-54).
                if not self.open_ended and self.returned_at is None:
                    self._deadlock()
                    self._stop = True
                return None
        if len(enabled) == 1:
            return self.tasks[enabled[0][0]]  # [0] is .thread: cheaper on this hot path
        return self._ask(cur, enabled)

    def _ask(self, cur: Task | None, enabled: list[Point]) -> Task | None:
        """A choice point (two or more of ``enabled``): the scheduler picks, within the
        fairness bound; the choice is recorded.  None: the run stops here (a scheduler's
        error or pruning, the choice bound)."""
        point = enabled[0] if cur is None else cur.pt
        if cur is not None and enabled[0][0] == cur.tid:
            self._streak += 1
            if self._streak > FAIRNESS_BOUND:
                # A thread that has kept the others waiting this long yields, as the
                # interpreter's switch interval would make it (SCHED-19).
                enabled.append(enabled.pop(0))
                point = point._replace(yielding=True)
        # The scheduler is the caller's code, like the invariant: what it runs is no
        # scheduling point of the program's (traced as user code, it would recurse).
        self._in_callers_code = True
        try:
            idx = (self.scheduler.choose(point, enabled) if self._scheduler_untraced
                   else self._traced(self.scheduler.choose, point, enabled))
        except (Kill, WatchdogTimeout):
            raise
        except BaseException as exc:  # a replay that diverged, a scheduler's own error:
            self.scheduler_error = exc  # the caller's, never the program's failure
            self._stop = True
            return None
        finally:
            self._in_callers_code = False
        if idx < 0:  # the scheduler abandons a run that can only repeat explored work
            self.pruned = True
            self._stop = True
            return None
        if idx >= len(enabled):
            raise IndexError(f"scheduler chose {idx} of {len(enabled)} candidates")
        if len(self.choices) >= self.max_choices:
            if self.returned_at is not None:  # a bound, after the return (SCHED-54)
                if self.recorder is not None:
                    self._footprint(ANY, "end of run")
                self._stop = True
                return None
            if self.failure is None:
                self.failure = choice_limit_failure(self.max_choices, self.steps, self.tasks)
            self._stop = True
            return None
        self.choices.append((len(enabled), idx))
        chosen = self.tasks[enabled[idx][0]]
        if idx != 0 and cur is not None and cur.state is RUNNABLE:
            self._preempt(cur, chosen)
        if chosen is not cur:
            self._streak = self._idle_yields = 0
        return chosen

    def _goes_on(self, cur: Task) -> bool:
        """At a choice point where 0 is the running thread going on, the scheduler's answer
        is 0 without building the candidates or asking ``choose``: it answered in advance
        (``replayed``: a replayed prefix is most of a search's choices), or its ``stays()``
        draws so, as ``choose`` would have (SCHED-66).  Either way the choice is recorded as
        ``choose``'s would be."""
        k = len(self.choices)
        replayed = self.replayed
        if ((not replayed and self._stays is None) or cur.state is not RUNNABLE or cur.yielding
                or self._streak >= FAIRNESS_BOUND or k >= self.max_choices):
            return False
        if k < len(replayed):
            if replayed[k]:
                return False
        elif self._stays is None or not self._stays():
            return False
        self.choices.append((self._runnable, 0))
        self._streak += 1
        return True

    def _preempt(self, cur: Task, chosen: Task) -> None:
        """A choice other than the default (which a yield hands on): ``cur`` could have
        gone on; a recorded run notes where, for its report."""
        self.preemptions += 1
        if self.record:
            here = cur.glet is _getcurrent()
            after = 0 if self.recorder is None else self.recorder.taken
            self.preempted.append(preemption(cur, chosen, sys._getframe(1) if here
                                             else cur.glet.gr_frame, after))  # type: ignore[union-attr]

    def pass_time(self, until: float) -> None:
        """Virtual time moves on to ``until`` while threads may still run (an event loop's
        callbacks took that long, AIO-5): every thread whose deadline it reaches wakes,
        timed out.  The step depends on everything (SCHED-31)."""
        if until > self.clock.now:
            self.clock.now = until
        if self.recorder is not None:
            self._footprint(ANY, "clock")
        for t in self.tasks:
            if t.state is BLOCKED and t.deadline is not None and t.deadline <= until:
                self.wake(t, timed_out=True)

    def _fire_earliest_deadline(self) -> bool:
        deadlines = [t.deadline for t in self.tasks if t.state is BLOCKED and t.deadline is not None]
        if not deadlines:
            return False
        when = min(deadlines)
        if self.open_ended and (self.horizon is None or when > self.horizon):
            return False
        if when > self.clock.now:
            self.clock.now = when
        if self.recorder is not None:
            self._footprint(ANY, "clock")  # time passes because no thread can run (SCHED-31)
        for t in self.tasks:
            if t.state is BLOCKED and t.deadline is not None and t.deadline <= when:
                self.wake(t, timed_out=True)
        return True

    def _deadlock(self) -> None:
        if self.failure is None:
            cur = self.current
            running = cur if cur is not None and _getcurrent() is cur.glet else None
            self.failure = deadlock_failure(self.tasks, running, sys._getframe(1))

    # -- parking ----------------------------------------------------------

    def block(self, queue: WaitQueue | None, what: str, deadline: float | None = None) -> bool:
        """Park the current thread on ``queue`` until woken or ``deadline``.

        Returns True when woken by another thread, False when the deadline passed.
        """
        task = self.current
        assert task is not None
        if self.killing:
            raise Kill()
        if deadline is not None and deadline <= self.clock.now:
            # Already due (a timeout of 0): a real wait returns at once. Parking would
            # let every other thread run first, and hide the schedules where it does not.
            self._polled(task)
            return False
        task.state = BLOCKED
        self._runnable -= 1
        task.waiting_on = what
        task.parked_on = queue
        task.deadline = deadline
        task.timed_out = False
        if queue is not None:
            queue.append(task)
        if self.recorder is not None:
            self.recorder.blocked(task, what, self.clock.now)
            self._footprint(runs(task.label), "park", READ)
            if self.after_points and task.step is not None:
                # Whether the operation that wakes it makes a point after itself depends
                # on this wait (``after``): at auto granularity it is no stutter (SCHED-56).
                self._footprint(task.step.point.obj, "waits")
        self._switch(self._next(task))
        if self.recorder is not None:
            self._begin_step(task, resumed=True)
            self._footprint(runs(task.label), "resume", READ)
        return not task.timed_out

    def wake(self, task: Task, timed_out: bool = False) -> None:
        """Make a parked thread runnable again."""
        if task.state is not BLOCKED:
            return
        if task.parked_on is not None:
            try:
                task.parked_on.remove(task)
            except ValueError:
                pass
        task.state = RUNNABLE
        self._runnable += 1
        if self.recorder is not None:
            self._footprint(runs(task.label), "wake")
        if self.races is not None and not timed_out:
            waker = self.current
            if waker is not None and waker is not task:
                self.races.wake(waker.tid, task.tid)
        task.parked_on = None
        task.deadline = None
        task.waiting_on = ""
        task.timed_out = timed_out

    def sleep(self, seconds: float) -> None:
        """Sleep in virtual time: park until the clock has advanced by ``seconds``.

        ``sleep(0)`` only yields; but when every other thread is parked, a thread
        that keeps yielding is a polling loop, and time passes while it polls.
        """
        seconds = float(seconds)
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        if seconds > 0:
            self.point("sleep")
            self.block(None, f"sleep({seconds:g})", self.clock.now + seconds)
            return
        task = self.current
        assert task is not None
        task.yielding = True
        try:
            self.point("sleep")
        finally:
            task.yielding = False
        self._polled(task)

    def _polled(self, task: Task) -> None:
        """``task`` polled without waiting (a ``sleep(0)``, a wait already due).  Alone,
        polling in a loop, it is spinning, and spinning takes time (a single poll takes
        none): every ``IDLE_YIELDS_BEFORE_TIME_PASSES`` polls the clock moves on, by
        ``IDLE_TICK`` the first time and twice as far each time after, and a deadline it
        reaches comes.  So a deadline loop that waits with timeout 0 sees its deadline pass,
        and sees it before a thread sleeping far longer wakes.  Whether a poll counts
        depends on every thread, so its step depends on everything (SCHED-31)."""
        if self.recorder is not None:
            self._footprint(ANY, "poll")
        for t in self.tasks:
            if t.state is RUNNABLE and t is not task:
                return
        self._idle_yields += 1
        rounds, rest = divmod(self._idle_yields, IDLE_YIELDS_BEFORE_TIME_PASSES)
        if rest:
            return
        if self.open_ended:  # the Harness: only deadlines up to its horizon come
            self._fire_earliest_deadline()
            return
        until = self.clock.now + IDLE_TICK * 2 ** min(rounds - 1, 40)
        deadlines = [t.deadline for t in self.tasks if t.state is BLOCKED and t.deadline is not None]
        if deadlines and min(deadlines) <= until:
            self._fire_earliest_deadline()
        else:
            self.clock.now = until


# ``point_of(ex, kind, obj="")``: ``ex.point(kind, obj)``, taken in C where the accelerator
# is built and the thread is untraced (as a shim's thread is at its point): no Python
# frame at most points of a run (issue 33).
point_of: Callable[..., None] = Execution.point if ACCELERATED is None else ACCELERATED.point
