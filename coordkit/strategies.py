"""Hypothesis strategies for schedules (``schedules``, ``context_switches``).

Defined in ``coordkit.engine.strategies``; this is their public home, next to
``coordkit.stateful``.  Importing it imports Hypothesis.
"""

from coordkit.engine.strategies import context_switches, schedules

__all__ = ["context_switches", "schedules"]
