"""Drive a controlled world one step at a time, from outside it.

``explore`` runs a whole program per schedule.  A ``Harness`` instead keeps one
controlled run open and lets the caller (a Hypothesis state machine, a test)
start operations in controlled threads, let them run until every thread is
parked or done (``settle``), let virtual time pass (``advance``), and look at
what each operation did.  Operations that must wait stay pending, parked
inside the runtime, until a later step releases them.

Everything runs on the harness's private worker thread with a step budget per
call and a wall-clock watchdog, like ``explore``.  ``close`` (or leaving the
``with`` block) ends every thread the harness started.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from coordkit.engine.report import RunReport, failure_error
from coordkit.engine.run import OpenRun, Run, Session, check_positive, check_program, program
from coordkit.engine.runtime import Execution, Kill
from coordkit.engine.schedulers import ReplayScheduler
from coordkit.engine.search import run_options
from coordkit.engine.trace import Choices

__all__ = ["Harness", "Operation"]

_PENDING = object()


class Operation:
    """One call started in a controlled thread: pending until it returns or raises."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._value: Any = _PENDING
        self._error: BaseException | None = None
        self._task: Any = None

    @property
    def done(self) -> bool:
        """True once the call has returned or raised."""
        return self._value is not _PENDING or self._error is not None

    @property
    def pending(self) -> bool:
        return not self.done

    @property
    def error(self) -> BaseException | None:
        """What the call raised, or None."""
        return self._error

    def result(self) -> Any:
        """The call's return value; raises what it raised; RuntimeError while pending."""
        if self._error is not None:
            raise self._error
        if self._value is _PENDING:
            raise RuntimeError(f"operation {self.name!r} is still pending")
        return self._value

    @property
    def outcome(self) -> tuple[Any, ...]:
        """``("ok", value)``, ``("error", exception)`` or ``("pending",)``."""
        if self._error is not None:
            return ("error", self._error)
        if self._value is _PENDING:
            return ("pending",)
        return ("ok", self._value)

    def __repr__(self) -> str:
        return f"<Operation {self.name} {self.outcome[0]}>"


def _values(choices: Choices | Sequence[int] | None) -> Sequence[int]:
    """The choice values; a clear TypeError unless ``choices`` is None, Choices or a
    sequence of ints >= 0."""
    if choices is None:
        return ()
    if isinstance(choices, Choices):
        return choices.values
    if isinstance(choices, Sequence) and not isinstance(choices, (str, bytes)) and all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in choices):
        return list(choices)
    raise TypeError(f"choices must be None, Choices or a list of ints >= 0, got {choices!r}")


class Harness:
    """An open controlled run that the caller advances step by step.

    ``run(fn)`` calls ``fn`` in a controlled thread and returns its result (it
    must not block for good); ``start(fn)`` returns an ``Operation`` that may
    stay pending; ``spawn(fn)`` does the same without running it yet, so that
    several operations race in the next settle; ``settle()`` lets every runnable thread run until all are
    parked or done; ``advance(seconds)`` lets virtual time pass so timed waits
    can fire.  Each of these takes optional ``choices`` (e.g. drawn from
    ``coordkit.schedules()``) that decide the interleaving of that step.
    """

    def __init__(self, *, max_steps_per_call: int = 100_000, run_timeout: float = 10.0,
                 granularity: str = "sync") -> None:
        check_positive("max_steps_per_call", max_steps_per_call)
        self._options = run_options(lambda: None, max_steps=max_steps_per_call,
                                    run_timeout=run_timeout, granularity=granularity,
                                    fail_on_thread_exception=False)
        self._session: Session | None = None
        self._chooser = ReplayScheduler([], strict=False)
        self._run: OpenRun | None = None
        self._counter = 0

    # -- lifecycle ---------------------------------------------------------------

    def __enter__(self) -> Harness:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        if self._session is not None:
            raise RuntimeError("this harness is already open")
        self._session = Session(self._options)
        self._session.__enter__()
        try:
            self._run = OpenRun(self._session, self._chooser)
        except BaseException:
            self._session.__exit__()
            self._session = None
            raise

    def close(self) -> None:
        """End every thread the harness started; safe to call twice."""
        session, run = self._session, self._run
        self._session = self._run = None
        if session is None or run is None:
            return
        try:
            run.close()
        finally:
            session.__exit__()

    @property
    def execution(self) -> Execution:
        return self._open_run().execution

    def _open_run(self) -> OpenRun:
        if self._run is None:
            raise RuntimeError("the harness is not open")
        return self._run

    @property
    def now(self) -> float:
        """Virtual seconds since the harness opened."""
        return self.execution.clock.now

    @property
    def thread_exceptions(self) -> list[tuple[str, BaseException]]:
        """Exceptions that ended threads started by the operations (name, exception)."""
        return list(self.execution.thread_exceptions)

    # -- steps -------------------------------------------------------------------------

    def start(self, fn: Callable[[], Any], name: str | None = None,
              choices: Choices | Sequence[int] | None = None) -> Operation:
        """Call ``fn`` in a new controlled thread and settle; the operation may stay pending."""
        op, spawn = self._operation(fn, name)
        self._settle(choices, first=spawn)
        return op

    def spawn(self, fn: Callable[[], Any], name: str | None = None) -> Operation:
        """Create a controlled thread that will call ``fn``, without running it yet.

        It runs at the next ``settle`` (or ``advance``) together with every other
        runnable thread, so several operations spawned before one settle race
        each other, in the interleaving that settle's ``choices`` pick.
        """
        op, spawn = self._operation(fn, name)
        self._open_run().call(spawn)
        return op

    def _operation(self, fn: Callable[[], Any], name: str | None) -> tuple[Operation, Callable[[], None]]:
        """A new operation, and the job (run on the worker) that creates its thread.  An
        ``async def`` ``fn`` runs as a run runs it, with ``asyncio.run`` on a loop of
        coordkit's in the operation's thread (HARN-6, AIO-1)."""
        check_program("fn", fn)
        call = program(fn)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {name!r}")
        run = self._open_run()
        self._counter += 1
        op = Operation(name or getattr(fn, "__name__", f"op{self._counter}"))

        def body() -> None:
            try:
                op._value = call()
            except Kill:
                raise
            except BaseException as exc:  # the operation's outcome, not a thread failure
                op._error = exc

        def spawn() -> None:
            op._task = run.spawn(body, op.name)

        return op, spawn

    def run(self, fn: Callable[[], Any], choices: Choices | Sequence[int] | None = None) -> Any:
        """Call ``fn`` in a controlled thread, settle, and return its result."""
        op = self.start(fn, choices=choices)
        if op.pending:
            raise RuntimeError(
                f"{op.name} blocked (waiting on {op._task.waiting_on}); use start() for calls "
                "that may block"
            )
        return op.result()

    def settle(self, choices: Choices | Sequence[int] | None = None) -> None:
        """Run every runnable thread until each is parked or done; no virtual time passes."""
        self._settle(choices)

    def _settle(self, choices: Choices | Sequence[int] | None,
                first: Callable[[], None] | None = None, seconds: float = 0.0) -> None:
        # One job on the worker: ``first`` (creating a thread) and the settle.
        run = self._open_run()
        self._chooser.use(_values(choices))
        run.drive(steps=self._options.max_steps, horizon=run.execution.clock.now + seconds,
                  first=first)
        self._raise_failure()

    def advance(self, seconds: float, choices: Choices | Sequence[int] | None = None) -> None:
        """Let ``seconds`` of virtual time pass: timed waits due by then fire, in order."""
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not (
                0 <= seconds < math.inf):
            raise ValueError(f"seconds must be a non-negative number, got {seconds!r} (and finite: "
                             "virtual time cannot pass for ever)")
        self._settle(choices, seconds=float(seconds))

    def pending(self) -> list[str]:
        """Names of the controlled threads that are parked, with what they wait on."""
        return self._open_run().pending()

    # -- internals ---------------------------------------------------------------------

    def _raise_failure(self) -> None:
        ex = self.execution
        if ex.failure is None:
            return
        error = failure_error(RunReport.of(Run.of(ex, self._options)))
        assert error is not None
        raise error
