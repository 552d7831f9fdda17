"""Benchmark programs shared by coordkit and the Python peers.

Every program is plain ``threading`` / ``queue`` code written once, in the shape
frontrun wants (``setup() -> state``, one callable per worker taking the state,
``invariant(state) -> bool``).  ``model(program)`` turns the same triple into the
zero-argument callable that coordkit's ``explore`` and interleave-test's
``explore`` want: build the state, start one ``threading.Thread`` per worker,
join them, assert the invariant.  All state (locks, conditions, queues) is made
inside ``setup``, i.e. inside the controlled run, so every tool controls it.

These programs live outside site-packages and the standard library on purpose:
both coordkit (``granularity="line"``) and interleave-test only interleave user
code.  Keep the racy statements on separate source lines (``tmp = c.v`` /
``c.v = tmp + 1``) so that line granularity can split them.

The programs mirror the ones described in ``shared/research/peers.md`` 2.3:

* ``counter_locked``  correct: 3 threads x 3 increments under one Lock (throughput)
* ``lost_update``     2 threads, ``tmp = c.v; c.v = tmp + 1`` without a lock
* ``bq_close_bug``    Condition-based bounded queue whose close() never notifies
* ``bq_close_window`` close() reads the waiter count outside the lock and skips the
                      notify when it saw 0 (needs a preemption in that window)
* ``bq_close_ok``     the fixed queue (correct)
* ``queue_check_then_act``  one item in a ``queue.Queue``, two consumers each
                      ``if not q.empty(): q.get()`` -- one of them hangs
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Program:
    name: str
    setup: Callable[[], Any]
    workers: tuple[Callable[[Any], None], ...]
    invariant: Callable[[Any], bool]
    bug: str  # "" for a correct program, else what goes wrong ("assertion", "hang")
    needs_line: bool = False  # the bug sits between two plain statements, not sync ops


def model(program: Program) -> Callable[[], None]:
    """The zero-argument form: setup, one thread per worker, join, assert."""

    def run() -> None:
        state = program.setup()
        threads = [threading.Thread(target=w, args=(state,)) for w in program.workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert program.invariant(state), f"{program.name}: invariant violated"

    run.__name__ = run.__qualname__ = program.name
    return run


# -- 1. correct lock-protected counter: 3 threads x 3 increments ------------------


class LockedCounter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.v = 0


def counter_worker(c: LockedCounter) -> None:
    for _ in range(3):
        with c.lock:
            c.v += 1


COUNTER_LOCKED = Program(
    "counter_locked",
    LockedCounter,
    (counter_worker,) * 3,
    lambda c: c.v == 9,
    bug="",
)


# -- 2. lost update: 2 threads, read then write back without a lock ----------------


class Cell:
    def __init__(self) -> None:
        self.v = 0


def racy_increment(c: Cell) -> None:
    tmp = c.v
    c.v = tmp + 1


LOST_UPDATE = Program(
    "lost_update",
    Cell,
    (racy_increment,) * 2,
    lambda c: c.v == 2,
    bug="assertion",
    needs_line=True,
)


# -- 3. bounded blocking queue on threading.Condition --------------------------------


class Closed(Exception):
    pass


class BoundedQueue:
    """A bounded FIFO on one lock and two Conditions, closable.

    ``close_mode``: ``"ok"`` notifies every waiter; ``"bug"`` sets the flag and never
    notifies; ``"window"`` reads the number of waiting consumers *before* taking the
    lock and notifies consumers only if that (stale) number was non-zero.
    """

    def __init__(self, maxsize: int, close_mode: str) -> None:
        self.maxsize = maxsize
        self.close_mode = close_mode
        self.lock = threading.Lock()
        self.not_empty = threading.Condition(self.lock)
        self.not_full = threading.Condition(self.lock)
        self.items: collections.deque[int] = collections.deque()
        self.closed = False
        self.waiting = 0

    def put(self, item: int) -> None:
        with self.not_full:
            while len(self.items) >= self.maxsize and not self.closed:
                self.not_full.wait()
            if self.closed:
                raise Closed
            self.items.append(item)
            self.not_empty.notify()

    def get(self) -> int | None:
        """The next item, or None once the queue is closed and drained."""
        with self.not_empty:
            while not self.items and not self.closed:
                self.waiting += 1
                self.not_empty.wait()
                self.waiting -= 1
            if self.items:
                item = self.items.popleft()
                self.not_full.notify()
                return item
            return None

    def close(self) -> None:
        if self.close_mode == "window":
            waiters = self.waiting  # BUG: read outside the lock
            with self.lock:
                self.closed = True
                if waiters:
                    self.not_empty.notify_all()
                self.not_full.notify_all()
        elif self.close_mode == "bug":
            with self.lock:
                self.closed = True  # BUG: no notify; a waiting consumer sleeps forever
        else:
            with self.lock:
                self.closed = True
                self.not_empty.notify_all()
                self.not_full.notify_all()


class BQState:
    def __init__(self, close_mode: str) -> None:
        self.q = BoundedQueue(1, close_mode)
        self.sent: list[int] = []
        self.received: list[int] = []


def bq_producer(s: BQState) -> None:
    for i in range(2):
        try:
            s.q.put(i)
        except Closed:
            return
        s.sent.append(i)


def bq_consumer(s: BQState) -> None:
    while True:
        item = s.q.get()
        if item is None:
            return
        s.received.append(item)


def bq_closer(s: BQState) -> None:
    s.q.close()


def _bq_program(name: str, close_mode: str) -> Program:
    return Program(
        name,
        lambda: BQState(close_mode),
        (bq_producer, bq_consumer, bq_closer),
        # Everything put is received, in order (a closed queue is drained first).
        lambda s: s.received == s.sent,
        bug="" if close_mode == "ok" else "hang",
    )


BQ_CLOSE_BUG = _bq_program("bq_close_bug", "bug")
BQ_CLOSE_WINDOW = _bq_program("bq_close_window", "window")
BQ_CLOSE_OK = _bq_program("bq_close_ok", "ok")


# -- 4. check-then-act on the stdlib queue.Queue -------------------------------------


class QState:
    def __init__(self) -> None:
        self.q: queue.Queue[int] = queue.Queue()
        self.q.put(1)
        self.got: list[int] = []


def check_then_get(s: QState) -> None:
    if not s.q.empty():
        s.got.append(s.q.get())  # the other consumer may have emptied it: blocks forever


QUEUE_CHECK_THEN_ACT = Program(
    "queue_check_then_act",
    QState,
    (check_then_get, check_then_get),
    lambda s: s.got == [1],
    bug="hang",
)


PROGRAMS: dict[str, Program] = {
    p.name: p
    for p in (
        COUNTER_LOCKED,
        LOST_UPDATE,
        BQ_CLOSE_BUG,
        BQ_CLOSE_WINDOW,
        BQ_CLOSE_OK,
        QUEUE_CHECK_THEN_ACT,
    )
}
