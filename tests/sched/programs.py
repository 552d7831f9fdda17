"""Small threaded programs, buggy and correct, written as users write them: plain
``threading``, ``queue`` and ``time``, nothing from coordkit."""

from __future__ import annotations

import queue
import sys
import threading
import time

import pytest

# Line granularity switches threads from inside trace callbacks, which needs
# PyThreadState_LeaveTracing (CPython 3.11+); on 3.10 it raises NotImplementedError.
needs_line_granularity = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="granularity='line' needs Python 3.11 or newer"
)
needs_switching = pytest.mark.skipif(sys.version_info < (3, 11),
                                     reason="scheduling at racing sites needs 3.11 (RACE-5)")


def lost_update() -> None:
    """Two threads read-modify-write a shared counter without a lock."""
    box = [0]

    def inc() -> None:
        v = box[0]
        box[0] = v + 1

    threads = [threading.Thread(target=inc) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box[0] == 2, f"lost update: counter is {box[0]}"


COUNTER = 0


def lost_update_in_place() -> None:
    """Two threads do ``COUNTER += 1`` on a global: the read and the write share a line."""
    global COUNTER
    COUNTER = 0

    def inc() -> None:
        global COUNTER
        COUNTER += 1

    threads = [threading.Thread(target=inc) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert COUNTER == 2, f"lost update: counter is {COUNTER}"


def lost_update_attribute_in_loop() -> None:
    """``self.hits += 1`` in a loop, from two threads."""

    class Stats:
        hits = 0

    stats = Stats()

    def work() -> None:
        for _ in range(2):
            stats.hits += 1

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert stats.hits == 4, f"lost update: {stats.hits} hits"


def locked_counter(nthreads: int = 3, increments: int = 3) -> None:
    """The correct counter: every increment under one lock."""
    box = [0]
    lock = threading.Lock()

    def inc() -> None:
        for _ in range(increments):
            with lock:
                box[0] += 1

    threads = [threading.Thread(target=inc) for _ in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box[0] == nthreads * increments


def one_slot_buffer() -> tuple[int, ...]:
    """Two producers and two consumers over a one-slot buffer guarded by a Condition;
    returns what the consumers got, in order (the benchmarks' buffer)."""
    cond = threading.Condition()
    slot: list[int] = []
    got: list[int] = []

    def produce(i: int) -> None:
        with cond:
            while slot:
                cond.wait()
            slot.append(i)
            cond.notify_all()

    def consume() -> None:
        with cond:
            while not slot:
                cond.wait()
            got.append(slot.pop())
            cond.notify_all()

    threads = [threading.Thread(target=produce, args=(i,)) for i in (1, 2)]
    threads += [threading.Thread(target=consume) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == [1, 2]
    return tuple(got)


def condition_buffer(producers: int, consumers: int, items: int) -> tuple[tuple[int, int], ...]:
    """``producers`` threads put ``items`` items each into a one-slot buffer guarded by one
    Condition (while-loop waits, ``notify_all``), ``consumers`` threads take them (the
    items split evenly); returns the items in the order they were taken (issue 33's 2P/2C
    buffer is ``condition_buffer(2, 2, 2)``)."""
    cond = threading.Condition()
    slot: list[tuple[int, int]] = []
    got: list[tuple[int, int]] = []

    def produce(i: int) -> None:
        for k in range(items):
            with cond:
                while slot:
                    cond.wait()
                slot.append((i, k))
                cond.notify_all()

    def consume() -> None:
        for _ in range(producers * items // consumers):
            with cond:
                while not slot:
                    cond.wait()
                got.append(slot.pop())
                cond.notify_all()

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(producers)]
    threads += [threading.Thread(target=consume) for _ in range(consumers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tuple(got)


def lock_order_deadlock() -> None:
    """Two threads take two locks in opposite orders."""
    a, b = threading.Lock(), threading.Lock()

    def ab() -> None:
        with a, b:
            pass

    def ba() -> None:
        with b, a:
            pass

    t1, t2 = threading.Thread(target=ab), threading.Thread(target=ba)
    t1.start()
    t2.start()
    t1.join()
    t2.join()


class ClosableQueue:
    """A hand-written closable queue on a Condition; ``notify_on_close`` fixes the bug."""

    def __init__(self, notify_on_close: bool) -> None:
        self.items: list[int] = []
        self.closed = False
        self.cond = threading.Condition()
        self.notify_on_close = notify_on_close

    def put(self, item: int) -> None:
        with self.cond:
            self.items.append(item)
            self.cond.notify()

    def get(self) -> int | None:
        with self.cond:
            while not self.items and not self.closed:
                self.cond.wait()
            return self.items.pop(0) if self.items else None

    def close(self) -> None:
        with self.cond:
            self.closed = True
            if self.notify_on_close:
                self.cond.notify_all()


def _closable_queue_program(notify_on_close: bool) -> None:
    q = ClosableQueue(notify_on_close)
    got: list[int] = []

    def consumer() -> None:
        while (item := q.get()) is not None:
            got.append(item)

    c = threading.Thread(target=consumer)
    c.start()
    q.put(1)
    q.close()
    c.join()
    assert got == [1]


def missed_notify() -> None:
    """close() sets the flag but never notifies: a consumer already waiting sleeps for ever."""
    _closable_queue_program(notify_on_close=False)


def notify_on_close() -> None:
    """The fixed version of ``missed_notify``."""
    _closable_queue_program(notify_on_close=True)


def check_then_act() -> None:
    """Two consumers check ``empty()`` and then ``get()``: one item, so one blocks for ever."""
    q: queue.Queue[int] = queue.Queue()
    q.put(1)

    def consumer() -> None:
        if not q.empty():
            q.get()

    threads = [threading.Thread(target=consumer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def get_nowait_consumers() -> None:
    """The fixed version of ``check_then_act``."""
    q: queue.Queue[int] = queue.Queue()
    q.put(1)
    taken: list[int] = []

    def consumer() -> None:
        try:
            taken.append(q.get_nowait())
        except queue.Empty:
            pass

    threads = [threading.Thread(target=consumer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert taken == [1]


def producer_consumer_with_sentinel() -> None:
    """A bounded queue.Queue pipeline, shut down with a sentinel: correct."""
    q: queue.Queue[int | None] = queue.Queue(maxsize=1)
    out: list[int] = []

    def producer() -> None:
        for i in range(3):
            q.put(i)
        q.put(None)

    def consumer() -> None:
        while (item := q.get()) is not None:
            out.append(item)

    threads = [threading.Thread(target=producer), threading.Thread(target=consumer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [0, 1, 2]


def sleeper_and_waiter() -> None:
    """Timed waits in virtual time: a sleeper sets an event after 5 s; the waiter polls."""
    ev = threading.Event()
    polls: list[bool] = []

    def sleeper() -> None:
        time.sleep(5)
        ev.set()

    t = threading.Thread(target=sleeper)
    t.start()
    while not ev.wait(timeout=2):
        polls.append(False)
    t.join()
    assert polls == [False, False], polls


def _feeding_runner(use_coordinator: bool) -> None:
    # Imported here: programs must stay plain-stdlib apart from the runner under test.
    from coordkit import Coordinator, FIFOQueue, OutOfRangeError, QueueRunner

    queue = FIFOQueue(capacity=4, name="feed")
    pending = [1, 2]

    def good() -> None:
        if not pending:
            raise OutOfRangeError("input exhausted")
        queue.enqueue(pending.pop(0))

    def broken() -> None:
        raise ValueError("source unavailable")

    coord = Coordinator() if use_coordinator else None
    runner = QueueRunner(queue, [broken, good])
    threads = runner.create_threads(coord=coord, start=True)
    consumed = []
    try:
        while coord is None or not coord.should_stop():
            consumed.append(queue.dequeue())
    except OutOfRangeError:
        pass
    if coord is not None:
        coord.request_stop()
        try:
            coord.join(threads)
        except ValueError:
            pass  # the broken source, reported through the coordinator
    else:
        for t in threads:
            t.join()


def runner_dies_without_coordinator() -> None:
    """RUNNER-7(a): if the broken op's thread is the last to end, nobody closes the queue
    and the consumer waits for ever; if it ends first (as it usually does, being started
    first and failing at once), the good thread closes it."""
    _feeding_runner(use_coordinator=False)


def runner_with_coordinator() -> None:
    """The fix: with a coordinator, the error stops everything and the queue is cancelled."""
    _feeding_runner(use_coordinator=True)
