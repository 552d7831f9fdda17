"""Happens-before over the steps of one run, and the races a DPOR search reverses.

The steps of a run (``Run.footprints``, in the order they ran) are partially
ordered: a step happens before a later one of the same thread (program order)
and before a later step it conflicts with (``points.conflicting``: one object, at
least one write; or either depends on everything).  The ordering is kept as a
vector clock per step.

A *race* (Abdulla et al., "Optimal Dynamic Partial Order Reduction", POPL 2014)
is a pair of conflicting steps ``i < j`` of different threads ordered directly,
not through a third step: running ``j``'s thread before ``i`` may reach a state
no schedule equivalent to this run reaches.  A step that starts or wakes a thread
orders that thread's next step without racing with it: the woken thread could not
have gone first (SCHED-32).  A step that only began to wait on an object that wakes
every waiter (``points.stutters``) reads that object, and neither races with nor orders
anything after it: running a later step first only lets the waiter do its operation
later, which the step that resumes it does.  For the same reason a thread's end does not
race with a join of it, nor an Event's set with a wait, nor a lock's release with a
blocking acquire (``points.lets_proceed``), when the later step does that operation
before anything but joins of ended threads and would have waited (it records no
``try``); the later step still races with what the stutter it would have been
conflicts with: the writes of what it waits for (the one the earlier step replaced: the
thread's start, the Event's clear) and a step that depends on everything (SCHED-47).
A step that depends on everything is ordered after each thread's latest step that is no
stutter (SCHED-45).
Two acquires of one lock race even when ordered through the release between them,
so that the other order of the two critical sections is tried (as Nidhugg orders
mutex locks).  ``initials(i, j)`` is the set of threads that can
start such a reversed schedule from the state before ``i``: the source set.

Pure functions of the steps: nothing here runs anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from operator import attrgetter
from typing import Any, NamedTuple

from coordkit.engine.points import ANY, PROCEEDING, READ, STOPS, WRITE, Effect, Step, lets_proceed, stutters

__all__ = ["Coarsening", "HappensBefore"]

_RUNS = ".run"


_MISSING = object()
_NONE: frozenset[int] = frozenset()
_POP = object()  # an undo entry that takes back an append: (list, _POP, None)
_obj, _op = attrgetter("obj"), attrgetter("op")


class HappensBefore:
    """The happens-before order of a run's ``steps``, and its races.

    ``races`` holds the races whose later step is at or after ``races_from`` (the
    steps before it were analysed in an earlier run).  ``reanalyse`` moves the same
    object on to the next run: a depth-first search's next run repeats a prefix of
    this one, whose analysis is kept rather than done again.
    """

    def __init__(self, steps: Sequence[Step] = (), races_from: int = 0, *,
                 lock_aware: bool = False) -> None:
        self.steps: Sequence[Step] = ()
        self.tid: list[int] = []
        self.pos: list[int] = []  # 1-based position of each step within its thread
        self.clock: list[list[int]] = []
        self.stutter: list[bool] = []
        self.races: list[tuple[int, int]] = []
        # Whether a step that only lets another proceed is spared racing with it
        # (SCHED-32, SCHED-47): not in a bounded search, which has no stutter repeats
        # to make up for it (SCHED-71).
        self.proceeding = True
        # The coarser equivalence (SCHED-80): critical sections that do not conflict
        # commute, and so do waits on a Condition no partial notify observes.
        self.lock_aware = lock_aware
        self._view: _View | None = None  # of the run analysed last
        self._walked: _View | None = None  # the latest made (view_of)
        self._n = 0  # threads a clock has room for
        # What analysing the next step reads, and how to take each step back: the
        # changes a step made, as (container, key, value before) (_MISSING: no key).
        self._last: list[int] = []  # each thread's latest step
        self._count: list[int] = []
        self._writer: dict[str, int] = {}
        self._readers: dict[str, list[int]] = {}  # since the object's latest write
        self._last_any = -1
        # Per step, what it replaced: its thread's previous latest step, and _last_any
        # (the writers it replaced are in its undo entries).
        self._last_before: list[int] = []
        self._any_before: list[int] = []
        self._last_acquire: dict[str, int] = {}  # lock -> the acquire that began its latest hold
        self._holds: dict[str, tuple[int, int]] = {}  # lock -> (holder, how many times it holds it)
        self._undo: list[list[tuple[Any, Any, Any]]] = []
        self.reanalyse(steps, races_from)

    def reanalyse(self, steps: Sequence[Step], races_from: int = 0) -> None:
        """Analyse ``steps``, a run whose first ``races_from`` steps are those of the run
        analysed last (the same operations, in the same order, with the same labels):
        only the steps from ``races_from`` on are analysed again."""
        if self.lock_aware:
            view = self.view_of(steps)
            if self._view is None or view.dependence != self._view.dependence:
                races_from = 0  # decided on the whole run: the kept analysis used another
            else:
                races_from = min(races_from, _first_change(self._view.covered, view.covered))
            self._view = view
        self._truncate(min(races_from, len(self.tid)))
        self.steps = steps
        self.races = []
        self._room(max((s.point.thread for s in steps[len(self.tid):]), default=-1) + 1)
        for j in range(len(self.tid), len(steps)):
            self._add(j, j >= races_from)

    def view_of(self, steps: Sequence[Step]) -> _View:
        """The lock-aware view of ``steps`` (SCHED-80), walking only the steps after
        those it shares with the latest view made."""
        walked = self._walked
        if walked is None or walked.steps is not steps:
            walked = self._walked = _View(steps, walked)
        return walked

    def covered(self, steps: Sequence[Step]) -> dict[int, frozenset[int]]:
        """For each step of ``steps`` in a critical section whose notify woke failed
        checks, those checks' steps (SCHED-96)."""
        return self.view_of(steps).covered

    @property
    def dependence(self) -> Coarsening | None:
        """The lock-aware equivalence's dependence in the run analysed last (None: trace
        equivalence)."""
        return self._view.dependence if self._view is not None else None

    def hb(self, i: int, j: int) -> bool:
        """Step ``i`` happens before (or is) step ``j``."""
        return i == j or (i < j and self.clock[j][self.tid[i]] >= self.pos[i])

    def _room(self, n: int) -> None:
        """Make room for ``n`` threads in every clock."""
        if n <= self._n:
            return
        grow = [0] * (n - self._n)
        for clock in self.clock:
            clock.extend(grow)
        self._last.extend([-1] * (n - self._n))
        self._count.extend(grow)
        self._n = n

    def _truncate(self, keep: int) -> None:
        """Take back the analysis of every step from ``keep`` on."""
        undo, tid, count, last = self._undo, self.tid, self._count, self._last
        while len(undo) > keep:
            j = len(undo) - 1
            for container, key, before in reversed(undo.pop()):
                if key is _POP:
                    container.pop()
                elif before is _MISSING:
                    del container[key]
                else:
                    container[key] = before
            t = tid[j]
            count[t] -= 1
            last[t] = self._last_before[j]
            self._last_any = self._any_before[j]
        del tid[keep:], self.pos[keep:], self.clock[keep:], self.stutter[keep:]
        del self._last_before[keep:], self._any_before[keep:]

    def _add(self, j: int, find_races: bool) -> None:
        """Analyse step ``j``: its clock, and (``find_races``) its races."""
        step = self.steps[j]
        t = step.point.thread
        changes: list[tuple[Any, Any, Any]] = []
        self._undo.append(changes)
        last, count = self._last, self._count
        last_t = last[t]
        self._last_before.append(last_t)
        last[t] = j
        last_any = self._last_any
        self._any_before.append(last_any)
        count[t] = n = count[t] + 1
        self.tid.append(t)
        self.pos.append(n)
        stutter = stutters(step)
        self.stutter.append(stutter)
        if not step.footprint and last_any < 0:  # a step that touched nothing shared
            self._merge_clock(t, n, set(), last_t)
            return
        footprint = step.footprint
        view = self._view
        if view is not None:
            footprint = view.dependence.coarse(footprint)
        if stutter:
            footprint = _as_read(footprint)
        deps, enablers, is_any = _dependencies(footprint, self._writer, self._readers, last_any)
        if view is not None and j in view.covered:
            deps -= view.covered[j]  # failed checks this section's notify re-runs (SCHED-96)
        if is_any:  # it conflicts with every step: each thread's latest orders it
            deps.update(k for k in self._latest() if 0 <= k < j)
        preds = self._merge_clock(t, n, deps, last_t)
        acquired = [] if stutter else _holds_begun(step, self._holds, changes)
        if view is not None and acquired:
            acquired = [lock for lock in acquired if lock not in view.relaxed]
        if find_races:
            start = len(self.races)
            candidates = {i for i in deps - enablers if not self.stutter[i]}
            let_proceed, as_stutter = self._let_proceed(
                step, footprint, candidates, last_t) if self.proceeding else (_NONE, _NONE)
            if let_proceed:
                as_stutter = as_stutter - enablers
                candidates -= let_proceed
                # Ordered as the stutter would have been: after its thread's previous
                # step and what it conflicts with, not after what ``j`` did once it
                # proceeded (a read of what the joined thread wrote).
                self._races_into(j, as_stutter, as_stutter | {last_t} if last_t >= 0 else as_stutter)
            self._races_into(j, candidates - as_stutter, preds)
            self._lock_races(j, acquired, start)
            if view is not None and view.relaxed:
                self._races_of_sections(view, start)
        for lock in acquired:
            _set(self._last_acquire, lock, j, changes)
        if is_any:
            self._last_any = j
        elif not stutter:  # a stutter orders nothing of another thread's
            _index(footprint, j, self._writer, self._readers, changes)

    def _latest(self) -> list[int]:
        """Each thread's latest step that is no stutter (-1: none): what a step that
        depends on everything is ordered after.  A stutter orders nothing after it
        (SCHED-45): through it, a step would be ordered after what its thread did before
        it, and so race with none of that, yet race with the stutter neither."""
        stutter, before = self.stutter, self._last_before
        latest = []
        for k in self._last:
            while k >= 0 and stutter[k]:
                k = before[k]
            latest.append(k)
        return latest

    def _let_proceed(self, step: Step, footprint: list[Effect], candidates: set[int],
                     last_t: int) -> tuple[AbstractSet[int], AbstractSet[int]]:
        """The ``candidates`` that only let ``step`` proceed (SCHED-32), and the steps that
        race with ``step`` unless a step other than those orders them (SCHED-47).

        Run before one of the former, ``step`` would have waited (the precondition
        ``_only_lets_proceed`` checks): no race.  It would have been a stutter, a read of
        what it waits for (``_waiting_objects``), which conflicts with each write of that
        before it: the latest, the ones the former replaced (before which it would not
        have waited: a thread not started, an Event cleared), and a step that depends on
        everything.  Less those ordered before ``last_t``, its thread's previous step."""
        steps = self.steps
        if PROCEEDING.isdisjoint(map(_op, footprint)) or "resume" in map(_op, step.footprint):
            # Never a step that resumes a wait: its thread was woken by another step (a
            # timeout, a notify), so it could run before the candidate, and would not
            # have waited there (SCHED-32).
            return _NONE, _NONE
        todo = [i for i in candidates if _only_lets_proceed(steps[i], step)]
        if not todo:
            return _NONE, _NONE
        waiting = _waiting_objects(footprint, {e.obj for i in todo for e in steps[i].footprint
                                               if e.access == WRITE})
        writer = self._writer
        conflicting = {writer[obj] for obj in waiting if obj in writer}
        conflicting.add(self._last_any)
        let: set[int] = set()
        while todo:
            i = todo.pop()
            let.add(i)
            for container, obj, before in self._undo[i]:  # the writes ``i`` replaced
                if container is writer and obj in waiting and before is not _MISSING and (
                        before not in let and before not in conflicting):
                    conflicting.add(before)
                    if _only_lets_proceed(steps[before], step):
                        todo.append(before)
        conflicting -= let
        conflicting.discard(-1)
        mine = self.clock[last_t] if last_t >= 0 else None
        tid, pos, stutter = self.tid, self.pos, self.stutter
        return let, {w for w in conflicting if not stutter[w] and (
            mine is None or mine[tid[w]] < pos[w])}

    def _merge_clock(self, t: int, n: int, deps: set[int], last_t: int) -> set[int]:
        """Append the clock of a step of thread ``t`` (its ``n``-th) that conflicts with
        ``deps`` and follows ``last_t``, and return its direct predecessors.  Drops from
        ``deps`` the steps that happen before ``last_t``: they order nothing more and race
        with nothing (most do: a thread's start orders it after all its starter did)."""
        clocks = self.clock
        if last_t >= 0 and deps:
            mine, tid, pos = clocks[last_t], self.tid, self.pos
            deps.intersection_update([i for i in deps if mine[tid[i]] < pos[i]])
        preds = set(deps)
        if last_t >= 0:
            preds.add(last_t)
        if not preds:
            clock = [0] * self._n
        elif len(preds) == 1:
            clock = list(clocks[next(iter(preds))])
        else:
            clock = list(map(max, *[clocks[k] for k in preds]))
        clock[t] = n
        clocks.append(clock)
        return preds

    def _races_into(self, j: int, candidates: set[int], preds: set[int]) -> None:
        """The races ``(i, j)``: a conflicting step ``i`` of another thread not ordered
        before ``j`` through another of ``j``'s predecessors."""
        t = self.tid[j]
        for i in sorted(candidates):
            if self.tid[i] == t:
                continue
            ti, pi = self.tid[i], self.pos[i]
            if not any(k != i and self.clock[k][ti] >= pi for k in preds):
                self.races.append((i, j))

    def _lock_races(self, j: int, acquired: list[str], start: int) -> None:
        """Acquire against acquire: the previous critical section of each lock ``j`` takes,
        by another thread, races with ``j``'s (unless a race from ``start`` on has it)."""
        for lock in acquired:
            i = self._last_acquire.get(lock)
            if i is not None and self.tid[i] != self.tid[j] and (i, j) not in self.races[start:]:
                self.races.append((i, j))

    def _races_of_sections(self, view: _View, start: int) -> None:
        """A race from ``start`` on whose first step is inside a critical section of a
        relaxed lock, and whose second step's thread took that lock since, is the race of
        the two critical sections: their acquires (SCHED-80).  Only running the second
        thread's section first reverses it (before the first step, its thread holds the
        lock the second thread needs)."""
        races = self.races
        for k in range(start, len(races)):
            i, j = races[k]
            mapped = view.sections_race(i, j)
            if mapped is not None and mapped not in races[start:]:
                races[k] = mapped
        if len(races) - start > 1:
            races[start:] = list(dict.fromkeys(races[start:]))

    def initials(self, i: int, j: int) -> set[int]:
        """The threads that can start ``v = notdep(i).j``: the steps after ``i`` that do
        not happen after it, then ``j``; a thread is an initial when its first step in
        ``v`` has no predecessor in ``v``."""
        v = [k for k in range(i + 1, j) if not self.hb(i, k)]
        v.append(j)
        first: dict[int, int] = {}  # thread -> its first step in v
        out = set()
        for k in v:
            u = self.tid[k]
            if u in first:
                continue
            ck = self.clock[k]
            if not any(ck[w] >= self.pos[m] for w, m in first.items()):
                out.add(u)
            first[u] = k
        return out


def _set(container: dict[Any, Any], key: Any, value: Any,
         changes: list[tuple[Any, Any, Any]]) -> None:
    """``container[key] = value``, noting in ``changes`` how to take it back."""
    changes.append((container, key, container.get(key, _MISSING)))
    container[key] = value


def _holds_begun(step: Step, holds: dict[str, tuple[int, int]],
                 changes: list[tuple[Any, Any, Any]]) -> list[str]:
    """The locks ``step`` took while they were free, keeping ``holds`` (each held lock's
    holder and depth) up to date.  An RLock's re-entry begins no hold; an acquire while
    another thread holds the lock did not take it (a try that failed, or a wait that
    timed out)."""
    begun = []
    t = step.thread
    footprint = step.footprint
    ops = set(map(_op, footprint))
    waits = "park" in ops  # a Condition.wait lets go entirely
    if "resume" in ops:
        # A resumed wait: its opening effect is the operation it began before it parked,
        # which took nothing; what it did on waking follows ``resume`` (an acquire it
        # retried).  Counted twice, a lock's one hold would look like a re-entry.
        footprint = footprint[1:]
    for e in footprint:
        if not e.obj.startswith(("Lock#", "RLock#")):
            continue
        held = holds.get(e.obj)
        if e.op == "acquire":
            if held is None:
                _set(holds, e.obj, (t, 1), changes)
                begun.append(e.obj)
            elif held[0] == t:
                _set(holds, e.obj, (t, held[1] + 1), changes)
        elif e.op == "release" and held is not None and held[0] == t:
            depth = 0 if waits else held[1] - 1
            if depth:
                _set(holds, e.obj, (t, depth), changes)
            else:
                changes.append((holds, e.obj, held))
                del holds[e.obj]
    return begun


def _only_lets_proceed(earlier: Step, later: Step) -> bool:
    """The first conflict between the two steps, in ``later``'s order, is one where
    ``earlier`` only lets ``later`` proceed (``points.lets_proceed``), and ``later`` does
    nothing before it but reads (run first, it would have waited there, having changed
    nothing; the reads commute with ``earlier``): not a race.  What ``later`` does after
    that operation (a read of what ``earlier`` wrote, code whose effects are unknown) it
    could not have done before ``earlier``.  A join of an ended thread is no point of
    its own, so it may be inside a line's step, or follow another join (or a read of the
    list of threads it joins) in one step.  (``later`` resumes no wait: the caller
    checks, SCHED-32.)"""
    objs = set(map(_obj, earlier.footprint))
    if ANY in objs:
        return False
    footprint = later.footprint
    for k, e in enumerate(footprint):
        if e.obj == ANY:
            return False
        if e.obj in objs and _conflicts(e, earlier.footprint):
            # That operation, and what else ``later`` does to its object (the ``try`` of
            # one that may give up: SCHED-46).
            return all(lets_proceed(x, y) for y in footprint[k:] if y.obj == e.obj
                       for x in _conflicts(y, earlier.footprint))
        if e.access != READ:
            return False
    return False


def _conflicts(e: Effect, footprint: list[Effect]) -> list[Effect]:
    """The effects of ``footprint`` that conflict with ``e``: its object, one a write."""
    return [x for x in footprint if x.obj == e.obj and (x.access == WRITE or e.access == WRITE)]


def _waiting_objects(footprint: list[Effect], released: set[str]) -> set[str]:
    """The objects a step that was let proceed touched up to its last operation on an
    object in ``released`` (written by the steps that let it proceed): its reads before
    it, the joins of ended threads, the operation.  What it would have read, had it only
    begun to wait; not what it did once it proceeded."""
    objs: set[str] = set()
    upto: set[str] = set()
    for e in footprint:
        objs.add(e.obj)
        if e.op in PROCEEDING and e.obj in released:
            upto = set(objs)
    return upto


def _as_read(footprint: list[Effect]) -> list[Effect]:
    return [e._replace(access=READ) for e in footprint]


def _dependencies(footprint: list[Effect], writer: dict[str, int], readers: dict[str, list[int]],
                  last_any: int) -> tuple[set[int], set[int], bool]:
    """The earlier steps a step with ``footprint`` conflicts with directly (enough to order
    it after every step it conflicts with), those of them that started or woke its thread,
    and whether it depends on everything (then each thread's latest step is a dependency
    too, which the caller adds)."""
    deps: set[int] = set()
    enablers: set[int] = set()
    is_any = False
    for e in footprint:
        if e.obj == ANY:
            is_any = True
            continue
        if e.op == STOPS:  # for sleep sets only (points.STOPS)
            continue
        w = writer.get(e.obj)
        if w is not None:
            deps.add(w)
            if e.access == READ and e.obj.endswith(_RUNS):
                enablers.add(w)
        if e.access == WRITE:
            deps.update(readers.get(e.obj, ()))
    if last_any >= 0:
        deps.add(last_any)
    return deps, enablers, is_any


def _index(footprint: list[Effect], j: int, writer: dict[str, int],
           readers: dict[str, list[int]], changes: list[tuple[Any, Any, Any]]) -> None:
    """Record step ``j`` as the latest writer or a reader of each object it touched (the
    writer it replaced is in ``changes``)."""
    written = {e.obj for e in footprint if e.access == WRITE}
    for e in footprint:
        obj = e.obj
        if obj in written or e.op == STOPS:
            continue
        seen = readers.get(obj)
        if seen is None:
            seen = readers[obj] = []
            changes.append((readers, obj, _MISSING))
        seen.append(j)
        changes.append((seen, _POP, None))
    for obj in written:  # (as _set does)
        changes.append((writer, obj, writer.get(obj, _MISSING)))
        writer[obj] = j
        changes.append((readers, obj, readers.get(obj, _MISSING)))
        readers[obj] = []  # the list it replaces is left as it was


_LOCKS = ("Lock#", "RLock#")
_ON_CONDITION = frozenset({"notify", "choose", "wait"})


class Coarsening(NamedTuple):
    """The lock-aware equivalence's dependence in one run (SCHED-80, SCHED-81): the locks
    whose effects order nothing (``relaxed``), and the Conditions whose waiters' order a
    notify reads (``observed``)."""

    relaxed: frozenset[str]
    observed: frozenset[str]

    def coarse(self, footprint: list[Effect]) -> list[Effect]:
        """``footprint`` as the coarser equivalence sees it: no effect on a relaxed lock;
        a wait on a Condition no notify observes the waiters' order of is a read."""
        relaxed, observed = self.relaxed, self.observed
        out = []
        for e in footprint:
            if e.obj in relaxed:
                continue
            if e.op == "wait" and e.access == WRITE and e.obj.startswith("Condition#") and (
                    e.obj not in observed):
                e = e._replace(access=READ)
            out.append(e)
        return out

    def meet(self, other: Coarsening) -> Coarsening:
        """What both runs' dependences make dependent (for sleep sets, which compare a
        step of one run with the steps of another)."""
        return Coarsening(self.relaxed & other.relaxed, self.observed | other.observed)


_Sets = tuple[frozenset[str], frozenset[str], frozenset[str]]


class _View:
    """What the lock-aware equivalence reads of a complete run (SCHED-80, SCHED-81):
    its ``dependence``, and who held which lock before each step.

    A lock is *relaxed* when each of its holds in the run is a plain critical section
    (memory accesses, notifies, a Condition wait that ends it: no other lock taken or
    held, nothing that blocks, ends or starts a thread, no code whose effects are
    unknown), and no acquire of it was tried or timed out (a ``try``, a ``locked()``),
    and none is held when the run ends.  A Condition is *observed* when a notify woke
    some of its waiters but not all (``choose``): it read the order in which they began
    to wait.

    The walk over the steps is kept, step by step: a view of a run that begins with
    another view's steps (the same ``Step`` objects: a search's next run, or a prefix of
    the run) walks only the steps after them (``previous``).  The dependence and the
    await rule are read off the whole run, again for each view."""

    def __init__(self, steps: Sequence[Step], previous: _View | None = None) -> None:
        self.steps = steps
        # Per step: the locks held (by whom, how deep) and the acquire that began each
        # hold, after it; what its thread held before it, the holds it began, and what its
        # thread holds after it (for the await rule); who held which lock before it, as
        # (lock, the acquire that began the hold).
        self._after: list[tuple[dict[str, tuple[int, int]], dict[str, int], _Sets]] = []
        self._facts: list[tuple[frozenset[str], list[str], set[str]]] = []
        self.held_before: list[tuple[tuple[str, int], ...]] = []
        self.acquires: dict[tuple[int, str], list[int]] = {}  # (thread, lock) -> acquires
        self._sets: _Sets = (frozenset(), frozenset(), frozenset())  # not plain, locks, observed
        holds: dict[str, tuple[int, int]] = {}
        begun_at: dict[str, int] = {}
        keep = _same_steps(previous.steps, steps) if previous is not None else 0
        if previous is not None and keep:
            held, began, self._sets = previous._after[keep - 1]
            holds, begun_at = dict(held), dict(began)
            self._after = previous._after[:keep]
            self._facts = previous._facts[:keep]
            self.held_before = previous.held_before[:keep]
            self.acquires = {key: [k for k in ks if k < keep]
                             for key, ks in previous.acquires.items() if ks[0] < keep}
        self._walk(steps, keep, holds, begun_at)
        self.threads = [step.thread for step in steps]
        not_plain, locks, observed = self._sets
        not_plain = not_plain | frozenset(holds)  # held when the run ended: a deadlock, or never released
        self.dependence = Coarsening(locks - not_plain, observed)
        self.relaxed = self.dependence.relaxed
        self.covered = _Awaits(self.relaxed, self.dependence.observed).read(steps, self._facts)

    def _walk(self, steps: Sequence[Step], start: int, holds: dict[str, tuple[int, int]],
              begun_at: dict[str, int]) -> None:
        """Read steps ``start`` on, from the state after the one before."""
        not_plain, locks, observed = (set(x) for x in self._sets)
        sizes = len(not_plain), len(locks), len(observed)
        for k in range(start, len(steps)):
            step = steps[k]
            t = step.thread
            self.held_before.append(tuple((lock, begun_at[lock]) for lock in holds))
            inside = {lock for lock, (h, _) in holds.items() if h == t}
            stutter = stutters(step)
            begun = [] if stutter else _holds_begun(step, holds, [])
            for lock in begun:
                begun_at[lock] = k
                self.acquires.setdefault((t, lock), []).append(k)
            still = {lock for lock, (h, _) in holds.items() if h == t}
            self._facts.append((frozenset(inside), begun, still))
            _classify(step, stutter, inside, set(begun), still, locks, not_plain, observed)
            if sizes != (len(not_plain), len(locks), len(observed)):  # (they only grow)
                sizes = len(not_plain), len(locks), len(observed)
                self._sets = frozenset(not_plain), frozenset(locks), frozenset(observed)
            self._after.append((dict(holds), dict(begun_at), self._sets))

    def sections_race(self, i: int, j: int) -> tuple[int, int] | None:
        """The race that reverses race ``(i, j)`` of the run's steps where a relaxed lock
        makes it so, or None: where ``j``'s thread takes a relaxed lock after ``i`` and by
        ``j`` that another thread holds before ``i`` (run there, it would only wait), the
        race of the two critical sections: the acquire that began the holder's, and
        ``j``'s thread's first acquire of the lock after ``i``.  Of the locks that
        qualify, the section that began first; again from there (SCHED-80)."""
        tj = self.threads[j]
        out = None
        while True:
            best = None
            for lock, a in self.held_before[i]:
                if lock not in self.relaxed or self.threads[a] == tj:
                    continue
                later = self.acquires.get((tj, lock), ())
                b = next((b for b in later if i < b <= j), None)
                if b is not None and (best is None or a < best[0]):
                    best = (a, b)
            if best is None:
                return out
            out = best
            i = best[0]


def _same_steps(before: Sequence[Step], now: Sequence[Step]) -> int:
    """How many steps ``now`` begins with that are ``before``'s (the same objects)."""
    n = min(len(before), len(now))
    for k in range(n):
        if before[k] is not now[k]:
            return k
    return n


def _classify(step: Step, stutter: bool, inside: set[str], begun: set[str], still: set[str],
              locks: set[str], not_plain: set[str], observed: set[str]) -> None:
    """Read one step for ``_View``: the locks it touches, those whose section it makes
    not plain, the Conditions whose waiters' order it observes.  ``inside``: the locks
    its thread holds before it (changed as its effects take and let go of locks);
    ``begun``: the holds it began; ``still``: the locks its thread holds after it."""
    footprint = step.footprint
    if any(e.op == "resume" for e in footprint):
        footprint = footprint[1:]  # its opening effect took nothing (_holds_begun)
    for e in footprint:
        obj = e.obj
        if e.op == "opaque":  # a library's lock: its sections run untraced code
            not_plain.add(obj.rpartition(".")[0])
        elif obj.startswith(_LOCKS):
            locks.add(obj)
            if e.op == "acquire" and obj in begun and obj not in inside:
                if inside:  # nested: the order of two such sections may deadlock
                    not_plain.update(inside)
                    not_plain.add(obj)
                inside.add(obj)
            elif e.op == "acquire":
                if obj not in inside and not stutter:
                    not_plain.add(obj)  # an acquire that took nothing: tried, timed out
            elif e.op == "release":
                if obj in inside and obj not in still:
                    inside.discard(obj)
            else:
                not_plain.add(obj)  # a try, a locked()
        elif e.op == "choose":
            observed.add(obj)
        elif inside and not _plain_in_section(e):
            not_plain.update(inside)


def _plain_in_section(e: Effect) -> bool:
    """What a critical section may do and still commute with another that does not
    conflict with it (SCHED-80): touch memory, notify a Condition (waking its waiters),
    begin to wait on one (which lets go of the lock: its section ends there)."""
    obj = e.obj
    return obj.startswith("mem") or (obj.startswith("Condition#") and e.op in _ON_CONDITION) or (
        obj.endswith(".run") and e.op == "wake")


def _first_change(before: dict[int, frozenset[int]], after: dict[int, frozenset[int]]) -> int:
    """The first step whose covered checks (``_View.covered``) differ between two runs
    (a number past every step when none does): the analysis of the steps before it stands."""
    changed = [j for j in before.keys() | after.keys() if before.get(j) != after.get(j)]
    return min(changed, default=1 << 62)


_CHECK_OPS = frozenset({"wait", "waits"})  # what a check does to the Condition it waits on
_WAKE_OPS = frozenset({"wake", "resume"})  # a waiter woken, or resumed after a timeout


class _Awaits:
    """The await rule (SCHED-96), read off a complete run: which steps of a while-loop's
    failed check commute with which steps of the critical section whose notify wakes it.

    A *failed check* is what a thread did in a hold of a relaxed lock since the last step
    of that hold that did more than read: it read (the loop's predicate), then began to
    wait on a Condition of that lock, which no notify of the run chose among its waiters
    (SCHED-81).  When a notify of that Condition, in another thread's hold of the same
    lock, woke it, no step of that hold is ordered after the check or races with it: run
    before the check, the hold would have been over before the check could take the lock,
    so the check would have read what the woken thread's check, which re-takes the lock
    after the hold, reads.  A write that makes the predicate true in a hold that wakes no
    waiter (a lost wake-up), a write without the lock, and a wait that timed out keep
    their races."""

    def __init__(self, relaxed: frozenset[str], observed: frozenset[str]) -> None:
        self.relaxed, self.observed = relaxed, observed
        self.section: dict[str, list[int]] = {}  # relaxed lock -> its current hold's steps
        # relaxed lock -> the checks its current hold's notifies woke (steps, read before)
        self.woken: dict[str, list[tuple[list[int], frozenset[str]]]] = {}
        self.checking: dict[int, list[int]] = {}  # thread -> its check steps in its hold
        # A waiting thread's `<label>.run` -> (Condition, lock, its check's steps, what the
        # check's first step read before it took the lock, if it took it).
        self.waiting: dict[str, tuple[str, str, list[int], frozenset[str]]] = {}
        self.before_acquire: dict[int, frozenset[str]] = {}  # thread -> (the latter)
        self.covered: dict[int, frozenset[int]] = {}

    def read(self, steps: Sequence[Step], holds: Sequence[tuple[AbstractSet[str], list[str],
                                                                AbstractSet[str]]],
             ) -> dict[int, frozenset[int]]:
        """For each step of a hold whose notify woke failed checks, their steps.
        ``holds``: for each step, the locks its thread held before it, the holds it
        began, and the locks its thread holds after it (``_View``'s walk)."""
        if not self.relaxed:
            return self.covered
        for k, step in enumerate(steps):
            t = step.thread
            held, begun, still = holds[k]
            mine = [lock for lock in (*held, *begun) if lock in self.relaxed]
            for lock in begun:
                if lock in self.relaxed:
                    self.section[lock], self.woken[lock] = [], []
            for lock in mine:
                self.section[lock].append(k)
            self._check(k, step, t, begun, bool(mine))
            if self.waiting:
                self._wakes(step, mine)
            for lock in mine:
                if lock not in still:  # the hold ended
                    self._cover(lock, steps)
        return self.covered

    def _check(self, k: int, step: Step, t: int, begun: list[str], in_hold: bool) -> None:
        """Note step ``k`` of thread ``t`` in its failed check, or end the check."""
        if not in_hold:
            self.checking.pop(t, None)
            return
        only_reads = all(e.access == READ or e.obj in self.relaxed or (
            e.op in _CHECK_OPS and e.obj.startswith("Condition#")) for e in step.footprint)
        if begun:
            self.checking[t] = [k] if only_reads else []
            self.before_acquire[t] = _read_before(step.footprint, begun[0]) if only_reads else (
                frozenset())
        elif only_reads:
            self.checking.setdefault(t, []).append(k)
        else:
            self.checking[t], self.before_acquire[t] = [], frozenset()
        point = step.point
        if not only_reads or point.op != "wait" or point.obj in self.observed or (
                not point.obj.startswith("Condition#")):
            return
        released = [e.obj for e in step.footprint if e.op == "release" and e.obj in self.relaxed]
        parked = [e.obj for e in step.footprint if e.op == "park"]
        if released and parked and self.checking[t]:
            self.waiting[parked[0]] = (point.obj, released[0], self.checking.pop(t),
                                       self.before_acquire.get(t, frozenset()))

    def _wakes(self, step: Step, mine: list[str]) -> None:
        """Note the failed checks a notify of ``step``, in a hold of ``mine``, woke."""
        woke = [e for e in step.footprint if e.op in _WAKE_OPS]
        if not woke:
            return
        notified = {e.obj for e in step.footprint if e.op == "notify"}
        for e in woke:
            waited = self.waiting.pop(e.obj, None)  # woken, or resumed after a timeout
            if waited is not None and e.op == "wake" and waited[0] in notified and (
                    waited[1] in mine):
                self.woken[waited[1]].append(waited[2:])

    def _cover(self, lock: str, steps: Sequence[Step]) -> None:
        """The hold of ``lock`` ended: its steps and the checks it woke commute.  Not the
        step that took the lock for a check if it read, before taking it, what the hold
        wrote: run after the hold, that read would have read otherwise, and the woken
        check does not read it again."""
        section = self.section.pop(lock)
        woken = self.woken.pop(lock)
        if not woken:
            return
        written = {e.obj for j in section for e in steps[j].footprint if e.access == WRITE}
        checks = set()
        for check, read_before in woken:
            checks.update(check[1:] if read_before & written else check)
        if not checks:
            return
        for j in section:
            self.covered[j] = self.covered.get(j, frozenset()) | checks


def _read_before(footprint: list[Effect], lock: str) -> frozenset[str]:
    """What a step read before it took ``lock``."""
    out = set()
    for e in footprint:
        if e.obj == lock and e.op == "acquire":
            break
        out.add(e.obj)
    return frozenset(out)
