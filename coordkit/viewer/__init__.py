"""Drawing a recorded run for a person: one self-contained HTML page."""

from coordkit.viewer.swimlanes import render_html

__all__ = ["render_html"]
