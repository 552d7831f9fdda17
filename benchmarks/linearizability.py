"""How long the linearizability checker takes on a real FIFOQueue history.

    python benchmarks/linearizability.py [--threads 4] [--ops 2000] [--seed 1] [--repeat 3]

Records a history from real threads (each thread a random mix of enqueue,
enqueue_many, dequeue, dequeue_many and dequeue_up_to with short timeouts on
one FIFOQueue; then, once they are done, a close and a drain until the closed
queue raises OutOfRangeError, all recorded too), and prints how long
``coordkit.history.check`` takes against ``FIFOModel``.  The target is under
2 s for 4 threads and 2,000 operations.  A second line checks a history with
``size()`` calls and the capacity modelled (single enqueues and dequeues only).
While recording, the interpreter switches threads every ``--switch-interval``
seconds (default 1e-5, as the stress tests do), so calls really overlap; each
line says how many calls overlapped at most.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time

from coordkit import FIFOQueue
from coordkit.errors import CancelledError, DeadlineExceededError, OutOfRangeError
from coordkit.history import FIFOModel, History, Operation, RecordingQueue, check

_EXPECTED = (CancelledError, DeadlineExceededError, OutOfRangeError)


def record(threads: int, ops: int, seed: int, batches: bool, capacity: int = 8) -> History:
    """A history of about ``ops`` operations from ``threads`` threads on one FIFOQueue.

    After the threads finish, the history ends with a ``close`` and a drain: ``dequeue``
    until the closed queue raises ``OutOfRangeError``.
    """
    history = History()
    q = RecordingQueue(FIFOQueue(capacity), history)
    per_thread = ops // threads
    start = threading.Barrier(threads)

    def worker(t: int) -> None:
        rng = random.Random(seed * 1000 + t)
        start.wait()
        for i in range(per_thread):
            r = rng.random()
            timeout = rng.choice((0, 0.001, 0.005))
            try:
                if r < 0.4:
                    q.enqueue((t, i), timeout=timeout)
                elif batches and r < 0.5:
                    q.enqueue_many([(t, i, j) for j in range(rng.randint(1, 3))], timeout=timeout)
                elif batches and r < 0.6:
                    q.dequeue_many(rng.randint(1, 3), timeout=timeout)
                elif batches and r < 0.65:
                    q.dequeue_up_to(rng.randint(1, 3), timeout=timeout)
                elif not batches and r < 0.5:
                    q.size()
                else:
                    q.dequeue(timeout=timeout)
            except _EXPECTED:
                pass

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    # The end of every history: a close, then a drain until the closed queue is empty.
    q.close()
    while True:
        try:
            q.dequeue(timeout=0)
        except OutOfRangeError:  # closed and empty: the drain is over
            break
    return history


def max_overlap(ops: list[Operation]) -> int:
    """The largest number of calls in progress at one moment."""
    events = sorted([(op.call, 1) for op in ops] + [(op.ret, -1) for op in ops if op.ret is not None])
    level = peak = 0
    for _, delta in events:
        level += delta
        peak = max(peak, level)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--switch-interval", type=float, default=1e-5)
    args = parser.parse_args()
    for label, batches, model in (
        ("batches, no size", True, FIFOModel()),
        ("size + capacity", False, FIFOModel(capacity=8)),
    ):
        times = []
        overlap = 0
        for r in range(args.repeat):
            old = sys.getswitchinterval()
            sys.setswitchinterval(args.switch_interval)
            try:
                history = record(args.threads, args.ops, args.seed + r, batches)
            finally:
                sys.setswitchinterval(old)
            overlap = max(overlap, max_overlap(history.operations()))
            t0 = time.perf_counter()
            report = check(history, model)
            times.append(time.perf_counter() - t0)
            assert report, report.explain()
        print(
            f"{label:18} {args.threads} threads, {len(history):5} ops (up to {overlap} overlapping): "
            f"check best {min(times):.3f} s, worst {max(times):.3f} s over {args.repeat} histories "
            f"({report.steps} steps in the last)"
        )


if __name__ == "__main__":
    main()
