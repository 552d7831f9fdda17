"""Programs written the way much library code is: primitives imported by name."""

from queue import SimpleQueue
from threading import Condition, Lock, RLock, Thread


def lock_order_deadlock() -> None:
    """Two threads take two RLocks in opposite orders: deadlocks under some schedule."""
    a, b = RLock(), RLock()

    def ab() -> None:
        with a, b:
            pass

    def ba() -> None:
        with b, a:
            pass

    threads = [Thread(target=ab), Thread(target=ba)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def handshake() -> int:
    """A correct wait/notify hand-off over a Condition and a SimpleQueue."""
    cond, lock = Condition(), Lock()
    box: list[int] = []
    results: SimpleQueue = SimpleQueue()

    def producer() -> None:
        with lock:
            pass
        with cond:
            box.append(41)
            cond.notify()

    def consumer() -> None:
        with cond:
            while not box:
                cond.wait()
            results.put(box.pop() + 1)

    threads = [Thread(target=consumer), Thread(target=producer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results.get()


def simple_queue_hang() -> None:
    """A consumer waits on a SimpleQueue nobody fills."""
    q: SimpleQueue = SimpleQueue()
    t = Thread(target=q.get)
    t.start()
    t.join()
