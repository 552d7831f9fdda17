"""Bounded exhaustive search (stateless DFS with preemption bounding and sleep sets)."""

from __future__ import annotations

from dataclasses import dataclass, field

from coordkit.engine.points import Point
from coordkit.engine.schedulers.base import PRUNE, FinishedRun, Scheduler
from coordkit.errors import TraceDivergedError

__all__ = ["DFSScheduler"]


@dataclass
class _Node:
    """One choice point on the current DFS path."""

    tids: tuple[int, ...]
    ops: tuple[tuple[str, str], ...]
    current_runnable: bool
    preemptions_before: int
    sleep: frozenset[int]
    chosen: int = 0
    done: set[int] = field(default_factory=set)


_READS = frozenset({"is_set", "locked", "empty", "qsize", "is_alive"})


def _pending(p: Point) -> tuple[str, str]:
    """What a thread is about to do, for the independence check.  A thread that has
    not reached its first point yet may do anything before it: no object, so it
    commutes with nothing."""
    return (p.op, "" if p.op == "start" and p.obj == f"T{p.thread}" else p.obj)


def _independent(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Two pending operations commute: different objects, or both only read."""
    (ka, ta), (kb, tb) = a, b
    if ka == "sleep" or kb == "sleep":
        return True
    if not ta or not tb:
        return False
    if ta != tb:
        return True
    return ka in _READS and kb in _READS


class DFSScheduler(Scheduler):
    """Bounded exhaustive search: every schedule with at most ``max_preemptions`` preemptions.

    Depth-first and stateless (each run replays the path so far, then takes the
    first choice not yet explored).  Sleep sets prune schedules that only
    reorder independent operations (two operations on different objects, or
    two reads).  ``exhausted`` becomes True when the bounded space is covered.
    """

    name = "dfs"

    def __init__(self, max_preemptions: int | None = 2, sleep_sets: bool = True) -> None:
        if max_preemptions is not None and max_preemptions < 0:
            raise ValueError(f"max_preemptions must be >= 0 or None, got {max_preemptions!r}")
        self.max_preemptions = max_preemptions
        self.sleep_sets = sleep_sets
        self._path: list[_Node] = []
        self._depth = 0
        self._exhausted = False
        self._preemptions = 0
        self.pruned = 0

    @property
    def exhausted(self) -> bool:
        return self._exhausted

    def begin(self, run_index: int) -> None:
        self._depth = 0
        self._preemptions = 0

    def _costs(self, node: _Node, idx: int) -> int:
        return 1 if idx != 0 and node.current_runnable else 0

    def _allowed(self, node: _Node, idx: int) -> bool:
        if node.tids[idx] in node.sleep:
            return False
        if self.max_preemptions is None:
            return True
        return node.preemptions_before + self._costs(node, idx) <= self.max_preemptions

    def choose(self, point: Point, enabled: list[Point]) -> int:
        d = self._depth
        self._depth += 1
        tids = tuple(p.thread for p in enabled)
        if d < len(self._path):
            node = self._path[d]
            if node.tids != tids:
                raise TraceDivergedError(
                    f"the program is not deterministic: at choice point {d} the runnable threads "
                    f"were {node.tids} before and are {tids} now (does it read real time, "
                    "random numbers, or iterate over a set of objects?)"
                )
        else:
            node = self._new_node(point, enabled, tids)
            if node is None:
                return PRUNE
        node.done.add(node.chosen)
        self._preemptions += self._costs(node, node.chosen)
        return node.chosen

    def _new_node(self, point: Point, enabled: list[Point], tids: tuple[int, ...]) -> _Node | None:
        """Extend the path with a new choice point; None when no choice there is allowed."""
        node = _Node(
            tids=tids,
            ops=tuple(_pending(p) for p in enabled),
            current_runnable=point.thread in tids,
            preemptions_before=self._preemptions,
            sleep=self._child_sleep(),
        )
        self._path.append(node)
        for idx in range(len(tids)):
            if self._allowed(node, idx):
                node.chosen = idx
                return node
        node.done.update(range(len(tids)))
        return None

    def _child_sleep(self) -> frozenset[int]:
        """Sleep set of a new node: siblings explored before the parent's choice, if independent."""
        if not self.sleep_sets or not self._path:
            return frozenset()
        parent = self._path[-1]
        chosen_op = parent.ops[parent.chosen]
        asleep = set()
        for idx, tid in enumerate(parent.tids):
            if idx == parent.chosen:
                continue
            if (tid in parent.sleep or idx in parent.done) and _independent(parent.ops[idx], chosen_op):
                asleep.add(tid)
        return frozenset(asleep)

    def end(self, run: FinishedRun) -> None:
        # Drop nodes deeper than this run reached, then backtrack to the deepest
        # node with an allowed alternative.
        del self._path[self._depth :]
        while self._path:
            node = self._path[-1]
            for idx in range(len(node.tids)):
                if idx not in node.done and self._allowed(node, idx):
                    node.chosen = idx
                    return
            self._path.pop()
        self._exhausted = True
