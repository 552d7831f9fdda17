"""Exploration strategies behind one small interface.

The runtime asks a scheduler one question at each choice point:
``choose(point, enabled)``, where ``point`` is what the running thread is at and
``enabled`` the points of the threads that could run next.  The answer is an
index into ``enabled``, ordered so that index 0 continues the running thread (or,
when it cannot run, takes the next thread in round-robin order); any other answer
is a context switch.  A scheduler sees one run at a time through
``begin``/``choose``/``end`` and says through ``exhausted`` when it has nothing
left to try.  One small module per strategy.
"""

from __future__ import annotations

from coordkit.engine.schedulers.base import PRUNE, Scheduler
from coordkit.engine.schedulers.dfs import DFSScheduler
from coordkit.engine.schedulers.pct import PCTScheduler
from coordkit.engine.schedulers.random import RandomScheduler
from coordkit.engine.schedulers.replay import ReplayScheduler

__all__ = [
    "PRUNE",
    "DFSScheduler",
    "PCTScheduler",
    "RandomScheduler",
    "ReplayScheduler",
    "Scheduler",
    "make_scheduler",
]


def make_scheduler(strategy: str | Scheduler, *, seed: int, depth: int = 3,
                   max_preemptions: int | None = 2) -> Scheduler:
    """Build a scheduler from its name: ``random``, ``pct`` or ``dfs``."""
    if isinstance(strategy, Scheduler):
        if type(strategy).choose is Scheduler.choose:
            raise TypeError(f"strategy={strategy!r} does not implement choose(point, enabled): "
                            "subclass Scheduler and override it, or pass a strategy's name")
        return strategy
    if strategy == "random":
        return RandomScheduler(seed)
    if strategy == "pct":
        return PCTScheduler(seed, depth)
    if strategy == "dfs":
        return DFSScheduler(max_preemptions)
    raise ValueError(
        f"strategy must be 'pct', 'random', 'dfs', 'hypothesis' or a Scheduler, got {strategy!r}"
    )
