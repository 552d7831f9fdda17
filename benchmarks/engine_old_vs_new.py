#!/usr/bin/env python3
"""The scheduler's speed in this checkout against another checkout, side by side.

Runs the same programs (``benchmarks/programs.py`` plus two that use coordkit's own
queue and coordinator) through ``coordkit.explore`` with coordkit imported from this
checkout ("new") and from ``--old DIR`` ("old"), alternating old and new runs in
fresh processes so that a drifting machine affects both alike, and prints the
median schedules per CPU second of each and the ratio new/old.

Usage::

    git worktree add /tmp/coordkit-old <commit>      # any checkout of coordkit
    python benchmarks/engine_old_vs_new.py --old /tmp/coordkit-old

Only the public API is used (``coordkit.explore``), so any two versions compare.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NEW = HERE.parent
RESULT_TAG = "ENGINE-RESULT "

# (name, program, strategy, granularity, schedules)
CASES = [
    ("locked counter 3x3, pct", "counter_locked", "pct", "sync", 3000),
    ("locked counter 3x3, random", "counter_locked", "random", "sync", 3000),
    ("locked counter 3x3, dfs", "counter_locked", "dfs", "sync", 3000),
    ("locked counter 3x3, pct, line", "counter_locked", "pct", "line", 1000),
    ("Condition bounded queue, close ok, pct", "bq_close_ok", "pct", "sync", 2000),
    ("FIFOQueue pipeline + Coordinator, pct", "queue_pipeline", "pct", "sync", 1000),
]


def _queue_pipeline() -> None:
    import threading

    import coordkit

    q = coordkit.FIFOQueue(2, ["int32"], shapes=[[]], name="q")
    coord = coordkit.Coordinator()

    def producer() -> None:
        with coord.stop_on_exception():
            for i in range(3):
                q.enqueue(i)

    def consumer() -> None:
        with coord.stop_on_exception():
            for _ in range(6):
                q.dequeue()

    threads = [threading.Thread(target=producer), threading.Thread(target=producer),
               threading.Thread(target=consumer)]
    for t in threads:
        t.start()
    coord.join(threads)


def _program(name: str) -> Any:
    if name == "queue_pipeline":
        return _queue_pipeline
    sys.path.insert(0, str(HERE))
    from programs import PROGRAMS, model

    return model(PROGRAMS[name])


def _worker(case: list[Any]) -> dict[str, Any]:
    import coordkit

    _, program, strategy, granularity, budget = case
    fn = _program(program)
    # A warm-up run first: what it imports (the engine loads on first use since the
    # split; everything loaded at ``import coordkit`` before it) is not what is compared.
    coordkit.explore(fn, strategy=strategy, max_schedules=1, seed=1, granularity=granularity)
    # CPU seconds of the whole process (the runs happen on coordkit's worker thread):
    # steadier than wall time on a shared machine.
    t0 = time.process_time()
    result = coordkit.explore(fn, strategy=strategy, max_schedules=budget, seed=1,
                              granularity=granularity, max_preemptions=None)
    wall = time.process_time() - t0
    if result.failure is not None:
        raise SystemExit(f"{case[0]}: unexpected failure: {result.failure.message}")
    return {"schedules": result.schedules_run, "wall": wall}


def _run(tree: Path, case: tuple[Any, ...]) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(case)], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tree)
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            res = json.loads(line[len(RESULT_TAG):])
            return res["schedules"] / res["wall"]
    raise SystemExit(f"{case[0]} in {tree}: no result\n{proc.stderr[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--old", type=Path, help="a checkout of coordkit to compare with")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each, alternating (default 5)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        print(RESULT_TAG + json.dumps(_worker(json.loads(args.worker))), flush=True)
        return 0
    if args.old is None or not (args.old / "coordkit" / "__init__.py").exists():
        ap.error("--old must be a checkout of coordkit (a directory holding coordkit/)")
    print(f"engine_old_vs_new: medians of {args.repeat} alternating runs, each a fresh process; "
          f"Python {sys.version.split()[0]}")
    print("| case | old schedules/CPU s | new schedules/CPU s | new/old |\n|---|---|---|---|")
    ratios = []
    for case in CASES:
        old, new = [], []
        for _ in range(args.repeat):
            old.append(_run(args.old, case))
            new.append(_run(NEW, case))
        ratio = statistics.median(n / o for n, o in zip(new, old))
        ratios.append(ratio)
        print(f"| {case[0]} | {statistics.median(old):,.0f} | {statistics.median(new):,.0f} | "
              f"{ratio:.3f} |", flush=True)
    print(f"geometric mean new/old: {statistics.geometric_mean(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
