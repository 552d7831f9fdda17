#!/usr/bin/env python3
"""CPython's own asyncio tests with the loop swapped: the table of issue 29, item 8.

Runs ``tests/aio/cpython.py``'s suites (every test method under random and PCT
schedules, ``COORDKIT_CPYTHON_SCHEDULES`` each, default 3) and prints, per module, the
tests run, passed, skipped (by reason) and failed, then each failure's first lines.
Run from the repository root::

    python benchmarks/asyncio_cpython_table.py [--all-pairs] [--only test_locks ...]

``--all-pairs`` (or ``COORDKIT_CPYTHON_ASYNCIO_ALL=1``, which the pytest suite reads too) runs
test_tasks' BaseTaskTests over all eight Task/Future pairs.  ``--workers N`` runs the
modules in N worker processes (PAR-16): the same table, sooner.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordkit.engine.parallel import check_workers
from coordkit.engine.parallel.pool import in_processes
from tests.aio.cpython import ALL_PAIRS, SUITES, Row, tabulate, tasks_suite
from tests.stdlib.cpython import SCHEDULES


def module_row(job: tuple[str, bool]) -> tuple[str, Row | str, dict[str, str], float]:
    """One module's row (or why it is missing), what it does not run, and its seconds."""
    name, all_pairs = job
    began = time.perf_counter()
    suite = tasks_suite(all_pairs) if name == "test_tasks" else SUITES[name]()
    if isinstance(suite, str):
        return name, suite, {}, 0.0
    not_run = {f"{suite.module}: {names}": why for names, why in suite.not_run.items()}
    return name, tabulate(suite), not_run, time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(SUITES), help="just these modules")
    parser.add_argument("--all-pairs", action="store_true", default=ALL_PAIRS,
                        help="test_tasks' BaseTaskTests over all eight Task/Future pairs")
    parser.add_argument("--failures", type=int, default=12,
                        help="lines of each failure's report to print")
    parser.add_argument("--workers", type=int, default=None,
                        help="run the modules in N worker processes (PAR-16)")
    args = parser.parse_args()
    rows: list[Row] = []
    missing: dict[str, str] = {}
    not_run: dict[str, str] = {}
    start = time.perf_counter()
    jobs = [(name, args.all_pairs) for name in args.only or SUITES]
    workers = check_workers(args.workers)
    done = map(module_row, jobs) if workers is None else in_processes(module_row, jobs, workers)
    for name, row, skipped, seconds in done:
        if isinstance(row, str):
            missing[name] = row
            continue
        not_run.update(skipped)
        rows.append(row)
        print(f"{name}: {seconds:.1f} s", file=sys.stderr)
    print(f"Python {sys.version.split()[0]}; {time.perf_counter() - start:.0f} s; "
          f"{SCHEDULES} schedule(s) per strategy (random, pct) per test\n")
    print("| module | tests | skipped | run | passed | timing assumption | "
          "reported by design (AIO-6) | failed |")
    print("|---|---|---|---|---|---|---|---|")
    total = Row("**total**")
    for row in [*rows, total]:
        if row is total:
            for each in rows:
                total.add(each)
        share = f" ({100 * row.passed / row.run:.1f}%)" if row is total and row.run else ""
        print(f"| {row.module} | {row.tests} | {sum(row.skipped.values())} | {row.run} | "
              f"{row.passed}{share} | {len(row.timing)} | {len(row.expected)} | "
              f"{len(row.failed)} |")
    for name, reason in missing.items():
        print(f"\n{name}: not run: {reason}")
    for names, why in not_run.items():
        print(f"\nnot run: {names}: {why}")
    if total.skipped:
        print("\nSkipped, by reason:")
        for reason, count in total.skipped.most_common():
            print(f"- {count}: {reason}")
    for title, kind in (("timing assumption", "timing"), ("reported by design", "expected"),
                        ("FAILED", "failed")):
        for row in rows:
            for failure in getattr(row, kind):
                lines = failure.splitlines()[:args.failures]
                print(f"\n{title}: {row.module}." + "\n    ".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
