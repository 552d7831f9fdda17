"""``python -m examples.zoo``: explore every zoo bug and print the README table.

For each entry: the failure kind coordkit finds in ``buggy()`` (with
``examples.zoo.FIND``: PCT, seed 1), whether the plain round-robin schedule
already fails, the preemptions of the reported schedule after shrinking (and
before), and the schedules it took to find with PCT and with bounded DFS.
"""

from __future__ import annotations

import sys
import time

import coordkit
from examples.zoo import FIND, NAMES, ZOO, options, story

# The bounded exhaustive search, for comparison: how many schedules it takes.
DFS = {"strategy": "dfs", "max_preemptions": 2, "max_schedules": 5000}


def _round_robin_fails(name: str) -> bool:
    try:
        coordkit.replay(ZOO[name].buggy, [], strict=False, **options(name))
    except Exception:
        return True
    return False


def rows() -> list[dict]:
    out = []
    for name in NAMES:
        started = time.perf_counter()
        buggy, opts = ZOO[name].buggy, options(name)
        if opts.get("granularity") == "line" and sys.version_info < (3, 11):
            print(f"{name}: skipped, granularity='line' needs Python 3.11+", file=sys.stderr)
            continue
        result = coordkit.explore(buggy, **FIND, **opts)
        failure = result.failure
        dfs = coordkit.explore(buggy, **DFS, **opts)
        out.append({
            "name": name,
            "kind": failure.kind if failure else "NOT FOUND",
            "error": type(failure.exception).__name__ if failure and failure.exception else "",
            "preemptions": failure.preemptions if failure else None,
            "before": failure.original_preemptions if failure else None,
            "schedules": failure.schedules_run if failure else result.schedules_run,
            "dfs": dfs.failure.schedules_run if dfs.failure else f"not in {dfs.schedules_run}",
            "round_robin_fails": _round_robin_fails(name),
            "seconds": time.perf_counter() - started,
            "story": story(name).replace("``", "`"),
        })
    return out


def table(rows: list[dict]) -> str:
    lines = [
        "| bug | kind found | round robin | preemptions after shrinking (before) "
        "| schedules to find: PCT / DFS | story |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        kind = r["kind"] + (f" ({r['error']})" if r["error"] else "")
        robin = "fails" if r["round_robin_fails"] else "passes"
        lines.append(
            f"| [`{r['name']}`]({r['name']}.py) | {kind} | {robin} | {r['preemptions']} ({r['before']}) "
            f"| {r['schedules']} / {r['dfs']} | {r['story']} |"
        )
    return "\n".join(lines)


def main() -> int:
    found = rows()
    print(table(found))
    print(f"\n{sum(r['seconds'] for r in found):.1f}s in all", file=sys.stderr)
    return 0 if all(r["kind"] != "NOT FOUND" for r in found) else 1


if __name__ == "__main__":
    sys.exit(main())
