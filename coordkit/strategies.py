"""Hypothesis strategies for schedules.

``schedules()`` generates ``Choices``: a list of small integers, one per choice
point, where 0 keeps the current thread running.  Hypothesis shrinks integers
towards 0 and lists towards empty, so a shrunk schedule is one with fewer
context switches.  Run one with ``coordkit.replay(fn, choices)``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from coordkit.explore import Choices

__all__ = ["schedules"]


def schedules(*, max_choices: int = 400, max_value: int = 15) -> st.SearchStrategy[Choices]:
    """A strategy for lenient schedules of up to ``max_choices`` choice points.

    Choice points beyond the generated list keep the current thread running;
    a value is reduced modulo the number of candidate threads.
    """
    if isinstance(max_choices, bool) or not isinstance(max_choices, int) or max_choices < 0:
        raise ValueError(f"max_choices must be a non-negative integer, got {max_choices!r}")
    if isinstance(max_value, bool) or not isinstance(max_value, int) or max_value < 1:
        raise ValueError(f"max_value must be a positive integer, got {max_value!r}")
    return st.lists(st.integers(0, max_value), max_size=max_choices).map(
        lambda values: Choices(tuple(values))
    )
