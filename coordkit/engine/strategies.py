"""Hypothesis strategies for schedules.

``schedules()`` generates ``Choices`` as a list of context switches, each
"keep going for ``gap`` choice points, then switch to candidate ``k``"
(``context_switches`` turns such a list into ``Choices``).  Hypothesis
shrinks lists to fewer entries first, so a shrunk schedule is one with fewer
context switches, then with earlier and smaller ones.  Run one with
``coordkit.replay(fn, choices)``.
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from coordkit.engine.run import check_loop_modes
from coordkit.engine.trace import Choices

__all__ = ["context_switches", "schedules"]


# Bounds on a generated schedule: a run makes at most CHOICES_PER_STEP choices per step,
# so anything longer than a large run's choices can only be drawn, never used.
_LARGEST = 1_000_000


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _LARGEST:
        raise ValueError(f"{name} must be an integer in 1..{_LARGEST}, got {value!r}")


def context_switches(switches: list[tuple[int, int]], *, cancel: str | None = None,
                     adversarial: bool = False) -> Choices:
    """The ``Choices`` of a list of context switches ``(gap, k)``: keep the current
    thread for ``gap`` choice points, then switch to candidate ``k``; with the event
    loops' modes ``cancel`` and ``adversarial`` as ``explore`` takes them (AIO-47).

    This is how ``schedules()`` builds its values, so a failing example prints
    as ``context_switches([(3, 1)])``, which runs as it reads.
    """
    check_loop_modes(cancel, adversarial)
    values: list[int] = []
    for gap, k in switches:
        values.extend([0] * gap)
        values.append(k)
    return Choices(tuple(values), cancel=cancel == "tasks", adversarial=adversarial)


def schedules(
    *, max_switches: int = 20, max_gap: int = 200, max_value: int = 7,
    cancel: str | None = None, adversarial: bool = False,
) -> st.SearchStrategy[Choices]:
    """A strategy for lenient schedules with up to ``max_switches`` context switches.

    Between switches the current thread keeps running for up to ``max_gap``
    choice points; a switch picks candidate ``1..max_value`` (reduced to the
    candidates there are, never to 0).  Choice points after the last switch
    keep the current thread running.

    ``cancel="tasks"`` and ``adversarial=True`` give the schedules the event loops'
    choices of ``explore``'s modes (AIO-40, AIO-44): a switch may then cancel a task at
    an ``await``, or run another ready callback first; ``replay`` offers them (AIO-47).
    """
    _positive_int("max_switches", max_switches)
    _positive_int("max_gap", max_gap)
    _positive_int("max_value", max_value)
    check_loop_modes(cancel, adversarial)
    # Most programs have few choice points between the switches that matter: favour
    # short gaps, but keep long ones reachable.
    gap = st.one_of(st.integers(0, min(8, max_gap)), st.integers(0, max_gap))
    switch = st.tuples(gap, st.integers(1, max_value))
    return st.lists(switch, max_size=max_switches).map(
        functools.partial(context_switches, cancel=cancel, adversarial=adversarial))
