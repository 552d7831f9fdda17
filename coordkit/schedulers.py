"""Deprecated: moved to ``coordkit.engine.schedulers``; the public names are importable from ``coordkit``."""

import warnings

from coordkit.engine.schedulers import *  # noqa: F403
from coordkit.engine.schedulers import __all__  # noqa: F401

warnings.warn(
    "coordkit.schedulers is deprecated: import from coordkit (or coordkit.engine.schedulers)",
    DeprecationWarning,
    stacklevel=2,
)
