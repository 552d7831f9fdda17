"""The QueueRunner rows: two enqueue ops, a coordinator stop, exhaustion (FORMAL-26).

Each enqueue op of a row hands out the ids of its source, one per call, and
then raises OutOfRangeError (the input is used up); an id ``"ValueError"``
raises that instead (an op that fails).  The runner feeds a FIFOQueue through
a recording wrapper, so its enqueues and its close calls are in the history
with the consumer threads' dequeues, and the history is checked against the
FIFO model.  The runner is made by the row's ``factory`` (a mutant run swaps
it) in ``setup``; the main thread joins every runner thread in ``finish``, so a
runner thread that never ends is a deadlock, never a pass (RUNNER-5).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from coordkit.coordinator import Coordinator
from coordkit.errors import CancelledError, DeadlineExceededError, OutOfRangeError
from coordkit.history import FIFOModel, Outcome
from coordkit.queue_runner import QueueRunner
from coordkit.queues import FIFOQueue
from coordkit.verify.program import Configuration, Op, Trial
from coordkit.verify.queues import PLAIN, conserved, final_size, queue_executor

__all__ = ["RUNNER_ROWS"]

_RULED = (OutOfRangeError, CancelledError, DeadlineExceededError)
_consume = queue_executor(PLAIN)


class RecordedQueue:
    """The runner's view of the queue: ``enqueue`` and ``close`` recorded in the trial's history."""

    def __init__(self, trial: Trial) -> None:
        self._trial = trial
        self.name = trial.target.name

    def _recorded(self, kind: str, arg: Any, call: Callable[[], Any]) -> Any:
        recorder = self._trial.recorder
        thread = threading.current_thread().name
        start = recorder.tick()
        try:
            value = call()
        except _RULED as exc:
            recorder.add(thread, kind, arg, start, recorder.tick(), Outcome.error(exc))
            raise
        recorder.add(thread, kind, arg, start, recorder.tick(), Outcome.ok(value))
        return value

    def enqueue(self, element: Any) -> None:
        self._recorded("enqueue", element, lambda: self._trial.target.enqueue(element))

    def close(self, cancel_pending_enqueues: bool = False) -> None:
        self._recorded("close", cancel_pending_enqueues,
                       lambda: self._trial.target.close(cancel_pending_enqueues=cancel_pending_enqueues))


def _enqueue_op(trial: Trial, queue: RecordedQueue, k: int, source: tuple[Any, ...]) -> Callable[[], None]:
    left = list(source)

    def op() -> None:
        trial.extra["op_calls"] += 1
        if not left:
            raise OutOfRangeError("the input is used up")
        item = left.pop(0)
        if item == "ValueError":
            raise ValueError("the op failed")
        queue.enqueue(item)

    op.__name__ = f"op{k}"
    return op


def runner_setup(trial: Trial) -> None:
    """Make the runner (with the row's factory), the coordinator, and start the runner threads.

    ``args`` is ``(capacity, sources, coordinated, stop_first)``: with ``stop_first``
    the stop is requested before the threads start (RUNNER-6).
    """
    _capacity, sources, coordinated, stop_first = trial.config.args
    queue = RecordedQueue(trial)
    trial.extra["op_calls"] = 0
    ops = [_enqueue_op(trial, queue, k, source) for k, source in enumerate(sources)]
    runner = trial.config.factory(queue, ops)
    coord = Coordinator() if coordinated else None
    if coord is not None and stop_first:
        coord.request_stop()
    trial.extra.update(runner=runner, coord=coord, runner_threads=runner.create_threads(coord, start=True))


def runner_executor(trial: Trial, thread: str, op: Op) -> Outcome | None:
    """A consumer's queue call (recorded), or ``request_stop`` on the row's coordinator."""
    if op.kind == "request_stop":
        trial.extra["coord"].request_stop()
        return Outcome.ok(None)
    return _consume(trial, thread, op)


def runner_finish(trial: Trial) -> None:
    """Stop (a coordinated row that was not stopped), join every runner thread, read ``size()``."""
    coord = trial.extra["coord"]
    if coord is not None:
        coord.request_stop()
    for t in trial.extra["runner_threads"]:
        t.join()
    if coord is not None:
        coord.join()
    final_size(trial)


def _build_queue(config: Configuration) -> FIFOQueue:
    return FIFOQueue(config.args[0])


def all_delivered(trial: Trial) -> None:
    """RUNNER-4: every id of every source is enqueued once, and once all ops are used up
    the last one closes the queue: the consumer's last dequeue fails with OutOfRangeError."""
    _capacity, sources, _coordinated, _stop_first = trial.config.args
    wanted = sorted(i for source in sources for i in source)
    got = sorted(r.value for r in trial.results["T0"][:-1] if r is not None and not r.is_error)
    assert got == wanted, f"RUNNER-4: the consumer got {got}; the sources held {wanted}"
    last = trial.results["T0"][-1]
    assert last == Outcome.error(OutOfRangeError), f"RUNNER-4 step 3: the queue was not closed: {last}"


def closed_on_stop(trial: Trial) -> None:
    """RUNNER-5: after the stop, the close-on-stop thread cancels and closes the queue."""
    assert trial.target.is_closed(), "RUNNER-5: the queue is open after the stop"


def no_op_called(trial: Trial) -> None:
    """RUNNER-6: stopped before the threads start, no op thread calls its op."""
    calls = trial.extra["op_calls"]
    assert calls == 0, f"RUNNER-6: the ops were called {calls} time(s) after the stop"


def error_kept(trial: Trial) -> None:
    """RUNNER-4 step 5: without a coordinator an op's error is kept in exceptions_raised."""
    raised = trial.extra["runner"].exceptions_raised
    assert [type(e) for e in raised] == [ValueError], f"RUNNER-4 step 5: exceptions_raised is {raised}"


def _runner_row(name: str, capacity: int, sources: tuple[tuple[Any, ...], ...], consumers: list[list[Op]],
                coordinated: bool, rules: tuple[str, ...], checks: tuple[Any, ...], *,
                stop_first: bool = False, thread_exceptions_fail: bool = True,
                profile: str = "ci") -> Configuration:
    return Configuration(
        name=name, primitive="QueueRunner", factory=QueueRunner,
        args=(capacity, sources, coordinated, stop_first),
        threads=tuple(tuple(t) for t in consumers), execute=runner_executor,
        rules=tuple(dict.fromkeys(("HIST-6", *rules, "Q-DEQ-6"))), model=lambda: FIFOModel(capacity),
        checks=(conserved, *checks), setup=runner_setup, finish=runner_finish, build=_build_queue,
        thread_exceptions_fail=thread_exceptions_fail, profile=profile,
        made=(f"`FIFOQueue({capacity})` fed by a QueueRunner with ops of sources {sources!r}"
              + (", a coordinator" if coordinated else ", no coordinator")
              + (", stopped before the threads start" if stop_first else "")),
        more_threads=f"runner {len(sources)}x({','.join(str(len(s)) for s in sources)})"
                     + (" + close-on-stop" if coordinated else ""))


def _take(n: int) -> list[Op]:
    return [Op("dequeue")] * n


RUNNER_ROWS: list[Configuration] = [
    _runner_row("runner-exhaustion", 1, ((1,), (2,)), [_take(3)], False,
                ("RUNNER-2", "RUNNER-3", "RUNNER-4"), (all_delivered,)),
    _runner_row("runner-exhaustion-coordinated", 1, ((1,), (2,)), [_take(3)], True,
                ("RUNNER-3", "RUNNER-4", "RUNNER-5"), (all_delivered,)),
    _runner_row("runner-stop-while-blocked", 1, ((1, 2), (3,)), [[Op("request_stop")]], True,
                ("RUNNER-4", "RUNNER-5", "Q-CLOSE-3"), (closed_on_stop,)),
    _runner_row("runner-stopped-before-start", 1, ((1,), (2,)), [], True,
                ("RUNNER-5", "RUNNER-6"), (no_op_called, closed_on_stop), stop_first=True),
    _runner_row("runner-op-fails-alone", 2, ((1, "ValueError"), (2,)), [_take(2)], False,
                ("RUNNER-4", "RUNNER-7"), (error_kept,), thread_exceptions_fail=False),
    _runner_row("runner-exhaustion-3-elements", 1, ((1, 2), (3,)), [_take(4)], True,
                ("RUNNER-3", "RUNNER-4", "RUNNER-5"), (all_delivered,), profile="nightly"),
]
