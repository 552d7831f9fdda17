"""A task's await chain (AIO-45): the coroutines it is suspended in, outermost first,
and what the innermost one awaits.  Failure reports list each live task's chain beside
the threads' stacks; the cancellation check names a suspension point by it (AIO-40)."""

from __future__ import annotations

import asyncio
import os
import sys
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["await_chain", "awaited", "task_reports", "task_states"]

# Every task not yet collected, done ones included (renamed in Python 3.12).
_TASKS = getattr(asyncio.tasks, "_scheduled_tasks" if sys.version_info >= (3, 12) else "_all_tasks")


def await_chain(task: asyncio.Task[Any]) -> list[tuple[str, str, int]]:
    """The frames a task is suspended in, outermost first: (coroutine qualname, file,
    line) for each coroutine or generator, following ``cr_await``/``gi_yieldfrom``."""
    chain = []
    link: Any = task.get_coro()
    while link is not None:
        frame = getattr(link, "cr_frame", None) or getattr(link, "gi_frame", None)
        if frame is None:
            break
        chain.append((getattr(link, "__qualname__", frame.f_code.co_name),
                      frame.f_code.co_filename, frame.f_lineno))
        link = getattr(link, "cr_await", None) or getattr(link, "gi_yieldfrom", None)
    return chain


def awaited(task: asyncio.Task[Any]) -> str:
    """What the task waits for: another task by name, a future, or "" (it is ready)."""
    waiter = getattr(task, "_fut_waiter", None)
    if isinstance(waiter, asyncio.Task):
        return f"awaits {waiter.get_name()}" + (" (done)" if waiter.done() else "")
    if waiter is not None:
        return f"awaits a {type(waiter).__name__}" + (" (done)" if waiter.done() else "")
    return ""


def _order(task: asyncio.Task[Any]) -> tuple[int, str]:
    name = task.get_name()
    number = name[5:] if name.startswith("Task-") else ""
    return (int(number) if number.isdigit() else sys.maxsize, name)


def task_states(loop: Any) -> tuple[str, ...]:
    """Each task of ``loop`` not done, in creation order: a line naming it and what it
    awaits (or that it is running, or ready to run), then one line per frame of its await
    chain (AIO-45)."""
    if loop is None:
        return ()
    tasks = sorted((t for t in list(_TASKS) if t.get_loop() is loop and not t.done()), key=_order)
    states = []
    for task in tasks:
        coro = task.get_coro()
        head = f"{task.get_name()} {getattr(coro, '__qualname__', type(coro).__name__)!r}"
        head += f" on {loop._ck_label}"
        if asyncio.current_task(loop) is task:
            waits = "running (its thread's stack shows where)"
        else:
            waits = awaited(task) or "ready to run"
        lines = [f"{head}, {waits}"]
        lines += [f"    {name} at {os.path.basename(file)}:{line}"
                  for name, file, line in await_chain(task)]
        states.append("\n".join(lines))
    return tuple(states)


def task_reports(loop: Any) -> Callable[[], tuple[str, ...]]:
    """What the run calls at a failure for ``loop``'s tasks (without keeping it alive)."""
    ref = weakref.ref(loop)
    return lambda: task_states(ref())
