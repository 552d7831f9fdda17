"""DPOR's soundness campaign on generated programs of varied shape (issue 30, SCHED-50).

For each granularity, Hypothesis draws plans (``tests/sched/shapes.py``: threads started
between operations and by other threads, observed before their start and after their
end, daemons and Timers, zero and small timeouts, C-level accesses, joins of a subset),
each becomes a program, and DPOR's unbounded level is compared with the unreduced
search (``tests/sched/dpor_oracle.compare``).  A program whose unreduced search needs
more than ``--max-runs`` schedules is rejected (not counted as exhausted).  The table
gives, per granularity: programs drawn, rejected, exhausted (both searches ran to the
end), differences (sets of outcomes not equal), errors (a search raised: a check of
``CheckedDPOR``, a diverged replay), and the schedules DPOR and the unreduced search ran
over the exhausted programs.  Each difference and error is printed with its plan, which
``--replay`` runs again (``--minimise`` shrinks it first).

    python benchmarks/dpor_campaign.py --programs 300             # per granularity
    python benchmarks/dpor_campaign.py --seconds 1200 --granularity sync line auto
    python benchmarks/dpor_campaign.py --replay "Plan(...)" --granularity line --minimise
    python benchmarks/dpor_campaign.py --bounded --seconds 600 --granularity sync line
    python benchmarks/dpor_campaign.py --programs 300 --theme sections --equivalence lock-aware

``--bounded`` compares the reduced bounded search (``DFSScheduler(k, reduce_bound=True)``,
SCHED-71, with its sleep sets, SCHED-94, unless ``--no-bounded-sleep``) with
``Enumerate(k)`` at every bound k = 0..3 instead (a program whose oracle needs more than
``--max-runs`` schedules at some bound is rejected); its schedule columns are summed
over the bounds.

``--theme sections`` draws critical sections and Condition waits (``shapes.SECTIONS``);
``--equivalence lock-aware`` compares DPOR under the lock-aware equivalence (SCHED-80).

``COORDKIT_CAMPAIGN_SEED`` (or ``--seed``) fixes the draws.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from coordkit.engine.run import RunOptions, Session  # noqa: E402
from coordkit.engine.schedulers import DFSScheduler  # noqa: E402
from coordkit.engine.tracing import SWITCHES  # noqa: E402
from tests.sched import shapes  # noqa: E402
from tests.sched.dpor_oracle import Enumerate, compare, outcomes  # noqa: E402
from tests.sched.shapes import Plan, Spec  # noqa: E402

CHUNK = 100  # programs per Hypothesis call (each with its own seed): larger calls draw larger plans
# What the command line chose: the equivalence DPOR explores, the generator's theme.
OPTIONS = {"equivalence": "trace", "theme": "any"}


@dataclass
class Tally:
    programs: int = 0
    rejected: int = 0
    exhausted: int = 0
    differences: int = 0
    errors: int = 0
    dpor_schedules: int = 0
    full_schedules: int = 0
    seconds: float = 0.0
    found: list[str] = field(default_factory=list)


BOUNDS = (0, 1, 2, 3)  # of --bounded
MODE = {"bounded": False, "sleep": True}  # set by main


def bounded(program: Any, granularity: str, max_runs: int) -> tuple[set, set, int, int]:
    """The reduced bounded search's outcomes and the oracle's (each bound's tagged with
    it), and their schedules summed over the bounds."""

    class Reduced(DFSScheduler):
        bounded_sleep_sets = MODE["sleep"]

    reduced: set = set()
    full: set = set()
    runs = [0, 0]
    with Session(RunOptions(granularity=granularity, max_steps=2_000), quiet=True) as session:
        for k in BOUNDS:
            seen, n = outcomes(program, Enumerate(k), max_runs=max_runs, session=session)
            full |= {(k, o) for o in seen}
            runs[1] += n
            seen, n = outcomes(program, Reduced(k, reduce_bound=True), max_runs=10 * max_runs,
                               session=session)
            reduced |= {(k, o) for o in seen}
            runs[0] += n
    return reduced, full, runs[0], runs[1]


def check(plan: Plan, granularity: str, directory: Path, max_runs: int) -> tuple[str, Any]:
    """("rejected" | "same" | "differs" | "error", details) for one plan."""
    try:
        program = shapes.load(plan, directory)
        if MODE["bounded"]:
            reduced, full, reduced_runs, full_runs = bounded(program, granularity, max_runs)
        else:
            reduced, full, reduced_runs, full_runs = compare(
                program, granularity=granularity, max_runs=max_runs, reuse=True,
                equivalence=OPTIONS["equivalence"])
    except AssertionError as exc:
        if "not exhausted" in str(exc):
            return "rejected", str(exc)
        return "error", f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # every error of a search is a finding
        return "error", f"{type(exc).__name__}: {exc}"
    if reduced != full:
        return "differs", (full - reduced, reduced - full, reduced_runs, full_runs, full)
    return "same", (reduced_runs, full_runs)


def minimise(plan: Plan, granularity: str, directory: Path, max_runs: int) -> Plan:
    """The smallest plan reachable by single edits (``shapes.smaller``) that still differs
    (or errs) the way ``plan`` does."""
    kind = check(plan, granularity, directory, max_runs)[0]
    shrunk = True
    while shrunk:
        shrunk = False
        for candidate in shapes.smaller(plan):
            if check(candidate, granularity, directory, max_runs)[0] == kind:
                plan, shrunk = candidate, True
                break
    return plan


def describe(plan: Plan, granularity: str, verdict: str, details: Any) -> str:
    if verdict == "differs":
        missed, invented, reduced_runs, full_runs, full = details
        what = (f"missed {sorted(missed, key=repr)} invented {sorted(invented, key=repr)} "
                f"of {len(full)} outcomes (schedules: DPOR {reduced_runs}, unreduced {full_runs})")
    else:
        what = str(details)[:400]
    return f"[{granularity}] {verdict}: {what}\n  plan: {plan!r}"


def campaign(granularity: str, tally: Tally, directory: Path, *, programs: int, deadline: float,
             max_runs: int, first_seed: int, do_minimise: bool) -> None:
    chunk = 0
    started = time.monotonic()
    while tally.programs < programs and time.monotonic() < deadline:
        @seed(first_seed + chunk)
        @settings(max_examples=CHUNK, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(shapes.plans(granularity, OPTIONS["theme"]))
        def one(plan: Plan) -> None:
            if tally.programs >= programs or time.monotonic() >= deadline:
                return
            tally.programs += 1
            verdict, details = check(plan, granularity, directory, max_runs)
            if verdict == "rejected":
                tally.rejected += 1
                return
            if verdict == "same":
                tally.exhausted += 1
                tally.dpor_schedules += details[0]
                tally.full_schedules += details[1]
                return
            tally.differences += verdict == "differs"
            tally.errors += verdict == "error"
            tally.exhausted += verdict == "differs"
            if do_minimise:
                plan = minimise(plan, granularity, directory, max_runs)
                verdict, details = check(plan, granularity, directory, max_runs)
            text = describe(plan, granularity, verdict, details)
            if text not in tally.found:  # a minimised plan is often found again
                tally.found.append(text)
                print(text, flush=True)

        one()
        chunk += 1
    tally.seconds = time.monotonic() - started


def table(tallies: dict[str, Tally]) -> str:
    head = ("granularity", "programs", "rejected", "exhausted", "differences", "errors",
            "schedules DPOR", "schedules unreduced", "seconds")
    rows = [head] + [(g, t.programs, t.rejected, t.exhausted, t.differences, t.errors,
                      t.dpor_schedules, t.full_schedules, f"{t.seconds:.0f}")
                     for g, t in tallies.items()]
    total = [sum(getattr(t, name) for t in tallies.values())
             for name in ("programs", "rejected", "exhausted", "differences", "errors",
                          "dpor_schedules", "full_schedules")]
    rows.append(("total", *total, f"{sum(t.seconds for t in tallies.values()):.0f}"))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(head))]
    return "\n".join("  ".join(str(cell).rjust(w) for cell, w in zip(row, widths)) for row in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--granularity", nargs="+", default=["sync", "line", "auto"],
                        choices=["sync", "line", "auto"])
    parser.add_argument("--programs", type=int, default=10**9, help="per granularity")
    parser.add_argument("--seconds", type=float, default=None,
                        help="per granularity (default: no time budget)")
    parser.add_argument("--max-runs", type=int, default=800,
                        help="the unreduced search's budget per program (beyond: rejected)")
    parser.add_argument("--seed", type=int, default=int(os.environ.get("COORDKIT_CAMPAIGN_SEED", "0")))
    parser.add_argument("--minimise", action="store_true", help="shrink each difference found")
    parser.add_argument("--replay", help="a plan's repr: run it (at the first --granularity)")
    parser.add_argument("--bounded", action="store_true",
                        help="the reduced bounded search against Enumerate(k), k = 0..3")
    parser.add_argument("--no-bounded-sleep", action="store_true",
                        help="with --bounded: without its sleep sets (SCHED-94)")
    parser.add_argument("--equivalence", default="trace", choices=["trace", "lock-aware"])
    parser.add_argument("--theme", default="any", choices=["any", "sections"])
    args = parser.parse_args()
    MODE["bounded"], MODE["sleep"] = args.bounded, not args.no_bounded_sleep
    OPTIONS.update(equivalence=args.equivalence, theme=args.theme)
    if args.programs == 10**9 and args.seconds is None and args.replay is None:
        parser.error("give --programs, --seconds or --replay")
    granularities = [g for g in args.granularity if g != "line" or SWITCHES]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        if args.replay:
            replay(eval(args.replay, {"Plan": Plan, "Spec": Spec}), granularities[0], directory,
                   args.max_runs, args.minimise)
            return
        tallies: dict[str, Tally] = {}
        for granularity in granularities:
            tallies[granularity] = Tally()
            deadline = time.monotonic() + (args.seconds if args.seconds is not None else 1e9)
            campaign(granularity, tallies[granularity], directory, programs=args.programs,
                     deadline=deadline, max_runs=args.max_runs, first_seed=args.seed,
                     do_minimise=args.minimise)
        print(table(tallies))


def replay(plan: Plan, granularity: str, directory: Path, max_runs: int, do_minimise: bool) -> None:
    if do_minimise:
        plan = minimise(plan, granularity, directory, max_runs)
    verdict, details = check(plan, granularity, directory, max_runs)
    print(shapes.source(plan))
    print(describe(plan, granularity, verdict, details))
    if verdict == "differs":
        print(f"  unreduced outcomes: {sorted(details[4], key=repr)}")


if __name__ == "__main__":
    main()
