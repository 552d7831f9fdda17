"""The ``hypothesis`` strategy: Hypothesis generates schedules and shrinks them itself."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coordkit.engine.recursion import room_for_threads
from coordkit.engine.report import same_failure
from coordkit.engine.schedulers import ReplayScheduler
from coordkit.engine.trace import Choices

if TYPE_CHECKING:
    from coordkit.engine.run import Run, Session

__all__ = ["find_with_hypothesis"]


class _Found(Exception):
    """Stops Hypothesis at a failing schedule (after its own shrinking)."""


class _Stop(BaseException):
    """Stops Hypothesis when the exploration's budget is spent (not a failing example)."""


class _Abort(BaseException):
    """Carries out of Hypothesis an error that is not the program's failure (the scheduler's
    or the progress callback's): Hypothesis would take it for a failing example, replay it,
    and report a flaky test when it does not happen twice."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def find_with_hypothesis(session: Session, fn: Callable[[], Any], ran: Callable[[Run], None],
                         shrank: Callable[[Run], None], *, max_schedules: int, seed: int,
                         shrink: bool, out_of_time: Callable[[], bool]) -> Run | None:
    """On the worker: let Hypothesis draw ``coordkit.schedules()`` until one fails the way
    the first failure did; its shrunk example is the run returned.  Runs before the first
    failure are counted by ``ran`` (at most ``max_schedules``), Hypothesis's shrinking runs
    by ``shrank``; none starts once ``out_of_time()`` (SCHED-61), and the smallest failure
    seen by then is the one returned (SCHED-62)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hyp_seed

    from coordkit.engine.strategies import schedules

    failing: list[Run] = []  # the first failure, then each smaller one Hypothesis finds
    searched = [0]

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
        if out_of_time() or (not failing and searched[0] >= max_schedules):
            raise _Stop
        try:
            run = session.run(fn, ReplayScheduler(choices.values, strict=False))
            if failing:
                shrank(run)
            else:
                searched[0] += 1
                ran(run)
        except BaseException as exc:  # not a failing example: see _Abort
            raise _Abort(exc) from None
        if run.failure is not None and (not failing or same_failure(failing[0].failure,
                                                                    run.failure)):
            failing.append(run)
            raise _Found(choices)

    return _searched(body, failing)


def _searched(body: Callable[[], None], failing: list[Run]) -> Run | None:
    """Run the Hypothesis test ``body`` and map how it ended to the run to report:
    the smallest failure in ``failing`` (SCHED-62), or None when none failed."""
    # The recursion limit is raised once for the whole search (SCHED-40), not inside each
    # example: Hypothesis warns when an example leaves a limit it did not set.
    from hypothesis.errors import Flaky

    try:
        with room_for_threads(sys._getframe()):
            body()
    except _Abort as abort:
        raise abort.error from None
    except _Stop:
        return failing[-1] if failing else None
    except Flaky:
        # The program does not fail the same way twice (it reads real time or randomness,
        # or a fault came once): report the failure as found, as the other strategies do.
        if not failing:
            raise
        return failing[0]
    except _Found:
        # Hypothesis ends by running its shrunk example once more: that run is the last.
        return failing[-1]
    return None
