"""The ``coordkit`` command: ``demo``, ``explore``, ``replay`` and ``show``.

Exit codes: 0 no failure, 1 a failure was found (or replayed), 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line input; the message names the problem."""


def load_target(spec: str) -> Callable[[], Any]:
    """Import ``MODULE:FUNCTION`` (the current directory is importable)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"target must look like MODULE:FUNCTION, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import module {module_name!r}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"module {module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise UsageError(f"{spec} is not callable (it is {type(obj).__name__})")
    return obj


def _rule(out: TextIO, title: str) -> None:
    out.write(f"\n== {title} {'=' * max(3, 74 - len(title))}\n\n")


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    import coordkit
    from coordkit import _demo

    out.write(
        "coordkit demo: a shutdown race in a two-producer pipeline (coordkit/_demo.py).\n"
        "Each producer, when both are done, runs `if not q.is_closed(): q.close()`.\n"
        "A second plain close() raises CancelledError, so if both pass the check the\n"
        "second closer dies. Ordinary runs almost never interleave that way.\n"
    )
    _rule(out, "1. explore: run the program under many schedules (PCT)")
    started = time.perf_counter()
    result = coordkit.explore(_demo.shutdown_race, strategy="pct", seed=args.seed, max_schedules=2000)
    elapsed = time.perf_counter() - started
    failure = result.failure
    if failure is None:
        out.write(f"no failure in {result.schedules_run} schedules: unexpected\n")
        return EXIT_FAILURE
    out.write(
        f"found after {failure.schedules_run} schedules in {elapsed:.2f}s; shrunk from "
        f"{failure.original_preemptions} to {failure.preemptions} preemption(s).\n"
    )
    _rule(out, "2. the shrunk interleaving")
    out.write(str(failure) + "\n")
    _rule(out, "3. replay: the same trace fails the same way, every time")
    for attempt in range(1, 4):
        try:
            coordkit.replay(_demo.shutdown_race, failure.trace)
        except Exception as exc:  # the program's own failure, re-raised by replay
            out.write(f"replay {attempt}: {type(exc).__name__}: {exc}\n")
        else:
            out.write(f"replay {attempt}: passed (unexpected)\n")
            return EXIT_FAILURE
    _rule(out, "4. the fix: let the barrier elect one closer")
    started = time.perf_counter()
    exhaustive = coordkit.explore(_demo.shutdown_fixed, strategy="dfs", max_preemptions=1,
                                  max_schedules=args.fixed_schedules)
    sampled = coordkit.explore(_demo.shutdown_fixed, strategy="pct", seed=args.seed,
                               max_schedules=args.fixed_schedules)
    elapsed = time.perf_counter() - started
    space = "every" if exhaustive.exhausted else "the first"
    out.write(
        f"fixed version, {space} schedule with at most 1 preemption ({exhaustive.schedules_run}): "
        f"{'no failure' if exhaustive.ok else 'FAILED'}\n"
        f"fixed version, {sampled.schedules_run} PCT schedules: "
        f"{'no failure' if sampled.ok else 'FAILED'}\n"
        f"({exhaustive.schedules_run + sampled.schedules_run} schedules in {elapsed:.2f}s)\n"
    )
    fixed_ok = exhaustive.ok and sampled.ok
    out.write(
        "\nPin the race as a regression test:\n"
        f"    coordkit.replay(shutdown_race, {failure.trace!r})\n"
        "or explore your own code:  coordkit explore mymodule:my_test_function\n"
    )
    return EXIT_OK if fixed_ok else EXIT_FAILURE


class _Progress:
    """A one-line live display on a terminal; silent otherwise."""

    def __init__(self, stream: TextIO, every: float = 0.25) -> None:
        self.stream = stream
        self.enabled = stream.isatty()
        self.every = every
        self.last = 0.0

    def __call__(self, runs: int, elapsed: float) -> None:
        if self.enabled and elapsed - self.last >= self.every:
            self.last = elapsed
            rate = runs / elapsed if elapsed else 0.0
            self.stream.write(f"\r{runs} schedules explored, {rate:.0f}/s, 0 failures")
            self.stream.flush()

    def done(self) -> None:
        if self.enabled and self.last:
            self.stream.write("\n")


def cmd_explore(args: argparse.Namespace, out: TextIO) -> int:
    import coordkit

    fn = load_target(args.target)
    progress = _Progress(sys.stderr)
    try:
        result = coordkit.explore(
            fn,
            strategy=args.strategy,
            max_schedules=args.max_schedules,
            seed=args.seed,
            time_budget=args.time_budget,
            granularity=args.granularity,
            max_preemptions=args.max_preemptions,
            progress=progress,
        )
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    finally:
        progress.done()
    text = str(result)
    if result.failure is not None:
        _save_report(args.target, result.failure)
        text = text.replace(
            result.failure.replay_line(),
            f"{result.failure.replay_line()}\n    coordkit replay {args.target} {result.failure.trace}",
        )
    out.write(text + "\n")
    return EXIT_FAILURE if result.failure is not None else EXIT_OK


def cmd_replay(args: argparse.Namespace, out: TextIO) -> int:
    import coordkit
    from coordkit.errors import TraceDivergedError, TraceFormatError

    fn = load_target(args.target)
    try:
        report = coordkit.replay(fn, args.trace, strict=not args.lenient, granularity=args.granularity)
    except TraceFormatError as exc:
        raise UsageError(f"bad trace: {exc}") from None
    except TraceDivergedError as exc:
        out.write(f"TraceDivergedError: {exc}\n")
        return EXIT_FAILURE
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        out.write(f"replay failed: {type(exc).__name__}: {exc}\n")
        return EXIT_FAILURE
    out.write(f"{report.table()}\n\nreplay passed: {report.steps} steps, "
              f"{report.preemptions} preemption(s)\n")
    return EXIT_OK


REPORTS_DIR = os.path.join(".coordkit", "reports")


def _save_report(target: str, failure: Any) -> str:
    """Keep a failing run's events so that ``coordkit show TRACE`` can draw it later."""
    import json

    os.makedirs(REPORTS_DIR, exist_ok=True)
    path = os.path.join(REPORTS_DIR, f"{failure.trace}.json")
    report = failure.report
    data = {
        "target": target,
        "trace": failure.trace,
        "failure": f"{failure.kind}: {failure.message}",
        "thread_names": report.thread_names,
        "events": [vars(e) for e in report.events],
    }
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    return path


def _load_report(trace: str, target: str | None) -> dict[str, Any]:
    import json

    from coordkit.trace import Schedule

    path = os.path.join(REPORTS_DIR, f"{trace}.json")
    if target is None and os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    if target is None:
        raise UsageError(
            f"no saved run for this trace in {REPORTS_DIR}/ (coordkit explore saves one when it "
            "finds a failure); pass --target MODULE:FUNCTION to replay it instead"
        )
    fn = load_target(target)
    report = _replay_for_events(fn, Schedule.decode(trace))
    failure = report.failure
    return {
        "target": target,
        "trace": trace,
        "failure": None if failure is None else f"{failure.kind}: {failure.message}",
        "thread_names": report.thread_names,
        "events": [vars(e) for e in report.events],
    }


def _replay_for_events(fn: Callable[[], Any], schedule: Any) -> Any:
    """Replay a schedule and keep its recorded events, failing or not."""
    from coordkit.explore import _options, _run_report, _Session
    from coordkit.schedulers import ReplayScheduler

    options = _options(fn, 20_000, 10.0, "sync", None, True)
    with _Session(options) as session:
        ex = session.run(fn, ReplayScheduler(schedule.choices, strict=True), record=True)
    if ex.chooser_error is not None:
        raise UsageError(f"the trace does not fit {fn.__qualname__}: {ex.chooser_error}")
    return _run_report(ex)


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    from types import SimpleNamespace

    from coordkit.errors import TraceFormatError
    from coordkit.trace import Schedule, render_table

    try:
        schedule = Schedule.decode(args.trace)
    except TraceFormatError as exc:
        raise UsageError(f"bad trace: {exc}") from None
    out.write(
        f"trace format ck1: {len(schedule.choices)} choice points, "
        f"{schedule.preemptions} non-zero choice(s)\n"
    )
    if args.html is None and args.target is None:
        for i, (n, c) in enumerate(schedule.choices):
            if c:
                out.write(f"  choice point {i}: candidate {c} of {n}\n")
        return EXIT_OK
    data = _load_report(schedule.encode(), args.target)
    events = [SimpleNamespace(**e) for e in data["events"]]
    if args.html is None:
        out.write(render_table(events, data["thread_names"]) + "\n")
        return EXIT_OK
    from coordkit._html import render_html

    page = render_html(events, data["thread_names"], title=f"coordkit: {data['target']}",
                       failure=data["failure"], trace=data["trace"])
    with open(args.html, "w", encoding="utf-8") as fh:
        fh.write(page)
    out.write(f"wrote {args.html} ({len(events)} steps, {len(data['thread_names'])} threads)\n")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coordkit", description="Find, shrink and replay thread interleavings."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="find, shrink and replay a real shutdown race")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--fixed-schedules", type=int, default=2000)
    demo.set_defaults(run=cmd_demo)

    explore = sub.add_parser("explore", help="explore MODULE:FUNCTION under many schedules")
    explore.add_argument("target", help="MODULE:FUNCTION, a zero-argument callable")
    explore.add_argument("--strategy", default="pct", choices=["pct", "random", "dfs", "hypothesis"])
    explore.add_argument("--max-schedules", type=int, default=1000)
    explore.add_argument("--seed", type=int, default=None)
    explore.add_argument("--time-budget", type=float, default=None, help="wall-clock seconds")
    explore.add_argument("--max-preemptions", type=int, default=2, help="bound for dfs")
    explore.add_argument("--granularity", default="sync", choices=["sync", "line"])
    explore.set_defaults(run=cmd_explore)

    replay = sub.add_parser("replay", help="replay TRACE on MODULE:FUNCTION")
    replay.add_argument("target")
    replay.add_argument("trace")
    replay.add_argument("--lenient", action="store_true", help="replay a trace on changed code")
    replay.add_argument("--granularity", default="sync", choices=["sync", "line"])
    replay.set_defaults(run=cmd_replay)

    show = sub.add_parser("show", help="describe a trace; draw its run as a table or an HTML page")
    show.add_argument("trace")
    show.add_argument("--target", default=None,
                      help="MODULE:FUNCTION to replay (default: the run saved by coordkit explore)")
    show.add_argument("--html", default=None, metavar="OUT.html", help="write swim lanes to this file")
    show.set_defaults(run=cmd_show)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the problem
        return EXIT_USAGE if exc.code else EXIT_OK
    try:
        return args.run(args, out)
    except UsageError as exc:
        sys.stderr.write(f"coordkit {args.command}: error: {exc}\n")
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
