"""A hand-written batcher whose timed-out ``dequeue_many`` drops the elements it held.

A telemetry uploader sends sensor readings in batches of two.  A sensor thread
samples at 2 Hz and enqueues a reading when the value changes; the uploader
wants full batches, but must not block for more than two seconds at a time
(between attempts it reports a heartbeat), so it hand-rolls "dequeue_many with
a timeout" on top of single dequeues::

    batch = []
    while len(batch) < n:
        batch.append(queue.dequeue(timeout=deadline - now))
    return batch

and treats ``DeadlineExceededError`` as "no full batch yet: heartbeat, try
again".  But
the exception unwinds through ``batch``: the readings already taken are
dropped, exactly what TensorFlow's own ``dequeue_many`` did on a timeout
(DEV-Q-1).  Here a batch deadline falls on the same instant as a sensor tick
that brings a new value, so whether the batch times out is decided by which
thread runs first at that instant: if the sensor enqueues first, the batch
completes; if the uploader's timeout fires first, a reading is lost (and the
batches shift, so the last reading is lost at the close too).  A race on
virtual time (SCHED-8: both deadlines fall due together and the scheduler
picks; choosing the uploader is one preemption); with real threads it is
jitter, a few lost readings a day.  The fix uses the queue's
``dequeue_many(n, timeout=...)``, which puts a partial batch back at the front
on a timeout (Q-DEQ-6), and ``dequeue_up_to`` for the tail once the queue is
closed (Q-DEQ-5).
"""

from __future__ import annotations

import threading
import time

from coordkit import DeadlineExceededError, FIFOQueue, OutOfRangeError

KIND = "exception"  # AssertionError: readings lost
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail
RULES = ("Q-DEQ-5", "Q-DEQ-6", "DEV-Q-1")

PERIOD = 0.5  # the sensor samples at 2 Hz and reports changes only
SAMPLES = [20.5, 20.5, 20.5, 20.7, 20.7, 20.6, 20.6, 20.9]
READINGS = [20.5, 20.7, 20.6, 20.9]  # what it reports, at 0.5 s, 2.0 s, 3.0 s and 4.0 s
BATCH = 2
MAX_WAIT = 2.0  # the longest the uploader may block before its next heartbeat


def _hand_rolled_batch(queue: FIFOQueue) -> list[float]:
    deadline = time.monotonic() + MAX_WAIT
    batch: list[float] = []
    while len(batch) < BATCH:
        # DeadlineExceededError / OutOfRangeError unwind through `batch`: its readings are lost
        batch.append(queue.dequeue(timeout=max(deadline - time.monotonic(), 0.0)))
    return batch


def _queue_batch(queue: FIFOQueue) -> list[float]:
    try:
        return queue.dequeue_many(BATCH, timeout=MAX_WAIT)  # Q-DEQ-6: puts back on timeout
    except OutOfRangeError:
        return queue.dequeue_up_to(BATCH)  # closed: the tail, or OutOfRangeError when empty


def _upload(take_batch) -> None:
    queue = FIFOQueue(capacity=8, name="readings")

    def sensor() -> None:
        last = None
        for sample in SAMPLES:
            time.sleep(PERIOD)  # the sampling period (virtual time under coordkit)
            if sample != last:  # report on change only
                queue.enqueue(sample)
                last = sample
        queue.close()

    t = threading.Thread(target=sensor, name="sensor")
    t.start()
    uploaded: list[float] = []
    heartbeats = 0
    while True:
        try:
            uploaded.extend(take_batch(queue))
        except DeadlineExceededError:
            heartbeats += 1  # no full batch yet: report that we are alive, try again
            continue
        except OutOfRangeError:
            break
    t.join()
    assert uploaded == READINGS, f"lost readings: uploaded {uploaded}"


def buggy() -> None:
    _upload(_hand_rolled_batch)


def fixed() -> None:
    _upload(_queue_batch)
