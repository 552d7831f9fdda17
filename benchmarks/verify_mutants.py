"""Every mutant of the stateful suite killed by exhaustion (FORMAL-28).

For each mutant of ``tests/stateful/mutants.py`` (``MUTANTS``), run every row of
its primitive in the verification table with the mutant in place of the
reference class, smallest first, and print the smallest killing row (fewest
calls, then fewest threads, then fewest schedules to the kill; no row bigger
than a kill is run), the schedules it took, and how the
run failed.  A mutant no row kills is printed as SURVIVED and the exit status is
1: the table misses a configuration (add the row, never drop the mutant).

    python benchmarks/verify_mutants.py                  # every mutant, nightly rows (~1-2 min)
    python benchmarks/verify_mutants.py --profile ci     # the ci rows only
    python benchmarks/verify_mutants.py --only RacyDequeue
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from coordkit.verify.table import smallest_kill  # noqa: E402
from tests.stateful.mutants import MUTANTS, Mutant  # noqa: E402


def primitive(mutant: Mutant) -> str:
    """The primitive a mutant replaces: its machine's name without ``Machine``."""
    return mutant.machine.removesuffix("Machine")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=["ci", "nightly"], default="nightly")
    parser.add_argument("--only", metavar="MUTANT")
    args = parser.parse_args(argv)
    mutants = [m for m in MUTANTS if args.only in (None, m.name)]
    survivors = []
    print(f"{'mutant':34} {'race':5} {'smallest killing configuration':36} {'schedules':>9}  how")
    for mutant in mutants:
        start = time.perf_counter()
        kill: Any = smallest_kill(mutant.factory, primitive(mutant), args.profile)
        if kill is None:
            survivors.append(mutant.name)
            print(f"{mutant.name:34} {'yes' if mutant.race else '':5} {'SURVIVED':36}", flush=True)
            continue
        print(f"{mutant.name:34} {'yes' if mutant.race else '':5} {kill.config.name:36} "
              f"{kill.schedules:>9}  {kill.failure}  [{time.perf_counter() - start:.1f}s]", flush=True)
    print(f"\n{len(mutants) - len(survivors)} of {len(mutants)} mutant(s) killed by exhaustion"
          + (f"; survived: {', '.join(survivors)}" if survivors else ""))
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
