"""The ``coordkit`` command: demo, explore, replay, show; exit codes 0 / 1 / 2."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coordkit.__main__ import main

ROOT = Path(__file__).resolve().parent.parent
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
    assert "fixed version, every schedule with at most 1 preemption" in out
    assert "FAILED" not in out and out.count(": no failure") == 2
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


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_show_draws_a_saved_run_as_swim_lanes(tmp_path, monkeypatch):
    # TRACE-5: the HTML view of a failing run (threads as lanes, the failing step marked)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    code, out = run("explore", TARGET_BUG, "--seed", "3")
    assert code == 1
    trace = out.split(f"coordkit replay {TARGET_BUG} ")[1].split()[0]
    page = tmp_path / "run.html"
    code, out = run("show", trace, "--html", str(page))
    assert code == 0 and "wrote" in out
    text = page.read_text()
    assert text.count('class="lane"') == 3
    assert text.count('class="op failing"') == 1
    assert 'class="parked"' in text
    assert "http" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")  # self-contained
    # The same page from a replay of the target, with no saved run.
    code, out = run("show", trace, "--target", TARGET_BUG, "--html", str(tmp_path / "again.html"))
    assert code == 0
    code, _ = run("show", Schedule_empty(), "--html", str(tmp_path / "x.html"))
    assert code == 2


def Schedule_empty() -> str:  # noqa: N802
    from coordkit.trace import Schedule

    return Schedule(((2, 1),)).encode()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_html_page_renders_in_headless_chromium(tmp_path, monkeypatch):
    # TRACE-5
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    page = tmp_path / "run.html"
    _, out = run("explore", TARGET_BUG, "--seed", "3")
    trace = out.split(f"coordkit replay {TARGET_BUG} ")[1].split()[0]
    assert run("show", trace, "--html", str(page))[0] == 0
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=90)
    assert "<svg" in dom.stdout and 'class="op failing"' in dom.stdout
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *flags, f"--screenshot={shot}", "--window-size=1200,400", page.as_uri()],
                   capture_output=True, timeout=90)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000  # a drawn page, not a blank one
