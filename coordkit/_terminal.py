"""The command line's output on a terminal: the report with rich's tables and colours,
and a progress bar with schedules/s and an ETA.

Only the CLI imports this, and only when its output is a terminal: ``rich`` is
imported here and nowhere else.  The content is the plain report's (``explain``
words it); only the layout differs.  What the program names (threads, locks,
messages) is shown through ``visible`` and never read as rich markup.
"""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console, Group
from rich.panel import Panel
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from coordkit.engine.explain import Explanation
from coordkit.engine.report import ExploreResult, FoundFailure, RunReport, visible

__all__ = ["RichOutput", "RichProgress"]

_THREAD_COLUMNS = ("thread", "state", "where", "holds", "waits on")
_STATE_STYLES = {"died": "bold red", "blocked": "yellow", "runnable": "cyan", "finished": "green"}


def _text(value: Any, style: str = "") -> Text:
    return Text(visible(str(value)), style=style)


class RichOutput:
    """Writes reports to ``console`` (a terminal's) with tables and colours."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @classmethod
    def to(cls, out: TextIO) -> RichOutput:
        return cls(Console(file=out, highlight=False))

    def text(self, text: str, style: str = "") -> None:
        self.console.print(_text(text.rstrip("\n"), style))

    def rule(self, title: str) -> None:
        self.console.rule(_text(title, "bold"))

    def result(self, result: ExploreResult, command: str | None) -> None:
        """An exploration's outcome: its failure, or what a pass covered; its races and
        warnings."""
        if result.failure is not None and not result.interrupted:
            self.failure(result.failure, command)
        else:
            style = "yellow" if result.interrupted or result.warnings else "bold green"
            self.text(result.summary(), style)
        if result.races:
            self.console.print(_races(result.races, "Races seen"))
        for warning in result.warnings:
            self.text(f"warning: {warning}", "yellow")

    def failure(self, found: FoundFailure, command: str | None) -> None:
        explanation = found.explanation()
        self.console.print(_text(found.headline(), "bold red"))
        self._explained(found.report, explanation)
        replay = _text(f"    {found.replay_line()}", "green")
        if command is not None:
            replay.append(_text(f"\n    {command}", "green"))
        # Not wrapped: a reader copies these lines whole.
        self.console.print(Group(_text("Replay it exactly (e.g. as a regression test):"), replay),
                           soft_wrap=True)

    def replay(self, report: RunReport, error: BaseException | None) -> None:
        """A replayed run: its failure explained, or its table and that it passed."""
        if error is None:
            self.console.print(_step_table(report), soft_wrap=True)
            self.text(f"replay passed: {report.steps} steps, {report.preemptions} preemption(s)",
                      "bold green")
            return
        head = f"replay failed: {type(error).__name__}"
        if report.failure is not None and report.failure.kind == "exception" and str(error):
            head += f": {str(error).splitlines()[0]}"  # else the root cause below says it
        self.console.print(_text(head, "bold red"))
        self._explained(report, report.explanation())

    def _explained(self, report: RunReport, explanation: Explanation | None) -> None:
        if explanation is not None:
            self.console.print(Panel(_text(explanation.root_cause), title="root cause",
                                     title_align="left", border_style="red"))
            if explanation.threads:
                self.console.print(_threads(explanation))
            if explanation.tasks:
                self.console.print(_text(explanation.tasks_text()))
            if explanation.died_earlier:
                self.console.print(_earlier(explanation))
        self.console.print(_step_table(report), soft_wrap=True)  # a terminal too narrow wraps it
        self.console.print()
        failure = report.failure
        if failure is not None and failure.details and not (
                failure.kind == "deadlock" and failure.threads):
            self.console.print(_text(failure.details.rstrip(), "dim"))
            self.console.print()


def _threads(explanation: Explanation) -> Table:
    """One row per thread; the holds and waits-on columns only when a thread has one."""
    rows = []
    for t in explanation.threads:
        state = t.state if t.state != "died" else f"died: {t.exception.partition(':')[0]}"
        rows.append([_text(t.who, "bold"), _text(state, _STATE_STYLES.get(t.state, "")),
                     _text(t.where or t.raised_at), _text(", ".join(t.holds), "magenta"),
                     _text(t.waits_on, "yellow")])
    columns = [i for i in range(len(_THREAD_COLUMNS)) if i < 3 or any(row[i].plain for row in rows)]
    table = Table(title="Threads at the failure", title_justify="left", title_style="bold")
    for i in columns:
        table.add_column(_THREAD_COLUMNS[i])
    for row in rows:
        table.add_row(*(row[i] for i in columns))
    return table


def _earlier(explanation: Explanation) -> Table:
    table = Table(title="Exceptions that ended threads earlier", title_justify="left",
                  title_style="bold")
    for column in ("thread", "exception", "raised at", "still holding"):
        table.add_column(column)
    for t in explanation.died_earlier:
        table.add_row(_text(t.who, "bold"), _text(t.exception, "red"), _text(t.raised_at),
                      _text(", ".join(t.holds), "magenta"))
    return table


def _step_table(report: RunReport) -> Text:
    """The run's table as ``render_table`` draws it, the header bold and the failing
    step's rows red."""
    text = Text()
    for i, line in enumerate(report.table().splitlines()):
        style = "bold" if i < 2 else ("bold red" if line.startswith(">") else "")
        text.append(visible(line) + "\n", style=style)
    text.rstrip()
    return text


def _races(races: list[Any], title: str) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold")
    for column in ("location", "first access", "second access"):
        table.add_column(column)
    for race in races:
        table.add_row(_text(race.location, "bold"), _text(race.first), _text(race.second))
    return table


class RichProgress:
    """A progress bar for ``explore(progress=...)``: schedules run of ``total``, schedules/s,
    and an ETA (the sooner of the schedule budget and the time budget)."""

    def __init__(self, console: Console, total: int, time_budget: float | None) -> None:
        self.total = total
        self.time_budget = time_budget
        self._progress = Progress(
            TextColumn("exploring"), BarColumn(),
            TextColumn("{task.completed}/{task.total} schedules"),
            TextColumn("{task.fields[rate]}"), TextColumn("ETA {task.fields[eta]}"),
            console=console, transient=True)
        self._task = self._progress.add_task("explore", total=total, rate="", eta="?")

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, runs: int, elapsed: float) -> None:
        rate = runs / elapsed if elapsed > 0 else 0.0
        self._progress.update(self._task, completed=runs, rate=f"{rate:.0f}/s",
                              eta=_duration(self.eta(runs, elapsed)))

    def eta(self, runs: int, elapsed: float) -> float | None:
        """Seconds until a budget runs out at the rate so far (None: not known yet)."""
        left = []
        if runs > 0 and elapsed > 0:
            left.append((self.total - runs) * elapsed / runs)
        if self.time_budget is not None:
            left.append(self.time_budget - elapsed)
        return max(0.0, min(left)) if left else None


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
