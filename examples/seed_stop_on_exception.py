"""Seed script 3 of 3: ``stop_on_exception`` in the workers, try/except/finally in main.

``with coord.stop_on_exception():`` reports any exception of the block to the
coordinator, so the worker needs no try/except of its own. One worker fails;
the others stop at once; ``coord.join`` re-raises the failure in the main
thread, within the grace period, and ``finally`` runs either way.

    python examples/seed_stop_on_exception.py
"""

from __future__ import annotations

import threading
import time

import coordkit

TICK = 0.1
FAILING_WORKER = 2


def worker(index: int, coord: coordkit.Coordinator, fail_at: int) -> None:
    with coord.stop_on_exception():
        step = 0
        while not coord.should_stop():
            step += 1
            if index == FAILING_WORKER and step == fail_at:
                raise ValueError(f"worker {index} failed at step {step}")
            coord.wait_for_stop(TICK)


def main(num_threads: int = 4, fail_at: int = 5, grace_period_secs: float = 10.0) -> Exception | None:
    """Run the workers until one fails; return the failure the main thread caught."""
    coord = coordkit.Coordinator()
    threads = [
        threading.Thread(target=worker, args=(i, coord, fail_at), name=f"worker-{i}")
        for i in range(num_threads)
    ]
    caught: Exception | None = None
    start = time.monotonic()
    try:
        for t in threads:
            t.start()
        coord.join(threads, stop_grace_period_secs=grace_period_secs)
    except RuntimeError as e:  # (a worker's own RuntimeError would land here too)
        print(f"some threads did not stop within {grace_period_secs} s: {e}")
        raise
    except Exception as e:
        caught = e
        print(f"main thread caught: {e!r}")
    finally:
        elapsed = time.monotonic() - start
        alive = sum(t.is_alive() for t in threads)
        print(f"{num_threads - alive} of {num_threads} threads stopped after {elapsed:.2f} s")
    return caught


if __name__ == "__main__":
    main()
