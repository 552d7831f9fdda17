"""Exhaustive search: DPOR against the unreduced search, side by side (issue 17).

For each program, in one run: the schedules the unreduced search needs (every
choice at every choice point: ``DFSScheduler(None, sleep_sets=False)``), the
schedules DPOR runs (``strategy="dfs", max_preemptions=None``: bounds 0, 1, 2, then
unbounded) and the equivalence classes it reports, the seconds each took, and
whether the two reached the same set of outcomes (final state, failure kind), once per
equivalence DPOR explores the classes of (``trace``: Mazurkiewicz traces, the default;
``lock-aware``: critical sections and Condition waits that do not conflict commute,
SCHED-80/81); and
what a plain run of the program costs (random schedules, no footprints, no DPOR),
times the classes: the floor under any exhaustive search that runs the program once
per class, whatever its reduction.  Then
the time unbounded ``dfs`` takes to find a 3x3 lost update, and the schedules the bounded
search needs on the demo's fixed version within one preemption (unreduced and reduced).
A search that does not finish within ``--budget`` seconds is printed as such (its classes
as ``>= N``: those its unbounded level ran).

Where valgrind is installed, a second table counts instructions (callgrind, in a child
process of this script): per plain run, and per DPOR schedule over the search's first
schedules; and per run of the program uncontrolled (called as it is: plain ``threading``,
real OS threads, no coordkit), what a controlled run's cost compares with.  Each is a
difference of two counts, ``N`` runs minus ``N/10``, so the start-up cancels; unlike CPU
time it does not move with the machine's load.

    python benchmarks/dpor.py            # ~2-4 min on 2 cores
    python benchmarks/dpor.py --budget 10 --no-instructions
    python benchmarks/dpor.py --family --budget 120   # the buffer family, each equivalence
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import coordkit  # noqa: E402
from coordkit.engine import tracing  # noqa: E402
from tests.sched import programs  # noqa: E402

SEEN: set = set()


def locked_counter(nthreads: int, increments: int) -> Callable[[], None]:
    """The test suite's locked counter (it asserts its total), recording the outcome."""

    def program() -> None:
        programs.locked_counter(nthreads, increments)
        SEEN.add(nthreads * increments)

    return program


def one_slot_buffer() -> None:
    """Two producers and two consumers moving one item each over a one-slot buffer (the
    test suite's), recording the order the consumers got the items in."""
    SEEN.add(programs.one_slot_buffer())


def buffer(producers: int, consumers: int, items: int) -> Callable[[], None]:
    """``producers`` threads put ``items`` items each into a one-slot buffer guarded by one
    Condition (while-loop waits, ``notify_all``), ``consumers`` threads take them (the
    items split evenly), recording the order they were taken in.  Issue 33's 2P/2C buffer
    is ``buffer(2, 2, 2)``."""

    def program() -> None:
        got = programs.condition_buffer(producers, consumers, items)
        assert sorted(got) == sorted((i, k) for i in range(producers) for k in range(items))
        SEEN.add(got)

    return program


def lost_update_3x3() -> None:
    box = [0]

    def inc() -> None:
        for _ in range(3):
            v = box[0]
            box[0] = v + 1

    threads = [threading.Thread(target=inc) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box[0] == 9, f"lost update: {box[0]}"


def search(fn: Callable[[], None], strategy, granularity: str, budget: float):
    """(schedules, classes or None, (wall, CPU) seconds, outcomes, exhausted).  Classes
    of a search not exhausted are those its unbounded level has run so far, as ``>= N``."""
    SEEN.clear()
    started, cpu = time.perf_counter(), time.process_time()
    result = coordkit.explore(fn, strategy=strategy, max_schedules=10_000_000,
                              time_budget=budget, granularity=granularity, shrink=False)
    seconds = time.perf_counter() - started, time.process_time() - cpu
    classes = None
    if result.coverage and "equivalence classes" in result.coverage:
        classes = int(result.coverage.split("(")[-1].split()[0])
    elif not result.exhausted and strategy.sleep_sets and strategy.bound is None:
        classes = f">= {strategy.classes:,}"
    outcomes = set(SEEN)
    if result.failure is not None:
        outcomes.add(("failed", str(result.failure.kind)))
    return result.schedules_run, classes, seconds, outcomes, result.exhausted


EQUIVALENCES = ("trace", "lock-aware")


def rows(name: str, fn: Callable[[], None], granularity: str, budget: float) -> list[str]:
    """One row per equivalence (the unreduced search and the plain run measured once)."""
    plain = plain_run_ms(fn, granularity, 500)  # first: before the searches grow the heap
    full = search(fn, coordkit.DFSScheduler(None, sleep_sets=False), granularity, budget)
    return [row(name, fn, granularity, budget, plain, full, equivalence)
            for equivalence in EQUIVALENCES]


def row(name: str, fn: Callable[[], None], granularity: str, budget: float, plain: float,
        full: tuple, equivalence: str) -> str:
    reduced = search(fn, coordkit.DFSScheduler(None, equivalence=equivalence), granularity,
                     budget)

    def runs(r) -> str:
        return f"{r[0]:,}" + ("" if r[4] else f" (not done in {budget:g}s)")

    equal = "yes" if full[4] and reduced[4] and full[3] == reduced[3] else (
        "n/a" if not (full[4] and reduced[4]) else "NO")
    per_run = 1000 * reduced[2][1] / max(reduced[0], 1)
    floor = plain * (reduced[1] if isinstance(reduced[1], int) else reduced[0]) / 1000
    return (f"| {name} | {granularity} | {equivalence} | {runs(full)} | {runs(reduced)} | "
            f"{reduced[1] if reduced[1] is not None else '-'} | {full[2][0]:.2f} | "
            f"{reduced[2][0]:.2f} ({reduced[2][1]:.2f}) | {per_run:.2f} | {plain:.2f} | "
            f"{per_run / plain:.1f}x | {floor:.2f} | {equal} |")


def plain_run_ms(fn: Callable[[], None], granularity: str, n: int) -> float:
    """CPU milliseconds of one plain run of ``fn``: random schedules, no footprints, no
    race detector, no DPOR.  No exhaustive search can cost less than its classes times
    this (the floor column)."""
    cpu = time.process_time()
    result = coordkit.explore(fn, strategy="random", seed=1, max_schedules=n,
                              granularity=granularity, races="ignore", shrink=False)
    return 1000 * (time.process_time() - cpu) / max(result.schedules_run, 1)


FAMILY = [(1, 1, 2), (2, 1, 1), (1, 2, 2), (2, 2, 1), (2, 1, 2), (2, 2, 2)]


def family(budget: float) -> None:
    """The buffer family (``buffer(p, c, items)``, sync granularity): DPOR's classes,
    schedules and CPU seconds under each equivalence (``--family``)."""
    print("| producers x consumers, items per producer | equivalence | classes | schedules | "
          "cpu s | outcomes |")
    print("|---|---|---|---|---|---|")
    for p, c, items in FAMILY:
        for equivalence in EQUIVALENCES:
            scheduler = coordkit.DFSScheduler(None, equivalence=equivalence)
            schedules, classes, seconds, seen, done = search(buffer(p, c, items), scheduler,
                                                             "sync", budget)
            note = "" if done else f" (not done in {budget:g}s)"
            print(f"| {p}P/{c}C, {items} | {equivalence} | {classes} | {schedules:,}{note} | "
                  f"{seconds[1]:.1f} | {len(seen)} |", flush=True)


def time_to_find(budget: float) -> str:
    started = time.perf_counter()
    result = coordkit.explore(lost_update_3x3, strategy="dfs", max_preemptions=None,
                              granularity="line", max_schedules=1_000_000, time_budget=budget,
                              shrink=False)
    seconds = time.perf_counter() - started
    if result.failure is None:
        return f"unbounded dfs: 3x3 lost update NOT found in {seconds:.2f}s"
    return (f"unbounded dfs finds the 3x3 lost update (line granularity) in {seconds:.2f}s, "
            f"{result.failure.schedules_run} schedules")


def bounded(budget: float) -> str:
    """The schedules ``max_preemptions=1`` runs on the demo's fixed version: the bounded
    search (``DFSScheduler(1)``, what ``strategy="dfs", max_preemptions=1`` and shrinking
    use: unreduced) against the reduced one (``reduce_bound=True``, SCHED-71)."""
    from coordkit import _demo

    out = []
    for name, scheduler in (("unreduced", coordkit.DFSScheduler(1)),
                            ("reduce_bound", coordkit.DFSScheduler(1, reduce_bound=True))):
        cpu = time.process_time()
        result = coordkit.explore(_demo.shutdown_fixed, strategy=scheduler,
                                  max_schedules=1_000_000, time_budget=budget, shrink=False)
        done = "" if result.exhausted else f" (not done in {budget:g}s)"
        out.append(f"{name} {result.schedules_run:,}{done} in {time.process_time() - cpu:.2f}s cpu")
    return "demo's fixed version within 1 preemption: " + ", ".join(out)


CASES = [
    ("2x2 locked counter", locked_counter(2, 2), "line"),
    ("3x3 locked counter", locked_counter(3, 3), "line"),
    ("3x3 locked counter", locked_counter(3, 3), "sync"),
    ("2P/2C one-slot Condition buffer, 1 item each", one_slot_buffer, "sync"),
    ("2P/2C one-slot Condition buffer, 2 items each (issue 33)", buffer(2, 2, 2), "sync"),
]


def count(case: int, kind: str, n: int) -> None:
    """Make ``n`` runs of case ``case`` (the child process that callgrind counts):
    ``plain`` (random, no footprints, no race detection), ``dpor`` (the search's first
    ``n`` schedules) or ``uncontrolled`` (the program called ``n`` times as it is: plain
    ``threading``, real OS threads, no coordkit: what the program itself costs)."""
    _name, fn, granularity = CASES[case]
    if kind == "uncontrolled":
        for _ in range(n):
            fn()
    elif kind == "plain":
        coordkit.explore(fn, strategy="random", seed=1, max_schedules=n,
                         granularity=granularity, races="ignore", shrink=False)
    else:
        coordkit.explore(fn, strategy=coordkit.DFSScheduler(None), max_schedules=n,
                         granularity=granularity, shrink=False)


def instructions(case: int, kind: str, n: int) -> float | None:
    """Instructions per run (callgrind): ``n`` runs minus ``n // 10``, over the difference
    in runs; None without valgrind.  Both children hash strings alike (PYTHONHASHSEED=0):
    with random seeds the two counts differ by one-off work (dict layouts, a collection of
    the import-time heap) and the figure swings by +-0.2 M per run."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    totals = []
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    for runs in (n, n // 10):
        out = subprocess.run(
            [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
             __file__, "--count", str(case), kind, str(runs)],
            capture_output=True, text=True, check=True, env=env).stderr
        totals.append(int(re.search(r"Collected : (\d+)", out).group(1)))
    return (totals[0] - totals[1]) / (n - n // 10)


def instruction_table(n: int) -> None:
    print(f"\nInstructions (callgrind; {n} runs minus {n // 10}): M per plain run, M per DPOR "
          "schedule (its first schedules), M per uncontrolled run (the program called as it "
          "is: real threads, no coordkit; once per program)")
    print("| program | granularity | M instr per plain run | M instr per DPOR schedule | "
          "DPOR / plain | M instr per uncontrolled run | plain / uncontrolled |")
    print("|---|---|---|---|---|---|---|")
    uncontrolled: dict[str, float] = {}
    for case, (name, _fn, granularity) in enumerate(CASES):
        if granularity == "line" and not tracing.SWITCHES:
            print(f"| {name} | line | (Python {sys.version_info[0]}.{sys.version_info[1]} has "
                  "no line granularity) | | | | |")
            continue
        plain = instructions(case, "plain", n)
        if plain is None:
            print("(valgrind not installed: no instruction counts)")
            return
        dpor = instructions(case, "dpor", n)
        if name not in uncontrolled:  # the same program at another granularity
            uncontrolled[name] = instructions(case, "uncontrolled", n) or 0.0
        own = uncontrolled[name]
        print(f"| {name} | {granularity} | {plain / 1e6:.3f} | {dpor / 1e6:.2f} | "
              f"{dpor / plain:.1f}x | {own / 1e6:.3f} | {plain / own:.1f}x |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per search")
    parser.add_argument("--runs", type=int, default=100,
                        help="runs per instruction count (callgrind)")
    parser.add_argument("--no-instructions", action="store_true",
                        help="skip the instruction counts")
    parser.add_argument("--only-instructions", action="store_true",
                        help="only the instruction counts")
    parser.add_argument("--family", action="store_true",
                        help="only the buffer family's classes under each equivalence")
    parser.add_argument("--count", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.family:
        family(args.budget)
        return
    if args.count:
        count(int(args.count[0]), args.count[1], int(args.count[2]))
        return
    if args.only_instructions:
        instruction_table(args.runs)
        return
    print(f"Python {sys.version.split()[0]}; seconds are wall clock (CPU in parentheses: the "
          "machine may be shared)")
    print("| program | granularity | equivalence | schedules unreduced | schedules DPOR | "
          "classes (DPOR) | s unreduced | s DPOR (cpu) | cpu ms per DPOR schedule | "
          "cpu ms per plain run | DPOR / plain | floor s (classes x plain run) | "
          "outcomes equal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, fn, granularity in CASES:
        for line in rows(name, fn, granularity, args.budget):
            print(line, flush=True)
    print(time_to_find(args.budget))
    print(bounded(args.budget))
    if not args.no_instructions:
        instruction_table(args.runs)


if __name__ == "__main__":
    main()
