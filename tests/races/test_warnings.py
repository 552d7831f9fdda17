"""What a run could not see is said, and never reads as a plain pass (RACE-7)."""

from __future__ import annotations

import queue
import threading
import time

import coordkit

MADE_BEFORE = threading.Lock()
QUEUE_BEFORE = queue.Queue()


class Clock:
    def __init__(self) -> None:
        self.now = time.monotonic  # bound before any run: the real clock


CLOCK = Clock()


def _explore(program):
    return coordkit.explore(program, seed=1, max_schedules=10)


def test_a_daemon_thread_still_running_is_reported():
    # RACE-7, SCHED-54: it runs on after the return up to the bound, and is named
    def program():
        def forever():
            while True:
                time.sleep(1)

        threading.Thread(target=forever, daemon=True, name="poller").start()

    result = _explore(program)
    assert result.failure is None
    assert any("daemon thread 'poller' was still running 200 steps after the program returned "
               "(the after-return step bound)" in w for w in result.warnings), result.warnings
    assert str(result).startswith("no failure seen (but see the warnings)")


def test_an_idle_daemon_and_coordkits_own_threads_are_not_reported():
    # RACE-7: a daemon parked for good does nothing more; a join watcher is coordkit's
    def program():
        event = threading.Event()
        threading.Thread(target=event.wait, daemon=True).start()
        coord = coordkit.Coordinator()
        t = threading.Thread(target=lambda: None)
        t.start()
        coord.join([t])

    result = _explore(program)
    assert result.failure is None and result.warnings == [], result.warnings
    assert str(result).startswith("no failure in")


def test_a_real_lock_made_before_the_run_is_reported():
    # RACE-7: its waits are real, not scheduled
    def program():
        with MADE_BEFORE:
            pass
        QUEUE_BEFORE.put(1)
        QUEUE_BEFORE.get()

    result = _explore(program)
    texts = "\n".join(result.warnings)
    assert "a real threading.Lock created before the run is used at test_warnings.py:" in texts
    assert "a real queue.Queue created before the run" in texts


def test_a_real_clock_bound_before_the_run_is_reported():
    # RACE-7: it reads the real clock, not the virtual one
    def program():
        CLOCK.now()

    result = _explore(program)
    assert any(w.startswith("time.monotonic, bound before the run, is called at "
                            "test_warnings.py:") for w in result.warnings), result.warnings


def test_locks_made_inside_the_run_are_not_reported():
    def program():
        lock = threading.Lock()
        with lock:
            pass
        q = queue.Queue()
        q.put(1)
        q.get()
        time.monotonic()

    assert _explore(program).warnings == []
