"""What the ``coordkit`` command prints: ``--json`` (one document), rich tables and colours
on a terminal, plain text otherwise (CLI-JSON-1, CLI-TTY-1)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console

import coordkit
from coordkit._terminal import RichOutput, RichProgress
from coordkit.cli import main

ROOT = Path(__file__).resolve().parent.parent
TARGET_BUG = "tests.sched.programs:lock_order_deadlock"
TARGET_OK = "tests.sched.programs:locked_counter"
ANSI = "\x1b["


class _Terminal(io.StringIO):
    """An output that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """explore saves failing runs under .coordkit/ in the current directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))


def run(*argv: str, out: io.StringIO | None = None) -> tuple[int, str]:
    out = out if out is not None else io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def _check_thread(thread: dict) -> None:
    assert set(thread) >= {"label", "name", "state", "where", "waits_on", "holds", "exception",
                           "raised_at"}
    assert thread["state"] in ("blocked", "runnable", "not started", "finished", "died")
    assert isinstance(thread["holds"], list)


def _check_row(row: dict) -> None:
    assert isinstance(row["step"], int) and isinstance(row["tid"], int)
    assert isinstance(row["kind"], str) and isinstance(row["where"], str)


def test_explore_json_is_one_document_with_the_failure_explained():
    # CLI-JSON-1
    code, out = run("explore", TARGET_BUG, "--seed", "3", "--json")
    assert code == 1
    doc = json.loads(out)  # the whole output is one document
    assert doc["command"] == "explore" and doc["target"] == TARGET_BUG
    assert doc["verdict"] == "failure" and doc["ok"] is False
    assert isinstance(doc["schedules"], int) and doc["schedules"] >= 1
    assert doc["strategy"] == "pct" and doc["seed"] == 3
    assert isinstance(doc["races"], list) and isinstance(doc["warnings"], list)
    failure = doc["failure"]
    assert failure["kind"] == "deadlock"
    assert failure["root_cause"].startswith("Every live thread is blocked: T0 'MainThread' on join(T1)")
    assert [t["name"] for t in failure["threads"]] == ["MainThread", "Thread-1 (ab)", "Thread-2 (ba)"]
    for thread in failure["threads"]:
        _check_thread(thread)
    assert {tuple(t["holds"]) for t in failure["threads"]} == {(), ("Lock#1",), ("Lock#2",)}
    assert failure["rows"] and all(_check_row(r) is None for r in failure["rows"])
    assert failure["thread_names"][0] == "MainThread"
    [switch] = failure["preempted"]
    assert switch["where"].startswith("programs.py:") and switch["to"].startswith("T2 ")
    assert doc["trace"] == failure["trace"] and doc["trace"].startswith("ck")
    assert doc["replay"] == f"coordkit.replay(lock_order_deadlock, {doc['trace']!r})"
    assert doc["replay_command"] == f"coordkit replay {TARGET_BUG} {doc['trace']}"

    # The replay command, with --json, gives the same failure back.
    code, out = run("replay", TARGET_BUG, doc["trace"], "--json")
    assert code == 1
    again = json.loads(out)
    assert again["verdict"] == "failed" and again["trace"] == doc["trace"]
    assert again["failure"]["kind"] == "deadlock"
    assert again["failure"]["threads"] == failure["threads"]
    assert again["rows"] == failure["rows"]


def test_json_of_a_pass_and_of_a_passing_replay():
    # CLI-JSON-1
    code, out = run("explore", TARGET_OK, "--strategy", "dfs", "--max-schedules", "20", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["verdict"] == "no failure" and doc["ok"] is True
    assert doc["failure"] is None and doc["trace"] is None and doc["replay"] is None
    assert doc["schedules"] == 20 and doc["looked_at"].startswith("auto granularity")
    code, out = run("replay", TARGET_OK, "--lenient", coordkit.Schedule().encode(), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["verdict"] == "passed" and doc["failure"] is None and doc["steps"] > 0
    assert all(_check_row(r) is None for r in doc["rows"])


def test_a_diverged_replay_in_json():
    # CLI-JSON-1
    code, out = run("replay", TARGET_OK, "ck2_baaaa_6fjirkq", "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["verdict"] == "diverged" and "--lenient" in doc["error"]


def test_demo_json():
    # CLI-JSON-1
    code, out = run("demo", "--json", "--fixed-schedules", "30")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["command"] == "demo" and doc["ok"] is True
    found = doc["found"]["failure"]
    assert found["kind"] == "exception" and found["exception"]["type"] == "CancelledError"
    assert "_demo.py:" in found["root_cause"] and len(found["preempted"]) == 1
    assert doc["replays"] == ["CancelledError: Queue 'items' is already closed."] * 3
    assert [f["verdict"] for f in doc["fixed"]] == ["no failure", "no failure"]


def test_on_a_terminal_the_report_has_tables_and_colours():
    # CLI-TTY-1: the rich path, through the command, on an output that is a terminal
    code, out = run("explore", TARGET_BUG, "--seed", "3", out=_Terminal())
    assert code == 1 and ANSI in out
    for part in ("coordkit found a deadlock", "root cause", "Threads at the failure", "step |",
                 "Lock#2 held by T2", f"coordkit replay {TARGET_BUG} ck"):
        assert part in out, part
    assert out.index("root cause") < out.index("Threads at the failure") < out.index("step |")
    code, out = run("explore", TARGET_OK, "--max-schedules", "5", out=_Terminal())
    assert code == 0 and ANSI in out and "no failure in 5 schedule(s)" in out


def test_without_a_terminal_the_output_is_plain_text():
    # CLI-TTY-1: a pipe or a file gets what the tests and the tutorial quote, no escapes
    code, out = run("explore", TARGET_BUG, "--seed", "3")
    assert code == 1 and ANSI not in out
    assert out.startswith("coordkit found a deadlock after")


def test_rich_shows_what_the_program_names_literally():
    # CLI-TTY-1: a thread name is data, not rich markup
    def program() -> None:
        lock = threading.Lock()
        lock.acquire()
        t = threading.Thread(target=lock.acquire, name="[bold red]evil[/bold red]\x1b[2J")
        t.start()
        t.join()

    failure = coordkit.explore(program, seed=1, max_schedules=5).failure
    assert failure is not None
    console = Console(force_terminal=True, file=io.StringIO(), width=200)
    RichOutput(console).failure(failure, None)
    out = console.file.getvalue()
    assert "[bold red]evil[/bold red]<U+001B>[2J" in out
    assert "\x1b[2J" not in out


def test_the_progress_bar_shows_rate_and_eta():
    # CLI-TTY-1
    console = Console(force_terminal=True, file=io.StringIO(), width=120)
    with RichProgress(console, total=100, time_budget=None) as progress:
        progress(25, 0.5)
        progress._progress.refresh()
    out = console.file.getvalue()
    assert "25/100 schedules" in out and "50/s" in out and "ETA 2s" in out
    # The sooner budget wins: 75 schedules at 50/s is 1.5 s, the time budget ends sooner.
    assert RichProgress(console, total=100, time_budget=0.75).eta(25, 0.5) == pytest.approx(0.25)
    assert RichProgress(console, total=100, time_budget=None).eta(0, 0.0) is None


def test_rich_is_imported_only_for_a_terminal():
    # CLI-TTY-1: optional output machinery stays out of `import coordkit` and of plain runs
    code = ("import io, sys; import coordkit; from coordkit.cli import main; "
            f"main(['explore', {TARGET_OK!r}, '--max-schedules', '2'], out=io.StringIO()); "
            "print('rich' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "False"


def test_an_interrupted_exploration_prints_its_partial_result_as_json():
    # CLI-JSON-1: Ctrl-C under --json still prints one document, with what was done
    import argparse
    import signal

    from coordkit.cli import _interrupted

    partial = coordkit.explore(lambda: None, max_schedules=3, seed=1)
    partial.interrupted = True
    exc = KeyboardInterrupt()
    exc.coordkit_result = partial  # type: ignore[attr-defined]
    out = io.StringIO()
    code = _interrupted(argparse.Namespace(command="explore", json=True), exc, out)
    assert code == 128 + signal.SIGINT
    doc = json.loads(out.getvalue())
    assert doc["verdict"] == "interrupted" and doc["signal"] == "SIGINT"
    assert doc["schedules"] == 3 and doc["seed"] == 1 and doc["failure"] is None
