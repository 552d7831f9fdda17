"""Schedules per second with 1 and 2 worker processes, side by side (PAR-9).

    python benchmarks/workers.py [--schedules N] [--strategy pct|random]
    python benchmarks/workers.py --compare-seeds N   # the PAR-3 campaign
    python benchmarks/workers.py --compare-seeds N --dask   # the PAR-10 campaign

``--compare-seeds N`` instead checks PAR-3 at length: for seeds 0..N-1, each program of
``tests/parallel/programs.py`` and both strategies, the result with 2 workers equals the
result without (tests/parallel runs a small slice of it).  With ``--dask`` the 2 workers
are a Dask ``LocalCluster`` of 2 processes (``pip install 'coordkit[dask]'``), PAR-10.

A correct program (no failure: every schedule runs), so the rate is the search's own.
"1 worker" is ``workers=None``, the in-process path; the 2-worker time includes starting
the workers.  Run it on a quiet machine: other processes' load lowers the 2-worker gain.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout it lives in

import coordkit


def bank() -> None:
    """Three threads move money between two accounts under locks, then check the total."""
    accounts = [100, 100]
    locks = [threading.Lock(), threading.Lock()]

    def move(src: int, amount: int) -> None:
        for _ in range(3):
            first, second = sorted((src, 1 - src))
            with locks[first], locks[second]:
                accounts[src] -= amount
                accounts[1 - src] += amount

    threads = [threading.Thread(target=move, args=(i % 2, i + 1)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(accounts) == 200


def rate(workers: int | None, schedules: int, strategy: str) -> tuple[float, float]:
    """(schedules/s, seconds) of one exploration."""
    started = time.perf_counter()
    result = coordkit.explore(bank, strategy=strategy, seed=1, max_schedules=schedules,
                              workers=workers)
    elapsed = time.perf_counter() - started
    assert result.failure is None and result.schedules_run == schedules
    return schedules / elapsed, elapsed


def compare(seeds: int, parallel: dict[str, Any]) -> int:
    """Explorations over ``seeds`` seeds whose result with ``parallel`` (``workers=2`` or
    ``cluster=client``) differs from the sequential."""
    from tests.parallel import programs

    differ = 0
    for program in (programs.lost_update, programs.three_way_order, programs.correct):
        for strategy in ("pct", "random"):
            for seed in range(seeds):
                results = [coordkit.explore(program, strategy=strategy, seed=seed,
                                            max_schedules=200, **options)
                           for options in ({}, parallel)]
                alone, spread = ((r.failure and r.failure.trace, r.schedules_run,
                                    r.racing_sites, r.race_runs) for r in results)
                if alone != spread:
                    differ += 1
                    print(f"DIFFER {program.__name__} {strategy} seed={seed}: {alone} {spread}")
    where = "a Dask cluster" if "cluster" in parallel else "2 workers"
    print(f"{differ} of {3 * 2 * seeds} explorations differ with {where}")
    return differ


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=2000)
    parser.add_argument("--strategy", default="pct", choices=["pct", "random"])
    parser.add_argument("--compare-seeds", type=int, default=0)
    parser.add_argument("--dask", action="store_true",
                        help="with --compare-seeds: on a Dask LocalCluster of 2 processes")
    args = parser.parse_args(argv)
    if args.compare_seeds and args.dask:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            sys.exit(1 if compare(args.compare_seeds, {"cluster": client}) else 0)
    if args.compare_seeds:
        sys.exit(1 if compare(args.compare_seeds, {"workers": 2}) else 0)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.schedules} {args.strategy} schedules of bank(); "
          f"load average {load:.1f} on {os.cpu_count()} cores")
    one, one_s = rate(None, args.schedules, args.strategy)
    two, two_s = rate(2, args.schedules, args.strategy)
    print(f"{'1 worker':>10}: {one:8.0f} schedules/s ({one_s:.2f} s)")
    print(f"{'2 workers':>10}: {two:8.0f} schedules/s ({two_s:.2f} s)  x{two / one:.2f}")


if __name__ == "__main__":
    main()
