"""A LooperThread whose loop body blocks, so it never gets to observe the stop.

A metrics exporter runs as a ``LooperThread``: ``run_loop()`` takes the next
sample from a FIFOQueue and ships it.  The looper checks
``coord.should_stop()`` between iterations (LOOP-3), so the author expects
``coord.request_stop(); coord.join()`` to end it.  But when the stop comes
while the looper is inside ``queue.dequeue()`` on an empty queue -- the normal
state of an exporter that keeps up -- nothing wakes it: a stop request does not
touch the queue.  ``join`` waits out the grace period and then raises
``RuntimeError: Coordinator stopped with threads still running:
metrics-exporter`` (COORD-14, COORD-15); with ``ignore_live_threads=True`` the
thread would just be leaked.  If the stop instead lands between two
iterations, the looper sees it and exits, which is what the round-robin
schedule does (the main thread queues its samples and stops before the looper
first runs).  A race needing one preemption: the looper must drain the queue
and wait before the main thread's stop.  The grace period makes real-thread
tests slow rather than failing, so it tends to be "fixed" by lowering the
grace; under coordkit the grace is virtual time and costs nothing.  The fix
closes the queue on shutdown: a dequeue waiting on a closed, empty queue raises
OutOfRangeError (Q-DEQ-1, Q-CLOSE-4), which ``stop_on_exception`` inside the
LooperThread treats as a clean stop (COORD-1, LOOP-2).  (Samples still queued
at the stop are dropped in both versions: an exporter that is shutting down.)
"""

from __future__ import annotations

from coordkit import Coordinator, FIFOQueue, LooperThread

KIND = "exception"  # RuntimeError: Coordinator stopped with threads still running
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail
RULES = ("LOOP-2", "LOOP-3", "COORD-14", "COORD-15", "Q-CLOSE-4")


def _export(close_on_shutdown: bool) -> None:
    coord = Coordinator()
    samples = FIFOQueue(capacity=8, name="samples")
    shipped: list[float] = []

    def ship_one() -> None:
        shipped.append(samples.dequeue())  # blocks while there is nothing to ship

    exporter = LooperThread(coord, None, target=ship_one)  # registers itself with coord (LOOP-1)
    exporter.name = "metrics-exporter"
    exporter.start()
    for latency in (0.12, 0.31):
        samples.enqueue(latency)
    coord.request_stop()
    if close_on_shutdown:
        samples.close()  # a waiting dequeue gets OutOfRangeError: a clean stop
    coord.join(stop_grace_period_secs=10)


def buggy() -> None:
    _export(close_on_shutdown=False)


def fixed() -> None:
    _export(close_on_shutdown=True)
