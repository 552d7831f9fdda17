"""Check-then-act on ``queue.Queue``: ``while not q.empty(): q.get()``.

A thumbnail service fills a ``queue.Queue`` with the files to process and
starts two workers that drain it::

    while not tasks.empty():
        path = tasks.get()
        ...

``empty()`` and ``get()`` are each thread-safe, but the pair is not atomic.
When one task is left, both workers can see a non-empty queue; one takes the
task and the other blocks in ``get()`` for ever, so ``join`` never returns.
A race needing one preemption, between a worker's ``empty()`` and its
``get()``: the round-robin schedule lets the first worker drain the whole
queue before the second one looks, which is also what usually happens with
real threads (a few microseconds of work per task).  The fix makes the check
and the take one operation: ``tasks.get_nowait()``, stopping on
``queue.Empty`` (the queue is filled before the workers start, so empty means
done).
"""

from __future__ import annotations

import queue
import threading

KIND = "deadlock"
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail

FILES = ["a.jpg", "b.jpg", "c.jpg"]


def _drain(atomic_take: bool) -> None:
    tasks: queue.Queue[str] = queue.Queue()
    for path in FILES:
        tasks.put(path)
    done: list[str] = []

    def worker() -> None:
        while True:
            if atomic_take:
                try:
                    path = tasks.get_nowait()
                except queue.Empty:
                    return
            else:
                if tasks.empty():
                    return
                path = tasks.get()  # blocks for ever if the other worker took the last one
            done.append(path.replace(".jpg", ".thumb.jpg"))

    workers = [threading.Thread(target=worker, name=f"worker-{i}") for i in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(done) == len(FILES)


def buggy() -> None:
    _drain(atomic_take=False)


def fixed() -> None:
    _drain(atomic_take=True)
