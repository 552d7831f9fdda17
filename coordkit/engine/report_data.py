"""A report as plain data (dicts, lists, strings, numbers): what ``--json`` prints.

The same content as the text report, for a machine: the verdict, what was covered,
the failure with its root cause, the threads at the failure, the rows of the run,
the races, the warnings, the trace and the line that replays it.  Every value is
JSON-serialisable.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from coordkit.engine.races import Race
from coordkit.engine.report import ExploreResult, FoundFailure, RunReport

__all__ = ["failure_data", "race_data", "result_data", "run_data"]


def race_data(race: Race) -> dict[str, Any]:
    return {
        "location": race.location,
        "first": {"thread": race.first.thread, "access": race.first.access,
                  "where": race.first.where, "stack": list(race.first.stack)},
        "second": {"thread": race.second.thread, "access": race.second.access,
                   "where": race.second.where, "stack": list(race.second.stack)},
        "text": str(race),
    }


def run_data(report: RunReport) -> dict[str, Any]:
    """One recorded run: its rows, races and trace, and its failure explained (or None)."""
    return {**_run_fields(report), "failure": _failure_fields(report)}


def _run_fields(report: RunReport) -> dict[str, Any]:
    return {
        "steps": report.steps,
        "preemptions": report.preemptions,
        "virtual_time": report.virtual_time,
        "thread_names": list(report.thread_names),
        "rows": [dict(vars(event)) for event in report.events],
        "races": [race_data(r) for r in report.races],
        "trace": report.trace,
    }


def _failure_fields(report: RunReport, *, minimal: bool = False) -> dict[str, Any] | None:
    failure = report.failure
    explanation = report.explanation(minimal=minimal)
    if failure is None or explanation is None:
        return None
    exc = failure.exception
    return {
        "kind": failure.kind.value,
        "message": failure.message,
        "thread": failure.thread,
        "after_return": failure.after_return,  # SCHED-55
        "exception": None if exc is None else {"type": type(exc).__name__, "message": str(exc)},
        "root_cause": explanation.root_cause,
        "preempted": [asdict(p) for p in report.preempted],
        "threads": [_thread_data(t) for t in explanation.threads],
        "died_earlier": [t.label for t in explanation.died_earlier],
        "tasks": list(explanation.tasks),  # each with its await chain (AIO-45)
        "details": failure.details,
    }


def _thread_data(thread: Any) -> dict[str, Any]:
    data = asdict(thread)
    data["holds"] = list(thread.holds)
    return data


def failure_data(found: FoundFailure) -> dict[str, Any]:
    """A failure ``explore`` found and shrank."""
    data = {**(_failure_fields(found.report, minimal=found.minimal is True) or {}),
            **_run_fields(found.report)}
    data.update({
        "schedules_run": found.schedules_run,
        "shrink_runs": found.shrink_runs,
        "original_preemptions": found.original_preemptions,
        "minimality": found.minimality,
        "minimal": found.minimal,
        "shrink_seconds": found.shrink_seconds,
        "strategy": found.strategy,
        "seed": found.seed,
        "trace": found.trace,
        "replay": found.replay_line(),
    })
    return data


def result_data(result: ExploreResult) -> dict[str, Any]:
    """An exploration's outcome."""
    failure = result.failure
    if result.interrupted:
        verdict = "interrupted"
    elif failure is not None:
        verdict = "failure"
    else:
        verdict = "no failure" if not result.warnings else "no failure seen"
    return {
        "verdict": verdict,
        "ok": result.ok,
        "schedules": result.schedules_run,
        "strategy": result.strategy,
        "seed": result.seed,
        "elapsed": result.elapsed,
        "exhausted": result.exhausted,
        "coverage": result.coverage,
        "looked_at": result.looked_at(),
        "pruned": result.pruned,
        "failure": None if failure is None else failure_data(failure),
        "races": [race_data(r) for r in result.races],
        "warnings": list(result.warnings),
        "leaked_threads": list(result.leaked_threads),
        "trace": None if failure is None else failure.trace,
        "replay": None if failure is None else failure.replay_line(),
    }
