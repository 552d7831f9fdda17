"""Pages the browser tests load, each built from a real exploration and written to a file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import coordkit
from coordkit.engine.report import RunReport
from coordkit.viewer.views import replayed_page


def explored_page(fn: Callable[[], Any], directory: Path, name: str, *,
                  seed: int = 3, max_schedules: int = 3000) -> tuple[Path, RunReport]:
    """Explore ``fn`` until it fails, write the viewer of the failure; the page and its run."""
    result = coordkit.explore(fn, seed=seed, max_schedules=max_schedules)
    assert result.failure is not None, f"{fn.__name__} did not fail"
    page, report = replayed_page(fn, result.failure.trace)
    path = directory / f"{name}.html"
    path.write_text(page, encoding="utf-8")
    return path, report


def step_rows(report: RunReport) -> list[Any]:
    """The rows of a run that are steps (a "call" or "block" row, or a return after a wait
    (TRACE-7), is not one)."""
    return [e for e in report.events if e.kind not in ("call", "block") and not e.returned]
