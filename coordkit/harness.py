"""Deprecated: moved to ``coordkit.engine.harness``; the public names are importable from ``coordkit``."""

import warnings

from coordkit.engine.harness import *  # noqa: F403
from coordkit.engine.harness import __all__  # noqa: F401

warnings.warn(
    "coordkit.harness is deprecated: import from coordkit (or coordkit.engine.harness)",
    DeprecationWarning,
    stacklevel=2,
)
