"""A producer that retries on CancelledError spins for ever on a closed queue.

A frame grabber thread pushes camera frames into a bounded FIFOQueue for the
main thread, which needs only the first few frames and then shuts the capture
down: ``coord.request_stop()`` and ``frames.close(cancel_pending_enqueues=True)``.
The grabber checks ``coord.should_stop()`` before each frame, and, "so that
no frame is lost", retries an enqueue that fails::

    while True:
        try:
            frames.enqueue(frame)
            break
        except CancelledError:
            continue          # try again

On a closed queue an enqueue fails at once, every time, with CancelledError
(Q-ENQ-2, Q-CLOSE-3): the retry loop never ends, never re-checks the stop, and
``join`` waits for ever behind a thread burning a core -- a livelock, which
coordkit reports as ``step_limit``.  A race needing one preemption: the stop
and the close must land between the grabber's ``should_stop()`` check and its
enqueue.  Usually the grabber is either done with its frames or sees the stop
on its next check (the round-robin schedule passes).  The fix treats
CancelledError as what it is, the end: the grabber returns.
"""

from __future__ import annotations

import threading

from coordkit import CancelledError, Coordinator, FIFOQueue

EXPLORE = {"max_steps": 4000}  # a spinning retry loop reaches this quickly
KIND = "step_limit"
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail
RULES = ("Q-ENQ-2", "Q-CLOSE-3")

FRAMES = 5
NEEDED = 3


def _capture(retry_on_cancel: bool) -> None:
    coord = Coordinator()
    frames = FIFOQueue(capacity=2, name="frames")

    def grabber() -> None:
        for frame in range(FRAMES):
            if coord.should_stop():
                return
            while True:
                try:
                    frames.enqueue(frame)
                    break
                except CancelledError:
                    if retry_on_cancel:
                        continue  # the enqueue fails again at once: a livelock
                    return

    t = threading.Thread(target=grabber, name="grabber")
    coord.register_thread(t)
    t.start()
    got = [frames.dequeue() for _ in range(NEEDED)]
    coord.request_stop()
    frames.close(cancel_pending_enqueues=True)
    coord.join()
    assert got == list(range(NEEDED))


def buggy() -> None:
    _capture(retry_on_cancel=True)


def fixed() -> None:
    _capture(retry_on_cancel=False)
