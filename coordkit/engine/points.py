"""What a thread is about to do (a point), and what a step did (its footprint).

A *point* is a place where the running thread lets the scheduler decide: which
thread, which operation, on which object.  The scheduler is asked one question
with that information, ``choose(point, enabled)``: ``point`` is the running
thread's, ``enabled`` the points of every thread that could run next, in the
order whose index 0 is the default (keep going, or the next thread round-robin).

A *step* is what one thread runs after one decision of the runtime: from the
point it was chosen at (or resumed at, after a wait) to its next point, wait or
end.  It may do more than its opening operation: a ``Condition.wait`` also
releases the lock, a thread's last step also ends the thread and wakes its
joiners.  Its *footprint* is every shared effect it had.  Whatever asks "do these
two steps commute?" (partial-order reduction, race detection, reports) reads
footprints, never labels (SCHED-30).

Two kinds of effect are not about one object:

* ``ANY``: the step depends on everything (it moved the virtual clock, polled, ended
  the run, read every thread, ran an invariant, or ran code whose accesses are not
  known): it conflicts with every step (SCHED-31);
* ``<thread>.run`` (``runs(label)``): a step that starts or wakes a thread writes it,
  a step that parks its thread reads it (``park``), and the woken thread's next step
  reads it (``resume``).  It orders the two (the woken thread
  could not have run first) without making them a race to reverse (SCHED-32).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any, NamedTuple

__all__ = [
    "ANY", "READ", "WRITE", "Effect", "Point", "Step", "access_of", "label_of", "opening_effects",
    "conflicting", "memory_label", "runs",
    "DAEMONS", "ENDS", "PROCEEDING", "STOPS", "THREADS", "lets_proceed", "stutters",
]

READ = "read"
WRITE = "write"
# The object of an effect that conflicts with every step (see the module docstring).
ANY = "*"
_RUNS = ".run"

# Operations that only look: two of them on one object commute.  Every other
# operation on an object is a write of it.
_READ_OPS = frozenset({
    "is_set", "locked", "empty", "qsize", "is_alive", "join", "line",
    "enumerate", "active_count", "try",
})
# The op of a read that made a step end where it did: a join of a thread that had not
# ended takes a scheduling point, of one that had, none (SCHED-49).  Sleep sets see it
# (had the thread ended first, the step would have gone on past the join); the
# happens-before order does not: run in the other order, the two steps reach what
# running the joiner's step first, then the end, then the rest of the joiner's reaches.
STOPS = "stops"
# The object every thread's start writes (thread ids are handed out in order), and an
# observation of a thread not started yet reads (SCHED-49).
THREADS = "threads"
# What decides which step ends the program (SCHED-31): whether a daemon has started, which a
# daemon's start writes and every other thread's end reads; and then the ends, which every
# other thread's end reads and the one that leaves a single thread to end writes.
DAEMONS = "daemons"
ENDS = "ends"


def access_of(op: str) -> str:
    """How ``op`` touches its object: ``READ`` or ``WRITE``."""
    return READ if op in _READ_OPS else WRITE


def runs(label: str) -> str:
    """The object a step writes when it starts or wakes thread ``label``."""
    return label + _RUNS


# Operations whose shared effects the runtime cannot name: ``enumerate`` and
# ``active_count`` read every thread; a line or a store runs code whose memory
# accesses are unknown unless a tracer reports them.
_READS_EVERYTHING = frozenset({"enumerate", "active_count"})
_UNKNOWN_CODE = frozenset({"line", "store"})


# Objects whose wait is over once woken: resumed, it reads nothing of its object (SCHED-95).
_WAITS_DONE_WHEN_WOKEN = ("Condition#", "Event#")


def opening_effects(point: Point, label: str, *, memory_traced: bool,
                    resumed: bool = False) -> list[Effect]:
    """The effects a step has by the point it opens with: its operation on its object;
    for a thread's first step (``start`` of itself), that it was started; ``ANY`` where
    the runtime cannot know what the step touches (SCHED-31).  A ``resumed`` step opens
    at the point its thread parked at; a Condition's or an Event's wait then touches its
    object no more (SCHED-95): it began to wait in the step that parked, and the notify,
    set or timeout that woke it took it off the waiters and decided what it returns."""
    op, obj = point.op, point.obj
    if resumed and op == "wait" and obj.startswith(_WAITS_DONE_WHEN_WOKEN):
        return []
    if op == "line":  # most steps of a line-granularity run
        return [] if memory_traced else [Effect(ANY, WRITE, op)]
    if op == "start" and obj == label:
        return [Effect(runs(label), READ, "begin")]
    if op in _READS_EVERYTHING or (op in _UNKNOWN_CODE and not memory_traced):
        return [Effect(ANY, WRITE, op)]
    return [Effect(obj, access_of(op), op)] if obj else []


# Objects whose waiters are all woken at once (a Lock's release, an Event's set, a
# thread's end): the order in which threads began waiting on them cannot matter.
_WAKES_EVERY_WAITER = ("Lock#", "RLock#", "Event#")


def _wakes_every_waiter(obj: str) -> bool:
    return obj.startswith(_WAKES_EVERY_WAITER) or (obj[:1] == "T" and obj[1:].isdigit())


# (earlier, later) operations on one such object where the earlier only lets the later
# go on: had the later run first, it would have waited for the earlier (a stutter).  That
# precondition is checked, not assumed (SCHED-46): an operation that may give up instead
# (a join or Event.wait with a timeout, 0 included; a non-blocking or timed acquire)
# records a "try" of its object, which no earlier operation only lets proceed.
_LETS_PROCEED = frozenset({("end", "join"), ("set", "wait"), ("release", "acquire")})
# The operations a step may have been let proceed with.
PROCEEDING = frozenset(later for _, later in _LETS_PROCEED)


def lets_proceed(earlier: Effect, later: Effect) -> bool:
    """Whether ``earlier`` only lets ``later`` proceed (SCHED-32): a thread's end and a
    join of it, an Event's set and a wait for it, a lock's release and an acquire of it.
    Never an ``earlier`` that changed nothing (a set of a set Event): run after it or
    before, ``later`` would have done the same."""
    return ((earlier.op, later.op) in _LETS_PROCEED and earlier.access == WRITE
            and earlier.obj == later.obj and _wakes_every_waiter(earlier.obj))


def stutters(step: Step) -> bool:
    """A step that only began to wait (SCHED-32): it tried its operation (acquire a held
    lock, join a live thread), found it must wait, and parked, on an object that wakes
    every waiter at once.  Running another thread's step first would only have let it do
    the operation later, which the step that resumes it does (it tries again).  Not an
    Event's wait: woken, it returns True even if the Event was cleared since."""
    point = step.point
    parked = False
    for e in step.footprint:
        if e.op == "park":
            parked = True
        elif e.op != "resume" and not (e.obj == point.obj and e.op == point.op):
            return False
    return parked and _wakes_every_waiter(point.obj) and not point.obj.startswith("Event#")


def label_of(target: Any) -> str:
    """How a point names what it acts on: a controlled object's label (``Lock#2``), a
    thread's label (``T1``), a memory location, or ``""`` for nothing shared."""
    if target is None:
        return ""
    label = getattr(target, "_ck_label", None)
    return label if label is not None else str(target)


class Point(NamedTuple):
    """Thread ``thread`` is about to do ``op`` on the object labelled ``obj``.

    ``yielding`` is true at a ``sleep(0)``: the thread steps aside, so the default
    (index 0) of a choice made there is another thread.  ``step`` is the number of
    scheduling points the run had reached when the thread got here.
    """

    thread: int
    op: str
    obj: str = ""
    yielding: bool = False
    step: int = 0

    @property
    def access(self) -> str:
        return access_of(self.op)

    def __str__(self) -> str:
        return f"T{self.thread} {self.op} {self.obj}".rstrip()


class Effect(NamedTuple):
    """One shared effect of a step: ``op`` on ``obj``, which reads or writes it."""

    obj: str
    access: str
    op: str


class Step:
    """One step of a run: the point it opened with and everything it did.

    ``choice`` is the index (into the run's choices) of the choice point at which the
    step's thread was picked, or None when it was the only thread that could run.
    (A plain class with slots: a run makes one per scheduling point.)
    """

    __slots__ = ("choice", "footprint", "index", "point")

    def __init__(self, index: int, point: Point, footprint: list[Effect] | None = None,
                 choice: int | None = None) -> None:
        self.index = index
        self.point = point
        self.footprint: list[Effect] = [] if footprint is None else footprint
        self.choice = choice

    def __repr__(self) -> str:
        return (f"Step(index={self.index!r}, point={self.point!r}, "
                f"footprint={self.footprint!r}, choice={self.choice!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Step):
            return NotImplemented
        return (self.index, self.point, self.footprint, self.choice) == (
            other.index, other.point, other.footprint, other.choice)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass's

    @property
    def thread(self) -> int:
        return self.point.thread

    def conflicts_with(self, other: Step) -> bool:
        """True when the order of the two steps can change what the program sees: they
        touch one object and at least one writes it, or either depends on everything."""
        return conflicting(self.footprint, other.footprint)


# id of a module's globals -> (the module's name, the globals): held, so that the id
# can never name another object, even once the module is gone from ``sys.modules``.
_MODULE_GLOBALS: dict[int, tuple[str, dict[str, Any]]] = {}
_MODULES_SEEN = [0]


def memory_label(owner: Any) -> str:
    """The object a memory access of ``owner`` (an ``id``, or a closure cell's key) names:
    a module's globals by the module (the same in every run), a closure cell by its key,
    any other object by its ``id`` (``mem:<id>``, which only holds within one run).  Only
    real modules count: ``sys.modules`` may hold other objects (``typing.re`` is a class
    on 3.11), whose ``__dict__`` is made anew at each look, and whose id another object
    may then have."""
    if type(owner) is int:
        if len(sys.modules) != _MODULES_SEEN[0]:
            _MODULES_SEEN[0] = len(sys.modules)
            for name, module in list(sys.modules.items()):
                if isinstance(module, ModuleType):
                    _MODULE_GLOBALS.setdefault(id(module.__dict__), (name, module.__dict__))
        known = _MODULE_GLOBALS.get(owner)
        if known is not None:
            return f"mem:globals:{known[0]}"
    return f"mem:{owner!r}"


def conflicting(a: list[Effect], b: list[Effect]) -> bool:
    """Whether two footprints conflict (SCHED-30, SCHED-31)."""
    for x in a:
        if x.obj == ANY:
            return True
    for y in b:
        if y.obj == ANY:
            return True
        for x in a:
            if x.obj == y.obj and (x.access == WRITE or y.access == WRITE):
                return True
    return False
