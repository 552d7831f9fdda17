"""asyncio under the controlled scheduler: coordkit's event loop and how a run installs it.

An ``async def`` program runs as ``asyncio.run(main())`` on a loop of coordkit's
(AIO-1).  The controller imports the engine's core (the runtime, its tasks and
points) and is imported by nothing but the wiring of a run (``run``, ``patch``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from coordkit.engine.aio.install import PATCHES
from coordkit.engine.runtime import current_execution

__all__ = ["PATCHES", "run_coroutine"]


def run_coroutine(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to its end, as ``asyncio.run`` does (AIO-1).  A program cancelled by
    coordkit (AIO-40) that ends in its ``CancelledError`` did what cancellation asks of it:
    not a failure (AIO-42)."""
    try:
        return asyncio.run(coro)
    except asyncio.CancelledError:
        ex = current_execution()
        if ex is None or not any(what.startswith("cancelled ") for what in ex.deviations):
            raise
        return None
