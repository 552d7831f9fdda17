"""An unlocked "last worker out closes the queue" counter: two workers can both close.

Two parser workers push their results into a shared FIFOQueue; the consumer
reads until the queue is closed and drained.  Each worker, when finished,
decrements a shared count of live workers and, if it reached zero, closes the
queue::

    live[0] -= 1
    if live[0] == 0:
        results.close()

The decrement and the test are separate steps.  If both workers decrement
before either tests, both see zero and both close, and the second plain
``close()`` raises ``CancelledError: Queue 'results' is already closed.``
(Q-CLOSE-2) in that worker (with a ``queue.Queue`` and sentinels, the same
pattern sends two sentinels).  There is no lock or queue operation between the
two lines, so it shows up only when a thread can be switched between any two
lines of user code: explore it with ``granularity="line"`` (SCHED-2, Python
3.11+).  At that granularity the decrement is itself a read and a store
(``live[0] -= 1``), so a second race hides in it: both workers read 2 and
both store 1, nobody sees zero, nobody closes, and the consumer waits for
ever (a deadlock).  coordkit reports whichever of the two it meets first,
which depends on the interpreter's line events.  Each needs one preemption; the
round-robin schedule runs each worker's ending in one piece, and so does
CPython almost always.  The fix, for both: do the decrement and the test
under one lock, and close outside it if this thread was the last.
"""

from __future__ import annotations

import threading

from coordkit import FIFOQueue, OutOfRangeError

EXPLORE = {"granularity": "line"}  # the window is between two plain lines (SCHED-2)
KIND = ("exception", "deadlock")  # CancelledError in a worker, or the lost decrement
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail
RULES = ("Q-CLOSE-2",)

INPUTS = {"w0": ["1", "2"], "w1": ["3"]}


def _parse_all(locked: bool) -> None:
    results = FIFOQueue(capacity=4, name="results")
    live = [len(INPUTS)]
    lock = threading.Lock()

    def worker(lines: list[str]) -> None:
        for line in lines:
            results.enqueue(int(line))
        if locked:
            with lock:
                live[0] -= 1
                last = live[0] == 0
            if last:
                results.close()
        else:
            live[0] -= 1
            if live[0] == 0:
                results.close()  # Q-CLOSE-2: the second close raises CancelledError

    threads = [threading.Thread(target=worker, args=(lines,), name=name) for name, lines in INPUTS.items()]
    for t in threads:
        t.start()
    total = 0
    try:
        while True:
            total += results.dequeue()
    except OutOfRangeError:
        pass
    for t in threads:
        t.join()
    assert total == 6


def buggy() -> None:
    _parse_all(locked=False)


def fixed() -> None:
    _parse_all(locked=True)
