"""What a recorded run keeps: a row per step for reports, and each step's footprint.

Recording is off in an exploration's runs (they only need to know whether they
failed); a replay records rows, and a search that reads footprints asks for them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from coordkit.engine.frames import where
from coordkit.engine.points import Effect, Step, access_of, label_of, opening_effects
from coordkit.engine.snapshots import Snapshots
from coordkit.engine.task import Task

__all__ = ["Event", "Recorder"]


@dataclass(frozen=True)
class Event:
    """One recorded row of a run: which thread did which operation, and where."""

    step: int
    tid: int
    kind: str
    target: str
    where: str
    time: float


class Recorder:
    """Rows (``events``) and the world at each step (``snapshots``) when ``rows``;
    footprints (``steps``, in the order the steps ran) when ``footprints``.
    ``memory_traced``: a tracer reports the memory accesses of the code between
    points, so a line's step is not assumed to touch everything."""

    __slots__ = ("events", "memory_traced", "rows", "snapshots", "steps")

    def __init__(self, *, rows: bool, footprints: bool) -> None:
        self.rows = rows
        self.events: list[Event] = []
        self.snapshots: Snapshots | None = Snapshots() if rows else None
        self.steps: list[Step] | None = [] if footprints else None
        self.memory_traced = False

    def point(self, task: Task, now: float) -> None:
        """``task`` reached a scheduling point: a row."""
        if self.rows:
            point = task.pt
            self.events.append(Event(point.step, task.tid, point.op, point.obj,
                                     where(sys._getframe(2)), now))
            self.snapshots.take(task, sys._getframe(2), now)  # type: ignore[union-attr]

    def begin(self, task: Task, choice: int | None) -> None:
        """``task`` runs again (picked at its point, resumed after a wait, or started): a
        new step, opened by the point it is at."""
        if self.steps is not None:
            step = Step(len(self.steps), task.pt, choice=choice)
            step.footprint.extend(opening_effects(task.pt, task.label,
                                                  memory_traced=self.memory_traced))
            self.steps.append(step)
            task.step = step

    def blocked(self, task: Task, what: str, step: int, now: float) -> None:
        if self.rows:
            self.events.append(Event(step, task.tid, "block", what, where(sys._getframe(2)), now))

    def call(self, task: Task, operation: str, target: Any, step: int, now: float) -> None:
        """The start of a high-level operation (a queue's enqueue): a row, not a step."""
        if not self.rows:
            return
        label = getattr(target, "_ck_label", None)
        if label is None:
            name = getattr(target, "name", None)
            label = type(target).__name__ + (f" {name!r}" if isinstance(name, str) else "")
        self.events.append(Event(step, task.tid, "call", f"{operation} {label}",
                                 where(sys._getframe(2)), now))

    def effect(self, task: Task | None, target: Any, op: str, access: str | None = None) -> None:
        """A shared effect of ``task``'s step beyond its opening one (``access`` defaults
        to how ``op`` touches its object)."""
        if self.steps is not None and task is not None and task.step is not None:
            task.step.footprint.append(
                Effect(label_of(target), access_of(op) if access is None else access, op))
