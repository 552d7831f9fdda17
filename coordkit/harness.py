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

from collections.abc import Callable, Sequence
from typing import Any

from coordkit._runtime import FINISHED, Execution, Kill
from coordkit.errors import StepLimitExceeded
from coordkit.explore import Choices, _Options, _Session
from coordkit.schedulers import ReplayScheduler

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


class _Chooser(ReplayScheduler):
    """Lenient replay whose choices are replaced at every step."""

    def __init__(self) -> None:
        super().__init__([], strict=False)

    def use(self, choices: Choices | Sequence[int] | None) -> None:
        if choices is None:
            values: Sequence[int] = ()
        elif isinstance(choices, Choices):
            values = choices.values
        else:
            values = list(choices)
        self._choices = [int(c) for c in values]
        self._k = 0


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
        from coordkit.explore import _options

        self._options: _Options = _options(
            lambda: None, max_steps_per_call, run_timeout, granularity, None, False
        )
        self._session: _Session | None = None
        self._chooser = _Chooser()
        self._ex: Execution | None = None
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
        self._session = _Session(self._options)
        self._session.__enter__()
        opts = self._options
        ex = Execution(
            self._chooser,
            max_steps=opts.max_steps,
            caller_thread=opts.caller_thread,
            fail_on_thread_exception=False,
            line_granularity=opts.granularity == "line",
        )
        ex.open_ended = True
        self._ex = ex

        def init() -> None:
            from greenlet import getcurrent

            ex._driver = getcurrent()

        self._session.call(init)

    def close(self) -> None:
        """End every thread the harness started; safe to call twice."""
        session, ex = self._session, self._ex
        self._session = None
        if session is None or ex is None:
            return
        try:
            session.call(ex._end)
        finally:
            session.__exit__()

    @property
    def execution(self) -> Execution:
        if self._ex is None or self._session is None:
            raise RuntimeError("the harness is not open")
        return self._ex

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
        self._call(spawn)
        return op

    def _operation(self, fn: Callable[[], Any], name: str | None) -> tuple[Operation, Callable[[], None]]:
        """A new operation, and the job (run on the worker) that creates its thread."""
        if not callable(fn):
            raise TypeError(f"fn must be a zero-argument callable, got {fn!r}")
        ex = self.execution
        self._counter += 1
        op = Operation(name or getattr(fn, "__name__", f"op{self._counter}"))

        def body() -> None:
            try:
                op._value = fn()
            except Kill:
                raise
            except BaseException as exc:  # the operation's outcome, not a thread failure
                op._error = exc

        def spawn() -> None:
            op._task = ex.spawn(body, op.name, daemon=True)

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
                first: Callable[[], None] | None = None) -> None:
        # One job on the worker: ``first`` (creating a thread) and the settle.
        ex = self.execution
        self._chooser.use(choices)
        budget = ex.steps + self._options.max_steps

        def step() -> None:
            if first is not None:
                first()
            ex.max_steps = budget
            ex.horizon = ex.clock.now
            ex.drive()

        self._call(step)
        self._raise_failure()

    def advance(self, seconds: float, choices: Choices | Sequence[int] | None = None) -> None:
        """Let ``seconds`` of virtual time pass: timed waits due by then fire, in order."""
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ValueError(f"seconds must be a non-negative number, got {seconds!r}")
        ex = self.execution
        self._chooser.use(choices)
        budget = ex.steps + self._options.max_steps
        target = ex.clock.now + float(seconds)

        def step() -> None:
            ex.max_steps = budget
            ex.horizon = target
            ex.drive()
            if ex.failure is None and ex.clock.now < target:
                ex.clock.now = target

        self._call(step)
        self._raise_failure()

    def pending(self) -> list[str]:
        """Names of the controlled threads that are parked, with what they wait on."""
        return [f"{t.name}: {t.waiting_on}" for t in self.execution.tasks
                if t.state is not FINISHED and t.waiting_on]

    # -- internals ---------------------------------------------------------------------

    def _call(self, job: Callable[[], Any]) -> Any:
        if self._session is None:
            raise RuntimeError("the harness is not open")
        return self._session.call(job)

    def _raise_failure(self) -> None:
        failure = self.execution.failure
        if failure is None:
            return
        if failure.kind == "step_limit":
            raise StepLimitExceeded(failure.message)
        if failure.exception is not None:
            raise failure.exception
        raise RuntimeError(failure.message)
