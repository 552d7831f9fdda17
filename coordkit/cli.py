"""The ``coordkit`` command: ``demo``, ``explore``, ``replay`` and ``show``.

Exit codes: 0 no failure, 1 a failure was found (or replayed), 2 usage error,
130 interrupted by Ctrl-C (SIGINT), 143 stopped by SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from coordkit.errors import UsageError

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class Terminated(KeyboardInterrupt):
    """SIGTERM while the command runs: stops it as Ctrl-C does (the library's runs end,
    the stdlib is restored), with the exit code a SIGTERM gives (128 + 15)."""

    signum = signal.SIGTERM


def load_target(spec: str) -> Callable[[], Any]:
    """Import ``MODULE:FUNCTION`` (the current directory is importable).

    Anything wrong with the target is a ``UsageError`` that names it: a module that
    does not import (whatever it raises), a missing attribute, something that is not
    callable, or a callable that cannot be called with no arguments.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"target must look like MODULE:FUNCTION, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # a broken module is bad input, not a found failure
        raise UsageError(f"cannot import module {module_name!r}: {_describe_import_error(exc)}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"module {module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise UsageError(f"{spec} is not callable (it is {type(obj).__name__})")
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # no signature to check (some builtins)
        return obj
    try:
        signature.bind()
    except TypeError as exc:
        raise UsageError(
            f"{spec} must be callable with no arguments, but its signature is {attr}{signature} "
            f"({exc}); wrap it in a function that supplies them"
        ) from None
    return obj


def _describe_import_error(exc: BaseException) -> str:
    """``Type: message (file, line N)`` for an exception raised while importing."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, SyntaxError):  # its message already names the file and the line
        return text
    machinery = (os.path.dirname(importlib.__file__ or ""), os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<frozen") and not f.filename.startswith(machinery)]
    if frames:  # the deepest line of the user's code that raised
        text += f" ({frames[-1].filename}, line {frames[-1].lineno})"
    return text


def _cli_wording(message: str, replacement: str = "--lenient") -> str:
    """Library advice says ``strict=False``; at the command line it is ``--lenient``."""
    if "strict=False" in message:
        return message.replace("strict=False", replacement)
    return f"{message} (on the command line, {replacement} replays a trace on changed code)"


def _rule(out: TextIO, title: str) -> None:
    out.write(f"\n== {title} {'=' * max(3, 74 - len(title))}\n\n")


class _PlainOutput:
    """Plain text, for a pipe or a file: what the tests and the tutorial quote."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def text(self, text: str, style: str = "") -> None:
        self.out.write(text if text.endswith("\n") else text + "\n")

    def rule(self, title: str) -> None:
        _rule(self.out, title)

    def failure(self, found: Any, command: str | None) -> None:
        text = str(found)
        if command is not None:
            text = _add_cli_replay(text, command, found.trace)
        self.text(text)

    def result(self, result: Any, command: str | None) -> None:
        text = str(result)
        if result.failure is not None and command is not None:
            text = _add_cli_replay(text, command, result.failure.trace)
        self.text(text)

    def replay(self, report: Any, error: BaseException | None) -> None:
        if error is None:
            self.text(f"{report.table()}\n\nreplay passed: {report.steps} steps, "
                      f"{report.preemptions} preemption(s)")
            return
        self.text(f"replay failed: {type(error).__name__}: {error}")
        explanation = report.explanation()
        if report.failure.kind == "exception" and explanation is not None:
            # The exception's own text is its message: add the report around it.
            self.text("\n" + "\n\n".join([explanation.root_cause, *report.explained()]))


class _Silent:
    """For --json: the document is the whole output."""

    def text(self, text: str, style: str = "") -> None: ...

    def rule(self, title: str) -> None: ...

    def failure(self, found: Any, command: str | None) -> None: ...

    def result(self, result: Any, command: str | None) -> None: ...

    def replay(self, report: Any, error: BaseException | None) -> None: ...


def _output(args: argparse.Namespace, out: TextIO) -> Any:
    """Where a command's report goes: nowhere under --json (the document is printed
    instead), rich's tables and colours on a terminal, plain text otherwise."""
    if getattr(args, "json", False):
        return _Silent()
    if _isatty(out):
        from coordkit._terminal import RichOutput

        return RichOutput.to(out)
    return _PlainOutput(out)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no such method, or closed
        return False


def _write_json(out: TextIO, document: dict[str, Any]) -> None:
    import json

    json.dump(document, out, indent=2, default=str)
    out.write("\n")


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from coordkit.engine.report_data import result_data

    if args.teach:
        from coordkit._teach import teach

        pausing = not args.no_pause and sys.stdin.isatty()
        return teach(out, seed=args.seed, pause=_enter_to_go_on(out) if pausing else None)
    say = _output(args, out)
    say.text(
        "coordkit demo: a shutdown race in a two-producer pipeline (coordkit/_demo.py).\n"
        "Each producer, when both are done, runs `if not q.is_closed(): q.close()`.\n"
        "A second plain close() raises CancelledError, so if both pass the check the\n"
        "second closer dies. Ordinary runs almost never interleave that way.\n"
    )
    result = _demo_find(args, say)
    failure = result.failure
    if failure is None:
        if args.json:
            _write_json(out, {"command": "demo", "ok": False, "found": result_data(result)})
        return EXIT_FAILURE
    say.rule("3. replay: the same trace fails the same way, every time")
    replays = _demo_replays(failure.trace, say)
    say.rule("4. the fix: let the barrier elect one closer")
    fixed = _demo_fix(args, say)
    say.text(
        "\nPin the race as a regression test:\n"
        f"    coordkit.replay(shutdown_race, {failure.trace!r})\n"
        "or explore your own code:  coordkit explore mymodule:my_test_function\n"
    )
    ok = all(r.startswith("CancelledError") for r in replays) and all(f.ok for f in fixed)
    if args.json:
        _write_json(out, {"command": "demo", "ok": ok, "found": result_data(result),
                          "replays": replays, "fixed": [result_data(f) for f in fixed]})
    return EXIT_OK if ok else EXIT_FAILURE


def _demo_find(args: argparse.Namespace, say: Any) -> Any:
    import coordkit
    from coordkit import _demo

    say.rule("1. explore: run the program under many schedules (PCT)")
    started = time.perf_counter()
    result = coordkit.explore(_demo.shutdown_race, strategy="pct", seed=args.seed, max_schedules=2000)
    elapsed = time.perf_counter() - started
    failure = result.failure
    if failure is None:
        say.text(f"no failure in {result.schedules_run} schedules: unexpected")
        return result
    say.text(
        f"found after {failure.schedules_run} schedules in {elapsed:.2f}s; shrunk from "
        f"{failure.original_preemptions} to {failure.preemptions} preemption(s).\n"
    )
    say.rule("2. the shrunk interleaving")
    say.failure(failure, None)
    return result


def _demo_replays(trace: str, say: Any) -> list[str]:
    """Replay the found trace three times; each outcome, as ``Type: message``."""
    import coordkit
    from coordkit import _demo

    outcomes = []
    for attempt in range(1, 4):
        try:
            coordkit.replay(_demo.shutdown_race, trace)
        except Exception as exc:  # the program's own failure, re-raised by replay
            outcomes.append(f"{type(exc).__name__}: {exc}")
        else:
            outcomes.append("passed (unexpected)")
        say.text(f"replay {attempt}: {outcomes[-1]}")
        if outcomes[-1].startswith("passed"):
            break
    return outcomes


def _demo_fix(args: argparse.Namespace, say: Any) -> list[Any]:
    """Explore the fixed program: every schedule with at most one preemption, and PCT."""
    import coordkit
    from coordkit import _demo

    started = time.perf_counter()
    exhaustive = coordkit.explore(_demo.shutdown_fixed, strategy="dfs", max_preemptions=1,
                                  max_schedules=args.fixed_schedules)
    sampled = coordkit.explore(_demo.shutdown_fixed, strategy="pct", seed=args.seed,
                               max_schedules=args.fixed_schedules)
    elapsed = time.perf_counter() - started
    space = ("every schedule" if exhaustive.exhausted else
             f"the first {exhaustive.schedules_run} schedules")
    say.text(
        f"fixed version, {space} with at most 1 preemption ({exhaustive.schedules_run}): "
        f"{'no failure' if exhaustive.ok else 'FAILED'}\n"
        f"fixed version, {sampled.schedules_run} PCT schedules: "
        f"{'no failure' if sampled.ok else 'FAILED'}\n"
        f"({exhaustive.schedules_run + sampled.schedules_run} schedules in {elapsed:.2f}s)\n"
    )
    return [exhaustive, sampled]


def _enter_to_go_on(out: TextIO) -> Callable[[], str]:
    def pause() -> str:
        out.write("-- Enter: next step, c then Enter: to the end -- ")
        out.flush()
        return sys.stdin.readline() or "c"  # end of input: stop pausing

    return pause


class _Progress:
    """A one-line live display on a terminal; silent otherwise."""

    def __init__(self, stream: TextIO, every: float = 0.25) -> None:
        self.stream = stream
        self.enabled = _isatty(stream)
        self.every = every
        self.last = 0.0

    def __call__(self, runs: int, elapsed: float) -> None:
        if self.enabled and elapsed - self.last >= self.every:
            self.last = elapsed
            rate = runs / elapsed if elapsed else 0.0
            self.stream.write(f"\r{runs} schedules explored, {rate:.0f}/s, 0 failures")
            self.stream.flush()

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled and self.last:
            self.stream.write("\n")


def _progress(args: argparse.Namespace, say: Any) -> Any:
    """The exploration's progress display on stderr: a rich bar (schedules/s, ETA) when
    the report is rich too, else a plain line on a terminal, else nothing."""
    if not args.json and _isatty(sys.stderr) and type(say).__name__ == "RichOutput":
        from rich.console import Console

        from coordkit._terminal import RichProgress

        return RichProgress(Console(file=sys.stderr), args.max_schedules, args.time_budget)
    return _Progress(sys.stderr)


def _shrink_budget(text: str) -> float | str | None:
    """``--shrink-budget``: seconds, ``auto`` or ``none`` (SCHED-77)."""
    if text in ("auto", "none"):
        return None if text == "none" else text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, 'auto' or 'none', got {text!r}") from None


def cmd_explore(args: argparse.Namespace, out: TextIO) -> int:
    import coordkit
    from coordkit.engine.report_data import result_data

    fn = load_target(args.target)
    say = _output(args, out)
    cluster = _cluster(args.scheduler_address)
    with _progress(args, say) as progress:
        try:
            result = coordkit.explore(
                fn,
                strategy=args.strategy,
                max_schedules=args.max_schedules,
                seed=args.seed,
                time_budget=args.time_budget,
                shrink_budget=args.shrink_budget,
                granularity=args.granularity,
                races=args.races,
                max_preemptions=args.max_preemptions,
                progress=progress,
                cancel=args.cancel,
                adversarial=args.adversarial,
                workers=args.workers,
                cluster=cluster,
            )
        except (ValueError, TypeError) as exc:
            raise UsageError(str(exc)) from None
        finally:
            if cluster is not None:
                cluster.close()
    failure = result.failure
    command = None
    if failure is not None:
        try:
            _save_report(args.target, failure)
        except OSError as exc:
            sys.stderr.write(f"coordkit explore: warning: cannot save the run under {REPORTS_DIR}/ "
                             f"for coordkit show: {exc}\n")
        command = _cli_replay_command(args, failure.trace)
    if args.json:
        _write_json(out, {"command": "explore", "target": args.target, **result_data(result),
                          "replay_command": command})
    else:
        say.result(result, command)
    return EXIT_FAILURE if failure is not None else EXIT_OK


def _cluster(address: str | None) -> Any:
    """A Dask client of the scheduler at ``address``, or None (PAR-12)."""
    if address is None:
        return None
    from coordkit.engine.parallel import connect

    try:
        return connect(address)
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


def _cli_replay_command(args: argparse.Namespace, trace: str) -> str:
    """The ``coordkit replay`` command for a trace (it records its run options)."""
    return f"coordkit replay {args.target} {trace}"


def _add_cli_replay(text: str, command: str, trace: str) -> str:
    """Put ``command`` under the report's Python replay line, or at the end if there is none.

    The Python line is found by its content (a ``coordkit.replay(`` call with this
    trace), not by rebuilding it, so it may carry any keyword arguments.
    """
    lines = text.split("\n")
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if "coordkit.replay(" in line and trace in line:
            indent = line[: len(line) - len(line.lstrip())]
            lines.insert(i + 1, indent + command)
            return "\n".join(lines)
    return f"{text}\n\nReplay it on the command line:\n    {command}"


def cmd_replay(args: argparse.Namespace, out: TextIO) -> int:
    from coordkit.engine.replay import record
    from coordkit.engine.report import failure_error
    from coordkit.engine.report_data import run_data
    from coordkit.engine.trace import Schedule
    from coordkit.errors import TraceDivergedError, TraceFormatError

    try:
        recorded = Schedule.decode(args.trace)
    except TraceFormatError as exc:
        raise UsageError(f"bad trace: {exc}") from None
    if args.granularity not in (None, recorded.granularity):  # None: the trace's own
        raise UsageError(
            f"--granularity {args.granularity}, but the trace was recorded with granularity "
            f"{recorded.granularity}; leave --granularity out to use the trace's"
        )
    fn = load_target(args.target)
    head = {"command": "replay", "target": args.target, "trace": args.trace}
    try:
        report = record(fn, args.trace, strict=not args.lenient)
    except TraceDivergedError as exc:
        message = _cli_wording(str(exc))
        if args.json:
            _write_json(out, {**head, "verdict": "diverged", "error": message})
        else:
            out.write(f"TraceDivergedError: {message}\n")
        return EXIT_FAILURE
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        if args.json:
            _write_json(out, {**head, "verdict": "error", "error": f"{type(exc).__name__}: {exc}"})
        else:
            out.write(f"replay failed: {type(exc).__name__}: {exc}\n")
        return EXIT_FAILURE
    error = failure_error(report)
    if args.json:
        document = {**head, "verdict": "passed" if error is None else "failed", **run_data(report)}
        document.update(trace=args.trace, recorded_trace=report.trace)
        _write_json(out, document)
    else:
        _output(args, out).replay(report, error)
    return EXIT_OK if error is None else EXIT_FAILURE


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


# A saved run's fields and the types they must have: a file under .coordkit/ is input
# like any other (edited, truncated, from elsewhere) and is checked before it is drawn.
_REPORT_FIELDS = {"target": str, "trace": str, "failure": (str, type(None)), "thread_names": list,
                  "events": list}
_EVENT_FIELDS = {"step": int, "tid": int, "kind": str, "target": str, "where": str,
                 "time": (int, float)}


def _checked_report(data: Any, path: str) -> dict[str, Any]:
    """``data`` if it has a saved run's shape; else a UsageError naming the file and field."""
    def bad(what: str) -> UsageError:
        return UsageError(f"{path} is not a saved coordkit run ({what}); delete it, or pass "
                          "--target MODULE:FUNCTION to replay the trace instead")

    if not isinstance(data, dict):
        raise bad(f"it holds a {type(data).__name__}, not an object")
    for name, kind in _REPORT_FIELDS.items():
        if not isinstance(data.get(name), kind):
            raise bad(f"field {name!r} is {data.get(name)!r}")
    names = data["thread_names"]
    if not all(isinstance(n, str) for n in names):
        raise bad("a thread name is not a string")
    for i, event in enumerate(data["events"]):
        if not isinstance(event, dict):
            raise bad(f"event {i} is not an object")
        for name, kind in _EVENT_FIELDS.items():
            value = event.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise bad(f"event {i} field {name!r} is {value!r}")
        if not 0 <= event["tid"] < len(names):
            raise bad(f"event {i} names thread {event['tid']}, of {len(names)}")
    return data


def _load_report(trace: str, target: str | None) -> dict[str, Any]:
    import json

    path = os.path.join(REPORTS_DIR, f"{trace}.json")
    if target is None and os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {path}: {exc}") from None
        return _checked_report(data, path)
    if target is None:
        raise UsageError(
            f"no saved run for this trace in {REPORTS_DIR}/ (coordkit explore saves one when it "
            "finds a failure); pass --target MODULE:FUNCTION to replay it instead"
        )
    fn = load_target(target)
    report = _replay_for_events(fn, trace)
    failure = report.failure
    return {
        "target": target,
        "trace": trace,
        "failure": None if failure is None else f"{failure.kind}: {failure.message}",
        "thread_names": report.thread_names,
        "events": [vars(e) for e in report.events],
    }


def _replay_for_events(fn: Callable[[], Any], trace: str) -> Any:
    """Replay a trace strictly and keep its recorded run, failing or not."""
    from coordkit.engine.replay import record
    from coordkit.errors import TraceDivergedError

    try:
        return record(fn, trace, strict=True, invariant=_any_invariant)
    except TraceDivergedError as exc:
        message = _cli_wording(str(exc), "`coordkit replay --lenient`")
        raise UsageError(f"the trace does not fit {fn.__qualname__}: {message}") from None


def _any_invariant() -> bool:
    """The command line cannot name a trace's invariant: draw the run without checking one."""
    return True


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    from coordkit.engine.trace import Schedule
    from coordkit.errors import TraceFormatError

    try:
        schedule = Schedule.decode(args.trace)
    except TraceFormatError as exc:
        raise UsageError(f"bad trace: {exc}") from None
    if args.open and args.html is None:
        raise UsageError("--open opens the page --html writes: pass --html OUT.html too")
    version = args.trace.strip().partition("_")[0]
    out.write(f"trace format {version}: {schedule.describe()}\n")
    if args.html is None and args.target is None:
        for i, (n, c) in enumerate(schedule.choices):
            if c:
                out.write(f"  choice point {i}: candidate {c} of {n}\n")
        return EXIT_OK
    if args.html is None:
        from types import SimpleNamespace

        from coordkit.engine.report import render_table

        data = _load_report(schedule.encode(), args.target)
        events = [SimpleNamespace(**e) for e in data["events"]]
        out.write(render_table(events, data["thread_names"]) + "\n")
        return EXIT_OK
    page, what = _show_page(schedule.encode(), args.target)
    try:
        with open(args.html, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        raise UsageError(f"cannot write --html {args.html!r}: {exc.strerror or exc}") from None
    out.write(f"wrote {args.html} ({what})\n")
    if args.open:
        import webbrowser
        from pathlib import Path

        webbrowser.open(Path(args.html).resolve().as_uri())
    return EXIT_OK


def _show_page(trace: str, target: str | None) -> tuple[str, str]:
    """The viewer page for ``trace`` and a few words on it: replayed on ``target`` (the
    world at each step, the passing neighbour), else drawn from the run explore saved."""
    if target is None:
        from types import SimpleNamespace

        from coordkit.engine.record import is_step
        from coordkit.viewer import render_html

        data = _load_report(trace, None)
        events = [SimpleNamespace(**e) for e in data["events"]]
        steps = sum(1 for e in events if is_step(e))
        page = render_html(events, data["thread_names"], title=f"coordkit: {data['target']}",
                           failure=data["failure"], trace=data["trace"])
        return page, (f"{steps} steps, {len(data['thread_names'])} threads; pass --target "
                      "to see the world at each step and the passing neighbour")
    from coordkit.errors import TraceDivergedError
    from coordkit.viewer.views import replayed_page

    fn = load_target(target)
    try:
        page, report = replayed_page(fn, trace, invariant=_any_invariant, title=f"coordkit: {target}")
    except TraceDivergedError as exc:
        message = _cli_wording(str(exc), "`coordkit replay --lenient`")
        raise UsageError(f"the trace does not fit {fn.__qualname__}: {message}") from None
    return page, f"{report.steps} steps, {len(report.thread_names)} threads"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coordkit", description="Find, shrink and replay thread interleavings."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_demo, _add_explore, _add_replay, _add_show, _add_verify):
        add(sub)
    return parser


def _add_demo(sub: Any) -> None:
    demo = sub.add_parser("demo", help="find, shrink and replay a real shutdown race")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--fixed-schedules", type=int, default=3000)
    demo.add_argument("--json", action="store_true", help="print one JSON document instead")
    demo.add_argument("--teach", action="store_true",
                      help="walk through the race's failing run step by step")
    demo.add_argument("--no-pause", action="store_true",
                      help="with --teach: do not wait for Enter between steps (never waits "
                           "when stdin is not a terminal)")
    demo.set_defaults(run=cmd_demo)


def _add_explore(sub: Any) -> None:
    explore = sub.add_parser("explore", help="explore MODULE:FUNCTION under many schedules")
    explore.add_argument("target", help="MODULE:FUNCTION, a zero-argument callable")
    explore.add_argument("--strategy", default="pct", choices=["pct", "random", "dfs", "hypothesis"])
    explore.add_argument("--max-schedules", type=int, default=1000)
    explore.add_argument("--seed", type=int, default=None)
    explore.add_argument("--time-budget", type=float, default=None, help="wall-clock seconds")
    explore.add_argument("--shrink-budget", type=_shrink_budget, default="auto",
                         help="seconds for shrinking a failure: 'auto' (the larger of 1 s and "
                              "5x the time to find it) or 'none' (SCHED-77)")
    explore.add_argument("--max-preemptions", type=int, default=2, help="bound for dfs")
    explore.add_argument("--granularity", default="auto", choices=["auto", "sync", "line"],
                         help="where threads may switch (default: auto, see RACE-5)")
    explore.add_argument("--races", default="report", choices=["report", "fail", "ignore"],
                         help="what a data race does (default: report)")
    explore.add_argument("--cancel", default=None, choices=["tasks"],
                         help="cancel each asyncio task at each await, one run each, in place "
                              "of --strategy (AIO-40)")
    explore.add_argument("--adversarial", action="store_true",
                         help="let an event loop run any ready callback next (AIO-44)")
    explore.add_argument("--workers", type=int, default=None,
                         help="run pct/random schedules, or dfs subtrees, in N worker "
                              "processes (PAR-1, PAR-17)")
    explore.add_argument("--scheduler-address", default=None, metavar="tcp://HOST:PORT",
                         help="run pct/random schedules, or dfs subtrees, on this Dask "
                              "cluster's workers, "
                              "pip install 'coordkit[dask]' (PAR-10)")
    explore.add_argument("--json", action="store_true",
                         help="print one JSON document (verdict, failure, threads, rows, races)")
    explore.set_defaults(run=cmd_explore)


def _add_replay(sub: Any) -> None:
    replay = sub.add_parser("replay", help="replay TRACE on MODULE:FUNCTION")
    replay.add_argument("target")
    replay.add_argument("trace")
    replay.add_argument("--lenient", action="store_true", help="replay a trace on changed code")
    replay.add_argument("--granularity", default=None, choices=["auto", "sync", "line"],
                        help="default: the trace's own")
    replay.add_argument("--json", action="store_true", help="print one JSON document instead")
    replay.set_defaults(run=cmd_replay)


def _add_show(sub: Any) -> None:
    show = sub.add_parser("show", help="describe a trace; draw its run as a table or an HTML page")
    show.add_argument("trace")
    show.add_argument("--target", default=None,
                      help="MODULE:FUNCTION to replay (default: the run saved by coordkit explore)")
    show.add_argument("--html", default=None, metavar="OUT.html",
                      help="write the interactive viewer (one self-contained page) to this file")
    show.add_argument("--open", action="store_true", help="open the --html page in a web browser")
    show.set_defaults(run=cmd_show)


def _add_verify(sub: Any) -> None:
    from coordkit.verify import add_arguments

    verify = sub.add_parser("verify", help="check every reference primitive over all interleavings "
                                           "of small configurations (specs/verification.md)")
    add_arguments(verify)
    verify.set_defaults(run=cmd_verify)


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    """The verification table (FORMAL-20): exit 1 when any row fails."""
    from coordkit.engine.parallel import check_workers
    from coordkit.verify import rows, run

    try:
        rows(args.profile, args.only)
        check_workers(args.workers)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return run(args, out)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the problem
        return EXIT_USAGE if exc.code else EXIT_OK
    try:
        with _sigterm_stops():
            return args.run(args, out)
    except UsageError as exc:
        sys.stderr.write(f"coordkit {args.command}: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        return _interrupted(args, exc, out)


def _interrupted(args: argparse.Namespace, exc: KeyboardInterrupt, out: TextIO) -> int:
    """Ctrl-C or SIGTERM: print what was done so far (an exploration's partial result)
    and exit with 128 + the signal's number."""
    command = args.command
    signum = getattr(exc, "signum", signal.SIGINT)
    partial = getattr(exc, "coordkit_result", None)
    if getattr(args, "json", False):
        from coordkit.engine.report_data import result_data

        document = {"command": command, "verdict": "interrupted",
                    "signal": signal.Signals(signum).name}
        if partial is not None:
            document.update(result_data(partial), signal=signal.Signals(signum).name)
        _write_json(out, document)
        out.flush()
        return 128 + signum
    what = str(partial) if partial is not None else "interrupted"
    out.write(f"coordkit {command}: {what} ({signal.Signals(signum).name})\n")
    out.flush()
    return 128 + signum


@contextlib.contextmanager
def _sigterm_stops() -> Iterator[None]:
    """For the command's duration, SIGTERM raises ``Terminated``; the handler in place
    before is put back after (only the main thread can install one)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if saved is None else saved)


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()
