"""PCT over choice points: its probabilistic guarantee, checked statistically (SCHED-38).

``chain(d)``: two threads pass a token through ``d`` Events, each thread checking
(without waiting) that the other has set the previous one before setting the next,
with padding steps between; the bug is the last Event set, which takes ``d`` ordering
constraints (a bug of depth d).  PCT with depth d must find it with probability at
least 1/(n * k^(d-1)) per run (n threads, k choice points).  Each test runs a fixed
number of seeded runs and checks that the lower end of a 99% Wilson interval of the
measured rate is above that bound.  ``COORDKIT_PCT_RUNS`` scales the runs (nightly).
"""

from __future__ import annotations

import math
import os
import threading

import pytest

from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import PCTScheduler

SCALE = int(os.environ.get("COORDKIT_PCT_RUNS", "1"))


def chain(depth: int, padding: int = 3):
    """Threads T1 and T2 alternate over ``depth`` Events; the bug is the last one set."""
    def program() -> None:
        events = [threading.Event() for _ in range(depth)]
        lock = threading.Lock()

        def pad() -> None:
            for _ in range(padding):
                with lock:
                    pass

        def run(me: int) -> None:
            for i in range(depth):
                if i % 2 != me:
                    continue
                pad()
                if i and not events[i - 1].is_set():
                    return
                events[i].set()

        threads = [threading.Thread(target=run, args=(me,)) for me in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not events[-1].is_set(), "the token went all the way"

    return program


def hit_rate(depth: int, runs: int, seed: int = 7) -> tuple[int, int, int]:
    """(hits, runs, k) of PCT with bug depth ``depth`` on ``chain(depth)``."""
    scheduler = PCTScheduler(seed, depth)
    program = chain(depth)
    hits = 0
    with Session(RunOptions(granularity="sync"), quiet=True) as session:

        def loop() -> int:
            found = 0
            session.run(program, scheduler, run_index=runs)  # learns k
            for i in range(runs):
                found += session.run(program, scheduler, run_index=i).failure is not None
            return found

        hits = session.call(loop)
    return hits, runs, scheduler.k


def wilson_low(hits: int, runs: int, z: float = 2.576) -> float:
    """The lower end of the 99% Wilson score interval of ``hits / runs``."""
    p = hits / runs
    centre = p + z * z / (2 * runs)
    margin = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs))
    return (centre - margin) / (1 + z * z / runs)


@pytest.mark.parametrize(("depth", "runs"), [(1, 200), (2, 1500), (3, 3000)])
def test_pct_meets_its_bound_over_choice_points(depth, runs):
    """SCHED-38: the measured hit rate is above 1/(n * k^(d-1)), with 99% confidence."""
    hits, runs, k = hit_rate(depth, runs * SCALE)
    n = 3  # the main thread and two workers
    bound = 1 / (n * k ** (depth - 1))
    assert hits > 0
    assert wilson_low(hits, runs) >= bound, (hits, runs, k, bound)


def test_k_is_the_most_choice_points_a_run_had():
    """SCHED-38: k is learned from the program, not a fixed floor."""
    _, _, k = hit_rate(2, 20)
    assert 2 <= k < 32


def test_change_points_fall_on_choice_points():
    """SCHED-38: every planned change point is reached in a run as long as the longest."""
    scheduler = PCTScheduler(1, depth=3)
    scheduler.k = 10
    for run_index in range(50):
        scheduler.begin(run_index)
        assert len(scheduler._change_points) == 2
        assert all(1 <= c <= 10 for c in scheduler._change_points)
