"""A clock for an exploration's budgets (``search.clock``, SCHED-63): time moves only when
a test's program moves it, so budget tests never sleep."""

from __future__ import annotations


class SearchClock:
    """Stands still at ``now`` until the test (or its program) moves it on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now
