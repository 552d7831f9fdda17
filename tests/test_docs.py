"""The documentation builds, and every Python block of the tutorial runs.

Tutorial pages are run the way a reader runs them: the fenced ``python`` blocks of
one page, in order, in one namespace, in a fresh interpreter.  A block that is
meant to fail says so on its first line with a comment such as
``# raises: Deadlock``; it must raise that exception (or a subclass), and the
page goes on with the next block.  Every other block must run without raising.

Tracebacks point into the Markdown file: each block is compiled with the page's
path as its file name and its own line numbers, so a failure names the page
and the line to fix.

Output a page quotes is checked against what its blocks print, so that no
number in it goes stale: a quoted report line (one starting ``coordkit found``,
``no failure in`` or ``replay diverged``, in a non-Python block or in a ``#``
comment of a Python block) must match a printed line, ``...`` standing for any
text; a quoted report-table row with a step number must match a printed row
with that number that contains each of its cells.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TUTORIAL_PAGES = sorted((DOCS / "tutorial").glob("*.md"))

# A fenced block, possibly indented (inside an admonition or a list item).
_FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$",
    re.MULTILINE | re.DOTALL,
)
_RAISES = re.compile(r"\A\s*#\s*raises:\s*(?P<name>[A-Za-z_]\w*)\s*$", re.MULTILINE)


def python_blocks(path: Path) -> list[dict[str, object]]:
    """The page's ``python`` blocks in order: first line number, code, expected exception."""
    text = path.read_text(encoding="utf-8")
    blocks: list[dict[str, object]] = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip()
        language = info.split()[0] if info else ""
        if language not in ("python", "py"):
            continue
        code = textwrap.dedent(match.group("body"))
        raises = _RAISES.match(code)
        blocks.append({
            "line": text.count("\n", 0, match.start("body")) + 1,
            "code": code,
            "raises": raises.group("name") if raises else None,
        })
    return blocks


_REPORT_LINE = re.compile(r"(?:coordkit found |no failure in |replay diverged )")
_TABLE_ROW = re.compile(r"^\s*(?P<mark>>?)(?P<step>\d+)\s+(?P<rest>[|(].*)$")


def quoted_output(path: Path) -> list[dict[str, object]]:
    """Output the page quotes: report lines and report-table rows, with their line numbers."""
    text = path.read_text(encoding="utf-8")
    quotes: list[dict[str, object]] = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip()
        is_python = (info.split()[0] if info else "") in ("python", "py")
        first = text.count("\n", 0, match.start("body")) + 1
        for offset, line in enumerate(textwrap.dedent(match.group("body")).splitlines()):
            where = first + offset
            if is_python:
                comment = line.partition("# ")[2].strip()
                if _REPORT_LINE.match(comment):
                    quotes.append({"line": where, "report": comment})
                continue
            if _REPORT_LINE.match(line.strip()):
                quotes.append({"line": where, "report": line.strip()})
            elif row := _TABLE_ROW.match(line):
                cells = [c.strip() for c in row.group("rest").split("|")]
                quotes.append({"line": where, "step": row.group("mark") + row.group("step"),
                               "cells": [c for c in cells if c and not c.startswith("(")]})
    return quotes


def unmatched_quotes(quotes: list[dict[str, object]], printed: str) -> list[str]:
    """The quotes that no printed line bears out, as ``line N: text``."""
    lines = [line.rstrip() for line in printed.splitlines()]
    missing = []
    for quote in quotes:
        if "report" in quote:
            text = str(quote["report"])
            pattern = re.compile(".*".join(re.escape(part) for part in text.split("...")))
            ok = any(pattern.fullmatch(line) for line in lines)
        else:
            text = f"step {quote['step']}: {quote['cells']}"
            head = re.compile(rf"\s*{re.escape(str(quote['step']))}\s")
            ok = any(head.match(line) and all(c in line for c in quote["cells"])  # type: ignore[union-attr]
                     for line in lines)
        if not ok:
            missing.append(f"line {quote['line']}: {text}")
    return missing


# Runs in a fresh interpreter: reads {"page": ..., "blocks": [...]} on stdin.
_RUNNER = r"""
import json, sys, traceback
job = json.load(sys.stdin)
namespace = {"__name__": "tutorial"}
for block in job["blocks"]:
    where = f"{job['page']}:{block['line']}"
    code = compile("\n" * (block["line"] - 1) + block["code"], job["page"], "exec")
    expected = block["raises"]
    try:
        exec(code, namespace)
    except BaseException as exc:
        names = {cls.__name__ for cls in type(exc).__mro__}
        if expected in names:
            print(f"[block {where} raised {type(exc).__name__}, as marked]", flush=True)
            print(exc, flush=True)  # so that a page may quote the message
            continue
        traceback.print_exc()
        sys.exit(f"block at {where} raised {type(exc).__name__}"
                 + (f" (marked: raises {expected})" if expected else ""))
    else:
        if expected:
            sys.exit(f"block at {where} is marked '# raises: {expected}' but raised nothing")
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["NO_MKDOCS_2_WARNING"] = "1"
    return env


def test_the_tutorial_has_code_to_run():
    counts = {page.name: len(python_blocks(page)) for page in TUTORIAL_PAGES}
    assert sum(counts.values()) >= 20, counts
    assert all(n for name, n in counts.items() if name != "index.md"), counts


def test_raises_markers_are_read():
    page = DOCS / "tutorial" / "01-stop-flag.md"
    assert any(block["raises"] for block in python_blocks(page))


def test_quoted_output_is_read_and_checked():
    quotes = quoted_output(DOCS / "tutorial" / "05-find-the-race.md")
    assert any(str(q.get("report", "")).startswith("coordkit found an exception after") for q in quotes)
    assert {"step": ">84", "cells": []} in [{k: q[k] for k in ("step", "cells")} for q in quotes
                                           if "step" in q]
    printed = "no failure in 12 schedule(s) (strategy dfs, 0.5s); the bounded space is exhausted\n"
    quote = [{"line": 1, "report": "no failure in ... schedule(s) (strategy dfs, ...); the bounded space "
                                   "is exhausted"}]
    assert unmatched_quotes(quote, printed) == []
    assert unmatched_quotes([{"line": 1, "report": "no failure in 13 schedule(s) (strategy dfs, ...)..."}],
                            printed) == ["line 1: no failure in 13 schedule(s) (strategy dfs, ...)..."]
    row = {"line": 2, "step": "40", "cells": ["acquire Lock#2 @ p.md:26"]}
    assert unmatched_quotes([row], " 40  |   | acquire Lock#2 @ p.md:26 |\n") == []
    assert unmatched_quotes([row], " 41  |   | acquire Lock#2 @ p.md:26 |\n") != []


@pytest.mark.parametrize("page", TUTORIAL_PAGES, ids=lambda p: p.name)
def test_tutorial_page_runs(page: Path, tmp_path: Path):
    blocks = python_blocks(page)
    if not blocks:
        return
    job = json.dumps({"page": str(page.relative_to(ROOT)), "blocks": blocks})
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER], input=job, capture_output=True, text=True,
        cwd=tmp_path, env=_env(), timeout=90,
    )
    assert proc.returncode == 0, (
        f"{page.name}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''}\n"
        f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
    )
    missing = unmatched_quotes(quoted_output(page), proc.stdout)
    assert not missing, (
        f"{page.name} quotes output its code does not print (update the page):\n  "
        + "\n  ".join(missing) + f"\n--- stdout ---\n{proc.stdout[-4000:]}"
    )


@pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="the documentation toolchain (pymdown-extensions 13, which current mkdocstrings "
           "calls) needs Python 3.11+; on 3.10 pip resolves an older one that breaks the build. "
           "The site is built, and this test runs, on 3.11+ (CI's interpreter)",
)
def test_docs_build_strict(tmp_path: Path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install '.[test]' brings mkdocs-material and mkdocstrings)")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site"),
         "--config-file", str(ROOT / "mkdocs.yml")],
        capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=300,
    )
    assert proc.returncode == 0, (
        f"mkdocs build --strict failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    )
    assert (tmp_path / "site" / "index.html").exists()
    # The spec rules are rendered from specs/, not copied.
    spec_page = tmp_path / "site" / "reference" / "specs" / "coordinator" / "index.html"
    assert "COORD-4" in spec_page.read_text(encoding="utf-8")
