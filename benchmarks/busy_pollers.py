#!/usr/bin/env python3
"""What busy threads cost at the default granularity: CPU seconds per run, and auto / sync.

The program is the shape of CPython's ``test_queue`` SimpleQueue
``test_many_threads_nonblock`` (issue 34 item 4), made smaller: feeders pop a shared list
into a ``queue.SimpleQueue`` and sometimes sleep, consumers poll ``get(block=False)`` with
``time.sleep(1e-5)`` between tries.  Nearly every step is a poll, so the run is CPU-bound
on the engine's cost per step.  It is explored with ``strategy="pct"`` at ``sync`` (races
ignored), at ``sync`` with races reported, and at the defaults (``auto``, races reported);
the table gives the median CPU seconds per run and each one's ratio to ``sync``::

    python benchmarks/busy_pollers.py
    python benchmarks/busy_pollers.py --threads 50 --items 10000 --repeat 1   # the test's size
"""

from __future__ import annotations

import argparse
import queue
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import coordkit

CASES = {"sync": {"granularity": "sync", "races": "ignore"},
         "sync, races reported": {"granularity": "sync", "races": "report"},
         "auto (the defaults)": {"granularity": "auto", "races": "report"}}


def pollers(threads: int, items: int) -> Callable[[], None]:
    """``threads`` feeders and ``threads`` polling consumers passing ``items`` items."""

    def program() -> None:
        q: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        seq = list(range(items))
        rnd = random.Random(42)
        results: list[int] = []

        def feed() -> None:
            while True:
                try:
                    val = seq.pop()
                except IndexError:
                    q.put(None)
                    return
                q.put(val)
                if rnd.random() > 0.5:
                    time.sleep(rnd.random() * 1e-3)

        def consume() -> None:
            while True:
                try:
                    val = q.get(block=False)
                except queue.Empty:
                    time.sleep(1e-5)
                    continue
                if val is None:
                    return
                results.append(val)

        started = [threading.Thread(target=f) for f in [feed] * threads + [consume] * threads]
        for t in started:
            t.start()
        for t in started:
            t.join()
        assert sorted(results) == list(range(items))

    return program


def cpu_per_run(program: Callable[[], None], options: dict[str, str]) -> float:
    t0 = time.process_time()
    result = coordkit.explore(program, strategy="pct", seed=1, max_schedules=1, shrink=False,
                              run_timeout=600.0, **options)
    if result.failure is not None:
        raise SystemExit(f"the program failed under {options}:\n{result.failure}")
    return time.process_time() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--threads", type=int, default=10, help="feeders, and consumers (10)")
    ap.add_argument("--items", type=int, default=1000, help="items passed (1000)")
    ap.add_argument("--repeat", type=int, default=5, help="runs measured per case (5)")
    args = ap.parse_args(argv)
    program = pollers(args.threads, args.items)
    cpu_per_run(program, CASES["auto (the defaults)"])  # warm up
    print(f"busy_pollers: {args.threads} feeders, {args.threads} polling consumers, "
          f"{args.items} items; median CPU s per run of {args.repeat}; "
          f"Python {sys.version.split()[0]}")
    print("| case | CPU s per run | / sync |\n|---|---|---|")
    base = None
    for name, options in CASES.items():
        seconds = statistics.median(cpu_per_run(program, options) for _ in range(args.repeat))
        base = base or seconds
        print(f"| {name} | {seconds:.2f} | {seconds / base:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
