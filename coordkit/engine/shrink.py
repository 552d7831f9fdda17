"""Shrinking a failing schedule: fewer preemptions, while the same failure still happens;
then a proof that no schedule with fewer fails that way.

A schedule is a list of choices (0 keeps the current thread, anything else is a
preemption), replayed leniently.  The passes below try smaller candidates greedily
and keep any that still fails the same way; they repeat until none helps or the
``Bound`` is spent (SCHED-77).  ``prove_minimal`` then runs the bounded searches with
0, 1, ... k-1 preemptions (SCHED-78), each only when its estimated time fits in what is
left of the bound (SCHED-79).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from coordkit.engine.points import Point
from coordkit.engine.report import same_failure
from coordkit.engine.run import Run, Session
from coordkit.engine.runtime import Failure
from coordkit.engine.schedulers import DFSScheduler, ReplayScheduler

__all__ = ["Bound", "Proof", "estimated_schedules", "plural_preemptions", "prove_minimal", "shrink"]

Fails = Callable[[list[int]], bool]


Stop = Callable[[], bool]


def _never() -> bool:
    return False


class Bound:
    """The time shrinking may take: until ``deadline`` on ``clock`` (None: no end of its
    own, SCHED-77), and not once ``stop()`` says so (the exploration's ``time_budget``,
    SCHED-62).  It counts the runs made within it since it was ``started``."""

    def __init__(self, clock: Callable[[], float], deadline: float | None,
                 stop: Stop = _never) -> None:
        self.clock = clock
        self.started = clock()
        self.deadline = deadline
        self.stop = stop
        self.runs = 0

    def left(self) -> bool:
        return not self.stop() and (self.deadline is None or self.clock() < self.deadline)

    def seconds_left(self) -> float:
        return math.inf if self.deadline is None else self.deadline - self.clock()



def shrink(session: Session, fn: Callable[[], object], failure: Failure, choices: list[int],
           bound: Bound) -> list[int]:
    """Greedily make ``choices`` smaller (fewer non-zero entries, smaller values) while the
    same kind of failure still happens, within ``bound``.  Returns the smallest choices."""

    def fails(candidate: list[int]) -> bool:
        bound.runs += 1
        run = session.run(fn, ReplayScheduler(candidate, strict=False))
        return run.scheduler_error is None and same_failure(failure, run.failure)

    best = _trimmed(choices)
    # The cheap passes cost about a run for each choice or preemption; the last two, moving
    # a preemption and deleting choice points, cost more and run only when those are stuck.
    passes = (_shorter, _one_preemption, _fewer_preemptions, _moved_preemption, _fewer_points)
    at = 0  # the pass to try next: those before it found nothing since the last gain
    while bound.left() and at < len(passes):
        if at >= 3 and _count(best) <= 1:
            break  # no move or deletion takes one preemption to none
        smaller = passes[at](best, fails, bound)
        if smaller is None:
            at += 1
        else:
            best = _trimmed(smaller)
            # After a cheap gain that pass again (and those after it); after a costly one,
            # every pass again from the cheapest.
            at = 0 if at >= 3 else at
    smaller = _smaller_values(best, fails, bound)
    return best if smaller is None else _trimmed(smaller)


def _count(choices: list[int]) -> int:
    """The non-zero choices: the preemptions, at most."""
    return sum(1 for c in choices if c)


def _trimmed(choices: list[int]) -> list[int]:
    """Without trailing zeros (a missing choice is 0)."""
    best = list(choices)
    while best and best[-1] == 0:
        best.pop()
    return best


def _shorter(best: list[int], fails: Fails, budget: Bound) -> list[int] | None:
    """Cut the end off (everything after a cut becomes 0): binary search for the shortest."""
    lo, hi = 0, len(best)
    while lo < hi and budget.left():
        mid = (lo + hi) // 2
        if fails(best[:mid]):
            hi = mid
        else:
            lo = mid + 1
    return best[:hi] if hi < len(best) else None


def _fewer_points(best: list[int], fails: Fails, budget: Bound) -> list[int] | None:
    """Delete one choice point, moving the later ones earlier."""
    improved = False
    i = len(best) - 1
    while i >= 0 and budget.left():
        candidate = best[:i] + best[i + 1 :]
        if fails(candidate):
            best, improved = candidate, True
        i = min(i, len(best)) - 1
    return best if improved else None


def _one_preemption(best: list[int], fails: Fails, budget: Bound) -> list[int] | None:
    """Keep one preemption where it is, every other choice 0: one run for each, and a
    failure that needs one preemption is most often shrunk by it at once."""
    nonzero = [i for i, c in enumerate(best) if c]
    if len(nonzero) < 2:
        return None
    for i in nonzero:
        if not budget.left():
            break
        candidate = [0] * i + [best[i]]
        if fails(candidate):
            return candidate
    return None


def _fewer_preemptions(best: list[int], fails: Fails, budget: Bound) -> list[int] | None:
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


def _moved_preemption(best: list[int], fails: Fails, budget: Bound) -> list[int] | None:
    """Move a preemption elsewhere while dropping the others: finds schedules the local
    passes cannot reach because both changes are needed at once."""
    nonzero = [i for i, c in enumerate(best) if c]
    if len(nonzero) < 2:
        return None
    tried: set[tuple[int, ...]] = set()
    # The last first, nearest first: the preemption a failure needs is most often the one
    # closest before it, and needed close to where it was.
    for i in reversed(nonzero):
        for j in sorted(range(len(best) + 8), key=lambda j: abs(j - i)):
            if j == i or not budget.left():
                continue
            candidate = [0 if k == i else c for k, c in enumerate(best)]
            candidate += [0] * (j + 1 - len(candidate))
            for k in nonzero:
                if k != i and k != j:
                    candidate[k] = 0
            candidate[j] = candidate[j] or best[i]
            key = tuple(_trimmed(candidate))
            if key in tried or _count(candidate) >= len(nonzero):
                continue
            tried.add(key)
            if fails(candidate):
                return candidate
    return None


def _smaller_values(best: list[int], fails: Fails, budget: Bound) -> list[int] | None:
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


def plural_preemptions(k: int) -> str:
    """``k`` preemption(s), in words."""
    return f"{k} preemption{'' if k == 1 else 's'}"


@dataclass
class Proof:
    """What the bounded searches below a shrunk failure showed (SCHED-78, SCHED-79).

    ``choices`` and ``preemptions`` are the failing schedule to report (one the searches
    found, or the one they were given); ``minimal`` whether no schedule with fewer
    preemptions fails that way (every one searched); ``statement`` says so in words."""

    choices: list[int]
    preemptions: int
    minimal: bool
    statement: str


class _Shape(ReplayScheduler):
    """A lenient replay that notes, at each choice point, how many threads could run and
    whether the current one was among them (a preemption is possible there)."""

    def __init__(self, choices: list[int]) -> None:
        super().__init__(choices, strict=False)
        self.points: list[tuple[int, bool]] = []

    def choose(self, point: Point, enabled: list[Point]) -> int:
        self.points.append((len(enabled), any(p.thread == point.thread for p in enabled)))
        return super().choose(point, enabled)


def estimated_schedules(points: list[tuple[int, bool]], bound: int) -> float:
    """How many schedules have at most ``bound`` preemptions, estimated from one run's
    choice points (SCHED-79): every choice where the current thread cannot go on, times
    the ways of placing up to ``bound`` preemptions at the points where it could."""
    free = math.prod(n for n, current in points if not current)
    preemptable = [n for n, current in points if current]
    if not preemptable:
        return float(free)
    others = sum(preemptable) / len(preemptable) - 1
    return free * sum(math.comb(len(preemptable), i) * others**i for i in range(bound + 1))


def prove_minimal(session: Session, fn: Callable[[], object], failure: Failure,
                  choices: list[int], preemptions: int, bound: Bound, *,
                  within: str) -> Proof:
    """Search every schedule with at most 0, 1, ... ``preemptions - 1`` preemptions, in
    turn (bounded DFS, SCHED-35), for the same failure (SCHED-78): the first found has the
    fewest there are; none found, ``choices`` has.  Each level is searched by whichever of
    the reduced (SCHED-71) and the unreduced search is expected to finish sooner, judged
    from a first slice of the reduced one (SCHED-93); a level that neither is expected to
    finish in what is left of ``bound`` is not searched (SCHED-79).  ``within`` names the
    bound in the statement."""
    if not preemptions:
        return Proof(choices, preemptions, True, f"minimal ({plural_preemptions(preemptions)})")
    if not bound.left():
        return Proof(choices, preemptions, False, _fewest_found(
            within, preemptions, 0, 0, "was not started (no time was left)"))
    shape = _Shape(choices)
    bound.runs += 1
    session.run(fn, shape)
    # The time of an unreduced search's run: a replay's, as every run within the bound was.
    pace = _Pace(bound.clock() - bound.started, bound.runs)
    searched: list[_Below] = []
    scale = 1.0  # scale: how far off the estimates were, by the last search
    for below in range(preemptions):
        estimate = scale * estimated_schedules(shape.points, below) if shape.points else 0.0
        search, why = _search_below(session, fn, failure, below, bound, estimate, pace)
        if search is not None and search.found is not None:
            found = search.found
            return Proof(_trimmed(found.choice_values), found.preemptions, True,
                         _minimal(found.preemptions,
                                  [*(s.said() for s in searched), search.said(found=True)]))
        if search is None or why:
            return Proof(choices, preemptions, False, _fewest_found(
                within, preemptions, below, sum(s.runs for s in searched), why))
        searched.append(search)
        if estimate and not search.reduced:
            scale = search.runs / estimate * scale
    return Proof(choices, preemptions, True,
                 _minimal(preemptions, [s.said() for s in searched]))


class _Pace:
    """Seconds per run, from the runs timed so far."""

    def __init__(self, seconds: float = 0.0, runs: int = 0) -> None:
        self.seconds, self.runs = seconds, runs

    def per_run(self) -> float:
        return self.seconds / self.runs if self.runs else 0.0


class _Below:
    """One bounded search below the shrunk failure: every schedule with at most ``below``
    preemptions, reduced (SCHED-71) or not, run in slices."""

    def __init__(self, below: int, reduced: bool, pace: _Pace) -> None:
        self.below = below
        self.reduced = reduced
        self.scheduler = DFSScheduler(max_preemptions=below, reduce_bound=reduced)
        self.pace = pace  # shared by every unreduced search: one run costs about the same
        self.runs = 0
        self.found: Run | None = None
        self.error = ""

    @property
    def ended(self) -> bool:
        return self.scheduler.exhausted or self.found is not None or bool(self.error)

    def go(self, session: Session, fn: Callable[[], object], failure: Failure, bound: Bound,
           until: float = math.inf) -> None:
        """Run schedules until the search ends, ``bound`` does, or ``until`` (on the
        bound's clock) has come after one run at least."""
        clock = bound.clock
        while not self.ended and bound.left():
            started = clock()
            bound.runs += 1
            self.runs += 1
            run = session.run(fn, self.scheduler, run_index=self.runs)
            self.pace.seconds += clock() - started
            self.pace.runs += 1
            if run.scheduler_error is not None:
                self.error = f"stopped: {type(run.scheduler_error).__name__}"
            elif same_failure(failure, run.failure):
                self.found = run
            if clock() >= until:
                break

    def rest(self) -> tuple[float, float]:
        """The schedules and seconds left, estimated from the part explored (SCHED-93)."""
        part = self.scheduler.explored()
        if part <= 0.0:
            return math.inf, math.inf
        left = self.runs * (1.0 - part) / part
        return left, left * self.pace.per_run()

    def said(self, *, found: bool = False) -> str:
        kind = "reduced" if self.reduced else "unreduced"
        what = "found in" if found else "none fails in"
        return f"<= {self.below}: {what} {self.runs:,} {kind} schedules"


def _search_below(session: Session, fn: Callable[[], object], failure: Failure, below: int,
                  bound: Bound, estimate: float, pace: _Pace) -> tuple[_Below | None, str]:
    """Every schedule with at most ``below`` preemptions, within ``bound`` (SCHED-93): the
    reduced search runs a first slice, a tenth of the time the unreduced one is estimated
    to take (``estimate`` schedules at ``pace``; a tenth of what is left if less), then
    slices each as long as the time so far; after each, the unreduced search replaces it
    if that is expected to finish sooner.  Returns the search that ended, or why none
    did (SCHED-79)."""
    unreduced = estimate * pace.per_run()
    left = bound.seconds_left()
    if pace.per_run() > left:  # not even one run fits
        return None, _skipped(estimate, unreduced)
    reduced = _Below(below, True, _Pace())
    start = bound.clock()
    until = start + min(unreduced, left) / 10
    while True:
        reduced.go(session, fn, failure, bound, until)
        if reduced.ended:
            return reduced, reduced.error
        if not bound.left():
            return reduced, f"stopped after {reduced.runs:,} reduced schedules"
        schedules, seconds = reduced.rest()
        left = bound.seconds_left()
        if unreduced < seconds:
            if unreduced > left:
                return reduced, _skipped(estimate, unreduced, reduced.runs, schedules, seconds)
            search = _Below(below, False, pace)
            search.go(session, fn, failure, bound)
            return search, search.error if search.ended else (
                f"stopped after {search.runs:,} unreduced schedules")
        if seconds > left:
            return reduced, _skipped(estimate, unreduced, reduced.runs, schedules, seconds)
        until = bound.clock() + (bound.clock() - start)


def _skipped(estimate: float, seconds: float, runs: int = 0, reduced: float = 0.0,
             reduced_seconds: float = 0.0) -> str:
    """Why a level was not searched: the estimates, the reduced one's after its first
    ``runs`` schedules (SCHED-79, SCHED-93)."""
    also = (f"; reduced, from its first {runs:,}: about {reduced:,.0f} more, "
            f"~{reduced_seconds:,.1f} s" if runs else "")
    return f"was skipped (about {estimate:,.0f} schedules, ~{seconds:,.1f} s{also})"


def _minimal(preemptions: int, searches: list[str]) -> str:
    """The statement of a proof (SCHED-78): the searches below, which were reduced."""
    return f"minimal ({plural_preemptions(preemptions)}; {'; '.join(searches)})"


def _fewest_found(within: str, preemptions: int, below: int, searched: int, how: str) -> str:
    """The statement of a proof that did not finish (SCHED-79)."""
    done = (f"none fails with <= {plural_preemptions(below - 1)} ({searched} schedules searched); "
            if below else "")
    return (f"the fewest found within {within}: {plural_preemptions(preemptions)}; {done}the search "
            f"of every schedule with <= {plural_preemptions(below)} {how}")
