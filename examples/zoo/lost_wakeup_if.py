"""``if`` instead of ``while`` around ``Condition.wait``: a woken consumer finds nothing.

A tiny job dispatcher hands jobs to two worker threads through a hand-written
``JobBox`` (a list and a Condition), followed by one ``None`` stop marker per
worker.  ``take()`` waits with ``if not self._jobs: self._cond.wait()`` and
then pops.  Being notified only means "something happened": by the time the
woken worker has re-acquired the lock, the other worker may have taken the
job, or every job including the first stop marker.  Then the woken worker pops
from an empty list and dies with ``IndexError``; the marker meant for it is
consumed by the wrong thread.  A race: both workers must be parked in ``wait``
when the jobs arrive and the main thread must be switched out before its last
``put`` (two preemptions after shrinking); the round-robin schedule passes.
The fix is the standard one: re-check the predicate in a loop,
``while not self._jobs: self._cond.wait()`` (or ``Condition.wait_for``).
"""

from __future__ import annotations

import threading

KIND = "exception"  # IndexError in a worker
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail


class JobBox:
    def __init__(self, recheck: bool) -> None:
        self._jobs: list[str | None] = []
        self._cond = threading.Condition()
        self._recheck = recheck

    def put(self, job: str | None) -> None:
        with self._cond:
            self._jobs.append(job)
            self._cond.notify()

    def take(self) -> str | None:
        with self._cond:
            if self._recheck:
                while not self._jobs:
                    self._cond.wait()
            elif not self._jobs:
                self._cond.wait()
            return self._jobs.pop(0)  # IndexError if someone else took it first


def _dispatch(recheck: bool) -> None:
    box = JobBox(recheck)
    done: list[str] = []

    def worker() -> None:
        while (job := box.take()) is not None:
            done.append(job)

    workers = [threading.Thread(target=worker, name=f"worker-{i}") for i in range(2)]
    for w in workers:
        w.start()
    for job in ("resize a.png", "resize b.png"):
        box.put(job)
    for _ in workers:
        box.put(None)  # one stop marker per worker
    for w in workers:
        w.join()
    assert sorted(done) == ["resize a.png", "resize b.png"]


def buggy() -> None:
    _dispatch(recheck=False)


def fixed() -> None:
    _dispatch(recheck=True)
