"""Deprecated: moved to ``coordkit.engine.trace`` (and ``render_table`` to
``coordkit.engine.report``); the public names are importable from ``coordkit``."""

import warnings

from coordkit.engine.report import render_table
from coordkit.engine.trace import Choices, Schedule

__all__ = ["Choices", "Schedule", "render_table"]

warnings.warn(
    "coordkit.trace is deprecated: import from coordkit (or coordkit.engine.trace)",
    DeprecationWarning,
    stacklevel=2,
)
