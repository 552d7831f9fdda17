"""``replay`` re-runs one schedule exactly; ``run`` runs a program once, controlled."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from coordkit.engine.report import RunReport, failure_error, target_name
from coordkit.engine.run import GRANULARITIES, MAX_STEPS, Session, check_positive, check_program, program
from coordkit.engine.schedulers import ReplayScheduler
from coordkit.engine.search import run_options
from coordkit.engine.trace import Choices, Schedule

__all__ = ["record", "replay", "run"]

Trace = str | Schedule | Choices | Sequence[int]


def _scheduler(trace: Trace, recorded: Any, strict: bool) -> ReplayScheduler:
    if isinstance(recorded, Schedule):
        return ReplayScheduler(recorded.choices, strict=strict)
    if isinstance(trace, Choices):
        return ReplayScheduler(trace.values, strict=False)
    return ReplayScheduler(list(trace), strict=False)


def _check_trace(trace: Any, name: str = "trace") -> None:
    """A clear TypeError naming ``name`` unless ``trace`` is a trace string, a Schedule,
    Choices or a sequence of ints >= 0."""
    if isinstance(trace, (str, Schedule, Choices)):
        return
    if isinstance(trace, Sequence) and all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in trace):
        return
    raise TypeError(f"{name} must be a trace string, a Schedule, Choices or a list of ints >= 0, "
                    f"got {trace!r}")


def _check_options(strict: Any, max_steps: Any, granularity: Any, fail_on_thread_exception: Any) -> None:
    """The replay options that default to the trace's: None, or a value of the right kind."""
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be a bool, got {strict!r}")
    check_positive("max_steps", max_steps, allow_none=True)
    if granularity is not None and (not isinstance(granularity, str)
                                    or granularity not in GRANULARITIES):
        raise ValueError(f"granularity must be None or one of {GRANULARITIES}, got {granularity!r}")
    if fail_on_thread_exception is not None and not isinstance(fail_on_thread_exception, bool):
        raise TypeError(f"fail_on_thread_exception must be None or a bool, got "
                        f"{fail_on_thread_exception!r}")


def record(
    fn: Callable[[], Any],
    trace: Trace,
    *,
    strict: bool = True,
    max_steps: int | None = None,
    run_timeout: float = 10.0,
    granularity: str | None = None,
    invariant: Callable[[], Any] | None = None,
    fail_on_thread_exception: bool | None = None,
    snapshots: bool = False,
) -> RunReport:
    """Run ``fn`` under exactly the schedule ``trace`` and return its recorded report,
    failing or not; a schedule that does not fit the program raises ``TraceDivergedError``.
    With ``snapshots`` the report keeps the world at each step (what the viewer shows).

    The options default to what the trace recorded (a trace string or ``Schedule``),
    else to ``explore``'s defaults; a ``granularity`` that contradicts the trace's
    is an error, since the schedule could not match.  The event loops' modes (``cancel``,
    ``adversarial``) are the trace's, a ``Choices``' included (AIO-47).
    """
    _check_trace(trace)
    _check_options(strict, max_steps, granularity, fail_on_thread_exception)
    recorded = Schedule.decode(trace) if isinstance(trace, str) else trace
    if isinstance(recorded, Schedule):
        if granularity is not None and granularity != recorded.granularity:
            raise ValueError(
                f"granularity={granularity!r}, but the trace was recorded with "
                f"granularity={recorded.granularity!r}; leave granularity out to use the trace's"
            )
        if recorded.invariant and invariant is None and strict:
            raise ValueError(
                "the trace is of a run that failed on its invariant; pass the same "
                "invariant= to replay it"
            )
        granularity = recorded.granularity
        if fail_on_thread_exception is None:
            fail_on_thread_exception = recorded.fail_on_thread_exception
        max_steps = max_steps or recorded.max_steps
    options = run_options(
        fn, max_steps=max_steps or MAX_STEPS, run_timeout=run_timeout,
        granularity=granularity or "sync", invariant=invariant,
        fail_on_thread_exception=True if fail_on_thread_exception is None else fail_on_thread_exception,
        racing=frozenset(recorded.racing) if isinstance(recorded, Schedule) else frozenset(),
        cancel=isinstance(recorded, (Schedule, Choices)) and recorded.cancel,
        adversarial=isinstance(recorded, (Schedule, Choices)) and recorded.adversarial,
    )
    scheduler = _scheduler(trace, recorded, strict)
    with Session(options) as session:
        run = session.run(fn, scheduler, record=True, snapshots=snapshots)
    if run.scheduler_error is not None:
        raise run.scheduler_error
    return RunReport.of(run)


def replay(
    fn: Callable[[], Any],
    trace: Trace,
    *,
    strict: bool = True,
    max_steps: int | None = None,
    run_timeout: float = 10.0,
    granularity: str | None = None,
    invariant: Callable[[], Any] | None = None,
    fail_on_thread_exception: bool | None = None,
) -> RunReport:
    """Re-run ``fn`` under exactly the schedule ``trace`` and raise what that run raised.

    A thread's exception is re-raised as it was; a deadlock raises ``Deadlock``;
    a step limit ``StepLimitExceeded``; an invariant ``AssertionError``.  When
    the schedule no longer matches the program (``strict``), ``TraceDivergedError``
    names the choice point where it stopped matching.  Returns a ``RunReport``
    when the run passes, e.g. once the bug is fixed.

    ``granularity``, ``fail_on_thread_exception`` and ``max_steps`` default to
    what the trace recorded (a trace string or ``Schedule``), else to
    ``explore``'s defaults; a ``granularity`` that contradicts the trace's is an
    error, since the schedule could not match.
    """
    report = record(fn, trace, strict=strict, max_steps=max_steps, run_timeout=run_timeout,
                    granularity=granularity, invariant=invariant,
                    fail_on_thread_exception=fail_on_thread_exception)
    error = failure_error(report)
    if error is not None:
        raise error
    return report


def run(
    fn: Callable[[], Any],
    schedule: Trace = (),
    *,
    max_steps: int | None = None,
    run_timeout: float = 10.0,
    granularity: str | None = None,
    fail_on_thread_exception: bool | None = None,
) -> Any:
    """Run ``fn`` once under the controlled scheduler and return what it returned.

    Threads take turns in round-robin order (or follow ``schedule``, replayed
    leniently, with the options it recorded unless given here), time is
    virtual, and the run raises what ``replay`` would: the thread's exception,
    ``Deadlock``, ``StepLimitExceeded``.
    """
    check_program("fn", fn)
    _check_trace(schedule, "schedule")
    box: dict[str, Any] = {}
    main = program(fn)

    def body() -> None:
        box["value"] = main()

    body.__qualname__ = target_name(fn)
    replay(body, schedule, strict=False, max_steps=max_steps, run_timeout=run_timeout,
           granularity=granularity, fail_on_thread_exception=fail_on_thread_exception)
    return box.get("value")
