"""Adversarial mode (AIO-44): any ready callback may run next; what it finds says that
stock asyncio does not produce the order."""

from __future__ import annotations

import asyncio

import pytest

import coordkit
from coordkit.engine.trace import Schedule


async def publish_then_close() -> None:
    """Correct under FIFO: the message is queued before the close, so it is delivered
    first.  Run out of order, the close comes first and the message is dropped."""
    loop = asyncio.get_running_loop()
    delivered: list[str] = []
    closed = [False]

    def deliver(message: str) -> None:
        if not closed[0]:
            delivered.append(message)

    def close() -> None:
        closed[0] = True

    loop.call_soon(deliver, "hello")
    loop.call_soon(close)
    await asyncio.sleep(0.1)
    assert delivered == ["hello"], f"delivered {delivered}"


def test_fifo_by_default_and_any_order_in_adversarial_mode():
    """AIO-44: clean in every schedule of the default (faithful) mode; found with
    ``adversarial=True``, the report saying the order is not stock asyncio's, and the
    trace replays it (the flag is in the trace)."""
    faithful = coordkit.explore(publish_then_close, seed=1, max_schedules=200)
    assert faithful.failure is None, faithful.failure
    result = coordkit.explore(publish_then_close, seed=1, adversarial=True)
    failure = result.failure
    assert failure is not None, "the reordering was not found"
    text = str(failure)
    assert ("queued ahead of it (found only in adversarial mode: stock asyncio runs ready "
            "callbacks in FIFO order).") in text
    assert "It depends on this: " in text
    assert "delivered []" in text
    assert Schedule.decode(failure.trace).adversarial
    with pytest.raises(AssertionError, match=r"delivered \[\]"):
        coordkit.replay(publish_then_close, failure.trace)


def test_adversarial_must_be_a_bool():
    """AIO-44: a bad value names the argument."""
    with pytest.raises(TypeError, match="adversarial must be a bool, got 'yes'"):
        coordkit.explore(publish_then_close, adversarial="yes")


def test_the_adversarial_flag_survives_the_trace_string():
    """AIO-44: a trace records the mode, so replay offers the same choices."""
    schedule = Schedule(((2, 1),), adversarial=True)
    assert Schedule.decode(schedule.encode()).adversarial
    assert not Schedule.decode(schedule.encode()).cancel
    assert "adversarial=True" in schedule.describe()
