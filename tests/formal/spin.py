"""Running spin on specs/formal/shutdown.pml in a temporary directory (FORMAL-8).

``check(tmp, property, bug)`` generates the verifier (``spin -a``), compiles it
and runs it: a safety run (assertions and invalid end states) or, for
``"runners_end"``, the acceptance-cycle search under weak fairness (``-a -f``).
Nothing is written outside ``tmp``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MODEL = Path(__file__).resolve().parents[2] / "specs" / "formal" / "shutdown.pml"
LIVENESS = "runners_end"
MISSING = ("spin is not installed: the shutdown model (specs/formal/shutdown.pml) cannot be "
           "checked. Install Debian's package: apt-get install -y spin (.ci/run does it)")


@dataclass(frozen=True)
class Verdict:
    """What pan said: its error count and the first error's line, and its whole output."""

    errors: int
    error: str
    output: str
    directory: Path


def tools() -> tuple[str, str]:
    """The spin and C compiler executables; an AssertionError saying what is missing."""
    spin, cc = shutil.which("spin"), shutil.which("gcc") or shutil.which("cc")
    assert spin is not None, MISSING
    assert cc is not None, "no C compiler (gcc or cc) on PATH: spin's verifier cannot be built"
    return spin, cc


def _run(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 1), f"{argv} exited {done.returncode}: {done.stderr}{done.stdout}"
    return done.stdout + done.stderr


def check(tmp: Path, prop: str, bug: str | None = None, cflags: tuple[str, ...] | list[str] = ()) -> Verdict:
    """Verify ``prop`` (``"safety"`` or ``"runners_end"``) of the model, with ``bug`` planted;
    ``cflags`` go to the compiler (``-DBFS``: a breadth-first search, a shortest trail)."""
    spin, cc = tools()
    shutil.copy(MODEL, tmp / MODEL.name)
    defines = [f"-D{bug}"] if bug else []
    _run([spin, "-a", *defines, MODEL.name], tmp)
    flags, claim = (["-a", "-f"], []) if prop == LIVENESS else ([], ["-DNOCLAIM"])
    _run([cc, "-O0", *claim, *cflags, "-o", "pan", "pan.c"], tmp)
    output = _run(["./pan", *flags], tmp)
    found = re.search(r"errors: (\d+)", output)
    assert found is not None, f"pan printed no error count:\n{output}"
    first = re.search(r"^pan:1: (.*)$", output, re.MULTILINE)
    return Verdict(int(found.group(1)), first.group(1) if first else "", output, tmp)


def guided(verdict: Verdict, bug: str | None = None) -> str:
    """The guided simulation of the trail pan left (``spin -t -T``): its printed events."""
    spin, _ = tools()
    defines = [f"-D{bug}"] if bug else []
    return _run([spin, "-t", "-T", *defines, MODEL.name], verdict.directory)
