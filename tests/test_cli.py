"""The ``coordkit`` command: demo, explore, replay, show; exit codes 0 / 1 / 2."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coordkit.cli import main
from tests.sched.programs import needs_line_granularity

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
    # A bounded dfs is unreduced (SCHED-35): the fix has 2,564 schedules with at most one
    # preemption, within the demo's budget of 3,000, so the demo can say "every".
    assert re.search(r"fixed version, every schedule with at most 1 preemption "
                     r"\(\d+\): no failure", out)
    assert "FAILED" not in out and out.count(": no failure") == 2
    assert re.search(r"coordkit\.replay\(shutdown_race, 'ck\d_\w+'\)", out)


def test_explore_reports_a_failure_with_exit_1_and_a_replay_command():
    code, out = run("explore", TARGET_BUG, "--seed", "3")
    assert code == 1
    assert "coordkit found a deadlock" in out
    trace = out.split(f"coordkit replay {TARGET_BUG} ")[1].split()[0]
    code, replayed = run("replay", TARGET_BUG, trace)
    assert code == 1 and "replay failed: Deadlock" in replayed
    code, shown = run("show", trace)
    assert code == 0 and re.match(r"trace format ck\d: \d+ choice points", shown)


def test_explore_passes_with_exit_0():
    code, out = run("explore", TARGET_OK, "--strategy", "dfs", "--max-schedules", "50", "--seed", "1")
    assert code == 0 and "no failure in 50 schedule(s)" in out


def test_explore_with_workers_finds_what_it_finds_alone(capsys):
    """PAR-1, PAR-3: --workers 2 reports the sequential search's failure, with its trace."""
    argv = ("explore", TARGET_BUG, "--seed", "3", "--strategy", "random", "--max-schedules", "60")
    alone, with_workers = run(*argv), run(*argv, "--workers", "2")
    assert alone[0] == with_workers[0] == 1
    trace = alone[1].split(f"coordkit replay {TARGET_BUG} ")[1].split()[0]
    assert f"coordkit replay {TARGET_BUG} {trace}" in with_workers[1]
    assert run("explore", TARGET_OK, "--workers", "0")[0] == 2  # a usage error
    assert "workers must be a positive int or None, got 0" in capsys.readouterr().err


def test_replay_of_a_passing_schedule():
    code, out = run("replay", TARGET_OK, "ck1_ab_" + "x")
    assert code == 2  # corrupt
    from coordkit.engine.trace import Schedule

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
    assert text.count("<th>T") == 3  # a lane per thread
    assert text.count('class="step failing') == 1
    assert 'class="block"' in text  # a parked thread says what it waits for
    assert not re.search(r"https?:|//[a-z]", text)  # self-contained: no network, no CDN
    assert "pass --target" in out  # a saved run has rows, not the world at each step
    # The same page from a replay of the target, with no saved run.
    code, out = run("show", trace, "--target", TARGET_BUG, "--html", str(tmp_path / "again.html"))
    assert code == 0
    code, _ = run("show", Schedule_empty(), "--html", str(tmp_path / "x.html"))
    assert code == 2


def test_show_open_writes_the_page_and_opens_it_in_a_browser(tmp_path, monkeypatch, capsys):
    import webbrowser

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    _, out = run("explore", TARGET_BUG, "--seed", "3")
    trace = out.split(f"coordkit replay {TARGET_BUG} ")[1].split()[0]
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", opened.append)
    page = tmp_path / "run.html"
    code, out = run("show", trace, "--target", TARGET_BUG, "--html", str(page), "--open")
    assert code == 0 and page.exists()
    assert opened == [page.resolve().as_uri()]
    assert re.search(r"wrote .*run\.html \(\d+ steps, 3 threads\)", out)
    capsys.readouterr()
    assert run("show", trace, "--open")[0] == 2
    assert "--open opens the page --html writes" in capsys.readouterr().err
    assert opened == [page.resolve().as_uri()]  # nothing more was opened


def Schedule_empty() -> str:  # noqa: N802
    from coordkit.engine.trace import Schedule

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
    # The page's own script ran (the Content-Security-Policy allows it by its hash): it
    # filled the step counter, starting at the failing step.
    assert re.search(r'class="counter"[^>]*>step (\d+) / \1<', dom.stdout), dom.stdout[-2000:]
    assert 'class="step failing current"' in dom.stdout
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *flags, f"--screenshot={shot}", "--window-size=1200,400", page.as_uri()],
                   capture_output=True, timeout=90)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000  # a drawn page, not a blank one


# --- bad input is a usage error (2) that names the problem in one line -------------------------


def _write_module(tmp_path, monkeypatch, name: str, source: str) -> str:
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_a_module_with_a_syntax_error_is_a_usage_error_without_a_traceback(tmp_path):
    (tmp_path / "ck_syntax_broken.py").write_text("def f(:\n    pass\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "coordkit", "explore", "ck_syntax_broken:f"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "coordkit explore: error: cannot import module 'ck_syntax_broken': "
        "SyntaxError: invalid syntax (ck_syntax_broken.py, line 1)"
    ]


def test_a_module_that_raises_on_import_is_a_usage_error_naming_the_line(tmp_path, monkeypatch, capsys):
    name = _write_module(tmp_path, monkeypatch, "ck_raises_on_import", "x = 1\nraise RuntimeError('boom')\n")
    code, out = run("explore", f"{name}:f")
    err = capsys.readouterr().err
    assert code == 2 and out == ""
    assert f"cannot import module '{name}': RuntimeError: boom" in err
    assert f"{name}.py, line 2)" in err and len(err.strip().splitlines()) == 1


def test_a_function_that_needs_arguments_is_a_usage_error(tmp_path, monkeypatch, capsys):
    name = _write_module(tmp_path, monkeypatch, "ck_needs_args",
                         "def needs_arg(queue, n=1):\n    pass\n\ndef optional(n=1):\n    pass\n")
    code, out = run("explore", f"{name}:needs_arg")
    err = capsys.readouterr().err
    assert code == 2 and out == ""
    assert f"{name}:needs_arg must be callable with no arguments" in err
    assert "needs_arg(queue, n=1)" in err and "'queue'" in err
    assert run("replay", f"{name}:needs_arg", Schedule_empty())[0] == 2
    code, out = run("explore", f"{name}:optional", "--max-schedules", "2", "--seed", "0")
    assert code == 0 and "no failure in 2 schedule(s)" in out


def test_show_html_into_a_missing_directory_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    _, out = run("explore", TARGET_BUG, "--seed", "3")
    trace = out.split(f"coordkit replay {TARGET_BUG} ")[1].split()[0]
    capsys.readouterr()
    missing = tmp_path / "no" / "such" / "dir" / "x.html"
    code, _ = run("show", trace, "--html", str(missing))
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        f"coordkit show: error: cannot write --html {str(missing)!r}: No such file or directory"
    ]


# --- replay at the command line speaks of --lenient, not strict=False ---------------------------


def test_a_diverged_replay_points_to_lenient(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    # TARGET_BUG's failing trace does not fit TARGET_OK (a different program).
    _, out = run("explore", TARGET_BUG, "--seed", "3")
    trace = out.split(f"coordkit replay {TARGET_BUG} ")[1].split()[0]
    code, out = run("replay", TARGET_OK, trace)
    assert code == 1 and out.startswith("TraceDivergedError: replay diverged")
    assert "--lenient" in out and "strict=False" not in out
    code, _ = run("show", trace, "--target", TARGET_OK)
    err = capsys.readouterr().err
    assert code == 2 and "the trace does not fit" in err
    assert "coordkit replay --lenient" in err and "strict=False" not in err


def test_show_target_notices_a_program_that_ends_before_the_trace(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    _, out = run("explore", TARGET_BUG, "--seed", "3")
    trace = out.split(f"coordkit replay {TARGET_BUG} ")[1].split()[0]
    code, _ = run("show", trace, "--target", "tests.sched.programs:lost_update")
    assert code == 2 and "the program ended after" in capsys.readouterr().err


def test_the_command_line_replay_goes_under_the_python_one_whatever_its_arguments():
    from coordkit.cli import _add_cli_replay

    report = "found\n\nReplay it exactly:\n    coordkit.replay(f, 'ck1_x', granularity='line')\n"
    assert _add_cli_replay(report, "coordkit replay m:f ck1_x", "ck1_x").split("\n")[3:5] == [
        "    coordkit.replay(f, 'ck1_x', granularity='line')",
        "    coordkit replay m:f ck1_x",
    ]
    # No Python line at all: the command still comes out, at the end.
    assert _add_cli_replay("found", "coordkit replay m:f ck1_x", "ck1_x").endswith(
        "\n    coordkit replay m:f ck1_x")


@needs_line_granularity
def test_a_line_granularity_failure_replays_with_the_printed_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    target = "tests.sched.programs:lost_update"
    code, out = run("explore", target, "--granularity", "line", "--seed", "1")
    assert code == 1
    command = out.split("coordkit replay ")[1].split("\n")[0].split()
    code, replayed = run("replay", *command)
    assert code == 1 and "replay failed: AssertionError: lost update" in replayed
    trace = command[1]
    code, shown = run("show", trace)
    assert command[2:] == [] and "granularity='line'" in shown  # the trace records it
    capsys.readouterr()
    code, _ = run("replay", target, trace, "--granularity", "sync")
    err = capsys.readouterr().err
    assert code == 2 and "--granularity sync, but the trace was recorded with granularity line" in err


# --- a saved run is input: checked before it is drawn (issue 18) ---------------------------------


@pytest.mark.parametrize("edit, fragment", [
    (lambda d: d["events"][0].update(step="<script>alert(1)</script>"), "event 0 field 'step'"),
    (lambda d: d["events"][0].update(tid=99), "event 0 names thread 99"),
    (lambda d: d.update(thread_names=[1, 2]), "a thread name is not a string"),
    (lambda d: d.update(failure=3), "field 'failure' is 3"),
    (lambda d: d.clear(), "field 'target' is None"),
])
def test_a_tampered_saved_run_is_refused_with_its_file(tmp_path, monkeypatch, capsys, edit, fragment):
    import json

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    _, out = run("explore", TARGET_BUG, "--seed", "3")
    trace = out.split(f"coordkit replay {TARGET_BUG} ")[1].split()[0]
    saved = tmp_path / ".coordkit" / "reports" / f"{trace}.json"
    data = json.loads(saved.read_text())
    edit(data)
    saved.write_text(json.dumps(data))
    capsys.readouterr()
    code, _ = run("show", trace, "--html", str(tmp_path / "out.html"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "is not a saved coordkit run" in err and fragment in err and f"{trace}.json" in err
    assert not (tmp_path / "out.html").exists()
    saved.write_text("{not json")
    assert run("show", trace)[0] == 0  # describing the trace needs no saved run
    assert run("show", trace, "--html", str(tmp_path / "out.html"))[0] == 2
    assert "cannot read" in capsys.readouterr().err
