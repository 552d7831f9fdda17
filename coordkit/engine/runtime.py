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

This module imports nothing of the engine above it: the stdlib shims and the
line tracer are handed to an ``Execution`` by whoever creates it (``run``).
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import greenlet

from coordkit import sync
from coordkit.engine.frames import user_stack, where, without_engine_frames
from coordkit.engine.points import Effect, Point, Step, access_of, label_of
from coordkit.errors import FailureKind

RUNNABLE = "runnable"
BLOCKED = "blocked"
FINISHED = "finished"

# The virtual clock starts at fixed values so that a replay sees the same times.
MONOTONIC_ORIGIN = 1_000.0
EPOCH_ORIGIN = 1_700_000_000.0
# Choice points in a row that one thread may keep the others waiting before it yields.
FAIRNESS_BOUND = 1000
# sleep(0)s in a row, with every other thread parked, after which the clock moves on.
IDLE_YIELDS_BEFORE_TIME_PASSES = 100
_STABLE_HASH_BASE = 1 << 40
# Loggers that report any BaseException a worker thread dies of, and so would report
# the Kill that ends a run's leftover threads (ThreadPoolExecutor's "Exception in worker").
_LOGGERS_THAT_REPORT_KILLS = ("concurrent.futures",)


class Kill(BaseException):
    """Thrown into a controlled thread to end it when its run is over."""


class _Terminate(BaseException):
    """Internal: unwinds the driver when the run ends from inside a thread."""


class WatchdogTimeout(BaseException):
    """Raised asynchronously in a run that exceeded its wall-clock budget."""


# Point(...) without NamedTuple's Python-level __new__: one is made at every step.
_new_point = functools.partial(tuple.__new__, Point)
_NOT_STARTED = Point(-1, "start")


class TaskGreenlet(greenlet.greenlet):
    """A greenlet that runs one controlled thread."""

    task: Task
    task_execution: Execution


@dataclass(eq=False, slots=True)
class Task:
    """One controlled thread of an execution."""

    tid: int
    name: str
    daemon: bool
    target: Callable[[], Any]
    label: str  # T<tid>: how reports and points name the thread
    thread: threading.Thread | None = None
    glet: TaskGreenlet | None = None
    state: str = RUNNABLE
    # The point it is at: what it does when it next runs (set at each scheduling point).
    pt: Point = _NOT_STARTED
    waiting_on: str = ""
    parked_on: WaitQueue | None = None
    deadline: float | None = None
    timed_out: bool = False
    # At a yield (sleep(0)) the thread steps aside: it is the last candidate, not the first.
    yielding: bool = False
    joiners: WaitQueue | None = None
    step: Step | None = None  # the step it is in (recorded only when footprints are)

    @property
    def _ck_label(self) -> str:  # how points name a thread
        return self.label


@dataclass(frozen=True)
class Event:
    """One recorded row of a run: which thread did which operation, and where."""

    step: int
    tid: int
    kind: str
    target: str
    where: str
    time: float


@dataclass
class Failure:
    """What went wrong in a run."""

    kind: FailureKind
    message: str
    exception: BaseException | None = None
    thread: str | None = None
    details: str = ""


class Scheduler(Protocol):
    """What an Execution asks at each choice point (``schedulers.Scheduler`` is one)."""

    def choose(self, point: Point, enabled: list[Point]) -> int: ...


class Clock:
    """Virtual time: advances only when every thread is parked (autojump)."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return MONOTONIC_ORIGIN + self.now

    def time(self) -> float:
        return EPOCH_ORIGIN + self.now

    def deadline(self, timeout: float | None) -> float | None:
        """The virtual instant ``timeout`` seconds from now (None: no deadline)."""
        if timeout is None:
            return None
        return self.now + max(float(timeout), 0.0)


class WaitQueue(list):
    """Threads parked until another thread unparks them (trio's ParkingLot).

    The one way a controlled thread waits: every shim parks on one of these and
    wakes its waiters through it, in FIFO order.  A list of the parked tasks, so
    that making one and asking whether anyone waits cost what a list does.
    """

    __slots__ = ()

    def park(self, ex: Execution, what: str, deadline: float | None = None) -> bool:
        """Park the running thread until unparked (True) or ``deadline`` passes (False)."""
        return ex.block(self, what, deadline)

    def unpark(self, ex: Execution, n: int = 1) -> None:
        """Make the first ``n`` parked threads runnable."""
        for task in self[:n]:
            ex.wake(task)

    def unpark_all(self, ex: Execution) -> None:
        for task in list(self):
            ex.wake(task)


_getcurrent = greenlet.getcurrent


def current_execution() -> Execution | None:
    """The execution whose thread is calling, or None outside a controlled run."""
    g = _getcurrent()
    if type(g) is TaskGreenlet:
        ex = g.task_execution
        if not ex.finished:
            return ex
    return None


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


class Execution:
    """One controlled run of a program under a given scheduler.

    ``shims(execution)`` makes the objects ``coordkit.sync`` hands to its threads;
    ``tracer`` (line granularity) is installed in each thread and removed at the end.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        shims: Callable[[Execution], Any],
        tracer: Any = None,
        max_steps: int = 20_000,
        record: bool = False,
        footprints: bool = False,
        caller_thread: threading.Thread | None = None,
        fail_on_thread_exception: bool = True,
    ) -> None:
        self.scheduler = scheduler
        self.tracer = tracer
        self.max_steps = max_steps
        self.record = record
        self.caller_thread = caller_thread
        self.fail_on_thread_exception = fail_on_thread_exception
        self.clock = Clock()
        self.shims = shims(self)
        self.tasks: list[Task] = []
        self.current: Task | None = None
        self.steps = 0
        self.choices: list[tuple[int, int]] = []  # (number of candidates, choice)
        self.preemptions = 0
        self.events: list[Event] = []
        self.footprints: list[Step] | None = [] if footprints else None
        self.failure: Failure | None = None
        self.finished = False
        self.killing = False
        self.leaked: list[str] = []
        self.scheduler_error: BaseException | None = None
        self.pruned = False
        self.invariant: Callable[[], Any] | None = None
        self._in_invariant = False
        self._stop = False
        # Open-ended mode (the Harness): the run does not end when its threads do, and
        # "nothing can run" means "settled", not "deadlocked".  Deadlines fire only up
        # to the horizon.
        self.open_ended = False
        self.horizon: float | None = None
        self.thread_exceptions: list[tuple[str, BaseException]] = []
        self._nondaemon_alive = 0
        self._driver: greenlet.greenlet | None = None
        self._labels: dict[str, int] = {}
        self._hashes = 0
        self._streak = 0  # choice points in a row at which the current thread stayed
        self._idle_yields = 0  # sleep(0)s in a row with no other thread able to run
        self._outer_excepthook = threading.excepthook

    # -- identity ---------------------------------------------------------

    def stable_hash(self) -> int:
        """A per-run, deterministic hash for a new object (see ``patch.stable_hashes``)."""
        self._hashes += 1
        return _STABLE_HASH_BASE + self._hashes

    def label(self, kind: str) -> str:
        """A per-run, deterministic label for a new object (``Lock#2``)."""
        n = self._labels.get(kind, 0) + 1
        self._labels[kind] = n
        return f"{kind}#{n}"

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
        task = Task(tid=tid, name=name, daemon=daemon, target=target, label=label, thread=thread,
                    pt=_new_point((tid, "start", label, False, self.steps)))
        glet = TaskGreenlet(self._task_main, parent=self._driver)
        glet.task = task
        glet.task_execution = self
        task.glet = glet
        self.tasks.append(task)
        if not daemon:
            self._nondaemon_alive += 1
        return task

    def _task_main(self) -> None:
        task = self.current
        assert task is not None
        if self.tracer is not None:
            self.tracer.install(self)
        try:
            task.target()
        except Kill:
            pass
        except (_Terminate, WatchdogTimeout):
            raise
        except BaseException as exc:  # a thread died: the program's failure, not ours
            self._thread_died(task, exc)
        finally:
            self._thread_ended(task)
        # Returning hands control back to the driver, which picks the next thread.

    def _thread_died(self, task: Task, exc: BaseException) -> None:
        self.thread_exceptions.append((task.name, exc))
        if task.thread is not None and threading.excepthook is not self._outer_excepthook:
            self._call_excepthook(task, exc)
        if self.failure is None and not self.killing and (self.fail_on_thread_exception or task.tid == 0):
            self.failure = Failure(
                FailureKind.EXCEPTION,
                f"{type(exc).__name__}: {exc}",
                exception=exc,
                thread=task.name,
                details="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
            )

    def _thread_ended(self, task: Task) -> None:
        """The thread's last step ends it and wakes its joiners: part of its footprint."""
        if self.footprints is not None:
            self.effect(task, "end")
        task.state = FINISHED
        task.pt = _new_point((task.tid, "end", task.label, False, self.steps))
        if not task.daemon:
            self._nondaemon_alive -= 1
        if task.joiners:
            task.joiners.unpark_all(self)

    def _call_excepthook(self, task: Task, exc: BaseException) -> None:
        """Hand a thread's exception to the ``threading.excepthook`` the program installed,
        as a real thread does.  The hook in place when the run began belongs to the
        caller (the default one prints, pytest's warns): calling it would repeat the
        report once per schedule."""
        args = threading.ExceptHookArgs((type(exc), exc, exc.__traceback__, task.thread))
        try:
            threading.excepthook(args)
        except Kill:
            raise
        except BaseException as hook_exc:  # a failing hook: report it as real threads do
            sys.__excepthook__(type(hook_exc), hook_exc, hook_exc.__traceback__)

    # -- the run ----------------------------------------------------------

    def run(self, fn: Callable[[], Any]) -> Execution:
        """Run ``fn`` as thread T0 until every non-daemon thread ends or a failure."""
        self._driver = _getcurrent()
        self._outer_excepthook = threading.excepthook
        main = self.spawn(fn, "MainThread", daemon=False)
        try:
            self._drive(main, until_all_ended=True)
        except WatchdogTimeout as exc:
            if self.failure is None:
                self.failure = _watchdog_failure(self.current, exc, line=self.tracer is not None)
        finally:
            self.end()
        return self

    def drive(self) -> None:
        """Open-ended mode: run runnable threads until none can run, or a failure."""
        self._driver = _getcurrent()
        self._stop = False
        self._drive(self._next(self.current), until_all_ended=False)

    def _drive(self, nxt: Task | None, *, until_all_ended: bool) -> None:
        try:
            while nxt is not None:
                self.current = nxt
                assert nxt.glet is not None
                nxt.glet.switch()
                if self._stop or self.failure is not None:
                    return
                if until_all_ended and self._nondaemon_alive == 0:
                    return
                # A thread ended (or parked with nothing else runnable).
                nxt = self._next(self.current)
        except _Terminate:
            pass

    def end(self) -> None:
        """End every thread still alive; nothing started by the run outlives it."""
        self.killing = True
        try:
            with _QUIET_KILL_REPORTS:
                self._unwind()
        finally:
            self.current = None
            self.finished = True
            # The program may have installed a hook and not put the caller's back: the
            # next run must start as this one did.
            threading.excepthook = self._outer_excepthook
            if self.tracer is not None:
                self.tracer.uninstall()

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

    def terminate(self, failure: Failure) -> None:
        """Record ``failure`` and end the run from inside a controlled thread."""
        if self.failure is None:
            self.failure = failure
        self._stop = True
        assert self._driver is not None
        self._driver.switch()
        raise Kill()  # a terminated run never resumes its threads, only unwinds them

    # -- scheduling -------------------------------------------------------

    def point(self, kind: str, obj: str = "") -> None:
        """A scheduling point: the current thread is about to do ``kind`` on the object
        labelled ``obj`` (``Lock#2``, ``T1``, a memory location; ``""`` for nothing shared)."""
        if self.killing or self._in_invariant:
            return
        task = self.current
        assert task is not None
        self.steps += 1
        task.pt = _new_point((task.tid, kind, obj, task.yielding, self.steps))
        if self.footprints is not None:
            self._open_step(task)
        if self.record:
            self._record(task, kind, obj)
        if self.steps > self.max_steps:
            self.terminate(_step_limit_failure(self, task, kind, obj))
        if self.invariant is not None:
            self._check_invariant(task)
        nxt = self._next(task)
        if nxt is not task:
            self._switch(nxt)

    def effect(self, target: Any, op: str) -> None:
        """Add a shared effect to the running thread's step beyond its opening one (a
        wait's release of the lock, a thread's end); free when footprints are off."""
        task = self.current
        if self.footprints is not None and task is not None and task.step is not None:
            task.step.footprint.append(Effect(label_of(target), access_of(op), op))

    def _open_step(self, task: Task) -> None:
        assert self.footprints is not None
        point = task.pt
        step = Step(len(self.footprints), point)
        if point.obj:
            step.footprint.append(Effect(point.obj, access_of(point.op), point.op))
        self.footprints.append(step)
        task.step = step

    def _check_invariant(self, task: Task) -> None:
        self._in_invariant = True
        try:
            ok = self.invariant()  # type: ignore[misc]
            problem = None if ok or ok is None else "the invariant returned a false value"
        except Exception as exc:  # the user's check failed
            problem = f"{type(exc).__name__}: {exc}"
        finally:
            self._in_invariant = False
        if problem is not None:
            self.terminate(Failure(FailureKind.INVARIANT,
                                   f"invariant violated at step {self.steps}: {problem}",
                                   thread=task.name))

    def note(self, operation: str, target: Any) -> None:
        """Record (not schedule) the start of a high-level operation by the current thread."""
        task = self.current
        if task is None or self.killing:
            return
        label = getattr(target, "_ck_label", None)
        if label is None:
            name = getattr(target, "name", None)
            label = type(target).__name__ + (f" {name!r}" if isinstance(name, str) else "")
        self.events.append(Event(self.steps + 1, task.tid, "call", f"{operation} {label}",
                                 where(sys._getframe(1)), self.clock.now))

    def _record(self, task: Task, kind: str, obj: str) -> None:
        self.events.append(Event(self.steps, task.tid, kind, obj,
                                 where(sys._getframe(1)), self.clock.now))

    def _switch(self, nxt: Task | None) -> None:
        if nxt is None:  # nothing can run: the driver decides what happens next
            assert self._driver is not None
            self._driver.switch()
        else:
            self.current = nxt
            assert nxt.glet is not None
            nxt.glet.switch()
        # Back in the switching thread: it was picked to run again, or the run is unwinding.
        if self.killing:
            raise Kill()

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
        if cur is not None and cur.yielding and len(out) > 1 and out[0].thread == cur.tid:
            out.append(out.pop(0))
        return out

    def _next(self, cur: Task | None) -> Task | None:
        """Pick the next thread to run, advancing time or failing if none can; at a choice
        point (two or more runnable threads) the scheduler picks."""
        while True:
            if self._nondaemon_alive == 0 and not self.open_ended:
                return None
            enabled = self._enabled(cur)
            if enabled:
                break
            if not self._fire_earliest_deadline():
                if not self.open_ended:  # open-ended: settled, every thread parked or done
                    self._deadlock()
                    self._stop = True
                return None
        if len(enabled) == 1:
            return self.tasks[enabled[0].thread]
        point = enabled[0] if cur is None else cur.pt
        if cur is not None and enabled[0].thread == cur.tid:
            self._streak += 1
            if self._streak > FAIRNESS_BOUND:
                # A thread that has kept the others waiting this long yields, as the
                # interpreter's switch interval would make it (SCHED-19).
                enabled.append(enabled.pop(0))
                point = point._replace(yielding=True)
        try:
            idx = self.scheduler.choose(point, enabled)
        except Exception as exc:  # a replay that diverged, a non-deterministic program
            self.scheduler_error = exc
            self._stop = True
            return None
        if idx < 0:  # the scheduler abandons a run that can only repeat explored work
            self.pruned = True
            self._stop = True
            return None
        if idx >= len(enabled):
            raise IndexError(f"scheduler chose {idx} of {len(enabled)} candidates")
        self.choices.append((len(enabled), idx))
        chosen = self.tasks[enabled[idx].thread]
        if idx != 0 and cur is not None and cur.state is RUNNABLE:
            self.preemptions += 1  # a choice other than the default (which a yield hands on)
        if chosen is not cur:
            self._streak = self._idle_yields = 0
        return chosen

    def _fire_earliest_deadline(self) -> bool:
        deadlines = [t.deadline for t in self.tasks if t.state is BLOCKED and t.deadline is not None]
        if not deadlines:
            return False
        when = min(deadlines)
        if self.open_ended and (self.horizon is None or when > self.horizon):
            return False
        if when > self.clock.now:
            self.clock.now = when
        for t in self.tasks:
            if t.state is BLOCKED and t.deadline is not None and t.deadline <= when:
                self.wake(t, timed_out=True)
        return True

    def _deadlock(self) -> None:
        if self.failure is None:
            cur = self.current
            running = cur if cur is not None and _getcurrent() is cur.glet else None
            self.failure = _deadlock_failure(self.tasks, running, sys._getframe(1))

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
            return False
        task.state = BLOCKED
        task.waiting_on = what
        task.parked_on = queue
        task.deadline = deadline
        task.timed_out = False
        if queue is not None:
            queue.append(task)
        if self.record:
            self._record(task, "block", what)
        self._switch(self._next(task))
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
        if not any(t.state is RUNNABLE for t in self.tasks if t is not task):
            # Alone, yielding in a loop: after a while, let the earliest deadline come
            # (a single sleep(0) takes no time; a polling loop does).
            self._idle_yields += 1
            if self._idle_yields >= IDLE_YIELDS_BEFORE_TIME_PASSES:
                self._idle_yields = 0
                self._fire_earliest_deadline()


# -- failures the runtime itself detects -------------------------------------------


def _deadlock_failure(tasks: list[Task], running: Task | None, running_frame: Any) -> Failure:
    lines = []
    for t in tasks:
        if t.state is BLOCKED:
            # The thread that found the deadlock is running: its greenlet has no saved
            # frame, so take the live one.
            frame = running_frame if t is running else (t.glet.gr_frame if t.glet is not None else None)
            stack = user_stack(frame)
            lines.append(
                f"  {t.label} {t.name!r} waits on {t.waiting_on} at {where(frame)}\n"
                + "".join("      " + ln + "\n" for ln in stack.rstrip().splitlines())
            )
    return Failure(
        FailureKind.DEADLOCK,
        "every live thread is blocked: "
        + ", ".join(f"{t.label} on {t.waiting_on}" for t in tasks if t.state is BLOCKED),
        details="".join(lines),
    )


def _step_limit_failure(ex: Execution, task: Task, kind: str, obj: str) -> Failure:
    return Failure(
        FailureKind.STEP_LIMIT,
        f"the run took more than {ex.max_steps} scheduling steps "
        "(a livelock, or raise max_steps); at the last one "
        f"{task.label} {task.name!r} was at {kind} {obj} "
        f"in {where(sys._getframe(1))}"
        " (a thread that polls without ever blocking keeps a run going)",
        thread=task.name,
    )


def _watchdog_failure(task: Task | None, exc: WatchdogTimeout, *, line: bool) -> Failure:
    user = without_engine_frames(traceback.extract_tb(exc.__traceback__))
    at = f" at {user[-1].filename.rsplit('/', 1)[-1]}:{user[-1].lineno}" if user else ""
    who = f" ({task.label} {task.name!r}{at})" if task is not None else ""
    return Failure(
        FailureKind.TIMEOUT,
        "the run exceeded its wall-clock budget: a thread computed for too long "
        f"without reaching a scheduling point{who}, or blocked outside the scheduler"
        + ("" if line else
           " (a loop with no synchronisation in it is never interrupted at the "
           "default granularity; granularity='line' can switch inside it)"),
        thread=task.name if task is not None else None,
        details="".join(traceback.format_list(user[-8:])),
    )
