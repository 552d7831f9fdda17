"""The Python twin of the model's planted bug BUG_LOST_FIRST_EXCEPTION (FORMAL-9), and the
program of shutdown.pml's init process, scripted by a trail.

``LostFirstException`` is a ``Coordinator`` whose ``request_stop`` reads the stop flag
before taking the lock and then records unconditionally: the bug the model plants, in the
code's own terms. Its ``should_stop`` and ``request_stop`` tell a ``Steer`` where each
coordinator step of the model happens.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from coordkit import Coordinator, FIFOQueue, QueueRunner
from coordkit.errors import CancelledError, OutOfRangeError
from tests.formal.trail import E_CANCELLED, E_MAIN, E_RUNNER, NONE, Steer


class TrainingError(Exception):
    """The main loop's own error (the model's E_MAIN)."""


class RunnerError(Exception):
    """Runner ``i``'s op failed (the model's E_RUNNER + i)."""

    def __init__(self, i: int) -> None:
        super().__init__(f"runner {i} failed")
        self.i = i


def reason(ex: BaseException | None) -> int:
    """The model's code for a stop reason."""
    if ex is None:
        return NONE
    if isinstance(ex, TrainingError):
        return E_MAIN
    if isinstance(ex, RunnerError):
        return E_RUNNER + ex.i
    assert isinstance(ex, CancelledError), ex
    return E_CANCELLED


class LostFirstException(Coordinator):
    """request_stop with an unlocked fast path, and no "nothing recorded yet" check."""

    def __init__(self, steer: Steer) -> None:
        super().__init__()
        self.steer = steer
        self.first: BaseException | None = None  # ghost: the first request's reason

    def should_stop(self) -> bool:
        self.steer.at("check")
        stop = self._stop_event.is_set()
        self.steer.did("check", int(stop))
        return stop

    def request_stop(self, ex=None) -> None:  # type: ignore[override]
        self.steer.at("read")
        was = self._stop_event.is_set()  # the bug: read before the lock ...
        self.steer.did("read", int(was))
        if was:
            return
        self.steer.at("stopped")
        with self._lock:
            self.steer.did("stopped", reason(ex))
            if not self._stop_event.is_set():
                self.first = ex
            if ex is not None:  # ... and so no check that nothing is recorded yet
                self._exc_info = (type(ex), ex, ex.__traceback__)
            self._stop_event.set()
            self._stop_or_ended.notify_all()


def _op(i: int, script: list[str], queue: FIFOQueue) -> Callable[[], None]:
    calls = iter(script)

    def op() -> None:
        what = next(calls, "op_exhausted")
        if what == "op_enqueue":
            queue.enqueue(i)
        elif what == "op_error":
            raise RunnerError(i)
        else:
            raise OutOfRangeError(f"runner {i}: input used up")

    op.__name__ = f"op{i}"
    return op


def program(steer: Steer, scripts: dict[int, list[str]], capacity: int = 1) -> Callable[[], None]:
    """shutdown.pml's init: start the runner, train until stopped, request_stop, join."""

    def main() -> None:
        coord = LostFirstException(steer)
        queue = FIFOQueue(capacity)
        ops = [_op(i, scripts.get(i + 1, []), queue) for i in range(2)]
        steer.pids.clear()
        steer.pids[threading.current_thread()] = 0
        runner = QueueRunner(queue, ops)
        threads = runner.create_threads(coord)
        for pid, thread in enumerate(threads, start=1):
            steer.pids[thread] = pid
        for thread in threads:
            thread.start()
        loop = iter(scripts.get(0, []))
        stop_reason: BaseException | None = None
        try:
            while not coord.should_stop():
                if next(loop, "take") == "train_error":
                    raise TrainingError("the training step failed")
                queue.dequeue()
        except OutOfRangeError:
            pass
        except TrainingError as e:
            stop_reason = e
        coord.request_stop(stop_reason)
        try:
            coord.join(threads, stop_grace_period_secs=1)
            raised = None
        except Exception as e:  # join raises the record (COORD-15)
            raised = e
        assert raised is coord.first, (
            f"join raised {raised!r}, but the first stop request carried {coord.first!r}")

    return main
