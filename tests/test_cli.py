"""The ``coordkit`` command: demo, explore, replay, show; exit codes 0 / 1 / 2."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from coordkit.__main__ import main

TARGET_BUG = "tests.sched.programs:lock_order_deadlock"
TARGET_OK = "tests.sched.programs:locked_counter"


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_demo_finds_shrinks_replays_and_passes_the_fix():
    proc = subprocess.run([sys.executable, "-m", "coordkit", "demo"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "shrunk from" in out and "to 1 preemption(s)" in out
    assert out.count("CancelledError: Queue 'items' is already closed.") >= 4  # found + 3 replays
    assert "fixed version: no failure" in out
    assert "coordkit.replay(shutdown_race, 'ck1_" in out


def test_explore_reports_a_failure_with_exit_1_and_a_replay_command():
    code, out = run("explore", TARGET_BUG, "--seed", "3")
    assert code == 1
    assert "coordkit found a deadlock" in out
    trace = out.split(f"coordkit replay {TARGET_BUG} ")[1].split()[0]
    code, replayed = run("replay", TARGET_BUG, trace)
    assert code == 1 and "replay failed: Deadlock" in replayed
    code, shown = run("show", trace)
    assert code == 0 and "trace format ck1" in shown


def test_explore_passes_with_exit_0():
    code, out = run("explore", TARGET_OK, "--strategy", "dfs", "--max-schedules", "50", "--seed", "1")
    assert code == 0 and "no failure in 50 schedule(s)" in out


def test_replay_of_a_passing_schedule():
    code, out = run("replay", TARGET_OK, "ck1_ab_" + "x")
    assert code == 2  # corrupt
    from coordkit.trace import Schedule

    code, out = run("replay", TARGET_OK, "--lenient", Schedule().encode())
    assert code == 0 and "replay passed" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explore", "nocolon"], "target must look like MODULE:FUNCTION, got 'nocolon'"),
        (["explore", "no_such_module_xyz:f"], "cannot import module 'no_such_module_xyz'"),
        (["explore", "tests.sched.programs:nothing"], "has no attribute 'nothing'"),
        (["explore", TARGET_OK, "--max-schedules", "0"], "max_schedules must be a positive integer, got 0"),
        (["show", "ck1_zz_zz"], "bad trace"),
    ],
)
def test_usage_errors_exit_2_and_name_the_problem(argv, message, capsys):
    code, _ = run(*argv)
    assert code == 2
    assert message in capsys.readouterr().err


def test_argparse_errors_exit_2(capsys):
    assert run("explore")[0] == 2
    assert run("frobnicate")[0] == 2
