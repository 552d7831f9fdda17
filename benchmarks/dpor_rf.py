"""How many of DPOR's classes the Condition buffer really needs (issue 33, item 3).

Runs DPOR on ``programs.condition_buffer(p, c, items)`` (sync granularity) and gives each
run a signature: which write each read read from (reads-from, ``rf``), the events named by
thread and their index in the thread, and the order of the writes to each object
(``co``), leaving out the objects named by ``--ignore``.  The number of distinct
signatures is an upper bound on the classes an equivalence that keeps only those
relations has (memory is labelled by first touch, so one object may carry two labels in
two runs: never fewer classes, sometimes more).  Under ``trace`` every Mazurkiewicz
class is visited, so the count is exact up to that labelling.

    python benchmarks/dpor_rf.py 2 2 1 --equivalence lock-aware
    python benchmarks/dpor_rf.py 2 2 2 --equivalence lock-aware --max-runs 2000 \\
        --ignore Lock#,RLock#,Condition#
    python benchmarks/dpor_rf.py 2 1 2 --equivalence lock-aware --ignore Lock#,RLock#,Condition# \\
        --drop-failed-checks --memory-only

``--drop-failed-checks`` also leaves out each thread's failed checks: the steps from its
last memory write (or its last park) up to a step that parks on a Condition, none of
which wrote memory (a while-loop wait that read its predicate false and waited again).
The count then bounds the classes of an equivalence with an await rule, where only the
check that ends a loop counts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coordkit import DFSScheduler  # noqa: E402
from coordkit.engine.points import WRITE  # noqa: E402
from tests.sched import programs  # noqa: E402
from tests.sched.dpor_oracle import outcomes, report  # noqa: E402


def failed_checks(steps: Any) -> set[int]:
    """The indices of the steps of failed checks (see ``--drop-failed-checks``)."""
    dropped: set[int] = set()
    since: dict[int, list[int]] = {}  # thread -> its steps since its last write or park
    for k, step in enumerate(steps):
        footprint = step.footprint or ()
        if any(e.access == WRITE and e.obj.startswith("mem") for e in footprint):
            since[step.thread] = []
        elif step.point.obj.startswith("Condition#") and any(e.op == "park" for e in footprint):
            dropped.update(since.pop(step.thread, ()))
            dropped.add(k)
        else:
            since.setdefault(step.thread, []).append(k)
    return dropped


def signature(steps: Any, ignored: tuple[str, ...], drop_failed_checks: bool = False,
              memory_only: bool = False) -> tuple[frozenset, frozenset]:
    """A run's reads-from and per-object write order, without the ``ignored`` objects (and
    without its failed checks' steps; of memory only)."""
    last: dict[str, tuple[int, int]] = {}
    count: dict[int, int] = {}
    rf: list = []
    co: dict[str, list] = {}
    dropped = failed_checks(steps) if drop_failed_checks else set()
    for k, step in enumerate(steps):
        if k in dropped:
            continue
        t = step.thread
        k = count[t] = count.get(t, -1) + 1
        for e in step.footprint or ():
            if e.obj.startswith(ignored) or (memory_only and not e.obj.startswith("mem")):
                continue
            if e.access == WRITE:
                last[e.obj] = (t, k)
                co.setdefault(e.obj, []).append((t, k))
            else:
                rf.append(((t, k, e.obj), last.get(e.obj)))
    return frozenset(rf), frozenset((o, tuple(v)) for o, v in co.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", type=int, nargs=3, help="producers consumers items")
    parser.add_argument("--equivalence", default="trace")
    parser.add_argument("--max-runs", type=int, default=100_000)
    parser.add_argument("--ignore", default="Lock#,RLock#",
                        help="comma-separated object prefixes left out of the signature")
    parser.add_argument("--memory-only", action="store_true",
                        help="only memory objects in the signature (no thread, lock or wake-up)")
    parser.add_argument("--drop-failed-checks", action="store_true",
                        help="leave out the steps of while-loop waits' failed checks")
    args = parser.parse_args()
    ignored = tuple(args.ignore.split(","))
    rf_only: set = set()
    rf_co: set = set()

    class Signed(DFSScheduler):
        def end(self, run: Any) -> None:
            if not getattr(run, "pruned", False):
                rf, co = signature(getattr(run, "footprints", None) or self._history, ignored,
                                   args.drop_failed_checks, args.memory_only)
                rf_only.add(rf)
                rf_co.add((rf, co))
            super().end(run)

    p, c, items = args.shape
    scheduler = Signed(None, equivalence=args.equivalence)
    start = time.process_time()
    try:
        outcomes(lambda: report(programs.condition_buffer(p, c, items)), scheduler,
                 max_runs=args.max_runs)
        done = "exhausted"
    except AssertionError:
        done = "NOT exhausted"
    print(f"{p}P/{c}C/{items} {args.equivalence} ({done}): {scheduler.schedules:,} schedules, "
          f"{scheduler.classes:,} classes, rf signatures {len(rf_only):,}, rf+co signatures "
          f"{len(rf_co):,} (ignoring {args.ignore}"
          f"{', failed checks' if args.drop_failed_checks else ''}"
          f"{', all but memory' if args.memory_only else ''}), {time.process_time() - start:.1f} s CPU")


if __name__ == "__main__":
    main()
