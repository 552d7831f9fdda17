"""Where in the user's code a thread is: the frame a report points at.

A scheduling point is reached inside coordkit (a shim, a queue) or the standard
library (``threading``, ``queue``); a report should name the user's line that
called it.  Frames of the engine itself are left out of every stack a report shows.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

__all__ = ["is_machinery", "is_traced_library", "place", "raised_at", "user_frame", "user_frames",
           "user_stack", "where", "without_engine_frames"]

_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_DIR = os.path.dirname(_ENGINE_DIR)
# The engine's own frames: never shown.
_INTERNALS = frozenset(
    os.path.join(_ENGINE_DIR, name)
    for name in ("runtime.py", "task.py", "record.py", "failures.py", "shims.py", "patch.py",
                 "tracing.py", "harness.py", "run.py", "races.py", "accesses.py")
) | frozenset(os.path.join(_ENGINE_DIR, "aio", name) for name in ("__init__.py", "install.py"))
# Frames in these files are machinery, not the user's code: a report points past them
# (to coordkit's own frame only when a thread runs nothing else, like a runner's thread).
_MACHINERY = _INTERNALS | frozenset(
    [os.path.join(_ENGINE_DIR, name) for name in ("search.py", "report.py")]
    + [os.path.join(_PACKAGE_DIR, name) for name in (
        "sync.py", "_waiting.py", "interleavings.py", "queues.py", "coordinator.py",
        "queue_runner.py",
    )]
)
# The standard library's modules whose frames a report also points past: a file name
# ending with one of these (a separator first, so that ``myqueue.py`` is not one).
_LIBRARY_FILES = tuple(
    os.sep + os.path.join(*module.split(".")) + ".py"
    for module in ("threading", "queue", "contextlib", "asyncio.base_events",
                   "asyncio.runners", "asyncio.events", "asyncio.threads")
)


# The standard library's code race detection may look into (RACE-12: only methods called
# on the program's own event loop, log handler or scheduler): file, relative to the
# standard library's directory -> the functions of it
# (``Class.method``, or ``Class.`` for all of a class's), or None for all.  Chosen by
# measurement (benchmarks/races.py): an event loop's per-callback methods (call_soon,
# _check_closed, call_at, create_task, time...) touch the loop's own thread's state, its
# thread-safe ready deque or a flag the methods here see too, and tracing them made asyncio
# programs 1.6-5x slower; a Logger's methods (on every log call) made a program logging
# from two threads 9x slower on 3.12 for nothing (a Logger is none of RACE-12's objects).
# The rest of the stdlib is left out (RACE-13).
TRACED_LIBRARY: dict[str, frozenset[str] | None] = {
    "asyncio/base_events.py": frozenset(f"BaseEventLoop.{name}" for name in (
        "stop", "close", "is_running", "is_closed", "_check_running", "run_forever",
        "_run_forever_setup", "_run_forever_cleanup", "run_until_complete", "set_debug",
        "set_exception_handler", "set_task_factory", "set_default_executor",
        "shutdown_asyncgens", "shutdown_default_executor")),
    "logging/__init__.py": frozenset({
        "Filterer.", "Handler.", "StreamHandler.", "FileHandler.", "_StderrHandler.",
        "NullHandler."}),
    "logging/handlers.py": None,
    "sched.py": None,
}
_TRACED_TAILS = tuple(name.replace("/", os.sep) for name in TRACED_LIBRARY)
_STDLIB_DIR = os.path.dirname(os.path.realpath(os.__file__)) + os.sep


def is_traced_library(filename: str, qualname: str) -> bool:
    """True for a function of the standard library whose code may be traced (RACE-12),
    by its file and qualified name (on 3.10, which has none, its plain name)."""
    if not filename.endswith(_TRACED_TAILS):  # (cheap: most code is in no such file)
        return False
    path = os.path.realpath(filename)
    if not path.startswith(_STDLIB_DIR):
        return False
    functions = TRACED_LIBRARY.get(path[len(_STDLIB_DIR):].replace(os.sep, "/"), False)
    return functions is not False and _named(functions, qualname)


def _named(functions: frozenset[str] | None, qualname: str) -> bool:
    if functions is None or qualname in functions:
        return True
    owner, dot, _ = qualname.partition(".")
    if dot:
        return owner + "." in functions
    # (3.10: a plain name; a class's whole list lets the receiver decide, RACE-12)
    return any(f.endswith("." + qualname) or f.endswith(".") for f in functions)


# Primitives that are packages: every file in them is machinery.
_MACHINERY_DIRS = tuple(os.path.join(_PACKAGE_DIR, name) + os.sep for name in ("queues", "pipeline")) + (
    os.path.join(_ENGINE_DIR, "aio") + os.sep,)


def is_machinery(filename: str) -> bool:
    """True for a file of coordkit's machinery (the engine, the primitives)."""
    return filename in _MACHINERY or filename.startswith(_MACHINERY_DIRS)


def user_frame(frame: Any) -> Any:
    """The innermost frame of the user's code (not coordkit's nor the stdlib's sync code);
    for a thread that runs only coordkit code (a runner, a looper), coordkit's own frame."""
    f = frame
    fallback = None
    while f is not None:
        fn = f.f_code.co_filename
        library = fn.endswith(_LIBRARY_FILES)
        if not library and not is_machinery(fn):
            return f
        if fallback is None and not library and fn not in _INTERNALS:
            fallback = f
        f = f.f_back
    return fallback or frame


def user_frames(frame: Any) -> list[Any]:
    """The frames of the user's code at and above ``frame``, innermost first (no
    coordkit machinery, no stdlib synchronisation code)."""
    frames = []
    f = frame
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.endswith(_LIBRARY_FILES) and not is_machinery(fn):
            frames.append(f)
        f = f.f_back
    return frames


def user_stack(frame: Any) -> str:
    """A thread's stack without the engine's own frames."""
    if frame is None:
        return ""
    entries = [e for e in traceback.extract_stack(frame) if e.filename not in _INTERNALS]
    return "".join(traceback.format_list(entries))


def without_engine_frames(entries: list[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
    """``entries`` without the engine's own frames."""
    return [e for e in entries if e.filename not in _INTERNALS]


def where(frame: Any) -> str:
    """``file.py:LINE in function`` of the user's frame at or above ``frame``."""
    f = user_frame(frame)
    if f is None:
        return "?"
    return place(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)


def place(filename: str, line: int, function: str) -> str:
    """How a report names a place in the code: ``file.py:LINE in function``."""
    return f"{os.path.basename(filename)}:{line} in {function}"


def raised_at(exc: BaseException) -> str:
    """Where the user's code raised ``exc`` (``file.py:LINE in function``): the innermost
    frame of its traceback that is neither coordkit's nor the stdlib's sync code."""
    entries = without_engine_frames(traceback.extract_tb(exc.__traceback__))
    for entry in reversed(entries):
        if not entry.filename.endswith(_LIBRARY_FILES) and not is_machinery(entry.filename):
            return place(entry.filename, entry.lineno or 0, entry.name)
    return place(entries[-1].filename, entries[-1].lineno or 0, entries[-1].name) if entries else "?"
