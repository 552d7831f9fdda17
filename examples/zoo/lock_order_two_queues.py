"""Lock-order inversion between two work queues (work stealing).

Two workers each own a ``WorkQueue`` (a deque and a lock).  A worker whose own
queue runs dry steals half of the other's queue; to move the items atomically
it holds its own lock while it takes the victim's::

    with self.lock:
        with victim.lock:
            ...

Worker 0 takes lock 0 then lock 1; worker 1, stealing in the other direction,
takes lock 1 then lock 0.  If both run dry at the same moment and each gets its
own lock before the other's, each waits for the lock the other holds: a
classic deadlock.  A race needing one preemption, between the two
``acquire`` calls; the round-robin schedule lets one worker finish its whole
steal first, and real-thread tests almost never line the two steals up.  The
fix takes the two locks in one global order (here by queue index) whichever
direction the items move.
"""

from __future__ import annotations

import threading
from collections import deque

KIND = "deadlock"
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail


class WorkQueue:
    def __init__(self, index: int, items: list[int]) -> None:
        self.index = index
        self.lock = threading.Lock()
        self.items: deque[int] = deque(items)

    def pop(self) -> int | None:
        with self.lock:
            return self.items.popleft() if self.items else None


def steal(thief: WorkQueue, victim: WorkQueue, ordered: bool) -> bool:
    """Move half of ``victim``'s items to ``thief``; False if there was nothing to take."""
    if ordered:
        first, second = sorted((thief, victim), key=lambda q: q.index)
    else:
        first, second = thief, victim  # each thief locks its own queue first: inversion
    with first.lock, second.lock:
        take = (len(victim.items) + 1) // 2
        for _ in range(take):
            thief.items.append(victim.items.pop())
        return take > 0


def _run(ordered: bool) -> None:
    queues = [WorkQueue(0, [1]), WorkQueue(1, [2])]
    done: list[int] = []

    def worker(me: WorkQueue, other: WorkQueue) -> None:
        while True:
            item = me.pop()
            if item is None:
                if not steal(me, other, ordered):
                    return
                continue
            done.append(item)

    threads = [
        threading.Thread(target=worker, args=(queues[0], queues[1]), name="worker-0"),
        threading.Thread(target=worker, args=(queues[1], queues[0]), name="worker-1"),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(done) == [1, 2]


def buggy() -> None:
    _run(ordered=False)


def fixed() -> None:
    _run(ordered=True)
