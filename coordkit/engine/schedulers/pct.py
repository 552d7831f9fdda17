"""Probabilistic Concurrency Testing."""

from __future__ import annotations

import math
import random

from coordkit.engine.points import Point
from coordkit.engine.schedulers.base import FinishedRun, Scheduler

__all__ = ["PCTScheduler"]


class PCTScheduler(Scheduler):
    """Probabilistic Concurrency Testing (Burckhardt et al., 2010) with bug depth ``depth``.

    Threads get random distinct priorities; the highest-priority runnable thread
    runs; at ``depth - 1`` random steps the running thread drops below every
    initial priority.  A bug of depth d is found with probability at least
    1/(n * k^(d-1)) per run for n threads and k steps.
    """

    name = "pct"

    def __init__(self, seed: int, depth: int = 3) -> None:
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth!r}")
        self.seed = seed
        self.depth = depth
        self._rng = random.Random()
        self._max_steps_seen = 32
        self._priority: dict[int, float] = {}
        self._change_points: dict[int, int] = {}

    def begin(self, run_index: int) -> None:
        rng = self._rng
        rng.seed(f"{self.seed}:{run_index}")
        self._priority = {}
        k = self._max_steps_seen
        points = rng.sample(range(1, k + 1), min(self.depth - 1, k))
        # Later change points drop further: the i-th gets priority depth - i (< depth).
        self._change_points = {step: self.depth - 1 - i for i, step in enumerate(sorted(points))}

    def _prio(self, tid: int) -> float:
        p = self._priority.get(tid)
        if p is None:
            p = self._priority[tid] = self.depth + self._rng.random()
        return p

    def choose(self, point: Point, enabled: list[Point]) -> int:
        cur = point.thread
        drop = self._change_points.pop(point.step, None)
        if drop is not None:
            self._priority[cur] = min(drop, self._prio(cur))  # a drop never raises
        if point.yielding and len(enabled) > 1:
            # A yield (sleep(0)) steps aside: below every other thread, until it changes.
            self._priority[cur] = min(self._prio(p.thread) for p in enabled) - 1.0
        best, best_p = 0, -math.inf
        for i, p in enumerate(enabled):
            prio = self._prio(p.thread)
            if prio > best_p:
                best, best_p = i, prio
        return best

    def end(self, run: FinishedRun) -> None:
        self._max_steps_seen = max(self._max_steps_seen, run.steps)
