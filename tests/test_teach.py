"""``coordkit demo --teach``: the demo's race walked through step by step, and it ends."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from coordkit._teach import explain_steps, teach
from coordkit.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_teach_names_the_threads_the_preemption_and_the_failure():
    out = io.StringIO()
    assert main(["demo", "--teach", "--no-pause"], out=out) == 0
    text = out.getvalue()
    steps = [int(n) for n in re.findall(r"^step (\d+): ", text, re.MULTILINE)]
    assert steps and steps == sorted(steps) and steps[0] == 1
    for name in ("MainThread", "producer-a", "producer-b", "consumer"):
        assert re.search(rf"^step \d+: {name} runs", text, re.MULTILINE), name
    # The shrunk run has one preemption, and the walk points at it, away from a producer.
    preemptions = re.findall(r"^step \d+: \S+ runs \(PREEMPTION: (producer-[ab]) could have gone on",
                             text, re.MULTILINE)
    assert len(preemptions) == 1
    assert "shrunk to 1 preemption(s)" in text
    assert (f"The failure, in thread {preemptions[0]!r}: "
            "CancelledError: Queue 'items' is already closed.") in text
    assert "`queue.close()`" in text and "`elif not queue.is_closed():`" in text
    assert re.search(r"coordkit\.replay\(shutdown_race, 'ck\d_\w+'\)", text)


def test_teach_pauses_between_steps_until_told_to_run_to_the_end():
    answers = iter(["\n", "\n", "c\n"])
    asked = []

    def pause() -> str:
        asked.append(1)
        return next(answers)

    out = io.StringIO()
    assert teach(out, pause=pause) == 0
    assert len(asked) == 3  # Enter, Enter, then "c": no more pauses
    assert "The failure, in thread" in out.getvalue()


def test_teach_without_a_terminal_does_not_wait():
    proc = subprocess.run([sys.executable, "-m", "coordkit", "demo", "--teach"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "Enter: next step" not in proc.stdout
    assert "The failure, in thread" in proc.stdout


def _ev(step: int, tid: int, kind: str, target: str, where: str = "p.py:1 in f"):
    return SimpleNamespace(step=step, tid=tid, kind=kind, target=target, where=where, time=0.0)


def test_a_switch_is_explained_by_a_block_an_end_or_a_preemption():
    events = [
        _ev(1, 0, "join", "T1"), _ev(1, 0, "block", "join(T1)"),
        _ev(2, 1, "acquire", "Lock#1"),
        _ev(3, 2, "acquire", "Lock#1"),          # T1 could go on: a preemption
        _ev(4, 1, "release", "Lock#1"),          # T2 could too: another one; T1 ends here
        _ev(5, 2, "release", "Lock#1"),          # T1 has finished: no preemption
    ]
    paragraphs = explain_steps(events, ["main", "a", "b"], {})
    heads = [p.splitlines()[0] for p in paragraphs]
    assert heads[1] == "step 2: a runs (main is blocked, so the scheduler picks another thread)"
    assert heads[2].startswith("step 3: b runs (PREEMPTION: a could have gone on running")
    assert heads[3].startswith("step 4: a runs (PREEMPTION: b could have gone on running")
    assert heads[4] == "step 5: b runs (a has finished, so the scheduler picks another thread)"
    assert paragraphs[4].splitlines()[-1] == "  state: main ready (woken at step 4); a finished; b running"


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_teach_on_a_terminal_waits_for_enter(tmp_path: Path):
    """With stdin a terminal, each step waits for a line; 'c' runs to the end."""
    import os
    import pty
    import select

    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "coordkit", "demo", "--teach"], stdin=terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    os.close(terminal)
    try:
        seen = b""
        while b"Enter: next step" not in seen:  # the first pause: the process waits on stdin
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            assert ready, seen[-2000:]
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, (seen[-2000:], proc.wait(10), proc.stderr.read())
            seen += chunk
        assert proc.poll() is None  # it cannot go on without a line
        assert b"step 1: " in seen and b"step 2: " not in seen
        os.write(controller, b"\n")   # Enter: one more step, and the next pause
        os.write(controller, b"c\n")  # then to the end without pausing
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(controller)
    text = (seen + out).decode()
    assert proc.returncode == 0, err
    assert text.count("Enter: next step") == 2
    assert "step 2: " in text and "The failure, in thread" in text
