#!/usr/bin/env python3
"""What one controlled run costs: milliseconds per run, and against another commit.

Explores two programs with ``strategy="random"`` at ``line``, ``sync`` and ``auto``
granularity and prints the CPU milliseconds per run (the process's CPU time over the
``explore`` call divided by the runs it made: steadier than wall time on a shared
machine).  The programs:

* the test suite's locked counter (``tests/sched/programs.py``), 3 threads each taking a
  lock 3 times to add one;
* a one-slot buffer on a ``Condition``, 2 producers and 2 consumers.

With ``--baseline-ref REF`` the same is measured for the code of the git ref ``REF``
(its ``coordkit/`` extracted with ``git archive`` into a temporary directory).  Two
worker processes, one importing each tree, warm up and then take turns: every case is
measured ``--repeat`` times by each, old and new back to back, and the table shows the
medians and the median of the paired ratios old/new (above 1: the new code is cheaper).
Pairs taken seconds apart hold on a shared machine whose speed drifts by tens of percent.
Run it from anywhere; it measures the checkout it lives in::

    python benchmarks/run_cost.py
    python benchmarks/run_cost.py --baseline-ref main --repeat 15
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULT_TAG = "RUN-COST "
GRANULARITIES = ("line", "sync", "auto")


# The test suite's programs, from this checkout; appended to the path, so that coordkit is
# still imported from the tree under measurement (PYTHONPATH comes first).
sys.path.append(str(ROOT))
from tests.sched.programs import locked_counter, one_slot_buffer  # noqa: E402

PROGRAMS = {"locked counter 3x3": locked_counter, "2P/2C one-slot Condition buffer": one_slot_buffer}


def _cases() -> list[tuple[str, str]]:
    return [(program, granularity) for program in PROGRAMS for granularity in GRANULARITIES]


def _measure(case: int, runs: int) -> dict[str, Any]:
    """CPU ms per run of one exploration of case ``case``, and what it found (the same code
    must find the same)."""
    import coordkit

    program, granularity = _cases()[case]
    t0 = time.process_time()
    result = coordkit.explore(PROGRAMS[program], strategy="random", seed=1, max_schedules=runs,
                              granularity=granularity, shrink=False)
    cpu = time.process_time() - t0
    found = [result.schedules_run, result.failure is not None, len(result.races or ())]
    return {"ms": 1000 * cpu / result.schedules_run, "found": found}


def _serve() -> None:
    """The worker process: warm every case up, then answer ``case runs`` lines."""
    for case in range(len(_cases())):
        _measure(case, 5)
    print(RESULT_TAG + "ready", flush=True)
    for line in sys.stdin:
        case, runs = map(int, line.split())
        print(RESULT_TAG + json.dumps(_measure(case, runs)), flush=True)


class _Worker:
    """A process that imports coordkit from ``tree`` and measures on request."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        env = dict(os.environ, PYTHONPATH=str(tree))
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker"], env=env, cwd=tree,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._answer()

    def _answer(self) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(RESULT_TAG):
                return line[len(RESULT_TAG):]
        raise SystemExit(f"the worker for {self.tree} ended without an answer")

    def measure(self, case: int, runs: int) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{case} {runs}\n")
        self.proc.stdin.flush()
        return json.loads(self._answer())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def _extract(ref: str, into: Path) -> None:
    """``coordkit/`` of the git ref ``ref`` into the directory ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "coordkit"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def _compare(workers: list[_Worker], repeat: int, runs: int) -> list[list[list[dict[str, Any]]]]:
    """Per case, per worker, ``repeat`` measurements, taken in turn (the first worker
    first in odd rounds, last in even ones) so that a drifting machine affects all alike."""
    results: list[list[list[dict[str, Any]]]] = [[[] for _ in workers] for _ in _cases()]
    for round_ in range(repeat):
        order = list(enumerate(workers))
        if round_ % 2:
            order.reverse()
        for case in range(len(_cases())):
            for i, worker in order:
                results[case][i].append(worker.measure(case, runs))
    return results


def _table(results: list[list[list[dict[str, Any]]]]) -> None:
    """One row per case: the new code's median ms, and with a baseline the old one's and
    the median of the paired ratios old/new."""
    if len(results[0]) == 1:
        print("| program | granularity | ms per run |\n|---|---|---|")
    else:
        print("| program | granularity | old ms per run | new ms per run | old/new |\n|---|---|---|---|---|")
    for (program, granularity), per_worker in zip(_cases(), results):
        new_ms = [r["ms"] for r in per_worker[-1]]
        row = f"| {program} | {granularity} | "
        if len(per_worker) == 1:
            print(row + f"{statistics.median(new_ms):.3f} |")
            continue
        old_ms = [r["ms"] for r in per_worker[0]]
        ratio = statistics.median(o / n for o, n in zip(old_ms, new_ms))
        same = "" if per_worker[0][0]["found"] == per_worker[1][0]["found"] else " (found differs!)"
        print(row + f"{statistics.median(old_ms):.3f} | {statistics.median(new_ms):.3f} | "
              f"{ratio:.2f}{same} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--baseline-ref", help="a git ref to compare with (its coordkit/)")
    ap.add_argument("--repeat", type=int, default=9, help="measurements of each case (default 9)")
    ap.add_argument("--runs", type=int, default=100, help="runs per measurement (default 100)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _serve()
        return 0
    print(f"run_cost: CPU ms per run, random strategy, median of {args.repeat} measurements of "
          f"{args.runs} runs each; Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="run-cost-") as tmp:
        trees = [ROOT]
        if args.baseline_ref is not None:
            _extract(args.baseline_ref, Path(tmp))
            print(f"baseline: {args.baseline_ref}")
            trees.insert(0, Path(tmp))
        workers = [_Worker(tree) for tree in trees]
        try:
            _table(_compare(workers, args.repeat, args.runs))
        finally:
            for worker in workers:
                worker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
