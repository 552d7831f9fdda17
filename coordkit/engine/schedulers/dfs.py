"""Exhaustive search: DPOR with sleep sets, preemption bounding, iterative bounds.

Stateless and depth-first: each run replays the path of choices so far, takes one
not yet explored, and goes on with default choices; ``end`` picks the next.

* **Unbounded** (``max_preemptions=None``): source-set DPOR with sleep sets
  (Abdulla et al., POPL 2014).  After each run, the races between its steps
  (``dpor.HappensBefore``, from the steps' footprints) say which other thread must
  also be tried at which earlier choice point; sleep sets skip a thread whose
  step commutes with everything run since it was tried.  Exhausting explores one
  schedule of every equivalence class of interleavings (SCHED-33).  It searches
  bound 0, 1, 2 first, so shallow bugs come first (SCHED-34).
* **Bounded** (``max_preemptions=k``): every schedule with at most ``k``
  preemptions, unreduced (SCHED-35); with ``reduce_bound=True``, up to the order of
  non-conflicting steps: bounded partial-order reduction (BPOR, Coons, Musuvathi and
  McKinley, OOPSLA 2013).  A reduction that keeps
  one schedule per class may keep one over the bound and drop the class; BPOR makes up
  for it by trying each race's thread also at the choice point where the block of
  steps holding the race's first step began, where the switch costs no preemption
  more than the one the run made there (SCHED-35, SCHED-71); sleep sets only for a
  running thread preempted by the choice made that could run after its step (SCHED-94).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from coordkit.engine.dpor import Coarsening, HappensBefore
from coordkit.engine.points import ANY, WRITE, Effect, Point, Step, stutters
from coordkit.engine.schedulers.base import PRUNE, FinishedRun, Scheduler, check_flag, check_int
from coordkit.errors import TraceDivergedError

__all__ = ["DFSScheduler", "EQUIVALENCES", "ITERATIVE_BOUNDS"]

# What an unbounded search explores one schedule of each class of (SCHED-33, SCHED-80).
EQUIVALENCES = ("trace", "lock-aware")

# The bounds an unbounded search tries before it searches without one (SCHED-34).
ITERATIVE_BOUNDS = (0, 1, 2)

# What sleep sets compare of a step: whether it depends on everything, the objects it
# reads, the objects it writes, the Conditions only its waits write (SCHED-81).
_Summary = tuple[bool, frozenset[str], frozenset[str], frozenset[str]]
_EVERYTHING: _Summary = (True, frozenset(), frozenset(), frozenset())


def _summary(footprint: list[Effect]) -> _Summary:
    """A footprint as sleep sets compare it with a step of another run: memory labelled
    there (``mem#<n>``, by the order of first touch) may be another object here, so all
    are one, ``mem#``."""
    reads: set[str] = set()
    writes: set[str] = set()
    waits: set[str] = set()
    for e in footprint:
        obj = e.obj
        if obj == ANY:
            return _EVERYTHING
        if obj.startswith("mem#"):
            obj = "mem#"
        if e.access != WRITE:
            reads.add(obj)
        elif e.op == "wait" and obj.startswith("Condition#"):
            waits.add(obj)
        else:
            writes.add(obj)
    return False, frozenset(reads), frozenset(writes - waits), frozenset(waits - writes)


def _conflict(a: _Summary, b: _Summary, coarse: Coarsening | None = None) -> bool:
    """Whether two summarised steps conflict: one object, at least one write (SCHED-30);
    under the lock-aware equivalence's ``coarse`` dependence a wait on a Condition it does
    not observe is a read (SCHED-81).  Relaxed locks still conflict here: a sleeping
    acquire stands for its whole critical section, which a later step may conflict with
    though the acquire's own step does not (SCHED-83)."""
    if a[0] or b[0]:
        return True
    ar, aw = _accesses(a, coarse)
    br, bw = _accesses(b, coarse)
    return not aw.isdisjoint(br) or not aw.isdisjoint(bw) or not bw.isdisjoint(ar)


def _accesses(s: _Summary, coarse: Coarsening | None) -> tuple[frozenset[str], frozenset[str]]:
    """The objects a summarised step reads and writes, as ``coarse`` sees them."""
    _, reads, writes, waits = s
    if not waits:
        return reads, writes
    if coarse is None:
        return reads, writes | waits
    unobserved = waits - coarse.observed
    return reads | unobserved, writes | (waits - unobserved)


def _waited_before(steps: Sequence[Step], start: int, end: int, thread: int) -> bool:
    """Whether ``thread``'s last step in ``steps[start:end]`` parked it."""
    last = next((steps[m] for m in range(end - 1, start - 1, -1) if steps[m].thread == thread),
                None)
    return last is not None and any(e.op == "park" for e in last.footprint)


_MAY_WAIT = frozenset({"acquire", "join"})  # the operations _Waits guesses about
_thread_of = itemgetter(0)  # a Point's thread


class _Waits:
    """A guess, from the steps so far, at which threads would only begin to wait if run
    now: those about to acquire a lock another thread holds, or to join a thread that
    has not ended.  It only picks the default at a new choice point (any pick is sound:
    DPOR tries the others where a race needs them), so a wrong guess costs schedules.

    Kept across runs: ``rewind`` takes back the steps a new run does not repeat.
    """

    def __init__(self) -> None:
        self._held: dict[str, int] = {}
        self._ended: dict[str, bool] = {}
        # Per step read, how to take it back: (dict, key, value before or None: no key).
        self._undo: list[list[tuple[dict, str, int | bool | None]]] = []

    def rewind(self, keep: int) -> None:
        """Forget the steps from ``keep`` on."""
        while len(self._undo) > keep:
            for d, key, before in reversed(self._undo.pop()):
                if before is None:
                    del d[key]
                else:
                    d[key] = before

    def update(self, steps: Sequence[Step]) -> None:
        held, ended = self._held, self._ended
        for k in range(len(self._undo), len(steps)):
            step = steps[k]
            changes: list[tuple[dict, str, int | bool | None]] = []
            self._undo.append(changes)
            if stutters(step):
                continue
            for e in step.footprint:
                op = e.op
                if op == "acquire":
                    changes.append((held, e.obj, held.get(e.obj)))
                    held[e.obj] = step.thread
                elif op == "release" and held.get(e.obj) == step.thread:
                    changes.append((held, e.obj, held.pop(e.obj)))
                elif op == "end" and e.obj not in ended:
                    changes.append((ended, e.obj, None))
                    ended[e.obj] = True

    def would_wait(self, p: Point) -> bool:
        """Only for an operation in ``_MAY_WAIT``."""
        if p.op == "acquire":
            return self._held.get(p.obj, p.thread) != p.thread
        return p.op == "join" and p.obj not in self._ended


class _Node:
    """One choice point on the current path."""

    __slots__ = ("backtrack", "chosen", "current_runnable", "done", "forced", "goes_on",
                 "preemptions_before", "sleep", "step", "taken", "tids")

    def __init__(self, tids: tuple[int, ...], current_runnable: bool, preemptions_before: int,
                 step: int, sleep: dict[int, _Summary]) -> None:
        self.tids = tids  # the threads that could run, in the runtime's order
        self.current_runnable = current_runnable  # choosing tids[1:] is a preemption
        self.preemptions_before = preemptions_before
        self.step = step  # index of the step this choice begins
        self.sleep = sleep  # thread -> the step it would take: explored elsewhere
        self.chosen = -1  # a thread id
        self.backtrack: set[int] = set()
        self.done: set[int] = set()
        self.taken: dict[int, _Summary] = {}  # thread -> its step here
        self.goes_on: set[int] = set()  # the threads of ``taken`` that could run after it
        self.forced = False  # every other thread that could run here was asleep

    def cost(self, tid: int) -> int:
        return 1 if self.current_runnable and self.tids[0] != tid else 0


class DFSScheduler(Scheduler):
    """Exhaustive search: every interleaving (``max_preemptions=None``) or every schedule
    with at most ``max_preemptions`` preemptions.

    ``sleep_sets=False`` turns the reduction off: every choice at every choice point
    (an unreduced search, as a test oracle).  ``reduce_bound=True`` reduces a bounded
    search too (BPOR, SCHED-71): fewer schedules, each recording its footprints.
    ``exhausted`` is True once the space is covered; ``coverage(granularity)`` says what
    that space was.
    """

    name = "dfs"
    # Sleep sets under a bound (SCHED-94), with ``reduce_bound`` (False: BPOR alone, for
    # the differential check).
    bounded_sleep_sets = True

    def __init__(self, max_preemptions: int | None = 2, sleep_sets: bool = True,
                 reduce_bound: bool = False, equivalence: str = "trace") -> None:
        check_int("max_preemptions", max_preemptions, 0, allow_none=True)
        check_flag("sleep_sets", sleep_sets)
        check_flag("reduce_bound", reduce_bound)
        if equivalence not in EQUIVALENCES:
            raise ValueError(f"equivalence must be one of {EQUIVALENCES}, not {equivalence!r}")
        if equivalence != "trace" and max_preemptions is not None:
            raise ValueError(f"equivalence={equivalence!r} needs max_preemptions=None "
                             "(an unbounded search)")
        self.equivalence = equivalence
        self.max_preemptions = max_preemptions
        self.sleep_sets = sleep_sets
        self.reduce_bound = reduce_bound
        # Backtrack sets from races (DPOR); under a bound only when asked (SCHED-71).
        self._reduce = sleep_sets and (max_preemptions is None or reduce_bound)
        # Sleep sets, and the stutter's repeat (SCHED-32), only where no bound applies
        # but the iterative ones: a schedule they prune may be the only one of its class
        # within the bound (SCHED-71); under a bound, only the sleepers whose step moved
        # first costs no more preemptions (SCHED-94).
        self._sleep = sleep_sets and max_preemptions is None
        self._bounded_sleep = (self._reduce and max_preemptions is not None
                               and self.bounded_sleep_sets)
        self._bounds: list[int | None] = (
            [*ITERATIVE_BOUNDS, None] if self._sleep else [max_preemptions])
        self._level = 0
        self._path: list[_Node] = []
        self._depth = 0
        self._preemptions = 0
        self._history: Sequence[Step] = ()
        self._hb = self._analysis()  # of the last run analysed, reanalysed from _fresh
        # What sleep sets compare under the lock-aware equivalence: what every run so far
        # made dependent (None: trace equivalence, or no run yet).
        self._coarse: Coarsening | None = None
        self._known: Sequence[Step] = ()  # the steps the current run repeats
        self._indices: list[int] = []  # the index chosen at each node of the path
        self._waits = _Waits()
        self._fresh = 0  # the first step of the current run that no earlier run took
        self._fresh_node = 0  # the depth of the choice point at which it begins
        self._backtracked: _Node | None = None  # the node whose choice this run changed
        self._redundant: int | None = None  # the step at which the run became a repeat
        self._exhausted = False
        self.schedules = 0  # runs of the last level (the one an exhausted search covered)
        self.classes = 0  # of those, complete runs that were not redundant
        self.pruned = 0
        # A search of one subtree (PAR-17): the first ``_floor`` nodes of the path are
        # another search's, never backtracked to here; what runs here add to their
        # backtrack sets (``_seen_above`` is what they held) goes back to it.
        self._floor = 0
        self._seen_above: list[set[int]] = []
        self._whole = True  # the whole search: an exhausted level moves to the next
        self._subtree_done = False

    # Per run, not search state: a copy sent to another process starts without them.
    _PER_RUN = ("_history", "_known", "_hb", "_waits")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._PER_RUN}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._history = self._known = ()
        self._hb = self._analysis()
        self._waits = _Waits()

    def _analysis(self) -> HappensBefore:
        """An empty analysis for this search's runs: races a bounded search spares none
        of (SCHED-71), under the equivalence it explores (SCHED-80)."""
        hb = HappensBefore(lock_aware=self.equivalence == "lock-aware")
        hb.proceeding = self.max_preemptions is None
        return hb

    @property
    def needs_footprints(self) -> bool:
        return self._reduce

    @property
    def bound(self) -> int | None:
        """The preemption bound of the level being searched."""
        return self._bounds[self._level]

    @property
    def exhausted(self) -> bool:
        return self._exhausted

    def explored(self) -> float:
        """The part of the level being searched that is done, estimated from the path
        (between runs; 1.0 once exhausted): at each choice point, the threads whose
        subtrees are done over those it is to try so far, each choice point's share the
        part of its parent's its thread is.  The threads a choice point is to try grow as
        races are found, so early on this is an overestimate."""
        if self._exhausted:
            return 1.0
        done, share = 0.0, 1.0
        for node in self._path:
            to_try = sum(1 for t in node.tids if (t in node.backtrack or t in node.done)
                         and self._allowed(node, t))
            finished = sum(1 for t in node.done if t != node.chosen)
            if to_try:
                done += share * finished / to_try
                share /= to_try
        return done

    def coverage(self, granularity: str) -> str | None:
        """What an exhausted search covered (SCHED-36); None until it is exhausted."""
        if not self._exhausted:
            return None
        if self.max_preemptions is not None:
            reduced = ", up to the order of non-conflicting steps" if self._reduce else ""
            return (f"all schedules with <= {self.max_preemptions} preemption(s) at {granularity} "
                    f"granularity{reduced} ({self.schedules} schedules)")
        if not self._reduce:
            return f"all interleavings at {granularity} granularity ({self.schedules} schedules)"
        if self.equivalence == "lock-aware":
            return (f"all interleavings at {granularity} granularity up to the order of "
                    "critical sections and Condition waits that do not conflict "
                    f"({self.classes} lock-aware equivalence classes in {self.schedules} "
                    "schedules)")
        return (f"all interleavings at {granularity} granularity ({self.classes} equivalence "
                f"classes in {self.schedules} schedules)")

    def observe(self, steps: Sequence[Step]) -> Sequence[Step]:
        """This run repeats the last one up to ``_fresh``: those steps are known."""
        self._known = self._history[:self._fresh] if self._reduce else ()
        self._history = steps
        self._waits.rewind(self._fresh)
        return self._known

    def _check_repeated(self, steps: Sequence[Step]) -> None:
        """The run took the known steps (the recorder reuses a known step only where the
        run reached the same point); a program that did something else is not
        deterministic, and nothing kept from the last run may be used."""
        known = self._known
        for k, step in enumerate(known):
            if k >= len(steps) or steps[k] is not step:
                now = f"is {steps[k].point}" if k < len(steps) else "never came (the run ended)"
                raise TraceDivergedError(
                    f"the program is not deterministic: step {k} of the schedule being "
                    f"replayed was {step.point} before and {now} (does it read real time, "
                    "random numbers, or iterate over a set of objects?)")

    def begin(self, run_index: int) -> None:
        self._depth = 0
        self._preemptions = 0
        self._redundant = None

    # -- one run ------------------------------------------------------------

    def replayed(self) -> Sequence[int]:
        """The choices before the backtracked one: a run repeats them."""
        return self._indices[:self._fresh_node] if self._reduce else ()

    def choose(self, point: Point, enabled: list[Point]) -> int:
        d = self._depth
        path = self._path
        if self._reduce:
            # The runtime took some replayed defaults without asking: skip their nodes (a
            # choice point begins the step whose index its node holds).
            here = len(self._history)
            while d < len(path) and path[d].step < here:
                d += 1
        tids = tuple(map(_thread_of, enabled))
        if d < len(path):  # replaying the path: most choices of most runs
            node = path[d]
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
            path.append(node)
        self._depth = d + 1
        chosen = node.chosen
        node.done.add(chosen)
        index = 0 if tids[0] == chosen else tids.index(chosen)
        if index and node.current_runnable:
            self._preemptions += 1
        if d < len(self._indices):
            self._indices[d] = index
        else:
            self._indices.append(index)
        return index

    def _new_node(self, point: Point, enabled: list[Point], tids: tuple[int, ...]) -> _Node | None:
        """A choice point no run has reached on this path; None to abandon the run (every
        thread that could run is asleep, or over the bound)."""
        sleep = self._sleep_here() if self._sleep or self._bounded_sleep else {}
        if self._redundant is not None:
            return None
        node = _Node(tids, point.thread in tids, self._preemptions, len(self._history),
                     {t: s for t, s in sleep.items() if t in tids} if sleep else {})
        if node.sleep and self._bounded_sleep:
            self._wake_bounded(node, point.thread)
        if node.sleep or self.bound is not None:
            allowed = [t for t in tids if self._allowed(node, t)]
            if not allowed:
                return None
        else:
            allowed = list(tids)
        node.chosen = allowed[0]
        if self._sleep:
            # Not under a bound: passing over a thread that would only begin to wait may
            # cost a preemption that letting it wait first does not (SCHED-71).
            for p in enabled:
                if p.op in _MAY_WAIT:
                    node.chosen = self._not_waiting(enabled, allowed)
                    break
            # Every other thread here asleep (explored elsewhere), not merely over the
            # bound: one over it is explored nowhere at this level (SCHED-46).
            node.forced = sum(t not in node.sleep for t in tids) == 1
        node.backtrack = {node.chosen} if self._reduce else set(allowed)
        return node

    def _not_waiting(self, enabled: list[Point], allowed: list[int]) -> int:
        """The first allowed thread that would not only begin to wait (else the first)."""
        self._waits.update(self._history)
        for p in enabled:
            if p.thread in allowed and not self._waits.would_wait(p):
                return p.thread
        return allowed[0]

    def _allowed(self, node: _Node, tid: int) -> bool:
        return tid not in node.sleep and self._within_bound(node, tid)

    def _within_bound(self, node: _Node, tid: int) -> bool:
        bound = self.bound
        return bound is None or node.preemptions_before + node.cost(tid) <= bound

    def _sleep_here(self) -> dict[int, _Summary]:
        """The sleep set at a new choice point: the parent's sleepers and the threads
        explored before its choice, less those a step since then conflicts with.  A
        sleeper that had to run makes the rest of the run a repeat (``_redundant``)."""
        if not self._path:
            return {}
        parent = self._path[-1]
        bounded = self._bounded_sleep
        if not bounded and (parent is self._backtracked or parent.forced) and parent.step < len(
                self._history) and stutters(self._history[parent.step]) and all(
                t in parent.sleep or self._within_bound(parent, t) for t in parent.tids):
            # The thread tried here only began to wait: the state is the one it left, with
            # that thread parked until the object is free, and the other threads here are
            # explored (or asleep: explored elsewhere) (SCHED-32).  Not where one is over
            # the bound: this level explores it nowhere else (SCHED-46).  That the others
            # are explored is made so, not assumed: a race may have put only this thread
            # in the backtrack set (SCHED-45).  The stutter itself is no repeat: it races
            # with the steps before it (a join tried before the start of the thread it
            # joins), and is analysed.
            parent.backtrack.update(t for t in parent.tids if t not in parent.sleep)
            self._redundant = parent.step + 1
            return {}
        sleep = self._asleep_below(parent)
        if not sleep:
            return sleep  # nothing asleep: no step since can wake a sleeper or run one
        for k in range(parent.step, len(self._history)):
            step = self._history[k]
            if step.thread in sleep:
                self._redundant = k
                return {}
            if stutters(step) and not bounded:
                # It changed nothing another thread could see (SCHED-32); under a bound a
                # sleeper's release moved before it would let it through (SCHED-94).
                continue
            if sleep:
                here = _summary(step.footprint)
                for t in [t for t, fp in sleep.items() if _conflict(fp, here, self._coarse)]:
                    del sleep[t]
        return sleep

    def _asleep_below(self, node: _Node) -> dict[int, _Summary]:
        """The threads asleep right after ``node``'s choice: its own sleepers, and the
        threads explored there before the chosen one (under a bound, those SCHED-94 lets
        sleep)."""
        sleep = dict(node.sleep) if node.sleep else {}
        if len(node.done) > 1:
            for t in node.done:
                if t != node.chosen and t in node.taken and (
                        not self._bounded_sleep or self._sleeps_within_bound(node, t)):
                    sleep[t] = node.taken[t]
        return sleep

    def _sleeps_within_bound(self, node: _Node, t: int) -> bool:
        """Whether ``t``, explored at ``node``, may sleep while its chosen thread is
        (SCHED-94): only where ``t`` could run after its step there, and choosing it costs
        a preemption less than the choice made (it is the running thread, and the choice
        made preempts it).  A schedule that runs that step later, after steps it commutes
        with, then has an equivalent one that runs it first, which costs no more (running
        it there, then switching back, is one preemption, which the later schedule paid
        here), within the bound: explored.  A step after which ``t`` could not run is not
        such a sleeper: moved first, it may leave every other thread blocked where the
        later schedule does not, and virtual time passes there, not in the later one."""
        return t in node.goes_on and node.cost(t) + 1 <= node.cost(node.chosen)

    def _wake_bounded(self, node: _Node, current: int) -> None:
        """Under a bound, a choice point whose default is not the running thread (it
        yields) prunes no sleeper, nor do those below it (SCHED-94): the default after a
        yield is the next thread round-robin, which a sleeper's step moved first may
        change; nor does a sleeper that is the default here (choosing it costs nothing
        here, but may after the step moved first)."""
        if node.current_runnable and node.tids[0] != current:
            node.sleep = {}
        elif node.current_runnable and node.tids[0] in node.sleep:
            del node.sleep[node.tids[0]]

    def _could_go_on(self, steps: Sequence[Step], node: _Node) -> bool:
        """Whether the thread that took ``node``'s step could run right after it (a
        switch to another then costs a preemption); unknown counts as could."""
        k = node.step + 1
        if k >= len(steps):
            return False  # the run ended with it
        after = steps[k]
        if after.choice is not None and after.choice < len(self._path):
            return self._path[after.choice].current_runnable
        return after.thread == node.chosen  # the one thread that could run

    # -- after a run ----------------------------------------------------------

    def end(self, run: FinishedRun) -> None:
        del self._path[self._depth:], self._indices[self._depth:]
        self.schedules += 1
        pruned = bool(getattr(run, "pruned", False))
        if self._reduce:
            steps = getattr(run, "footprints", None) or self._history
            self._check_repeated(steps)
            self._note_steps(steps)
            if self._redundant is None and self._hb.lock_aware and self.bound is None:
                self._redundant = self._awaited_repeat(steps)
            if not pruned and self._redundant is None:
                self.classes += 1
            # The races of every step taken before the run became a repeat (SCHED-33).
            self._add_backtracks(steps[:self._redundant])
            if self._redundant is None:
                self._cut_off(steps, failed=run.failure is not None)
        if not self._backtrack():
            if self._whole:
                self._next_level()
            else:
                self._subtree_done = True

    def _awaited_repeat(self, steps: Sequence[Step]) -> int | None:
        """The step at which this run repeats a sleeper's subtree up to a failed check
        (SCHED-97), or None.  At a choice point this run took afresh (the one it changed,
        or a new one), a thread asleep there (explored there before, or elsewhere) would,
        in this run, next take the first step of a critical section whose notify woke the
        failed check the thread chosen there began there; nothing else before that step
        conflicts with it.  Then the run is, by the await rule, the sleeper's: the section
        first, the waiter's check after it."""
        earliest = None
        for node in self._path[self._fresh_node:]:
            if earliest is not None and node.step >= earliest:
                break
            k = self._repeat_at(node, steps)
            if k is not None and (earliest is None or k < earliest):
                earliest = k
        return earliest

    def _repeat_at(self, node: _Node, steps: Sequence[Step]) -> int | None:
        """``_awaited_repeat`` at one choice point."""
        if node.step >= len(steps):
            return None
        sleepers = self._asleep_below(node)
        waiter = node.chosen
        earliest = None
        for t, summary in sleepers.items():
            k = next((k for k in range(node.step, len(steps)) if steps[k].thread == t), None)
            if k is None or not _waited_before(steps, node.step, k, waiter) or any(
                    steps[m].thread != waiter and _conflict(
                        summary, _summary(steps[m].footprint), self._coarse)
                    for m in range(node.step, k)):
                continue
            # The whole run's analysis, made once (the analysis's view of the run) and only
            # where it may decide.
            checks = self._hb.covered(steps).get(k, frozenset())
            if node.step in checks and all(m in checks for m in range(node.step, k)
                                           if steps[m].thread == waiter):
                earliest = k if earliest is None else min(earliest, k)
        return earliest

    def _note_steps(self, steps: Sequence[Step]) -> None:
        """Remember the step each node's chosen thread took (what a sleeper would do)."""
        for node in self._path[self._fresh_node:]:  # the earlier ones are noted
            if node.step < len(steps) and node.chosen not in node.taken:
                node.taken[node.chosen] = _summary(steps[node.step].footprint)
                if self._bounded_sleep and self._could_go_on(steps, node):
                    node.goes_on.add(node.chosen)

    def _add_backtracks(self, steps: Sequence[Step]) -> None:
        """For each race of the run's new steps, make sure a thread that starts the
        reversed schedule is tried at the choice point before the race's first step."""
        hb = self._hb
        hb.reanalyse(steps, self._fresh)
        if hb.lock_aware and hb.dependence is not None:
            self._coarse = hb.dependence if self._coarse is None else self._coarse.meet(
                hb.dependence)
        if self.max_preemptions is not None:
            for i, j in hb.races:
                self._bounded_backtracks(steps, i, steps[j].thread)
            return
        for i, j in hb.races:
            choice = steps[i].choice
            if choice is None or choice >= len(self._path):
                continue  # only one thread could run there: nothing to reverse
            node = self._path[choice]
            initials = hb.initials(i, j)
            if initials & (node.backtrack | node.done):
                continue
            can = [t for t in node.tids if t in initials]
            if not can:  # not expected: try every thread there rather than miss one
                node.backtrack.update(node.tids)
            else:
                node.backtrack.add(steps[j].thread if steps[j].thread in can else can[0])

    def _bounded_backtracks(self, steps: Sequence[Step], i: int, thread: int) -> None:
        """BPOR's backtrack points for a race whose first step is ``i`` and whose second
        is ``thread``'s (SCHED-71; Coons et al. 2013, for a preemption bound): ``thread``
        (every thread there if it could not run) at the choice point before ``i``, and at
        the one before the latest step ``b < i`` that a switch of threads began: the
        reversed order tried there costs no more preemptions than the run's switch did,
        so it stays within the bound where the one before ``i`` may not.  Where it would
        cost more (the switch was a yield's, which is free, and ``thread`` going on a
        preemption), or ``thread`` is the one that ran there or could not run there, or
        there was no choice, the switch before that too."""
        self._try_at(steps[i].choice, thread)
        b = i
        while b > 0:
            b -= 1
            while b > 0 and steps[b - 1].thread == steps[b].thread:
                b -= 1
            node = self._try_at(steps[b].choice, thread)
            if node is not None and thread in node.tids and node.chosen != thread and (
                    node.cost(thread) <= node.cost(node.chosen)):
                return

    def _try_at(self, choice: int | None, thread: int) -> _Node | None:
        """Try ``thread`` (every thread there if it could not run) at choice point
        ``choice`` of the path; the node, or None where there was no choice."""
        if choice is None or choice >= len(self._path):
            return None
        node = self._path[choice]
        if thread in node.tids:
            node.backtrack.add(thread)
        else:
            node.backtrack.update(node.tids)
        return node

    def _cut_off(self, steps: Sequence[Step], *, failed: bool) -> None:
        """A run that ended (failed, or its last non-daemon thread ended) with other
        threads able to run cut their next steps off: its last step races with each."""
        if not steps:
            return
        last = steps[-1]
        if last.choice is None or last.choice >= len(self._path):
            return
        if failed or any(e.obj == ANY and e.op == "end of run" for e in last.footprint):
            node = self._path[last.choice]
            if self.max_preemptions is None:
                node.backtrack.update(node.tids)
                return
            for t in node.tids:  # and where the last step's block began (SCHED-71)
                self._bounded_backtracks(steps, len(steps) - 1, t)

    def _backtrack(self) -> bool:
        """Move to the deepest choice point with a thread left to try; False when none."""
        while len(self._path) > self._floor:
            node = self._path[-1]
            for t in node.tids:
                if t in node.backtrack and t not in node.done and self._allowed(node, t):
                    node.chosen = t
                    self._fresh = node.step
                    self._fresh_node = len(self._path) - 1
                    self._backtracked = node
                    return True
            self._path.pop()
        return False

    def _next_level(self) -> None:
        """The level is exhausted: search the next bound, or the search is over."""
        if self._level + 1 < len(self._bounds):
            self._level += 1
            self.schedules = self.classes = 0
            self._fresh = self._fresh_node = 0
            self._backtracked = None
            return
        self._exhausted = True

    # -- one subtree of the search, for a worker (PAR-17..PAR-19) ---------------------

    def subtree(self) -> DFSScheduler:
        """This search, from where it stands, as a search of its own subtree only: the
        level it is at, never moving to the next (``subtree_done`` says when it is done)."""
        part = copy.deepcopy(self)
        part._whole = False
        part._seen_above = [set(n.backtrack) for n in part._path[:part._floor]]
        part.schedules = part.classes = 0
        return part

    def rooted(self, depth: int, thread: int) -> DFSScheduler:
        """A search of the subtree where this search's first ``depth`` choice points are
        as on its path now and the next chooses ``thread`` (PAR-17): those ``depth + 1``
        nodes, with their sleep sets, are its root, never backtracked to; its runs replay
        the choices to the root and search below it."""
        part = copy.copy(self)
        part._path = copy.deepcopy(self._path[:depth + 1])
        root = part._path[depth]
        root.chosen = thread
        root.backtrack.add(thread)
        part._indices = self._indices[:depth]
        part._floor = depth + 1
        part._fresh, part._fresh_node, part._backtracked = root.step, depth, root
        part._redundant, part._exhausted, part._subtree_done = None, False, False
        part.__setstate__(part.__getstate__())
        return part.subtree()

    @property
    def root(self) -> int:
        """How many choice points of the path are another search's (0: none)."""
        return self._floor

    @property
    def level(self) -> int:
        """The index of the level (bound) being searched, in ``levels``."""
        return self._level

    def claims(self) -> list[tuple[tuple[int, ...], int]]:
        """Each branch this subtree search has begun or given away, as (the choice point's
        ``key``, thread), at the choice points it may still backtrack to (PAR-18)."""
        return [(self.key(depth), t) for depth in range(self._floor, len(self._path))
                for t in self._path[depth].done]

    def may_take(self, depth: int, thread: int) -> bool:
        """Whether ``thread`` may be tried at choice point ``depth`` of the path: not asleep
        there, not begun there, within the level's bound."""
        node = self._path[depth]
        return thread not in node.done and self._allowed(node, thread)

    @property
    def subtree_done(self) -> bool:
        """Every branch of a ``subtree`` search's subtree is explored."""
        return self._subtree_done

    def split(self) -> DFSScheduler | None:
        """Give away the shallowest branch this subtree search has not begun (PAR-18):
        a ``rooted`` search of it, marked explored here; None when no branch is left
        but the one the next run takes."""
        if self._subtree_done:
            return None
        for depth in range(self._floor, len(self._path)):
            node = self._path[depth]
            for t in node.tids:
                if (t in node.backtrack and t not in node.done and t != node.chosen
                        and self._allowed(node, t)):
                    part = self.rooted(depth, t)
                    node.done.add(t)  # (and no sleeper here: it has no step taken here)
                    return part
        return None

    def above(self) -> list[tuple[int, int]]:
        """The backtrack points this subtree's runs added above its root, as (depth,
        thread), since the last call (PAR-18): the search that owns those choice points
        must try them."""
        found = []
        for depth, seen in enumerate(self._seen_above):
            new = self._path[depth].backtrack - seen
            found.extend((depth, t) for t in sorted(new))
            seen |= new
        return found

    def key(self, depth: int) -> tuple[int, ...]:
        """Which choice point ``depth`` is: the threads chosen before it on the path."""
        return tuple(n.chosen for n in self._path[:depth])

    def owns(self, key: tuple[int, ...]) -> _Node | None:
        """The node at ``key`` if it is one this search may still backtrack to."""
        depth = len(key)
        if not self._floor <= depth < len(self._path):
            return None
        return self._path[depth] if self.key(depth) == key else None

    def at_level(self, level: int) -> DFSScheduler:
        """A fresh search of level ``level`` of the iterative bounds alone (PAR-17)."""
        fresh = DFSScheduler(self.max_preemptions, self.sleep_sets, self.reduce_bound)
        fresh._level = level
        return fresh.subtree()

    @property
    def levels(self) -> int:
        """How many levels (bounds) the search has: the last one decides exhaustion."""
        return len(self._bounds)

    def finish(self, schedules: int, classes: int) -> None:
        """Record that every level was searched elsewhere (PAR-17): this search is
        exhausted, with the counts of the last level."""
        self._level = len(self._bounds) - 1
        self.schedules, self.classes = schedules, classes
        self._exhausted = True
