"""What the viewer shows, as plain data: a pane per run, built from its recorded rows.

A pane has one entry per step of the run (the rows that are steps: a ``call`` row
opens a high-level operation and a ``block`` row parks a thread, neither is a step,
so the pane counts exactly ``RunReport.steps``), the world at each step when the run
kept snapshots (a replay does), the failing step, and the preemptions: a switch away
from a thread that could have continued.

The passing neighbour of a failing schedule is the same schedule with its last
preemption taken back (that choice point keeps the running thread, and the run goes
on without preempting); it is shown when it passes.

Every string is passed through ``visible`` here (bidi and control characters shown
as ``<U+202E>``); escaping for HTML is the page's job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from coordkit.engine.record import is_step, row_text
from coordkit.engine.report import RunReport, visible
from coordkit.engine.trace import Schedule

__all__ = ["first_difference", "neighbour_schedule", "pane", "passing_neighbour", "report_pane"]

_NAME_LIMIT = 40


def _clean(value: Any) -> Any:
    """``value`` with every string made visible (dicts and lists walked)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def pane(events: Sequence[Any], thread_names: Sequence[str], *, failure: str | None,
         trace: str | None, snapshots: Sequence[dict[str, Any]] = (),
         note: str = "", task_names: Sequence[str] = ()) -> dict[str, Any]:
    """A pane's data: rows are steps; ``snapshots`` (one per step, in order) when kept;
    a lane per asyncio task of ``task_names`` that steps in the run (AIO-46)."""
    rows: list[dict[str, Any]] = []
    pending_calls: list[str] = []
    for e in events:
        if e.kind == "call":
            if rows and rows[-1]["step"] == e.step and rows[-1]["tid"] == e.tid:
                rows[-1]["calls"].append(e.target)  # what the step it came in does
            else:
                pending_calls.append(e.target)  # an operation its thread's next step begins
        elif not is_step(e):
            # A wait, or the return that ends one (TRACE-7): a note on the step it came in.
            if rows:
                rows[-1]["blocks"].append({"tid": int(e.tid), "text": row_text(e)})
        else:
            rows.append({"step": int(e.step), "tid": int(e.tid), "op": row_text(e), "where": e.where,
                         "time": float(e.time), "calls": pending_calls, "blocks": []})
            pending_calls = []
    # A snapshot per step from the first on (a long run keeps the first Snapshots.LIMIT).
    shots = [dict(s) for s in snapshots[:len(rows)]]
    if any(s["step"] != row["step"] for s, row in zip(shots, rows)):
        shots = []  # not this run's: show none rather than the wrong world
    _mark_preemptions(rows, shots)
    tasks = _task_lanes(rows, task_names)
    return _clean({
        "threads": [f"T{i} {str(name)[:_NAME_LIMIT]}" for i, name in enumerate(thread_names)],
        "tasks": tasks,
        "rows": rows, "snapshots": shots, "total": len(rows),
        "failing": len(rows) - 1 if failure is not None and rows else None,
        "failure": failure, "trace": trace, "note": note, "unrecorded": _unrecorded(shots),
    })


def _task_lanes(rows: list[dict[str, Any]], task_names: Sequence[str]) -> list[str]:
    """The task lanes (AIO-46): each task that a loop's step runs (its row's ``runs Task-2
    coro`` line, AIO-9), in creation order, named with its coroutine; ``row["tasks"]``
    lists the lanes of the tasks stepping in that row."""
    lanes: dict[str, int] = {}
    headers: list[str] = []
    marks: list[list[int]] = []
    for row in rows:
        stepped = []
        for text in row["calls"]:
            name = next((n for n in task_names if text.startswith(f"runs {n} ")), None)
            if name is None:
                continue
            if name not in lanes:
                lanes[name] = len(headers)
                headers.append(text[len("runs "):][:_NAME_LIMIT])
            stepped.append(name)
        marks.append(stepped)
    order = sorted(lanes, key=list(task_names).index)  # creation order
    lane = {name: i for i, name in enumerate(order)}
    for row, stepped in zip(rows, marks):
        row["tasks"] = [lane[name] for name in stepped]
    return [headers[lanes[name]] for name in order]


def _unrecorded(shots: list[dict[str, Any]]) -> str:
    """What the panels say at a step with no snapshot."""
    if not shots:
        return ("not recorded: these are the run's rows only (replay the trace, e.g. with "
                "coordkit show TRACE --target MODULE:FUNCTION, to see the world at each step)")
    return f"not recorded: a replay keeps the world at its first {len(shots)} steps"


def _mark_preemptions(rows: list[dict[str, Any]], shots: list[dict[str, Any]]) -> None:
    """``preempted``: the thread switched away from at this row, if it could have gone on
    (runnable in this row's snapshot; without one: it did not park before this row, and
    it acts or parks at this row or later, so it had not ended)."""
    last_row: dict[int, int] = {}  # the last row in which each thread acts or parks
    for i, row in enumerate(rows):
        last_row[row["tid"]] = i
        for block in row["blocks"]:
            last_row[block["tid"]] = i
    for i in range(1, len(rows)):
        before, row = rows[i - 1], rows[i]
        prev = before["tid"]
        row["preempted"] = None
        if prev == row["tid"]:
            continue
        if i < len(shots):
            threads = shots[i]["threads"]
            could = prev < len(threads) and threads[prev]["state"] == "runnable"
        else:
            parked = any(b["tid"] == prev and b["text"].startswith("blocks on")
                         for b in before["blocks"])
            could = last_row.get(prev, -1) >= i and not parked
        if could:
            row["preempted"] = prev
    if rows:
        rows[0]["preempted"] = None


def _failure_text(report: RunReport) -> str | None:
    failure = report.failure
    return None if failure is None else f"{failure.kind}: {failure.message}"


def report_pane(report: RunReport, note: str = "") -> dict[str, Any]:
    """The pane of a recorded run."""
    return pane(report.events, report.thread_names, failure=_failure_text(report),
                trace=report.trace, snapshots=report.snapshots, note=note,
                task_names=report.task_names)


def neighbour_schedule(schedule: Schedule) -> tuple[Schedule, int] | None:
    """``schedule`` without its last preemption, and the choice point taken back; None
    when it has no preemption."""
    choices = list(schedule.choices)
    last = max((i for i, (_, c) in enumerate(choices) if c), default=None)
    if last is None:
        return None
    return Schedule.from_choices(
        choices[:last], granularity=schedule.granularity,
        fail_on_thread_exception=schedule.fail_on_thread_exception,
        max_steps=schedule.max_steps, racing=schedule.racing, cancel=schedule.cancel,
        adversarial=schedule.adversarial,
    ), last


def passing_neighbour(fn: Callable[[], Any], schedule: Schedule, *,
                      invariant: Callable[[], Any] | None = None) -> tuple[RunReport | None, str]:
    """The replayed run of ``schedule``'s neighbour if it passes, and a sentence on it."""
    from coordkit.engine.replay import record

    found = neighbour_schedule(schedule)
    if found is None:
        return None, "No passing neighbour: the failing schedule has no preemption to take back."
    neighbour, point = found
    try:
        report = record(fn, neighbour, strict=False, invariant=invariant, snapshots=True)
    except Exception as exc:  # the neighbour's own problem is not the page's
        return None, f"No passing neighbour: its replay raised {type(exc).__name__}: {exc}"
    if report.failure is not None:
        return None, (f"No passing neighbour found: without its last preemption (choice point "
                      f"{point}) the run still fails ({report.failure.kind}).")
    return report, (f"Passing neighbour: the same schedule without its last preemption "
                    f"(choice point {point}); it passes in {report.steps} steps.")


def first_difference(a: dict[str, Any], b: dict[str, Any]) -> int:
    """The first row at which two panes' runs differ (thread or operation)."""
    for i, (x, y) in enumerate(zip(a["rows"], b["rows"])):
        if (x["tid"], x["op"]) != (y["tid"], y["op"]):
            return i
    return min(len(a["rows"]), len(b["rows"]))
