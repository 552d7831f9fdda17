"""The program ``coordkit demo`` explores: a shutdown race in a small pipeline.

Two producer threads feed one queue and a consumer drains it until the queue
is closed and empty.  When both producers are done (they meet at a barrier),
each closes the queue "unless it is already closed"::

    if not queue.is_closed():
        queue.close()

That is check-then-act.  Usually one producer gets through both lines before
the other looks, and all is well.  But if the first is interrupted between the
check and the close, both see an open queue and both close it, and under
TensorFlow's rules a second plain ``close()`` raises CancelledError ("already
closed"): the producer thread dies.  Ordinary testing almost never hits that
window.

The fix elects exactly one closer: ``Barrier.wait()`` returns 0 to one thread.
"""

from __future__ import annotations

import threading

from coordkit.errors import OutOfRangeError
from coordkit.queues import FIFOQueue

ITEMS = {"a": [1, 2], "b": [10, 20]}


def _pipeline(elect_one_closer: bool) -> None:
    queue = FIFOQueue(capacity=2, name="items")
    both_done = threading.Barrier(len(ITEMS))
    consumed: list[int] = []

    def producer(items: list[int]) -> None:
        for item in items:
            queue.enqueue(item)
        arrival = both_done.wait()
        if elect_one_closer:
            if arrival == 0:
                queue.close()
        elif not queue.is_closed():
            queue.close()

    def consumer() -> None:
        try:
            while True:
                consumed.append(queue.dequeue())
        except OutOfRangeError:  # closed and drained: the normal end
            pass

    threads = [
        threading.Thread(target=producer, args=(items,), name=f"producer-{name}")
        for name, items in ITEMS.items()
    ]
    threads.append(threading.Thread(target=consumer, name="consumer"))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(consumed) == [1, 2, 10, 20], consumed


def shutdown_race() -> None:
    """Each producer closes the queue unless it looks closed already (check-then-act)."""
    _pipeline(elect_one_closer=False)


def shutdown_fixed() -> None:
    """Exactly one producer, the one the barrier elects, closes the queue."""
    _pipeline(elect_one_closer=True)
