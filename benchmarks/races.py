"""Race-directed defaults: what each granularity finds, and what race detection costs.

For every buggy program of the real-bug set (``tests/realbugs``) and of the zoo
(``examples/zoo``) this explores with each granularity (``sync``, ``line``, ``auto``)
under the same seed and budget, and prints whether the bug was found, after how many
schedules and seconds; then the fixed versions at the defaults (a failure there is a
false alarm); then the cost of race detection in schedules per second on the fixed
versions, and the median time-to-find at ``auto`` over ``sync`` on the bugs ``sync``
finds too; then what seeing calls as accesses (RACE-10, RACE-11) costs: schedules per
second at auto over the real-bug set's fixed versions with them and without them (the
table's new entries, a container's truth and the unknown C calls' guesses switched off;
a generator's state is still seen); then what looking into the stdlib's Python code on
the program's objects (RACE-12) costs, the same way, with ``frames.TRACED_LIBRARY``
emptied.  Rates are CPU time (``time.process_time``), the best of two: the machine is
shared.  One run prints every ratio, then the table again in Markdown.

    python benchmarks/races.py               # the full table (~5 min on 2 busy cores)
    python benchmarks/races.py --quick       # smaller budget
    python benchmarks/races.py --cost-only   # only the two cost ratios
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import coordkit  # noqa: E402
from coordkit.engine import accesses, frames, tracing  # noqa: E402
from examples.zoo import ZOO, options  # noqa: E402
from tests.realbugs.ccalls import C_CALL_BUGS  # noqa: E402
from tests.realbugs.programs import REAL_BUGS  # noqa: E402
from tests.realbugs.stdlib import STDLIB_BUGS  # noqa: E402

GRANULARITIES = ("sync", "line", "auto")
BUGS = REAL_BUGS + C_CALL_BUGS + STDLIB_BUGS


def programs() -> list[tuple[str, object, object, dict]]:
    """(name, buggy, fixed, options that shape the program's semantics)."""
    out = [(f"real:{b.id}", b.buggy, b.fixed, {}) for b in BUGS]
    for name, module in ZOO.items():
        opts = {k: v for k, v in options(name).items() if k != "granularity"}
        out.append((f"zoo:{name}", module.buggy, module.fixed, opts))
    return out


def find(fn, granularity: str, budget: int, opts: dict) -> tuple[bool, int, float]:
    if granularity == "line" and sys.version_info < (3, 11):
        return False, 0, 0.0
    started = time.process_time()
    result = coordkit.explore(fn, seed=1, max_schedules=budget, granularity=granularity,
                              shrink=False, **opts)
    found = result.failure is not None
    runs = result.failure.schedules_run if found else result.schedules_run
    return found, runs, time.process_time() - started


def rate(fn, granularity: str, races: str, runs: int, opts: dict) -> float:
    started = time.process_time()
    result = coordkit.explore(fn, seed=1, max_schedules=runs, granularity=granularity,
                              races=races, **opts)
    return result.schedules_run / max(time.process_time() - started, 1e-6)


@contextlib.contextmanager
def without_call_accesses() -> Iterator[None]:
    """RACE-10's new table entries, a container's truth and RACE-11's guesses off."""
    added = {k: v for k, v in accesses._FUNCTIONS.items()
             if k[0] in ("_heapq", "_bisect", "copy", "json", "pprint", "heapq", "statistics")}
    site_of, guess = accesses._site_of, accesses._guess

    def no_truth(*args):  # no truth sites at all: their instruction events cost too
        found = site_of(*args)
        return None if found is not None and found[0] == "truth" else found

    for key in added:
        del accesses._FUNCTIONS[key]
    accesses._site_of, accesses._guess = no_truth, lambda fn, bound, pos, kw: []
    accesses._sites_cache.clear()
    tracing._by_mode.clear()  # (the offsets the tracer derives from the sites)
    try:
        yield
    finally:
        accesses._FUNCTIONS.update(added)
        accesses._site_of, accesses._guess = site_of, guess
        accesses._sites_cache.clear()
        tracing._by_mode.clear()


@contextlib.contextmanager
def without_stdlib_code() -> Iterator[None]:
    """RACE-12 off: no stdlib file is looked into."""
    traced = frames.TRACED_LIBRARY
    frames.TRACED_LIBRARY = {}
    tracing._traced_cache.clear()
    try:
        yield
    finally:
        frames.TRACED_LIBRARY = traced
        tracing._traced_cache.clear()
        if hasattr(sys, "monitoring"):  # (PY_START was disabled where nothing was traced)
            sys.monitoring.restart_events()


def cost(what: str, switched_off, runs: int) -> None:
    """Schedules per second at auto over the real-bug set's fixed versions, with and
    without ``what``, each the best of two (noise on a shared machine)."""
    totals = {"with": 0.0, "without": 0.0}
    ratios = []
    for bug in BUGS:
        with_ = max(rate(bug.fixed, "auto", "report", runs, {}) for _ in range(2))
        with switched_off():
            without = max(rate(bug.fixed, "auto", "report", runs, {}) for _ in range(2))
        totals["with"] += runs / with_
        totals["without"] += runs / without
        ratios.append(without / with_)
    print(f"{what} at auto, over the {len(BUGS)} real-bug fixed versions, {runs} schedules "
          f"each: {len(BUGS) * runs / totals['without']:.0f} schedules/s without, "
          f"{len(BUGS) * runs / totals['with']:.0f} with: "
          f"{totals['with'] / totals['without']:.2f}x slower overall, median "
          f"{statistics.median(ratios):.2f}x, worst {max(ratios):.2f}x")


def call_access_cost(runs: int) -> None:
    cost("calls as accesses (RACE-10/11)", without_call_accesses, runs)
    cost("the stdlib's code on the program's objects (RACE-12)", without_stdlib_code, runs)
    logging_cost(runs // 10)


_EARLY = logging.getLogger("benchmarks.races")  # with a handler made before any run


def _two_threads_logging() -> None:
    def work() -> None:
        for i in range(100):
            _EARLY.info("item %d", i)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def logging_cost(runs: int) -> None:
    """What RACE-12 costs a program that only logs through a handler made before the run
    (not looked into, RACE-13): CPU seconds per schedule at the defaults, best of 3."""
    _EARLY.addHandler(logging.StreamHandler(io.StringIO()))
    _EARLY.setLevel(logging.INFO)
    _EARLY.propagate = False

    def seconds() -> float:
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            coordkit.explore(_two_threads_logging, seed=1, max_schedules=runs)
            best = min(best, time.process_time() - started)
        return best / runs

    with_ = seconds()
    with without_stdlib_code():
        without = seconds()
    print(f"RACE-12 on a program logging 2x100 records through a handler made before the "
          f"run, {runs} schedules: {without * 1e3:.1f} ms/schedule without, "
          f"{with_ * 1e3:.1f} with: {with_ / without:.2f}x")


def markdown(rows: list[tuple[str, list[tuple[bool, int, float]], bool]]) -> None:
    """The table again, for benchmarks/README.md: schedules and CPU seconds to find."""
    print("\n| program | " + " | ".join(GRANULARITIES) + " | fixed (auto) |")
    print("|---|" + "---|" * len(GRANULARITIES) + "---|")
    for name, cells, clean in rows:
        shown = [f"{runs} / {secs:.2f}s" if found else f"not in {runs}"
                 for found, runs, secs in cells]
        print(f"| {name} | " + " | ".join(shown) + f" | {'clean' if clean else 'FAIL'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cost-only", action="store_true")
    args = parser.parse_args()
    if args.cost_only:
        call_access_cost(100 if args.quick else 200)
        return
    budget = 300 if args.quick else 1000
    rows: list = []
    found_at = {g: 0 for g in GRANULARITIES}
    times: dict[str, dict[str, float]] = {}
    false_alarms, total = 0, 0
    print(f"coordkit {coordkit.__version__}, Python {sys.version.split()[0]}, budget {budget} "
          "schedules, seed 1\n")
    print(f"{'program':44} | " + " | ".join(f"{g:>17}" for g in GRANULARITIES) + " | fixed")
    print("-" * 44 + "-+-" + "-+-".join("-" * 17 for _ in GRANULARITIES) + "-+------")
    for name, buggy, fixed, opts in programs():
        total += 1
        cells, shown = [], []
        for g in GRANULARITIES:
            found, runs, secs = find(buggy, g, budget, opts)
            found_at[g] += found
            if found:
                times.setdefault(name, {})[g] = secs
            cells.append((found, runs, secs))
            shown.append(f"{runs:>5} {secs:6.2f}s {'yes' if found else ' no'}")
        clean = coordkit.explore(fixed, seed=1, max_schedules=300, **opts).failure is None
        false_alarms += not clean
        rows.append((name, cells, clean))
        print(f"{name:44} | " + " | ".join(shown) + f" | {'clean' if clean else 'FAIL'}")
    print("\nfound: " + ", ".join(f"{g} {found_at[g]}/{total}" for g in GRANULARITIES)
          + f"; false alarms on the fixed versions (auto): {false_alarms}")
    both = [t["auto"] / t["sync"] for t in times.values() if "auto" in t and "sync" in t]
    if both:
        print(f"median time-to-find auto / sync, over the {len(both)} bugs sync finds: "
              f"{statistics.median(both):.2f}x")
    detection = []
    for _name, _buggy, fixed, opts in programs():
        base = rate(fixed, "sync", "ignore", 200, opts)
        detection.append((base / rate(fixed, "sync", "report", 200, opts),
                     base / rate(fixed, "auto", "report", 200, opts)))
    print(f"race detection cost (schedules/s at sync without it / with it), median over the "
          f"fixed versions: {statistics.median(c[0] for c in detection):.2f}x at sync, "
          f"{statistics.median(c[1] for c in detection):.2f}x at auto")
    call_access_cost(100 if args.quick else 200)
    markdown(rows)


if __name__ == "__main__":
    main()
