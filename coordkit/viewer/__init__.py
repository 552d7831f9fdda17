"""Drawing a run for a person: one self-contained, interactive HTML page.

``render_html`` draws recorded rows (a saved run); ``view_page`` replays a trace on
its program, so the page also shows the world at each step and the passing
neighbour; ``failure_page`` draws a ``FoundFailure`` (a notebook's
``_repr_html_``).
"""

from coordkit.viewer.views import failure_page, render_html, view_page

__all__ = ["failure_page", "render_html", "view_page"]
