"""Time to find a failure against time to shrink it, and whether the result is minimal
(issue 33, items 5 and 6).

For every buggy program of the zoo (``examples/zoo``, with the options and search
``tests/test_zoo.py`` uses), the tutorial's programs (``docs/tutorial``: the pipeline of
part 5 at the default and at line granularity, the pool of part 7 under
``cancel="tasks"``) and the classic programs of the peer comparison at line
granularity (``benchmarks/programs.py``), it prints: the schedules and seconds the
search took to find the failure (a run with ``shrink=False``), the runs and seconds
shrinking took (a second run with ``shrink=True``, same seed), the preemptions before
and after shrinking, and whether the result is minimal: ``yes`` when a bounded search
proved it, ``unknown`` otherwise; with ``--verify``, an unknown is checked by a bounded
search below it of up to ``--verify-budget`` seconds and printed as ``no`` (one with fewer
preemptions fails), ``yes*`` (none does) or left unknown.

    python benchmarks/shrink.py              # ~1-2 min on 2 cores
    python benchmarks/shrink.py --only zoo --verify
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import coordkit  # noqa: E402
from benchmarks import programs as peers  # noqa: E402
from examples.zoo import FIND, NAMES, ZOO, options  # noqa: E402
from tests.test_docs import python_blocks  # noqa: E402


@dataclass
class Case:
    group: str
    name: str
    fn: Callable[[], Any]
    search: dict[str, Any] = field(default_factory=dict)  # explore's options


def zoo() -> Iterator[Case]:
    for name in NAMES:
        yield Case("zoo", name, ZOO[name].buggy, {**FIND, **options(name)})


def _tutorial_namespace(page: str) -> dict[str, Any]:
    """The page's blocks run up to (not including) its first ``explore`` call."""
    namespace: dict[str, Any] = {"__name__": "tutorial"}
    for block in python_blocks(ROOT / "docs" / "tutorial" / page):
        code = str(block["code"])
        if "coordkit.explore(" in code:
            break
        exec(compile(code, page, "exec"), namespace)
    return namespace


def tutorial() -> Iterator[Case]:
    pipeline = _tutorial_namespace("05-find-the-race.md")["pipeline"]
    yield Case("tutorial", "05 pipeline", pipeline, {"seed": 1})
    if sys.version_info >= (3, 11):
        yield Case("tutorial", "05 pipeline, line", pipeline, {"seed": 1, "granularity": "line"})
    pool = _tutorial_namespace("07-cancellation-race.md")["main"]
    yield Case("tutorial", "07 pool, cancel", pool, {"cancel": "tasks"})


def classics() -> Iterator[Case]:
    if sys.version_info < (3, 11):
        return  # line granularity needs 3.11+
    for name, program in peers.PROGRAMS.items():
        if program.bug:
            for strategy in ("pct", "random"):
                yield Case("classic", f"{name} ({strategy})", peers.model(program),
                           {"strategy": strategy, "seed": 1, "max_schedules": 2000,
                            "granularity": "line"})


GROUPS = {"zoo": zoo, "tutorial": tutorial, "classic": classics}


def measure(case: Case, *, verify: float | None, budget: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    found = coordkit.explore(case.fn, shrink=False, **case.search)
    find_s = time.perf_counter() - started
    if found.failure is None:
        return {"case": case, "found": None, "find_s": find_s, "schedules": found.schedules_run}
    started = time.perf_counter()
    result = coordkit.explore(case.fn, **case.search, **budget)
    both_s = time.perf_counter() - started
    failure = result.failure
    assert failure is not None, case.name
    shrink_s = getattr(failure, "shrink_seconds", None)
    if shrink_s is None:  # before the engine measured it: the difference of the two calls
        shrink_s = max(both_s - find_s, 0.0)
    minimal = "yes" if failure.minimal else "unknown"
    if verify and not failure.minimal and failure.preemptions:
        minimal = _verified(case, failure, verify)
    return {"case": case, "found": failure, "find_s": find_s, "schedules": found.schedules_run,
            "shrink_s": shrink_s, "minimal": minimal}


def _verified(case: Case, failure: Any, seconds: float) -> str:
    """Every schedule with fewer preemptions, within ``seconds``: ``no``, ``yes*``, or
    ``unknown`` when that search did not finish."""
    search = {k: v for k, v in case.search.items() if k in ("granularity", "max_steps",
                                                           "fail_on_thread_exception")}
    below = coordkit.explore(case.fn, strategy="dfs", max_preemptions=failure.preemptions - 1,
                             max_schedules=10_000_000, time_budget=seconds, shrink=False, **search)
    if below.failure is not None and below.failure.kind == failure.kind:
        return f"no ({below.failure.original_preemptions})"
    return "yes*" if below.exhausted else "unknown"


def table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'program':<34} {'found in':>8} {'find s':>7} {'shrink runs':>11} {'shrink s':>8} "
            f"{'x find':>6} {'preempt.':>8}  minimal")
    lines = [head, "-" * len(head)]
    for row in rows:
        case = row["case"]
        name = f"{case.group}: {case.name}"[:34]
        failure = row["found"]
        if failure is None:
            lines.append(f"{name:<34} not found in {row['schedules']} ({row['find_s']:.2f} s)")
            continue
        ratio = row["shrink_s"] / max(row["find_s"], 1e-9)
        lines.append(
            f"{name:<34} {row['schedules']:>8} {row['find_s']:>7.2f} {failure.shrink_runs:>11} "
            f"{row['shrink_s']:>8.2f} {ratio:>6.1f} "
            f"{f'{failure.original_preemptions}->{failure.preemptions}':>8}  {row['minimal']}")
        if failure.minimality and not failure.minimal:
            lines.append(f"{'':<36}{failure.minimality}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(GROUPS), action="append",
                        help="a group of programs (repeatable); all by default")
    parser.add_argument("--verify", action="store_true",
                        help="check an unknown minimality by a bounded search below it")
    parser.add_argument("--verify-budget", type=float, default=30.0, help="seconds per check")
    parser.add_argument("--shrink-budget", type=float, default=None,
                        help="explore's shrink_budget (seconds; default: explore's default)")
    args = parser.parse_args()
    budget = {} if args.shrink_budget is None else {"shrink_budget": args.shrink_budget}
    rows = []
    for group in args.only or list(GROUPS):
        for case in GROUPS[group]():
            rows.append(measure(case, verify=args.verify_budget if args.verify else None,
                                budget=budget))
            print(f"  {case.group}: {case.name} done", file=sys.stderr, flush=True)
    print(f"Python {sys.version.split()[0]}")
    print(table(rows))


if __name__ == "__main__":
    main()
