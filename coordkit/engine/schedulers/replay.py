"""Replaying recorded choices, strictly or leniently."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coordkit.engine.points import Point
from coordkit.engine.schedulers.base import FinishedRun, Scheduler, check_flag
from coordkit.errors import TraceDivergedError

__all__ = ["ReplayScheduler"]

_CHANGED = (
    ". The program no longer follows this trace: if you changed it (fixed the bug, say), "
    "replay with strict=False to run the old schedule as far as it fits, or explore again"
)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _checked_choices(choices: Any, strict: bool) -> list[Any]:
    """``choices`` as a list: ``(candidates, choice)`` pairs of ints, or (not strict) ints."""
    if isinstance(choices, (str, bytes)) or not isinstance(choices, Sequence):
        raise TypeError(f"choices must be a sequence of (candidates, choice) pairs or ints, "
                        f"got {choices!r:.80}")
    out = list(choices)
    for i, c in enumerate(out):
        pair = isinstance(c, tuple) and len(c) == 2 and all(_is_int(x) for x in c)
        if not (pair or (not strict and _is_int(c))):
            raise TypeError(f"choices[{i}] must be a (candidates, choice) pair of ints"
                            + ("" if strict else " or an int") + f", got {c!r:.80}")
        if (pair and (c[1] < 0 or c[0] < 1)) or (_is_int(c) and c < 0):
            raise ValueError(f"choices[{i}] must not be negative, got {c!r}")
    return out


class ReplayScheduler(Scheduler):
    """Follow recorded choices.

    Strict (the default): the program must present the same number of candidates
    at every choice point and no more or fewer choice points, else
    ``TraceDivergedError`` names the first step that differs.  Lenient: missing
    choices are 0, out-of-range non-zero ones wrap into 1..n-1 (used for shrinking and for
    Hypothesis-generated schedules).
    """

    name = "replay"

    def __init__(self, choices: Sequence[Any], strict: bool = True) -> None:
        check_flag("strict", strict)
        choices = _checked_choices(choices, strict)
        self.strict = strict
        if strict:
            self._expected = [n for n, _ in choices]
            self._choices = [c for _, c in choices]
        else:
            self._expected = []
            self._choices = [c if isinstance(c, int) else c[1] for c in choices]
        self._k = 0

    def use(self, choices: Sequence[int]) -> None:
        """Lenient: follow ``choices`` from the next choice point on (the harness's steps)."""
        self._choices = [int(c) for c in choices]
        self._k = 0

    def begin(self, run_index: int) -> None:
        self._k = 0

    def choose(self, point: Point, enabled: list[Point]) -> int:
        k = self._k
        self._k += 1
        n = len(enabled)
        if k >= len(self._choices):
            if self.strict:
                raise TraceDivergedError(
                    f"replay diverged at choice point {k} (step {point.step}): the trace "
                    f"ended after {len(self._choices)} choice points but the program goes on "
                    f"({_describe(enabled)}){_CHANGED}"
                )
            return 0
        c = self._choices[k]
        if self.strict:
            if self._expected[k] != n:
                raise TraceDivergedError(
                    f"replay diverged at choice point {k} (step {point.step}): the trace "
                    f"had {self._expected[k]} runnable threads here, the program has {n} "
                    f"({_describe(enabled)}){_CHANGED}"
                )
            return c
        # A non-zero choice stays a switch (never wraps to 0, which means "keep going").
        return c if c < n else 1 + (c - 1) % (n - 1)

    def end(self, run: FinishedRun) -> None:
        """Strict: a run that ends (passing or failing) before the trace does not fit it."""
        if self.strict and self._k < len(self._choices):
            how = "ended" if run.failure is None else f"failed ({run.failure.kind}: {run.failure.message})"
            raise TraceDivergedError(
                f"replay diverged: the program {how} after {self._k} choice points but the "
                f"trace has {len(self._choices)}{_CHANGED}"
            )


def _describe(enabled: list[Point]) -> str:
    return ", ".join(f"T{p.thread} about to {p.op} {p.obj}".rstrip() for p in enabled)
