"""The queue rows: FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue, PriorityQueue (FORMAL-24).

Each thread calls the queue's methods as its ``Op`` list says; every call is
recorded (batches as tuples of element ids, a plain close that timed out as
pending: Q-CLOSE-6, HIST-4), and the main thread reads ``size()`` at the end,
so an element lost or duplicated shows in the history.  The history is checked
against the pure queue model (``QueueHistoryModel``, MODEL-8), and the
conservation rule and any row's own rules are checked on the results.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordkit.errors import CancelledError, DeadlineExceededError, OutOfRangeError
from coordkit.history import FIFOModel, Outcome, QueueHistoryModel
from coordkit.queues import FIFOQueue, PaddingFIFOQueue, PriorityQueue, RandomShuffleQueue
from coordkit.verify.program import Configuration, Executor, Op, Trial

__all__ = ["QUEUE_ROWS", "padding_queue", "shuffle_queue"]

# The errors a queue call may end with by the rules; anything else kills the thread.
_RULED = (OutOfRangeError, CancelledError, DeadlineExceededError)
_BATCHES = ("dequeue_many", "dequeue_up_to")


class Garbled(str):
    """A value that is not what any enqueue stored (a wrong or badly padded element)."""


@dataclass(frozen=True)
class Codec:
    """How a row's element ids become queue values and back."""

    encode: Callable[[Any], Any] = lambda i: i
    decode: Callable[[Any], Any] = lambda value: value
    decode_batch: Callable[[Any], tuple[Any, ...]] = tuple


def _padded(i: int, width: int | None = None) -> list[int]:
    w = i % 3
    return [i + 1] * w + [0] * ((w if width is None else width) - w)


def _decode_padded(value: Any) -> Any:
    """PAD-4: a single dequeue returns ``(i, [i + 1] * (i % 3))`` as it was enqueued."""
    first, second = value
    i = int(first)
    return i if list(second) == _padded(i) else Garbled(repr(value))


def _decode_padded_batch(value: Any) -> tuple[Any, ...]:
    """PAD-3: a batch's vectors are padded with 0 to the longest of the batch."""
    ids, vectors = (list(map(int, value[0])), [list(map(int, v)) for v in value[1]])
    width = max((i % 3 for i in ids), default=0)
    if vectors != [_padded(i, width) for i in ids]:
        return (Garbled(repr(value)),)
    return tuple(ids)


PLAIN = Codec()
PADDED = Codec(lambda i: (i, _padded(i)), _decode_padded, _decode_padded_batch)


def padding_queue(capacity: int) -> PaddingFIFOQueue:
    """The padding rows' queue: an int64 id and an int64 vector of any length."""
    return PaddingFIFOQueue(capacity, dtypes=["int64", "int64"], shapes=[(), (None,)])


def shuffle_queue(capacity: int, min_after_dequeue: int) -> RandomShuffleQueue:
    """The shuffle rows' queue, seeded (RSQ-5: a run must be deterministic to be replayed)."""
    return RandomShuffleQueue(capacity, min_after_dequeue, seed=0)


def _call(queue: Any, op: Op, codec: Codec) -> Callable[[], Any]:
    timeout = {} if op.timeout is None else {"timeout": op.timeout}
    if op.kind == "close":
        return lambda: queue.close(cancel_pending_enqueues=bool(op.arg), **timeout)
    if op.kind == "enqueue":
        return lambda: queue.enqueue(codec.encode(op.arg), **timeout)
    if op.kind in _BATCHES:
        return lambda: codec.decode_batch(getattr(queue, op.kind)(op.arg, **timeout))
    if op.kind == "dequeue":
        return lambda: codec.decode(queue.dequeue(**timeout))
    if op.kind == "size":
        return queue.size
    raise ValueError(f"no queue operation {op.kind!r}")


def queue_executor(codec: Codec) -> Executor:
    """Runs one ``Op`` on the trial's queue and records it (HIST-3, HIST-4)."""

    def execute(trial: Trial, thread: str, op: Op) -> Outcome | None:
        call = _call(trial.target, op, codec)
        arg = bool(op.arg) if op.kind == "close" else op.arg
        recorder = trial.recorder
        start = recorder.tick()
        try:
            outcome = Outcome.ok(call())
        except _RULED as exc:
            if op.kind == "close" and not op.arg and isinstance(exc, DeadlineExceededError):
                recorder.add(thread, op.kind, arg, start, None, None)  # it still happens (Q-CLOSE-6)
                return None
            outcome = Outcome.error(exc)
        recorder.add(thread, op.kind, arg, start, recorder.tick(), outcome)
        return outcome

    return execute


def final_size(trial: Trial) -> None:
    """The main thread reads ``size()`` once every thread has ended: lost elements show."""
    trial.results["main"] = [trial.config.execute(trial, "main", Op("size"))]


def conserved(trial: Trial) -> None:
    """Every element stored is dequeued at most once or still stored, and nothing else comes out
    (Q-ENQ-2, Q-DEQ-1, Q-DEQ-6, Q-CLOSE-5); read from the recorded calls."""
    stored: Counter[Any] = Counter()
    out: Counter[Any] = Counter()
    size = None
    for thread, kind, arg, _call, _ret, outcome in trial.recorder.calls:
        if outcome is None or outcome.is_error:
            continue
        if kind == "enqueue":
            stored[arg] += 1
        elif kind == "dequeue":
            out[outcome.value] += 1
        elif kind in _BATCHES:
            out.update(outcome.value)
        elif kind == "size" and thread == "main":
            size = outcome.value
    assert not out - stored, f"dequeued what no enqueue stored, or twice: {dict(out - stored)}"
    left = sum((stored - out).values())
    assert size == left, f"size() is {size} at the end with {left} element(s) stored and not dequeued"


def served_in_arrival_order(thread: str, index: int, expected: Any) -> Callable[[Trial], None]:
    """Q-MODEL-3: the call that began waiting first is served first."""

    def check(trial: Trial) -> None:
        got = trial.result(thread, index)
        assert got == Outcome.ok(expected), (
            f"Q-MODEL-3: {thread}'s call #{index} waited first and should get {expected!r}; got {got}")

    check.__name__ = "served_in_arrival_order"
    return check


def succeeded(thread: str, index: int, rule: str) -> Callable[[Trial], None]:
    """The ``index``-th call of ``thread`` must succeed (the row's ``rule`` says why)."""

    def check(trial: Trial) -> None:
        got = trial.result(thread, index)
        assert got is not None and not got.is_error, (
            f"{rule}: {thread}'s call #{index} must succeed; got {got}")

    check.__name__ = f"succeeded_{rule}"
    return check


_FIFO_RULES = ("Q-MODEL-2", "Q-ENQ-2", "Q-DEQ-1")


def _queue_row(name: str, primitive: str, factory: Callable[..., Any], args: tuple[Any, ...],
               threads: list[list[Op]], rules: tuple[str, ...], model: Callable[[], Any],
               codec: Codec = PLAIN, checks: tuple[Callable[[Trial], None], ...] = (),
               profile: str = "ci") -> Configuration:
    return Configuration(
        name=name, primitive=primitive, factory=factory, args=args,
        threads=tuple(tuple(t) for t in threads), execute=queue_executor(codec),
        rules=tuple(dict.fromkeys(("HIST-6", *rules, "Q-DEQ-6"))), model=model,
        checks=(conserved, *checks), finish=final_size, profile=profile)


def _e(i: Any, **kw: Any) -> Op:
    return Op("enqueue", i, **kw)


def _d(**kw: Any) -> Op:
    return Op("dequeue", **kw)


def _fifo_rows() -> list[Configuration]:
    fifo = "FIFOQueue"

    def model(capacity: int | None) -> Callable[[], Any]:
        return lambda: FIFOModel(capacity)

    return [
        _queue_row("fifo-produce-consume", fifo, FIFOQueue, (1,), [[_e(1), _e(2)], [_d(), _d()]],
                   _FIFO_RULES, model(1)),
        _queue_row("fifo-racing-enqueuers", fifo, FIFOQueue, (1,), [[_e(1)], [_e(2)], [_d()]],
                   (*_FIFO_RULES, "Q-API-2"), model(1)),
        _queue_row("fifo-close-wakes-dequeuer", fifo, FIFOQueue, (1,), [[_d()], [Op("close")]],
                   ("Q-CLOSE-1", "Q-CLOSE-4", "Q-DEQ-1"), model(1)),
        _queue_row("fifo-two-dequeuers-close", fifo, FIFOQueue, (2,), [[_d()], [_d()], [_e(1), Op("close")]],
                   ("Q-CLOSE-1", "Q-CLOSE-4", "Q-CLOSE-5", "Q-DEQ-1"), model(2)),
        _queue_row("fifo-batch-close", fifo, FIFOQueue, (2,),
                   [[Op("dequeue_many", 2)], [_e(1), Op("close")]],
                   ("Q-DEQ-3", "Q-DEQ-4", "Q-CLOSE-5"), model(None)),
        _queue_row("fifo-up-to-close", fifo, FIFOQueue, (2,),
                   [[Op("dequeue_up_to", 2)], [_e(1), Op("close")]],
                   ("Q-DEQ-3", "Q-DEQ-5", "Q-CLOSE-5"), model(None)),
        _queue_row("fifo-batch-timeout", fifo, FIFOQueue, (2,),
                   [[Op("dequeue_many", 2, timeout=1)], [_e(1)]],
                   ("Q-DEQ-6", "Q-DEQ-7", "Q-TIMEOUT-2"), model(None)),
        _queue_row("fifo-waiters-in-order", fifo, FIFOQueue, (1,),
                   [[_d()], [_d(sleep=1)], [_e(1, sleep=2), _e(2)]],
                   ("Q-MODEL-3", "Q-DEQ-1"), model(1), checks=(served_in_arrival_order("T0", 0, 1),)),
        _queue_row("fifo-plain-close-waits-its-turn", fifo, FIFOQueue, (1,),
                   [[_e(1), _e(2)], [Op("close", sleep=1)], [_d(sleep=2), _d()]],
                   ("Q-CLOSE-1", "Q-MODEL-3"), model(1), checks=(succeeded("T0", 1, "Q-CLOSE-1"),)),
        _queue_row("fifo-cancelling-close", fifo, FIFOQueue, (1,),
                   [[_e(1), _e(2)], [Op("close", True)], [_d(), _d()]],
                   ("Q-CLOSE-3", "Q-CLOSE-4", "Q-CLOSE-5"), model(1)),
        _queue_row("fifo-timed-out-close-still-happens", fifo, FIFOQueue, (1,),
                   [[_e(1), _e(2)], [Op("close", timeout=1, sleep=1)], [_d(sleep=3), _d(), _d()]],
                   ("Q-CLOSE-6", "Q-TIMEOUT-2"), model(1)),
        _queue_row("fifo-3x2", fifo, FIFOQueue, (1,),
                   [[_e(1), _e(2)], [_d(), _d()], [_e(3), Op("close")]],
                   (*_FIFO_RULES, "Q-CLOSE-1", "Q-CLOSE-5"), model(1), profile="nightly"),
        _queue_row("fifo-3x3", fifo, FIFOQueue, (2,),
                   [[_e(1), _e(2), Op("close")], [_d(), _d(), _d()], [_e(3), Op("dequeue_up_to", 2)]],
                   (*_FIFO_RULES, "Q-DEQ-5", "Q-CLOSE-1", "Q-CLOSE-5"), model(None), profile="nightly"),
    ]


def _other_rows() -> list[Configuration]:
    rsq, pad, pq = "RandomShuffleQueue", "PaddingFIFOQueue", "PriorityQueue"

    def shuffled(capacity: int, mad: int) -> Callable[[], Any]:
        return lambda: QueueHistoryModel(capacity, order="shuffle", min_after_dequeue=mad)

    def by_priority(capacity: int | None) -> Callable[[], Any]:
        return lambda: QueueHistoryModel(capacity, order="priority")

    a, b, c = (1, "a"), (2, "b"), (3, "c")
    return [
        _queue_row("rsq-min-after-dequeue", rsq, shuffle_queue, (2, 1), [[_e(1)], [_d(timeout=1)]],
                   ("RSQ-2", "Q-TIMEOUT-1"), shuffled(2, 1)),
        _queue_row("rsq-drain-after-close", rsq, shuffle_queue, (2, 1),
                   [[_e(1), _e(2)], [_d()], [Op("close")]],
                   ("RSQ-2", "RSQ-3", "RSQ-4", "Q-CLOSE-5"), shuffled(2, 1)),
        _queue_row("padding-batch", pad, padding_queue, (2,), [[_e(1), _e(2)], [Op("dequeue_many", 2)]],
                   ("PAD-3", "PAD-7", "Q-DEQ-3"), lambda: FIFOModel(None), codec=PADDED),
        _queue_row("padding-up-to-close", pad, padding_queue, (2,),
                   [[_e(1), Op("close")], [Op("dequeue_up_to", 2)], [_d()]],
                   ("PAD-3", "PAD-4", "Q-DEQ-5", "Q-CLOSE-5"), lambda: FIFOModel(None), codec=PADDED),
        _queue_row("priority-whole-batches", pq, PriorityQueue, (2,),
                   [[_e(b), _e(a)], [Op("dequeue_many", 2)]],
                   ("PQ-2", "PQ-4"), by_priority(None)),
        _queue_row("priority-cancelling-close", pq, PriorityQueue, (1,),
                   [[_e(b), _e(a)], [Op("close", True)], [_d(), Op("dequeue_up_to", 2)]],
                   ("PQ-2", "PQ-5", "Q-CLOSE-3", "Q-CLOSE-5"), by_priority(None)),
        _queue_row("priority-timeouts", pq, PriorityQueue, (1,),
                   [[_e(b), _e(a, timeout=1)], [_d(timeout=1, sleep=2), _d(timeout=1)]],
                   ("PQ-2", "Q-TIMEOUT-1", "Q-TIMEOUT-2", "Q-DEQ-7"), by_priority(1)),
        _queue_row("priority-3x2", pq, PriorityQueue, (2,),
                   [[_e(b), _e(a)], [_e(c), Op("close")], [Op("dequeue_up_to", 2), _d()]],
                   ("PQ-2", "PQ-5", "Q-CLOSE-1", "Q-CLOSE-5"), by_priority(None), profile="nightly"),
        _queue_row("priority-3x3", pq, PriorityQueue, (2,),
                   [[_e(b), _e(a), Op("close")], [_d(), Op("dequeue_up_to", 2), _d()],
                    [_e(c), Op("dequeue_many", 1)]],
                   ("PQ-2", "PQ-4", "PQ-5", "Q-CLOSE-1", "Q-CLOSE-5"), by_priority(None), profile="nightly"),
        _queue_row("rsq-3x2", rsq, shuffle_queue, (2, 1),
                   [[_e(1), _e(2)], [_d(), _d()], [_e(3), Op("close")]],
                   ("RSQ-2", "RSQ-3", "RSQ-4", "Q-CLOSE-1", "Q-CLOSE-5"), shuffled(2, 1), profile="nightly"),
        _queue_row("padding-3x2", pad, padding_queue, (2,),
                   [[_e(1), _e(2)], [Op("dequeue_up_to", 2), _d()], [_e(3), Op("close")]],
                   ("PAD-3", "PAD-4", "PAD-7", "Q-DEQ-5", "Q-CLOSE-5"), lambda: FIFOModel(None), codec=PADDED,
                   profile="nightly"),
    ]


QUEUE_ROWS: list[Configuration] = [*_fifo_rows(), *_other_rows()]
