"""``coordkit demo --teach``: the demo's race, one step of the failing run at a time.

The walk explores the demo's program (``coordkit/_demo.py``), takes the shrunk
failing run and prints each of its steps: which thread runs, what it does (the
row's operation and the line of the demo that does it), why the scheduler
switched threads there, and then every thread's state.  A switch away from a thread
that could have gone on running is a *preemption*: the shrunk run has as few as
still fail, so each one it has is part of the cause.

Everything said about a step is read from the recorded rows: a row is a point a
thread has reached, and its operation takes effect when that thread runs again.
A thread is *blocked* from the row that says so until a notify of what it waits on
(or the end of the thread it joins) makes it *woken*, *finished* once another
thread runs after its last row (unless that row blocked it), and *ready* otherwise.

Between steps the walk pauses for Enter when asked to (``pause``); typing ``c``
there runs to the end without pausing again.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

__all__ = ["Step", "explain_steps", "teach"]

# What a row's operation is, as a phrase after the thread's name.
_DOES = {
    "start": "start thread {target}",
    "join": "join {target}: wait until that thread ends",
    "acquire": "take {target}",
    "release": "release {target}",
    "wait": "wait on {target} (giving up its lock until notified)",
    "notify": "notify {target}, which wakes a thread waiting on it",
    "is_alive": "ask whether {target} is alive",
    "sleep": "sleep",
    "set": "set {target}",
    "clear": "clear {target}",
    "get": "read {target}",
    "put": "write {target}",
}


_INTRO = (
    "coordkit demo --teach: one shutdown race, one step at a time.\n\n"
    "The program (coordkit/_demo.py): two producers put items on a queue; a consumer\n"
    "takes them until the queue is closed and empty. When both producers are done\n"
    "(they meet at a barrier), each one runs\n\n"
    "    if not queue.is_closed():\n"
    "        queue.close()\n\n"
    "A second close() of a closed queue raises CancelledError. coordkit runs one\n"
    "thread at a time and decides which; it now searches for a schedule that fails.\n"
)


@dataclass
class Step:
    """One step of a run: the rows recorded at one step number, all of one thread."""

    number: int
    tid: int
    calls: list[str] = field(default_factory=list)  # high-level operations begun here
    op: str = ""
    target: str = ""
    where: str = ""
    blocks_on: str | None = None
    result: str = ""  # what the operation returned, when the row shows it
    returns: list[str] = field(default_factory=list)  # waits of other threads that ended here


def _steps(events: Sequence[Any]) -> list[Step]:
    steps: list[Step] = []
    for ev in events:
        if getattr(ev, "returned", False) and steps:  # a wait's end: a note on this step
            steps[-1].returns.append(f"T{ev.tid}'s {ev.kind} {ev.target} returns {ev.result}")
            continue
        if not steps or steps[-1].number != ev.step or steps[-1].tid != ev.tid:
            steps.append(Step(ev.step, ev.tid))
        step = steps[-1]
        if ev.kind == "call":
            step.calls.append(ev.target)
        elif ev.kind == "block":
            step.blocks_on = ev.target
        else:
            step.op, step.target, step.where = ev.kind, ev.target, ev.where
            step.result = getattr(ev, "result", "")
    return steps


def _source(where: str, files: dict[str, str]) -> str:
    """The line of code ``file.py:LINE in fn`` points at, when that file is known."""
    place = where.split(" in ")[0]
    name, _, line = place.rpartition(":")
    path = files.get(name)
    text = linecache.getline(path, int(line)).strip() if path and line.isdigit() else ""
    return f"{place}  `{text}`" if text else place


def explain_steps(events: Sequence[Any], names: Sequence[str], files: dict[str, str]) -> list[str]:
    """One paragraph per step of a recorded run: who acts, what, why the switch, the state.

    ``names`` are the threads' names by id; ``files`` maps a file name that rows show
    (``_demo.py``) to its path, so that the line of code can be quoted.
    """
    steps = _steps(events)
    last_row = {step.tid: i for i, step in enumerate(steps)}
    blocked: dict[int, str] = {}  # tid -> what it waits on ("ready (woken...)" once it may go on)
    finished: set[int] = set()
    paragraphs = []
    for i, step in enumerate(steps):
        who = names[step.tid]
        lines = [f"step {step.number}: {who} runs"]
        if i and steps[i - 1].tid != step.tid:
            lines[0] += " (" + _why_switch(steps, i, last_row, names) + ")"
        blocked.pop(step.tid, None)
        for call in step.calls:
            lines.append(f"  {who} calls {call.replace(' ', ' on ', 1)}")
        if step.op:
            does = _DOES.get(step.op, step.op + " {target}").format(target=_thread(step.target, names))
            returns = f", which returns {step.result}" if step.result else ""
            lines.append(f"  and goes on to {does}{returns},")
            lines.append(f"  at {_source(step.where, files)}")
        for note in step.returns:
            lines.append(f"  ({_thread(note, names)})")
        if step.blocks_on is not None:
            blocked[step.tid] = step.blocks_on
            lines.append(f"  It cannot go on: it blocks on {_thread(step.blocks_on, names)}.")
        if step.op == "notify":
            _wake(blocked, f"{step.target}.wait", step.number)
        ended = {tid for tid, last in last_row.items()
                 if last < i and steps[last].blocks_on is None} - finished
        for tid in ended:
            _wake(blocked, f"join(T{tid})", steps[last_row[tid]].number)
        finished |= ended
        lines.append("  state: " + _state(step.tid, names, blocked, finished))
        paragraphs.append("\n".join(lines))
    return paragraphs


def _why_switch(steps: list[Step], i: int, last_row: dict[int, int], names: Sequence[str]) -> str:
    before, now = steps[i - 1], steps[i]
    if before.blocks_on is not None:
        return f"{names[before.tid]} is blocked, so the scheduler picks another thread"
    if last_row[before.tid] == i - 1:
        return f"{names[before.tid]} has finished, so the scheduler picks another thread"
    return (f"PREEMPTION: {names[before.tid]} could have gone on running, but the scheduler "
            f"switched to {names[now.tid]} here")


def _wake(blocked: dict[int, str], what: str, step: int) -> None:
    for tid, on in blocked.items():
        if on == what:
            blocked[tid] = f"ready (woken at step {step})"


def _thread(target: str, names: Sequence[str]) -> str:
    """``T2`` as ``T2 (producer-b)``; ``join(T1)`` as ``join(T1 (producer-a))``."""
    for tid, name in enumerate(names):
        for form in (f"T{tid}", f"(T{tid})"):
            if target == form or target.endswith(form):
                return target.replace(f"T{tid}", f"T{tid} ({name})")
    return target


def _state(acting: int, names: Sequence[str], blocked: dict[int, str], finished: set[int]) -> str:
    parts = []
    for tid, name in enumerate(names):
        if tid in finished:
            parts.append(f"{name} finished")
        elif tid in blocked:
            on = blocked[tid]
            parts.append(f"{name} {on}" if on.startswith("ready") else f"{name} blocked on {on}")
        else:
            parts.append(f"{name} {'running' if tid == acting else 'ready'}")
    return "; ".join(parts)


def teach(out: TextIO, *, seed: int = 0, pause: Callable[[], str] | None = None) -> int:
    """Find the demo's race, then walk through its shrunk run step by step.

    ``pause`` is called between steps (it returns what the reader typed: ``c`` stops
    the pausing); None never pauses.  Returns the exit code: 0 when the race was found
    and the walk ended.
    """
    import coordkit
    from coordkit import _demo

    out.write(_INTRO)
    result = coordkit.explore(_demo.shutdown_race, strategy="pct", seed=seed, max_schedules=2000)
    failure = result.failure
    if failure is None:
        out.write(f"no failure in {result.schedules_run} schedules: unexpected\n")
        return 1
    report = failure.report
    out.write(
        f"\nFound after {failure.schedules_run} schedules, and shrunk to "
        f"{failure.preemptions} preemption(s).\nA preemption is a switch away from a thread "
        f"that could have gone on running.\nHere is that run, {report.steps} steps. Each step "
        "starts when a thread reaches a point\nwhere the scheduler may switch; the operation "
        "named there happens when that thread\nruns next.\n"
    )
    files = {"_demo.py": _demo.__file__}
    paragraphs = explain_steps(report.events, report.thread_names, files)
    for k, paragraph in enumerate(paragraphs):
        out.write("\n" + paragraph + "\n")
        if pause is not None and k + 1 < len(paragraphs) and pause().strip().lower() == "c":
            pause = None
    out.write(_conclusion(failure, paragraphs))
    return 0


def _conclusion(failure: Any, paragraphs: list[str]) -> str:
    """The failure, the steps where a preemption happened, what went wrong, and the fix."""
    preempted = [p.splitlines()[0] for p in paragraphs if "PREEMPTION" in p.splitlines()[0]]
    return (
        f"\nThe failure, in thread {failure.thread!r}: {failure.message}\n"
        f"The preemption(s), by the step where the other thread took over:\n"
        + "".join(f"    {line}\n" for line in preempted)
        + ("" if len(preempted) == failure.preemptions else
           f"(the schedule counts {failure.preemptions}; the rows show {len(preempted)})\n")
        + "After its is_closed() check and before its close() took effect, a producer was\n"
        "switched out; the other producer checked, found the queue open too, and closed it.\n"
        "When the first ran again, its close() found a closed queue. Check and act were two\n"
        "steps, and a switch between them let another thread act first.\n\n"
        "The fix: let the barrier elect exactly one closer (Barrier.wait() returns 0 to one\n"
        "thread). `coordkit demo` shows it passing every schedule with up to one preemption.\n"
        f"Replay this run: coordkit.replay(shutdown_race, {failure.trace!r})\n"
    )
