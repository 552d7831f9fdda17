"""The optional C accelerator of the tracer (coordkit/engine/_ctrace.c): built where a C
compiler is available, skipped where not (``optional=True``: the pure-Python tracer then
runs, making the same choices), and never built with ``COORDKIT_PURE_PYTHON=1``."""

import os

from setuptools import Extension, setup

extensions = [] if os.environ.get("COORDKIT_PURE_PYTHON") == "1" else [
    Extension("coordkit.engine._ctrace", ["coordkit/engine/_ctrace.c"], optional=True),
]
setup(ext_modules=extensions)
