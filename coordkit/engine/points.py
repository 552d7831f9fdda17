"""What a thread is about to do (a point), and what a step did (its footprint).

A *point* is a place where the running thread lets the scheduler decide: which
thread, which operation, on which object.  The scheduler is asked one question
with that information, ``choose(point, enabled)``: ``point`` is the running
thread's, ``enabled`` the points of every thread that could run next, in the
order whose index 0 is the default (keep going, or the next thread round-robin).

A *step* runs from one point of a thread to its next.  It may do more than its
opening operation: a ``Condition.wait`` also releases the lock, a thread's last
step also ends the thread and wakes its joiners.  Its *footprint* is every shared
effect it had.  Whatever asks "do these two steps commute?" (partial-order
reduction, race detection, reports) reads footprints, never labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["READ", "WRITE", "Effect", "Point", "Step", "access_of", "label_of"]

READ = "read"
WRITE = "write"

# Operations that only look: two of them on one object commute.  Every other
# operation on an object is a write of it.
_READ_OPS = frozenset({
    "is_set", "locked", "empty", "qsize", "is_alive", "join", "wait_event", "read", "line",
    "enumerate", "active_count",
})


def access_of(op: str) -> str:
    """How ``op`` touches its object: ``READ`` or ``WRITE``."""
    return READ if op in _READ_OPS else WRITE


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


@dataclass
class Step:
    """One step of a run: the point it opened with and everything it did."""

    index: int
    point: Point
    footprint: list[Effect] = field(default_factory=list)

    def conflicts_with(self, other: Step) -> bool:
        """True when the two steps touch one object and at least one writes it: the
        order of two such steps can change what the program sees."""
        for a in self.footprint:
            for b in other.footprint:
                if a.obj == b.obj and a.obj and (a.access == WRITE or b.access == WRITE):
                    return True
        return False
