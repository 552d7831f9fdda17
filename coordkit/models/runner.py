"""The QueueRunner model: runner threads feeding a queue model (MODEL-7).

``RunnerModel`` follows RUNNER-2..10 of ``specs/queue_runner.md``.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from coordkit.errors import OutOfRangeError
from coordkit.models.coordinator import CoordinatorModel, StopReason
from coordkit.models.outcome import Err, ModelError, Ok, Outcome
from coordkit.models.queues import QueueModel

__all__ = ["RunnerModel"]


@dataclass
class _RunnerThread:
    """One thread of a runner, as the model follows it."""

    key: Hashable  # what the caller calls it
    op_index: int | None  # None: the close-on-stop thread
    state: str = "gate"  # "gate" (inside its op, waiting), "enqueue" (queue op pending), "ended"
    pending: Hashable | None = None  # the queue op it waits on
    counted: bool = True  # still counted in the runner's running threads

    def copy(self) -> _RunnerThread:
        return _RunnerThread(self.key, self.op_index, self.state, self.pending, self.counted)


class RunnerModel:
    """A QueueRunner feeding a ``QueueModel``, with an optional ``CoordinatorModel``.

    Each enqueue op is a callable that waits at a gate until it is told what
    to do on this call: enqueue an element (``instruct_enqueue``) or raise an
    exception (``instruct_raise``).  The model follows each runner thread
    through RUNNER-4: after an op returns it leaves if the coordinator asked
    for a stop; a queue-closed exception lowers the count and the last such
    exit runs the close op; another ``Exception`` goes to the coordinator or,
    without one, to ``exceptions_raised`` (and ends the thread through
    ``threading.excepthook``); a ``BaseException`` ends the thread quietly
    (RUNNER-10).  With a coordinator, a close-on-stop thread cancels pending
    enqueues once a stop is requested (RUNNER-5, RUNNER-6).

    The three models share one ``results`` mapping, so every operation key
    (consumers, closes, stop requests, ``create_threads``) is looked up in one
    place.  Exceptions the queue makes are represented by instances the model
    makes; compare those by type.
    """

    def __init__(self, queue: QueueModel, n_ops: int, coord: CoordinatorModel | None = None,
                 queue_closed_exception_types: tuple[type[BaseException], ...] = (OutOfRangeError,)) -> None:
        self.queue = queue
        self.coord = coord
        self.n_ops = n_ops
        self.closed_types = queue_closed_exception_types
        self.results: dict[Hashable, Outcome] = queue.results
        if coord is not None:
            coord.results = self.results
        self.running = 0  # RUNNER-OLD-1
        self.exceptions_raised: list[BaseException] = []
        self.threads: list[_RunnerThread] = []
        self.died: list[tuple[Hashable, BaseException]] = []
        self.sets = 0
        self._internal = 0

    def copy(self) -> RunnerModel:
        """An independent copy: queue and coordinator copied, one ``results`` shared (MODEL-1)."""
        new = object.__new__(RunnerModel)
        new.__dict__.update(self.__dict__)
        new.queue = self.queue.copy()
        new.results = new.queue.results
        if self.coord is not None:
            new.coord = self.coord.copy()
            new.coord.results = new.results
        new.exceptions_raised = list(self.exceptions_raised)
        new.threads = [t.copy() for t in self.threads]
        new.died = list(self.died)
        return new

    def key(self) -> tuple[Any, ...]:
        """Equal keys mean equal futures (MODEL-1)."""
        return (self.queue.key(), None if self.coord is None else self.coord.key(), self.running,
                tuple((t.key, t.state, t.pending, t.counted) for t in self.threads),
                tuple(sorted(repr(e) for e in self.exceptions_raised)), self.sets)

    def describe(self) -> str:
        """The state in one line, for failure reports."""
        threads = ", ".join(f"{t.key}:{t.state}" for t in self.threads)
        coord = "" if self.coord is None else f"; coordinator: {self.coord.describe()}"
        return (f"running={self.running} threads=[{threads}] exceptions_raised={self.exceptions_raised}; "
                f"queue: {self.queue.describe()}{coord}")

    def alive(self) -> dict[Hashable, bool]:
        """Each runner thread the model follows, and whether it is still running."""
        return {t.key: t.state != "ended" for t in self.threads}

    def at_gate(self) -> list[int]:
        """The op indexes whose thread waits at its gate for an instruction."""
        return [t.op_index for t in self.threads if t.state == "gate" and t.op_index is not None]

    # -- operations ---------------------------------------------------------------

    def create_threads(self, op: Hashable) -> list[Hashable]:
        """``create_threads(coord, start=True)`` (RUNNER-2, RUNNER-3, RUNNER-OLD-2).

        Returns the keys of the new threads: ``(set, i)`` for op ``i``, then
        ``(set, "close_on_stop")`` with a coordinator.
        """
        if self.running > 0:
            self.results[op] = Err(RuntimeError, "threads of the previous call are still running")
            return []
        self.running = self.n_ops
        self.exceptions_raised = []
        self.sets += 1
        new = [_RunnerThread((self.sets, i), i) for i in range(self.n_ops)]
        if self.coord is not None:
            new.append(_RunnerThread((self.sets, "close_on_stop"), None, counted=False))
        self.threads += new
        self.results[op] = Ok([t.key for t in new])
        for t in new:
            if t.op_index is not None and self.coord is not None and self.coord.stop:
                self._end(t)  # RUNNER-6: leaves before calling its op
            elif t.op_index is None and self.coord is not None and self.coord.stop:
                self._cancel(t)
        self._settle()
        return [t.key for t in new]

    def instruct_enqueue(self, op_index: int, element: Any) -> None:
        """The op waiting at gate ``op_index`` enqueues ``element`` (it may wait for room)."""
        t = self._at_gate(op_index)
        t.state, t.pending = "enqueue", self._internal_key()
        self.queue.enqueue(t.pending, element)
        self._settle()

    def instruct_raise(self, op_index: int, exc: BaseException) -> None:
        """The op waiting at gate ``op_index`` raises ``exc``."""
        self._raised(self._at_gate(op_index), exc)
        self._settle()

    def consume(self, op: Hashable) -> None:
        """A consumer calls ``queue.dequeue()``."""
        self.queue.dequeue(op)
        self._settle()

    def close_queue(self, op: Hashable, cancel: bool = False) -> None:
        """Someone else closes the fed queue (RUNNER-7c)."""
        self.queue.close(op, cancel)
        self._settle()

    def request_stop(self, op: Hashable, reason: StopReason = StopReason()) -> None:  # noqa: B008 (frozen)
        """Someone asks the coordinator to stop."""
        assert self.coord is not None
        self._request_stop(op, reason)
        self._settle()

    # -- the runner threads (RUNNER-4) ----------------------------------------------

    def _internal_key(self) -> tuple[str, int]:
        self._internal += 1
        return ("runner", self._internal)

    def _at_gate(self, op_index: int) -> _RunnerThread:
        for t in self.threads:
            if t.op_index == op_index and t.state == "gate":
                return t
        raise ModelError(f"no thread of op {op_index} waits at its gate")

    def _returned(self, t: _RunnerThread) -> None:
        if self.coord is not None and self.coord.stop:
            self._end(t)  # RUNNER-4 step 1, RUNNER-7b: nothing is closed
        else:
            t.state, t.pending = "gate", None

    def _raised(self, t: _RunnerThread, exc: BaseException) -> None:
        if isinstance(exc, self.closed_types):
            # RUNNER-4 step 3: the last thread out closes the queue (errors ignored).
            self._end(t)
            if self.running == 0:
                key = self._internal_key()
                self.queue.close(key)
                if key not in self.results:
                    raise ModelError("the close op would wait; not modelled")
                del self.results[key]
            return
        if isinstance(exc, Exception):
            if self.coord is not None:
                self._request_stop(None, StopReason(exc, handled=exc))  # step 4
            else:
                self.exceptions_raised.append(exc)  # step 5
                self.died.append((t.key, exc))
        else:
            self.died.append((t.key, exc))  # RUNNER-10
        self._end(t)

    def _end(self, t: _RunnerThread) -> None:
        t.state, t.pending = "ended", None
        if t.counted:
            t.counted = False
            self.running -= 1

    def _request_stop(self, op: Hashable | None, reason: StopReason) -> None:
        assert self.coord is not None
        was = self.coord.stop
        self.coord.request_stop(op, reason)
        if self.coord.stop and not was:
            for t in self.threads:
                if t.op_index is None and t.state != "ended":
                    self._cancel(t)

    def _cancel(self, t: _RunnerThread) -> None:
        """The close-on-stop thread runs the cancel op and ends (RUNNER-5)."""
        key = self._internal_key()
        self.queue.close(key, cancel=True)
        del self.results[key]
        t.state = "ended"

    def _settle(self) -> None:
        """Let every runner thread whose queue op completed go on (until none can)."""
        moved = True
        while moved:
            moved = False
            for t in self.threads:
                if t.state == "enqueue" and t.pending in self.results:
                    outcome = self.results.pop(t.pending)
                    moved = True
                    if isinstance(outcome, Ok):
                        self._returned(t)
                    else:
                        self._raised(t, outcome.type(outcome.why))
