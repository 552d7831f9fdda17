"""Recording operation histories from real threads (HIST-1..4).

An ``Operation`` is one call by one thread, with the real clock read just
before the call and just after it ended, and an ``Outcome``; one that never
returned is *pending*.  ``History`` is the thread-safe log they are recorded
in.  ``BLOCKED`` is what a model expects of a call that would wait (HIST-5).
The rules are in ``specs/history.md``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["BLOCKED", "History", "Operation", "OperationRecorder", "Outcome"]


# ---------------------------------------------------------------------------
# Outcomes and operations (HIST-1)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a call produced: a returned value, or the name of the exception it raised.

    Errors compare by exception class name only (``"OutOfRangeError"``), never
    by message, so that a model can predict them.
    """

    is_error: bool
    value: Any = None

    @classmethod
    def ok(cls, value: Any = None) -> Outcome:
        """A call that returned ``value``."""
        return cls(False, value)

    @classmethod
    def error(cls, exc: BaseException | type[BaseException] | str) -> Outcome:
        """A call that raised ``exc`` (an exception, an exception class, or a class name)."""
        if isinstance(exc, str):
            name = exc
        elif isinstance(exc, type) and issubclass(exc, BaseException):
            name = exc.__name__
        elif isinstance(exc, BaseException):
            name = type(exc).__name__
        else:
            raise TypeError(
                f"Outcome.error(exc): exc must be an exception, an exception class or a class "
                f"name; got {exc!r}"
            )
        return cls(True, name)

    def __repr__(self) -> str:
        return f"raise {self.value}" if self.is_error else f"-> {self.value!r}"


class _Blocked:
    """The type of ``BLOCKED``."""

    _instance: _Blocked | None = None

    def __new__(cls) -> _Blocked:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "BLOCKED"


BLOCKED: Any = _Blocked()
"""What ``apply`` returns as the expected outcome of a call that cannot take
effect in this state (it would wait): no recorded outcome equals it (HIST-5)."""


@dataclass(frozen=True)
class Operation:
    """One call made by one thread (HIST-1).

    ``call`` and ``ret`` are ``time.perf_counter_ns()`` readings taken just
    before the call and just after it ended.  ``ret is None`` marks a *pending*
    operation: it may have taken effect at any moment after ``call``, or never
    (HIST-4); its ``outcome`` is then None or the outcome it will eventually
    have.
    """

    index: int
    thread: Hashable
    kind: str
    arg: Any
    call: int
    ret: int | None
    outcome: Outcome | None

    @property
    def pending(self) -> bool:
        """True when the operation has no return time (HIST-4)."""
        return self.ret is None

    def precedes(self, other: Operation) -> bool:
        """Real-time order: self returned strictly before other was called (HIST-2)."""
        return self.ret is not None and self.ret < other.call

    def describe(self, origin: int = 0) -> str:
        """One line: thread, call, outcome and interval in microseconds from ``origin``."""
        arg = "" if self.arg is None else repr(self.arg)
        end = "pending" if self.ret is None else f"{(self.ret - origin) / 1000:g}"
        outcome = "(no outcome)" if self.outcome is None else repr(self.outcome)
        return (
            f"#{self.index} [{self.thread}] {self.kind}({arg}) {outcome}"
            f"  @ {(self.call - origin) / 1000:g}..{end} us"
        )


# ---------------------------------------------------------------------------
# Recording (HIST-3)
# ---------------------------------------------------------------------------


class OperationRecorder:
    """The handle ``History.record`` yields: say how the call ended.

    Exactly one of ``ok``, ``error`` or ``pending`` may be called, once.  If the
    block raises before any of them, the exception is recorded (HIST-3).
    """

    __slots__ = ("_arg", "_call", "_history", "_kind", "_outcome", "_pending", "_thread", "done")

    def __init__(self, history: History, thread: Hashable, kind: str, arg: Any) -> None:
        self._history = history
        self._thread = thread
        self._kind = kind
        self._arg = arg
        self._outcome: Outcome | None = None
        self._pending = False
        self.done = False
        self._call = time.perf_counter_ns()

    def _set(self, outcome: Outcome | None, pending: bool) -> None:
        if self.done:
            raise RuntimeError(
                f"the outcome of {self._kind}({self._arg!r}) was already recorded as "
                f"{'pending' if self._pending else self._outcome!r}"
            )
        self.done = True
        self._outcome = outcome
        self._pending = pending

    def ok(self, value: Any = None) -> None:
        """The call returned ``value``."""
        self._set(Outcome.ok(value), False)

    def error(self, exc: BaseException | type[BaseException] | str) -> None:
        """The call raised ``exc``."""
        self._set(Outcome.error(exc), False)

    def pending(self, outcome: Outcome | None = None) -> None:
        """The call's effect may happen later, or never: record it without a return (HIST-4).

        For example a plain ``close(timeout=...)`` that timed out stays in line
        and takes effect later (Q-CLOSE-6).  ``outcome`` is the outcome it will
        have if it takes effect, when known.
        """
        self._set(outcome, True)

    def _finish(self) -> None:
        ret = None if self._pending else time.perf_counter_ns()
        self._history._add(self._thread, self._kind, self._arg, self._call, ret, self._outcome)


class History:
    """A thread-safe log of operations (HIST-1, HIST-3).

    Record with ``record`` (a context manager) or through ``RecordingQueue``;
    read with ``operations()``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _ops
        self._ops: list[Operation] = []

    def __len__(self) -> int:
        with self._lock:
            return len(self._ops)

    def operations(self) -> list[Operation]:
        """A copy of the recorded operations, in the order they ended."""
        with self._lock:
            return list(self._ops)

    def _add(
        self,
        thread: Hashable,
        kind: str,
        arg: Any,
        call: int,
        ret: int | None,
        outcome: Outcome | None,
    ) -> None:
        with self._lock:
            self._ops.append(Operation(len(self._ops), thread, kind, arg, call, ret, outcome))

    def add(
        self,
        thread: Hashable,
        kind: str,
        arg: Any,
        call: int,
        ret: int | None,
        outcome: Outcome | None,
    ) -> Operation:
        """Add a hand-built operation (times in any integer unit, ``ret=None`` = pending)."""
        _check_kind(kind)
        if not isinstance(call, int) or isinstance(call, bool):
            raise TypeError(f"History.add(call): call must be an int time; got {call!r}")
        if ret is not None:
            if not isinstance(ret, int) or isinstance(ret, bool):
                raise TypeError(f"History.add(ret): ret must be an int time or None; got {ret!r}")
            if ret < call:
                raise ValueError(f"History.add(ret): ret={ret!r} is before call={call!r}")
            if outcome is None:
                raise ValueError(
                    f"History.add(outcome): a completed operation ({kind}, ret={ret!r}) needs an "
                    "Outcome; use ret=None for a pending one"
                )
        if outcome is not None and not isinstance(outcome, Outcome):
            raise TypeError(f"History.add(outcome): outcome must be an Outcome or None; got {outcome!r}")
        self._add(thread, kind, arg, call, ret, outcome)
        with self._lock:
            return self._ops[-1]

    @contextlib.contextmanager
    def record(
        self, kind: str, arg: Any = None, *, thread: Hashable | None = None
    ) -> Iterator[OperationRecorder]:
        """Record one call made inside the block (HIST-3).

        The call time is read on entry, the return time on exit.  Inside, call
        ``op.ok(value)``, ``op.error(exc)`` or ``op.pending()``.  A block that
        ends normally without any of them records ``ok(None)``; an exception
        escaping the block is recorded as the call's error and propagates.
        ``thread`` defaults to the current thread's name.
        """
        _check_kind(kind)
        if thread is None:
            thread = threading.current_thread().name
        op = OperationRecorder(self, thread, kind, arg)
        try:
            yield op
        except BaseException as exc:
            if not op.done:
                op.error(exc)
            raise
        else:
            if not op.done:
                op.ok(None)
        finally:
            op._finish()


def _check_kind(kind: object) -> None:
    if not isinstance(kind, str) or not kind:
        raise TypeError(f"kind must be a non-empty string naming the operation; got {kind!r}")
