"""coordkit's event loop: a ``BaseEventLoop`` whose iterations are scheduling points.

It is stock asyncio (its handles, tasks, futures, timers and executors are
``BaseEventLoop``'s) with three things replaced:

* ``time()`` is the run's virtual clock, the one ``time.monotonic()`` reads (AIO-3);
* ``_run_once`` never calls ``select()``: an iteration with ready handles is a
  scheduling point of the loop's thread; one without parks the thread (a controlled
  wait the scheduler sees) until the first timer is due or another thread hands the
  loop a callback (AIO-3, AIO-4);
* ``call_soon_threadsafe`` is a scheduling point of the calling thread, and wakes the
  parked loop through the runtime instead of a self-pipe (AIO-4);
* timers may arrive out of the loop's own order, as real time makes them (AIO-5): at
  an iteration, a timer actor (a controlled thread of the run's) may be chosen to make
  the next timer due early, or twins due at one instant fire in reverse order.  Every
  such choice is a thread choice of the scheduler's: PCT, DPOR, replay and shrinking
  see it like any other.

The C running-loop slot is per OS thread, and every controlled thread shares one:
``RunningLoops`` gives each controlled thread its own (AIO-2).
"""

from __future__ import annotations

import _thread
import asyncio
import heapq
import itertools
import sys
import time
import types
import weakref
from asyncio import base_events, events
from typing import Any, ClassVar

import greenlet

from coordkit.engine.aio.adversarial import Reorder
from coordkit.engine.aio.cancel import Canceller
from coordkit.engine.aio.chain import task_reports
from coordkit.engine.failures import loop_failure
from coordkit.engine.points import ANY, WRITE
from coordkit.engine.runtime import Execution, current_execution
from coordkit.engine.task import MONOTONIC_ORIGIN, Task, WaitQueue

__all__ = ["ControlledLoop", "RunningLoops", "fail"]

_set_running_loop = events._set_running_loop
_real_get_ident = _thread.get_ident  # (the engine's patch replaces it inside runs)
# Every task not yet collected, done ones included (renamed in Python 3.12).
_TASKS = getattr(asyncio.tasks, "_scheduled_tasks" if sys.version_info >= (3, 12) else "_all_tasks")


def fail(ex: Execution, failure: Any) -> None:
    """The run fails with ``failure`` (the first one stands); it ends when its threads
    next give way, so the program's own clean-up still runs."""
    if ex.failure is None:
        ex.failure = failure


# Per run: how many tasks its loops have made (the next task's number).
_TASK_COUNTS: weakref.WeakKeyDictionary[Execution, list[int]] = weakref.WeakKeyDictionary()


def _deadline(handle: Any) -> float:
    return handle._when


# asyncio's own code whose timers are not the program's (AIO-35): 3.12+'s
# ``shutdown_default_executor`` (``asyncio.run``'s, 300 s) times the executor's join with a
# timer on the loop (``asyncio.timeout``: its ``__aenter__``, ``reschedule``, ``call_at``).
_OWN_TIMERS_MADE_BY = frozenset({base_events.BaseEventLoop.shutdown_default_executor.__code__})
_OWN_TIMER_DEPTH = 4  # frames from call_at up to the code that made the timer


def _made_by_asyncio() -> bool:
    """Whether the timer being made is asyncio's own (AIO-35)."""
    frame = sys._getframe(2)
    for _ in range(_OWN_TIMER_DEPTH):
        if frame is None:
            return False
        if frame.f_code in _OWN_TIMERS_MADE_BY:
            return True
        frame = frame.f_back
    return False


class _Shown:
    """How a recorded run's rows name a handle the loop runs (AIO-9): the task it steps,
    by name and coroutine (``Task-2 main.<locals>.producer``), or the callback."""

    __slots__ = ("_ck_label",)

    def __init__(self, handle: Any) -> None:
        callback = handle._callback
        task = getattr(callback, "__self__", None)
        if isinstance(task, asyncio.Task):
            coro = task.get_coro()
            what = getattr(coro, "__qualname__", None) or type(coro).__name__
            self._ck_label = f"{task.get_name()} {what}"
        else:
            self._ck_label = getattr(callback, "__qualname__", None) or repr(callback)


def _shown(handle: Any) -> str:
    return _Shown(handle)._ck_label


class RunningLoops:
    """Which loop each controlled thread is running (AIO-2).

    ``asyncio`` keeps the running loop in the OS thread's state, which every controlled
    thread of a run shares: a greenlet trace hook puts the switched-to thread's loop (or
    None) there at every switch, while any loop of coordkit's runs on that OS thread (a
    run's worker; one the watchdog gave up on keeps its own count)."""

    _threads: ClassVar[dict[int, list[Any]]] = {}  # OS thread -> [loops running, previous hook]

    @classmethod
    def enter(cls, loop: ControlledLoop) -> greenlet.greenlet:
        glet = greenlet.getcurrent()
        state = cls._threads.setdefault(_real_get_ident(), [0, None])
        if state[0] == 0:
            state[1] = greenlet.settrace(cls._switched)
        state[0] += 1
        glet._ck_loop = loop  # type: ignore[attr-defined]
        return glet

    @classmethod
    def leave(cls, glet: greenlet.greenlet) -> None:
        glet._ck_loop = None  # type: ignore[attr-defined]
        ident = _real_get_ident()
        state = cls._threads[ident]
        state[0] -= 1
        if state[0] == 0:
            greenlet.settrace(state[1])
            del cls._threads[ident]

    @staticmethod
    def _switched(event: str, args: Any) -> None:
        if event == "switch" or event == "throw":
            # Running once asyncio says so (``_thread_id`` is set just before it sets the
            # running loop): a switch inside run_forever's own checks, before that, comes
            # back to a thread running no loop yet (a racing site there, RACE-12).
            loop = getattr(args[1], "_ck_loop", None)
            _set_running_loop(loop if loop is not None and loop._thread_id is not None else None)


# What a loop does with real I/O (sockets, pipes, subprocesses, signals): not modelled.
_REAL_IO = (
    "create_connection", "create_server", "create_unix_connection", "create_unix_server",
    "create_datagram_endpoint", "connect_accepted_socket", "connect_read_pipe",
    "connect_write_pipe", "subprocess_exec", "subprocess_shell", "add_reader", "add_writer",
    "remove_reader", "remove_writer", "sock_recv", "sock_recv_into", "sock_recvfrom",
    "sock_recvfrom_into", "sock_sendall", "sock_sendto", "sock_connect", "sock_accept",
    "sock_sendfile", "sendfile", "start_tls", "add_signal_handler", "remove_signal_handler",
    "getaddrinfo", "getnameinfo",
)


def _not_modelled(name: str) -> Any:
    def refuse(self: ControlledLoop, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{name}() on {self._ck_label}: real I/O (sockets, pipes, subprocesses, signals) "
            "is not modelled by coordkit's event loop, and would run outside the scheduler")

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


class ControlledLoop(asyncio.BaseEventLoop):
    """The event loop every loop a run's program makes is (AIO-2): stock asyncio on the
    run's clock and scheduler (see the module docstring)."""

    def __init__(self, ex: Execution) -> None:
        super().__init__()
        self._ex = ex
        self._ck_label = ex.names.label("EventLoop")
        self._arrivals = WaitQueue()  # the loop's thread, parked in its select
        # Timer arrivals out of the loop's own order (AIO-5): an actor of the run's, made
        # when first needed, which may run only at the iteration that offered it.
        self._iteration = 0
        self._offered = -1
        self._timers: Task | None = None
        self._timers_idle = WaitQueue()
        self._ck_glet: greenlet.greenlet | None = None  # the thread running it
        self._ck_own_timers: set[Any] = set()  # asyncio's own (AIO-35): never early
        # The run's time.monotonic (coordkit's, a function), to see a program replace it.
        self._ck_monotonic = time.monotonic if isinstance(time.monotonic, types.FunctionType) else None
        # Cancellations offered at tasks' suspension points (AIO-40), when the run asks.
        self._cancels = Canceller(self, ex) if ex.cancel_tasks else None
        # Any ready callback may run next (AIO-44), when the run asks.
        self._reorder = Reorder(self, ex, _shown) if ex.reorder_ready else None
        ex.task_reports.append(task_reports(self))  # for a failure's report (AIO-45)

    def __repr__(self) -> str:
        return (f"<coordkit {self._ck_label} running={self.is_running()} "
                f"closed={self.is_closed()} debug={self.get_debug()}>")

    def time(self) -> float:
        """The run's virtual ``time.monotonic()`` (AIO-3)."""
        return self._ex.clock.monotonic()

    def run_forever(self) -> None:
        glet = self._ck_glet = RunningLoops.enter(self)
        try:
            super().run_forever()
        finally:
            self._ck_glet = None
            RunningLoops.leave(glet)

    def create_task(self, coro: Any, *, name: Any = None, **kwargs: Any) -> Any:
        """A task named by its creation order in the run (``Task-1``, ``Task-2``...), as
        the run's threads are: the same in every run (AIO-9)."""
        if name is None:
            counts = _TASK_COUNTS.setdefault(self._ex, [0])
            counts[0] += 1
            name = f"Task-{counts[0]}"
        task = super().create_task(coro, name=name, **kwargs)
        if self._ex.recorder is not None and self._ex.recorder.rows:
            self._ex.task_names.append(task.get_name())  # the viewer's lanes (AIO-46)
        if self._cancels is not None:
            self._cancels.made(task)
        return task

    def call_soon(self, callback: Any, *args: Any, context: Any = None) -> Any:
        self._check_caller("call_soon")
        return super().call_soon(callback, *args, context=context)

    def call_at(self, when: float, callback: Any, *args: Any, context: Any = None) -> Any:
        """A timer; one made by asyncio's own shutdown code fires at its deadline only,
        never early (AIO-35)."""
        self._check_caller("call_at")
        handle = super().call_at(when, callback, *args, context=context)
        if self._executor_shutdown_called and _made_by_asyncio():
            self._ck_own_timers.add(handle)
        return handle

    def _check_caller(self, method: str) -> None:
        """A loop's non-thread-safe methods, called from a thread other than the one running
        it, raise as asyncio's debug mode makes them (AIO-8): the callback would sit in the
        ready queue with nothing to wake the loop (a worker resolving a future, say)."""
        glet = self._ck_glet
        if glet is not None and greenlet.getcurrent() is not glet and not self._ex.killing:
            raise RuntimeError(
                f"Non-thread-safe operation invoked on an event loop other than the current "
                f"one: {method}() on {self._ck_label} from a thread that is not running it "
                "(use call_soon_threadsafe, or run_coroutine_threadsafe)")

    def call_soon_threadsafe(self, callback: Any, *args: Any, context: Any = None) -> Any:
        """A scheduling point of the calling thread (the arrival may come before or after
        any step of the loop's thread), then the handle, and a wake-up of the loop (AIO-4)."""
        ex = self._ex
        if current_execution() is ex and ex.current is not None:
            ex.point("call_soon_threadsafe", self._ck_label)
        return super().call_soon_threadsafe(callback, *args, context=context)

    def default_exception_handler(self, context: dict[str, Any]) -> None:
        """What reaches the default exception handler (asyncio would only log it) is the
        run's failure (AIO-6): an exception in a callback, a task's exception never
        retrieved, a task destroyed pending.  asyncio's own ``call_exception_handler`` is
        not overridden (AIO-31): a handler the program set is called instead, as asyncio
        calls it, and a patch of asyncio's method is what the loop calls."""
        ex = self._ex
        if ex.finished:
            super().default_exception_handler(context)
            return
        if ex.killing:
            return  # the run is over: its leftover tasks are coordkit's to drop
        message = context.get("message") or "Unhandled exception in event loop"
        exc = context.get("exception")
        if exc is None:
            exc = RuntimeError(message)
        where = ", ".join(f"{key}: {value!r}" for key, value in context.items()
                          if key not in ("message", "exception"))
        fail(ex, loop_failure(message, exc, None if ex.current is None else ex.current.name,
                              where))

    def close(self) -> None:
        """A task still pending when its loop closes is a failure, and so is one whose
        exception was never retrieved (asyncio would report it only once the task is
        collected, which a reference cycle puts off to any later moment; AIO-6)."""
        ex = self._ex
        if ex.finished or ex.killing:
            self._default_executor = None  # its threads ended with the run
        elif not self.is_running() and not self._closed:
            thread = None if ex.current is None else ex.current.name
            tasks = [t for t in list(_TASKS) if t.get_loop() is self]
            # Not a task asyncio marks never to report (gather's, run_until_complete's,
            # a program's): stock asyncio is silent on it (AIO-32).
            pending = [t for t in tasks
                       if not t.done() and getattr(t, "_log_destroy_pending", True)]
            unretrieved = [t for t in tasks if t.done() and not t.cancelled() and t._log_traceback]
            if pending:
                names = ", ".join(repr(t.get_name()) for t in pending)
                fail(ex, loop_failure(
                    f"{len(pending)} task(s) still pending when {self._ck_label} was closed",
                    RuntimeError(f"task(s) {names} still pending when {self._ck_label} was "
                                 "closed (they never finish: cancel and await them first)"),
                    thread))
            for task in unretrieved:
                fail(ex, loop_failure("Task exception was never retrieved", task.exception(),
                                      thread, f"task: {task!r}"))
        super().close()
        if self._timers_idle and current_execution() is ex and not (ex.finished or ex.killing):
            self._timers_idle.unpark_all(ex)  # the timer actor ends with its loop (AIO-33)

    def __del__(self, _warn: Any = None) -> None:
        """A loop the run left open (it was cut short) is closed quietly: its tasks and
        threads ended with the run."""
        if not self._closed and (self._ex.finished or self._ex.killing):
            self._closed = True
            self._ready.clear()
            self._scheduled.clear()
            self._default_executor = None
        super().__del__()

    def _write_to_self(self) -> None:
        if current_execution() is self._ex and self._arrivals:
            self._arrivals.unpark_all(self._ex)

    def _process_events(self, event_list: Any) -> None:
        """No selector, no events (real I/O is not modelled)."""

    def _run_once(self) -> None:
        """One iteration: a scheduling point (or a controlled wait when nothing is ready),
        the timers that are due moved to the ready queue, then exactly the handles ready
        now run, in FIFO order (AIO-3, AIO-4)."""
        self._iteration += 1  # an offer made at the last iteration ends here
        self._drop_cancelled_timers()
        ex = self._ex
        if time.monotonic is not self._ck_monotonic:
            self._clock_replaced()
        if not self._ready and not self._stopping:
            self._select()
        if self._scheduled and self._may_arrive():
            self._offer()
        if self._cancels is not None:
            self._cancels.offer()
        ex.point("loop", self._ck_label)
        if self._cancels is not None:
            self._cancels.deliver()
        self._move_due_timers()
        if ex.recorder is not None:
            # The handles run code whose effects are not known: dependent on everything.
            ex.recorder.effect(ex.current, ANY, "loop", WRITE)
        ready = self._ready
        if ex.recorder is not None and ex.recorder.rows:
            for handle in list(ready):
                ex.note("runs", _Shown(handle), in_step=True)
        reorder, count = self._reorder, len(ready)
        for i in range(count):
            if reorder is not None:
                reorder.before(count - i)
            handle = ready.popleft()
            if not handle._cancelled:
                handle._run()

    def _clock_replaced(self) -> None:
        """``time.monotonic`` is not the run's (a ``mock.patch`` of the program's): a warning
        of the run, since the loop keeps the virtual clock, which the replacement neither
        reads nor moves (AIO-8)."""
        self._ex.warn(f"time.monotonic was replaced during the run (a mock?): {self._ck_label} "
                      "keeps the run's virtual clock, which the replacement neither reads nor "
                      "moves, so the program's time and the loop's differ")

    def _select(self) -> None:
        """Nothing is ready: a scheduling point, then park until the first timer is due
        (virtual time passes only as the runtime's autojump lets it) or an arrival."""
        ex = self._ex
        ex.point("select", self._ck_label)
        self._drop_cancelled_timers()
        if self._ready or self._stopping:
            return  # another thread's call_soon_threadsafe came first
        deadline = None
        if self._scheduled:
            deadline = self._scheduled[0]._when - MONOTONIC_ORIGIN
            if deadline <= ex.clock.now:
                return
        what = f"{self._ck_label} select" + ("" if deadline is None else f" (next timer at "
                                              f"t={deadline:g})")
        self._arrivals.park(ex, what, deadline)

    # -- timers arriving out of the loop's own order (AIO-5) --------------------

    def _may_arrive(self) -> bool:
        """Whether a timer may arrive now out of the loop's own order: one is not yet due
        (the callbacks about to run may take that long), or two are due at one instant
        (which of two deadlines is earlier in real time is anyone's guess)."""
        due = self._due()
        return self._first_twins(due) is not None or self._upcoming() is not None

    def _upcoming(self) -> Any:
        """The first timer not yet due and not cancelled, if any, of the program's: one of
        asyncio's own shutdown code is never early (AIO-35)."""
        end = self.time() + self._clock_resolution
        own = self._ck_own_timers
        return min((h for h in self._scheduled
                    if h._when >= end and not h._cancelled and h not in own),
                   key=_deadline, default=None)

    def _due(self) -> list[float]:
        """The deadlines of the program's timers due now and not cancelled (in a heap, a
        due timer's parent is due); asyncio's own fire in the loop's order (AIO-35)."""
        scheduled = self._scheduled
        own = self._ck_own_timers
        end = self.time() + self._clock_resolution
        found, todo = [], [0]
        while todo:
            i = todo.pop()
            if i < len(scheduled) and scheduled[i]._when < end:
                if not scheduled[i]._cancelled and scheduled[i] not in own:
                    found.append(scheduled[i]._when)
                todo += (2 * i + 1, 2 * i + 2)
        return found

    @staticmethod
    def _first_twins(due: list[float]) -> float | None:
        """The earliest deadline that two of the due timers share, if any."""
        ordered = sorted(due)
        return next((a for a, b in itertools.pairwise(ordered) if a == b), None)

    def _offer(self) -> None:
        """Make the timer actor runnable for this iteration only: the scheduler may run
        it before the loop goes on (choose it), or not."""
        ex = self._ex
        self._offered = self._iteration
        if self._timers is None:
            self._timers = ex.spawn(self._timer_arrivals, f"{self._ck_label} timers", daemon=True)
        elif self._timers_idle:
            self._timers_idle.unpark_all(ex)

    def _timer_arrivals(self) -> None:
        """The timer actor's life: chosen at an iteration that offered it, it makes timers
        arrive one at a time (a scheduling point after each), then waits for the next
        offer.  Chosen later (the loop went on), it does nothing.  It ends when its loop
        closes (at its next step, as a thread ends): a stock loop has no thread of its own,
        and a program that waits for its threads to end (``_thread._count()``) finds none
        left of it (AIO-33)."""
        ex = self._ex
        while not self._closed:
            while self._offered == self._iteration and not self._closed:
                self._drop_cancelled_timers()
                if not self._scheduled or not self._may_arrive():
                    break
                self._arrive()
                ex.point("timer", self._ck_label)
            if not self._closed:
                self._timers_idle.park(ex, f"{self._ck_label} timers: not offered")

    _timer_arrivals._ck_foreign = True  # type: ignore[attr-defined]  # a thread with no Thread
    _timer_arrivals._ck_helper = True  # type: ignore[attr-defined]  # coordkit's own thread

    def _arrive(self) -> None:
        """One step away from the loop's own order: the due timers move to the ready queue
        with the first twins among them in reverse order; or, with no twins due, the clock
        moves on to the next timer's deadline (it is due now; AIO-5)."""
        ex = self._ex
        if ex.recorder is not None:  # the loop's queues: it depends on every step (AIO-5)
            ex.recorder.effect(ex.current, ANY, "timer", WRITE)
        twins = self._first_twins(self._due())
        if twins is None:
            upcoming = self._upcoming()
            ex.pass_time(upcoming._when - MONOTONIC_ORIGIN)
            if ex.recorder is not None and ex.recorder.rows:
                ex.note(f"is early: at t={ex.clock.now:g} a timer is due,", _Shown(upcoming),
                        in_step=True)
            return
        moved = self._pop_due()
        at = [i for i, handle in enumerate(moved) if handle._when == twins and not handle._cancelled]
        moved[at[0]:at[-1] + 1] = moved[at[0]:at[-1] + 1][::-1]
        if ex.recorder is not None and ex.recorder.rows:
            ex.note("fires first of the timers due together:", _Shown(moved[at[0]]), in_step=True)
        self._ready.extend(moved)

    def _move_due_timers(self) -> None:
        self._ready.extend(self._pop_due())

    def _pop_due(self) -> list[Any]:
        """The timers due now, taken off the heap in the loop's own (deadline) order."""
        end = self.time() + self._clock_resolution
        scheduled = self._scheduled
        due = []
        while scheduled and scheduled[0]._when < end:
            handle = heapq.heappop(scheduled)
            handle._scheduled = False
            due.append(handle)
        return due

    def _drop_cancelled_timers(self) -> None:
        """What ``BaseEventLoop._run_once`` does first: forget cancelled timers."""
        scheduled = self._scheduled
        count = len(scheduled)
        if (count > base_events._MIN_SCHEDULED_TIMER_HANDLES and self._timer_cancelled_count / count
                > base_events._MIN_CANCELLED_TIMER_HANDLES_FRACTION):
            kept = []
            for handle in scheduled:
                if handle._cancelled:
                    handle._scheduled = False
                else:
                    kept.append(handle)
            heapq.heapify(kept)
            self._scheduled = kept
            self._timer_cancelled_count = 0
            return
        while scheduled and scheduled[0]._cancelled:
            self._timer_cancelled_count -= 1
            heapq.heappop(scheduled)._scheduled = False


for _name in _REAL_IO:
    setattr(ControlledLoop, _name, _not_modelled(_name))
