"""MkDocs hook: the pictures of the semantics track, drawn by the current viewer.

A page asks for a picture with a line

    <!-- picture: FUNCTION FAILURE FILE.html -->

and the hook, at build time, runs the page's ``python`` blocks in order in a fresh
interpreter (a block whose first line is ``# raises: Name`` may raise that), then
draws the run of ``FAILURE.trace`` on ``FUNCTION`` with the command line's own
``coordkit show TRACE --target MODULE:FUNCTION --html FILE.html``, where MODULE is
a module holding the page's namespace, named after the page.  The file is added
to the site next to the page, so a link to ``FILE.html`` is checked by
``--strict`` like any other, and the picture always comes from the code on the
page and the viewer of the day.  A page whose code or
picture fails fails the build.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
PAGES = "tutorial/semantics"
_PICTURE = re.compile(r"<!--\s*picture:\s*(?P<fn>\w+)\s+(?P<failure>\w+)\s+(?P<file>[\w-]+\.html)\s*-->")
_FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$",
                    re.MULTILINE | re.DOTALL)

# Runs the page's blocks as a module named after the page, then draws the picture with the CLI.
_DRAW = r"""
import json, re, sys, types
job = json.load(sys.stdin)
page = types.ModuleType(job["module"])
sys.modules[job["module"]] = page
for line, code in job["blocks"]:
    expected = re.match(r"\s*#\s*raises:\s*(\w+)", code)
    try:
        exec(compile("\n" * (line - 1) + code, job["source"], "exec"), page.__dict__)
    except Exception as exc:
        if not expected or expected.group(1) not in {c.__name__ for c in type(exc).__mro__}:
            raise
from coordkit.cli import main
trace = getattr(page, job["failure"]).trace
sys.exit(main(["show", trace, "--target", job["module"] + ":" + job["fn"], "--html", job["out"]]))
"""


def _blocks(text: str) -> list[tuple[int, str]]:
    blocks = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip()
        if (info.split()[0] if info else "") in ("python", "py"):
            blocks.append((text.count("\n", 0, match.start("body")) + 1,
                           textwrap.dedent(match.group("body"))))
    return blocks


def draw(source: Path, fn: str, failure: str) -> str:
    """The viewer's HTML page for the failing run the page at ``source`` finds."""
    text = source.read_text(encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "picture.html"
        job = {"source": str(source.relative_to(ROOT)), "blocks": _blocks(text), "fn": fn,
               "failure": failure, "out": str(out), "module": source.stem.replace("-", "_")}
        # From the repository's root, so that the viewer finds the page's lines by their file name.
        proc = subprocess.run([sys.executable, "-c", _DRAW], input=json.dumps(job), capture_output=True,
                              text=True, cwd=ROOT, env=env, timeout=300)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"cannot draw the picture of {source.name}: {fn} on {failure}.trace\n"
                               f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        return out.read_text(encoding="utf-8")


def on_files(files: Files, config: Any) -> Files:
    for source in sorted((Path(config["docs_dir"]) / PAGES).glob("*.md")):
        for match in _PICTURE.finditer(source.read_text(encoding="utf-8")):
            html = draw(source.resolve(), match.group("fn"), match.group("failure"))
            files.append(File.generated(config, f"{PAGES}/{match.group('file')}", content=html))
    return files
