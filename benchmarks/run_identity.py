#!/usr/bin/env python3
"""Whether a change to the run's hot path left every run as it was (issue 33).

Explores 9 of the test suite's programs at every granularity this Python has (sync, auto,
and line from 3.11) with the random, PCT and DFS strategies and 2 seeds, 12 schedules
each, without shrinking (its proof of minimality chooses between the reduced and the
unreduced bounded search by their measured speed, SCHED-93, so its runs depend on the
machine's load, even unbounded in time), and prints one line per exploration (program,
granularity, strategy, seed, schedules, runs, a hash of every run's choices, steps and
where each thread ended, whether it failed) and a last line with the totals.  Two trees
make the same runs when their outputs are equal, on the same Python::

    python benchmarks/run_identity.py > after.txt
    (cd other-checkout && python benchmarks/run_identity.py) > before.txt
    diff before.txt after.txt

``COORDKIT_PURE_PYTHON=1`` forces the pure-Python tracer: its output must equal the
accelerated one's (SCHED-67).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import coordkit  # noqa: E402
from coordkit.engine import tracing  # noqa: E402
from coordkit.engine.runtime import Execution  # noqa: E402
from tests.sched import programs  # noqa: E402

PROGRAMS = (programs.lost_update, programs.lost_update_in_place,
            programs.lost_update_attribute_in_loop, programs.locked_counter,
            programs.one_slot_buffer, programs.lock_order_deadlock, programs.missed_notify,
            programs.check_then_act, programs.producer_consumer_with_sentinel)


def _digest(runs: list[Any]) -> str:
    return hashlib.sha1(json.dumps(runs, default=str).encode()).hexdigest()


def main() -> None:
    log: list[Any] = []
    run = Execution.run

    def logged(self: Execution, fn: Any) -> Execution:
        run(self, fn)
        log.append((self.choices, self.steps, [str(t.pt) for t in self.tasks]))
        return self

    Execution.run = logged  # type: ignore[method-assign]
    granularities = ("sync", "auto") + (("line",) if tracing.SWITCHES else ())
    lines = 0
    for program in PROGRAMS:
        for granularity in granularities:
            for strategy in ("random", "pct", "dfs"):
                for seed in (1, 2):
                    first = len(log)
                    result = coordkit.explore(program, granularity=granularity,
                                              strategy=strategy, seed=seed, max_schedules=12,
                                              shrink=False)
                    print(program.__name__, granularity, strategy, seed, result.schedules_run,
                          len(log) - first, _digest(log[first:])[:10],
                          result.failure is not None)
                    lines += 1
    print(lines, sum(len(choices) for choices, _, _ in log), _digest(log))


if __name__ == "__main__":
    main()
