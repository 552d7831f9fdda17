"""The cancellation search (AIO-41): every offered cancellation, one per run.

Its first run takes the default everywhere (the program's own order) and lists the
cancellations the loops offered (AIO-40: a ``cancel`` point of a task's canceller, new
at the choice point where it is offered).  Each later run follows the same order and
takes exactly one of them: run ``k`` the ``k``-th offer, so the search is exhausted
after one run per (task, suspension point) pair.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordkit.engine.aio.cancel import CANCEL
from coordkit.engine.schedulers.base import FinishedRun, Scheduler

if TYPE_CHECKING:
    from coordkit.engine.points import Point

__all__ = ["CancelScheduler"]


class CancelScheduler(Scheduler):
    """Run the program's own order, then once more per offered cancellation (AIO-41)."""

    name = "cancel"

    def __init__(self) -> None:
        self.offers: list[str] | None = None  # what the first run offered, in order
        self._listing: list[str] = []
        self._target = -1  # the offer this run takes (-1: none, the first run)
        self._seen: set[tuple[int, int]] = set()
        self._count = 0

    def begin(self, run_index: int) -> None:
        self._seen = set()
        self._count = 0
        self._listing = []

    def choose(self, point: Point, enabled: list[Point]) -> int:
        for i, candidate in enumerate(enabled):
            if candidate.op != CANCEL or (candidate.thread, candidate.step) in self._seen:
                continue
            self._seen.add((candidate.thread, candidate.step))
            self._count += 1
            self._listing.append(candidate.obj)
            if self._count - 1 == self._target:
                return i
        return 0

    def end(self, run: FinishedRun) -> None:
        if self.offers is None:
            self.offers = self._listing
        self._target += 1

    @property
    def exhausted(self) -> bool:
        return self.offers is not None and self._target >= len(self.offers)

    def coverage(self, granularity: str) -> str | None:
        """What an exhausted search covered (SCHED-36, AIO-41)."""
        if not self.exhausted or self.offers is None:
            return None
        return (f"every cancellation point: {len(self.offers)} (task, suspension point) "
                f"pair(s), each cancelled in a run of its own, in the program's own order "
                f"otherwise, at {granularity} granularity")
