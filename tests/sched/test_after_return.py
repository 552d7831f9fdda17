"""Daemon threads run on after the program returns, as in a test process (SCHED-53),
up to a bound, a daemon that never ends is a warning (SCHED-54), and a failure there is
the run's, said to come after the return (SCHED-55)."""

from __future__ import annotations

import io
import threading
import time

import pytest

import coordkit
from coordkit.engine.report_data import result_data
from coordkit.engine.runtime import AFTER_RETURN_STEPS

pytestmark = pytest.mark.timeout(60)


def closes_the_file() -> None:
    """The issue's example: a daemon still writing to a file the program closes."""
    log = io.StringIO()

    def writer() -> None:
        for _ in range(3):
            log.write("tick\n")

    threading.Thread(target=writer, daemon=True, name="writer").start()
    log.close()


def test_a_daemon_writing_to_a_closed_file_fails_after_the_return():
    """SCHED-53, SCHED-55: found at defaults, said to be after the return, replayed."""
    result = coordkit.explore(closes_the_file, seed=1)
    assert result.failure is not None, str(result)
    assert isinstance(result.failure.exception, ValueError)
    assert result.failure.report.failure.after_return
    assert "After the program returned: T1 'writer' raised ValueError" in str(result)
    assert result_data(result)["failure"]["after_return"] is True
    with pytest.raises(ValueError, match="closed file"):
        coordkit.replay(closes_the_file, result.failure.trace)


def test_a_failure_before_the_return_is_not_said_to_be_after_it():
    """SCHED-55: only a failure in a step after the return is marked so."""
    def program() -> None:
        log = io.StringIO()
        log.close()
        log.write("x")

    result = coordkit.explore(program, seed=1, max_schedules=5)
    assert result.failure is not None and not result.failure.report.failure.after_return
    assert result_data(result)["failure"]["after_return"] is False
    assert "After the program returned" not in str(result)


def test_a_daemon_that_ends_after_the_return_is_no_warning():
    """SCHED-53: it runs to its end in every schedule, and nothing is left to say."""
    ended: list[int] = []

    def program() -> None:
        threading.Thread(target=lambda: ended.append(1), daemon=True).start()

    result = coordkit.explore(program, seed=1, max_schedules=20)
    assert result.failure is None and result.warnings == [], result.warnings
    assert len(ended) == result.schedules_run
    assert str(result).startswith("no failure in")


def test_a_daemon_blocked_for_good_after_the_return_is_a_warning():
    """SCHED-54: no deadlock, no failure; the warning says what it waits on."""
    def program() -> None:
        never = threading.Event()

        def idle() -> None:
            never.wait()

        threading.Thread(target=idle, daemon=True, name="idle").start()

    result = coordkit.explore(program, seed=1, max_schedules=20)
    assert result.failure is None, str(result)
    assert any(w.startswith("daemon thread 'idle' never ended: after the program returned it "
                            "blocked for good on Event") for w in result.warnings), result.warnings
    assert str(result).startswith("no failure seen (but see the warnings)")


def test_a_daemon_looping_forever_stops_at_the_bound():
    """SCHED-54: bounded by the after-return step bound, named in the warning."""
    steps: list[int] = []

    def program() -> None:
        def poll() -> None:
            while True:
                steps.append(1)
                time.sleep(1)

        threading.Thread(target=poll, daemon=True, name="poller").start()

    result = coordkit.explore(program, seed=1, max_schedules=2)
    assert result.failure is None, str(result)
    assert any(f"daemon thread 'poller' was still running {AFTER_RETURN_STEPS} steps after "
               "the program returned (the after-return step bound)" in w for w in result.warnings)
    # it ran after the return, and each sleep is a step: the bound stopped every run
    assert result.schedules_run < len(steps) <= (AFTER_RETURN_STEPS + 1) * result.schedules_run


def test_a_thread_started_after_the_return_runs_and_can_fail():
    """SCHED-53, SCHED-55: a daemon starts another thread after the return; it runs,
    and its failure is the run's, replayed; its starts grow no step budget (SCHED-54)."""
    def program() -> None:
        def child() -> None:
            raise RuntimeError("child ran after the return")

        def parent() -> None:
            threading.Thread(target=child, name="child").start()

        threading.Thread(target=parent, daemon=True, name="parent").start()

    result = coordkit.explore(program, seed=1, max_schedules=20)
    assert result.failure is not None and result.failure.thread == "child", str(result)
    assert "After the program returned: T2 'child' raised RuntimeError" in str(result)
    with pytest.raises(RuntimeError, match="child ran after the return"):
        coordkit.replay(program, result.failure.trace)


def _two_daemons(check: bool):
    def program() -> None:
        order: list[str] = []
        lock = threading.Lock()

        def first() -> None:
            with lock:
                order.append("first")

        def second() -> None:
            with lock:
                assert not check or order == ["first"], order
                order.append("second")

        threading.Thread(target=first, daemon=True).start()
        threading.Thread(target=second, daemon=True).start()

    return program


def test_choices_after_the_return_are_explored_and_exhausted():
    """SCHED-53: the order of two daemons after the return is a choice DPOR explores;
    with nothing to find, dfs says exhausted, and a found failure shrinks and replays."""
    result = coordkit.explore(_two_daemons(check=True), strategy="dfs")
    assert result.failure is not None and result.failure.report.failure.after_return, str(result)
    with pytest.raises(AssertionError):
        coordkit.replay(_two_daemons(check=True), result.failure.trace)
    clean = coordkit.explore(_two_daemons(check=False), strategy="dfs")
    assert clean.failure is None and clean.exhausted and clean.warnings == [], str(clean)


def test_a_race_between_daemons_after_the_return_is_found_there():
    """SCHED-55: a race detected after the return (races="fail") is that run's failure."""
    def program() -> None:
        box = {"n": 0}

        def bump() -> None:
            box["n"] = box["n"] + 1

        threading.Thread(target=bump, daemon=True).start()
        threading.Thread(target=bump, daemon=True).start()

    result = coordkit.explore(program, races="fail", seed=1, max_schedules=20)
    assert result.failure is not None and result.failure.report.failure.after_return, str(result)
    assert "After the program returned: race on dict item ['n']" in str(result)


HELD_OUTSIDE = threading.Lock()  # a real lock made before any run: its waits are real


def _coordkits_threads(before: set[threading.Thread]) -> set[threading.Thread]:
    return set(threading.enumerate()) - before


def test_no_run_leaves_a_thread_behind():
    """SCHED-13: after explore returns, no thread of its runs is left, with daemons that
    never end (looping, blocked for good) and with a thread blocked outside the scheduler
    (its abandoned worker is the only one left, and exits once freed)."""
    def daemons() -> None:
        never = threading.Event()

        def loop() -> None:
            while True:
                time.sleep(1)

        def idle() -> None:
            never.wait()

        threading.Thread(target=loop, daemon=True).start()
        threading.Thread(target=idle, daemon=True).start()

    def stuck_outside() -> None:
        HELD_OUTSIDE.acquire()

    before = set(threading.enumerate())
    result = coordkit.explore(daemons, seed=1, max_schedules=3)
    assert len(result.warnings) == 2 and not result.leaked_threads, result.warnings
    assert _coordkits_threads(before) == set()

    HELD_OUTSIDE.acquire()
    try:
        result = coordkit.explore(stuck_outside, seed=1, max_schedules=1, run_timeout=0.2)
        assert result.failure is not None and result.leaked_threads == ["MainThread"]
        abandoned = _coordkits_threads(before)
        assert [t.name for t in abandoned] == ["coordkit-worker"]
    finally:
        HELD_OUTSIDE.release()
    for t in abandoned:
        t.join(10)
    assert _coordkits_threads(before) == set()
