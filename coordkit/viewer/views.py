"""The viewer's entry points: a page from saved rows, from a replay, from a failure."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from coordkit.engine.report import FoundFailure, RunReport, target_name
from coordkit.engine.trace import Schedule
from coordkit.viewer.model import first_difference, pane, passing_neighbour, report_pane
from coordkit.viewer.page import render_page

__all__ = ["failure_page", "notebook_html", "render_html", "replayed_page", "view_page"]

_NO_FUNCTION = ("The passing neighbour needs the program: coordkit.viewer.view_page(fn, trace) "
                "or `coordkit show TRACE --target MODULE:FUNCTION` replays it.")


def render_html(events: Sequence[Any], thread_names: Sequence[str], *, title: str,
                failure: str | None = None, trace: str | None = None,
                snapshots: Sequence[dict[str, Any]] = ()) -> str:
    """The page of recorded rows (``RunReport.events`` and ``thread_names``), one pane."""
    main = pane(events, thread_names, failure=failure, trace=trace, snapshots=snapshots)
    main["start"] = main["failing"]
    return render_page(title, [("main", "The run", main)])


def view_page(fn: Callable[[], Any], trace: str | Schedule, *,
              invariant: Callable[[], Any] | None = None, title: str | None = None) -> str:
    """Replay ``trace`` on ``fn`` and draw it: the world at every step and, for a failing
    run, the passing neighbour beside it (the same schedule without its last preemption)."""
    return replayed_page(fn, trace, invariant=invariant, title=title)[0]


def replayed_page(fn: Callable[[], Any], trace: str | Schedule, *,
                  invariant: Callable[[], Any] | None = None,
                  title: str | None = None) -> tuple[str, RunReport]:
    """``view_page`` and the replayed run it draws."""
    from coordkit.engine.replay import record

    report = record(fn, trace, strict=True, invariant=invariant, snapshots=True)
    main = report_pane(report)
    main["start"] = main["failing"]
    panes = [("main", "The failing run" if report.failure else "The run", main)]
    note = None
    if report.failure is not None:
        neighbour, note = passing_neighbour(fn, report.schedule, invariant=invariant)
        if neighbour is not None:
            other = report_pane(neighbour)
            other["start"] = first_difference(main, other)
            panes.append(("neighbour", "Passing neighbour", other))
    return render_page(title or f"coordkit: {target_name(fn)}", panes, neighbour_note=note), report


def failure_page(found: FoundFailure) -> str:
    """The page of a failure ``explore`` found (its report is a replay's, with snapshots)."""
    main = report_pane(found.report)
    main["start"] = main["failing"]
    return render_page(f"coordkit: {found.target}", [("main", "The failing run", main)],
                       neighbour_note=_NO_FUNCTION)


def notebook_html(found: FoundFailure) -> str:
    """``failure_page`` in a sandboxed ``<iframe srcdoc>``, for a notebook's output cell: the
    page keeps its own document (its Content-Security-Policy, its ids, its keys) however
    many failures a notebook shows, and its script may run but reaches nothing outside."""
    page = html.escape(failure_page(found), quote=True)
    return (f'<iframe class="coordkit-viewer" sandbox="allow-scripts" srcdoc="{page}" '
            'width="100%" height="720" title="coordkit trace viewer"></iframe>')
