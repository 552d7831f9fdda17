"""The ``Scheduler`` interface every strategy implements."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from coordkit.engine.points import Point, Step

__all__ = ["PRUNE", "FinishedRun", "Scheduler", "check_flag", "check_int", "check_no_arguments",
           "check_seed"]

# Returned by ``choose`` to abandon a run that can only repeat explored work.
PRUNE = -1


def check_seed(seed: Any) -> int:
    """A scheduler's seed: an int (a bool is refused: it is a mistake, not a seed)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    return seed


def check_int(name: str, value: Any, minimum: int, *, allow_none: bool = False) -> None:
    """A clear error naming ``name`` unless ``value`` is an int >= ``minimum`` (or None)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = f"an int >= {minimum}" + (" or None" if allow_none else "")
        raise ValueError(f"{name} must be {what}, got {value!r}")


def check_flag(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {value!r}")


def check_no_arguments(name: str, fn: Any) -> None:
    """A clear error naming ``name`` unless ``fn`` is a callable that can be called with no
    arguments: a TypeError listing the parameters that lack a default.  A callable whose
    signature cannot be read (some builtins) is taken on trust."""
    if not callable(fn):
        raise TypeError(f"{name} must be a zero-argument callable, got {fn!r}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    required = [p.name for p in signature.parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if required:
        what = getattr(fn, "__qualname__", None) or type(fn).__name__
        raise TypeError(
            f"{name} must be callable with no arguments, but {what}{signature} has "
            f"{len(required)} parameter(s) without a default: {', '.join(required)}; pass a "
            f"function that supplies them (a lambda, or functools.partial)")


class FinishedRun(Protocol):
    """What a scheduler sees of a run that ended (``run.Run`` is one)."""

    failure: Any  # what went wrong, or None
    steps: int  # scheduling points reached
    choices: list[tuple[int, int]]  # (enabled threads, index chosen) per choice point


def starts_epoch(run_index: int) -> bool:
    """Whether run ``run_index`` starts a learning epoch (PAR-2): runs 0, 1, 2, 4, 8, ...

    What an exploration learns from its runs (PCT's count of choice points, the sites
    seen racing at auto granularity) takes effect only at an epoch's first run, from
    every run before it: the runs of one epoch share what they know, so they can run in
    any order, on any worker, and each is the same run as in a sequential search.
    """
    return run_index & (run_index - 1) == 0


class Scheduler:
    """Base class: override ``choose``; the hooks default to doing nothing.

    ``choose(point, enabled)`` returns an index into ``enabled`` (0 is the
    default: no preemption), or ``PRUNE``; it may raise to stop the run (a replay
    that diverged).  ``end(run)`` sees the finished ``Run`` record and may raise
    for the same reason.  A scheduler never reaches into the runtime.

    A scheduler whose ``needs_footprints`` is true gets every run's steps with their
    footprints: ``observe(steps)`` hands it, before each run, the list the run appends
    its steps to as they run (read it in ``choose``; it is the run's ``footprints``).
    It returns the steps the run is known to begin with (a search that replays a prefix
    of its last run): those are put into the list as they are reached, not recorded again.
    """

    name = "scheduler"
    needs_footprints = False
    # Each run is a function of (seed, run_index) and what was learned before its epoch
    # (PAR-2): runs can be handed out to workers by index.
    indexed = False

    def begin(self, run_index: int) -> None:
        """A new run starts."""

    def observe(self, steps: Sequence[Step]) -> Sequence[Step]:
        """The steps of the run about to begin, as they run (``needs_footprints`` only);
        returns the steps the run is known to begin with."""
        return ()

    def replayed(self) -> Sequence[int]:
        """The choices (indices into ``enabled``) the run about to begin makes at its first
        choice points, known in advance (a search replaying a prefix; called after
        ``observe``).  Where one is 0 and the running thread can go on, the runtime takes
        it without asking; a scheduler that says so finds its place in ``choose`` by the
        steps observed so far."""
        return ()

    def choose(self, point: Point, enabled: list[Point]) -> int:
        raise NotImplementedError(
            f"{type(self).__name__} does not implement choose(point, enabled): subclass "
            "Scheduler and return an index into enabled (or use RandomScheduler, PCTScheduler, "
            "DFSScheduler, ReplayScheduler)")

    def end(self, run: FinishedRun) -> None:
        """The run ended (passed, failed or was pruned)."""

    @property
    def exhausted(self) -> bool:
        """True once every schedule this strategy can produce has been run."""
        return False
