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

__all__ = ["PATCHES", "run_coroutine"]


def run_coroutine(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to its end, as ``asyncio.run`` does (AIO-1)."""
    return asyncio.run(coro)
