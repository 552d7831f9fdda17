"""Helpers for the queue tests: run a blocking call in a thread, wait for a state.

No sleep-and-hope: a test waits for a call to finish (an Event, 10 s cap) or for
the queue to report a state through ``statistics()`` (polled, 10 s cap).  A
call that is pending in ``statistics()`` is blocked for sure, because between
calls the head of each waiter list cannot move (Q-MODEL-5).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

CAP = 10.0  # seconds: how long a test waits for something that must happen


class Call:
    """Run ``fn(*args, **kwargs)`` in a daemon thread and keep its outcome."""

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self._done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.result = fn(*args, **kwargs)
            except BaseException as e:
                self.error = e
            finally:
                self._done.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def finished(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float = CAP) -> Call:
        assert self._done.wait(timeout), "the call did not finish in time"
        self.thread.join(timeout)
        return self

    def value(self) -> Any:
        """The call's return value (re-raising what it raised)."""
        self.wait()
        if self.error is not None:
            raise self.error
        return self.result

    def raised(self, cls: type[BaseException], match: str | None = None) -> BaseException:
        """Assert that the call raised ``cls`` (with ``match`` in its message)."""
        self.wait()
        assert isinstance(self.error, cls), f"expected {cls.__name__}, got {self.error!r}"
        if match is not None:
            assert match in str(self.error), f"{match!r} not in {str(self.error)!r}"
        return self.error


def wait_until(predicate: Callable[[], bool], what: str = "condition") -> None:
    """Poll ``predicate`` until it holds; fail after CAP seconds."""
    deadline = time.monotonic() + CAP
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.001)


def wait_pending(
    q: Any, enqueues: int | None = None, dequeues: int | None = None, closes: int | None = None
) -> None:
    """Wait until ``q.statistics()`` shows exactly these numbers of waiting calls."""

    def check() -> bool:
        s = q.statistics()
        return (
            (enqueues is None or s.pending_enqueues == enqueues)
            and (dequeues is None or s.pending_dequeues == dequeues)
            and (closes is None or s.pending_closes == closes)
        )

    wait_until(check, f"pending enqueues={enqueues} dequeues={dequeues} closes={closes}")


def drain(q: Any) -> list[Any]:
    """Everything left in a closed queue, one dequeue at a time."""
    assert q.is_closed()
    out = []
    while q.size():
        out.append(q.dequeue())
    return out
