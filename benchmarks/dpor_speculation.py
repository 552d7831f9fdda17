#!/usr/bin/env python3
"""Parallel DPOR by speculation, measured on real searches (issue 32, item 1's DPOR part).

The design (the dask helper's findings, "DPOR across workers"): one process keeps the
sequential DFSScheduler and does all its bookkeeping in the sequential order, so the
exhausted counts are the sequential search's by construction; W workers run ahead the
branches the scheduler has pending (``backtrack - done`` on the current path, deepest
first, the order ``_backtrack`` takes them).  A run made ahead is used when the search
reaches it with the state that decides it unchanged (the branch's prefix, the level,
and the siblings already explored at the branch node, which make the new nodes' sleep
sets); else it is wasted and the run is made again.

This script runs each search once, in one process, and at the start of every run notes
the branch it takes and the branches pending, then replays that record: with W workers
each holding one of the first W pending branches, which runs would have been ready?
From the hit rate and the measured split of a run's time between the program and the
bookkeeping (DFSScheduler.end), it estimates the speed-up:

    time(W) = max(bookkeeping of every run + the program of every miss,
                  the program of every run made (hits, misses, wasted) / W)

It reads DFSScheduler's private state (``_path``, ``_indices``, ``_backtracked``,
``_fresh_node``, ``_level``): the hooks the design asks for (H1 ``pending``) would
replace that.

    python benchmarks/dpor_speculation.py [--workers 2 4 8 16 64]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import coordkit
from coordkit.engine.schedulers import DFSScheduler
from coordkit.sync import real_monotonic

Branch = tuple  # (level, prefix of choice indices, index taken, siblings already explored)


class Recording(DFSScheduler):
    """The sequential search, noting at each run's start its branch and the pending ones;
    timing its own bookkeeping."""

    def __init__(self) -> None:
        super().__init__(max_preemptions=None)
        self.taken: list[Branch | None] = []  # the branch each run takes (None: the first)
        self.pending: list[list[Branch]] = []  # pending before each run, in _backtrack's order
        self.bookkeeping = 0.0

    def begin(self, run_index: int) -> None:
        node = self._backtracked
        if node is None or not self._path:
            self.taken.append(None)
        else:
            d = self._fresh_node
            self.taken.append((self._level, tuple(self._indices[:d]), node.tids.index(node.chosen),
                               frozenset(node.done)))
        self.pending.append(self._pending())
        super().begin(run_index)

    def _pending(self) -> list[Branch]:
        """The branches ``_backtrack`` would take, deepest node first, as things stand."""
        out = []
        for d in range(len(self._path) - 1, -1, -1):
            node = self._path[d]
            for t in node.tids:
                if t in node.backtrack and t not in node.done and self._allowed(node, t) \
                        and not (node is self._backtracked and t == node.chosen):
                    out.append((self._level, tuple(self._indices[:d]), node.tids.index(t),
                                frozenset(node.done)))
        return out

    def end(self, run):  # type: ignore[no-untyped-def]
        # (not choose: a scheduler outside coordkit's package is run traced, as the
        # program's code, so timing it would change the runs; end is ~85% of the total)
        started = real_monotonic()
        try:
            super().end(run)
        finally:
            self.bookkeeping += real_monotonic() - started


def hits(rec: Recording, workers: int) -> tuple[int, int]:
    """(runs made ahead and used, runs made ahead and wasted) with ``workers`` workers:
    after each run, every idle worker takes the next pending branch nobody holds."""
    held: dict[Branch, int] = {}  # branch -> the run it was made ahead at
    used = wasted = 0
    for k, branch in enumerate(rec.taken):
        if branch is not None and branch in held:
            used += 1
            del held[branch]
        pending = rec.pending[k]
        alive = set(pending)
        stale = [b for b in held if b not in alive and b != branch]
        wasted += len(stale)  # its state changed (a sibling explored first) or it is gone
        for b in stale:
            del held[b]
        for b in pending:
            if len(held) >= workers:
                break
            held.setdefault(b, k)
    return used, wasted + len(held)


def measure(name: str, fn: Callable[[], None], granularity: str, budget: int,
            workers: list[int]) -> None:
    rec = Recording()
    started = time.perf_counter()
    result = coordkit.explore(fn, strategy=rec, granularity=granularity, races="ignore",
                              max_schedules=budget)
    total = time.perf_counter() - started
    runs = len(rec.taken)
    b = rec.bookkeeping / runs
    r = (total - rec.bookkeeping) / runs
    print(f"\n{name} ({granularity}): {runs} runs, exhausted={result.exhausted}, {total:.2f} s; "
          f"per run {1000 * r:.2f} ms program + {1000 * b:.2f} ms bookkeeping "
          f"({100 * b / (r + b):.0f}%)")
    print("  workers  made ahead & used  wasted  est. speed-up")
    for w in workers:
        used, wasted = hits(rec, w)
        misses = runs - used
        wall = max(runs * b + misses * r, (runs + wasted) * r / w)
        print(f"  {w:>7}  {used:>7} ({100 * used / runs:4.1f}%)  {wasted:>6}  "
              f"x{runs * (r + b) / wall:.2f}")


def main() -> None:
    from dpor import locked_counter, one_slot_buffer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="*", default=[2, 4, 8, 16, 64])
    parser.add_argument("--budget", type=int, default=5000, help="runs per search at most")
    args = parser.parse_args()
    for name, fn, granularity in (("3x3 locked counter", locked_counter(3, 3), "sync"),
                                  ("3x3 locked counter", locked_counter(3, 3), "line"),
                                  ("2P/2C one-slot Condition buffer", one_slot_buffer, "sync")):
        measure(name, fn, granularity, args.budget, args.workers)


if __name__ == "__main__":
    main()
