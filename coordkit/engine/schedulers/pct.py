"""Probabilistic Concurrency Testing over choice points."""

from __future__ import annotations

import math
import random

from coordkit.engine.points import Point
from coordkit.engine.schedulers.base import FinishedRun, Scheduler, check_int, check_seed, starts_epoch

__all__ = ["PCTScheduler"]


class PCTScheduler(Scheduler):
    """Probabilistic Concurrency Testing (Burckhardt et al., ASPLOS 2010) with bug depth
    ``depth``, over choice points (SCHED-38).

    Threads get random distinct priorities; the highest-priority runnable thread runs;
    at ``depth - 1`` change points the running thread drops below every initial
    priority.  Change points are drawn among the choice points of a run (the points
    with two or more runnable threads: where a drop can change who runs), numbered
    1..k, where k is the most choice points a run of this program had before the
    run's learning epoch (PAR-2: ``starts_epoch``).  A
    bug of depth d is then found with probability at least 1/(n * k^(d-1)) per run
    for n threads, once k is known (after the first run).
    """

    name = "pct"
    indexed = True

    def __init__(self, seed: int, depth: int = 3) -> None:
        check_int("depth", depth, 1)
        self.seed = check_seed(seed)
        self.depth = depth
        self._rng = random.Random()
        self.k = 1  # the most choice points a run had before this epoch (learned)
        self.seen = 1  # the most choice points a run has had
        self._priority: dict[int, float] = {}
        self._change_points: dict[int, int] = {}
        self._choice = 0  # choice points reached in this run

    def begin(self, run_index: int) -> None:
        if starts_epoch(run_index):
            self.k = max(self.k, self.seen)
        rng = self._rng
        rng.seed(f"{self.seed}:{run_index}")
        self._priority = {}
        self._choice = 0
        points = rng.sample(range(1, self.k + 1), min(self.depth - 1, self.k))
        # Later change points drop further: the i-th gets priority depth - 1 - i (< depth).
        self._change_points = {c: self.depth - 1 - i for i, c in enumerate(sorted(points))}

    def _prio(self, tid: int) -> float:
        p = self._priority.get(tid)
        if p is None:
            p = self._priority[tid] = self.depth + self._rng.random()
        return p

    def choose(self, point: Point, enabled: list[Point]) -> int:
        self._choice += 1
        cur = point.thread
        drop = self._change_points.pop(self._choice, None)
        if drop is not None:
            self._priority[cur] = min(drop, self._prio(cur))  # a drop never raises
        if point.yielding:
            # A yield (sleep(0)) steps aside: below every other thread, until it changes.
            self._priority[cur] = min(self._prio(p.thread) for p in enabled) - 1.0
        best, best_p = 0, -math.inf
        for i, p in enumerate(enabled):
            prio = self._prio(p.thread)
            if prio > best_p:
                best, best_p = i, prio
        return best

    def end(self, run: FinishedRun) -> None:
        self.seen = max(self.seen, len(run.choices))
