"""What a recorded run keeps: a row per step for reports, and each step's footprint.

Recording is off in an exploration's runs (they only need to know whether they
failed); a replay records rows, and a search that reads footprints asks for them.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from coordkit.engine.frames import where
from coordkit.engine.points import READ, Effect, Step, access_of, label_of, memory_label, opening_effects
from coordkit.engine.snapshots import Snapshots
from coordkit.engine.task import Task

__all__ = ["Event", "Recorder", "is_step", "row_text", "shown"]


class _Recorded(Step):
    """A step as the run that recorded it saw it, with ``labelled``: its accesses (counted
    from 1 by the tracer, ``Recorder.accesses``) that gave memory its first label in the
    run.  A later run that repeats the step names only those (SCHED-85)."""

    __slots__ = ("labelled",)

    def __init__(self, index: int, point: Any, footprint: list[Effect], choice: int | None) -> None:
        super().__init__(index, point, footprint, choice)
        self.labelled: set[int] = set()


@dataclass(frozen=True)
class Event:
    """One recorded row of a run: which thread did which operation, where, and what it
    returned (``result``, ``""`` for nothing to show).  Rows are kept in the order the
    operations took effect (TRACE-7): a thread's row is written when it goes on from its
    point, not when it reaches it, and an operation that waited gets a second row, its
    return, when it completes."""

    step: int
    tid: int
    kind: str
    target: str
    where: str
    time: float
    result: str = ""
    returned: bool = False  # the row of a blocking operation's return, after its wait


def is_step(row: Any) -> bool:
    """Whether a row is a step of its own: not the start of a high-level operation
    (``call``), a park (``block``) or a return after a wait (TRACE-7).  ``row`` may be
    an ``Event`` or a saved report's row, which may predate ``returned``."""
    return row.kind not in ("call", "block") and not getattr(row, "returned", False)


def row_text(row: Any) -> str:
    """What a row that is no ``call`` says: ``blocks on Lock#1 held by T0``,
    ``acquire Lock#1 -> True``, or ``... acquire Lock#1 -> True`` for a return after a
    wait.  Rows of saved reports may predate results."""
    if row.kind == "block":
        return f"blocks on {row.target}"
    text = f"{row.kind} {row.target}".strip()
    result = getattr(row, "result", "")
    if result:
        text = f"{'... ' if getattr(row, 'returned', False) else ''}{text} -> {result}"
    return text


_SHOWN_AS_IS = (bool, int, float, str, bytes, type(None))


def shown(value: Any, width: int = 40) -> str:
    """``value`` as a row shows it: the repr of a plain value, the type name of anything
    else.  A recorded replay calls no code of the program's (a ``__repr__`` could take a
    lock and move the schedule): containers and objects are named, not printed."""
    if isinstance(value, _SHOWN_AS_IS):
        text = repr(value)
        return text if len(text) <= width else text[: width - 3] + "..."
    return f"<{type(value).__name__}>"


class Recorder:
    """Rows (``events``) and the world at each step (``snapshots``) when ``rows``;
    footprints (``steps``, in the order the steps ran) when ``footprints``.
    ``memory_traced``: a tracer reports the memory accesses of the code between
    points, so a line's step is not assumed to touch everything."""

    __slots__ = ("_labelled", "_memory", "_owners", "accesses", "events", "known", "memory_traced",
                 "names_again", "rows", "snapshots", "steps", "taken")

    def __init__(self, *, rows: bool, footprints: bool, snapshots: bool = False) -> None:
        self.rows = rows
        self.events: list[Event] = []
        # Only for the viewer: a snapshot walks every thread at every step.
        self.snapshots: Snapshots | None = Snapshots() if rows and snapshots else None
        self.steps: list[Step] | None = [] if footprints else None
        # The steps this run is known to begin with (a search's replayed prefix): reused
        # as they are reached, not recorded again.
        self.known: Sequence[Step] = ()
        self.memory_traced = False
        # Operations that took effect so far: a row's step number is its place in that
        # order (TRACE-7), not the number of the point its thread reached first.
        self.taken = 0
        # Memory labels (see ``memory``): owner -> label, and what keeps each owner's
        # id from being reused while its label stands.
        self._memory: dict[Any, str] = {}
        self._owners: list[Any] = []
        # The running step's accesses so far (the tracer counts them), and where it makes a
        # new label: the step's own ``labelled`` when it is recorded; when it is known,
        # where the run that recorded it did (None: a step not recorded so).
        self.accesses = 0
        self._labelled: set[int] | None = None
        self.names_again: set[int] | None = None

    def point(self, task: Task, now: float) -> None:
        """``task`` goes on from its scheduling point: its operation takes effect now, a
        row.  A point after an operation (``after-release``) is no operation of its own."""
        point = task.pt
        if self.rows and not point.op.startswith("after-"):
            self.taken += 1
            self.events.append(Event(self.taken, task.tid, point.op, point.obj,
                                     where(sys._getframe(2)), now))
            if self.snapshots is not None:
                self.snapshots.take(task, sys._getframe(2), now, self.taken)

    def returned(self, task: Task, value: str, now: float) -> None:
        """``task``'s operation returned ``value``: on its row when nothing came between,
        else (it waited) on a row of its own, where the return took effect."""
        events = self.events
        last = events[-1] if events else None
        if last is not None and last.tid == task.tid and last.kind not in ("call", "block"):
            events[-1] = replace(last, result=value)
            return
        point = task.pt
        events.append(Event(self.taken, task.tid, point.op, point.obj,
                            where(sys._getframe(2)), now, result=value, returned=True))

    def begin(self, task: Task, choice: int | None, *, resumed: bool = False) -> None:
        """``task`` runs again (picked at its point, ``resumed`` after a wait, or started):
        a new step, opened by the point it is at."""
        steps = self.steps
        if steps is not None:
            k = len(steps)
            point = task.pt
            self.accesses = 0
            if k < len(self.known):
                known = self.known[k]
                if known.point == point:
                    steps.append(known)
                    task.step = None  # its effects are known too
                    self._labelled = None
                    self.names_again = getattr(known, "labelled", None)
                    return
                self.known = ()  # the run did not repeat (the search says so at its end)
            step = _Recorded(k, point, opening_effects(
                point, task.label, memory_traced=self.memory_traced, resumed=resumed), choice)
            steps.append(step)
            task.step = step
            self._labelled = step.labelled
            self.names_again = None

    def blocked(self, task: Task, what: str, now: float) -> None:
        """``task`` parks, in the step it just took: a row, not a step."""
        if self.rows:
            self.events.append(Event(self.taken, task.tid, "block", what,
                                     where(sys._getframe(2)), now))

    def call(self, task: Task, operation: str, target: Any, now: float, *,
             in_step: bool = False) -> None:
        """The start of a high-level operation (a queue's enqueue), which the task's next
        step begins, or (``in_step``) what the step it is in does: a row, not a step."""
        if not self.rows:
            return
        label = getattr(target, "_ck_label", None)
        if label is None:
            name = getattr(target, "name", None)
            label = type(target).__name__ + (f" {name!r}" if isinstance(name, str) else "")
        step = self.taken if in_step else self.taken + 1
        self.events.append(Event(step, task.tid, "call", f"{operation} {label}",
                                 where(sys._getframe(2)), now))

    def memory(self, task: Task, owner: Any, keep: Any, field: Any, access: str) -> None:
        """``task``'s step reads or writes ``field`` of ``owner`` (an ``id``, or a cell's
        key; ``keep`` is the object, if any).  An object is labelled ``mem#<n>`` by the
        order in which the run first touched it, so that two runs that did the same
        operations label it alike, whatever its address (a search reuses the analysis
        of a run's prefix in the next run, SCHED-30)."""
        label = self._memory.get(owner)
        if label is None:
            label = self._label_memory(owner, keep)
        step = task.step
        if step is not None and self.steps is not None:  # (None: a known step, or unwinding)
            step.footprint.append(Effect(label, access, f"{field!r}"))

    def close(self) -> None:
        """The run is over: let go of the objects labelled (``Execution.close``)."""
        self._memory.clear()
        self._owners.clear()

    def _label_memory(self, owner: Any, keep: Any) -> str:
        """A new label for ``owner``.  While the label stands its id must not name another
        object: the object is held weakly (its label goes when it does) or, when it
        cannot be (a list, a dict), kept alive for the run, as the race detector does."""
        label = memory_label(owner)
        if label.startswith("mem:") and label[4:5].isdigit():
            label = f"mem#{len(self._owners)}"
        self._memory[owner] = label
        if self._labelled is not None:
            self._labelled.add(self.accesses)
        # (A type that cannot be weakly referenced has no weakref offset: no exception
        # to raise and catch for each list and dict a run touches.)
        if keep is not None and type(keep).__weakrefoffset__:
            keep = weakref.ref(keep, lambda _ref: self._memory.pop(owner, None))
        self._owners.append(keep)
        return label

    def changed_nothing(self, task: Task | None, label: str, op: str) -> None:
        """``task``'s step did ``op`` on ``label`` and found it already so (a set of a set
        Event): its opening effect on it was only a read (SCHED-32)."""
        step = task.step if self.steps is not None and task is not None else None
        if step is None:
            return
        footprint = step.footprint
        for i, e in enumerate(footprint):
            if e.obj == label and e.op == op:
                footprint[i] = e._replace(access=READ)
                return

    def effect(self, task: Task | None, target: Any, op: str, access: str | None = None) -> None:
        """A shared effect of ``task``'s step beyond its opening one (``access`` defaults
        to how ``op`` touches its object)."""
        if self.steps is not None and task is not None and task.step is not None:
            task.step.footprint.append(
                Effect(label_of(target), access_of(op) if access is None else access, op))
