"""A plain ``request_stop()`` that comes first makes a worker's error vanish (COORD-4).

A training job hands checkpoints to a writer thread through a FIFOQueue of
capacity one.  The writer runs inside ``coord.stop_on_exception()``, so if a
save fails, the error is reported to the coordinator and ``coord.join``
re-raises it in the main thread.  At the end the main thread queues the last
checkpoint, closes the queue and, "to tell the writer to finish", calls
``coord.request_stop()`` before joining.  But only the first stop request can
record an exception (COORD-4), and ``stop_on_exception`` swallows what it
reports (COORD-9).  If the main thread's plain stop lands after the writer has
been handed the checkpoint whose save fails but before the writer reports the
failure, the error is dropped, ``join`` returns normally, and the job reports
success with checkpoints missing.  Usually the writer's error comes first and
the job fails loudly as it should (the round-robin schedule does that: the
main thread blocks on the full queue and the writer runs).  A race needing one
preemption: the writer gets in early and is already waiting when the failing
checkpoint is enqueued, so the main thread hands it over and runs on to its
stop.  The fix does not request a stop to mean "finish your work": closing the
queue already does that (the writer drains it and leaves through
``OutOfRangeError``, a clean stop), so the writer's error is the first stop
and ``join`` raises it.
"""

from __future__ import annotations

import threading

from coordkit import Coordinator, FIFOQueue

KIND = "exception"  # AssertionError: the failed save was neither done nor reported
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail
RULES = ("COORD-4", "COORD-9", "COORD-15")


class DiskFull(OSError):
    pass


def _train(stop_to_finish: bool) -> None:
    coord = Coordinator()
    checkpoints = FIFOQueue(capacity=1, name="checkpoints")
    saved: list[int] = []

    def save(step: int) -> None:
        if step == 2:
            raise DiskFull(f"no space left for checkpoint {step}")
        saved.append(step)

    def writer() -> None:
        with coord.stop_on_exception():  # reports DiskFull; OutOfRangeError is a clean stop
            while True:
                save(checkpoints.dequeue())

    t = threading.Thread(target=writer, name="checkpoint-writer")
    coord.register_thread(t)
    t.start()
    for step in (1, 2, 3):
        checkpoints.enqueue(step)  # "train", then checkpoint
    checkpoints.close()
    if stop_to_finish:
        coord.request_stop()  # COORD-4: if this is first, the writer's error is dropped
    reported = []
    try:
        coord.join()
    except DiskFull as e:
        reported.append(e)
    assert reported or saved == [1, 2, 3], f"checkpoints {saved} saved and no error reported"


def buggy() -> None:
    _train(stop_to_finish=True)


def fixed() -> None:
    _train(stop_to_finish=False)
