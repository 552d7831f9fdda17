"""The viewer page: one self-contained HTML file, with its data, its style and its script.

Swim lanes (a column per thread, a row per step, preemptions marked) are drawn here,
so the page reads without its script; the script steps through the run (arrow keys,
Home/End, a slider) and fills the panels from the world at each step.

Safety rule: run data (thread names, messages, reprs) reaches the page in two ways
only.  As HTML text or a double-quoted attribute, through ``_text`` (escaped, control
and bidi characters shown as ``<U+202E>``); or as JSON in a
``<script type="application/json">`` element, with every ``<``, ``>`` and ``&``
written as a ``\\u003c``-style escape, so no ``</script>`` or ``<!--`` can end it.
The script puts values into the page with ``textContent`` only.  The
Content-Security-Policy allows no script but the page's own, by hash, and no network
at all: markup injected by a hostile report could not run even if it got through.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from importlib import resources
from typing import Any

from coordkit.engine.report import visible

__all__ = ["render_page"]


def _text(value: Any) -> str:
    """``value`` for an HTML text node or a double-quoted attribute value."""
    return html.escape(visible(str(value)), quote=True)


def _json(data: Any) -> str:
    """``data`` as JSON that cannot end or comment out the script element holding it."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _asset(name: str) -> str:
    return resources.files("coordkit.viewer").joinpath(name).read_text(encoding="utf-8")


def _kind_class(op: str) -> str:
    kind = op.split(" ", 1)[0]
    return "k-" + kind if re.fullmatch(r"[a-z_]{1,20}", kind) else "k-other"


def _cell(row: dict[str, Any]) -> str:
    """The acting thread's cell: the operations it opened, its operation and line."""
    parts = [f'<div class="call">» {_text(c)}</div>' for c in row["calls"]]
    at = row["where"].split(" in ")[0]
    parts.append(f'<span class="op {_kind_class(row["op"])}">{_text(row["op"])}</span> '
                 f'<span class="at">{_text(at)}</span>')
    return "".join(parts)


def _blocks(row: dict[str, Any], tid: int) -> str:
    return "".join(f'<div class="block">‖ {_text(b["text"])}</div>'
                   for b in row["blocks"] if b["tid"] == tid)


_PREEMPTED = ('<span class="preempt" title="switched away from this thread, which could have '
              'gone on">⚡ preempted</span>')


def _lanes(pane: dict[str, Any]) -> str:
    """The swim lanes: a column per thread, then one per asyncio task (AIO-46), a row per
    step; a task's cell is marked in the rows whose loop step runs it."""
    tasks = pane.get("tasks", [])
    head = "".join(f"<th>{_text(name)}</th>" for name in pane["threads"]) + "".join(
        f'<th class="task">{_text(name)}</th>' for name in tasks)
    body = []
    for i, row in enumerate(pane["rows"]):
        cells = []
        for tid in range(len(pane["threads"])):
            inside = _blocks(row, tid)
            if tid == row["tid"]:
                cells.append(f'<td class="acts">{_cell(row)}{inside}</td>')
            elif tid == row.get("preempted"):
                cells.append(f'<td class="preempted">{_PREEMPTED}{inside}</td>')
            else:
                cells.append(f"<td>{inside}</td>")
        for lane in range(len(tasks)):
            cells.append('<td class="task runs">▶ runs</td>' if lane in row.get("tasks", ())
                         else '<td class="task"></td>')
        classes = "step" + (" failing" if i == pane["failing"] else "") + (
            " preempt" if row.get("preempted") is not None else "")
        body.append(f'<tr class="{classes}" data-i="{i}"><th class="n">{i + 1}</th>'
                    + "".join(cells) + "</tr>")
    return (f'<div class="lanes-wrap"><table class="lanes"><thead><tr><th>step</th>{head}</tr>'
            f'</thead><tbody>{"".join(body)}</tbody></table></div>')


def _pane(pid: str, heading: str, pane: dict[str, Any]) -> str:
    total = pane["total"]
    failure = (f'<p class="failure"><strong>Failure:</strong> {_text(pane["failure"])}</p>'
               if pane["failure"] else '<p class="passed">This run passes.</p>')
    trace = f'<p class="trace-line">Trace: <code>{_text(pane["trace"])}</code></p>' if pane["trace"] else ""
    note = f'<p class="note">{_text(pane["note"])}</p>' if pane["note"] else ""
    return f"""<section class="pane" id="pane-{pid}" data-pane="{pid}">
<h2>{_text(heading)}</h2>{failure}{trace}{note}
<div class="controls"><button type="button" class="prev" title="previous step (←)">◀</button>
<input type="range" class="slider" min="0" max="{max(total - 1, 0)}" value="0" aria-label="step">
<button type="button" class="next" title="next step (→)">▶</button>
<span class="counter" aria-live="polite">step 0 / {total}</span></div>
<div class="body">{_lanes(pane)}
<div class="panels"><div class="now"></div>
<h3>Source</h3><div class="source"></div>
<h3>Threads</h3><div class="threads"></div>
<h3>Locks and conditions</h3><div class="locks"></div>
<h3>Events</h3><div class="events"></div>
<h3>Queues</h3><div class="queues"></div>
<h3>Other objects</h3><div class="others"></div>
<p class="clock"></p></div></div></section>"""


def render_page(title: str, panes: list[tuple[str, str, dict[str, Any]]], *,
                neighbour_note: str | None = None) -> str:
    """The page: ``panes`` are ``(id, heading, pane data)``, the failing run first."""
    style, script = _asset("viewer.css"), _asset("viewer.js")
    data = {"panes": [{"id": pid, **pane} for pid, _, pane in panes]}
    csp = (f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; "
           "img-src 'none'; base-uri 'none'; form-action 'none'")
    note = f'<p class="neighbour-note">{_text(neighbour_note)}</p>' if neighbour_note else ""
    sections = "".join(_pane(pid, heading, pane) for pid, heading, pane in panes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<title>{_text(title)}</title>
<style>{style}</style></head>
<body>
<h1>{_text(title)}</h1>
<p class="help">A row per step, a column per thread. Step with ← →, Home and End, or the
slider; click a row to go to it. ⚡ marks a preemption: a switch away from a thread that could
have gone on. The panels show the world as the step begins, before its operation.</p>
{note}<div class="panes">{sections}</div>
<script type="application/json" id="ck-data">{_json(data)}</script>
<script>{script}</script>
</body></html>
"""
