"""Shrinking a failing schedule: fewer preemptions, while the same failure still happens.

A schedule is a list of choices (0 keeps the current thread, anything else is a
preemption), replayed leniently.  The passes below try smaller candidates greedily
and keep any that still fails the same way; they repeat until none helps or the
budget (runs, seconds) is spent.
"""

from __future__ import annotations

from collections.abc import Callable

from coordkit import sync
from coordkit.engine.report import same_failure
from coordkit.engine.run import Session
from coordkit.engine.runtime import Failure
from coordkit.engine.schedulers import DFSScheduler, ReplayScheduler

__all__ = ["confirm_minimal", "shrink"]

Fails = Callable[[list[int]], bool]


Stop = Callable[[], bool]


class _Budget:
    """Runs and seconds of its own, and the caller's ``stop`` (the exploration's
    ``time_budget``, which covers shrinking too: SCHED-62)."""

    def __init__(self, max_runs: int, seconds: float, stop: Stop) -> None:
        self.runs = 0
        self._max_runs = max_runs
        self._deadline = sync.real_monotonic() + seconds
        self._stop = stop

    def left(self) -> bool:
        return (self.runs < self._max_runs and sync.real_monotonic() < self._deadline
                and not self._stop())


def _never() -> bool:
    return False


def shrink(session: Session, fn: Callable[[], object], failure: Failure, choices: list[int],
           *, max_runs: int, time_budget: float, stop: Stop = _never) -> tuple[list[int], int]:
    """Greedily make ``choices`` smaller (fewer non-zero entries, smaller values) while the
    same kind of failure still happens.  Returns the smallest choices and the runs used."""
    budget = _Budget(max_runs, time_budget, stop)

    def fails(candidate: list[int]) -> bool:
        budget.runs += 1
        run = session.run(fn, ReplayScheduler(candidate, strict=False))
        return run.scheduler_error is None and same_failure(failure, run.failure)

    best = _trimmed(choices)
    improved = True
    while improved and budget.left():
        improved = False
        for local_pass in (_shorter, _fewer_points, _fewer_preemptions):
            smaller = local_pass(best, fails, budget)
            if smaller is not None:
                best, improved = smaller, True
        # The costly move is tried only when the local passes are stuck.
        moved = None if improved else _moved_preemption(best, fails, budget)
        if moved is not None:
            best, improved = moved, True
        smaller = _smaller_values(best, fails, budget)
        if smaller is not None:
            best, improved = smaller, True
        best = _trimmed(best)
    return best, budget.runs


def _trimmed(choices: list[int]) -> list[int]:
    """Without trailing zeros (a missing choice is 0)."""
    best = list(choices)
    while best and best[-1] == 0:
        best.pop()
    return best


def _shorter(best: list[int], fails: Fails, budget: _Budget) -> list[int] | None:
    """Cut the end off (everything after a cut becomes 0): binary search for the shortest."""
    lo, hi = 0, len(best)
    while lo < hi and budget.left():
        mid = (lo + hi) // 2
        if fails(best[:mid]):
            hi = mid
        else:
            lo = mid + 1
    return best[:hi] if hi < len(best) else None


def _fewer_points(best: list[int], fails: Fails, budget: _Budget) -> list[int] | None:
    """Delete one choice point, moving the later ones earlier."""
    improved = False
    i = len(best) - 1
    while i >= 0 and budget.left():
        candidate = best[:i] + best[i + 1 :]
        if fails(candidate):
            best, improved = candidate, True
        i = min(i, len(best)) - 1
    return best if improved else None


def _fewer_preemptions(best: list[int], fails: Fails, budget: _Budget) -> list[int] | None:
    """Zero each non-zero choice, last first."""
    improved = False
    for i in range(len(best) - 1, -1, -1):
        if not budget.left():
            break
        if best[i]:
            candidate = best[:i] + [0] + best[i + 1 :]
            if fails(candidate):
                best, improved = candidate, True
    return best if improved else None


def _moved_preemption(best: list[int], fails: Fails, budget: _Budget) -> list[int] | None:
    """Move a preemption elsewhere while dropping the others: finds schedules the local
    passes cannot reach because both changes are needed at once."""
    nonzero = [i for i, c in enumerate(best) if c]
    if len(nonzero) < 2:
        return None
    for i in nonzero:
        for j in range(len(best) + 8):
            if j == i or not budget.left():
                continue
            candidate = [0 if k == i else c for k, c in enumerate(best)]
            candidate += [0] * (j + 1 - len(candidate))
            for k in nonzero:
                if k != i and k != j:
                    candidate[k] = 0
            candidate[j] = candidate[j] or best[i]
            if sum(1 for c in candidate if c) < len(nonzero) and fails(candidate):
                return candidate
    return None


def _smaller_values(best: list[int], fails: Fails, budget: _Budget) -> list[int] | None:
    """Lower each choice to the smallest value that still fails."""
    improved = False
    for i in range(len(best)):
        if not budget.left():
            break
        for v in range(1, best[i]):
            candidate = best[:i] + [v] + best[i + 1 :]
            if fails(candidate):
                best, improved = candidate, True
                break
    return best if improved else None


def _preemptions(k: int) -> str:
    return f"{k} preemption{'' if k == 1 else 's'}"


def confirm_minimal(session: Session, fn: Callable[[], object], failure: Failure,
                    choices: list[int], preemptions: int, *, max_runs: int,
                    time_budget: float, stop: Stop = _never) -> tuple[list[int], str, int]:
    """Search every schedule with fewer than ``preemptions`` preemptions (bounded DFS,
    SCHED-39) for the same failure, again below each one found.  Returns the choices to
    report (the one with the fewest preemptions found), what the searches showed, and the
    runs they took."""
    budget = _Budget(max_runs, time_budget, stop)
    while preemptions > 0:
        scheduler = DFSScheduler(max_preemptions=preemptions - 1)
        found = None
        while found is None and not scheduler.exhausted and budget.left():
            budget.runs += 1
            run = session.run(fn, scheduler, run_index=budget.runs)
            if run.scheduler_error is not None:
                break
            if same_failure(failure, run.failure):
                found = run
        if found is None:
            if scheduler.exhausted:
                break
            return choices, (f"{_preemptions(preemptions)}, none found with fewer in "
                             f"{budget.runs} schedules"), budget.runs
        choices, preemptions = _trimmed(found.choice_values), found.preemptions
    return choices, f"minimal ({_preemptions(preemptions)})", budget.runs
