"""Seed script 2 of 3: the same workers, stopped by a Coordinator.

Any thread may ask all of them to stop: here worker 0 does once it has done
``stop_after`` steps. A worker that fails hands its exception to the
coordinator (``request_stop(e)``), which stops everyone, and ``coord.join``
re-raises it in the main thread. The workers wait with
``coord.wait_for_stop(TICK)`` instead of ``time.sleep(TICK)``, so they notice a
stop at once rather than up to a tick late.

    python examples/seed_coordinator.py
"""

from __future__ import annotations

import threading
import time

import coordkit

TICK = 0.1


def worker(index: int, coord: coordkit.Coordinator, ticks: list[int], stop_after: int,
           fail_at: int | None) -> None:
    try:
        while not coord.should_stop():
            ticks[index] += 1
            if index == 1 and ticks[index] == fail_at:
                raise ValueError(f"worker {index} failed at step {fail_at}")
            if index == 0 and ticks[index] >= stop_after:
                coord.request_stop()  # "some condition became true"
            coord.wait_for_stop(TICK)
    except Exception as e:
        coord.request_stop(e)


def main(stop_after: int = 10, num_threads: int = 4, fail_at: int | None = None) -> float:
    """Run the workers until worker 0 stops them; return the seconds it took.

    With ``fail_at=n``, worker 1 raises at its n-th step and ``main`` re-raises
    that exception after every thread has stopped.
    """
    coord = coordkit.Coordinator()
    ticks = [0] * num_threads
    threads = [
        threading.Thread(target=worker, args=(i, coord, ticks, stop_after, fail_at), name=f"worker-{i}")
        for i in range(num_threads)
    ]
    start = time.monotonic()
    for t in threads:
        t.start()
    try:
        coord.join(threads)  # re-raises what a worker passed to request_stop
    finally:
        elapsed = time.monotonic() - start
        print(f"{num_threads} threads stopped after {elapsed:.2f} s; steps per thread: {ticks}")
    return elapsed


if __name__ == "__main__":
    main()
