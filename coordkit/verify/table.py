"""Running the table, and showing it as text or Markdown (FORMAL-20, FORMAL-27).

A row passes only when DPOR exhausted it and no schedule failed: a row that
hits its schedule or time budget is a FAIL ("not exhausted"), never a pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from coordkit.engine.schedulers import DFSScheduler
from coordkit.engine.search import explore
from coordkit.verify.coordinator import COORDINATOR_ROWS
from coordkit.verify.program import Configuration, program
from coordkit.verify.queues import QUEUE_ROWS
from coordkit.verify.runner import RUNNER_ROWS

__all__ = ["PROFILES", "TABLE", "Budget", "RowResult", "cells", "markdown_rows", "rows", "size",
           "smallest_kill", "text", "verify_row"]

TABLE: list[Configuration] = [*QUEUE_ROWS, *COORDINATOR_ROWS, *RUNNER_ROWS]


@dataclass(frozen=True)
class Budget:
    """What one row may use before it counts as not exhausted."""

    max_schedules: int
    seconds: float


# ci: the rows every change must pass; nightly: those and the larger ones.
PROFILES: dict[str, tuple[frozenset[str], Budget]] = {
    "ci": (frozenset({"ci"}), Budget(100_000, 120.0)),
    "nightly": (frozenset({"ci", "nightly"}), Budget(1_000_000, 1800.0)),
}


@dataclass(frozen=True)
class RowResult:
    """One row's exploration: DPOR at sync granularity, until exhausted or out of budget."""

    config: Configuration
    schedules: int
    classes: int
    seconds: float
    exhausted: bool
    failure: str | None  # the failure's first line, when a schedule failed
    report: str | None = None  # the whole failure report

    @property
    def passed(self) -> bool:
        """Exhausted, and no schedule failed (FORMAL-20)."""
        return self.exhausted and self.failure is None

    @property
    def verdict(self) -> str:
        if self.failure is not None:
            return f"FAIL: {self.failure}"
        return "pass (exhausted)" if self.exhausted else "FAIL: not exhausted"


def rows(profile: str = "ci", only: str | None = None) -> list[Configuration]:
    """The rows of ``profile``; ``only`` keeps those whose name or primitive it is."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}; got {profile!r}")
    wanted = [c for c in TABLE if c.profile in PROFILES[profile][0]]
    if only is not None:
        wanted = [c for c in wanted if only in (c.name, c.primitive)]
        if not wanted:
            raise ValueError(f"no row or primitive named {only!r} in the {profile} profile")
    return wanted


def verify_row(config: Configuration, factory: Callable[..., Any] | None = None,
               budget: Budget = PROFILES["ci"][1], shrink: bool = True) -> RowResult:
    """Explore ``config`` (with ``factory`` in place of its own, if given) exhaustively with DPOR
    at sync granularity, checking every completed run (FORMAL-21..23)."""
    if factory is not None:
        config = config.with_factory(factory)
    scheduler = DFSScheduler(max_preemptions=None)
    start = time.perf_counter()
    result = explore(program(config), strategy=scheduler, granularity="sync", races="ignore",
                     max_schedules=budget.max_schedules, time_budget=budget.seconds, shrink=shrink,
                     fail_on_thread_exception=config.thread_exceptions_fail)
    failure = result.failure
    return RowResult(config, result.schedules_run, scheduler.classes, time.perf_counter() - start,
                     result.exhausted and not result.interrupted,
                     None if failure is None else _first_line(str(failure)),
                     None if failure is None else str(failure))


def size(config: Configuration) -> tuple[int, int]:
    """How big a row is: its calls, then its threads."""
    return (sum(len(t) for t in config.threads), len(config.threads))


def smallest_kill(factory: Callable[..., Any], primitive: str, profile: str = "nightly") -> RowResult | None:
    """The smallest row of ``primitive`` that fails with ``factory`` in place of the reference
    class (FORMAL-28): fewest calls, then fewest threads, then fewest schedules to the kill.
    None when every row passes with it (or runs out of budget: a survivor either way).

    Rows run smallest first, and none bigger than a kill already found.
    """
    budget = PROFILES[profile][1]
    best: RowResult | None = None
    for config in sorted(rows(profile, primitive), key=size):
        if best is not None and size(config) > size(best.config):
            break
        result = verify_row(config, factory, budget=budget, shrink=False)
        if result.failure is not None and (best is None or result.schedules < best.schedules):
            best = result
    return best


def _first_line(report: str) -> str:
    lines = [line for line in report.splitlines() if line.strip()]
    return lines[1].strip() if len(lines) > 1 else lines[0]


# ---------------------------------------------------------------------------
# Showing the table
# ---------------------------------------------------------------------------

HEADER = ("configuration", "primitive", "threads x ops", "schedules run", "equivalence classes",
          "seconds", "rules checked", "result")


def cells(row: Configuration, result: RowResult | None) -> list[str]:
    """A row's cells; the measured ones are empty until it has run."""
    measured = (["", "", "", "not run"] if result is None else
                [str(result.schedules), str(result.classes), f"{result.seconds:.2f}", result.verdict])
    return [row.name, row.primitive, row.shape, *measured[:3], " ".join(row.rules), measured[3]]


def text(results: Sequence[RowResult]) -> str:
    """The table for a terminal: aligned columns, the rules last but one."""
    table = [list(HEADER), *(cells(r.config, r) for r in results)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    passed = sum(r.passed for r in results)
    lines.append(f"\n{passed} of {len(results)} row(s) pass: exhausted by DPOR at sync granularity, "
                 "every run's history linearizable (rows with HIST-6) and every rule held.")
    return "\n".join(lines)


def markdown_rows(configs: Iterable[Configuration], results: dict[str, RowResult]) -> list[str]:
    """The Markdown table: a header line, a rule, one line per row."""
    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"

    out = [line(HEADER), line(["---"] * len(HEADER))]
    out += [line(cells(c, results.get(c.name))) for c in configs]
    return out
