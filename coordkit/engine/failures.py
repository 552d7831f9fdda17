"""How a run fails: the ``Failure`` record, and the failures the runtime itself finds
(a deadlock, an exhausted step budget, the watchdog, a broken invariant)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from coordkit.engine.cause import ThreadState, is_coordkits
from coordkit.engine.frames import user_stack, where, without_engine_frames
from coordkit.engine.task import BLOCKED, FINISHED, RUNNABLE, Task, WatchdogTimeout
from coordkit.errors import FailureKind

__all__ = [
    "Failure",
    "after_return_failure",
    "choice_limit_failure",
    "deadlock_failure",
    "exception_failure",
    "invariant_failure",
    "loop_failure",
    "race_failure",
    "slow_run_failure",
    "step_limit_failure",
    "watchdog_failure",
]


@dataclass
class Failure:
    """What went wrong in a run."""

    kind: FailureKind
    message: str
    exception: BaseException | None = None
    thread: str | None = None
    details: str = ""
    # The program's threads when the run failed (a recorded run's failure only).
    threads: tuple[ThreadState, ...] = ()
    # The asyncio tasks not done at the failure, each with its await chain (AIO-45).
    tasks: tuple[str, ...] = ()
    # It happened after the program returned, in a daemon still running (SCHED-55).
    after_return: bool = False


def after_return_failure(failure: Failure) -> Failure:
    """``failure``, found after the program returned: its report says so (SCHED-55)."""
    failure.after_return = True
    return failure


def exception_failure(task: Task, exc: BaseException) -> Failure:
    """A thread (or the main function) raised ``exc``."""
    return Failure(
        FailureKind.EXCEPTION,
        f"{type(exc).__name__}: {exc}",
        exception=exc,
        thread=task.name,
        details=_traceback(exc),
    )


def deadlock_failure(tasks: list[Task], running: Task | None, running_frame: Any) -> Failure:
    """Every live thread is blocked: the message names what each of the program's threads
    waits on (coordkit's own helper threads left out), the details show their stacks."""
    lines = []
    waiting = []
    for t in tasks:
        if t.state is BLOCKED:
            # The thread that found the deadlock is running: its greenlet has no saved
            # frame, so take the live one.
            frame = running_frame if t is running else (t.glet.gr_frame if t.glet is not None else None)
            if t.daemon and is_coordkits(t, frame):
                continue
            waiting.append(f"{t.label} on {t.waiting_on}")
            stack = user_stack(frame)
            lines.append(
                f"  {t.label} {t.name!r} waits on {t.waiting_on} at {where(frame)}\n"
                + "".join("      " + ln + "\n" for ln in stack.rstrip().splitlines())
            )
    return Failure(
        FailureKind.DEADLOCK,
        "every live thread is blocked: " + ", ".join(waiting),
        details="".join(lines),
    )


def loop_failure(message: str, exception: BaseException, thread: str | None,
                 context: str = "") -> Failure:
    """What asyncio only logs, as a failure (AIO-6): an exception that reached an event
    loop's exception handler ("Exception in callback", "Task exception was never
    retrieved"), a task left pending, a coroutine never awaited (``exception`` says what
    a replay raises)."""
    text = f"{type(exception).__name__}: {exception}"
    return Failure(FailureKind.EXCEPTION, text if text.startswith(message) else f"{message}: {text}",
                   exception=exception, thread=thread,
                   details=(context + "\n" if context else "") + _traceback(exception))


def step_limit_failure(step_limit: int, max_steps: int, tasks: list[Task], task: Task, kind: str,
                       obj: str) -> Failure:
    """The step budget ran out: say how it was made, which threads were alive, and what each
    did last (its last scheduling point, and where in the user's code)."""
    started = len(tasks)
    budget = f"{step_limit} scheduling steps"
    if step_limit == max_steps * started:
        budget += f" (max_steps={max_steps} for each of the {started} thread(s) it started)"
    here = sys._getframe(1)
    rows = _alive(tasks, task, here)
    return Failure(
        FailureKind.STEP_LIMIT,
        f"the run took more than {budget} without ending: threads that keep running without "
        "making progress (a livelock, or a poll that never succeeds), or a run longer than "
        f"the budget (raise max_steps). At the last step {task.label} {task.name!r} was at "
        f"{f'{kind} {obj}'.rstrip()} in {where(here)}",
        thread=task.name,
        details=f"{len(rows)} thread(s) alive when the budget ran out, and what each did last:\n"
                + "\n".join(rows) + "\n",
    )


def slow_run_failure(seconds: float, steps: int, tasks: list[Task], task: Task, kind: str,
                     obj: str) -> Failure:
    """The run was still taking scheduling steps when its wall-clock budget ran out: it is
    slow, not blocked (SCHED-64); which threads were alive, and what each did last."""
    here = sys._getframe(1)
    rows = _alive(tasks, task, here)
    return Failure(
        FailureKind.TIMEOUT,
        f"the run exceeded its wall-clock budget (run_timeout={seconds:g}s) while still making "
        f"progress through the scheduler: {steps} scheduling steps by {len(tasks)} thread(s). "
        "It is slow, not blocked (raise run_timeout, or give the program less to do). At the "
        f"last step {task.label} {task.name!r} was at {f'{kind} {obj}'.rstrip()} in {where(here)}",
        thread=task.name,
        details=f"{len(rows)} thread(s) alive when the budget ran out, and what each did last:\n"
                + "\n".join(rows) + "\n",
    )


def _alive(tasks: list[Task], task: Task, here: FrameType) -> list[str]:
    """A row for each thread alive: its state, what it did last and where (``task`` is the
    one that stopped, at ``here``)."""
    rows = []
    for t in tasks:
        if t.state is FINISHED:
            continue
        frame = here if t is task else (t.glet.gr_frame if t.glet is not None else None)
        state = ("stopped here" if t is task else "runnable" if t.state is RUNNABLE
                 else f"blocked on {t.waiting_on}")
        rows.append(f"  {t.label} {t.name!r} ({state}): last did {t.pt.op} {t.pt.obj}".rstrip()
                    + f" at step {t.pt.step}, {where(frame)}")
    return rows


def watchdog_failure(task: Task | None, exc: WatchdogTimeout, *, line: bool) -> Failure:
    user = without_engine_frames(traceback.extract_tb(exc.__traceback__))
    at = f" at {user[-1].filename.rsplit('/', 1)[-1]}:{user[-1].lineno}" if user else ""
    who = f" ({task.label} {task.name!r}{at})" if task is not None else ""
    return Failure(
        FailureKind.TIMEOUT,
        "the run exceeded its wall-clock budget: a thread computed for too long "
        f"without reaching a scheduling point{who}, or blocked outside the scheduler"
        + ("" if line else
           " (a loop with no synchronisation in it is interrupted only at "
           "granularity='line', which can switch inside it)"),
        thread=task.name if task is not None else None,
        details="".join(traceback.format_list(user[-8:])),
    )


def choice_limit_failure(max_choices: int, steps: int, tasks: list[Task]) -> Failure:
    """The run made more choices than its budget allows (threads woken and parked again
    without end: a livelock among waiters)."""
    waiting = ", ".join(f"{t.label} on {t.waiting_on}" for t in tasks if t.state is BLOCKED)
    return Failure(
        FailureKind.STEP_LIMIT,
        f"the run made more than {max_choices} scheduling choices within "
        f"{steps} steps (threads woken again and again to wait once more: a livelock, "
        f"or raise max_steps)" + (f"; waiting: {waiting}" if waiting else ""),
    )


def race_failure(race: Any, task: Task) -> Failure:
    """``race`` (a ``races.Race``) was seen and the run fails on races."""
    return Failure(
        FailureKind.RACE,
        str(race),
        thread=task.name,
        details=(f"{race.first.thread} {race.first.access}:\n"
                 + "".join(f"  {s}\n" for s in race.first.stack)
                 + f"{race.second.thread} {race.second.access}:\n"
                 + "".join(f"  {s}\n" for s in race.second.stack)),
    )


def invariant_failure(invariant: Callable[[], Any], steps: int, task: Task) -> Failure | None:
    """Check the run's invariant; the failure when it returns a false value or raises."""
    try:
        ok = invariant()
        problem = None if ok or ok is None else "the invariant returned a false value"
    except Exception as exc:  # the user's check failed
        problem = f"{type(exc).__name__}: {exc}"
    if problem is None:
        return None
    return Failure(FailureKind.INVARIANT, f"invariant violated at step {steps}: {problem}",
                   thread=task.name)


def _traceback(exc: BaseException) -> str:
    """``exc``'s traceback as Python prints it, without the engine's own frames."""
    shown = traceback.TracebackException.from_exception(exc)
    seen = set()
    link: traceback.TracebackException | None = shown
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        link.stack = traceback.StackSummary.from_list(without_engine_frames(list(link.stack)))
        link = link.__cause__ or link.__context__
    return "".join(shown.format())
