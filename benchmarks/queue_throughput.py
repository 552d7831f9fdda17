"""FIFOQueue against the stdlib's queue.Queue: throughput and memory, as ratios.

    python benchmarks/queue_throughput.py [--items N] [--repeat R] [--tf-items N] [--no-tf]

Each line prints ops/s for both and the ratio FIFOQueue / queue.Queue (higher
is better for coordkit; the target is >= 0.8), then the extra memory a queue
holding 1,000,000 small elements needs (the ratio's target is <= 1.5).
Best of R runs; both sides run in this process, alternating.

When tensorflow is importable (for example ``PYTHONPATH=. $COORDKIT_TF_PYTHON
benchmarks/queue_throughput.py``), two more columns give TensorFlow's eager
``tf.queue.FIFOQueue`` (int64 scalars) ops/s and the ratio coordkit / TF, on
``--tf-items`` elements (it is much slower, so fewer).  Its memory lives in C++,
out of tracemalloc's sight, so it has no memory line.
"""

from __future__ import annotations

import argparse
import queue
import threading
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from coordkit import FIFOQueue


def _tensorflow() -> Any:
    """The tensorflow module, or None when it cannot be imported."""
    try:
        import tensorflow as tf  # optional, and slow to import
    except ImportError:
        return None
    return tf


def _adapter(kind: str, capacity: int) -> tuple[Callable, Callable]:
    if kind == "stdlib":
        q = queue.Queue(maxsize=max(capacity, 0))
        return q.put, q.get
    if kind == "tensorflow":
        tf = _tensorflow()
        tq = tf.queue.FIFOQueue(capacity if capacity > 0 else 2**31 - 1, dtypes=[tf.int64], shapes=[[]])
        return tq.enqueue, tq.dequeue
    q = FIFOQueue(capacity)
    return q.enqueue, q.dequeue


def single_thread(kind: str, items: int) -> float:
    """put then get, one element at a time, on one thread."""
    put, get = _adapter(kind, -1)
    start = time.perf_counter()
    for i in range(items):
        put(i)
        get()
    return 2 * items / (time.perf_counter() - start)


def single_thread_burst(kind: str, items: int) -> float:
    """100 puts, then 100 gets, repeated."""
    put, get = _adapter(kind, -1)
    rounds, burst = max(items // 100, 1), range(100)
    start = time.perf_counter()
    for _ in range(rounds):
        for i in burst:
            put(i)
        for _ in burst:
            get()
    return 2 * rounds * 100 / (time.perf_counter() - start)


def threaded(kind: str, items: int, producers: int, consumers: int, capacity: int) -> float:
    """``producers`` threads put, ``consumers`` threads get, ``items`` in all."""
    put, get = _adapter(kind, capacity)
    per_producer, per_consumer = items // producers, items // consumers
    go = threading.Barrier(producers + consumers + 1)

    def produce() -> None:
        go.wait()
        for i in range(per_producer):
            put(i)

    def consume() -> None:
        go.wait()
        for _ in range(per_consumer):
            get()

    threads = [threading.Thread(target=produce) for _ in range(producers)]
    threads += [threading.Thread(target=consume) for _ in range(consumers)]
    for t in threads:
        t.start()
    go.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return 2 * per_producer * producers / (time.perf_counter() - start)


def memory(kind: str, items: int) -> int:
    """Bytes the queue allocates to hold ``items`` elements (the elements pre-exist)."""
    elements = list(range(items))
    put, _ = _adapter(kind, -1)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for element in elements:
            put(element)
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def best(fn: Callable[..., float], repeat: int, *args: object) -> tuple[float, float]:
    ours = theirs = 0.0
    for _ in range(repeat):
        theirs = max(theirs, fn("stdlib", *args))
        ours = max(ours, fn("coordkit", *args))
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory-items", type=int, default=1_000_000)
    parser.add_argument("--tf-items", type=int, default=5_000)
    parser.add_argument("--no-tf", action="store_true", help="skip TensorFlow even if importable")
    args = parser.parse_args()
    n, r = args.items, args.repeat
    with_tf = not args.no_tf and _tensorflow() is not None

    cases = [
        ("single thread put/get", single_thread, (n,)),
        ("single thread 100 puts/100 gets", single_thread_burst, (n,)),
        ("1 producer / 1 consumer, unbounded", threaded, (n, 1, 1, -1)),
        ("1 producer / 1 consumer, capacity 100", threaded, (n, 1, 1, 100)),
        ("4 producers / 4 consumers, capacity 100", threaded, (n, 4, 4, 100)),
    ]
    header = f"{'case':42} {'coordkit ops/s':>15} {'stdlib ops/s':>13} {'ratio':>6}"
    if with_tf:
        header += f" {'TF eager ops/s':>15} {'vs TF':>7}"
    print(header)
    for label, fn, fn_args in cases:
        ours, theirs = best(fn, r, *fn_args)
        line = f"{label:42} {ours:15,.0f} {theirs:13,.0f} {ours / theirs:6.2f}"
        if with_tf:
            tf_rate = max(fn("tensorflow", args.tf_items, *fn_args[1:]) for _ in range(r))
            line += f" {tf_rate:15,.0f} {ours / tf_rate:7.1f}"
        print(line, flush=True)

    ours_mem, theirs_mem = memory("coordkit", args.memory_items), memory(
        "stdlib", args.memory_items
    )
    print(
        f"{'memory, ' + format(args.memory_items, ',') + ' elements (bytes)':42} "
        f"{ours_mem:15,} {theirs_mem:13,} {ours_mem / theirs_mem:6.2f}"
    )


if __name__ == "__main__":
    main()
