"""A run drawn as swim lanes: a self-contained HTML page with an inline SVG.

Threads are lanes (rows), steps run left to right, each operation is a box in
its thread's lane, a parked thread shows a hatched bar from the step it blocked
until it next ran, and the failing step is outlined in red.  The page needs no
network, no script and no stylesheet from elsewhere.

Every value from the run reaches the page through ``_text`` (text and quoted
attribute values: escaped, with bidi and other control characters shown as
``<U+202E>``) or as a number made here (``int``/``float``); the page has no script
and no inline JSON, so there is no third context to escape for.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from coordkit.engine.report import visible

__all__ = ["render_html"]

_BOX_W, _BOX_H, _GAP, _LANE_H, _LEFT, _TOP = 26, 22, 4, 34, 190, 40

_COLOURS = {
    "acquire": "#4c78a8", "release": "#9ecae9", "wait": "#f58518", "notify": "#ffbf79",
    "set": "#54a24b", "is_set": "#88d27a", "start": "#b279a2", "join": "#d6a5c9",
    "sleep": "#bab0ac", "line": "#e4e4e4", "put": "#72b7b2", "get": "#72b7b2",
}


def _colour(kind: str) -> str:
    return _COLOURS.get(kind, "#c7c7c7")


def _text(value: Any) -> str:
    """``value`` for an HTML text node or a double-quoted attribute value."""
    return html.escape(visible(str(value)), quote=True)


def render_html(events: Sequence[Any], thread_names: Sequence[str], *, title: str,
                failure: str | None = None, trace: str | None = None) -> str:
    """The page for one recorded run (``RunReport.events`` and ``thread_names``)."""
    ops = [e for e in events if e.kind not in ("block", "call")]
    # The high-level operation (a queue's enqueue, a coordinator's join) each step belongs to.
    within: dict[int, str] = {}
    context: dict[int, str] = {}
    for e in events:
        if e.kind == "call":
            within[e.tid] = e.target
        elif e.kind != "block":
            context[e.step] = within.get(e.tid, "")
    column = {}
    for e in ops:
        column.setdefault(e.step, len(column))
    ncols = max(len(column), 1)
    width = _LEFT + ncols * (_BOX_W + _GAP) + 20
    height = _TOP + len(thread_names) * _LANE_H + 30
    failing_step = ops[-1].step if failure is not None and ops else None
    parts: list[str] = []
    for tid, name in enumerate(thread_names):
        y = _TOP + tid * _LANE_H
        parts.append(f'<rect class="lane" x="0" y="{y}" width="{width}" height="{_LANE_H}" '
                     f'fill="{"#fafafa" if tid % 2 else "#ffffff"}"/>')
        parts.append(f'<text class="lane-label" x="8" y="{y + 21}">T{tid} {_text(str(name)[:24])}</text>')
    # Blocking: from a thread's "block" event to its next operation.
    blocked_since: dict[int, int] = {}
    for e in events:
        if e.kind == "block":
            blocked_since[e.tid] = column.get(e.step, 0)
        elif e.kind != "call" and e.tid in blocked_since:
            start = blocked_since.pop(e.tid)
            parts.append(_gap(e.tid, start, column[e.step], "parked"))
    for tid, start in blocked_since.items():
        parts.append(_gap(tid, start, ncols, "parked until the end"))
    for e in ops:
        x = _LEFT + column[e.step] * (_BOX_W + _GAP)
        y = _TOP + e.tid * _LANE_H + (_LANE_H - _BOX_H) // 2
        failing = e.step == failing_step
        inside = f" (in {context[e.step]})" if context.get(e.step) else ""
        tip = _text(
            f"step {e.step}: T{e.tid} {e.kind} {e.target}{inside} @ {e.where} (t={float(e.time):g}s)"
        )
        stroke = ' stroke="#d62728" stroke-width="3"' if failing else ""
        cls = "op failing" if failing else "op"
        parts.append(
            f'<g class="{cls}" data-step="{int(e.step)}" data-thread="{int(e.tid)}">'
            f'<rect x="{x}" y="{y}" width="{_BOX_W}" height="{_BOX_H}" rx="3" '
            f'fill="{_colour(e.kind)}"{stroke}><title>{tip}</title></rect>'
            f'<text x="{x + _BOX_W / 2}" y="{y + 15}" text-anchor="middle" class="op-kind">'
            f"{_text(str(e.kind)[:3])}</text></g>"
        )
    for step, col in column.items():
        if col % 5 == 0:
            x = _LEFT + col * (_BOX_W + _GAP) + _BOX_W / 2
            parts.append(f'<text class="axis" x="{x}" y="{_TOP - 10}" text-anchor="middle">'
                         f"{int(step)}</text>")
    legend = " ".join(
        f'<span class="key"><span class="swatch" style="background:{c}"></span>{k}</span>'
        for k, c in _COLOURS.items()
    )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="interleaving">'
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="3" height="6" fill="#d9d9d9"/></pattern></defs>'
        + "".join(parts) + "</svg>"
    )
    failure_html = (
        f'<p class="failure"><strong>Failure:</strong> {_text(failure)}</p>' if failure else ""
    )
    trace_html = f'<p>Trace: <code class="trace">{_text(trace)}</code></p>' if trace else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_text(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }}
.failure {{ color: #b00; }}
.lane-label {{ font: 12px monospace; fill: #333; }}
.op-kind {{ font: 10px monospace; fill: #111; pointer-events: none; }}
.axis {{ font: 10px monospace; fill: #777; }}
.key {{ margin-right: 1em; font-size: 12px; }}
.swatch {{ display: inline-block; width: 10px; height: 10px; margin-right: 4px; }}
.scroll {{ overflow-x: auto; border: 1px solid #ddd; }}
</style></head>
<body>
<h1>{_text(title)}</h1>
{failure_html}{trace_html}
<p>Threads are lanes; time runs left to right, one column per step. Hatched bars: the thread
is parked. Red outline: the failing step. Hover a box for the operation and source line.</p>
<div class="legend">{legend}</div>
<div class="scroll">{svg}</div>
</body></html>
"""


def _gap(tid: int, start: int, end: int, label: str) -> str:
    x0 = _LEFT + start * (_BOX_W + _GAP) + _BOX_W
    x1 = _LEFT + end * (_BOX_W + _GAP)
    if x1 <= x0:
        return ""
    y = _TOP + tid * _LANE_H + _LANE_H // 2 - 4
    return (f'<rect class="parked" x="{x0}" y="{y}" width="{x1 - x0}" height="8" '
            f'fill="url(#hatch)"><title>{label}</title></rect>')
