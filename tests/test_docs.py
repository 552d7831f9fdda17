"""The documentation builds, and every Python block of the tutorial and how-to pages runs.

Pages are run the two ways a reader runs them, each in a fresh interpreter: as a
script (the fenced ``python`` blocks of one page, in order, in one namespace),
and pasted into an interactive session (the same blocks fed line by line to one
``code.InteractiveConsole`` per page, which decides where a statement ends exactly
as ``python``'s prompt does: a blank line inside an indented block ends the
block, and an unindented line right after an indented one is a SyntaxError).
A block that is meant to fail says so on its first line with a comment such as
``# raises: Deadlock``; it must raise that exception (or a subclass), and the
page goes on with the next block.  Every other block must run without raising.
A block that is not meant to run (a file of the reader's own project) follows a
line ``<!-- not run: why -->``, which the built site does not show.

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
TUTORIAL_PAGES = sorted((DOCS / "tutorial").rglob("*.md"))
RUN_PAGES = TUTORIAL_PAGES + sorted((DOCS / "how-to").glob("*.md"))

# A fenced block, possibly indented (inside an admonition or a list item).
_FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$",
    re.MULTILINE | re.DOTALL,
)
_RAISES = re.compile(r"\A\s*#\s*raises:\s*(?P<name>[A-Za-z_]\w*)\s*$", re.MULTILINE)
_NOT_RUN = re.compile(r"<!--\s*not run\b[^>]*-->[ ]*\n\Z")


def python_blocks(path: Path) -> list[dict[str, object]]:
    """The page's ``python`` blocks in order: first line number, code, expected exception."""
    text = path.read_text(encoding="utf-8")
    blocks: list[dict[str, object]] = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip()
        language = info.split()[0] if info else ""
        if language not in ("python", "py"):
            continue
        before = text[text.rfind("\n", 0, max(match.start() - 1, 0)) + 1:match.start()]
        if _NOT_RUN.search(before):
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


# Runs in a fresh interpreter: reads {"page": ..., "blocks": [...]} on stdin and pastes
# the blocks into one console.  Where a statement ends is decided by the console, from
# the lines alone, as at the prompt; a finished statement is then compiled with the
# page's name and line numbers, so that tracebacks and reports point into the page.
_PASTE_RUNNER = r"""
import __future__, code, json, sys, traceback
job = json.load(sys.stdin)
FUTURE = 0
for name in __future__.all_feature_names:
    FUTURE |= getattr(__future__, name).compiler_flag


class Paste(code.InteractiveConsole):
    def __init__(self):
        super().__init__({"__name__": "__main__", "__doc__": None}, filename=job["page"])
        self.raised, self.line, self.first = [], 0, 0

    def push(self, line, *args, **kwargs):
        self.line += 1
        if not self.buffer:
            self.first = self.line
        return super().push(line, *args, **kwargs)

    def runsource(self, source, filename="<input>", symbol="single"):
        try:
            if self.compile(source, filename, symbol) is None:
                return True  # more lines to come: the prompt shows '...'
        except (OverflowError, SyntaxError, ValueError) as exc:
            self.raised.append(exc)
            print(f"{job['page']}:{self.first}: the prompt refuses this statement:",
                  repr(source), file=sys.stderr)
            self.showsyntaxerror(filename)
            return False
        if all(not s.strip() or s.strip().startswith("#") for s in source.split("\n")):
            return False  # only blank lines and comments: the prompt does nothing
        flags = self.compile.compiler.flags & FUTURE
        code_ = compile("\n" * (self.first - 1) + source + "\n", job["page"], symbol,
                        flags=flags, dont_inherit=True)
        self.runcode(code_)
        return False

    def runcode(self, code_):
        sys.displayhook = self.display
        try:
            exec(code_, self.locals)
        except SystemExit:
            raise
        except BaseException as exc:
            self.raised.append(exc)
            traceback.print_exc()


    def display(self, value):
        # The prompt echoes an expression's value: more than a screenful buries the page.
        if value is not None and len(repr(value)) > ECHO_LIMIT:
            self.raised.append(ValueError(
                f"line {self.first}: the prompt would echo {len(repr(value))} characters of "
                f"{type(value).__name__}; assign the value to a name"))
        elif value is not None:
            print(repr(value))


ECHO_LIMIT = 1000
console = Paste()
for block in job["blocks"]:
    where = f"{job['page']}:{block['line']}"
    console.line = block["line"] - 1
    console.raised = []
    for line in block["code"].splitlines():
        console.push(line)
    if console.buffer:
        console.push("")  # the reader presses Enter after the paste
    expected = block["raises"]
    wrong = [e for e in console.raised if expected not in {c.__name__ for c in type(e).__mro__}]
    if wrong:
        sys.exit(f"pasted block at {where} raised {type(wrong[0]).__name__}: {wrong[0]}"
                 + (f" (marked: raises {expected})" if expected else ""))
    if expected and not console.raised:
        sys.exit(f"pasted block at {where} is marked '# raises: {expected}' but raised nothing")
    for exc in console.raised:
        print(f"[block {where} raised {type(exc).__name__}, as marked]", flush=True)
        print(exc, flush=True)
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


def _run(runner: str, page: str, blocks: list[dict[str, object]],
         cwd: Path) -> subprocess.CompletedProcess[str]:
    job = json.dumps({"page": page, "blocks": blocks})
    return subprocess.run([sys.executable, "-c", runner], input=job, capture_output=True, text=True,
                          cwd=cwd, env=_env(), timeout=90)


def _block(code: str, raises: str | None = None) -> dict[str, object]:
    return {"line": 1, "code": textwrap.dedent(code), "raises": raises}


@pytest.mark.parametrize("code, error", [
    ("""\
     def f():
         x = 1

         return x
     """, "IndentationError"),
    ("""\
     for i in range(2):
         pass
     print("after the loop")
     """, "SyntaxError"),
])
def test_a_paste_ends_statements_where_the_prompt_does(code: str, error: str, tmp_path: Path):
    """What runs as a script can fail pasted: a blank line or a dedent ends a block at the prompt."""
    blocks = [_block(code)]
    assert _run(_RUNNER, "p.md", blocks, tmp_path).returncode == 0
    pasted = _run(_PASTE_RUNNER, "p.md", blocks, tmp_path)
    assert pasted.returncode != 0 and error in pasted.stderr, pasted.stderr


def test_a_paste_must_not_flood_the_prompt(tmp_path: Path):
    """An expression statement's value is echoed at the prompt: a huge one is refused."""
    pasted = _run(_PASTE_RUNNER, "p.md", [_block("'x' * 5000\n"), _block("x = 'x' * 5000\n")], tmp_path)
    assert pasted.returncode != 0 and "echo 5002 characters of str" in pasted.stderr, pasted.stderr
    short = _run(_PASTE_RUNNER, "p.md", [_block("x = 'x' * 5000\nlen(x)\n")], tmp_path)
    assert short.returncode == 0 and "5000" in short.stdout.splitlines(), short.stderr


def test_a_paste_checks_raises_markers_and_goes_on(tmp_path: Path):
    marked = _block("# raises: ZeroDivisionError\nx = 1\n1 / 0\n", "ZeroDivisionError")
    pasted = _run(_PASTE_RUNNER, "p.md", [marked, _block("print('next', x)\n")], tmp_path)
    assert pasted.returncode == 0, pasted.stderr
    assert "next 1" in pasted.stdout.splitlines()
    unmarked = _run(_PASTE_RUNNER, "p.md", [_block("1 / 0\n")], tmp_path)
    assert unmarked.returncode != 0 and "ZeroDivisionError" in unmarked.stderr
    silent = _run(_PASTE_RUNNER, "p.md", [_block("# raises: KeyError\npass\n", "KeyError")], tmp_path)
    assert silent.returncode != 0 and "raised nothing" in silent.stderr


def test_blocks_marked_not_run_are_skipped(tmp_path: Path):
    page = tmp_path / "p.md"
    page.write_text("<!-- not run: your code -->\n```python\nimport myapp\n```\n\n"
                    "```python\nx = 1\n```\n", encoding="utf-8")
    assert [b["code"] for b in python_blocks(page)] == ["x = 1\n"]


def quoted_rules(path: Path) -> list[tuple[str, str]]:
    """The spec rules a page quotes, as list items ``- **ID...`` (and their indented lines)."""
    rules: list[tuple[str, str]] = []
    in_rule = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"- \*\*(?P<id>[A-Z][A-Z-]*-\d+[a-z]?)\b", line):
            rules.append((match.group("id"), line[2:]))
            in_rule = True
        elif in_rule and line.startswith("  "):
            rules[-1] = (rules[-1][0], rules[-1][1] + " " + line.strip())
        else:
            in_rule = False
    return rules


def test_the_semantics_track_quotes_the_specs_word_for_word():
    """Each rule a semantics page quotes is in specs/, word for word; ``[...]`` leaves words out."""
    def words(text: str) -> str:
        return " ".join(text.split())
    specs = words(" ".join(p.read_text(encoding="utf-8") for p in (ROOT / "specs").glob("*.md")))
    pages = sorted((DOCS / "tutorial" / "semantics").glob("*.md"))
    quoted = [(page, rule) for page in pages for rule in quoted_rules(page)]
    assert len(quoted) >= 6, quoted
    for page, (rule_id, text) in quoted:
        for part in filter(None, (words(p) for p in text.split("[...]"))):
            assert part in specs, f"{page.name}, {rule_id}: not in specs/: {part!r}"


def _page_id(page: Path) -> str:
    return str(page.relative_to(DOCS))


def _run_page(page: Path, runner: str, tmp_path: Path) -> None:
    """Run the page's blocks with ``runner``; check it succeeds and prints what the page quotes."""
    blocks = python_blocks(page)
    if not blocks:
        return
    proc = _run(runner, str(page.relative_to(ROOT)), blocks, tmp_path)
    assert proc.returncode == 0, (
        f"{page.name}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''}\n"
        f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
    )
    missing = unmatched_quotes(quoted_output(page), proc.stdout)
    assert not missing, (
        f"{page.name} quotes output its code does not print (update the page):\n  "
        + "\n  ".join(missing) + f"\n--- stdout ---\n{proc.stdout[-4000:]}"
    )


@pytest.mark.parametrize("page", RUN_PAGES, ids=_page_id)
def test_page_runs_as_a_script(page: Path, tmp_path: Path):
    _run_page(page, _RUNNER, tmp_path)


@pytest.mark.parametrize("page", RUN_PAGES, ids=_page_id)
def test_page_runs_pasted_into_the_prompt(page: Path, tmp_path: Path):
    _run_page(page, _PASTE_RUNNER, tmp_path)


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
    # The semantics track's pictures are drawn at build time, from each page's own code.
    semantics = tmp_path / "site" / "tutorial" / "semantics"
    for page, thread in (("coordinator", "worker"), ("queues", "consumer"),
                         ("queue-runner", "QueueRunnerThread")):
        picture = (semantics / f"{page}-race.html").read_text(encoding="utf-8")
        assert picture.lstrip().lower().startswith("<!doctype html") and thread in picture, page
        assert f'src="../{page}-race.html"' in (semantics / page / "index.html").read_text(encoding="utf-8")
