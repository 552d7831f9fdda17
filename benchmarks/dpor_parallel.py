"""DPOR split across worker processes: time to exhaust and schedules/s with 1 and 2
workers, side by side in one run (issue 32, PAR-22).

For each of the largest DPOR programs of ``benchmarks/dpor.py`` (the 3x3 locked counter
at sync and at line granularity, the 2P/2C one-slot Condition buffer): the search in
this process (``explore(strategy="dfs", max_preemptions=None)``, no workers), then the
split search (PAR-17) on a pool of 1 and of 2 worker processes. Each row gives the wall
time to exhaust, the schedules run and their rate, the classes covered, and the CPU
seconds: this process's, and the workers' (summed over the jobs, as each measured its
own, and the busiest worker process's, its start-up included), so the cost of splitting
shows apart from the machine's load: on an idle machine, the wall time of 2 workers
tends to the busiest worker's CPU plus this process's. The speed-up is the 2-worker rate
over the in-process one, by wall time (``x by wall``) and as CPU predicts it for an idle
machine (``pred``: the in-process search's CPU over the busiest worker's plus this
process's), which the load moves less. The load average is printed before and after: on
a machine shared with other work the 2-worker gain is lower than on a quiet one.

    python benchmarks/dpor_parallel.py            # ~1-2 min on 2 quiet cores
    python benchmarks/dpor_parallel.py --only sync --slice 64
    python benchmarks/dpor_parallel.py --small    # seconds: the test suite's smoke test
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout it lives in

import coordkit
from coordkit.engine.parallel.pool import Pool
from coordkit.engine.parallel.split import SLICE, SplitSearch
from coordkit.engine.parallel.units import sendable_options
from coordkit.engine.schedulers import DFSScheduler
from coordkit.engine.search import run_options
from tests.sched import programs

CASES = [
    ("3x3 locked counter", functools.partial(programs.locked_counter, 3, 3), "sync"),
    ("3x3 locked counter", functools.partial(programs.locked_counter, 3, 3), "line"),
    ("2P/2C one-slot buffer", programs.one_slot_buffer, "sync"),
]
SMALL = [("2x2 locked counter", functools.partial(programs.locked_counter, 2, 2), "sync")]


def here(fn, granularity: str) -> tuple[float, int, str, float]:
    """The search in this process: wall seconds, schedules, coverage, CPU seconds."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = coordkit.explore(fn, strategy="dfs", max_preemptions=None, granularity=granularity,
                              max_schedules=10**7, shrink=False)
    assert result.exhausted and result.failure is None, result
    return time.perf_counter() - wall, result.schedules_run, result.coverage, time.process_time() - cpu


def split(fn, granularity: str, workers: int, runs: int) -> tuple[float, int, str, float, float,
                                                                   float, int]:
    """The split search on ``workers`` processes (start-up included): wall seconds,
    schedules, coverage, this process's CPU, the workers' CPU (all, and the busiest
    worker's), jobs."""
    cpu, wall = time.process_time(), time.perf_counter()
    scheduler = DFSScheduler(max_preemptions=None)
    ran = [0]
    with Pool(workers) as pool:
        search = SplitSearch(fn, sendable_options(run_options(fn, granularity=granularity)),
                             frozenset(), pool, ran=lambda _: ran.__setitem__(0, ran[0] + 1),
                             budget=lambda: 10**7 - ran[0], time_left=lambda: None, slice=runs)
        assert search.search(scheduler) and not search.found
    return (time.perf_counter() - wall, ran[0], scheduler.coverage(granularity) or "",
            time.process_time() - cpu, search.cpu, max(search.cpu_by_worker.values()), search.jobs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=["sync", "line"], help="one granularity's cases")
    parser.add_argument("--slice", type=int, default=SLICE, help="runs per job (PAR-17)")
    parser.add_argument("--small", action="store_true", help="a 2x2 counter only (a smoke test)")
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    print(f"{'program':<24} {'gran':<5} {'workers':<8} {'wall s':>7} {'sched':>6} "
          f"{'sched/s':>8} {'cpu here':>8} {'cpu wkrs':>8} {'busiest':>8} {'jobs':>5} {'pred':>6}  "
          "coverage")
    for name, fn, granularity in SMALL if args.small else CASES:
        if args.only and granularity != args.only:
            continue
        wall, n, coverage, cpu = here(fn, granularity)
        base = n / wall
        print(f"{name:<24} {granularity:<5} {'none':<8} {wall:7.2f} {n:6d} {base:8.1f} "
              f"{cpu:8.2f} {'-':>8} {'-':>8} {'-':>5} {'-':>6}  {coverage}")
        alone = cpu
        for workers in (1, 2):
            wall, n, coverage, cpu, spent, busiest, jobs = split(fn, granularity, workers,
                                                                 args.slice)
            print(f"{'':<24} {granularity:<5} {workers:<8} {wall:7.2f} {n:6d} {n / wall:8.1f} "
                  f"{cpu:8.2f} {spent:8.2f} {busiest:8.2f} {jobs:5d} "
                  f"{'x%.2f' % (alone / (busiest + cpu)):>6}  {coverage}  "
                  f"(x{n / wall / base:.2f} by wall; CPU x{spent / alone:.2f} in all, "
                  f"busiest worker {busiest / alone:.0%} of one process's)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
