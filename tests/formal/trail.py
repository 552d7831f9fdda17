"""From a spin trail to a coordkit schedule (FORMAL-9; the mapping is in specs/formal/README.md).

A guided simulation of a trail (``spin -t -T``) prints one line per event of the model,
``@ <pid> <event> <value>``. ``events`` reads them. The events on the coordinator
(``check``: a ``should_stop`` read; ``read``: ``request_stop``'s unlocked read, planted bug
only; ``stopped``: ``request_stop``'s critical section) are *steps*: the Python run must do
them in the trail's order. The others are *scripts*: what each op call and each iteration of
the main loop does (``op_enqueue``, ``op_error``, ``op_exhausted``, ``take``, ``train_error``).

``Steer`` is a coordkit ``Scheduler`` that makes the Python threads do the steps in the
trail's order: a thread announces a step (``at``) just before the synchronisation operation
that does it, and is let through only when that step is the trail's next; threads between
steps run freely. The run it steers yields a coordkit trace string, which ``coordkit.replay``
then runs on its own.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from coordkit import Scheduler
from coordkit.errors import TraceDivergedError

STEPS = ("check", "read", "stopped")

# The model's stop reasons (shutdown.pml): NONE, E_MAIN, E_RUNNER + i, E_CANCELLED.
NONE, E_MAIN, E_RUNNER, E_CANCELLED = 0, 1, 2, 4


@dataclass(frozen=True)
class Event:
    pid: int
    what: str
    value: int


def events(simulation: str) -> list[Event]:
    """The events a guided simulation printed, in order."""
    out = []
    for line in simulation.splitlines():
        if line.startswith("@ "):
            _, pid, what, value = line.split()
            out.append(Event(int(pid), what, int(value)))
    return out


def steps(trail: list[Event]) -> list[tuple[int, str, int]]:
    """The trail's coordinator steps: (pid, step, value read or reason passed)."""
    return [(e.pid, e.what, e.value) for e in trail if e.what in STEPS]


def scripts(trail: list[Event]) -> dict[int, list[str]]:
    """What each process's op calls (or main loop iterations) did, in order, by pid."""
    out: dict[int, list[str]] = {}
    for e in trail:
        if e.what not in STEPS:
            out.setdefault(e.pid, []).append(e.what)
    return out


@dataclass
class Steer(Scheduler):
    """Let thread ``T<pid>`` do its announced step only when the trail's next step is it.

    Python thread ``T<n>`` is model process ``n``: the main thread is T0 and pid 0, and
    ``create_threads`` starts the op threads and then the close-on-stop thread (RUNNER-3),
    T1..T3 as spin's ``run`` gives pids 1..3.
    """

    trail: list[tuple[int, str, int]]
    done: list[tuple[int, str, int]] = field(default_factory=list)
    waiting: dict[int, str] = field(default_factory=dict)
    pids: dict[Any, int] = field(default_factory=dict)
    name = "steer"

    def at(self, step: str) -> None:
        """The current thread is about to do ``step`` at its next synchronisation point."""
        self.waiting[self.pids[threading.current_thread()]] = step

    def did(self, step: str, value: int) -> None:
        pid = self.pids[threading.current_thread()]
        self.waiting.pop(pid, None)
        self.done.append((pid, step, value))

    def choose(self, point: Any, enabled: list[Any]) -> int:
        k = len(self.done)
        if k >= len(self.trail):
            return 0
        pid, step, _ = self.trail[k]
        where = {p.thread: i for i, p in enumerate(enabled)}
        if pid in where and self.waiting.get(pid, step) == step:
            return where[pid]
        for i, p in enumerate(enabled):
            if p.thread not in self.waiting:
                return i
        raise TraceDivergedError(f"the trail's step {k} is T{pid} {step}, but T{pid} cannot "
                                 f"do it: {self.waiting}, enabled {[str(p) for p in enabled]}")
