#!/usr/bin/env python3
"""coordkit's own asyncio real-bug set (issue 29, item 9): the table of the closing note.

For each port in ``tests/aio/realbugs`` (a real, fixed asyncio or asyncio-plus-thread
bug, cited): the schedules and seconds ``coordkit.explore`` takes to find the buggy
program at its defaults, over seeds 1-10 (min / median / max; seconds include the
shrink), and the fixed twin explored with ``--fixed-budget`` schedules (clean or not,
how many schedules ran, ``exhausted`` when the search space was covered). A port that
needs a newer Python than the one running is listed as skipped. Run from the repository
root::

    python benchmarks/asyncio_realbugs.py            # ~1 min on one core
    python benchmarks/asyncio_realbugs.py --seeds 3  # a quick look
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import coordkit
from tests.aio.realbugs.catalog import ALL_BUGS


def _spread(values: list[float], fmt: str) -> str:
    return "/".join(format(v, fmt) for v in (min(values), statistics.median(values), max(values)))


def _find(bug, seeds: int) -> tuple[str, str]:
    schedules: list[float] = []
    seconds: list[float] = []
    for seed in range(1, seeds + 1):
        start = time.perf_counter()
        result = coordkit.explore(bug.buggy, seed=seed)
        seconds.append(time.perf_counter() - start)
        if result.failure is None:
            return f"NOT FOUND (seed {seed}, {result.schedules_run} schedules)", ""
        schedules.append(result.failure.schedules_run)
    return _spread(schedules, ".0f"), _spread(seconds, ".2f")


def _fixed(bug, budget: int) -> str:
    result = coordkit.explore(bug.fixed, seed=1, max_schedules=budget)
    if result.failure is not None:
        return f"FAILS: {result.failure.headline}"
    return f"clean ({result.schedules_run}{', exhausted' if result.exhausted else ''})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--fixed-budget", type=int, default=1000)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}; seeds 1-{args.seeds}; min/median/max\n")
    header = ("bug", "citation", "schedules to find", "seconds to find", "fixed twin")
    rows = []
    for bug in ALL_BUGS:
        if sys.version_info < bug.min_python:
            need = ".".join(map(str, bug.min_python))
            rows.append((bug.id, bug.citation, f"skipped: needs {need}+", "", ""))
            continue
        found, seconds = _find(bug, args.seeds)
        rows.append((bug.id, bug.citation, found, seconds, _fixed(bug, args.fixed_budget)))
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
