"""SCHED-22: Ctrl-C (SIGINT, a KeyboardInterrupt in the main thread) stops an exploration
within a second; SIGTERM stops the command line the same way.

The signal is sent by the explored program itself, at a chosen run, while that run is
in progress (no sleeping and hoping): the test knows when it was sent and measures how
long the exploration took to stop.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import coordkit
from coordkit import cli, sync
from tests.reliability import programs
from tests.reliability._support import broken_after, stdlib_snapshot, thread_idents

ROOT = Path(__file__).resolve().parents[2]
STOP_WITHIN = 1.0


def _explore_until_interrupted(strategy: str, how: str) -> KeyboardInterrupt:
    programs.reset(at_run=4, how=how)
    with pytest.raises(KeyboardInterrupt) as caught:
        coordkit.explore(programs.signals_itself, strategy=strategy, seed=7, max_schedules=10**6)
    return caught.value


@pytest.mark.parametrize("how", ["kill", "raise_signal", "interrupt_main"])
@pytest.mark.parametrize("strategy", ["pct", "random", "dfs", "hypothesis"])
def test_a_signal_during_a_run_stops_explore_within_a_second(strategy, how):
    before, idents = stdlib_snapshot(), thread_idents()
    exc = _explore_until_interrupted(strategy, how)
    took = sync.real_monotonic() - programs.SEEN["sent_at"]
    assert took < STOP_WITHIN, f"stopped {took:.2f}s after the signal"
    assert exc.coordkit_result.interrupted
    # Every controlled thread of the interrupted run was ended (its finally ran).
    assert programs.SEEN["started"] == programs.SEEN["ended"] >= 4
    assert broken_after(before, idents) == []


def test_keyboard_interrupt_carries_the_partial_result():
    exc = _explore_until_interrupted("pct", "kill")
    result = exc.coordkit_result
    assert isinstance(result, coordkit.ExploreResult)
    assert result.interrupted and result.failure is None and not result.exhausted
    assert result.seed == 7 and result.strategy == "pct"
    assert result.schedules_run >= 3 and 0 < result.elapsed < 30
    text = str(result)
    assert "interrupted" in text and "seed 7" in text and f"{result.schedules_run} schedule" in text


def test_a_signal_during_replay_stops_it():
    before, idents = stdlib_snapshot(), thread_idents()
    programs.reset(at_run=1, how="kill")
    with pytest.raises(KeyboardInterrupt):
        coordkit.replay(programs.signals_itself, [], strict=False)
    assert sync.real_monotonic() - programs.SEEN["sent_at"] < STOP_WITHIN
    assert programs.SEEN["started"] == programs.SEEN["ended"] == 1
    assert broken_after(before, idents) == []


@pytest.mark.parametrize(("name", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_the_command_line_prints_the_partial_result_and_exits_128_plus_the_signal(name, code):
    env = {**os.environ, "SIGNAL": name, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "coordkit", "explore", "tests.reliability.programs:cli_target",
         "--seed", "11", "--max-schedules", "1000000"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "interrupted after" in proc.stdout and "seed 11" in proc.stdout, proc.stdout
    assert name in proc.stdout and "Traceback" not in proc.stderr, proc.stderr


def test_the_command_line_puts_the_sigterm_handler_back(tmp_path, monkeypatch, capsys):
    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ck_tiny.py").write_text("def ok():\n    pass\n")
    assert cli.main(["explore", "ck_tiny:ok", "--max-schedules", "2"]) == cli.EXIT_OK
    assert signal.getsignal(signal.SIGTERM) is before


def test_ctrl_c_while_the_stdlib_is_being_patched_leaves_nothing_patched(monkeypatch):
    from coordkit.engine import patch

    before, idents = stdlib_snapshot(), thread_idents()

    def interrupted() -> list:
        raise KeyboardInterrupt

    monkeypatch.setattr(patch, "_aliases_of_patched_names", interrupted)
    with pytest.raises(KeyboardInterrupt):
        coordkit.explore(programs.signals_itself, max_schedules=2, seed=1)
    monkeypatch.undo()
    assert broken_after(before, idents) == []
