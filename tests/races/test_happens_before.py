"""Happens-before: synchronisation orders accesses, and only synchronisation does (RACE-1, RACE-2).

Each program is explored exhaustively at sync granularity with ``races="fail"``: a
correctly synchronised program must pass every schedule, and an unsynchronised one must
fail with a race naming both accesses.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import coordkit


class Box:
    def __init__(self) -> None:
        self.value = 0


def _explore(program, max_preemptions=None):
    return coordkit.explore(program, strategy="dfs", max_preemptions=max_preemptions,
                            max_schedules=5000, granularity="sync", races="fail")


def _two_threads(first, second):
    def program():
        box = Box()
        sync = {}
        sync.update(lock=threading.Lock(), event=threading.Event(), cond=threading.Condition(),
                    sem=threading.Semaphore(0), queue=queue.Queue(), barrier=threading.Barrier(2))
        ts = [threading.Thread(target=first, args=(box, sync)),
              threading.Thread(target=second, args=(box, sync))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    return program


def _locked_write(box, s):
    with s["lock"]:
        box.value += 1


def _set_after_write(box, s):
    box.value = 1
    s["event"].set()


def _read_after_wait(box, s):
    s["event"].wait()
    assert box.value == 1


def _notify_after_write(box, s):
    with s["cond"]:
        box.value = 1
        s["cond"].notify()


def _read_after_notified(box, s):
    with s["cond"]:
        s["cond"].wait_for(lambda: box.value == 1)


def _release_after_write(box, s):
    box.value = 1
    s["sem"].release()


def _read_after_acquire(box, s):
    s["sem"].acquire()
    assert box.value == 1


def _put_after_write(box, s):
    box.value = 1
    s["queue"].put("go")


def _read_after_get(box, s):
    s["queue"].get()
    assert box.value == 1


def _barrier_write(box, s):
    box.value = 1
    s["barrier"].wait()


def _barrier_read(box, s):
    s["barrier"].wait()
    assert box.value == 1


ORDERED = {
    "lock": (_locked_write, _locked_write),
    "event": (_set_after_write, _read_after_wait),
    "condition": (_notify_after_write, _read_after_notified),
    "semaphore": (_release_after_write, _read_after_acquire),
    "queue": (_put_after_write, _read_after_get),
    "barrier": (_barrier_write, _barrier_read),
}


@pytest.mark.parametrize("name", sorted(ORDERED))
def test_synchronised_accesses_do_not_race(name):
    # RACE-2: each primitive orders the accesses on either side of it
    result = _explore(_two_threads(*ORDERED[name]))
    assert result.failure is None, result.failure
    assert result.exhausted and result.races == []


def _plain_write(box, s):
    box.value += 1


@pytest.mark.parametrize("name", sorted(ORDERED))
def test_the_same_accesses_without_synchronisation_race(name):
    # RACE-1: one side without its synchronisation: a race, with both sides named
    first, _ = ORDERED[name]
    result = _explore(_two_threads(first, _plain_write))
    failure = result.failure
    assert failure is not None and failure.kind == "race"
    assert "attribute Box.value" in failure.message
    assert "test_happens_before.py" in failure.message and " / " in failure.message


def test_a_lock_taken_after_a_wait_is_ordered_after_the_last_release():
    # RACE-2: three threads contend: a waiter woken by one release may take the lock only
    # after another thread took and released it again
    def program():
        box, lock = Box(), threading.Lock()

        def work():
            for _ in range(2):
                with lock:
                    box.value += 1

        ts = [threading.Thread(target=work) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert box.value == 6

    result = _explore(program, max_preemptions=2)
    assert result.failure is None and result.exhausted


def test_start_and_join_order_the_parent_and_the_child():
    # RACE-2: writes before start() are seen by the child; the child's writes by join(),
    # also when the child had already ended before join() was called
    def program():
        box = Box()
        box.value = 1

        def child():
            assert box.value == 1
            box.value = 2

        t = threading.Thread(target=child)
        t.start()
        t.join()
        t.join()  # a join of an ended thread orders too
        assert box.value == 2

    result = _explore(program)
    assert result.failure is None and result.exhausted


def test_a_write_after_start_races_with_the_child():
    def program():
        box = Box()

        def child():
            box.value += 1

        t = threading.Thread(target=child)
        t.start()
        box.value = 5
        t.join()

    failure = _explore(program).failure
    assert failure is not None and failure.kind == "race"


def test_a_wait_that_times_out_orders_nothing():
    # RACE-2: a timed-out wait is ordered after nothing
    def program():
        box, event = Box(), threading.Event()

        def writer():
            box.value = 1

        t = threading.Thread(target=writer)
        t.start()
        event.wait(timeout=0.5)  # nobody sets it
        box.value = 2
        t.join()

    failure = _explore(program).failure
    assert failure is not None and failure.kind == "race"


def test_futures_order_the_submitter_after_the_task():
    # RACE-2: concurrent.futures is built on Condition and SimpleQueue: result() orders
    def program():
        box = Box()

        def task():
            box.value = 7

        with ThreadPoolExecutor(max_workers=2) as pool:
            pool.submit(task).result()
            assert box.value == 7

    result = coordkit.explore(program, seed=3, max_schedules=200, granularity="sync", races="fail")
    assert result.failure is None, result.failure


def test_report_mode_lists_races_without_failing():
    # RACE-1: the default lists races and passes the run
    def program():
        box = Box()
        ts = [threading.Thread(target=_plain_write, args=(box, {})) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    result = coordkit.explore(program, seed=1, max_schedules=5, granularity="sync")
    assert result.failure is None
    assert [r.location for r in result.races] == ["attribute Box.value"] * len(result.races)
    assert result.races and {r.first.access for r in result.races} == {"write"}
    assert "race on attribute Box.value" in str(result)
    ignored = coordkit.explore(program, seed=1, max_schedules=5, granularity="sync", races="ignore")
    assert ignored.races == [] and ignored.race_runs == 0


def test_races_option_is_checked():
    with pytest.raises(ValueError, match=r"races must be one of .*'sometimes'"):
        coordkit.explore(lambda: None, races="sometimes")
