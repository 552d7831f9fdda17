"""Drawing a run for a person: one self-contained, interactive HTML page.

``render_html`` draws recorded rows (a saved run); ``view_page`` replays a trace on
its program, so the page also shows the world at each step and the passing
neighbour; ``failure_page`` draws a ``FoundFailure``, and ``notebook_html`` puts
that page in a sandboxed frame (its ``_repr_html_``).
"""

from coordkit.viewer.views import failure_page, notebook_html, render_html, view_page

__all__ = ["failure_page", "notebook_html", "render_html", "view_page"]
