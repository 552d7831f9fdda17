"""What the pipeline tests share: one controlled run, many explored runs, and draining
an op to the end of its input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import coordkit
from coordkit import OutOfRangeError, explore, queue_runner_scope

MAX_STEPS = 300_000  # pipelines take many steps: every element is a few queue operations


def controlled(fn: Callable[[], Any], **options: Any) -> Any:
    """Run `fn` once under the controlled scheduler, in a fresh registry; return its result."""
    box = []

    def body() -> None:
        with queue_runner_scope():
            box.append(fn())

    options.setdefault("max_steps", MAX_STEPS)
    coordkit.replay(body, [], **options)
    return box[0]


def explored(fn: Callable[[], Any], max_schedules: int = 60, **options: Any) -> Any:
    """Run `fn` (which asserts) under many schedules; fail with the replayable report."""

    def body() -> None:
        with queue_runner_scope():
            fn()

    options.setdefault("max_steps", MAX_STEPS)
    result = explore(body, max_schedules=max_schedules, seed=1, **options)
    assert result.failure is None, str(result.failure)
    return result


def drain(op: Callable[[], Any]) -> list[Any]:
    """Call `op` until it raises OutOfRangeError; return the values."""
    out = []
    while True:
        try:
            out.append(op())
        except OutOfRangeError:
            return out
