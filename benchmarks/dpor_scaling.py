#!/usr/bin/env python3
"""Parallel DPOR on paper: work stealing simulated over recorded DPOR trees (issue 32, item 4).

An exhaustive search is a tree: each run follows a path of choices from the root, and DPOR
adds the branches that races call for as runs end.  Split across workers, a worker explores
a subtree depth first and an idle worker steals an unexplored branch from a busy one.  How
well that scales depends on the tree's shape, which this script measures rather than
guesses: it records real searches (one process, ``DFSScheduler(None)``: the choices of each
run of the last, unbounded level, and its CPU time) and replays their trees through a
discrete-event simulation of P workers, P = 1 ... 64.

The simulation's rules (its assumptions, stated so that its numbers can be judged):

* A run costs the CPU time it took in the recorded search (search bookkeeping included).
  A stolen branch costs ``--steal-ms`` before its first run (sending the prefix), each worker
  ``--start-ms`` before its first (process start, the program's import).
* A worker explores its subtree in the recorded order.  A thief takes the shallowest
  unexplored branch of the victim with the most work left (Cilk-style: the biggest piece).
* DPOR knows a node's branches only after runs through it have raced.  Two bounds:
  *optimistic*, all branches of a node are known once the first run through it ends;
  *pessimistic*, a node's k-th branch is known once the first run through its (k-1)-th ends.
  The real search lies between the two.
* The tree is the sequential search's: the simulation assumes parallel DPOR explores the
  same schedules (its sleep sets cross workers), as issue 32 asks of the exhausted counts.

It prints per program: runs, the tree's depth and branching, the sequential CPU seconds,
then per P the simulated wall time, speed-up and efficiency at both bounds.

    python benchmarks/dpor_scaling.py                 # ~2 min on 2 cores
    python benchmarks/dpor_scaling.py --workers 1 2 4 8 16 32 64 128
"""

from __future__ import annotations

import argparse
import heapq
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import coordkit  # noqa: E402
from tests.sched import programs  # noqa: E402


@dataclass(eq=False)
class Node:
    """A choice prefix: its branches in the order the search first took them; a leaf is a
    run (``cost`` seconds)."""

    depth: int
    children: list[Node] = field(default_factory=list)
    by_choice: dict[int, Node] = field(default_factory=dict)
    cost: float = 0.0  # a leaf's run
    work: float = 0.0  # the runs of the subtree, in seconds
    leaves: int = 0
    first_done: float | None = None  # when the first run through it ended (simulated)


def record(fn: Callable[[], object], granularity: str, budget: float) -> tuple[Node, int, float]:
    """Search ``fn`` exhaustively in this process; the tree of its last level's runs, the
    runs, and the search's CPU seconds."""
    scheduler = coordkit.DFSScheduler(None)
    runs: list[tuple[tuple[int, ...], float]] = []
    last = [time.process_time()]
    end = scheduler.end

    def recording_end(run) -> None:
        level = scheduler._level  # the bounds before the unbounded level are searched again
        now = time.process_time()
        runs.append((level, tuple(i for _, i in run.choices), now - last[0]))
        last[0] = now
        end(run)

    scheduler.end = recording_end  # type: ignore[method-assign]
    started = time.process_time()
    result = coordkit.explore(fn, strategy=scheduler, granularity=granularity, shrink=False,
                              max_schedules=10_000_000, time_budget=budget, races="ignore")
    if not result.exhausted:
        raise SystemExit(f"{fn.__name__} not exhausted in {budget:g} s: raise --budget")
    final = max(level for level, _, _ in runs)
    root = Node(0)
    for level, choices, cost in runs:
        if level != final:
            continue
        node = root
        for choice in choices:
            child = node.by_choice.get(choice)
            if child is None:
                child = node.by_choice[choice] = Node(node.depth + 1)
                node.children.append(child)
            node = child
        node.cost = cost
    _sum(root)
    return root, root.leaves, time.process_time() - started


def _sum(node: Node) -> None:
    stack, order = [node], []
    while stack:
        n = stack.pop()
        order.append(n)
        stack.extend(n.children)
    for n in reversed(order):
        if n.children:
            n.work = sum(c.work for c in n.children)
            n.leaves = sum(c.leaves for c in n.children)
        else:
            n.work, n.leaves = n.cost, 1


class Worker:
    """A depth-first walk of the subtrees it was given: a stack of [node, next branch, end]."""

    def __init__(self) -> None:
        self.stack: list[list] = []
        self.path: list[Node] = []  # the nodes of the run in progress, root first
        self.left = 0.0  # seconds of runs not yet done in its subtrees

    def give(self, node: Node) -> None:
        self.stack = [[node, 0, len(node.children)]]
        self.left = node.work

    def next_run(self) -> Node | None:
        stack = self.stack
        while stack:
            top = stack[-1]
            node, i, end = top
            if not node.children:
                stack.pop()
                self.path = [entry[0] for entry in stack] + [node]
                return node
            if i < end:
                top[1] += 1
                stack.append([node.children[i], 0, len(node.children[i].children)])
            else:
                stack.pop()
        return None

    def stealable(self, now: float, optimistic: bool) -> tuple[list, int] | None:
        """The shallowest entry with an unexplored branch known at ``now``, and the branch:
        the last (optimistic: all are known) or the next (pessimistic: known once the run
        before it has begun and ended its first run)."""
        for entry in self.stack:
            node, i, end = entry
            if i >= end:
                continue
            if optimistic:
                if node.first_done is not None and node.first_done <= now:
                    return entry, end - 1
            elif i > 0:
                before = node.children[i - 1].first_done
                if before is not None and before <= now:
                    return entry, i
        return None


def simulate(root: Node, workers: int, optimistic: bool, start: float, steal: float) -> tuple[float, int]:
    """Simulated wall seconds to exhaust ``root`` with ``workers`` workers, and the steals."""
    _clear(root)
    crew = [Worker() for _ in range(workers)]
    crew[0].give(root)
    clock = [(start, k) for k in range(workers)]  # (free at, worker)
    heapq.heapify(clock)
    pending: list[tuple[float, Node, Worker]] = []  # runs in progress: (ends at, leaf, worker)
    steals = done = 0
    total = root.leaves
    finished = 0.0
    while done < total:
        now, k = heapq.heappop(clock)
        _finish(pending, now)
        me = crew[k]
        leaf = me.next_run()
        if leaf is None:
            leaf, cost = _steal(crew, me, now, optimistic, steal)
            if leaf is None:  # nothing known to steal now: wait for the next run to end
                later = min((p[0] for p in pending), default=None)
                if later is None:
                    raise AssertionError("work left but nothing running")
                heapq.heappush(clock, (max(later, now + 1e-9), k))
                continue
            steals += 1
            now += cost
        ends = now + leaf.cost
        heapq.heappush(pending, (ends, leaf, me))
        me.left -= leaf.cost
        done += 1
        finished = max(finished, ends)
        heapq.heappush(clock, (ends, k))
    return finished, steals


def _clear(node: Node) -> None:
    stack = [node]
    while stack:
        n = stack.pop()
        n.first_done = None
        stack.extend(n.children)


def _finish(pending: list, now: float) -> None:
    """Runs that ended by ``now``: the nodes on their paths learn their first run ended."""
    while pending and pending[0][0] <= now:
        ends, leaf, worker = heapq.heappop(pending)
        for node in _ancestors(leaf, worker):
            if node.first_done is None:
                node.first_done = ends


def _ancestors(leaf: Node, worker: Worker) -> list[Node]:
    return worker.path if worker.path and worker.path[-1] is leaf else [leaf]


def _steal(crew: list[Worker], thief: Worker, now: float, optimistic: bool,
           steal: float) -> tuple[Node | None, float]:
    victims = sorted((w for w in crew if w is not thief), key=lambda w: -w.left)
    for victim in victims:
        found = victim.stealable(now, optimistic)
        if found is None:
            continue
        entry, index = found
        if index == entry[1]:
            entry[1] += 1
        else:
            entry[2] -= 1
        branch = entry[0].children[index]
        victim.left -= branch.work
        thief.give(branch)
        return thief.next_run(), steal
    return None, 0.0


def shape(root: Node) -> str:
    depths, fan = [], []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.children:
            fan.append(len(n.children))
            stack.extend(n.children)
        else:
            depths.append(n.depth)
    branching = sum(f for f in fan if f > 1) / max(sum(1 for f in fan if f > 1), 1)
    nodes = sum(1 for f in fan if f > 1)
    return (f"depth {min(depths)}-{max(depths)}, {nodes:,} branching nodes "
            f"(mean {branching:.1f} branches)")


def locked_counter(nthreads: int, increments: int) -> Callable[[], None]:
    def program() -> None:
        programs.locked_counter(nthreads, increments)
    program.__name__ = f"locked_counter_{nthreads}x{increments}"
    return program


CASES = [
    ("3x3 locked counter", locked_counter(3, 3), "line"),
    ("3x3 locked counter", locked_counter(3, 3), "sync"),
    ("3x4 locked counter", locked_counter(3, 4), "sync"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per search")
    parser.add_argument("--start-ms", type=float, default=150.0,
                        help="a worker's start-up before its first run (default: a process)")
    parser.add_argument("--steal-ms", type=float, default=1.0,
                        help="what a steal costs the thief (default: a local pipe)")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}; start-up {args.start_ms:g} ms per worker, "
          f"{args.steal_ms:g} ms per steal")
    for name, fn, granularity in CASES:
        root, runs, cpu = record(fn, granularity, args.budget)
        print(f"\n{name}, {granularity}: {runs:,} runs, {cpu:.2f} s CPU in one process, "
              f"{shape(root)}")
        print("| workers | optimistic: wall s | speed-up | efficiency | steals "
              "| pessimistic: wall s | speed-up | efficiency | steals | start-up's share |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        base = None
        for p in args.workers:
            cells = []
            for optimistic in (True, False):
                wall, steals = simulate(root, p, optimistic, args.start_ms / 1000,
                                        args.steal_ms / 1000)
                if base is None:
                    base = wall
                cells.append(f"{wall:.2f} | {base / wall:.1f}x | {base / wall / p:.0%} | {steals}")
            print(f"| {p} | " + " | ".join(cells) + f" | {args.start_ms / 1000 / wall:.0%} |")


if __name__ == "__main__":
    main()
