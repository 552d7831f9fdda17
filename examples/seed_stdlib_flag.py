"""Seed script 1 of 3: worker threads that stop on a shared flag (the standard library only).

Each worker does a unit of work, then sleeps a tick, until the main thread sets
a ``threading.Event``. The flag stops the threads, but it is one-way: a worker
that dies of an exception just ends (``threading.excepthook`` prints it), the
others keep going until the flag is set, and the main thread never learns of
it. ``seed_coordinator.py`` fixes that.

    python examples/seed_stdlib_flag.py
"""

from __future__ import annotations

import threading
import time

TICK = 0.1  # seconds a worker sleeps between units of work


def worker(index: int, stop: threading.Event, ticks: list[int], fail_at: int | None) -> None:
    while not stop.is_set():
        ticks[index] += 1
        if index == 0 and ticks[index] == fail_at:
            raise ValueError(f"worker {index} failed at step {fail_at}")
        time.sleep(TICK)


def main(run_for: float = 1.0, num_threads: int = 4, fail_at: int | None = None) -> float:
    """Run the workers for ``run_for`` seconds, stop them, return the seconds it all took.

    With ``fail_at=n``, worker 0 raises at its n-th step; nothing tells the
    main thread, which still waits ``run_for`` seconds.
    """
    stop = threading.Event()
    ticks = [0] * num_threads
    threads = [
        threading.Thread(target=worker, args=(i, stop, ticks, fail_at), name=f"worker-{i}")
        for i in range(num_threads)
    ]
    start = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(run_for)
    stop.set()  # every worker sees it within one tick
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    print(f"{num_threads} threads stopped after {elapsed:.2f} s; steps per thread: {ticks}")
    return elapsed


if __name__ == "__main__":
    main()
