#!/usr/bin/env python3
"""coordkit's controlled scheduler against the Python peers, on the same programs.

Runs coordkit, interleave-test 0.1.0 ("IT") and frontrun 0.7.0 ("FR") on the
programs in ``benchmarks/programs.py`` and prints one table plus the ratios
"coordkit / best peer".  Every measurement is one ``explore()`` call in a fresh
subprocess (the tools patch ``threading`` globally; FR must also run under its
``frontrun`` CLI), repeated three times -- seeds 1, 2, 3 for the randomised
strategies, the same run three times for the systematic ones -- and reported
as the median.  Times are the wall-clock seconds of the ``explore()`` call only
(process start and imports excluded); coordkit's include shrinking the failure
and the final recorded replay, FR's use ``reproduce_on_failure=0``.

Sections:

1. throughput: schedules per second on a correct lock-protected counter
   (3 threads x 3 increments), per strategy;
2. time and schedules to find a lost update (needs line/bytecode granularity);
3. missed-notify hangs in a Condition-based bounded queue (close without notify,
   and the close-window variant);
4. a check-then-act hang on ``queue.Queue`` (one item, two consumers).

Usage::

    python benchmarks/scheduler_vs_peers.py            # full run (a few minutes)
    python benchmarks/scheduler_vs_peers.py --quick    # short budgets
    python benchmarks/scheduler_vs_peers.py --peer-python PEER_VENV/bin/python \\
        --coordkit-python .venv/bin/python

``--peer-python`` is an interpreter (Python >= 3.12 for IT) that has
``interleave-test``, ``frontrun`` and ``coordkit`` installed; coordkit is run on
it too so all three tools share one interpreter.  Each ``--coordkit-python``
adds a coordkit-only column set for another interpreter (e.g. 3.11).  A peer
that is not importable there is reported as "not installed" and the rest still
runs.  ``--json FILE`` also writes every raw run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# The peers' interpreter when --peer-python is not given (else the running one).
DEFAULT_PEER_PYTHON = os.environ.get("COORDKIT_PEER_PYTHON", "")
SEEDS = (1, 2, 3)
RESULT_TAG = "BENCH-RESULT "

# ---------------------------------------------------------------------------------
# Worker side: one configuration, one explore() call, one JSON line on stdout.
# ---------------------------------------------------------------------------------


def _worker(cfg: dict[str, Any]) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from programs import PROGRAMS, model

    prog = PROGRAMS[cfg["program"]]
    tool, strategy, budget, seed = cfg["tool"], cfg["strategy"], cfg["budget"], cfg["seed"]
    out: dict[str, Any] = {"python": ".".join(map(str, sys.version_info[:3]))}

    if tool == "coordkit":
        import coordkit

        fn = model(prog)
        t0 = time.perf_counter()
        r = coordkit.explore(fn, strategy=strategy, max_schedules=budget, seed=seed,
                             granularity=cfg["granularity"], **cfg.get("kwargs", {}))
        wall = time.perf_counter() - t0
        f = r.failure
        out.update(
            wall=wall, schedules=r.schedules_run, exhausted=r.exhausted,
            verdict="pass" if f is None else f.kind,
            preemptions=None if f is None else f.preemptions,
            shrink_runs=None if f is None else f.shrink_runs,
        )
    elif tool == "it":
        import interleave_test as it

        fn = model(prog)
        t0 = time.perf_counter()
        r = it.explore(fn, iterations=budget, seed=seed, strategy=strategy,
                       granularity=cfg["granularity"], raise_on_failure=False,
                       timeout=30.0, **cfg.get("kwargs", {}))
        wall = time.perf_counter() - t0
        f = r.failure
        verdict = "pass" if f is None else f.kind
        if f is not None and f.kind == "exception" and f.exception is not None:
            verdict = "exception:" + type(f.exception).__name__
        out.update(wall=wall, schedules=r.schedules_run, exhausted=r.exhausted, verdict=verdict,
                   schedule_len=None if f is None else len(f.schedule))
    elif tool == "fr":
        import frontrun

        kwargs: dict[str, Any] = {"reproduce_on_failure": 0, **cfg.get("kwargs", {})}
        if strategy == "random":
            kwargs.update(max_attempts=budget, seed=seed)
        else:
            kwargs.update(max_executions=budget)
        t0 = time.perf_counter()
        try:
            r = frontrun.explore(prog.setup, list(prog.workers), prog.invariant,
                                 strategy=strategy, **kwargs)
        except Exception as exc:  # FR DPOR lets a worker's exception escape explore()
            wall = time.perf_counter() - t0
            out.update(wall=wall, schedules=None, exhausted=None,
                       verdict="raised:" + type(exc).__name__, detail=str(exc)[:300])
        else:
            wall = time.perf_counter() - t0
            if r.property_holds is True:
                verdict = "pass"
            elif r.property_holds is None:
                verdict = "inconclusive"
            else:
                text = (r.explanation or "").lower()
                verdict = "deadlock" if "deadlock" in text else "violation"
            out.update(wall=wall, schedules=r.num_explored, exhausted=r.exhausted,
                       verdict=verdict,
                       detail=(r.inconclusive_reason or (r.explanation or "").split("\n", 1)[0])[:300])
    else:
        raise ValueError(f"unknown tool {tool!r}")
    return out


# ---------------------------------------------------------------------------------
# Orchestrator side.
# ---------------------------------------------------------------------------------

TOOL_LABEL = {"coordkit": "coordkit", "it": "IT", "fr": "FR"}


@dataclass
class Config:
    section: str
    program: str
    tool: str
    strategy: str
    budget: int
    granularity: str = "sync"
    kwargs: dict[str, Any] = field(default_factory=dict)
    python: str = ""
    note: str = ""
    randomised: bool = True
    timeout: float = 120.0

    @property
    def label(self) -> str:
        s = f"{TOOL_LABEL[self.tool]} {self.strategy}"
        if self.tool != "fr":
            s += f" ({self.granularity})"
        if self.note:
            s += f" [{self.note}]"
        return s


@dataclass
class Outcome:
    config: Config
    runs: list[dict[str, Any]]
    status: str = "ok"  # ok | not installed | error

    def median(self, key: str) -> float | None:
        vals = [r[key] for r in self.runs if isinstance(r.get(key), (int, float))]
        return statistics.median(vals) if vals else None

    def sps_median(self) -> float | None:
        vals = [r["schedules"] / r["wall"] for r in self.runs
                if isinstance(r.get("schedules"), int) and r.get("wall")]
        return statistics.median(vals) if vals else None

    def verdicts(self) -> str:
        vs = [r.get("verdict", "?") for r in self.runs]
        uniq = sorted(set(vs), key=vs.index)
        return " ".join(f"{v}x{vs.count(v)}" for v in uniq)

    def found(self, bug: str) -> int:
        """How many runs found the planted bug (the right kind of failure)."""
        n = 0
        for r in self.runs:
            v = r.get("verdict", "")
            if (bug == "hang" and v == "deadlock") or (
                bug == "assertion" and v.startswith(("exception", "raised", "violation"))
            ):
                n += 1
        return n


def _python_version(python: str) -> str | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _has_module(python: str, module: str) -> bool:
    try:
        out = subprocess.run([python, "-c", f"import {module}"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


def _coordkit_revision(python: str) -> str:
    """coordkit's version and, for a git checkout, its commit (``+dirty`` if coordkit/ differs)."""
    try:
        out = subprocess.run([python, "-c", "import coordkit, os; print(coordkit.__version__); "
                              "print(os.path.dirname(os.path.abspath(coordkit.__file__)))"],
                             capture_output=True, text=True, timeout=60)
        version, pkg = out.stdout.split()
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return "?"
    try:
        rev = subprocess.run(["git", "-C", pkg, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=30)
        dirty = subprocess.run(["git", "-C", pkg, "status", "--porcelain", "--", "."],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return version
    if rev.returncode != 0:
        return version
    return f"{version} @ {rev.stdout.strip()}{'+dirty' if dirty.stdout.strip() else ''}"


def _frontrun_cli(python: str) -> str | None:
    cand = Path(python).parent / "frontrun"
    if cand.exists():
        return str(cand)
    return shutil.which("frontrun")


def _run_one(cfg: Config, seed: int, frontrun_cli: str | None) -> dict[str, Any]:
    payload = {"tool": cfg.tool, "program": cfg.program, "strategy": cfg.strategy,
               "budget": cfg.budget, "seed": seed, "granularity": cfg.granularity,
               "kwargs": cfg.kwargs}
    cmd = [cfg.python, str(Path(__file__).resolve()), "--worker", json.dumps(payload)]
    if cfg.tool == "fr":
        assert frontrun_cli is not None
        cmd = [frontrun_cli, *cmd]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=cfg.timeout, env=env,
                              cwd=str(HERE))
    except subprocess.TimeoutExpired:
        return {"verdict": "timeout", "wall": None, "schedules": None,
                "detail": f"subprocess exceeded {cfg.timeout:g}s"}
    proc_wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            res = json.loads(line[len(RESULT_TAG):])
            res["process_wall"] = proc_wall
            res["seed"] = seed
            return res
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
    return {"verdict": "error", "wall": None, "schedules": None, "detail": "\n".join(tail)}


def _configs(quick: bool, pythons: dict[str, str], peer_python: str) -> list[Config]:
    q = quick
    # Budgets: enough schedules for a stable rate, a few seconds per peer run at most.
    ck_n = 400 if q else 2000
    it_n = 100 if q else 500
    fr_n = 40 if q else 200
    find = 2000  # cap when searching for a planted bug (coordkit and IT)
    fr_find = 200
    out: list[Config] = []

    def ck(section: str, program: str, strategy: str, budget: int, gran: str = "sync",
           note: str = "") -> None:
        for tag, py in pythons.items():
            out.append(Config(section, program, "coordkit", strategy, budget, gran, python=py,
                              note=(note + " " + tag).strip() if tag != "peer" else note,
                              randomised=strategy != "dfs"))

    def it(section: str, program: str, strategy: str, budget: int, gran: str) -> None:
        out.append(Config(section, program, "it", strategy, budget, gran, python=peer_python,
                          randomised=strategy != "dfs"))

    def fr(section: str, program: str, strategy: str, budget: int, note: str = "",
           **kwargs: Any) -> None:
        out.append(Config(section, program, "fr", strategy, budget, "opcode", kwargs=kwargs,
                          python=peer_python, note=note, randomised=strategy == "random",
                          timeout=60.0))

    # 1. throughput on the correct counter
    s = "1"
    for strat in ("pct", "random", "dfs"):
        ck(s, "counter_locked", strat, ck_n)
    for strat in ("pct", "random", "dfs"):
        ck(s, "counter_locked", strat, ck_n // 2, "line")
    for strat in ("pct", "random", "dfs"):
        it(s, "counter_locked", strat, it_n, "opcode")
        it(s, "counter_locked", strat, it_n, "line")
    fr(s, "counter_locked", "random", fr_n)
    fr(s, "counter_locked", "dpor", fr_n)

    # 2. lost update (line / bytecode granularity)
    s = "2"
    for strat in ("pct", "random", "dfs", "hypothesis"):
        ck(s, "lost_update", strat, find, "line")
    for strat in ("pct", "random", "dfs"):
        it(s, "lost_update", strat, find, "opcode")
        it(s, "lost_update", strat, find, "line")
    fr(s, "lost_update", "random", fr_find)
    fr(s, "lost_update", "dpor", fr_find)

    # 3 and 4. hangs: sync granularity suffices for coordkit; FR needs clock="virtual"
    # (with its default real clock a blocked wait makes DPOR give up after 5 s).
    for s, program in (("3", "bq_close_bug"), ("3", "bq_close_window"),
                       ("4", "queue_check_then_act")):
        for strat in ("pct", "random", "dfs", "hypothesis"):
            ck(s, program, strat, find)
        for strat in ("pct", "random", "dfs"):
            it(s, program, strat, find, "line")
        fr(s, program, "random", fr_find, note="clock=virtual", clock="virtual")
        fr(s, program, "dpor", fr_find, note="clock=virtual", clock="virtual")
    return out


def _fmt(x: float | None, nd: int = 3) -> str:
    if x is None:
        return "-"
    if nd == 0:
        return f"{x:,.0f}"
    return f"{x:.{nd}f}"


def _print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    print()
    print(title)
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--quick", action="store_true", help="short budgets (about a minute)")
    ap.add_argument("--peer-python", default=None,
                    help="interpreter with the peers and coordkit installed (default: "
                         "$COORDKIT_PEER_PYTHON if set, else this one)")
    ap.add_argument("--coordkit-python", action="append", default=[],
                    help="another interpreter to run coordkit alone on (repeatable)")
    ap.add_argument("--only", default=None, help="run only sections whose number is in this string, e.g. 12")
    ap.add_argument("--json", default=None, help="write every raw run to this file")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker is not None:
        res = _worker(json.loads(args.worker))
        print(RESULT_TAG + json.dumps(res), flush=True)
        return 0

    default_peer = DEFAULT_PEER_PYTHON if DEFAULT_PEER_PYTHON and Path(DEFAULT_PEER_PYTHON).exists() else None
    peer_python = args.peer_python or default_peer or sys.executable
    peer_version = _python_version(peer_python)
    if peer_version is None:
        print(f"warning: {peer_python} does not run; using {sys.executable}")
        peer_python, peer_version = sys.executable, ".".join(map(str, sys.version_info[:3]))
    status = {
        "coordkit": _has_module(peer_python, "coordkit"),
        "it": _has_module(peer_python, "interleave_test"),
        "fr": _has_module(peer_python, "frontrun"),
    }
    fr_cli = _frontrun_cli(peer_python) if status["fr"] else None
    if status["fr"] and fr_cli is None:
        status["fr"] = False
    pythons: dict[str, str] = {}
    if status["coordkit"]:
        pythons["peer"] = peer_python
    else:
        print(f"warning: coordkit is not importable by {peer_python}; running it on {sys.executable}")
        pythons["peer"] = sys.executable
    for py in args.coordkit_python:
        v = _python_version(py)
        if v is None or not _has_module(py, "coordkit"):
            print(f"warning: skipping --coordkit-python {py}: not runnable or no coordkit")
            continue
        if os.path.realpath(py) != os.path.realpath(pythons["peer"]):
            pythons[f"py{v.rsplit('.', 1)[0]}"] = py

    print(f"scheduler_vs_peers: {'quick' if args.quick else 'full'} run; medians of 3 runs "
          f"(seeds {', '.join(map(str, SEEDS))}); each run a fresh process")
    print(f"  peers' interpreter: {peer_python} (Python {peer_version}); "
          f"coordkit {_coordkit_revision(pythons['peer'])}")
    print(f"  interleave-test: {'installed' if status['it'] else 'not installed'}; "
          f"frontrun: {'installed, CLI ' + fr_cli if status['fr'] else 'not installed'}")
    for tag, py in pythons.items():
        if tag != "peer":
            print(f"  coordkit also on {py} (Python {_python_version(py)}), marked [{tag}]")

    configs = _configs(args.quick, pythons, peer_python)
    if args.only:
        configs = [c for c in configs if c.section in args.only]
    outcomes: list[Outcome] = []
    started = time.monotonic()
    for i, cfg in enumerate(configs, 1):
        if cfg.tool != "coordkit" and not status[cfg.tool]:
            outcomes.append(Outcome(cfg, [], status="not installed"))
            continue
        runs = []
        for seed in SEEDS:
            runs.append(_run_one(cfg, seed if cfg.randomised else 1, fr_cli))
        o = Outcome(cfg, runs)
        if all(r.get("verdict") in ("error", "timeout") for r in runs):
            o.status = "error"
        outcomes.append(o)
        print(f"  [{i}/{len(configs)}] {cfg.program}: {cfg.label}: {o.verdicts()} "
              f"({time.monotonic() - started:.0f}s)", file=sys.stderr, flush=True)

    _report(outcomes, args.quick)
    if args.json:
        with open(args.json, "w") as fh:
            for o in outcomes:
                for r in o.runs:
                    fh.write(json.dumps({"section": o.config.section, "program": o.config.program,
                                         "label": o.config.label, **r}) + "\n")
    return 0


def _report(outcomes: list[Outcome], quick: bool) -> None:
    sys.path.insert(0, str(HERE))
    from programs import PROGRAMS

    # 1. throughput
    tp = [o for o in outcomes if o.config.section == "1"]
    if tp:
        rows = []
        for o in tp:
            if o.status != "ok":
                rows.append([o.config.label, o.status, "", "", "", ""])
                continue
            rows.append([o.config.label, str(o.config.budget), _fmt(o.median("schedules"), 0),
                         _fmt(o.median("wall")), _fmt(o.sps_median(), 0),
                         o.verdicts() + (" exhausted" if any(r.get("exhausted") for r in o.runs) else "")])
        _print_table("## 1. Correct lock-protected counter (3 threads x 3 increments): throughput",
                     ["tool / strategy (granularity)", "budget", "schedules", "wall s", "schedules/s",
                      "verdicts"], rows)

        def best(tool: str, strategies: tuple[str, ...], note: str = "") -> tuple[float | None, str]:
            cands = [(o.sps_median(), o.config.label) for o in tp
                     if o.status == "ok" and o.config.tool == tool and o.config.strategy in strategies
                     and o.config.note == note and o.sps_median() is not None]
            return max(cands) if cands else (None, "")

        print()
        print("Ratios, schedules/s, coordkit (sync granularity, the default) / best peer configuration:")
        pairs = (("pct", ("pct",), ("pct",), ()), ("random", ("random",), ("random",), ("random",)),
                 ("dfs", ("dfs",), ("dfs",), ("dpor",)))
        ck_all: list[float] = []
        peer_all: list[tuple[float, str]] = []
        notes = sorted({o.config.note for o in tp if o.config.tool == "coordkit"})
        for name, ck_s, it_s, fr_s in pairs:
            peers = [best("it", it_s), best("fr", fr_s)]
            peers = [p for p in peers if p[0] is not None]
            bp = max(peers) if peers else (None, "")
            if bp[0] is not None:
                peer_all.append(bp)
            for note in notes:
                c, _ = best("coordkit", ck_s, note)
                if c is None:
                    continue
                if not note:
                    ck_all.append(c)
                tag = f" [{note}]" if note else ""
                if bp[0] is None:
                    print(f"  {name:7s}{tag}: coordkit {c:,.0f}/s; no peer numbers (not installed)")
                else:
                    print(f"  {name:7s}{tag}: coordkit {c:,.0f}/s / {bp[1]} {bp[0]:,.0f}/s = "
                          f"{c / bp[0]:.1f}x")
        if peer_all and ck_all:
            bp = max(peer_all)
            worst_ck = min(ck_all)
            verdict = "MET" if worst_ck >= 5 * bp[0] else "NOT MET"
            print(f"  target (every coordkit strategy >= 5x the best peer, {bp[1]} {bp[0]:,.0f}/s): "
                  f"slowest coordkit strategy {worst_ck:,.0f}/s = {worst_ck / bp[0]:.1f}x -> {verdict}")

    # 2-4. finding planted bugs
    titles = {"2": "## 2. Lost update (2 threads, tmp = c.v; c.v = tmp + 1)",
              "3": "## 3. Missed notify in a Condition-based bounded queue (producer, consumer, closer)",
              "4": "## 4. Check-then-act on queue.Queue (one item, 2 consumers `if not q.empty(): q.get()`)"}
    slow: list[str] = []
    slow_hyp: list[str] = []
    for section in ("2", "3", "4"):
        sec = [o for o in outcomes if o.config.section == section]
        if not sec:
            continue
        rows = []
        for o in sec:
            bug = PROGRAMS[o.config.program].bug
            if o.status != "ok":
                rows.append([o.config.program, o.config.label, o.status, "", "", "", ""])
                continue
            n = o.found(bug)
            rows.append([o.config.program, o.config.label, f"{n}/{len(o.runs)}",
                         _fmt(o.median("schedules"), 0), _fmt(o.median("wall")),
                         _fmt(o.median("preemptions"), 0) if o.config.tool == "coordkit" else "-",
                         o.verdicts()])
            if o.config.tool == "coordkit":
                walls = [r["wall"] for r in o.runs if r.get("wall") is not None]
                if n < len(o.runs) or not walls or max(walls) >= 1.0:
                    where = slow_hyp if o.config.strategy == "hypothesis" else slow
                    where.append(f"{o.config.program} {o.config.label}: found {n}/{len(o.runs)}, "
                                 f"max wall {max(walls) if walls else float('nan'):.3f}s")
        _print_table(titles[section],
                     ["program", "tool / strategy (granularity)", "found", "schedules", "wall s",
                      "preemptions (shrunk)", "verdicts"], rows)
    if any(o.config.section in "234" for o in outcomes):
        print()
        head = ("target (every planted bug found by coordkit in < 1 s, strategies pct/random/dfs, "
                "every run): ")
        print(head + ("NOT MET" if slow else "MET"))
        for s in slow:
            print("  - " + s)
        if any(o.config.strategy == "hypothesis" for o in outcomes):
            print('  strategy "hypothesis" (for information): '
                  + ("every bug in < 1 s too" if not slow_hyp else "not every bug in < 1 s:"))
            for s in slow_hyp:
                print("  - " + s)
    if quick:
        print("\n(--quick: budgets are small; schedules/s are noisier than a full run)")


if __name__ == "__main__":
    sys.exit(main())
