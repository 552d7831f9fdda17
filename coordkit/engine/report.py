"""From a ``Run`` to what a person reads: the failure is mapped here, once.

``RunReport`` is a recorded run (its steps as a table, its trace); ``FoundFailure``
is a failing schedule found by ``explore``, shrunk, with its report and the line
that replays it; ``ExploreResult`` is the outcome of an exploration.
``failure_error`` turns a run's failure into the exception a replay raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from coordkit.engine.cause import Preemption
from coordkit.engine.explain import Explanation, explain
from coordkit.engine.races import Race
from coordkit.engine.record import is_step, row_text
from coordkit.engine.run import MAX_STEPS, Run
from coordkit.engine.runtime import Event, Failure
from coordkit.engine.trace import Schedule
from coordkit.errors import Deadlock, FailureKind, StepLimitExceeded, UncontrolledBlockingError

__all__ = [
    "ExploreResult",
    "FoundFailure",
    "RunReport",
    "failure_error",
    "render_table",
    "same_failure",
    "target_name",
    "visible",
]

# What a reader cannot see, or what changes how the rest of a line reads (U+202E shows
# what follows it backwards; an ESC starts a terminal command): every report shows
# these as <U+XXXX>.  Newlines and tabs stay.
_BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\n\t"]
_MARKED = str.maketrans({c: f"<U+{ord(c):04X}>"
                         for c in (*_BIDI_CONTROLS, *_CONTROLS, "\u2028", "\u2029")})


# What draws a FoundFailure as HTML, looked up by name when a notebook asks: the viewer
# sits above the engine, which never imports it (the layer contract, ENGINE-4).
HTML_VIEW = ("coordkit.viewer", "notebook_html")


def visible(text: str) -> str:
    """``text`` with bidi controls and other control characters shown as ``<U+202E>``."""
    return text.translate(_MARKED)


def target_name(fn: Any) -> str:
    """How a report names the function it ran."""
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or "fn"


def same_failure(a: Failure, b: Failure | None) -> bool:
    """Whether ``b`` is the failure ``a`` is (the same kind; for an exception, its type)."""
    if b is None or a.kind != b.kind:
        return False
    if a.kind == FailureKind.EXCEPTION:
        return type(a.exception) is type(b.exception)
    return True


@dataclass
class RunReport:
    """What one recorded run did: its steps, threads, schedule and outcome."""

    events: list[Event]
    thread_names: list[str]
    schedule: Schedule
    failure: Failure | None
    steps: int
    preemptions: int
    virtual_time: float
    # The world at each step (``snapshots``), one per row that is a step; replays only.
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    preempted: list[Preemption] = field(default_factory=list)  # where each preemption was
    races: list[Race] = field(default_factory=list)  # the races seen in this run
    # What the run did that the program's own order never does (AIO-42, AIO-44).
    deviations: list[str] = field(default_factory=list)
    task_names: list[str] = field(default_factory=list)  # asyncio tasks, in order (AIO-46)

    @classmethod
    def of(cls, run: Run) -> RunReport:
        options = run.options
        return cls(
            events=run.events,
            thread_names=run.thread_names,
            schedule=Schedule.from_choices(
                run.choices,
                granularity=options.granularity,
                fail_on_thread_exception=options.fail_on_thread_exception,
                max_steps=None if options.max_steps == MAX_STEPS else options.max_steps,
                invariant=run.failure is not None and run.failure.kind == FailureKind.INVARIANT,
                racing=tuple(sorted(run.racing)),
                cancel=options.cancel,
                adversarial=options.adversarial,
            ),
            failure=run.failure,
            steps=run.steps,
            preemptions=run.preemptions,
            virtual_time=run.virtual_time,
            snapshots=run.snapshots,
            preempted=list(run.preempted),
            races=list(run.races or ()),
            deviations=list(run.deviations),
            task_names=list(run.task_names),
        )

    @property
    def trace(self) -> str:
        return self.schedule.encode()

    def explanation(self, *, minimal: bool = False) -> Explanation | None:
        """What the report says about the run's failure (None when it passed)."""
        if self.failure is None:
            return None
        return explain(self.failure, self.preempted, self.races, preemptions=self.preemptions,
                       minimal=minimal)

    def explained(self, *, minimal: bool = False) -> list[str]:
        """The failure explained, root cause first: the paragraph, the threads, the
        exceptions that ended threads earlier, the table, the details; blocks of text."""
        failure = self.failure
        explanation = self.explanation(minimal=minimal)
        if failure is None or explanation is None:
            return [self.table()]
        blocks = [explanation.threads_text(), explanation.tasks_text(), explanation.earlier_text(),
                  self.table()]
        # A deadlock's details are its blocked threads' stacks: the threads above show them.
        if failure.details and not (failure.kind == FailureKind.DEADLOCK and failure.threads):
            blocks.append(failure.details.rstrip())
        return [b for b in blocks if b]

    def table(self) -> str:
        """The run as a table: one row per step, one column per thread."""
        steps = [e.step for e in self.events if is_step(e)]
        failing = steps[-1] if self.failure is not None and steps else None
        return render_table(self.events, self.thread_names, failing_step=failing)


def failure_error(report: RunReport) -> BaseException | None:
    """The exception a replay of this run raises: the thread's own exception, ``Deadlock``,
    ``StepLimitExceeded``, ``UncontrolledBlockingError``, or ``AssertionError`` for an
    invariant.  None when the run passed."""
    failure = report.failure
    if failure is None:
        return None
    if failure.kind == FailureKind.EXCEPTION and failure.exception is not None:
        return failure.exception
    explanation = report.explanation()
    assert explanation is not None
    text = visible("\n\n".join([explanation.root_cause, *report.explained()]))
    error = {
        FailureKind.DEADLOCK: Deadlock,
        FailureKind.STEP_LIMIT: StepLimitExceeded,
        FailureKind.TIMEOUT: UncontrolledBlockingError,
    }.get(failure.kind, AssertionError)
    return error(text)


@dataclass
class FoundFailure:
    """A failing schedule, shrunk, with everything needed to understand and replay it."""

    kind: FailureKind
    message: str
    exception: BaseException | None
    trace: str
    report: RunReport
    details: str
    schedules_run: int
    shrink_runs: int
    original_preemptions: int
    strategy: str
    seed: int | None
    target: str = "fn"
    invariant: str | None = None  # the invariant's name, when that is what failed
    thread: str | None = None  # the thread that raised, for an exception
    # After shrinking, what the bounded searches below its preemptions showed, in words
    # (SCHED-78, SCHED-79): "minimal (k preemptions)", or "the fewest found within ...".
    minimality: str | None = None
    # True: no schedule with fewer preemptions fails this way (SCHED-78).  False: one does,
    # but did not fail again when replayed (a program that does not fail the same way
    # twice).  None: not known (not shrunk, or the searches did not finish: SCHED-79).
    minimal: bool | None = None
    shrink_seconds: float = 0.0  # the time shrinking and its searches took (SCHED-77)

    @property
    def preemptions(self) -> int:
        return self.report.preemptions

    def explanation(self) -> Explanation | None:
        """The root cause, the threads at the failure, the exceptions that ended threads."""
        return self.report.explanation(minimal=self.minimal is True)

    def replay_line(self) -> str:
        invariant = "" if self.invariant is None else f", invariant={self.invariant}"
        return f"coordkit.replay({self.target}, {self.trace!r}{invariant})"

    def _repr_html_(self) -> str:
        """The interactive viewer, so that a notebook shows the failure inline."""
        module, function = HTML_VIEW
        return getattr(import_module(module), function)(self)

    def headline(self) -> str:
        """One line: what was found, by which search, and how far it was shrunk."""
        kind = self.kind.value.replace("_", " ")
        return (
            f"coordkit found {'an' if kind[0] in 'aeiou' else 'a'} {kind} after {self.schedules_run} "
            f"schedule(s) (strategy {self.strategy}"
            + (f", seed {self.seed}" if self.seed is not None else "")
            + f"); shrunk from {self.original_preemptions} to {self.preemptions} preemption(s) "
            f"in {self.shrink_seconds:.1f} s and {self.shrink_runs} runs"
            + (f": {self.minimality}." if self.minimality else ".")
            + "".join(f"\nIt depends on this: {what}." for what in self.report.deviations)
        )

    def __str__(self) -> str:
        head = self.headline()
        explanation = self.explanation()
        parts = [head + "\n" + explanation.root_cause if explanation is not None else head]
        parts += self.report.explained(minimal=self.minimal is True)
        parts.append(f"Replay it exactly (e.g. as a regression test):\n    {self.replay_line()}")
        return visible("\n\n".join(parts))


@dataclass
class ExploreResult:
    """The outcome of ``explore``: ``failure`` is None when no schedule failed."""

    failure: FoundFailure | None
    schedules_run: int
    exhausted: bool
    strategy: str
    seed: int | None
    elapsed: float
    pruned: int = 0
    leaked_threads: list[str] = field(default_factory=list)
    # What the search looked at, and what it could not see.
    granularity: str = "sync"
    races: list[Race] = field(default_factory=list)  # unordered accesses seen (races="report")
    race_runs: int = 0  # runs in which races were looked for
    racing_sites: int = 0  # sites scheduled because they raced (auto granularity)
    warnings: list[str] = field(default_factory=list)
    # What an exhausted search covered ("all interleavings at sync granularity (...)").
    coverage: str | None = None
    interrupted: bool = False  # stopped by Ctrl-C: the partial result KeyboardInterrupt carries

    @property
    def ok(self) -> bool:
        return self.failure is None

    def looked_at(self) -> str:
        """One line: the granularity, and where races were looked for."""
        what = f"{self.granularity} granularity"
        if self.granularity == "auto":
            what += f" ({self.racing_sites} racing site(s) scheduled)"
        if self.race_runs:
            what += (f"; races looked for in {self.race_runs} of {self.schedules_run} run(s), "
                     f"{len(self.races)} found")
        return what

    def summary(self) -> str:
        """What an exploration that found no failure says: how many schedules, what was
        covered, what it looked at (or that it was interrupted)."""
        seed = "" if self.seed is None else f", seed {self.seed}"
        if self.interrupted:
            return (f"interrupted after {self.schedules_run} schedule(s) (strategy "
                    f"{self.strategy}{seed}, {self.elapsed:.2f}s): no failure found so far")
        space = "; the bounded space is exhausted" if self.exhausted else ""
        if self.exhausted and self.coverage:
            space += f": {self.coverage}"
        verdict = "no failure" if not self.warnings else "no failure seen (but see the warnings)"
        return (f"{verdict} in {self.schedules_run} schedule(s) (strategy {self.strategy}{seed}, "
                f"{self.elapsed:.2f}s){space}\nlooked at: {self.looked_at()}")

    def __str__(self) -> str:
        if self.interrupted:
            return self.summary()
        text = str(self.failure) if self.failure is not None else self.summary()
        for race in self.races:
            text += f"\n{race}"
        for warning in self.warnings:
            text += f"\nwarning: {warning}"
        return text


def render_table(events: Sequence, thread_names: Sequence[str], *, failing_step: int | None = None,
                 width: int = 44) -> str:
    """Draw a run as a table: one row per step, one column per thread, in the order the
    operations took effect (TRACE-7).

    Each cell shows the operation, what it returned, and the source line of the user's
    code that did it; a return after a wait (``... acquire Lock#1 -> True``) has a row of
    its own.
    """
    ntask = len(thread_names)
    header = ["step"] + [visible(f"T{i} {name}")[:width] for i, name in enumerate(thread_names)]
    rows = [header]
    for ev in events:
        cells = [""] * ntask
        if ev.kind == "call":  # a high-level operation begins (recorded, not a step)
            cells[ev.tid] = visible(f"» {ev.target}")[:width]
            rows.append([" ", *cells])
            continue
        cells[ev.tid] = _cell(visible(row_text(ev)), visible(ev.where.split(" in ")[0]), width)
        mark = ">" if failing_step is not None and ev.step == failing_step else " "
        # A return after a wait continues its operation's step: no number of its own.
        rows.append([mark if getattr(ev, "returned", False) else f"{mark}{ev.step}", *cells])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for k, r in enumerate(rows):
        lines.append(" | ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
        if k == 0:
            lines.append("-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(text: str, where: str, width: int) -> str:
    """``text @ file:line`` in at most ``width`` characters: the file name is shortened
    first (down to its last 8 characters and the line, which is what a reader looks up),
    then the text (an operation and what it returned)."""
    over = len(text) + 3 + len(where) - width
    if over <= 0:
        return f"{text} @ {where}"
    name, colon, line = where.rpartition(":")
    if colon and len(name) > 8:
        keep = max(8, len(name) - over - 2)
        where = ".." + name[-keep:] + ":" + line
    room = width - 3 - len(where)
    if len(text) > room:
        text = text[: max(room - 2, 1)] + ".."
    return f"{text} @ {where}"
