"""The ``hypothesis`` strategy: Hypothesis generates schedules and shrinks them itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coordkit.engine.report import same_failure
from coordkit.engine.schedulers import ReplayScheduler
from coordkit.engine.trace import Choices

if TYPE_CHECKING:
    from coordkit.engine.run import Run, Session

__all__ = ["find_with_hypothesis"]


class _Found(Exception):
    """Stops Hypothesis at a failing schedule (after its own shrinking)."""


class _Abort(BaseException):
    """Carries out of Hypothesis an error that is not the program's failure (the scheduler's
    or the progress callback's): Hypothesis would take it for a failing example, replay it,
    and report a flaky test when it does not happen twice."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def find_with_hypothesis(session: Session, fn: Callable[[], Any], ran: Callable[[Run], None], *,
                         max_schedules: int, seed: int, shrink: bool) -> Run | None:
    """On the worker: let Hypothesis draw ``coordkit.schedules()`` until one fails the way
    the first failure did; its shrunk example is the run returned."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hyp_seed
    from hypothesis.errors import Flaky

    from coordkit.engine.strategies import schedules

    first: list[Run] = []

    @settings(
        max_examples=max_schedules,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @hyp_seed(seed)
    @given(schedules())
    def body(choices: Choices) -> None:
        try:
            run = session.run(fn, ReplayScheduler(choices.values, strict=False))
            ran(run)
        except BaseException as exc:  # not a failing example: see _Abort
            raise _Abort(exc) from None
        if run.failure is not None:
            if not first:
                first.append(run)
            if same_failure(first[0].failure, run.failure):  # type: ignore[arg-type]
                raise _Found(choices)

    try:
        body()
    except _Abort as abort:
        raise abort.error from None
    except Flaky:
        # The program does not fail the same way twice (it reads real time or randomness,
        # or a fault came once): report the failure as found, as the other strategies do.
        if not first:
            raise
        return first[0]
    except _Found as found:
        choices = found.args[0]
        run = session.run(fn, ReplayScheduler(choices.values, strict=False))
        return run if run.failure is not None else first[0]
    return None
