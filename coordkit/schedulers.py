"""Exploration strategies behind one small interface.

The runtime asks a scheduler one question at each choice point: which of these
candidate threads runs next?  Candidates are ordered so that index 0 continues
the current thread (or, when it cannot run, takes the next thread in
round-robin order); any other answer is a context switch.  A scheduler sees one
run at a time through ``begin``/``choose``/``end`` and says through
``exhausted`` when it has nothing left to try.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coordkit.errors import TraceDivergedError

if TYPE_CHECKING:
    from coordkit._runtime import Execution, Task

__all__ = [
    "DFSScheduler",
    "PCTScheduler",
    "RandomScheduler",
    "ReplayScheduler",
    "Scheduler",
    "make_scheduler",
]

# Returned by ``choose`` to abandon a run that can only repeat explored work.
PRUNE = -1


class Scheduler:
    """Base class: override ``choose``; the hooks default to doing nothing."""

    name = "scheduler"

    def begin(self, run_index: int) -> None:
        """A new run starts."""

    def choose(self, execution: Execution, candidates: list[Task]) -> int:
        raise NotImplementedError

    def end(self, execution: Execution) -> None:
        """The run ended (passed, failed or was pruned)."""

    @property
    def exhausted(self) -> bool:
        """True once every schedule this strategy can produce has been run."""
        return False


class RandomScheduler(Scheduler):
    """Random walk with bursts: keep the current thread, or switch with ``switch_probability``.

    Long bursts per thread find ordering bugs far faster than a fair coin at
    every point.  Each run draws from its own generator seeded by ``(seed, run)``
    so any run can be regenerated alone.
    """

    name = "random"

    def __init__(self, seed: int, switch_probability: float = 0.2) -> None:
        if not 0.0 < switch_probability <= 1.0:
            raise ValueError(f"switch_probability must be in (0, 1], got {switch_probability!r}")
        self.seed = seed
        self.switch_probability = switch_probability
        self._rng = random.Random()

    def begin(self, run_index: int) -> None:
        self._rng.seed(f"{self.seed}:{run_index}")

    def choose(self, execution: Execution, candidates: list[Task]) -> int:
        rng = self._rng
        cur = execution.current
        if cur is candidates[0] and rng.random() >= self.switch_probability:
            return 0
        return rng.randrange(len(candidates))


class PCTScheduler(Scheduler):
    """Probabilistic Concurrency Testing (Burckhardt et al., 2010) with bug depth ``depth``.

    Threads get random distinct priorities; the highest-priority runnable thread
    runs; at ``depth - 1`` random steps the running thread drops below every
    initial priority.  A bug of depth d is found with probability at least
    1/(n * k^(d-1)) per run for n threads and k steps.
    """

    name = "pct"

    def __init__(self, seed: int, depth: int = 3) -> None:
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth!r}")
        self.seed = seed
        self.depth = depth
        self._rng = random.Random()
        self._max_steps_seen = 32
        self._priority: dict[int, float] = {}
        self._change_points: dict[int, int] = {}

    def begin(self, run_index: int) -> None:
        rng = self._rng
        rng.seed(f"{self.seed}:{run_index}")
        self._priority = {}
        k = self._max_steps_seen
        points = rng.sample(range(1, k + 1), min(self.depth - 1, k))
        # Later change points drop further: the i-th gets priority depth - i (< depth).
        self._change_points = {step: self.depth - 1 - i for i, step in enumerate(sorted(points))}

    def _prio(self, tid: int) -> float:
        p = self._priority.get(tid)
        if p is None:
            p = self._priority[tid] = self.depth + self._rng.random()
        return p

    def choose(self, execution: Execution, candidates: list[Task]) -> int:
        cur = execution.current
        drop = self._change_points.pop(execution.steps, None)
        if drop is not None and cur is not None:
            self._priority[cur.tid] = min(drop, self._prio(cur.tid))  # a drop never raises
        if cur is not None and cur.yielding and len(candidates) > 1:
            # A yield (sleep(0)) steps aside: below every other thread, until it changes.
            self._priority[cur.tid] = min(self._prio(t.tid) for t in candidates) - 1.0
        best, best_p = 0, -math.inf
        for i, t in enumerate(candidates):
            p = self._prio(t.tid)
            if p > best_p:
                best, best_p = i, p
        return best

    def end(self, execution: Execution) -> None:
        self._max_steps_seen = max(self._max_steps_seen, execution.steps)


class ReplayScheduler(Scheduler):
    """Follow recorded choices.

    Strict (the default): the program must present the same number of candidates
    at every choice point and no more or fewer choice points, else
    ``TraceDivergedError`` names the first step that differs.  Lenient: missing
    choices are 0, out-of-range non-zero ones wrap into 1..n-1 (used for shrinking and for
    Hypothesis-generated schedules).
    """

    name = "replay"

    def __init__(self, choices: Sequence[Any], strict: bool = True) -> None:
        self.strict = strict
        if strict:
            self._expected = [n for n, _ in choices]
            self._choices = [c for _, c in choices]
        else:
            self._expected = []
            self._choices = [c if isinstance(c, int) else c[1] for c in choices]
        self._k = 0

    def begin(self, run_index: int) -> None:
        self._k = 0

    def choose(self, execution: Execution, candidates: list[Task]) -> int:
        k = self._k
        self._k += 1
        n = len(candidates)
        if k >= len(self._choices):
            if self.strict:
                raise TraceDivergedError(
                    f"replay diverged at choice point {k} (step {execution.steps}): the trace "
                    f"ended after {len(self._choices)} choice points but the program goes on "
                    f"({_describe(candidates)}){_CHANGED}"
                )
            return 0
        c = self._choices[k]
        if self.strict:
            if self._expected[k] != n:
                raise TraceDivergedError(
                    f"replay diverged at choice point {k} (step {execution.steps}): the trace "
                    f"had {self._expected[k]} runnable threads here, the program has {n} "
                    f"({_describe(candidates)}){_CHANGED}"
                )
            return c
        # A non-zero choice stays a switch (never wraps to 0, which means "keep going").
        return c if c < n else 1 + (c - 1) % (n - 1)

    def end(self, execution: Execution) -> None:
        if (
            self.strict
            and execution.failure is None
            and execution.chooser_error is None
            and self._k < len(self._choices)
        ):
            execution.chooser_error = TraceDivergedError(
                f"replay diverged: the program ended after {self._k} choice points but the "
                f"trace has {len(self._choices)}{_CHANGED}"
            )


_CHANGED = (
    ". The program no longer follows this trace: if you changed it (fixed the bug, say), "
    "replay with strict=False to run the old schedule as far as it fits, or explore again"
)


def _describe(candidates: list[Task]) -> str:
    return ", ".join(f"{t.label} {t.name!r} about to {t.op[0] if t.op else 'start'}" for t in candidates)


@dataclass
class _Node:
    """One choice point on the current DFS path."""

    tids: tuple[int, ...]
    ops: tuple[Any, ...]
    current_runnable: bool
    preemptions_before: int
    sleep: frozenset[int]
    chosen: int = 0
    done: set[int] = field(default_factory=set)


def _independent(a: Any, b: Any) -> bool:
    """Two pending operations commute: different objects, or both only read."""
    if a is None or b is None:
        return False
    (ka, ta), (kb, tb) = a, b
    if ka == "sleep" or kb == "sleep":
        return True
    if ta is None or tb is None:
        return False
    if ta is not tb and ta != tb:
        return True
    return ka in _READS and kb in _READS


_READS = frozenset({"is_set", "locked", "empty", "qsize", "is_alive"})


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

    def choose(self, execution: Execution, candidates: list[Task]) -> int:
        d = self._depth
        self._depth += 1
        tids = tuple(t.tid for t in candidates)
        if d < len(self._path):
            node = self._path[d]
            if node.tids != tids:
                raise TraceDivergedError(
                    f"the program is not deterministic: at choice point {d} the runnable threads "
                    f"were {node.tids} before and are {tids} now (does it read real time, "
                    "random numbers, or iterate over a set of objects?)"
                )
        else:
            cur = execution.current
            node = _Node(
                tids=tids,
                ops=tuple(t.op for t in candidates),
                current_runnable=cur is not None and cur in candidates,
                preemptions_before=self._preemptions,
                sleep=self._child_sleep(),
            )
            for idx in range(len(tids)):
                if self._allowed(node, idx):
                    node.chosen = idx
                    break
            else:
                self._path.append(node)
                node.done.update(range(len(tids)))
                return PRUNE
            self._path.append(node)
        node.done.add(node.chosen)
        self._preemptions += self._costs(node, node.chosen)
        return node.chosen

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

    def end(self, execution: Execution) -> None:
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


def make_scheduler(strategy: str | Scheduler, *, seed: int, depth: int = 3,
                   max_preemptions: int | None = 2) -> Scheduler:
    """Build a scheduler from its name: ``random``, ``pct`` or ``dfs``."""
    if isinstance(strategy, Scheduler):
        return strategy
    if strategy == "random":
        return RandomScheduler(seed)
    if strategy == "pct":
        return PCTScheduler(seed, depth)
    if strategy == "dfs":
        return DFSScheduler(max_preemptions)
    raise ValueError(
        f"strategy must be 'pct', 'random', 'dfs', 'hypothesis' or a Scheduler, got {strategy!r}"
    )
