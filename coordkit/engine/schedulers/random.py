"""Random walk with bursts."""

from __future__ import annotations

import random

from coordkit.engine.points import Point
from coordkit.engine.schedulers.base import Scheduler, check_seed

__all__ = ["RandomScheduler"]


class RandomScheduler(Scheduler):
    """Random walk with bursts: keep the current thread, or switch with ``switch_probability``.

    Long bursts per thread find ordering bugs far faster than a fair coin at
    every point.  Each run draws from its own generator seeded by ``(seed, run)``
    so any run can be regenerated alone.
    """

    name = "random"
    indexed = True

    def __init__(self, seed: int, switch_probability: float = 0.2) -> None:
        if (isinstance(switch_probability, bool)
                or not isinstance(switch_probability, (int, float))
                or not 0.0 <= switch_probability <= 1.0):
            raise ValueError(f"switch_probability must be a number in [0, 1], got {switch_probability!r}")
        self.seed = check_seed(seed)
        self.switch_probability = switch_probability
        self._rng = random.Random()
        self._switching = False  # stays() drew a switch: choose draws only whom to
        if type(self).choose is not RandomScheduler.choose:
            self.stays = None  # type: ignore[assignment]  # a subclass's choose decides alone

    def begin(self, run_index: int) -> None:
        self._rng.seed(f"{self.seed}:{run_index}")
        self._switching = False

    def stays(self) -> bool:
        """At a choice point where the running thread comes first: whether it goes on,
        drawn as ``choose`` draws it.  The runtime then takes 0 without asking ``choose``
        (SCHED-66); when not, ``choose`` is asked next and draws only whom to switch to, so
        the generator's draws are those of ``choose`` alone."""
        if self._rng.random() >= self.switch_probability:
            return True
        self._switching = True
        return False

    def choose(self, point: Point, enabled: list[Point]) -> int:
        rng = self._rng
        if enabled[0].thread == point.thread:
            if self._switching:
                self._switching = False
            elif rng.random() >= self.switch_probability:
                return 0
        # rng.randrange(n), draw for draw (the stdlib's _randbelow_with_getrandbits, alike
        # on 3.10-3.13 for n >= 1), without its two Python frames at every choice point.
        n = len(enabled)
        k = n.bit_length()
        r = rng.getrandbits(k)
        while r >= n:
            r = rng.getrandbits(k)
        return r
