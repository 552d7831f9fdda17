"""Small programs for the parallel tests: module level, so workers import them by name."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


def lost_update() -> None:
    """Two threads increment a counter without a lock: an update can be lost."""
    box = {"n": 0}

    def bump() -> None:
        n = box["n"]
        threading.Lock().acquire()  # a scheduling point between the read and the write
        box["n"] = n + 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box["n"] == 2, box


def three_way_order() -> None:
    """Fails only in one order of three threads' appends: a deeper bug."""
    order: list[int] = []
    lock = threading.Lock()

    def add(i: int) -> None:
        with lock:
            order.append(i)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert order != [2, 1, 0], order


def correct() -> None:
    """Never fails: two threads, a lock."""
    box = {"n": 0}
    lock = threading.Lock()

    def bump() -> None:
        with lock:
            box["n"] += 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box["n"] == 2


def dies_once(marker: str) -> None:
    """Kills the process running it the first time (``marker`` does not exist yet)."""
    if not os.path.exists(marker):
        with open(marker, "w"):
            pass
        os._exit(3)
    correct()


def fails_only_in_a_worker() -> None:
    """Fails in any process but the one named by COORDKIT_TEST_PARENT: not deterministic."""
    assert os.environ.get("COORDKIT_TEST_PARENT") == str(os.getpid()), "in a worker"


def call(fn: Callable[[], object]) -> None:
    """Runs ``fn``: a worker that unpickles it must import ``fn``'s module too."""
    fn()
